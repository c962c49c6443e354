"""The RC engine against the generator's ground truth: every retransmitted PSN, NAK,
RNR NAK and RNR retry, over scenarios and seeds (PSN wrap, capture-point loss, both
directions, several connections, native IB, ERF, CM)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rc_helpers import check_exact, compare, flags_of, generate

from ibwire.analysis import rc_rules as R

SEEDS = range(1, 7)
CASES = {
    "rc_loss": ("rc_loss", {}),
    "rc_rnr": ("rc_rnr", {}),
    "rc_rnr_loss": ("rc_rnr", {"loss": 0.03}),
    "rc_corrupt": ("rc_corrupt", {}),
    "rc_wrap": ("rc_wrap", {"loss": 0.05}),
    "capture_loss": ("rc_loss", {"capture_loss": 0.03}),
    "loss_before_tap": ("rc_loss", {"loss_before_tap": 1.0, "loss": 0.05}),
    "bidirectional": ("rc_loss", {"bidirectional": True}),
    "connections": ("rc_loss", {"connections": 3}),
    "native_erf": ("rc_loss", {"encap": "ib", "fmt": "erf"}),
    "reads_atomics": ("rc_loss", {"ops": {"read": 3, "cmp_swap": 1, "fetch_add": 1,
                                          "send": 1}}),
    "cm": ("fabric_mads", {"loss": 0.03}),
    "reorder": ("rc_reorder", {}),
    "duplicate": ("rc_clean", {"duplicate": 0.03}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_engine_recovers_truth(tmp_path, case):
    name, kw = CASES[case]
    found = 0
    for seed in SEEDS:
        path, truth = generate(tmp_path, name, seed, **kw)
        res, diff = compare(path, truth)
        assert check_exact(truth, res, diff) == [], seed
        found += len(truth["retransmissions"]) + len(truth["naks"])
    assert found or case == "duplicate"


@pytest.mark.parametrize("seed", range(1, 9))
def test_clean_captures_have_no_findings(tmp_path, seed):
    path, truth = generate(tmp_path, "rc_clean", seed)
    res, _ = compare(path, truth)
    bad = R.F_RETX | R.F_NAK | R.F_RNR | R.F_GAP | R.F_LATE | R.F_DUP | R.F_IMPLIED | \
        R.F_LOST_AFTER | R.F_COPY | R.F_RESP_OOS | R.F_AMBIGUOUS
    assert not (res.flags & bad).any()
    assert res.counts[:, R.COUNT["messages"]].sum() == sum(
        c["a"]["requester"]["messages_completed"] for c in truth["connections"])


def test_wrap_crosses_zero(tmp_path):
    path, truth = generate(tmp_path, "rc_wrap", 3)
    res, diff = compare(path, truth)
    psn = res.cols["infiniband.bth.psn"]
    rows = res.streams.hc >= 0
    assert psn[rows].max() > 0xFFFFF0 and psn[rows].min() < 0x10      # it does wrap
    # Unwrapped PSNs of new requests only grow across the wrap.
    new = rows & ((res.flags & (R.F_RETX | R.F_COPY | R.F_LATE)) == 0) & \
        (res.cols["infiniband.bth.opcode"] < 0x0D)
    for h in set(res.streams.hc[new].tolist()):
        u = res.upsn[new & (res.streams.hc == h)]
        assert (u[1:] > u[:-1]).all()
    assert diff["retransmission"] == (set(), set())


def test_episode_reasons_match_requester(tmp_path):
    """Counted go-back-N episodes equal the generator requester's retries (those with a
    captured resend) on captures without capture-point loss."""
    for seed in SEEDS:
        path, truth = generate(tmp_path, "rc_loss", seed, loss_before_tap=0.0)
        res, _ = compare(path, truth)
        stats = truth["connections"][0]["a"]["requester"]["stats"]
        want = sum(v for k, v in stats.items() if k.startswith("retry_"))
        assert res.counts[:, R.COUNT["go_back_n"]].sum() == want, seed


@given(seed=st.integers(0, 10_000), loss=st.sampled_from([0.0, 0.02, 0.06]),
       before=st.sampled_from([0.0, 0.5, 1.0]), rnr=st.sampled_from([0.0, 0.05]),
       corrupt=st.sampled_from([0.0, 0.02]), encap=st.sampled_from(["roce2", "ib", "roce1"]),
       bidirectional=st.booleans(), capture_loss=st.sampled_from([0.0, 0.0, 0.02]),
       psn_start=st.one_of(st.none(), st.integers(0xFFFF00, 0xFFFFFF)))
@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_property_any_generated_capture(tmp_path, seed, loss, before, rnr, corrupt, encap,
                                        bidirectional, capture_loss, psn_start):
    """Random scenarios (PSN wrap and capture-point loss included): exactly the tap's-eye
    truth (frames flagged ambiguous aside)."""
    path, truth = generate(tmp_path, "rc_loss", seed, loss=loss, loss_before_tap=before,
                           rnr=rnr, corrupt=corrupt, encap=encap, messages=30,
                           bidirectional=bidirectional, capture_loss=capture_loss,
                           psn_start=psn_start)
    res, diff = compare(path, truth)
    assert check_exact(truth, res, diff) == []


# -- the former remainders, pinned (issue #13) ---------------------------------------------
def _flags_of(res, frame):
    return R.flag_names(int(res.flags[frame - 1]))


def test_resend_of_an_unseen_front_is_not_tap_visible(tmp_path):
    """PSN 15404090 was missed by the capture and nothing after it was sent before the
    NAK's go-back-N reached it: its resend is, at the tap, a first transmission."""
    path, truth = generate(tmp_path, "rc_loss", 5, capture_loss=0.03)
    hidden = [e["frame"] for e in truth["retransmissions"]
              if e["frame"] is not None and not e["tap_visible"]]
    assert hidden == [321]
    res, diff = compare(path, truth)
    assert "retransmission" not in _flags_of(res, 321)
    assert check_exact(truth, res, diff) == []


