"""RC engine (issue #13): sequence NAKs in a row. A responder NAKs each new hole once;
when several NAKs come before the requester's restart for the first, each is kept in
the order it came and becomes the pending cause in turn (`rc_causes`). And the
generator's requester, as rxe, starts no retry for a NAK whose PSN is the next one it
would send anyway. Pinned with the frames they are about."""

from __future__ import annotations

from rc_helpers import check_exact, compare, flags_of, generate, start_of, sweep_tool

# The draws pinned below are the sweep tool's (`tools/rc_sweep.py`): seed, parameters.
rc_sweep = sweep_tool()
NAK_BURST_SEED, NAK_BURST = rc_sweep.extended_params(2, 29)


def _nak_caused(truth, frame):
    return [r["frame"] for r in truth["retransmissions"] if r["trigger_frame"] == frame]


def test_three_naks_in_a_row_each_wait_their_turn(tmp_path):
    """NAKs for PSNs 396 (2590), 398 (2599) and 399 (2600), 350 ns apart, before
    the restart at 396 (2602). The later two are kept behind the first, so the
    restart answers it; before, the third took the first's place and the restart
    stood as a timeout's (13 resends on another cause)."""
    path, truth = generate(tmp_path, "rc_clean", NAK_BURST_SEED, **NAK_BURST)
    res, diff = compare(path, truth)
    assert all("nak" in flags_of(res, f) for f in (2590, 2599, 2600))
    assert "go_back_n" in flags_of(res, 2602) and start_of(res, 2602) == ("nak_seq", 2590)
    assert start_of(res, 2614) == ("nak_seq", 2590)
    assert check_exact(truth, res, diff) == ["retransmission: missing 4041"]


def test_a_nak_reached_in_order_hands_over_to_the_next_kept(tmp_path):
    """NAKs for PSNs 918, 920, 923 and 924 (5265-5268). The restart at 918 (5269)
    reaches 920 in order after the requester had that NAK (5271, 5.03 us after it,
    its fastest reaction): the requester's next PSN was 920 already, so it started
    no retry (rxe retries only when its next PSN is past the NAK's; so does the
    generator's requester now). The NAK for 923 is pending next: the run's 923 (5274)
    came before the requester could have had it, so the go-back there (5275) is its
    restart; likewise for 924 (5287)."""
    path, truth = generate(tmp_path, "rc_clean", NAK_BURST_SEED, **NAK_BURST)
    assert _nak_caused(truth, 5266) == []
    res, _ = compare(path, truth)
    assert start_of(res, 5271) == ("nak_seq", 5265)
    assert "go_back_n" in flags_of(res, 5275) and start_of(res, 5275) == ("nak_seq", 5267)
    assert start_of(res, 5286) == ("nak_seq", 5267)


def test_a_restart_at_a_kept_naks_psn_answers_it(tmp_path):
    """NAK 1391 (PSN ..031, lost after the tap), ACK 1395, NAKs 1396 (..060, lost
    after the tap) and 1397 (..061); the restart at ..061 (1398) comes 5.025 us
    after the last, the requester's reaction: it answers that NAK (whose implicit
    ACK answers the two before), not the first one pending."""
    seed, kw = rc_sweep.extended_params(2, 75)
    path, truth = generate(tmp_path, "rc_clean", seed, **kw)
    res, diff = compare(path, truth)
    assert "go_back_n" in flags_of(res, 1398) and start_of(res, 1398) == ("nak_seq", 1397)
    assert start_of(res, 1456) == ("nak_seq", 1397)
    assert check_exact(truth, res, diff) == []


def test_an_ack_does_not_cancel_a_kept_naks_restart(tmp_path):
    """NAKs for PSNs 561, 571 and 574 (10102-10104) kept behind the pending one; the
    run for that one passes 561 before the requester could have had its NAK, so a
    restart there is owed. An old ACK the network held (10158) came after NAK 574's
    implicit ACK had passed 561: it does not cancel the owed restart (the requester
    takes its NAKs in order). The restart at 574 (10172) answers its NAK; before, the
    owed NAK was dropped and the run from 562 stood as a timeout's."""
    seed, kw = rc_sweep.extended_params(1, 2)
    path, truth = generate(tmp_path, "rc_clean", seed, **kw)
    res, diff = compare(path, truth)
    assert start_of(res, 10105) == ("nak_seq", 10093)
    assert "go_back_n" in flags_of(res, 10172) and start_of(res, 10172) == ("nak_seq", 10104)
    assert start_of(res, 10180) == ("nak_seq", 10104)
    assert check_exact(truth, res, diff) == []


def test_a_restart_one_past_the_pending_nak_is_its_run(tmp_path):
    """NAKs for PSNs ..606 (208) and ..607 (211); a restart at ..607 (218), 1.3 us
    after the second NAK and 1.7 us after the first, both past the requester's
    fastest reaction. Either the requester acted on the second NAK (the first lost
    after the tap) or on the first, its resend of ..606 lost before the tap: one loss
    each way, so the first NAK, which the requester had first, stays the cause."""
    seed, kw = rc_sweep.draw_params(331, 121)
    path, truth = generate(tmp_path, "rc_clean", seed, **kw)
    res, diff = compare(path, truth)
    assert "nak" in flags_of(res, 208) and "nak" in flags_of(res, 211)
    assert "go_back_n" in flags_of(res, 218) and start_of(res, 218) == ("nak_seq", 208)
    assert check_exact(truth, res, diff) == []
