"""The RC engine on real soft-RoCE (rxe) captures: totals equal the kernel's counters
(../shared/captures/rxe/MANIFEST.md), per-frame netem truth is recovered."""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pytest
from conftest import CAPTURES, need_shared

from ibwire.analysis import rc_rules as R
from ibwire.analysis.rc import RcResult, analyze
from ibwire.analysis.rc_input import rc_columns

RXE = CAPTURES / "rxe"
TESTS = sorted(p.name.split(".")[0] for p in RXE.glob("*.counters.json")) if RXE.is_dir() \
    else []


@cache
def _run(test: str, view: str) -> RcResult:
    return analyze(rc_columns(RXE / f"{test}.{view}.pcap"))


def _counters(test: str) -> tuple[dict, dict]:
    doc = json.loads((RXE / f"{test}.counters.json").read_text())
    return doc, doc["hw_counters_delta_nonzero"]


def _total(res: RcResult, name: str) -> int:
    return int(res.counts[:, R.COUNT[name]].sum())


@pytest.mark.parametrize("test", TESTS)
def test_totals_equal_kernel_counters(test):
    need_shared()
    _, hw = _counters(test)

    def hw_sum(k: str) -> int:
        return sum(dev.get(k, 0) for dev in hw.values())

    wire, rcvd = _run(test, "wire"), _run(test, "rcvd")
    assert _total(wire, "nak_psn_seq_err") == hw_sum("out_of_seq_request")
    assert _total(wire, "rnr_naks") == hw_sum("send_rnr_err")
    assert _total(wire, "go_back_n") == hw_sum("completer_retry_err")
    assert _total(rcvd, "duplicate_requests") == hw_sum("duplicate_request")


@pytest.mark.parametrize("test", TESTS)
def test_netem_drops_are_recovered(test):
    """Every request netem dropped (wire view) is resent later in the capture, and on
    the post-loss view its PSN lies in a reported gap (lost before that capture point);
    a dropped response is covered again by a later response or answered by a resend.

    The per-frame truth matches rcvd frames to wire frames by bytes; over IPv6 (no IP
    ID) a resend is byte-identical to its original, so the truth may name the resend
    as dropped and the original as delivered: then the PSN was sent at least twice."""
    need_shared()
    doc, _ = _counters(test)
    wire = _run(test, "wire")
    hc, upsn, fl = wire.streams.hc, wire.upsn, wire.flags
    rows = np.arange(len(hc))
    for d in doc["per_frame_impairment_ground_truth"]["dropped_by_netem"]:
        i = d["wire_frame"] - 1
        same = (hc == hc[i]) & (upsn == upsn[i])
        if d["opcode"] in (0x11, 0x12) or 0x0D <= d["opcode"] <= 0x10:
            # A response: a later response of the same stream covers its PSN again
            # (cumulative ACK, READ response resent), else the requester resent.
            later = (hc == hc[i]) & (rows > i) & (upsn >= upsn[i]) & (
                (wire.cols["infiniband.bth.opcode"] >= 0x0D) |
                ((fl & R.F_RETX) != 0))
            assert later.any(), d
            continue
        assert (same & (rows != i)).any(), d
        if not (same & (rows > i)).any():
            # Not resent: the dropped copy was itself a resend the responder did not
            # need (it already had the PSN), or the IPv6 matching ambiguity above.
            assert fl[i] & R.F_DUP or doc["roce_family"].endswith("IPv6"), d


@pytest.mark.parametrize("test", TESTS)
def test_responses_reported_lost_were_dropped(test):
    """On the wire view a response is reported lost after the capture point when the
    requester's next move shows it never arrived (a READ re-read from its PSN; a
    timeout restart at a PSN an ACK had covered): each one netem did drop."""
    need_shared()
    doc, _ = _counters(test)
    wire = _run(test, "wire")
    truth = doc["per_frame_impairment_ground_truth"]
    dropped = {d["wire_frame"] for d in truth["dropped_by_netem"]}
    op = wire.cols["infiniband.bth.opcode"]
    lost = (wire.flags & R.F_LOST_AFTER) != 0
    flagged = set((wire.cols["frame.number"][lost & (op >= 0x0D) & (op <= 0x12)]).tolist())
    assert flagged <= dropped
    # c3 loses READ responses only (every loss is re-read at once); c1 loses ACKs only,
    # and all but two (repeats of an ACK whose other copies arrived) cost a timeout.
    want = {"c3_read_resploss2": 12, "c1_send_ackloss5_t1": 10}.get(test)
    assert want is None or len(flagged) == want


@pytest.mark.parametrize("test", ["b1_send_loss2", "b3_read_loss3", "e2_write_v6_loss2",
                                  "f3_send_burstloss"])
def test_post_loss_view_reports_every_dropped_psn(test):
    need_shared()
    doc, _ = _counters(test)
    rcvd = _run(test, "rcvd")
    drops = doc["per_frame_impairment_ground_truth"]["dropped_by_netem"]
    # Each dropped request leaves its PSN missing where it was due: in a psn_gap.
    assert _total(rcvd, "lost_before_capture") >= len(drops)
    gaps = np.flatnonzero(rcvd.flags & R.F_GAP)
    psn = rcvd.cols["infiniband.bth.psn"]
    covered = set()
    for g in gaps:
        for k in range(int(rcvd.gap[g])):
            covered.add((int(psn[g]) - 1 - k) & 0xFFFFFF)
    # READ requests consume several PSNs; their gap holds the request's own PSN.
    assert {d["psn"] for d in drops} <= covered


def test_corrupted_frames_have_bad_icrc():
    need_shared()
    doc, _ = _counters("f2_send_corrupt")
    rcvd = _run("f2_send_corrupt", "rcvd")
    corrupted = doc["per_frame_impairment_ground_truth"]["corrupted_by_netem"]
    assert corrupted
    for c in corrupted:
        i = c["rcvd_frame"] - 1
        if rcvd.streams.hc[i] < 0:
            # The flip hit the IP/UDP header: no longer RoCE (Ip.InHdrErrors counts it).
            continue
        assert rcvd.flags[i] & R.F_BAD_ICRC, c
    # ... and each is followed by recovery: the wire view shows its PSN sent again.
    wire = _run("f2_send_corrupt", "wire")
    hc, upsn = wire.streams.hc, wire.upsn
    for c in corrupted:
        i = c["wire_frame"] - 1
        assert ((hc == hc[i]) & (upsn == upsn[i]) & (np.arange(len(hc)) > i)).any(), c


@pytest.mark.parametrize("test", [t for t in TESTS if "clean" in t])
def test_clean_captures(test):
    """No loss, NAK or gap; a4 holds one spurious timeout retry (MANIFEST caveat: the
    TCG guest is slow) and the engine reports exactly that one, as a timeout."""
    need_shared()
    _, hw = _counters(test)
    for view in ("wire", "rcvd"):
        res = _run(test, view)
        assert _total(res, "lost_before_capture") == 0
        assert _total(res, "nak_psn_seq_err") == 0
        retries = sum(dev.get("completer_retry_err", 0) for dev in hw.values())
        assert _total(res, "timeouts") == retries
