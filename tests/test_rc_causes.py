"""Which cause started each go-back-N episode: the engine's episode reason and cause
frame against the generator's (the requester's own `retry_reason` and the NAK or
response it acted on), for every resend both see."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from conftest import CAPTURES, need_shared
from rc_helpers import compare, episode_diff, generate

from ibwire.analysis import rc_rules as R
from ibwire.analysis.rc import analyze
from ibwire.analysis.rc_input import rc_columns

SEEDS = range(1, 7)
READS = {"read": 3, "cmp_swap": 1, "fetch_add": 1, "send": 1}
CASES = {
    "rc_loss": ("rc_loss", {}),
    "rc_rnr": ("rc_rnr", {}),
    "rc_corrupt": ("rc_corrupt", {}),
    "rc_wrap": ("rc_wrap", {"loss": 0.05}),
    "loss_before_tap": ("rc_loss", {"loss_before_tap": 1.0, "loss": 0.05}),
    "native_erf": ("rc_loss", {"encap": "ib", "fmt": "erf"}),
    "reads_atomics": ("rc_loss", {"ops": READS}),
    "cm": ("fabric_mads", {"loss": 0.03}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_episode_causes_match_truth(tmp_path, case):
    name, kw = CASES[case]
    for seed in SEEDS:
        path, truth = generate(tmp_path, name, seed, **kw)
        res, _ = compare(path, truth)
        assert episode_diff(truth, res) == [], seed


@pytest.mark.parametrize("ops", [None, READS])
def test_episode_reasons_count_as_the_requester_retried(tmp_path, ops):
    """Episodes per reason equal the generator requester's retries per reason."""
    for seed in SEEDS:
        kw = {"loss_before_tap": 0.0} | ({"ops": ops} if ops else {})
        path, truth = generate(tmp_path, "rc_loss", seed, **kw)
        res, _ = compare(path, truth)
        stats = truth["connections"][0]["a"]["requester"]["stats"]
        want = {k.removeprefix("retry_"): v for k, v in stats.items() if k.startswith("retry_")}
        assert dict(Counter(e["reason"] for e in res.episodes)) == want, seed


def _start(tmp_path, frame, seed, **kw):
    """(reason, cause frame) of the episode the resend at `frame` belongs to."""
    path, truth = generate(tmp_path, "rc_loss", seed, **kw)
    res, _ = compare(path, truth)
    assert episode_diff(truth, res) == []
    first = int(np.flatnonzero(res.episode == res.episode[frame - 1])[0])
    t = int(res.trig[first])
    return R.REASON_NAMES[int(res.reason[first])], (t + 1 if t >= 0 else None), first + 1


def test_rnr_nak_then_sequence_nak_for_one_psn(tmp_path):
    """The requester waits out the RNR NAK; the NAK behind it changes nothing: the
    cause is the RNR NAK, not the later row."""
    assert _start(tmp_path, 109, 7007, loss=0.02, loss_before_tap=0.0, rnr=0.05,
                  encap="ib", messages=30) == ("rnr", 106, 109)


def test_restart_below_the_nak_psn_is_a_timeout(tmp_path):
    """A NAK acknowledges every PSN before its own: a restart below it, 67 ms later,
    is the requester's timer (the NAK never reached it)."""
    assert _start(tmp_path, 232, 1691, loss=0.06, loss_before_tap=0.5, bidirectional=True,
                  messages=30) == ("timeout", None, 232)


def test_restart_at_the_nak_psn_long_after_it_is_a_timeout(tmp_path):
    """The NAK was lost after the tap: the restart at its PSN comes a timeout later."""
    assert _start(tmp_path, 341, 4239, loss=0.06, loss_before_tap=0.0, rnr=0.05,
                  corrupt=0.02, bidirectional=True, messages=30) == ("timeout", None, 341)


