"""MADs in Scapy: after the DETH of a UD SEND to or from QP0/QP1.

Which layouts a MAD is made of (common header, class header, attribute, table
entries, records, fillers) depends on its class, attribute, method and even on
values inside it, so this module does not restate those rules: the MAD header
layer asks the library's MAD decoder (`ibwire.mad.dispatch.decode_mad`) for the
sequence of layouts of its bytes once, and every following MAD layer takes the
next class of that plan. Each class is generated from its layout like every
other layer, so `show()` names the fields as the registry does.

Without `ibwire.mad` (or if it fails to import) MAD payloads stay Raw and
`MAD_AVAILABLE` is False; `MAD_IMPORT_ERROR` says why.
"""

from __future__ import annotations

import logging

from ibwire.dissectors.generate import layer_class
from ibwire.dissectors.ib import BTH
from ibwire.dissectors.payload import PAYLOAD_CLASSES, find_layer
from scapy.config import conf
from scapy.packet import Packet

from ibwire.fields import Layout
from ibwire.graph import GRAPH

log = logging.getLogger(__name__)

MAD_IMPORT_ERROR: Exception | None = None
try:
    from ibwire.mad import names as _names
    from ibwire.mad._layout import MAD_LAYOUTS
    from ibwire.mad.dispatch import decode_mad
    from ibwire.mad.header import MAD_HEADER
    MAD_AVAILABLE = True
except Exception as exc:  # noqa: BLE001 - MADs are optional for the other layers
    MAD_AVAILABLE = False
    MAD_IMPORT_ERROR = exc
    log.warning("ibwire.mad unavailable (%s): Scapy shows MADs as Raw", exc)

_PLAN = "_mad_plan"


def _plan_position(layer: Packet) -> tuple[list[Layout], int] | None:
    """The MAD plan this layer belongs to and the layer's index in it."""
    cur: Packet | None = layer
    steps = 0
    while cur is not None:
        plan = cur.__dict__.get(_PLAN)
        if plan is not None:
            return plan, steps
        cur = cur.underlayer
        steps += 1
    return None


class _MADMixin:
    show_summary = False  # the header's summary names class, method and attribute

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        found = _plan_position(self)
        if found is None and self.ib_layout is MAD_HEADER:
            mad = decode_mad(self.self_build() + payload)
            self.__dict__[_PLAN] = [lay.layout for lay in mad.layers]
            found = self.__dict__[_PLAN], 0
        if found is None:
            return conf.raw_layer
        plan, idx = found
        if idx < len(plan) and plan[idx] is self.ib_layout and idx + 1 < len(plan):
            return mad_layer(plan[idx + 1])
        return conf.raw_layer


class _MADHeaderMixin(_MADMixin):
    show_summary = True

    def mysummary(self) -> tuple[str, list[type[Packet]]]:
        c = self.mgmt_class
        method = _names.METHOD_NAMES.get(self.method, f"{self.method:#04x}")
        attr = _names.attribute_name(c, self.attribute_id)
        return f"MAD {_names.class_name(c)} {method} {attr}", [BTH]  # BTH: QP and PSN


def mad_layer(layout: Layout) -> type[Packet]:
    """The Scapy class of a MAD layout (fillers are made on first use)."""
    bases = (_MADHeaderMixin,) if layout is MAD_HEADER else (_MADMixin,)
    name = "MAD" if layout is MAD_HEADER else \
        "MAD" + "".join(p[:1].upper() + p[1:] for p in layout.name.split("_"))
    return layer_class(layout, name, bases=bases)


def guess_mad(bth: Packet, last: Packet, data: bytes) -> type[Packet] | None:
    """The graph's MAD rule (`GRAPH.carries_mad`), with the DETH's SrcQP."""
    deth = find_layer(last, "deth")
    srcqp = deth.srcqp if deth is not None else None
    return MAD if GRAPH.carries_mad(bth.opcode, bth.destqp, srcqp) else None


def mad_class(data: bytes) -> type[Packet] | None:
    """The first Scapy class of a MAD (None without `ibwire.mad`)."""
    return MAD if MAD_AVAILABLE and data else None


if MAD_AVAILABLE:
    MAD = mad_layer(MAD_HEADER)
    MAD_CLASSES = {name: mad_layer(lay) for name, lay in MAD_LAYOUTS.items()}
    if guess_mad not in PAYLOAD_CLASSES:
        PAYLOAD_CLASSES.insert(0, guess_mad)   # before IPoIB: QP0/QP1 carry MADs only
else:
    MAD = None
    MAD_CLASSES = {}

__all__ = ["MAD", "MAD_AVAILABLE", "MAD_CLASSES", "MAD_IMPORT_ERROR", "guess_mad",
           "mad_class", "mad_layer"]
