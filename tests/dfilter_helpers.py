"""Shared fixtures of the display-filter tests: field types as tshark registers them,
two packets, and helpers to compile and match (tests/test_dfilter*.py)."""

from __future__ import annotations

import ipaddress

import pytest

from ibwire.cli.dfilter import DisplayFilter, FilterError, compile_filter

# Field types, as tshark registers them; passed as `known_fields` so that the tests do
# not depend on (or add to) the global registry.
FIELDS = {
    "infiniband.bth.psn": "uint24", "infiniband.bth.opcode": "uint8",
    "infiniband.bth.destqp": "uint24", "infiniband.bth.p_key": "uint16",
    "infiniband.lrh.dlid": "uint16", "infiniband.lrh.slid": "uint16",
    "infiniband.reth.va": "uint64", "infiniband.reth.dmalen": "uint32",
    "infiniband.invariant.crc": "uint32", "infiniband.aeth.msn": "uint24",
    "infiniband.bth.se": "bool", "infiniband.bth.a": "bool",
    "infiniband.grh.sgid": "ipv6", "infiniband.grh.dgid": "ipv6", "ipv6.src": "ipv6",
    "ip.src": "ipv4", "ip.dst": "ipv4", "ip.addr": "ipv4",
    "eth.src": "ether", "eth.dst": "ether", "eth.addr": "ether",
    "infiniband.payload": "bytes", "infiniband.bth": "bytes",
    "udp.srcport": "uint16", "udp.dstport": "uint16",
    "test.text": "string", "frame.protocols": "string", "test.label": "none",
    "frame.time_relative": "double",
    **{p: "protocol" for p in ("frame", "eth", "ip", "ipv6", "udp", "arp", "infiniband")},
}


class Pkt:
    """The packet duck type: `values_of(name)` and `has(name)`."""

    def __init__(self, fields: dict[str, list], protocols: set[str] = frozenset()):
        self.fields = fields
        self.protocols = set(protocols)

    def values_of(self, name: str) -> list:
        return list(self.fields.get(name, ()))

    def has(self, name: str) -> bool:
        return name in self.protocols or bool(self.fields.get(name))


def v6(s: str) -> bytes:
    return ipaddress.IPv6Address(s).packed


def v4(s: str) -> bytes:
    return ipaddress.IPv4Address(s).packed


# An RC RDMA WRITE over RoCEv2 (values modelled on frame 4 of roce-v2-rxe-cm-write-read).
P1 = Pkt({
    "infiniband.bth.psn": [82], "infiniband.bth.opcode": [10], "infiniband.bth.destqp": [0x11],
    "infiniband.bth.p_key": [0xFFFF], "infiniband.lrh.dlid": [5], "infiniband.lrh.slid": [7],
    "infiniband.reth.va": [0xDEADBEEF00], "infiniband.invariant.crc": [0x403964EE],
    "infiniband.bth.se": [0], "infiniband.bth.a": [1],
    "infiniband.grh.sgid": [v6("fe80::2:c903:0:1f2d")], "infiniband.grh.dgid": [v6("fe80::1")],
    "ip.src": [v4("192.168.2.25")], "ip.dst": [v4("192.168.2.24")],
    "ip.addr": [v4("192.168.2.25"), v4("192.168.2.24")],
    "eth.src": [bytes.fromhex("525400daf92d")], "eth.dst": [bytes.fromhex("5254008b2d12")],
    "eth.addr": [bytes.fromhex("5254008b2d12"), bytes.fromhex("525400daf92d")],
    "infiniband.payload": [bytes(range(1, 9))],
    "infiniband.bth": [bytes.fromhex("6400ffff0000000180000052")],
    "test.text": ["ConnectRequest"], "frame.time_relative": [0.25],
    "udp.srcport": [49152], "udp.dstport": [4791],
}, {"frame", "eth", "ip", "udp", "infiniband", "test.label"})

# A local-route packet with equal LIDs, two PSN occurrences and an awkward string.
P2 = Pkt({
    "infiniband.lrh.dlid": [9], "infiniband.lrh.slid": [9], "infiniband.bth.psn": [1, 2],
    "test.text": ['a"b\x00\u00e9'], "frame.time_relative": [5.5],
    "eth.src": [bytes.fromhex("5254008b2d12")],
}, {"frame", "eth", "infiniband"})

EMPTY = Pkt({})


def F(text: str) -> DisplayFilter:  # noqa: N802 - reads like the thing it builds
    return compile_filter(text, FIELDS.get)


def m(text: str, pkt: Pkt = P1) -> bool:
    return F(text).matches(pkt)


def err(text: str) -> FilterError:
    with pytest.raises(FilterError) as info:
        F(text)
    return info.value


def check(cases: list[tuple[str, bool]], pkt: Pkt = P1) -> None:
    got = {f: m(f, pkt) for f, _ in cases}
    assert got == dict(cases)
