"""Differential: transport-header field values equal tshark's, on the real
captures and on crafted packets of every opcode tshark decodes. Where Wireshark
4.0 decodes against the specification, a test pins both answers."""

from __future__ import annotations

import subprocess

import pytest
from conftest import capture_params, need_tshark
from test_properties import packets

from ibwire import ETHERNET, IPV4, UDP, decode, encode
from ibwire.capture import PcapWriter, read_capture
from ibwire.cli.tshark_text import format_field
from ibwire.fields import REGISTRY
from ibwire.headers import AETH, BTH, ETH_LAYOUTS, OPCODES

TSHARK = ["tshark", "--disable-protocol", "tftp", "--disable-protocol", "rpcordma"]
# Header layouts whose public fields Wireshark also has.
_LAYOUTS = ("lrh", "grh", "bth", "rdeth", "deth", "reth", "atomiceth", "aeth", "atomicacketh")
_NOT_IN_WIRESHARK = {"infiniband.bth.fecn", "infiniband.bth.becn", "infiniband.aeth.credits",
                     "infiniband.aeth.rnr_timer_ms"}


def _fields() -> list[str]:
    names = []
    for lay in _LAYOUTS:
        for f in REGISTRY.layouts[lay].fields:
            if f.wsname and f.wsname not in _NOT_IN_WIRESHARK and f.wsname not in names:
                names.append(f.wsname)
    return names + ["infiniband.invariant.crc", "infiniband.variant.crc"]


FIELDS = _fields()


def _tshark_rows(path, fields) -> list[list[str]]:
    args = TSHARK + ["-r", str(path), "-T", "fields", "-E", "occurrence=a"]
    for f in fields:
        args += ["-e", f]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return [line.split("\t") for line in out.rstrip("\n").split("\n")]


def _ours(pkt, fields) -> list[str]:
    return [",".join(format_field(f, v) for v in pkt.values_of(f)) for f in fields]


def _compare(path, fields, skip_frames=()):
    rows = _tshark_rows(path, fields)
    frames = read_capture(path)
    assert len(rows) == len(frames)
    diffs = []
    for frame, row in zip(frames, rows):
        if frame.index + 1 in skip_frames:
            continue
        ours = _ours(decode(frame.data, frame.linktype), fields)
        for name, theirs, mine in zip(fields, row, ours):
            if theirs and theirs != mine:
                diffs.append((frame.index + 1, name, theirs, mine))
    return diffs


@pytest.mark.parametrize("path", capture_params())
def test_header_fields_equal_tsharks_on_real_captures(path):
    need_tshark()
    diffs = _compare(path, FIELDS)
    assert diffs == [], diffs[:10]


def _write(tmp_path, datas) -> str:
    path = tmp_path / "crafted.pcap"
    with PcapWriter(path, linktype=1) as w:
        for i, data in enumerate(datas):
            w.write(data, ts_ns=1_700_000_000_000_000_000 + i * 1000)
    return str(path)


# Opcodes Wireshark 4.0 decodes by the specification (RC, UC, UD and the RC-only
# ones it knows). RD is decoded as Mellanox DC, XRC/CNP 0x81/FLUSH/ATOMIC WRITE as
# vendor data: pinned separately below.
_WS_OK = [op for op in OPCODES if op.valid and op.transport in ("RC", "UC", "UD")
          and op.code not in (0x1C, 0x1D)]