def test_read_response_lost_after_the_tap(tmp_path):
    """The tap saw every response, in order; the requester re-reads from PSN P at
    once: response P was lost after the tap, and the next one showed the hole."""
    path, truth = generate(tmp_path, "rc_loss", 4102, loss=0.06, loss_before_tap=0.0,
                           bidirectional=True, messages=30)
    lost = {e["frame"] for e in truth["events"] if e["kind"] == "loss"}
    assert 27 in lost        # the response at the PSN re-read
    assert _start(tmp_path, 37, 4102, loss=0.06, loss_before_tap=0.0, bidirectional=True,
                  messages=30) == ("implied_nak", 31, 37)


def test_nak_covering_a_read_missing_responses(tmp_path):
    """The NAK's implicit ACK covers a READ still missing responses: the restart at
    the READ's hole answers the implied NAK, whose cause is the NAK's frame."""
    assert _start(tmp_path, 114, 3492, loss=0.02, loss_before_tap=0.0, corrupt=0.02,
                  encap="roce1", bidirectional=True, capture_loss=0.02,
                  messages=30) == ("implied_nak", 104, 114)


def test_implied_nak_during_a_covering_retry_is_ignored(tmp_path):
    """A response gap while a retry from an earlier PSN is under way: the requester
    ignores it and its timer restarts later."""
    assert _start(tmp_path, 205, 3439, loss=0.0, loss_before_tap=1.0, corrupt=0.02,
                  bidirectional=True, psn_start=16777201, messages=30) == ("timeout", None, 205)


def test_nak_whose_implicit_ack_ends_the_retry(tmp_path):
    """A NAK during a run, naming a PSN past the run's start: its implicit ACK ends
    the retry, so the requester acts on it (a new episode)."""
    assert _start(tmp_path, 40, 1) == ("nak_seq", 39, 40)


def test_reads_the_capture_saw_incomplete_were_answered(tmp_path):
    """A restart at the PSN a NAK names shows the requester had every response before
    it (the capture missed some): no stale implied NAK takes a later restart."""
    assert _start(tmp_path, 217, 3, capture_loss=0.03) == ("nak_seq", 216, 217)


def test_hole_in_a_later_read(tmp_path):
    """Responses skip a PSN of a later READ while an earlier one looks incomplete
    (the capture missed its responses): the later READ's hole is the cause."""
    assert _start(tmp_path, 82, 4244, loss=0.06, loss_before_tap=0.5, corrupt=0.02,
                  capture_loss=0.02, psn_start=16777200, messages=30) == ("implied_nak", 75, 82)


def test_acks_behind_a_read_restarted_show_nothing(tmp_path):
    """A READ restarted for a response lost after the tap stays unacknowledged until
    its own response comes: the ACKs of later PSNs the tap saw meanwhile are ignored
    (the retry covers them), so the implied NAK for a later response lost after the
    tap is the first response after that READ's answer (121), not the first past the
    hole (114)."""
    assert _start(tmp_path, 129, 452, loss=0.06, loss_before_tap=0.0, encap="ib",
                  messages=30) == ("implied_nak", 121, 129)


def test_run_resending_a_read_does_not_hide_its_lost_response(tmp_path):
    """A go-back-N run resends a READ whose response the tap saw pass (lost after
    it): that resend answers nothing. The restart at the missing PSN answers the
    implied NAK of the first response the requester took past it."""
    assert _start(tmp_path, 124, 2, bidirectional=True) == ("implied_nak", 116, 124)


def test_hole_in_a_reread_read(tmp_path):
    """A READ restarted part-way (re-read from PSN 177): its first response comes,
    the next (178) is lost before the tap, and 179 shows the hole. The restart at 178
    answers that implied NAK (121), though no READ the tap saw whole misses it."""
    assert _start(tmp_path, 128, 2832, loss=0.06, loss_before_tap=0.5, encap="roce1",
                  messages=30) == ("implied_nak", 121, 128)


def test_rnr_nak_moves_the_retry_point_past_a_read_hole(tmp_path):
    """A READ re-read from 120 (its response later lost after the tap) while an RNR NAK
    refuses 130: the hole its implicit ACK shows is covered by the re-read, and
    ignored; but the RNR NAK moved the requester's retry point to 130, so the
    sequence NAK for 130 right after shows the hole at 120 again, uncovered: the
    restart at 120 after the RNR wait answers that NAK's implied NAK (208), not the
    ACK after it (222)."""
    assert _start(tmp_path, 234, 649, loss=0.02, loss_before_tap=0.5, rnr=0.05, corrupt=0.02,
                  encap="roce1", bidirectional=True, psn_start=16777066,
                  messages=30) == ("implied_nak", 208, 234)


