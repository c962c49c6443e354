"""A re-read READ's progress at the requester (issue #13).

After a restart re-reads a READ from PSN u, the requester drops every response
past u that comes before u's own (out of sequence); once that comes, it expects
u + 1, whatever the tap saw of the earlier response stream. So a hole in the
re-read's stream is an implied NAK even where the earlier stream had passed the
tap in full. Before, the engine kept the earlier stream's progress: the hole
showed nothing, and the restart answering it was a timeout or an older hole's."""

from __future__ import annotations

from rc_helpers import compare, flags_of, generate, start_of

# A draw of `tools`' wider sweep (seed 345): one long READ stream per connection,
# in 256-byte responses, with loss, damage, reordering and duplication.
READ_GRH = {"ops": {"read": 1}, "sizes": (4096, 9000, 20000), "loss": 0.05,
            "loss_before_tap": 0, "rnr": 0.04, "corrupt": 0.02, "encap": "ib-grh",
            "connections": 2, "ack_every": 4, "credits": "count", "pmtu": 256,
            "tx_depth": 2, "rnr_timer": 6, "cm": False, "reorder": 0.03,
            "duplicate": 0.01, "messages": 20}


def test_holes_in_a_re_read_stream_after_the_first_stream_passed(tmp_path):
    """Re-read at ..438 (1782) while the first stream runs on to ..508 (1840). The
    re-read's own responses start at 1841; ..472, delayed, shows the hole at ..444
    (1847), re-read at 1857; ..444-..452 follow in order, ..453 arrives damaged
    (1858), so ..454 (1859) shows the hole at ..453: the re-read at 1868 answers it
    (before: a timeout). Likewise ..942 (4824) in the re-read from ..923 (4807) shows
    the hole at ..941, re-read at 4833 (before: taken for the hole shown at 4769)."""
    path, truth = generate(tmp_path, "rc_clean", 77309, **READ_GRH)
    res, _ = compare(path, truth)
    assert {"implied_nak", "read_response_gap"} <= flags_of(res, 1859)
    assert start_of(res, 1857) == ("implied_nak", 1847)
    assert start_of(res, 1868) == ("implied_nak", 1859)
    assert "implied_nak" in flags_of(res, 4824)
    assert start_of(res, 4833) == ("implied_nak", 4824)
    by_frame = {e["frame"]: e for e in truth["retransmissions"] if e["frame"]}
    for frame, trigger in ((1868, 1859), (4833, 4824)):
        assert (by_frame[frame]["reason"], by_frame[frame]["trigger_frame"]) == \
            ("implied_nak", trigger)
