"""ICRC/VCRC/LPCRC: published vectors byte-exact, masking rules bit by bit."""

from __future__ import annotations

import pytest
from vectors import BY_NAME, N1_MASKED, VECTORS

from ibwire import CrcStatus, decode, encode
from ibwire import crc as crc_mod
from ibwire.crc import crc16, crc32, icrc_wire, lpcrc, vcrc_wire
from ibwire.decoder import icrc_masked_input


def test_catalogue_check_values():
    assert crc32(b"123456789") == 0xCBF43926
    assert crc16(b"123456789") == 0x0A3D


@pytest.mark.parametrize("vec", VECTORS, ids=lambda v: v.name)
def test_vector_icrc_byte_exact(vec):
    pkt = decode(vec.data, vec.encap)
    assert pkt.problems == []
    assert pkt.icrc == vec.icrc_wire
    masked = icrc_masked_input(pkt, pkt.data.index(vec.icrc_wire, len(vec.data) - 6),
                               _roce(pkt))
    assert crc32(masked) == vec.crc32
    assert icrc_wire(masked) == vec.icrc_wire
    assert pkt.icrc_status is CrcStatus.GOOD
    # Wireshark shows the wire bytes read big-endian.
    assert pkt["infiniband.invariant.crc"] == int.from_bytes(vec.icrc_wire, "big")
    assert pkt["infiniband.invariant.crc.status"] == 1


@pytest.mark.parametrize("vec", [v for v in VECTORS if v.vcrc_wire], ids=lambda v: v.name)
def test_vector_vcrc_byte_exact(vec):
    pkt = decode(vec.data, vec.encap)
    assert pkt.vcrc == vec.vcrc_wire
    assert vcrc_wire(vec.data[:-2]) == vec.vcrc_wire
    assert pkt.vcrc_status is CrcStatus.GOOD
    assert pkt["infiniband.variant.crc"] == int.from_bytes(vec.vcrc_wire, "big")


def test_n1_masked_input_is_the_published_one():
    pkt = decode(BY_NAME["N1"].data, "ib")
    assert icrc_masked_input(pkt, 24, None) == N1_MASKED


@pytest.mark.parametrize("vec", VECTORS, ids=lambda v: v.name)
def test_encode_fills_the_same_crcs(vec):
    pkt = decode(vec.data, vec.encap)
    rebuilt = encode(pkt, fill=True)
    if vec.name == "R2":
        # The capture carries UDP checksum 0; filling computes the real one, which
        # the ICRC masks, so only those two bytes differ.
        assert rebuilt[:40] == vec.data[:40] and rebuilt[42:] == vec.data[42:]
    else:
        assert rebuilt == vec.data


def _roce(pkt):
    if pkt.layer("lrh") is not None:
        return None
    return "roce1" if pkt.layer("udp") is None else "roce2"


