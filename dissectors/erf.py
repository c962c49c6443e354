"""The ERF record header (LINKTYPE_ERF 197) as a Scapy layer, from the ERF layout.

16 fixed bytes (little-endian timestamp, type, flags, rlen, lctr, wlen), then
8-byte extension headers while the "more" bit is set, then, for Ethernet
records (type 2), one offset and one pad byte. The packet is `wlen` bytes long
from the end of the extension headers; what follows (record padding) is Scapy
Padding. Type 21 carries a native packet from the LRH, 25 a link packet.
"""

from __future__ import annotations

from typing import Any

from ibwire.dissectors.generate import layer_class, patch
from ibwire.dissectors.ib import LRH, IBLink
from scapy.config import conf
from scapy.fields import ByteField, ConditionalField, StrField, XStrFixedLenField
from scapy.layers.l2 import Ether
from scapy.packet import Packet, bind_layers

from ibwire.constants import ERF_TYPE_ETH, ERF_TYPE_IB, ERF_TYPE_IB_LINK, LINKTYPE_ERF
from ibwire.headers.carriers import ERF as ERF_LAYOUT

_EXT_LEN = 8
_ETH_PREFIX = 2   # erf.eth.off + erf.eth.pad


class ErfTimestampField(XStrFixedLenField):
    """The 8 timestamp bytes, shown as Wireshark's `erf.ts` (little-endian 32.32)."""

    def i2repr(self, pkt: Packet | None, x: Any) -> str:
        ts = int.from_bytes(bytes(x or b"").ljust(8, b"\0"), "little")
        return f"0x{ts:016x} ({(ts >> 32) + (ts & 0xFFFFFFFF) / 2**32:.9f} s)"


class ErfExtensionHeaders(StrField):
    """Chained 8-byte extension headers; bit 7 of each first byte says another follows."""

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, bytes]:
        if not pkt.ext_header:
            return s, b""
        n = 0
        while n + _EXT_LEN <= len(s):
            more = s[n] & 0x80
            n += _EXT_LEN
            if not more:
                break
        return s[n:], s[:n]

    def addfield(self, pkt: Packet, s: bytes, val: Any) -> bytes:
        return s + bytes(val or b"")


def _is_eth(pkt: Packet) -> bool:
    return pkt.type == ERF_TYPE_ETH


class _ERFMixin:
    def post_build(self, p: bytes, pay: bytes) -> bytes:
        if self.getfieldval("wlen") is None:
            p = patch(ERF_LAYOUT, p, "wlen", len(p) - ERF_LAYOUT.size - len(self.ext or b"")
                      + len(pay))
        if self.getfieldval("rlen") is None:
            p = patch(ERF_LAYOUT, p, "rlen", len(p) + len(pay))
        return p + pay

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes | None]:
        n = self.wlen - (_ETH_PREFIX if _is_eth(self) else 0)
        if 0 <= n <= len(s):
            return s[:n], s[n:] or None
        return s, None  # truncated record: wlen exceeds what was captured

    def mysummary(self) -> str:
        return f"ERF type {self.type} wlen {self.wlen}"


ERF = layer_class(
    ERF_LAYOUT, "ERF", bases=(_ERFMixin,), auto=("rlen", "wlen"),
    overrides={"ts_raw": ErfTimestampField("ts_raw", b"", length=8)},
    extra_fields=[
        ErfExtensionHeaders("ext", b""),
        ConditionalField(ByteField("eth_off", 0), _is_eth),
        ConditionalField(ByteField("eth_pad", 0), _is_eth),
    ])

bind_layers(ERF, LRH, type=ERF_TYPE_IB)
bind_layers(ERF, IBLink, type=ERF_TYPE_IB_LINK)
bind_layers(ERF, Ether, type=ERF_TYPE_ETH)
conf.l2types.register(LINKTYPE_ERF, ERF)

__all__ = ["ERF", "LINKTYPE_ERF"]
