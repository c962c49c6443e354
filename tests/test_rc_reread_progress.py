"""RC engine (issue #13): a READ re-requested part-way asks only for the responses the
requester never had (IBA 9.7.4.1.5; rxe re-reads from its completer's PSN), so once
the re-read's own first response comes, the requester expects the next one, whatever
the tap saw of the stream before: the responses before the re-read's PSN it had,
those the tap lacks the capture missed (`rc_responses.read_response`). Pinned with the
frames they are about."""

from __future__ import annotations

from rc_helpers import check_exact, compare, episode_diff, flags_of, generate, start_of, sweep_tool

# The draw pinned below is the sweep tool's (`tools/rc_sweep.py`): seed, parameters.
rc_sweep = sweep_tool()
SEED, PARAMS = rc_sweep.extended_params(1, 118)


def test_a_reread_shows_the_responses_before_it_were_had(tmp_path):
    """The tap missed READ response PSN 175 (after frame 1048); the requester had it,
    and re-read from 182 (frame 1075) for the two lost after the tap. Before, the
    engine kept awaiting 175 for the rest of the READ: every later showing named that
    hole, and the re-read at 209 (frame 1452, for 209 lost after the tap at 1415,
    shown by 210 at 1417) was taken for the showing at 1333, which the requester had
    ignored (its re-read at 205 was under way), with the 78 resends of its run. Later
    in the capture, resends of the runs for the holes shown at 7620 and 7741 were
    taken for restarts of their own (frames 8479 and 8484), and frame 8492 for a
    resend."""
    path, truth = generate(tmp_path, "rc_clean", SEED, **PARAMS)
    res, diff = compare(path, truth)
    missed = [e for e in truth["events"] if e["kind"] == "capture_loss" and e["psn"] == 175]
    assert [e["after_frame"] for e in missed] == [1048]
    assert start_of(res, 1075) == ("implied_nak", 1056)
    assert start_of(res, 1452) == start_of(res, 1641) == ("implied_nak", 1417)
    assert "go_back_n" in flags_of(res, 1452)
    assert start_of(res, 8479) == start_of(res, 8481) == ("implied_nak", 7620)
    assert start_of(res, 8484) == start_of(res, 8489) == ("implied_nak", 7741)
    assert "go_back_n" not in flags_of(res, 8484)
    assert check_exact(truth, res, diff) == []
    missed_runs = [x for x in episode_diff(truth, res)
                   if 1452 <= int(x.split()[1].rstrip(":")) <= 1641]
    assert missed_runs == []
