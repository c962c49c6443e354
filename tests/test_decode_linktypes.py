"""Link types beyond Ethernet and ERF: Linux cooked (113, 276), raw IP (101) and
LINKTYPE_INFINIBAND (247, which tshark 4.0 cannot open)."""

from __future__ import annotations

import subprocess

import pytest
from conftest import need_tshark

from ibwire import BTH, IPV4, LRH, RETH, UDP, CrcStatus, decode, encode
from ibwire.capture import PcapWriter, read_capture
from ibwire.headers.carriers import SLL, SLL2

ROCE = encode(IPV4(src="10.0.0.1", dst="10.0.0.2"), UDP(srcport=0xC001),
              BTH(opcode=0x0A, destqp=0x11, psn=77, a=1), RETH(va=0x1000, r_key=7, dmalen=3),
              payload=b"xyz")
FRAMES = {
    113: SLL.pack({"pkttype": 4, "hatype": 1, "halen": 6, "etype": 0x0800}) + ROCE,
    276: SLL2.pack({"etype": 0x0800, "ifindex": 3, "hatype": 1, "pkttype": 4, "halen": 6})
    + ROCE,
    101: ROCE,
}


@pytest.mark.parametrize("linktype", sorted(FRAMES))
def test_cooked_and_raw_ip_carry_rocev2(linktype):
    pkt = decode(FRAMES[linktype], linktype)
    assert pkt.problems == [] and pkt.icrc_status is CrcStatus.GOOD
    assert pkt["infiniband.bth.psn"] == 77 and pkt["infiniband.reth.dmalen"] == 3
    assert encode(pkt) == FRAMES[linktype]


@pytest.mark.parametrize("linktype", sorted(FRAMES))
def test_tshark_agrees_on_cooked_and_raw_ip(tmp_path, linktype):
    need_tshark()
    path = tmp_path / f"lt{linktype}.pcap"
    with PcapWriter(path, linktype=linktype) as w:
        w.write(FRAMES[linktype], ts_ns=10**18)
    fields = ["infiniband.bth.psn", "infiniband.bth.destqp", "infiniband.reth.dmalen",
              "infiniband.invariant.crc"]
    args = ["tshark", "-r", str(path), "-T", "fields"]
    for f in fields:
        args += ["-e", f]
    theirs = subprocess.run(args, capture_output=True, text=True, check=True).stdout.split()
    assert theirs == ["77", "0x000011", "3", f"0x{int.from_bytes(ROCE[-4:], 'big'):08x}"]


def test_linktype_247_native_packets_read_back(tmp_path):
    data = encode(LRH(dlid=4, slid=1), BTH(opcode=0x04, destqp=0x22, psn=9), payload=b"hi")
    path = tmp_path / "ib.pcap"
    with PcapWriter(path, linktype=247) as w:
        w.write(data, ts_ns=10**18)
        w.write(data[:-2], ts_ns=10**18 + 1)   # without the VCRC: accepted too
    frames = read_capture(path)
    first, second = (decode(f.data, f.linktype) for f in frames)
    assert first.vcrc_status is CrcStatus.GOOD and first.icrc_status is CrcStatus.GOOD
    assert second.vcrc_status is CrcStatus.NOT_PRESENT and second.problems == []
    assert second["infiniband.bth.psn"] == 9


def test_wireshark_cannot_open_linktype_247(tmp_path):
    """The reason ibwire exists: tshark 4.0 refuses LINKTYPE_INFINIBAND files."""
    need_tshark()
    path = tmp_path / "ib.pcap"
    with PcapWriter(path, linktype=247) as w:
        w.write(encode(LRH(dlid=4, slid=1), BTH(opcode=0x11), payload=b""), ts_ns=10**18)
    run = subprocess.run(["tshark", "-r", str(path)], capture_output=True, text=True)
    assert run.returncode != 0 and "247" in run.stderr