def test_skipped_psn_resent_in_order_after_a_nak_starts_its_run(tmp_path):
    """A run skipped 142 (its resend lost before the tap); a NAK then names 141 and
    142 comes again, followed by 143: with no copy ever delayed on this network, not
    the skipped resend arriving late but the NAK's restart, its first resend (141)
    lost before the tap."""
    assert _start(tmp_path, 112, 4078, loss=0.06, loss_before_tap=1.0, corrupt=0.02,
                  bidirectional=True, psn_start=16777113, messages=30) == ("nak_seq", 109, 112)


def test_restart_at_the_nak_psn_with_its_first_resend_unseen(tmp_path):
    """The run's first resend fills a hole the capture missed, decided at the next
    request: at the PSN the NAK named, so the requester had every READ response
    before it (those the capture missed included), and a later NAK is not ignored
    for that READ's stale hole."""
    assert _start(tmp_path, 68, 4541, loss=0.06, loss_before_tap=0.0, corrupt=0.02,
                  encap="ib", capture_loss=0.02, psn_start=16777018,
                  messages=30) == ("nak_seq", 67, 68)


def test_rxe_read_response_loss_seen_before_and_after_it():
    """c3: 2 % of READ responses lost (netem on the requester's ingress). The wire view
    sees every response (lost ones after the tap), the rcvd view only what arrived:
    both find the kernel's 12 retries, as implied NAKs (rxe restarts a READ within
    0.3 ms of the response past the hole). On the rcvd view the last one is a hole in
    a READ re-issued part-way: the restart at 416691 answers the response past it
    (0.2 ms before), as on the wire view, not a timeout."""
    need_shared()
    reasons = {}
    for view in ("wire", "rcvd"):
        res = analyze(rc_columns(CAPTURES / "rxe" / f"c3_read_resploss2.{view}.pcap"))
        reasons[view] = Counter(e["reason"] for e in res.episodes)
        assert res.counts[:, R.COUNT["go_back_n"]].sum() == 12
    assert reasons["wire"] == reasons["rcvd"] == {"implied_nak": 12}


def test_copy_amid_a_run_that_goes_on(tmp_path):
    """A network duplicate of PSN p arrives while a NAK's run, past p, goes on with
    its next PSN: the run never stopped, so the copy starts no episode. The next
    request (39) comes 5 ns after it, too soon for the requester to have sent the
    PSN between at its own pace: no run from the copy, which stays the network's
    (it used to be a resend in no episode, flagged)."""
    path, truth = generate(tmp_path, "rc_loss", 3036, loss=0.0, loss_before_tap=1.0,
                           rnr=0.05, corrupt=0.02, encap="roce1", messages=30,
                           bidirectional=True, psn_start=16776983, reorder=0.03,
                           duplicate=0.01)
    assert {e["kind"] for e in truth["events"] if e["frame"] == 37} == {"duplicate"}
    res, _ = compare(path, truth)
    assert episode_diff(truth, res) == []
    assert res.episode[36] == -1 and R.flag_names(int(res.flags[36])) == [
        "duplicate", "network_duplicate"]
    assert res.episode[38] == res.episode[35] == res.episode[28]       # one run, 29..39


def test_doubtful_restart_then_the_earlier_run_goes_on(tmp_path):
    """A late copy (294, READ ..733) comes amid a run: no restart (once taken, with
    doubt, for a timeout restart, then for a copy when the next request resent the
    PSN the run had reached). An implied NAK's restart at ..750 went on in order, so
    the READs before it had their responses and none is resent for them: 294 is the
    late resend of the earlier run that skipped ..733 (its episode, flagged), and the
    run and its episode count go on as if it had not come."""
    path, truth = generate(tmp_path, "rc_reorder", 2002)
    res, _ = compare(path, truth)
    assert not res.flags[293] & R.F_EPISODE and res.flags[293] & R.F_AMBIGUOUS
    assert res.episode[293] < res.episode[289]
    assert res.episode[294] == res.episode[289]
    stats = truth["connections"][0]["a"]["requester"]["stats"]
    want = {k.removeprefix("retry_"): v for k, v in stats.items() if k.startswith("retry_")}
    assert dict(Counter(e["reason"] for e in res.episodes)) == want


