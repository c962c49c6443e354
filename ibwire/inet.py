"""The Internet checksum (RFC 1071) and the UDP pseudo-header (RFC 768, RFC 8200 §8.1),
written once for the encoder, the Scapy-free writers and the bulk generator.

The pseudo-header's addresses come from the IPv4/IPv6 layouts; the protocol number
from `ibwire.constants`."""

from __future__ import annotations

from ibwire.constants import IP_PROTO_UDP
from ibwire.headers.carriers import IPV4, IPV6


def ones_sum(data: bytes) -> int:
    """The 16-bit words of `data` added (odd length: a zero byte appended), unfolded:
    callers may add partial sums before folding."""
    if len(data) % 2:
        data = bytes(data) + b"\0"
    return sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))


def fold(total: int) -> int:
    """One's-complement of the folded sum: the checksum field's value."""
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def internet_checksum(data: bytes) -> int:
    return fold(ones_sum(data))


def udp_pseudo_header(ip_header: bytes, udp_length: int) -> bytes:
    """The pseudo-header a UDP checksum covers, from the packed IPv4 or IPv6 header."""
    if ip_header[0] >> 4 == 4:
        src = IPV4.by_name["src"]
        addrs = ip_header[src.offset:src.offset + 8]       # source and destination
        return addrs + bytes([0, IP_PROTO_UDP]) + udp_length.to_bytes(2, "big")
    src = IPV6.by_name["src"]
    addrs = ip_header[src.offset:src.offset + 32]
    return addrs + udp_length.to_bytes(4, "big") + bytes([0, 0, 0, IP_PROTO_UDP])


def udp_checksum(ip_header: bytes, segment: bytes) -> int:
    """The UDP checksum of `segment` (its checksum field zeroed by the caller);
    0 is sent as 0xFFFF (RFC 768)."""
    return internet_checksum(udp_pseudo_header(ip_header, len(segment)) + segment) or 0xFFFF