def test_rnr_nak_lost_after_the_tap(tmp_path):
    path, truth = generate(tmp_path, "rc_rnr", 4, loss=0.03)
    rnr = {e["frame"]: e for e in truth["rnr_naks"]}
    # Its retry is the requester's timeout 67 ms later: at the tap, the RNR retry.
    assert rnr[399]["retry_frame"] is None and rnr[399]["tap_retry_frame"] == 400
    res, _ = compare(path, truth)
    assert "rnr_retry" in _flags_of(res, 400)
    # Here the resend comes 0.26 us after the RNR NAK (timer 640 us): the requester
    # never got it and resends for the sequence NAK behind it.
    path, truth = generate(tmp_path, "rc_rnr", 5, loss=0.03)
    rnr = {e["frame"]: e for e in truth["rnr_naks"]}
    assert rnr[225]["tap_retry_frame"] is None
    res, _ = compare(path, truth)
    assert "rnr_retry" not in _flags_of(res, 235)
    assert R.REASON_NAMES[res.reason[234]] == "nak_seq"


def test_originals_delayed_past_their_resend(tmp_path):
    path, truth = generate(tmp_path, "rc_reorder", 1)
    res, diff = compare(path, truth)
    # 103: after the requester restarted past it (NAK 96 acted on): not a resend.
    assert "out_of_sequence" in _flags_of(res, 103)
    assert "retransmission" not in _flags_of(res, 103)
    # 112, 114: two consecutive originals, both late, sooner after their first copies
    # than any timeout; in order, they are also what a resend run whose cause the
    # capture missed would look like: flagged, not silently classified.
    for f in (112, 114):
        assert "ambiguous" in _flags_of(res, f), f
    # A resend the first run skipped, arriving late: still that run's resend.
    assert "retransmission" in _flags_of(res, 132)
    assert check_exact(truth, res, diff) == []


def test_network_duplicate_before_the_first_round_trip(tmp_path):
    path, truth = generate(tmp_path, "rc_clean", 3, duplicate=0.03)
    res, _ = compare(path, truth)
    assert _flags_of(res, 7) == ["duplicate", "network_duplicate"]


def test_late_copy_in_an_unsure_runs_skip_is_flagged(tmp_path):
    """An episode started by late copies (flagged ambiguous) 'skips' PSNs it never had
    to resend: a later copy of one of those is that run's late resend only if the run
    was one. Here both are originals delayed past their resends: flagged, not counted
    as that run's resends silently. (151 is placed exactly: the READ copy at 148 cut no
    run short, so no unsure run claims it, and it is a late original.)"""
    kw = dict(reorder=0.06, duplicate=0.01, loss=0.0, rnr=0.0, capture_loss=0.0,
              messages=40)
    path, truth = generate(tmp_path, "rc_loss", 8863, **kw)
    res, diff = compare(path, truth)
    late = {e["frame"] for e in truth["events"] if e["kind"] == "reorder"}
    resent = {e["frame"] for e in truth["retransmissions"]}
    for f in (104, 151):
        assert f in late and f not in resent
    assert "ambiguous" in _flags_of(res, 104)
    assert _flags_of(res, 151) == ["out_of_sequence", "duplicate"]
    assert check_exact(truth, res, diff) == []
    path, truth = generate(tmp_path, "rc_loss", 2374, **dict(kw, reorder=0.04,
                                                             duplicate=0.02))
    res, diff = compare(path, truth)
    assert check_exact(truth, res, diff) == []