def _flip(data: bytes, bit: int) -> bytes:
    b = bytearray(data)
    b[bit // 8] ^= 0x80 >> (bit % 8)
    return bytes(b)


# ICRC variant fields (protocol-facts §4.2) and the fields that decide where the
# ICRC is or whether there is one (flipping those changes the packet's shape).
_VARIANT = {"bth": ("fecn", "becn", "resv6"), "grh": ("tclass", "flowlabel", "hoplmt"),
            "ip": ("dscp", "ecn", "ttl", "checksum"), "udp": ("checksum",),
            "ipv6": ("tclass", "flow", "hlim")}
_SHAPE = {"lrh": ("lnh", "pktlen"), "grh": ("paylen", "nxthdr"),
          "ip": ("version", "ihl", "len", "proto", "mf", "frag_offset"),
          "ipv6": ("version", "plen", "nxt"), "udp": ("dstport", "length")}


def _bits(pkt, table) -> set[int]:
    out: set[int] = set()
    bth = pkt.layer("bth")
    for lay in pkt.layers:
        if lay.offset > bth.offset:
            break   # headers inside the payload (IPoIB's IP) are not carriers
        for name in table.get(lay.name, ()):
            f = lay.layout.by_name[name]
            start = lay.offset * 8 + f.bit_offset
            out.update(range(start, start + f.bits))
    return out


def _masked_at(pkt, data: bytes) -> bytes:
    """The ICRC input of `data` using the original packet's structure."""
    crc_end = len(pkt.data) - len(pkt.trailer) - (2 if pkt.vcrc else 0) - 4
    lrh, grh = pkt.layer("lrh"), pkt.layer("grh")
    if lrh is not None:
        return crc_mod.icrc_input_native(data[lrh.offset:], crc_end - lrh.offset,
                                         grh is not None)
    if pkt.layer("udp") is None:
        return crc_mod.icrc_input_roce1(data[grh.offset:crc_end])
    ip = pkt.layer("ip") or pkt.layer("ipv6")
    udp = pkt.layer("udp")
    return crc_mod.icrc_input_roce2(data[ip.offset:udp.offset], data[udp.offset:crc_end])


def _variant_bits(pkt) -> set[int]:
    bits = _bits(pkt, _VARIANT)
    lrh = pkt.layer("lrh")
    if lrh is not None:
        if pkt.layer("grh") is not None:
            bits.update(range(lrh.offset * 8, (lrh.offset + 8) * 8))   # whole LRH
        else:
            bits.update(range(lrh.offset * 8, lrh.offset * 8 + 4))     # VL only
    return bits


def _covered_range(pkt) -> range:
    start = (pkt.layer("lrh") or pkt.layer("ip") or pkt.layer("ipv6") or pkt.layer("grh")).offset
    end = len(pkt.data) - len(pkt.trailer) - (2 if pkt.vcrc else 0) - 4
    return range(start * 8, end * 8)


@pytest.mark.parametrize("vec", VECTORS, ids=lambda v: v.name)
def test_the_icrc_covers_exactly_the_invariant_bits(vec):
    pkt = decode(vec.data, vec.encap)
    variant = _variant_bits(pkt)
    base = crc32(_masked_at(pkt, vec.data))
    assert base == vec.crc32
    for bit in _covered_range(pkt):
        same = crc32(_masked_at(pkt, _flip(vec.data, bit))) == base
        assert same == (bit in variant), f"bit {bit}"


@pytest.mark.parametrize("vec", VECTORS, ids=lambda v: v.name)
def test_decoded_status_after_every_single_bit_flip(vec):
    pkt = decode(vec.data, vec.encap)
    variant, shape = _variant_bits(pkt), _bits(pkt, _SHAPE)
    masked_seen = 0
    for bit in _covered_range(pkt):
        flipped = decode(_flip(vec.data, bit), vec.encap)
        if bit in shape:
            # The packet now has another shape; its ICRC cannot read as good.
            assert flipped.icrc_status is not CrcStatus.GOOD or bit in variant, f"bit {bit}"
            if vec.vcrc_wire:
                assert flipped.vcrc_status is not CrcStatus.GOOD, f"bit {bit}"
        elif bit in variant:
            masked_seen += 1
            assert flipped.icrc_status is CrcStatus.GOOD, f"bit {bit} should be masked"
            if vec.vcrc_wire:
                assert flipped.vcrc_status is CrcStatus.BAD   # the VCRC covers everything
        else:
            assert flipped.icrc_status is CrcStatus.BAD, f"bit {bit} should be covered"
    assert masked_seen > 0


def test_flipping_the_icrc_itself_is_bad():
    vec = BY_NAME["N1"]
    for bit in range(24 * 8, 28 * 8):
        pkt = decode(_flip(vec.data, bit), "ib")
        assert pkt.icrc_status is CrcStatus.BAD
        assert pkt.vcrc_status is CrcStatus.BAD


def test_lpcrc_is_filled_and_checked():
    from ibwire import LINK
    data = encode(LINK(op=0, fctbs=123, vl=2, fccl=456))
    assert len(data) == 6
    assert int.from_bytes(data[4:], "big") == lpcrc(data[:4])
    pkt = decode(data, "ib_link")
    assert pkt["infiniband_link.fctbs"] == 123 and pkt["infiniband_link.fccl"] == 456
    assert pkt.lpcrc_status is CrcStatus.GOOD
    assert decode(_flip(data, 5), "ib_link").lpcrc_status is CrcStatus.BAD


def test_reflected_tables_drive_the_same_crcs():
    """Kernels that cannot call zlib/crcmod use these tables: same results."""
    from ibwire.crc import ICRC_POLY_REFLECTED, VCRC_POLY_REFLECTED, reflected_table

    def run(table, bits, data):
        full = (1 << bits) - 1
        c = full
        for b in data:
            c = table[(c ^ b) & 0xFF] ^ (c >> 8)
        return c ^ full

    for vec in VECTORS:
        assert run(reflected_table(ICRC_POLY_REFLECTED), 32, vec.data) == crc32(vec.data)
        assert run(reflected_table(VCRC_POLY_REFLECTED), 16, vec.data) == crc16(vec.data)
