"""RC engine (issue #13): the earliest READ/atomic hole rules the restart. A response
shows a READ or atomic missing its responses (an implied NAK); a later response shows
a later READ's hole before any restart. The requester goes back to the first request
still missing responses (IBA 9.7.4.1.5), so a copy at the earlier hole's PSN is that
restart, not a network copy, though the implied-NAK cause now names the later hole.
Examples random scenarios of the property test's space found, pinned with frames."""

from __future__ import annotations

import numpy as np
from rc_helpers import check_exact, compare, flags_of, generate, start_of, ts_ns, wide_draw

from ibwire.analysis.rc import analyze


def _loss(tmp_path, seed, **kw):
    path, truth = generate(tmp_path, "rc_loss", seed, messages=30, **kw)
    res, diff = compare(path, truth)
    return truth, res, diff


def test_a_copy_at_the_earlier_read_hole_restarts_there(tmp_path):
    """ACK 103 (..412) passes READ ..411 (94), whose response was lost before the tap:
    an implied NAK. READ response 107 (..414, a middle one) shows READ ..413's first
    response missing too, 209 ns later. READ ..411 again at 110 (299 ns after 103) is
    the restart for the first hole, and the run goes on from it (113-124; before: 110
    taken for the network's copy, the cause naming only the later hole)."""
    truth, res, diff = _loss(tmp_path, 8348, loss=0.02, loss_before_tap=1.0, rnr=0.0,
                             corrupt=0.02, encap="roce1", bidirectional=False,
                             capture_loss=0.0, psn_start=None)
    assert "implied_nak" in flags_of(res, 103)
    assert ts_ns(res, 107) - ts_ns(res, 103) == 209
    assert ts_ns(res, 110) - ts_ns(res, 103) == 299
    assert {"retransmission", "go_back_n"} <= flags_of(res, 110)
    assert "network_duplicate" not in flags_of(res, 110)
    assert start_of(res, 110) == start_of(res, 124) == ("implied_nak", 103)
    assert check_exact(truth, res, diff) == []
    twin = analyze(res.cols, use_numba=False)      # the kernel's plain-Python twin agrees
    np.testing.assert_array_equal(twin.flags, res.flags)
    np.testing.assert_array_equal(twin.trig, res.trig)


def test_a_copy_at_the_atomic_hole_restarts_there(tmp_path):
    """ACK 121 passes FetchAdd ..351 with no atomic ACK (lost before the tap); READ
    response 122, 52 ns later, shows READ ..353's first response missing. The FetchAdd
    again at 128 is the restart for the atomic's hole (before: a network copy)."""
    truth, res, diff = _loss(tmp_path, 94, loss=0.06, loss_before_tap=0.5, rnr=0.05,
                             corrupt=0.0, encap="ib-grh", bidirectional=True,
                             capture_loss=0.0, psn_start=None)
    assert "implied_nak" in flags_of(res, 121)
    assert ts_ns(res, 122) - ts_ns(res, 121) == 52
    assert {"retransmission", "go_back_n"} <= flags_of(res, 128)
    assert start_of(res, 128) == ("implied_nak", 121)
    assert check_exact(truth, res, diff) == []


def test_a_copy_after_another_copy_at_the_first_hole_stays_in_doubt(tmp_path):
    """Wide draw 35 of master 349 (the network delays copies): response 156 shows READ
    ..257's hole; a copy of READ ..261 follows (158, a restart's, its first packet
    ..257 held back). Response 211 shows a later hole; ..257 itself passes at 212,
    the restart's first packet, late. After that other copy it is no sure restart:
    flagged ambiguous, and the restart for 211 is 215 (a first form of the rule took
    212 for a sure restart, and 215 for a timer's)."""
    truth, res, diff = wide_draw(tmp_path, 349, 35)
    assert "implied_nak" in flags_of(res, 156) and "implied_nak" in flags_of(res, 211)
    assert "network_duplicate" in flags_of(res, 158)
    assert "ambiguous" in flags_of(res, 212)
    assert start_of(res, 215) == start_of(res, 216) == ("implied_nak", 211)
    assert check_exact(truth, res, diff) == []
