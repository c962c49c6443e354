"""The ERF record header (LINKTYPE_ERF 197) as a Scapy layer, from the ERF layout.

The fixed header (little-endian timestamp, type, flags, rlen, lctr, wlen), then
8-byte extension headers while the "more" bit is set, then, for the ERF types
the graph gives a prefix (`Edge.skip`: Ethernet's offset and pad bytes), that
prefix. The packet is `wlen` bytes long from the end of the extension headers
(`GRAPH.lengths`); what follows (record padding) is Scapy Padding. The type
chooses the next layer as the graph says (native packet, link packet, Ethernet).
"""

from __future__ import annotations

from typing import Any

from ibwire.dissectors import ib  # noqa: F401 - the layers ERF records carry
from ibwire.dissectors.bindings import provide
from ibwire.dissectors.generate import layer_class
from ibwire.dissectors.lengths import covered, fill_lengths
from scapy.fields import ByteField, ConditionalField, StrField, XStrFixedLenField
from scapy.packet import Packet

from ibwire.constants import LINKTYPE_ERF
from ibwire.graph import GRAPH
from ibwire.headers.carriers import ERF as ERF_LAYOUT

# An extension header: 8 bytes, bit 7 of the first says another follows (ERF spec §4).
_EXT_LEN = 8
_EXT_MORE = 0x80
_TS_LEN = ERF_LAYOUT.by_name["ts_raw"].bits // 8


class ErfTimestampField(XStrFixedLenField):
    """The timestamp bytes, shown as Wireshark's `erf.ts` (little-endian 32.32)."""

    def i2repr(self, pkt: Packet | None, x: Any) -> str:
        ts = int.from_bytes(bytes(x or b"").ljust(_TS_LEN, b"\0"), "little")
        return f"0x{ts:016x} ({(ts >> 32) + (ts & 0xFFFFFFFF) / 2**32:.9f} s)"


class ErfExtensionHeaders(StrField):
    """Chained 8-byte extension headers; bit 7 of each first byte says another follows."""

    def getfield(self, pkt: Packet, s: bytes) -> tuple[bytes, bytes]:
        if not pkt.ext_header:
            return s, b""
        n = 0
        while n + _EXT_LEN <= len(s):
            more = s[n] & _EXT_MORE
            n += _EXT_LEN
            if not more:
                break
        return s[n:], s[:n]

    def addfield(self, pkt: Packet, s: bytes, val: Any) -> bytes:
        return s + bytes(val or b"")


def _prefix(pkt: Packet) -> int:
    """Bytes between the extension headers and the packet (`Edge.skip` of the type)."""
    return GRAPH.edges["erf"].skip.get(pkt.type, 0)


def _has_prefix(pkt: Packet) -> bool:
    return _prefix(pkt) > 0


class _ERFMixin:
    def _header_len(self) -> int:
        return ERF_LAYOUT.size + len(self.ext or b"")

    def post_build(self, p: bytes, pay: bytes) -> bytes:
        return fill_lengths(self, p, pay, header=self._header_len()) + pay

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes | None]:
        if self.wlen is None:
            return s, None
        n = covered(self, "wlen", self._header_len()) - _prefix(self)
        if 0 <= n <= len(s):
            return s[:n], s[n:] or None
        return s, None  # truncated record: wlen exceeds what was captured

    def mysummary(self) -> str:
        return f"ERF type {self.type} wlen {self.wlen}"


ERF = layer_class(
    ERF_LAYOUT, "ERF", bases=(_ERFMixin,), auto=("rlen", "wlen"),
    overrides={"ts_raw": ErfTimestampField("ts_raw", b"", length=_TS_LEN)},
    extra_fields=[
        ErfExtensionHeaders("ext", b""),
        # The Ethernet record's prefix (erf.eth.off, erf.eth.pad).
        ConditionalField(ByteField("eth_off", 0), _has_prefix),
        ConditionalField(ByteField("eth_pad", 0), _has_prefix),
    ])

provide({"erf": ERF})

__all__ = ["ERF", "LINKTYPE_ERF"]
