"""A resend run that ended at a packet past its next PSN, that PSN's resend delayed
(issue #13).

A READ run resends a few requests and then waits for their responses. When the
network delays one of them, the tap sees the run jump past it, and the delayed
request comes microseconds later, as if the run resumed there after a late copy.
A run that resumed after a late copy still has that copy's PSN to resend, so it
goes on at once; when the next request is new data, a restart, or nothing for as
long as the shortest ACK timeout, the run had ended at the packet past: that was the
run's own jump, and the "resume" its delayed resend. Before, the packet past was
called a late copy (out of sequence) and its resend went uncounted."""

from __future__ import annotations

from rc_helpers import exact, flags_of, generate, reordered, start_of

from ibwire.analysis.rc import analyze
from ibwire.analysis.rc_input import rc_columns
from ibwire.analysis.rc_rules import MIN_ACK_TIMEOUT_NS

# Draws of `tools`' wider sweep (seeds 351, 353): READ-only streams in 256- and
# 1024-byte packets.
READS_GRH = {"ops": {"read": 1}, "sizes": (4096, 9000, 20000), "loss": 0,
             "loss_before_tap": 0.3, "rnr": 0, "corrupt": 0, "encap": "ib-grh",
             "connections": 2, "ack_every": 2, "credits": "count", "pmtu": 1024, "tx_depth": 8,
             "rnr_timer": 1, "cm": False, "reorder": 0.02, "duplicate": 0.01, "messages": 20}
READS_ROCE2 = {"ops": {"read": 1}, "sizes": (4096, 9000, 20000), "loss": 0.02,
               "loss_before_tap": 0, "rnr": 0, "corrupt": 0, "encap": "roce2",
               "connections": 3, "ack_every": 4, "credits": "count", "pmtu": 256, "tx_depth": 8,
               "rnr_timer": 6, "cm": False, "reorder": 0.02, "duplicate": 0, "messages": 20}


def test_a_read_run_whose_middle_request_came_late_then_new_data(tmp_path):
    """Implied NAK 54 re-reads ..399 (57), ..415 (58) and ..439 (59): the READ at
    ..435 between them comes 3 us later (102). The next request is new data (..443,
    156), not ..439 again: the run had ended at 59, its jump, and 102 is its resend,
    delayed (before: 59 a late copy, out of sequence)."""
    truth, res = exact(tmp_path, 60880, name="rc_clean", **READS_GRH)
    assert reordered(truth, 102) and not reordered(truth, 59)
    for f in (57, 58, 59, 102):
        assert "retransmission" in flags_of(res, f)
        assert start_of(res, f) == ("implied_nak", 54)
    assert "out_of_sequence" not in flags_of(res, 59)
    assert "retransmission" not in flags_of(res, 156)


def test_a_read_run_the_capture_ends_after(tmp_path):
    """Implied NAK 1179 re-reads ..739 (1183) and ..792 (1184); the READ at ..776
    between them comes 3 us later (1216). Cut the capture where nothing more of that
    connection came for the shortest ACK timeout after 1216: the run did not go on,
    so 1184 was its jump. Cut sooner, nothing tells, and 1184 stays a late copy."""
    truth, res = exact(tmp_path, 20015, name="rc_clean", **READS_ROCE2)
    assert reordered(truth, 1216)
    assert start_of(res, 1184) == ("implied_nak", 1179)
    path, _ = generate(tmp_path, "rc_clean", 20015, **READS_ROCE2)
    cols = rc_columns(path)
    ts = cols["frame.time_ns"]
    t0 = int(ts[1216 - 1])
    end = next(r for r in range(1216, len(ts)) if ts[r] - t0 >= MIN_ACK_TIMEOUT_NS)
    assert end + 1 < 1465       # (the connection's next request)
    for rows, jumped in ((end + 1, True), (end, False)):
        cut = analyze({k: v[:rows] for k, v in cols.items()})
        assert ("retransmission" in flags_of(cut, 1184)) is jumped
        assert ("out_of_sequence" in flags_of(cut, 1184)) is not jumped
        assert "retransmission" in flags_of(cut, 1216)


READS_ATOMICS = {"ops": {"read": 3, "cmp_swap": 1, "fetch_add": 1, "send": 1},
                 "sizes": (4096, 9000, 20000), "loss": 0.05, "loss_before_tap": 0.3, "rnr": 0,
                 "corrupt": 0.02, "encap": "roce2", "connections": 3, "ack_every": 2,
                 "credits": "unlimited", "pmtu": 256, "tx_depth": 8, "rnr_timer": 12,
                 "cm": True, "reorder": 0.03, "duplicate": 0, "messages": 20}


def test_the_run_going_on_from_the_packet_past_at_once(tmp_path):
    """Implied NAK 3891's run resends ..227 (3919), then ..229 (3922), its ..228 held
    back by the network (3959). A copy of ..228 from an earlier run comes late (3925)
    and looks like the run resuming there; but the next request is ..230 (3926) in the
    same nanosecond: the run could not have sent ..229 again in between, so it went
    on from 3922, which is its resend (before: a late copy, out of sequence)."""
    truth, res = exact(tmp_path, 54334, name="rc_clean", **READS_ATOMICS)
    assert reordered(truth, 3925) and reordered(truth, 3959)
    ts = res.cols["frame.time_ns"]
    assert ts[3926 - 1] == ts[3925 - 1]
    assert "retransmission" in flags_of(res, 3922)
    assert "out_of_sequence" not in flags_of(res, 3922)
    assert start_of(res, 3922) == ("implied_nak", 3891)
