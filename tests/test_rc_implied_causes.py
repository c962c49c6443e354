"""RC engine (issue #13): which retry cause an implied NAK leaves pending. It names
the hole a response showed (not that response's PSN), and a restart from below the
hole resends it, answering it (`docs/rc-analysis.md`, "Retransmissions"). Pinned on
draws of the sweep tool (`tools/rc_sweep.py`) the engine got wrong before."""

from __future__ import annotations

from rc_helpers import (
    check_exact,
    compare,
    flags_of,
    generate,
    start_of,
    sweep_tool,
    ts_ns,
    wide_draw,
)


def test_an_implied_nak_names_its_hole_not_its_responses_psn(tmp_path):
    """41 and 42 are READs (..544, ..545); ..544's response is lost before the tap and
    43 (..545's) is the implied NAK. Its run resends ..545 (44) and the FetchAdd at
    ..546 (45); 47 acknowledges ..546, with ..544 still unanswered at the tap, so it
    shows that hole again: a cause naming ..544. 48, ..546 again 1.5 us later, is at
    the PSN of 47, not at the one 47 names: not that restart (which begins at ..544),
    but the FetchAdd's original, delayed."""
    truth, res, diff = wide_draw(tmp_path, 343, 3)
    assert "implied_nak" in flags_of(res, 43)
    assert "go_back_n" not in flags_of(res, 48)
    assert 48 in {e["frame"] for e in truth["events"] if e["kind"] == "reorder"}
    assert check_exact(truth, res, diff) == []


def test_a_hole_a_run_resent_and_went_on_from_is_answered(tmp_path):
    """(Extended draw 55 of master 1.) 33 shows the hole at ..408 (32 lost after the
    tap) and 44 the one at ..415 (43 had a bad ICRC); the restart at ..408 (51) resends
    every PSN from there, ..415 at 70 and on to ..417 at 73: it answered 44's hole
    too. So when the ACK at 94 shows ..415 unanswered again, the restart at ..415
    (105) answers 94, not 44."""
    seed, params = sweep_tool().extended_params(1, 55)
    path, truth = generate(tmp_path, "rc_clean", seed, **params)
    res, diff = compare(path, truth)
    assert start_of(res, 51) == ("implied_nak", 33)
    assert "retransmission" in flags_of(res, 70)
    assert start_of(res, 105) == ("implied_nak", 94)
    assert check_exact(truth, res, diff) == []


def test_a_run_resend_sooner_than_a_reaction_leaves_the_hole_pending(tmp_path):
    """The guard on the rule above (`rc_reorder` seed 40): 88 shows the hole at ..618
    while the NAK run from 80 is under way; that run resends ..618 at 90, 76 ns later,
    and goes on. The requester has shown no reaction to an implied NAK yet, and 376 ns
    to a sequence NAK (72 to 80), so 90 may have left before it had 88: the hole stays
    pending, and the restart at ..618 (97) answers 88."""
    path, truth = generate(tmp_path, "rc_reorder", 40)
    res, diff = compare(path, truth)
    assert ts_ns(res, 90) - ts_ns(res, 88) == 76
    assert ts_ns(res, 80) - ts_ns(res, 72) == 376
    assert start_of(res, 80) == ("nak_seq", 72)
    assert start_of(res, 97) == ("implied_nak", 88)
    assert check_exact(truth, res, diff) == []