def test_response_of_a_read_already_complete_shows_no_hole(tmp_path):
    """READ 251..253 had all its responses while READ 248..250 still missed 250 (credited
    to it); the re-read for a restart at 248 brings 251 again (295): a duplicate of a
    READ the requester has completed, which it drops. The hole at 250 shows with the
    ACK past it (305), which the restart answers."""
    assert _start(tmp_path, 312, 4376, loss=0.06, loss_before_tap=1.0, corrupt=0.02,
                  encap="roce1", bidirectional=True, messages=30) == ("implied_nak", 305, 312)


def test_hole_shown_by_an_rnr_nak_is_its_retry(tmp_path):
    """An RNR NAK refuses 010 and its implicit ACK of what is before shows the atomic at
    991 unanswered: the requester goes back to 991, but only once the RNR timer has
    run out (0.64 ms): the RNR NAK's retry, not an implied NAK's."""
    assert _start(tmp_path, 170, 3059, loss=0.06, loss_before_tap=0.0, rnr=0.05,
                  bidirectional=True, messages=30) == ("rnr", 169, 170)


def test_atomic_first_seen_as_a_resend_awaits_its_ack(tmp_path):
    """The compare-and-swap at ..705 was lost before the tap; the tap first sees it in
    a NAK's resend run (78). It awaits its atomic ACK all the same: the ACK of ..706
    (92) passes it unanswered, an implied NAK, and the restart at ..705 (97) answers
    it; no timeout."""
    assert _start(tmp_path, 97, 6509, loss=0.02, loss_before_tap=0.0, rnr=0.05, encap="roce1",
                  bidirectional=True, messages=30, reorder=0.03,
                  duplicate=0.01) == ("implied_nak", 92, 97)


def test_hole_in_an_earlier_read_is_judged_before_the_implicit_ack(tmp_path):
    """A run from 557 is under way; READ 561's response was lost before the tap. The
    response of READ 562 (340) shows the hole, but the requester finds it before
    taking that response's implicit ACK of 557..560: the retry from 557 still covers
    it, and it is ignored. The next response (341) finds the retry over (340 moved
    the oldest unacknowledged PSN past 557): that one is the implied NAK."""
    assert _start(tmp_path, 350, 7658, loss=0.06, loss_before_tap=1.0, encap="ib",
                  bidirectional=True, messages=30) == ("implied_nak", 341, 350)


def test_rnr_nak_amid_a_run_pauses_it_into_its_retry(tmp_path):
    """A run (from 645) is at 652 when an RNR NAK refuses 654 (217); the requester stops
    and, 0.64 ms later, goes on from the run's next PSN, 653 (229): that is the RNR
    NAK's retry run, a new episode with its reason, not the old run going on."""
    assert _start(tmp_path, 229, 1645, loss=0.02, loss_before_tap=1.0, rnr=0.05,
                  bidirectional=True, messages=30) == ("rnr", 217, 229)


def test_read_restart_past_an_older_hole_answers_its_own(tmp_path):
    """The capture missed READ ..152's response, so the ACK past it (51) looks like an
    implied NAK the requester never acts on. The restart at READ ..195 (111) shows the
    requester had ..152's (it restarts at the first READ missing some): its cause is
    ..195's own hole, the response past it (109) after its response was lost after
    the tap (108)."""
    assert _start(tmp_path, 111, 6074, loss=0.02, loss_before_tap=0.0, rnr=0.05,
                  encap="roce1", capture_loss=0.02, messages=30) == ("implied_nak", 109, 111)