def test_header_fields_equal_tsharks_on_crafted_packets_of_every_opcode(tmp_path):
    need_tshark()
    from hypothesis import HealthCheck, given, settings

    datas = []

    @settings(max_examples=4, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(packets(op=None))
    def collect(sample):
        encap, op, _, _, data = sample
        if encap.startswith("roce2") and op in _WS_OK and not encap.endswith("v6"):
            datas.append(data)

    for _ in range(40):
        collect()
    for op in _WS_OK:      # and one RoCEv2 packet of each opcode for certain
        datas.append(_roce2(op.code))
    path = _write(tmp_path, datas)
    assert _compare(path, FIELDS) == []


def _roce2(code: int) -> bytes:
    op = OPCODES[code]
    headers = [BTH(opcode=code, destqp=0x1234 + code, psn=0xABCDE + code, a=1, m=1)]
    for name in op.headers:
        headers.append(ETH_LAYOUTS[name](**{f.name: (i + 1) * 0x11 & f.mask for i, f in
                                             enumerate(ETH_LAYOUTS[name].wire)
                                             if f.kind == "int" and not f.reserved}))
    return encode(ETHERNET(dst="02:00:00:00:00:0b", src="02:00:00:00:00:0a"),
                  IPV4(src="10.0.0.1", dst="10.0.0.2"), UDP(srcport=0xC001), *headers,
                  payload=b"abcde" if op.payload else b"")


def _tshark_one(tmp_path, data, fields):
    return dict(zip(fields, _tshark_rows(_write(tmp_path, [data]), fields)[0]))


def test_wireshark_mistake_cnp_0x81_is_unknown_to_it(tmp_path):
    """Wireshark 4.0 names 0x80 CNP and shows RoCEv2's 0x81 as vendor data."""
    need_tshark()
    data = _roce2(0x81)
    theirs = _tshark_one(tmp_path, data, ["infiniband.bth.opcode", "infiniband.vendor"])
    assert theirs["infiniband.bth.opcode"] == "129" and theirs["infiniband.vendor"]
    pkt = decode(data, "eth")
    assert pkt.opcode.name == "Congestion Notification" and pkt.problems == []


def test_wireshark_mistake_rd_decoded_as_mellanox_dc(tmp_path):
    """Genuine RD (prefix 0x40) gets an extra 8 bytes after the BTH in Wireshark 4.0,
    so its RDETH/DETH values are wrong; ibwire follows IBA (RDETH then DETH)."""
    need_tshark()
    data = _roce2(0x44)
    theirs = _tshark_one(tmp_path, data, ["infiniband.rdeth.eecnxt", "infiniband.deth.q_key"])
    pkt = decode(data, "eth")
    assert pkt["infiniband.rdeth.eecnxt"] == 0x11 * 2 & 0xFFFFFF
    assert pkt.layer("deth") is not None
    assert theirs["infiniband.rdeth.eecnxt"] != str(pkt["infiniband.rdeth.eecnxt"])


def test_wireshark_mistake_fecn_becn_shown_as_reserved(tmp_path):
    need_tshark()
    data = _roce2(0x0A)
    pkt = decode(data, "eth")
    b = bytearray(data)
    bth = pkt.layer("bth").offset
    b[bth + 4] = 0xC0
    pkt = decode(bytes(b), "eth")   # FECN/BECN are ICRC-variant: still a good packet
    assert (pkt["infiniband.bth.fecn"], pkt["infiniband.bth.becn"]) == (1, 1)
    assert pkt.icrc_status == 1
    theirs = _tshark_one(tmp_path, bytes(b), ["infiniband.reserved"])
    assert "c0" in theirs["infiniband.reserved"]


@pytest.mark.parametrize("code", [0xA0, 0xA6, 0xB7, 0x1C, 0x1D])
def test_wireshark_shows_xrc_flush_atomic_write_as_vendor_data(tmp_path, code):
    need_tshark()
    data = _roce2(code)
    theirs = _tshark_one(tmp_path, data, ["infiniband.vendor", "infiniband.reth.va"])
    pkt = decode(data, "eth")
    assert pkt.problems == [] and pkt.icrc_status == 1
    assert [lay.name for lay in pkt.layers][3:] == ["bth", *OPCODES[code].headers]
    assert theirs["infiniband.vendor"] or theirs["infiniband.reth.va"] != (
        format_field("infiniband.reth.va", pkt.get("infiniband.reth.va")))


def test_aeth_credit_count_decoded_to_credits():
    data = _roce2(0x11)
    pkt = decode(data, "eth")
    assert pkt.layer("aeth") is not None
    for code, credits in ((0, 0), (5, 6), (12, 64), (30, 32768)):
        p = decode(encode(ETHERNET(), IPV4(src="10.0.0.1", dst="10.0.0.2"), UDP(),
                          BTH(opcode=0x11), AETH(syndrome=code, msn=3)), "eth")
        assert p["infiniband.aeth.credits"] == credits
    p = decode(encode(ETHERNET(), IPV4(src="1.1.1.1", dst="2.2.2.2"), UDP(), BTH(opcode=0x11),
                      AETH(syndrome=0x2C)), "eth")
    assert p["infiniband.aeth.syndrome.timer"] == 12 and p["infiniband.aeth.rnr_timer_ms"] == 0.64
    assert not p.has("infiniband.aeth.credits")
    p = decode(encode(ETHERNET(), IPV4(src="1.1.1.1", dst="2.2.2.2"), UDP(), BTH(opcode=0x11),
                      AETH(syndrome=0x60)), "eth")
    assert p["infiniband.aeth.syndrome.error_code"] == 0
    assert p.layer("aeth").layout.by_name["error_code"].describe(0) == "PSN Sequence Error"

