"""RC engine (issue #13): the requester's fastest reaction to a NAK yet bounds what
can answer one. A copy past a pending sequence NAK's PSN that comes sooner after the
NAK is not its restart (its first packets lost before the tap), and a run's copy of a
kept NAK's PSN that soon does not spend it: both were sent before the requester had
the NAK. An owed NAK whose restart never shows is spent; a later NAK waits behind it.
Pinned with the frames they are about."""

from __future__ import annotations

from rc_helpers import check_exact, compare, flags_of, generate, start_of

# What the extended draws pinned here share (tools/rc_sweep.py `extended`); each test
# gives the rest.
EXT = {"rnr": 0.0, "cm": True, "bidirectional": False, "prop_ns": 5000, "udp_sport": "qp",
       "credits": "count", "max_unacked": 128, "pfc": False}


def test_a_copy_sooner_after_a_nak_than_any_reaction_is_no_restart(tmp_path):
    """A 30 us network hold: the resend of PSN 43 sent by the run NAK 914 started
    passes the tap (1079) 3.9 us after NAK 1078 names PSN 31; this requester has
    restarted 5.0 us after each NAK so far (914 -> 915, 988 -> 989, 1033 -> 1034). A
    restart begins at the NAK's PSN (IBA 9.7.5.1.3) and its packets past that PSN come
    later still: 1079 was on its way before the requester had the NAK. Before, it
    stood as the restart with PSNs 31..42 lost before the tap, the real restart
    (1080, PSN 31) as late resends, and the run's next packet past a hole (1086) as
    a timeout's restart: 35 resends with the wrong cause. Now 1079 is held; the next
    request, at PSN 31, is the restart."""
    path, truth = generate(tmp_path, "rc_clean", 7906, **EXT, **{
        "ops": {"read": 3, "cmp_swap": 1, "fetch_add": 1, "send": 1},
        "sizes": (4096, 9000, 20000), "loss": 0.05, "loss_before_tap": 0.3, "corrupt": 0.0,
        "encap": "ib", "connections": 3, "ack_every": 4, "pmtu": 256, "tx_depth": 2,
        "rnr_timer": 1, "reorder": 0.01, "duplicate": 0.01, "psn_start": 0xFFFFF8,
        "capture_loss": 0.0, "reorder_delay_ns": 30000, "rate_gbps": 200.0,
        "loss_dir": "both", "ack_delay_ns": 20000, "resp_delay_ns": 400, "max_rd_atomic": 1,
        "timeout": 14, "ackreq_every": 4, "rq_depth": 4, "fmt": "pcapng", "messages": 40,
    })  # extended draw 15 of master 1
    res, diff = compare(path, truth)
    assert "nak" in flags_of(res, 1078)
    assert "go_back_n" not in flags_of(res, 1079) and "retransmission" in flags_of(res, 1079)
    assert start_of(res, 1079) == ("nak_seq", 914)
    assert "go_back_n" in flags_of(res, 1080) and start_of(res, 1080) == ("nak_seq", 1078)
    assert start_of(res, 1086) == ("nak_seq", 1078) and start_of(res, 1120) == ("nak_seq", 1078)
    assert check_exact(truth, res, diff) == []


def test_a_run_past_a_nak_psn_sooner_than_any_reaction_leaves_the_nak_owed(tmp_path):
    """Two NAKs 286 ns apart: 365 names PSN 34, 366 PSN 35. The restart for 365 (367,
    PSN 34) resends 35 next (368), 4.77 us after NAK 366; this requester reacts to a
    NAK in 5.03 us (365 -> 367). So 368 left before the requester had NAK 366, whose
    implicit acknowledgement of 34 then ended that retry: the requester went back to
    35 once more (378, 5.03 us after 366). Before, the run's passing 35 spent NAK 366
    (as when the requester has the NAK first and gets there in order), and its restart
    stood as late copies, ambiguous. Now NAK 366 stays owed; 378 is its restart."""
    path, truth = generate(tmp_path, "rc_clean", 8471, **EXT, **{
        "ops": {"send": 2, "write": 2, "read": 2}, "sizes": (4096, 9000, 20000),
        "loss": 0.0, "loss_before_tap": 1.0, "corrupt": 0.02, "encap": "roce1",
        "connections": 1, "ack_every": 4, "pmtu": 256, "tx_depth": 8, "rnr_timer": 1,
        "reorder": 0.03, "duplicate": 0.0, "psn_start": 0xFFFFF8, "capture_loss": 0.01,
        "reorder_delay_ns": 300, "rate_gbps": 100.0, "loss_dir": "a2b",
        "ack_delay_ns": 20000, "resp_delay_ns": 50, "max_rd_atomic": 4, "timeout": 18,
        "ackreq_every": 64, "rq_depth": None, "fmt": "pcapng", "messages": 20,
    })  # extended draw 29 of master 2
    res, _ = compare(path, truth)
    assert start_of(res, 367) == ("nak_seq", 365) and start_of(res, 377) == ("nak_seq", 365)
    assert "go_back_n" in flags_of(res, 378) and start_of(res, 378) == ("nak_seq", 366)
    assert "ambiguous" not in flags_of(res, 378) | flags_of(res, 386)
    assert start_of(res, 392) == ("nak_seq", 366)


