"""Scapy layers for native InfiniBand and RoCE, generated from the registry.

Theory of operation:

* Every layer class comes from `layer_class(layout)`; this module only adds
  behaviour: which fields fill themselves on build (`AUTO`), the trailers, and
  how layers stack.
* Trailers live on the layer that opens the part they protect: BTH holds `pad`
  and `icrc` (cut from the end of its bytes on dissection, appended after its
  payload on build), LRH holds `vcrc`. Their values are the wire bytes; `show()`
  prints them as Wireshark does (wire bytes read big-endian). None means
  "compute on build", b"" means "absent".
* Building fills what `ibwire.encode` fills, with the library's CRC functions:
  BTH PadCnt and pad, the ICRC (masked per RoCEv1/RoCEv2/native), GRH PayLen,
  LRH PktLen and VCRC. Lengths are filled and read as `GRAPH.lengths` declares
  them (`lengths`); LNH, NxtHdr, EtherType and UDP port come from the bindings,
  which are derived from the graph (`bindings`). A dissected packet keeps its
  values, so it rebuilds byte for byte; delete a CRC (`del p[BTH].icrc`) to
  recompute it after an edit.
* The opcode table decides the ETH chain: BTH and each ETH ask `GRAPH.chain` for
  the next header; after the last one `payload.payload_class` picks MAD, IPoIB or
  Raw. An extended header added later (`GRAPH.add_extended_header`) gets its class
  when the graph announces it; opcode names are read from the table when shown.
"""

from __future__ import annotations

from typing import Any

from ibwire.dissectors.bindings import provide
from ibwire.dissectors.generate import TrailerField, layer_class, layer_values, patch
from ibwire.dissectors.lengths import covered, fill_lengths, measure, pad_length
from ibwire.dissectors.payload import find_layer, payload_class
from scapy.compat import raw
from scapy.config import conf
from scapy.error import warning
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.packet import NoPayload, Packet

from ibwire import crc
from ibwire.constants import ICRC_LEN, ROCEV2_PORT, VCRC_LEN
from ibwire.graph import GRAPH
from ibwire.headers.bth import BTH as BTH_LAYOUT
from ibwire.headers.carriers import UDP as UDP_LAYOUT
from ibwire.headers.extended import ETH_LAYOUTS
from ibwire.headers.link import LINK as LINK_LAYOUT
from ibwire.headers.opcodes import OPCODES
from ibwire.headers.routing import GRH as GRH_LAYOUT
from ibwire.headers.routing import LRH as LRH_LAYOUT
from ibwire.headers.routing import RWH as RWH_LAYOUT


def _own_bytes(layer: Packet, **auto: int) -> bytes:
    """A generated layer's header bytes, with its unset (auto) fields given."""
    values = layer_values(layer)
    for name, v in auto.items():
        if values.get(name) is None:
            values[name] = v
    return layer.ib_layout.pack(values)


def _stash(layer: Packet, extra: bytes) -> None:
    # Bytes after a trailer become Scapy Padding; extract_padding picks them up.
    layer.__dict__["_ib_extra"] = extra


class _Stashed:
    def extract_padding(self, s: bytes) -> tuple[bytes, bytes | None]:
        return s, self.__dict__.pop("_ib_extra", None) or None


# -- LRH: PktLen and VCRC ------------------------------------------------------
class _LRHMixin(_Stashed):
    def do_dissect(self, s: bytes) -> bytes:
        s = super().do_dissect(s)  # type: ignore[misc]
        self.raw_packet_cache = None  # the VCRC is re-appended by post_build
        n = covered(self, "pktlen")
        if 0 <= n <= len(s):
            self.fields["vcrc"] = s[n:n + VCRC_LEN]
            _stash(self, s[n + VCRC_LEN:])
            return s[:n]
        self.fields["vcrc"] = b""   # PktLen disagrees with the capture: keep every byte
        return s

    def post_build(self, p: bytes, pay: bytes) -> bytes:
        out = fill_lengths(self, p, pay) + pay
        vcrc = self.getfieldval("vcrc")
        return out + (crc.vcrc_wire(out) if vcrc is None else vcrc)


# -- GRH: PayLen ----------------------------------------------------------------
class _GRHMixin:
    def post_build(self, p: bytes, pay: bytes) -> bytes:
        return fill_lengths(self, p, pay) + pay

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes | None]:
        if self.paylen is None:
            return s, None
        n = covered(self, "paylen")  # RoCEv1: Ethernet padding and FCS follow the ICRC
        if n <= len(s):
            return s[:n], s[n:] or None
        return s, None


