"""Every packet of the given real captures: decodes, CRCs as the ground truth
says, and re-encodes byte-identically from its decoded values."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from conftest import CAPTURES, capture_params, need_shared

from ibwire import CrcStatus, decode, encode
from ibwire.capture import read_capture


def _packets(path):
    for frame in read_capture(path):
        yield frame, decode(frame.data, frame.linktype, frame=frame)


@pytest.mark.parametrize("path", capture_params())
def test_every_packet_round_trips_byte_identical(path):
    n = 0
    for frame, pkt in _packets(path):
        assert encode(pkt) == frame.data, f"frame {frame.index + 1}"
        n += 1
    assert n > 0


@pytest.mark.parametrize("path", capture_params("public", "mad"))
def test_public_and_mad_captures_have_only_good_crcs(path):
    ib = 0
    for frame, pkt in _packets(path):
        if not pkt.is_infiniband:
            continue
        ib += 1
        assert pkt.problems == [], f"frame {frame.index + 1}: {pkt.problems}"
        assert pkt.icrc_status is CrcStatus.GOOD, f"frame {frame.index + 1}"
        if path.parent.name == "mad":
            assert pkt.vcrc_status is CrcStatus.GOOD
    assert ib > 0


@pytest.mark.parametrize("path", capture_params("rxe"))
def test_rxe_bad_icrcs_are_exactly_the_frames_netem_corrupted(path):
    truth = json.loads(path.with_name(path.name.split(".")[0] + ".counters.json").read_text())
    corrupted = truth["per_frame_impairment_ground_truth"]["corrupted_by_netem"]
    side = "rcvd_frame" if ".rcvd." in path.name else None
    expected = {c[side] for c in corrupted} if side else set()
    bad = set()
    for frame, pkt in _packets(path):
        if pkt.is_infiniband and pkt.icrc_status is not CrcStatus.GOOD:
            bad.add(frame.index + 1)
    # A flip in the Ethernet header or the IP/UDP ports can hide the RoCE packet
    # instead of spoiling its ICRC; every bad ICRC must still be a corrupted frame.
    assert bad <= expected
    hidden = expected - bad
    for c in corrupted:
        if c.get(side) in hidden:
            assert c["byte_offset"] < 14 + 20 + 8, c


def test_the_corrupt_capture_shows_its_bad_icrcs():
    need_shared()
    path = CAPTURES / "rxe" / "f2_send_corrupt.rcvd.pcap"
    bad = sum(1 for _, p in _packets(path) if p.icrc_status is CrcStatus.BAD)
    assert bad >= 14


def test_public_capture_opcode_counts_match_the_manifest():
    need_shared()
    ops = Counter(p["infiniband.bth.opcode"] for _, p in
                  _packets(CAPTURES / "public" / "roce-v2-huawei-send-imm.pcap")
                  if p.has("infiniband.bth.opcode"))
    assert ops == {0x00: 33, 0x03: 33, 0x05: 2, 0x11: 37}
    credits = {p["infiniband.aeth.credits"] for _, p in
               _packets(CAPTURES / "public" / "roce-v2-huawei-send-imm.pcap")
               if p.has("infiniband.aeth.credits")}
    assert credits and all(isinstance(c, int) for c in credits)