def test_copy_of_a_later_resend_in_an_older_runs_skip_is_flagged(tmp_path):
    """Frame 125 repeats 123 (the resend for NAK 117) 0.3 us later; its PSN lies in
    the range an older run skipped. That run's late resend, or the network's copy of
    the newer one: identical bytes, so flagged."""
    path, truth = generate(tmp_path, "rc_loss", 9349, reorder=0.06, duplicate=0.02,
                           loss=0.0, rnr=0.0, capture_loss=0.02, messages=40)
    res, diff = compare(path, truth)
    dup = {e["frame"]: e for e in truth["events"] if e["kind"] == "duplicate"}
    assert dup[125]["original_frame"] == 123
    assert "ambiguous" in _flags_of(res, 125)
    assert check_exact(truth, res, diff) == []


def test_copy_then_a_run_that_skips(tmp_path):
    """Frame 37 resends PSN ..359 for a NAK the capture missed; the resend of ..360 is
    lost before the tap and 38 goes on at ..361. A repeat, then a resend past the PSN
    after it with no ACK past the repeat: a run whose next packets were lost, or a
    network duplicate and another resend. Flagged; the run is found again (Hypothesis
    example)."""
    path, truth = generate(tmp_path, "rc_loss", 1925, loss=0.06, loss_before_tap=1.0,
                           rnr=0.0, corrupt=0.02, encap="roce1", messages=30,
                           capture_loss=0.02)
    res, diff = compare(path, truth)
    assert _flags_of(res, 37) == ["retransmission", "go_back_n", "ambiguous"]
    assert check_exact(truth, res, diff) == []


def test_a_late_original_past_its_resend_is_not_a_run_start(tmp_path):
    """191 repeats PSN ..601 (the original, delayed past its resend 168) with a NAK for
    an earlier PSN pending; 192 then resends ..610, continuing the run of 184-190, not
    191. A copy past the pending cause's PSN is held back as a late copy and becomes a
    run start only when the next request continues it in order."""
    path, truth = generate(tmp_path, "rc_loss", 6482, reorder=0.06, duplicate=0.04,
                           loss=0.0, rnr=0.05, capture_loss=0.0, messages=40)
    res, _ = compare(path, truth)
    assert 191 in {e["frame"] for e in truth["events"] if e["kind"] == "reorder"}
    assert 191 not in {e["frame"] for e in truth["retransmissions"]}
    assert "retransmission" not in _flags_of(res, 191)
    assert "out_of_sequence" in _flags_of(res, 191)
    assert "retransmission" in _flags_of(res, 192)


def test_a_copy_past_the_refused_psn_before_the_rnr_timer_is_not_its_retry(tmp_path):
    """93 (..279, a late original) comes 2.6 us after RNR NAK 89 refused ..277 (timer
    640 us): the RNR NAK cannot have caused it, so it stays pending and 94, at the
    refused PSN after the wait, is its retry."""
    path, truth = generate(tmp_path, "rc_loss", 7863, reorder=0.02, duplicate=0.01,
                           loss=0.0, rnr=0.05, capture_loss=0.02, messages=40)
    res, _ = compare(path, truth)
    rnr = {e["frame"]: e for e in truth["rnr_naks"]}
    assert rnr[89]["tap_retry_frame"] == 94
    assert "rnr_retry" in _flags_of(res, 94)