def test_first_copy_filling_a_skip_after_a_pause_starts_a_timeout_run(tmp_path):
    """..261 was lost before the tap twice (original, and the NAK run's resend). Its
    first copy at the tap (36) comes 67 ms after the last request, and the next
    request resends ..262 in order: the timeout's restart, not the old run's resend
    delayed. The ACK of ..261 (43) then ends that retry, so the sequence NAK for ..262
    (46) starts a new one (50)."""
    kw = dict(loss=0.06, loss_before_tap=0.5, rnr=0.05, encap="roce1", messages=30)
    assert _start(tmp_path, 37, 9312, **kw) == ("timeout", None, 36)
    assert _start(tmp_path, 50, 9312, **kw) == ("nak_seq", 46, 50)


def test_nak_past_a_reread_read_awaiting_its_response_is_an_implied_nak(tmp_path):
    """A restart re-reads READ ..519 (141, damaged: the responder drops it). An RNR NAK
    (157) moves the retry point past it, so the NAK of ..548 (170), acknowledging
    ..519 still unanswered, is an implied NAK the requester acts on once the RNR timer
    is over (195)."""
    assert _start(tmp_path, 195, 44, loss=0.02, loss_before_tap=0.0, rnr=0.05, corrupt=0.02,
                  encap="ib", bidirectional=True, messages=30) == ("implied_nak", 170, 195)


def test_restart_sooner_than_any_ack_timeout_answers_an_unseen_nak(tmp_path):
    """WRITE ..325 reached the responder damaged (284, bad ICRC); its sequence NAK never
    crossed the tap. The resend of ..325 (297) comes 1.1 us after 284: sooner than any
    local ACK timeout (8.192 us at least), so no timer started it: a sequence NAK the
    tap did not see, with no cause frame, not a timeout."""
    assert _start(tmp_path, 297, 5216, loss=0.06, loss_before_tap=0.5, corrupt=0.02,
                  encap="roce1", bidirectional=True, capture_loss=0.02,
                  messages=30) == ("nak_seq", None, 297)


def test_quick_restart_on_a_reordering_stream_stays_a_timeout(tmp_path):
    """On a stream whose network delays and duplicates copies, the tap's order is not
    the send order: a timeout's resend (289, 247) may reach the tap soon after another
    copy of its PSN. The restart stays a timeout there (the sequence NAK the timing
    would imply belongs to calm streams only)."""
    path, truth = generate(tmp_path, "rc_loss", 2942, loss=0.02, loss_before_tap=0.5,
                           rnr=0.05, corrupt=0.02, encap="roce2", bidirectional=True,
                           messages=30, reorder=0.03, duplicate=0.01)
    res, _ = compare(path, truth)
    want = {e["frame"]: e["reason"] for e in truth["retransmissions"]}
    for frame in (247, 289):
        first = int(np.flatnonzero(res.episode == res.episode[frame - 1])[0])
        assert want[frame] == "timeout" == R.REASON_NAMES[int(res.reason[first])]
        h = res.streams.hc[first]
        assert res.counts[h, R.K_LATE] + res.counts[h, R.K_COPIES] > 0


def test_timeout_restart_decided_late_is_the_retry_under_way(tmp_path):
    """A timeout's restart at ..978 (55) is a first copy at the tap, decided only at
    the next request. It is the retry under way all the same: the atomic ACK of ..978
    (70) moves the oldest unacknowledged PSN past it, so the sequence NAK of ..979
    (71) is acted on (75), not ignored as covered by an older run."""
    assert _start(tmp_path, 75, 7835, loss=0.06, loss_before_tap=1.0, corrupt=0.02,
                  encap="ib", messages=30, psn_start=16776971) == ("nak_seq", 71, 75)


def test_restart_at_the_psn_of_a_nak_taken_as_ignored(tmp_path):
    """A retry re-reads READ ..673, whose first response the capture missed: the
    engine holds the retry as still waiting for it, so NAK 122 for ..685 looks
    covered. The restart at exactly ..685 (126), 0.3 us later and sooner than any
    timer, shows the requester acted on it: the NAK is its cause."""
    assert _start(tmp_path, 126, 2172, loss=0.06, loss_before_tap=0.0, rnr=0.05,
                  corrupt=0.02, encap="roce1", capture_loss=0.02,
                  messages=30) == ("nak_seq", 122, 126)
