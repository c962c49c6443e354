"""ibwire.read / ibwire.write: packets in and out of capture files."""

from __future__ import annotations

from conftest import PCAPS

import ibwire
from ibwire import BTH, ETHERNET, IPV4, LRH, UDP, CrcStatus
from ibwire.capture import read_capture


def test_read_then_write_is_byte_identical(tmp_path):
    src = PCAPS / "rc_loss_roce2.pcap"
    pkts = list(ibwire.read(src))
    assert len(pkts) == len(read_capture(src)) > 100
    assert all(p.icrc_status is CrcStatus.GOOD for p in pkts)
    out = tmp_path / "copy.pcap"
    assert ibwire.write(out, pkts) == len(pkts)
    assert out.read_bytes() == src.read_bytes()


def test_write_built_packets_and_bytes(tmp_path):
    roce = ibwire.encode(ETHERNET(), IPV4(src="10.0.0.1", dst="10.0.0.2"), UDP(),
                         BTH(opcode=0x04, destqp=3, psn=1), payload=b"abcd")
    native = ibwire.decode(ibwire.encode(LRH(dlid=2, slid=1), BTH(opcode=0x04), payload=b"x"),
                           "ib")
    out = tmp_path / "mix.pcapng"
    assert ibwire.write(out, [roce, native], fmt="pcapng", start_ns=10**18) == 2
    back = list(ibwire.read(out))
    assert [p.frame.linktype for p in back] == [1, 247]
    assert back[0]["infiniband.bth.destqp"] == 3 and back[1].vcrc_status is CrcStatus.GOOD
    assert [p.frame.ts_ns for p in back] == [10**18, 10**18 + 1000]
