"""RC engine over generator parameters the scenario tests keep fixed: READ-heavy
connections sharing endpoints, long messages, coalesced ACKs, small PMTUs, unlimited
credits, several connections, CM, and the cases they exposed (issue #13)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rc_helpers import WIDER_SPACE, check_exact, compare, frames, generate, truth_sets

from ibwire.analysis import rc_rules as R

_W = {k: st.sampled_from(v) for k, v in WIDER_SPACE.items()}


def _flags_of(res, frame):
    return R.flag_names(int(res.flags[frame - 1]))


@given(seed=st.integers(0, 10_000), ops=_W["ops"], sizes=_W["sizes"], loss=_W["loss"],
       before=_W["loss_before_tap"], rnr=_W["rnr"], corrupt=_W["corrupt"], encap=_W["encap"],
       connections=_W["connections"], ack_every=_W["ack_every"], credits=_W["credits"],
       pmtu=_W["pmtu"], tx_depth=_W["tx_depth"], rnr_timer=_W["rnr_timer"], cm=st.booleans())
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_property_wider_parameters(tmp_path, seed, ops, sizes, loss, before, rnr, corrupt,
                                   encap, connections, ack_every, credits, pmtu, tx_depth,
                                   rnr_timer, cm):
    """Random draws over operations, message sizes, PMTU, ACK coalescing, credits,
    window, RNR timer and connection count: exactly the tap's-eye truth (no capture
    loss here; frames flagged ambiguous aside)."""
    path, truth = generate(tmp_path, "rc_clean", seed, ops=ops, sizes=sizes, loss=loss,
                           loss_before_tap=before, rnr=rnr, corrupt=corrupt, encap=encap,
                           connections=connections, ack_every=ack_every, credits=credits,
                           pmtu=pmtu, tx_depth=tx_depth, rnr_timer=rnr_timer, cm=cm,
                           messages=20)
    res, diff = compare(path, truth)
    assert check_exact(truth, res, diff) == []


def test_read_heavy_connections_pair_by_the_psns_reads_take(tmp_path):
    """Three connections between one pair of LIDs, mostly READs of up to 80 responses:
    a READ response's PSN runs past the last request PSN (the READ takes one PSN per
    response), and MSNs repeat for long stretches. Pairing used to give each request
    flow another connection's responses (every response then a duplicate, every
    resend ambiguous, one missed). Each request flow now gets its own responses."""
    path, truth = generate(tmp_path, "rc_clean", 4778, loss=0.02, loss_before_tap=1.0,
                           corrupt=0.02, encap="ib", messages=40, connections=3,
                           credits="unlimited", pmtu=256, tx_depth=2, ack_every=1,
                           sizes=(4096, 9000, 20000),
                           ops={"read": 3, "cmp_swap": 1, "fetch_add": 1, "send": 1})
    res, diff = compare(path, truth)
    want = {(c["a"]["qpn"], c["a"]["dest_qpn"]) for c in truth["connections"]}
    got = set(zip(res.streams.req_qp, res.streams.resp_qp))
    assert want <= got
    assert check_exact(truth, res, diff) == []
    assert len(frames(res, R.F_RETX)) > 1500
    assert len(frames(res, R.F_AMBIGUOUS)) <= 1        # was every resend


def test_a_sequence_nak_copied_after_a_request_is_a_network_duplicate(tmp_path):
    """rc_reorder 2046: NAK 116 names ..51; a request (117) passes; 118 is the network's
    copy of 116. A responder sends one sequence NAK per hole, until the expected PSN
    arrives (its expected PSN never goes back), so 118 is not a second NAK."""
    path, truth = generate(tmp_path, "rc_reorder", 2046)
    res, diff = compare(path, truth)
    assert 118 in {e["frame"] for e in truth["events"] if e["kind"] == "duplicate"}
    assert "nak" in _flags_of(res, 116)
    assert _flags_of(res, 118) == ["network_duplicate"]
    assert res.counts[:, R.COUNT["nak_psn_seq_err"]].sum() == len(truth_sets(truth)["nak"])
    assert check_exact(truth, res, diff) == []


def test_rnr_retry_after_a_silent_wait_is_flagged(tmp_path):
    """Seed 2511: RNR NAK 217 refuses ..836; nothing comes from the requester for the
    whole 80 us wait, then a new PSN (254). Either the requester waited and its retry was
    lost before the tap (the truth here: the next copy, 325, is a timeout resend), or it
    never got the NAK and had nothing to send (then 325 would be the NAK's retry at the
    tap). The tap cannot tell: 325 is flagged."""
    path, truth = generate(tmp_path, "rc_clean", 2511, loss=0.05, loss_before_tap=1.0,
                           rnr=0.04, encap="roce1", messages=40, connections=3,
                           ack_every=2, credits="unlimited", pmtu=4096, tx_depth=8,
                           timeout=16, rnr_timer=6, sizes=(4096, 9000, 20000), cm=True,
                           fmt="pcapng", ops={"write_imm": 1, "send_imm": 1, "send": 1})
    res, diff = compare(path, truth)
    rnr = next(e for e in truth["rnr_naks"] if e["frame"] == 217)
    assert rnr["retry_frame"] is None and rnr["tap_retry_frame"] is None
    assert {"rnr_retry", "ambiguous"} <= set(_flags_of(res, 325))
    assert check_exact(truth, res, diff) == []


def test_a_late_original_amid_a_run_with_an_older_cause_pending(tmp_path):
    """Seed 6352 (READ-heavy, 3 % reordering): the run for NAK 2959 is at ..233 when
    2989 brings ..266, an original delayed past the run's start; 2990 resumes the run at
    ..234. NAK 2987 is pending, but for ..208: a restart begins at the PSN its cause
    names, so it does not explain a resume at ..234. 2989 is a late copy, not a resend
    that skipped 32 PSNs (3052 likewise). An earlier run skipped ..266, so the late
    copy (a first copy at the tap) is the original or that run's resend, both
    delayed: flagged, in that run's episode (as a first copy in a run's skip is
    elsewhere), where it used to be called the original."""
    path, truth = generate(tmp_path, "rc_clean", 6352, loss_before_tap=0.3, corrupt=0.02,
                           encap="ib-grh", ack_every=2, credits="unlimited", pmtu=256,
                           tx_depth=16, rnr_timer=1, sizes=(4096, 9000, 20000),
                           reorder=0.03, messages=20, ops={"send": 2, "write": 2, "read": 2})
    res, _ = compare(path, truth)
    late = {e["frame"] for e in truth["events"] if e["kind"] == "reorder"}
    for f in (2989, 3052):
        assert f in late and f not in truth_sets(truth)["retransmission"]
        assert _flags_of(res, f) == ["retransmission", "responder_out_of_sequence",
                                     "ambiguous"]
    assert 0 <= res.episode[2988] < res.episode[2989]      # an earlier run's, not 2990's
    assert "retransmission" in _flags_of(res, 2990)


def test_a_first_copy_below_the_restart_psn_starts_no_run(tmp_path):
    """Seed 5973 (capture loss, 1 % reordering): the requester restarted at ..5 for NAK
    784, so it knew everything before ..5 was received. 824 fills the hole at ..0 (its
    first copy at the tap) amid that run: no restart can send it now. It lies in PSNs an
    earlier run skipped, so it is the original or that run's resend, both delayed: a
    flagged late resend of that run, not a new timeout episode; the run goes on."""
    path, truth = generate(tmp_path, "rc_clean", 5973, capture_loss=0.02, encap="ib-grh",
                           connections=3, ack_every=4, credits="unlimited", pmtu=256,
                           rnr_timer=1, sizes=(4096, 9000, 20000), reorder=0.01,
                           ops={"write_imm": 1, "send_imm": 1, "send": 1})
    res, diff = compare(path, truth)
    assert 824 in {e["frame"] for e in truth["events"] if e["kind"] == "reorder"}
    assert "ambiguous" in _flags_of(res, 824)
    assert "go_back_n" not in _flags_of(res, 824)
    assert int(res.episode[826]) == int(res.episode[822])      # 827 continues 823's run
    assert check_exact(truth, res, diff) == []


def test_a_copy_continued_only_after_a_timeout_is_no_run_start(tmp_path):
    """Seed 2141: 11 repeats ..0 2 us after its resend 7 (the network's copy); the next
    request, 13, resends ..1 268 ms later. A run goes out back to back: that pause is
    the requester's restart at 13 (for NAK 10 or its timer). 11 stays a copy."""
    path, truth = generate(tmp_path, "rc_clean", 2141, loss=0.05, capture_loss=0.02,
                           encap="roce1", credits="unlimited", pmtu=256, tx_depth=2,
                           timeout=16, reorder=0.03, duplicate=0.01)
    res, diff = compare(path, truth)
    assert "retransmission" not in _flags_of(res, 11)
    assert {"retransmission", "go_back_n"} <= set(_flags_of(res, 13))
    assert check_exact(truth, res, diff) == []


def test_read_responses_in_flight_past_a_resend_are_no_new_implied_nak(tmp_path):
    """Seed 8056 (READs only): response ..-2 is corrupt, ..-1 (817) is an implied NAK and
    the requester resends the READ from ..-2 (826). Response 828, 21 ns later, left the
    responder before that resend arrived: the same hole, not a new implied NAK. So the
    READ 868 (the original of 831, delayed) has no pending cause: a resend only if an
    implied NAK the tap cannot see explains it, so flagged."""
    path, truth = generate(tmp_path, "rc_clean", 8056, loss_before_tap=1.0, corrupt=0.02,
                           bidirectional=True, connections=3, ack_every=1,
                           credits="unlimited", pmtu=256, rnr_timer=6, psn_start=16777062,
                           reorder=0.01, duplicate=0.01, ops={"read": 1})
    res, diff = compare(path, truth)
    assert "implied_nak" in _flags_of(res, 817)
    assert "implied_nak" not in _flags_of(res, 828)
    assert "ambiguous" in _flags_of(res, 868)
    assert check_exact(truth, res, diff) == []


def test_an_implied_nak_is_marked_once_per_hole(tmp_path):
    """Seed 4014 (READs only, capture loss): a READ whose responses never reached the
    tap stays at the head of the response FIFO, so every later response is past the
    hole. Only the first that reveals a hole is marked and counted (it was each of
    them, each also a `retry_start`); 43-54, past the same hole, are not. Nor is 20,
    past the hole ..-1 after the requester resent it (16): that retry covers it, and
    the requester ignores it."""
    path, truth = generate(tmp_path, "rc_clean", 4014, loss=0.05, loss_before_tap=0.3,
                           capture_loss=0.02, encap="roce2", messages=20, ack_every=1,
                           credits="unlimited", pmtu=1024, tx_depth=8, timeout=16,
                           rnr_timer=1, reorder=0.03, ops={"read": 1})
    res, _ = compare(path, truth)
    marked = frames(res, R.F_IMPLIED)
    assert sorted(marked) == [14, 30]
    assert res.counts[:, R.COUNT["implied_naks"]].sum() == len(marked)
    assert not marked & set(range(43, 55))
    assert not frames(res, R.F_RETRY_START) & set(range(43, 55))
    assert {e["trigger_frame"] for e in truth["retransmissions"]
            if e["reason"] == "implied_nak"} <= marked


def test_a_run_packet_past_its_next_psn_sent_long_before_is_no_late_copy(tmp_path):
    """Seed 3031: the run for the implied NAK 477 resends ..35-..37, then ..39 (504), and
    ..38 (510) comes 1.4 us later. 504 repeats 465, sent 15 us before: not a copy the
    network just delayed (fresh: a first copy, or one sent less than the shortest ACK
    timeout before), so the run skipped ..38 at the tap and 510 is its resend,
    delayed. (With no cause pending, a stale packet past the run used to be taken for
    a late copy amid it.)"""
    path, truth = generate(tmp_path, "rc_clean", 3031, loss=0.02, loss_before_tap=0.0,
                           rnr=0.04, corrupt=0.02, encap="roce1", messages=20,
                           bidirectional=True, connections=3, ack_every=1,
                           credits="unlimited", pmtu=4096, tx_depth=8, timeout=10,
                           rnr_timer=1, sizes=(4096, 9000, 20000), psn_start=16777096,
                           reorder=0.03, ops={"send": 2, "write": 2, "read": 2})
    res, diff = compare(path, truth)
    resent = {e["frame"]: e for e in truth["retransmissions"] if e["frame"] is not None}
    assert resent[504]["trigger_frame"] == resent[483]["trigger_frame"] == 477
    assert "retransmission" in _flags_of(res, 504)
    assert int(res.episode[503]) == int(res.episode[482]) == int(res.episode[509])
    assert check_exact(truth, res, diff) == []


def test_a_hole_fill_and_its_quick_copy_are_both_flagged(tmp_path):
    """Wider draw 92206: NAK 132 names ..482; the first copy of ..482 at the tap (137)
    fills the hole, and a second (138) follows 150 ns later. The truth: 137 is the
    original, delayed past the NAK, and 138 the resend. Had the network copied the
    resend instead, the tap would see the same. Both are flagged, counted as before
    (one resend, one copy); this draw went from 33 differences to 3."""
    path, truth = generate(tmp_path, "rc_clean", 92206, loss=0.0, loss_before_tap=0.0,
                           rnr=0.0, corrupt=0.02, encap="roce1", connections=3,
                           ack_every=2, credits="count", pmtu=1024, tx_depth=16,
                           rnr_timer=12, cm=True, messages=20, reorder=0.03, duplicate=0.0,
                           sizes=(4096, 9000, 20000),
                           ops={"write_imm": 1, "send_imm": 1, "send": 1})
    res, diff = compare(path, truth)
    assert 137 in {e["frame"] for e in truth["events"] if e["kind"] == "reorder"}
    assert 138 in truth_sets(truth)["retransmission"]
    assert _flags_of(res, 137) == ["retransmission", "go_back_n", "ambiguous"]
    assert _flags_of(res, 138) == ["duplicate", "network_duplicate", "ambiguous"]
    left = check_exact(truth, res, diff)
    assert not {"retransmission: extra 137", "retransmission: missing 138"} & set(left)
    assert len(left) <= 3


def test_a_nak_restart_a_run_may_have_sent_proves_nothing(tmp_path):
    """Wider draw 59528: run 401-406 skips ..324 at the tap; NAK 408 names it (and is
    lost after the tap); 415, a copy of ..324, is the run's resend, delayed. Taken
    for a restart for 408 it used to prove the requester had everything before ..324
    acknowledged, so the timeout resends of ..322/..323 (520, 521) were called stale
    originals. A restart at a PSN an earlier run skipped proves nothing."""
    path, truth = generate(tmp_path, "rc_clean", 59528, loss=0.02, loss_before_tap=0.0,
                           rnr=0.0, corrupt=0.02, encap="roce1", connections=2,
                           ack_every=2, credits="count", pmtu=1024, tx_depth=8, rnr_timer=1,
                           cm=False, messages=20, reorder=0.01, duplicate=0.01,
                           sizes=(4096, 9000, 20000),
                           ops={"write_imm": 1, "send_imm": 1, "send": 1})
    res, diff = compare(path, truth)
    assert 408 in {e["frame"] for e in truth["events"] if e["kind"] == "loss"}
    assert "retransmission" in _flags_of(res, 520)
    assert "retransmission" in _flags_of(res, 521)
    assert check_exact(truth, res, diff) == []


def test_a_jump_right_after_an_unsure_run_start_stays_unsure(tmp_path):
    """Wider draw 89681: 49, a late copy of ..993, is taken for a run start with doubt;
    51, a late copy of ..000, jumps past the PSN after it. A jump settles nothing (an
    in-order continuation would have): 51 is that run's resend or a late copy like 49,
    so it is flagged as well (it used to be a sure resend)."""
    path, truth = generate(tmp_path, "rc_clean", 89681, loss=0.05, loss_before_tap=0.0,
                           rnr=0.0, corrupt=0.0, encap="roce2", connections=1, ack_every=4,
                           credits="unlimited", pmtu=256, tx_depth=8, rnr_timer=1, cm=True,
                           messages=20, reorder=0.01, duplicate=0.0, sizes=(1, 2, 8),
                           ops={"send": 2, "write": 2, "read": 2})
    res, diff = compare(path, truth)
    late = {e["frame"] for e in truth["events"] if e["kind"] == "reorder"}
    assert {49, 51} <= late
    assert "ambiguous" in _flags_of(res, 49) and "ambiguous" in _flags_of(res, 51)
    assert check_exact(truth, res, diff) == []


def test_a_copy_soon_after_a_runs_resend_is_no_timeout_restart(tmp_path):
    """Wider draw 16462: run 77-79 resends ..914-..916 for NAK 75; 80, a network copy
    of 78 (..915), follows 350 ns after it. No ACK round trip is measured on this
    stream (every ACK covers a resent PSN), and 80 came long after the first copy of
    ..915, so it used to look like a timeout restart. A timeout runs from a packet's
    latest transmission: 80 is quick, a copy. The next request (81, ..917) skips
    ..916 71 ns later, sooner than the requester's own pace allows for a run from 80:
    the network's copy, not flagged (it used to be, as a possible run start)."""
    path, truth = generate(tmp_path, "rc_clean", 16462, loss=0.05, loss_before_tap=0.0,
                           rnr=0.04, corrupt=0.02, encap="roce1", connections=2,
                           ack_every=2, credits="unlimited", pmtu=1024, tx_depth=16,
                           rnr_timer=12, cm=True, messages=20, reorder=0.01, duplicate=0.01,
                           sizes=(0, 64, 200, 256, 700, 1024, 1500),
                           ops={"write_imm": 1, "send_imm": 1, "send": 1})
    res, diff = compare(path, truth)
    assert 80 in {e["frame"] for e in truth["events"] if e["kind"] == "duplicate"}
    assert _flags_of(res, 80) == ["duplicate", "network_duplicate"]
    assert check_exact(truth, res, diff) == []