WIDE_SENDS = {"ops": {"write_imm": 1, "send_imm": 1, "send": 1}, "sizes": (4096, 9000, 20000),
              "pmtu": 256, "tx_depth": 16, "credits": "unlimited", "cm": True,
              "reorder": 0.03, "connections": 1, "ack_every": 2, "messages": 20}


def test_a_nak_past_an_owed_one_is_kept_back_behind_it(tmp_path):
    """NAK 1108 names ..917; the run's copy of it (1116) passes sooner after it than
    the requester has reacted to a NAK, so the NAK is owed. NAK 1119 (..925) comes
    before its restart: kept back behind it, as behind any pending NAK. Before, it
    took the owed NAK's place, and the restart at ..917 (1120) stood as a timeout's."""
    path, truth = generate(tmp_path, "rc_clean", 31356, **WIDE_SENDS, **{
        "loss": 0.0, "loss_before_tap": 1.0, "rnr": 0.0, "corrupt": 0.0, "encap": "ib",
        "rnr_timer": 12, "duplicate": 0.0})  # wide draw 172 of master 339
    res, diff = compare(path, truth)
    assert start_of(res, 1120) == ("nak_seq", 1108) and start_of(res, 1121) == ("nak_seq", 1108)
    assert "go_back_n" in flags_of(res, 1196) and start_of(res, 1196) == ("nak_seq", 1185)
    assert check_exact(truth, res, diff) == []


def test_an_owed_nak_whose_restart_never_shows_is_spent(tmp_path):
    """NAKs 1115 (..294) and 1116 (..295) 150 ns apart; the restart for the first
    resends ..295 (1118) 100 ns after the second, sooner than this requester's
    reaction (225 ns): owed. Two requests pass after the requester could have gone
    back, neither at ..295 (its go-back's first packet was lost before the tap): the
    NAK is spent. Kept owed, it held back NAK 1146, whose restart (1159) stood as a
    timeout's."""
    path, truth = generate(tmp_path, "rc_clean", 3134, **WIDE_SENDS, **{
        "loss": 0.05, "loss_before_tap": 0.3, "rnr": 0.04, "corrupt": 0.0,
        "encap": "ib-grh", "rnr_timer": 6, "duplicate": 0.01})  # wide draw 68 of master 345
    res, diff = compare(path, truth)
    assert start_of(res, 1117) == ("nak_seq", 1115)
    assert "go_back_n" in flags_of(res, 1159) and start_of(res, 1159) == ("nak_seq", 1146)
    assert check_exact(truth, res, diff) == []


def test_the_runs_copy_counts_not_the_packet_after_it(tmp_path):
    """At 10 Gb/s a packet takes ~100 ns. NAK 21 names ..013, NAK 22 ..014 251 ns
    later; the restart for 21 (26) came 5.10 us after it, and its copy of ..014 (27)
    4.94 us after NAK 22: sent before the requester had it. The run's next packet
    (28) passes 5.19 us after NAK 22, later than that reaction: a requester finishes
    the packet on the wire before going back, so only the copy's own time tells. The
    go-back to ..014 (29, 5.29 us after NAK 22) is NAK 22's restart, not a timer's."""
    path, truth = generate(tmp_path, "rc_clean", 19447, **{
        **EXT, "ops": {"send": 2, "write": 2, "read": 2},
        "sizes": (0, 64, 200, 256, 700, 1024, 1500), "loss": 0.05, "loss_before_tap": 0.0,
        "corrupt": 0.02, "encap": "roce2", "connections": 1, "ack_every": 2,
        "credits": "unlimited", "pmtu": 1024, "tx_depth": 16, "rnr_timer": 12,
        "reorder": 0.01, "duplicate": 0.01, "psn_start": None, "capture_loss": 0.01,
        "reorder_delay_ns": 300, "rate_gbps": 10.0, "loss_dir": "both", "ack_delay_ns": 300,
        "resp_delay_ns": 400, "max_rd_atomic": 4, "timeout": 18, "ackreq_every": 4,
        "rq_depth": 64, "max_unacked": 16, "fmt": "pcap", "messages": 20, "pfc": True,
        "drain_gbps": 8.0,
    })  # extended draw 113 of master 2 (a PFC pause draw: a receiver slower than the link)
    res, diff = compare(path, truth)
    assert start_of(res, 26) == ("nak_seq", 21) and start_of(res, 28) == ("nak_seq", 21)
    assert "go_back_n" in flags_of(res, 29) and start_of(res, 29) == ("nak_seq", 22)
    assert start_of(res, 40) == ("nak_seq", 22)
    assert check_exact(truth, res, diff) == []
