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
  LRH PktLen and VCRC; LNH, NxtHdr, EtherType and UDP port come from the
  bindings. A dissected packet keeps its values, so it rebuilds byte for byte;
  delete a CRC (`del p[BTH].icrc`) to recompute it after an edit.
* The opcode table decides the ETH chain: BTH and each ETH ask `OPCODES` for the
  next header; after the last one `payload.payload_class` picks MAD, IPoIB or Raw.
"""

from __future__ import annotations

import struct
from typing import Any

from ibwire.dissectors.generate import TrailerField, layer_class, layer_values, patch
from ibwire.dissectors.payload import find_layer, payload_class
from scapy.compat import raw
from scapy.config import conf
from scapy.error import warning
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.packet import NoPayload, Packet, bind_layers

from ibwire import crc
from ibwire.constants import (
    ETHERTYPE_ARP,
    ETHERTYPE_IPV4,
    ETHERTYPE_IPV6,
    ETHERTYPE_ROCE,
    ICRC_LEN,
    LINKTYPE_INFINIBAND,
    NXTHDR_IBA,
    ROCEV2_PORT,
    VCRC_LEN,
)
from ibwire.headers.bth import BTH as BTH_LAYOUT
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
        n = self.pktlen * 4 - LRH_LAYOUT.size
        if 0 <= n <= len(s):
            self.fields["vcrc"] = s[n:n + VCRC_LEN]
            _stash(self, s[n + VCRC_LEN:])
            return s[:n]
        self.fields["vcrc"] = b""   # PktLen disagrees with the capture: keep every byte
        return s

    def post_build(self, p: bytes, pay: bytes) -> bytes:
        if self.getfieldval("pktlen") is None:
            p = patch(LRH_LAYOUT, p, "pktlen", (len(p) + len(pay) + 3) // 4)
        out = p + pay
        vcrc = self.getfieldval("vcrc")
        return out + (crc.vcrc_wire(out) if vcrc is None else vcrc)


# -- GRH: PayLen ----------------------------------------------------------------
class _GRHMixin:
    def post_build(self, p: bytes, pay: bytes) -> bytes:
        if self.getfieldval("paylen") is None:
            p = patch(GRH_LAYOUT, p, "paylen", len(pay))
        return p + pay

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes | None]:
        n = self.paylen  # RoCEv1: Ethernet padding and FCS follow the ICRC
        if n is not None and n <= len(s):
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
            pad = bytes(padcnt if padcnt is not None else -len(pay) & 3)
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
        return f"{OPCODES[self.opcode].label} QP={self.destqp:#08x} PSN={self.psn}"


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
    op = OPCODES[bth.opcode]
    name = layer.ib_layout.name
    if layer is bth:
        idx = 0
    elif name in op.headers:
        idx = op.headers.index(name) + 1
    else:
        idx = len(op.headers)
    if idx < len(op.headers):
        return ETH_CLASSES[op.headers[idx]]
    return payload_class(bth, layer, payload)


def icrc_for(bth: Packet, body: bytes) -> bytes:
    """ICRC wire bytes for a BTH being built; `body` is BTH..pad."""
    size = len(body) + ICRC_LEN                     # what PayLen / UDP length count
    under = bth.underlayer
    if isinstance(under, GRH):
        grh = _own_bytes(under, paylen=size)
        if isinstance(under.underlayer, LRH):
            data = crc.LRH_STANDIN + grh + body
            return crc.icrc_wire(crc.icrc_input_native(data, len(data), True))
        return crc.icrc_wire(crc.icrc_input_roce1(grh + body))
    if isinstance(under, LRH):
        lrh = _own_bytes(under, pktlen=(LRH_LAYOUT.size + size) // 4)
        return crc.icrc_wire(crc.icrc_input_native(lrh + body, len(lrh) + len(body), False))
    if isinstance(under, UDP):
        udp_len = under.len if under.len is not None else 8 + size
        udp = struct.pack("!HHHH", under.sport, under.dport, udp_len, 0xFFFF)
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
            hdr.len = len(raw(hdr)) + payload_len
    elif hdr.plen is None:
        hdr.plen = payload_len
    return raw(hdr)


# -- link packets --------------------------------------------------------------
class _LinkMixin:
    def post_build(self, p: bytes, pay: bytes) -> bytes:
        if self.getfieldval("lpcrc") is None:
            p = patch(LINK_LAYOUT, p, "lpcrc", crc.lpcrc(p[:4]))
        return p + pay


# -- the classes ---------------------------------------------------------------
_OPCODE_NAMES = {op.code: op.label for op in OPCODES}
_CLASS_NAMES = {"atomiceth": "AtomicETH", "atomicacketh": "AtomicAckETH", "immdt": "ImmDt",
                "cnp": "CNPPad"}

LRH = layer_class(LRH_LAYOUT, "LRH", bases=(_LRHMixin,), auto=("pktlen",),
                  extra_fields=[TrailerField("vcrc", VCRC_LEN)])
GRH = layer_class(GRH_LAYOUT, "GRH", bases=(_GRHMixin,), auto=("paylen",))
RWH = layer_class(RWH_LAYOUT, "RWH")
BTH = layer_class(BTH_LAYOUT, "BTH", bases=(_BTHMixin,), auto=("padcnt",),
                  enums={"opcode": _OPCODE_NAMES},
                  namespace={"dispatch_hook": classmethod(_bth_dispatch)},
                  extra_fields=[TrailerField("pad", None, show_int=False),
                                TrailerField("icrc", ICRC_LEN)])
ETH_CLASSES: dict[str, type[Packet]] = {
    name: layer_class(lay, _CLASS_NAMES.get(name, name.upper()), bases=(_ETHMixin,))
    for name, lay in ETH_LAYOUTS.items()
}
RDETH, DETH, XRCETH, FETH, RETH = (ETH_CLASSES[n] for n in ("rdeth", "deth", "xrceth", "feth",
                                                             "reth"))
AtomicETH, AETH, AtomicAckETH = (ETH_CLASSES[n] for n in ("atomiceth", "aeth", "atomicacketh"))
ImmDt, IETH, CNPPad = ETH_CLASSES["immdt"], ETH_CLASSES["ieth"], ETH_CLASSES["cnp"]
IBLink = layer_class(LINK_LAYOUT, "IBLink", bases=(_LinkMixin,), auto=("lpcrc",))


# -- bindings (declared once) ---------------------------------------------------
def _first(lower: type[Packet], upper: type[Packet], **fval: Any) -> None:
    """bind_layers, with this binding tried before older ones on the same layer
    (so UDP dport 4791 wins over Scapy's sport bindings, e.g. TFTP on 69)."""
    bind_layers(lower, upper, **fval)
    guess = lower.payload_guess
    entry = (fval, upper)
    if entry in guess:
        guess.remove(entry)
    guess.insert(0, entry)


def bind_rocev2_port(port: int = ROCEV2_PORT) -> None:
    """Dissect UDP datagrams to `port` as RoCEv2 (the IANA port 4791 is bound by default)."""
    _first(UDP, BTH, dport=port)


bind_layers(Ether, GRH, type=ETHERTYPE_ROCE)
bind_layers(Dot1Q, GRH, type=ETHERTYPE_ROCE)
bind_rocev2_port(ROCEV2_PORT)
bind_layers(LRH, RWH, lnh=0)
bind_layers(LRH, IPv6, lnh=1)
bind_layers(LRH, BTH, lnh=2)
bind_layers(LRH, GRH, lnh=3)
bind_layers(GRH, BTH, nxthdr=NXTHDR_IBA)
bind_layers(RWH, IP, etype=ETHERTYPE_IPV4)
bind_layers(RWH, IPv6, etype=ETHERTYPE_IPV6)
bind_layers(RWH, ARP, etype=ETHERTYPE_ARP)
conf.l2types.register(LINKTYPE_INFINIBAND, LRH)

__all__ = [
    "AETH", "BTH", "CNPPad", "DETH", "ETH_CLASSES", "FETH", "GRH", "IBLink", "IETH", "LRH",
    "RDETH", "RETH", "RWH", "XRCETH", "AtomicAckETH", "AtomicETH", "ImmDt",
    "NOT_UNDER", "bind_rocev2_port", "icrc_for", "next_class",
]
