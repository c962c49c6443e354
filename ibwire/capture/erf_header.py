"""The ERF record header as the readers, the decoder and the kernels see it: field
positions from the `ERF` layout (`headers.carriers`), the extension-header chain
(one parser, `erf_header_end`, plain Python that Numba compiles) and the bytes an
ERF type puts before its frame (from the protocol graph's ERF edge)."""

from __future__ import annotations

from ibwire.capture.record_headers import ERF_HEADER_LEN
from ibwire.graph import GRAPH
from ibwire.headers.carriers import ERF as ERF_LAYOUT

# Header fields, from the layout: the type byte holds the extension flag and the type.
ERF_TYPE_AT, _, _, ERF_TYPE_MASK = ERF_LAYOUT.offsets()["type"]
_EXT_AT, _, _EXT_SHIFT, _ = ERF_LAYOUT.offsets()["ext_header"]
ERF_EXT_FLAG = 1 << _EXT_SHIFT
assert _EXT_AT == ERF_TYPE_AT
ERF_RLEN_AT = ERF_LAYOUT.by_name["rlen"].offset
ERF_WLEN_AT = ERF_LAYOUT.by_name["wlen"].offset
ERF_RLEN_SIZE = ERF_LAYOUT.by_name["rlen"].bits // 8
ERF_TS_LEN = ERF_LAYOUT.by_name["ts_raw"].bits // 8
# Extension headers: 8 bytes each; bit 7 of the first byte says another follows.
ERF_EXT_LEN = 8
ERF_EXT_MORE = 0x80


def erf_header_end(buf, pos: int, limit: int) -> int:
    """Where the ERF record at buf[pos] leaves its header and extension headers (the
    one parser of the extension chain: readers, decoder and scan kernels call it;
    plain Python that Numba compiles), or -1 when the chain runs past `limit`."""
    at = pos + ERF_HEADER_LEN
    if not buf[pos + ERF_TYPE_AT] & ERF_EXT_FLAG:
        return at
    while at + ERF_EXT_LEN <= limit:
        more = buf[at] & ERF_EXT_MORE
        at += ERF_EXT_LEN
        if not more:
            return at
    return -1


def erf_type_of(buf, pos: int = 0) -> int:
    """The 7-bit ERF type of the record header at buf[pos]."""
    return buf[pos + ERF_TYPE_AT] & ERF_TYPE_MASK


def erf_pad(erf_type: int) -> int:
    """Bytes between the header and the frame that wlen does not count (the 2-byte
    offset/pad of the Ethernet types), from the protocol graph's ERF edge."""
    return GRAPH.edges[ERF_LAYOUT.name].skip.get(erf_type, 0)