# -- BTH: PadCnt, pad, ICRC, opcode-driven ETH chain -----------------------------
class _BTHMixin:
    def do_dissect(self, s: bytes) -> bytes:
        s = super().do_dissect(s)  # type: ignore[misc]
        self.raw_packet_cache = None  # pad and ICRC are re-appended by post_build
        icrc = s[-ICRC_LEN:] if len(s) >= ICRC_LEN else b""
        s = s[:len(s) - len(icrc)]
        pad = self.padcnt
        padb = s[len(s) - pad:] if 0 < pad <= len(s) else b""
        self.fields["icrc"] = icrc
        self.fields["pad"] = padb
        return s[:len(s) - len(padb)]

    def post_build(self, p: bytes, pay: bytes) -> bytes:
        # Scapy appends Padding at the very end of a packet; padding that layers inside
        # the BTH made (a short IPoIB UDP length) belongs before the pad and ICRC.
        pay += self._paddings(inner=True)
        padcnt = self.getfieldval("padcnt")
        pad = self.getfieldval("pad")
        if pad is None:
            pad = bytes(padcnt if padcnt is not None else pad_length(len(pay)))
        if padcnt is None:
            p = patch(BTH_LAYOUT, p, "padcnt", len(pad))
        body = p + pay + pad
        icrc = self.getfieldval("icrc")
        return body + (icrc_for(self, body) if icrc is None else icrc)

    def dissect(self, s: bytes) -> None:
        super().dissect(s)  # type: ignore[misc]
        # Padding present now came from layers inside the BTH; layers outside (ERF
        # record padding under the LRH) add theirs after this returns.
        layer = self.payload
        while not isinstance(layer, NoPayload):
            if isinstance(layer, conf.padding_layer):
                layer.__dict__["_ib_inner"] = True
            layer = layer.payload

    def _paddings(self, inner: bool) -> bytes:
        out = b""
        layer = self.payload
        while not isinstance(layer, NoPayload):
            if isinstance(layer, conf.padding_layer) and \
                    bool(layer.__dict__.get("_ib_inner")) == inner:
                out += bytes(layer.load)
            layer = layer.payload
        return out

    def build_padding(self) -> bytes:
        return self._paddings(inner=False)   # inner padding is placed by post_build

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        return next_class(self, payload)

    def mysummary(self) -> str:
        return f"{_opcode_label(self.opcode)} QP={self.destqp:#08x} PSN={self.psn}"


# Layers under which a BTH is never dissected (IPoIB adds itself: UDP to 4791
# inside IPoIB is not RoCE).
NOT_UNDER: set[type[Packet]] = set()


def _bth_dispatch(cls: type[Packet], _pkt: bytes | None = None, *args: Any,
                  **kargs: Any) -> type[Packet]:
    under = kargs.get("_underlayer")
    while under is not None:
        if type(under) in NOT_UNDER:
            return conf.raw_layer
        under = under.underlayer
    return cls


class _ETHMixin:
    show_summary = False  # the BTH summary names the operation already

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        return next_class(self, payload)


def next_class(layer: Packet, payload: bytes) -> type[Packet]:
    """The class after `layer` in its BTH's chain: the opcode's next ETH, or the payload."""
    bth = find_layer(layer, "bth")
    if bth is None:
        return conf.raw_layer
    chain = GRAPH.chain(bth.opcode)
    name = layer.ib_layout.name
    if layer is bth:
        idx = 0
    elif name in chain:
        idx = chain.index(name) + 1
    else:
        idx = len(chain)
    if idx < len(chain):
        return eth_class(chain[idx])
    return payload_class(bth, layer, payload)


def icrc_for(bth: Packet, body: bytes) -> bytes:
    """ICRC wire bytes for a BTH being built; `body` is BTH..pad."""
    size = len(body) + ICRC_LEN                     # BTH..ICRC: what the lengths count
    under = bth.underlayer
    if isinstance(under, GRH):
        grh = _own_bytes(under, paylen=measure("grh", "paylen", GRH_LAYOUT.size, size))
        if isinstance(under.underlayer, LRH):
            data = crc.LRH_STANDIN + grh + body
            return crc.icrc_wire(crc.icrc_input_native(data, len(data), True))
        return crc.icrc_wire(crc.icrc_input_roce1(grh + body))
    if isinstance(under, LRH):
        lrh = _own_bytes(under, pktlen=measure("lrh", "pktlen", LRH_LAYOUT.size, size))
        return crc.icrc_wire(crc.icrc_input_native(lrh + body, len(lrh) + len(body), False))
    if isinstance(under, UDP):
        udp_len = under.len if under.len is not None else \
            measure("udp", "length", UDP_LAYOUT.size, size)
        # The checksum is ICRC-variant (masked), so any value will do.
        udp = UDP_LAYOUT.pack({"srcport": under.sport, "dstport": under.dport,
                               "length": udp_len, "checksum": 0})
        ip = _ip_header(under.underlayer, udp_len)
        if ip is not None:
            return crc.icrc_wire(crc.icrc_input_roce2(ip, udp + body))
    warning("BTH: ICRC needs an LRH, GRH or IP/UDP underlayer; got %s; writing zeros",
            type(under).__name__ if under is not None else "none")
    return bytes(ICRC_LEN)