@pytest.mark.parametrize("seed,kw", [
    # A READ resent for an implied NAK the tap cannot see (its response was lost after
    # the tap), inside PSNs an earlier run skipped: a resend, not that run's late copy.
    (0, dict(loss=0.06, loss_before_tap=0.5, rnr=0.0, corrupt=0.02, encap="roce1",
             bidirectional=True, capture_loss=0.02, psn_start=16776960)),
    # A timeout run restarting at the refused PSN of an RNR NAK whose retry was lost
    # before the tap: not marked as that (delayed) RNR retry.
    (4175, dict(loss=0.02, loss_before_tap=1.0, rnr=0.05, corrupt=0.02, encap="roce1",
                bidirectional=True, capture_loss=0.02, psn_start=None)),
    (9141, dict(loss=0.06, loss_before_tap=1.0, rnr=0.05, corrupt=0.0, encap="ib-grh",
                bidirectional=True, capture_loss=0.0, psn_start=None)),
    # The capture missed PSN ..031's first copy; an RNR NAK refuses it. Its retry, a
    # hole fill, is held back (a cause for an earlier PSN is pending) and the next
    # request makes it the run's start: still the RNR retry, and the request after it
    # does not spend the RNR cause as if that retry had been lost.
    (199, dict(loss=0.0, loss_before_tap=0.0, rnr=0.05, corrupt=0.0, encap="roce1",
               bidirectional=True, capture_loss=0.02, psn_start=16776960)),
    # The RNR retry of ..47 was lost before the tap; 67 ms later a timeout resends ..47
    # (155), then ..49 (156: ..48 lost before the tap too). No ACK passed ..47, so no
    # restart could begin at ..49: 155 starts the timeout run, it is no late RNR retry.
    (675, dict(loss=0.06, loss_before_tap=1.0, rnr=0.05, corrupt=0.02, encap="roce1",
               bidirectional=False, capture_loss=0.0, psn_start=16777202)),
])
def test_pinned_property_examples(tmp_path, seed, kw):
    """Examples the random scenarios once found during the reordering work (#13)."""
    path, truth = generate(tmp_path, "rc_loss", seed, messages=30, **kw)
    res, diff = compare(path, truth)
    assert check_exact(truth, res, diff) == []


def test_a_run_through_the_refused_psn_before_the_rnr_timer_is_no_retry(tmp_path):
    """Seed 7554: RNR NAK 287 refuses ..185 while the run from ..179 is in flight; 290,
    that run's copy of ..185, passes 150 ns later. It was sent before the RNR NAK could
    reach the requester, so it proves neither that the RNR NAK was lost nor that it
    is the retry: the retry is 321, in the run after the 640 us wait. (290 used to
    clear the RNR NAK, and 321 lost its rnr_retry mark.)"""
    path, truth = generate(tmp_path, "rc_loss", 7554, messages=30, loss=0.06,
                           loss_before_tap=0.0, rnr=0.05, corrupt=0.02, encap="roce2",
                           bidirectional=True, capture_loss=0.0)
    res, diff = compare(path, truth)
    assert {e["frame"]: e["tap_retry_frame"] for e in truth["rnr_naks"]}[287] == 321
    assert "rnr_retry" not in _flags_of(res, 290)
    assert "rnr_retry" in _flags_of(res, 321)
    assert check_exact(truth, res, diff) == []


def test_a_read_re_requested_inside_a_hole_it_filled_is_a_resend(tmp_path):
    """Seed 6823: READ ..978 (31, six PSNs) filled the hole ..977-..983 the original
    stream left (4 jumped to ..984). 177 re-requests it part-way at ..983 (its last
    response never came) and 178-187 resend ..984 on: ..983 lies inside that READ,
    so 177 is a resend, not the first copy of a hole's PSN (a late original), and
    the run it starts is no stale copies."""
    path, truth = generate(tmp_path, "rc_loss", 6823, messages=30, loss=0.06,
                           loss_before_tap=1.0, rnr=0.05, corrupt=0.02, encap="roce1",
                           bidirectional=True, capture_loss=0.0, psn_start=16776976)
    res, diff = compare(path, truth)
    assert {"retransmission", "go_back_n"} <= flags_of(res, 177)
    for f in (178, 181, 185):
        assert "retransmission" in flags_of(res, f)
        assert "out_of_sequence" not in flags_of(res, f)
    assert check_exact(truth, res, diff) == []


def test_a_hole_fill_after_a_timer_long_pause_is_a_resend(tmp_path):
    """Seed 8719: 379 (..15) leaves ..14 unseen (the capture missed it); 67 ms later,
    with no request between, 380 fills the hole. The original, sent before 379, would
    have been held 67 ms by the network: 380 is the timer's resend, though the run's
    next resend was lost (the next request, 382, is the next timeout's)."""
    path, truth = generate(tmp_path, "rc_loss", 8719, messages=30, loss=0.06,
                           loss_before_tap=0.5, rnr=0.05, corrupt=0.0, encap="ib",
                           bidirectional=True, capture_loss=0.02, psn_start=16777167)
    res, diff = compare(path, truth)
    assert {"retransmission", "go_back_n"} <= flags_of(res, 380)
    assert "out_of_sequence" not in flags_of(res, 380)
    assert "retransmission" in flags_of(res, 382)
    assert check_exact(truth, res, diff) == []