def _ip_header(ip: Packet | None, payload_len: int) -> bytes | None:
    """The IPv4/IPv6 header as it will be built, lengths filled (the ICRC covers them)."""
    if not isinstance(ip, (IP, IPv6)):
        return None
    hdr = ip.copy()
    hdr.remove_payload()
    for name, value in ip.overloaded_fields.items():  # protocol / next header from UDP
        if name not in hdr.fields:
            hdr.setfieldval(name, value)
    if isinstance(ip, IP):
        if hdr.len is None:
            hdr.len = measure("ip", "len", len(raw(hdr)), payload_len)
    elif hdr.plen is None:
        hdr.plen = measure("ipv6", "plen", len(raw(hdr)), payload_len)
    return raw(hdr)


# -- link packets --------------------------------------------------------------
class _LinkMixin:
    def post_build(self, p: bytes, pay: bytes) -> bytes:
        if self.getfieldval("lpcrc") is None:
            # The LPCRC covers the bytes before it (IBA §7.9.4.1).
            p = patch(LINK_LAYOUT, p, "lpcrc", crc.lpcrc(p[:_LPCRC_AT]))
        return p + pay


# -- the classes ---------------------------------------------------------------
def _opcode_label(code: int) -> str | None:
    """The opcode's name as the table says now (extensions included)."""
    try:
        return OPCODES[code].label
    except (IndexError, KeyError, TypeError):
        return None


def _opcode_code(label: str) -> int:
    for op in OPCODES:
        if op.label == label:
            return op.code
    raise KeyError(label)


_LPCRC_AT = LINK_LAYOUT.by_name["lpcrc"].offset
_CLASS_NAMES = {"atomiceth": "AtomicETH", "atomicacketh": "AtomicAckETH", "immdt": "ImmDt",
                "cnp": "CNPPad"}

LRH = layer_class(LRH_LAYOUT, "LRH", bases=(_LRHMixin,), auto=("pktlen",),
                  extra_fields=[TrailerField("vcrc", VCRC_LEN)])
GRH = layer_class(GRH_LAYOUT, "GRH", bases=(_GRHMixin,), auto=("paylen",))
RWH = layer_class(RWH_LAYOUT, "RWH")
BTH = layer_class(BTH_LAYOUT, "BTH", bases=(_BTHMixin,), auto=("padcnt",),
                  enums={"opcode": (_opcode_label, _opcode_code)},
                  namespace={"dispatch_hook": classmethod(_bth_dispatch)},
                  extra_fields=[TrailerField("pad", None, show_int=False),
                                TrailerField("icrc", ICRC_LEN)])

ETH_CLASSES: dict[str, type[Packet]] = {}


def eth_class(name: str) -> type[Packet]:
    """The Scapy class of an extended header layout (made on first use)."""
    cls = ETH_CLASSES.get(name)
    if cls is None:
        cls = ETH_CLASSES[name] = layer_class(GRAPH.extended_layout(name),
                                              _CLASS_NAMES.get(name, name.upper()),
                                              bases=(_ETHMixin,))
    return cls


def _on_graph_change(kind: str, details: tuple) -> None:
    if kind == "chain":
        eth_class(details[1])       # (opcode, layout name): the new header's class


for _name in ETH_LAYOUTS:
    eth_class(_name)
GRAPH.subscribe(_on_graph_change)

RDETH, DETH, XRCETH, FETH, RETH = (ETH_CLASSES[n] for n in ("rdeth", "deth", "xrceth", "feth",
                                                             "reth"))
AtomicETH, AETH, AtomicAckETH = (ETH_CLASSES[n] for n in ("atomiceth", "aeth", "atomicacketh"))
ImmDt, IETH, CNPPad = ETH_CLASSES["immdt"], ETH_CLASSES["ieth"], ETH_CLASSES["cnp"]
IBLink = layer_class(LINK_LAYOUT, "IBLink", bases=(_LinkMixin,), auto=("lpcrc",))


def bind_rocev2_port(port: int = ROCEV2_PORT) -> None:
    """Dissect UDP datagrams to `port` as RoCEv2 (the IANA port 4791 is declared in the
    graph). Every ibwire consumer learns the port, not only Scapy."""
    if port not in GRAPH.roce_ports():
        GRAPH.add("udp", port, "roce2")


# The nodes these layers dissect; the bindings and link type follow from the graph.
provide({"ib": LRH, "lrh": LRH, "grh": GRH, "roce1": GRH, "bth": BTH, "roce2": BTH,
         "rwh": RWH, "ib_link": IBLink})

__all__ = [
    "AETH", "BTH", "CNPPad", "DETH", "ETH_CLASSES", "FETH", "GRH", "IBLink", "IETH", "LRH",
    "RDETH", "RETH", "RWH", "XRCETH", "AtomicAckETH", "AtomicETH", "ImmDt",
    "NOT_UNDER", "bind_rocev2_port", "eth_class", "icrc_for", "next_class",
]
