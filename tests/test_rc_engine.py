"""RC engine: the Numba kernel equals its Python twin, and hand-built vectors."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import PCAPS, shared_captures
from hypothesis import given, settings
from hypothesis import strategies as st
from rc_helpers import generate

from ibwire.analysis import rc_rules as R
from ibwire.analysis.rc import analyze
from ibwire.analysis.rc_input import COLUMNS, ENDPOINTS, rc_columns

_ARRAYS = ("upsn", "flags", "ref", "episode", "trig", "acked", "credits", "msg", "gap",
           "reason", "rtt_ns", "counts")


def _same(cols):
    a, b = analyze(cols, use_numba=True), analyze(cols, use_numba=False)
    for name in _ARRAYS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.episodes == b.episodes


@pytest.mark.parametrize("path", sorted(PCAPS.glob("*.pcap")), ids=lambda p: p.stem)
def test_twin_agrees_on_samples(path):
    _same(rc_columns(path))


@pytest.mark.parametrize("path", [p for p in shared_captures("rxe") if "wire" in p.name][:6],
                         ids=lambda p: p.stem)
def test_twin_agrees_on_rxe(path):
    _same(rc_columns(path))


@pytest.mark.parametrize("name,kw", [("rc_rnr", {"loss": 0.03}), ("rc_reorder", {}),
                                     ("rc_loss", {"bidirectional": True,
                                                  "capture_loss": 0.02}),
                                     ("rc_loss", {"duplicate": 0.02, "reorder": 0.03,
                                                  "rnr": 0.05, "corrupt": 0.02,
                                                  "loss_before_tap": 0.5})])
def test_twin_agrees_on_generated(tmp_path, name, kw):
    path, _ = generate(tmp_path, name, 5, **kw)
    _same(rc_columns(path))


# -- hand-built vectors ----------------------------------------------------------------------
SEND_ONLY, ACK = 0x04, 0x11
NAK_SEQ, RNR_640US = 0x60, 0x20 | 12


def _cols(rows, times_us=None):
    """rows: (src, opcode, psn, syndrome) with A=0 -> B=1 requests to QP 0x22 and
    responses to QP 0x11; one microsecond apart unless `times_us` gives the times."""
    n = len(rows)
    cols = {name: np.full(n, -1, dtype=dt) for name, dt in COLUMNS}
    cols["frame.number"] = np.arange(1, n + 1)
    times = np.arange(n) if times_us is None else np.asarray(times_us)
    cols["frame.time_ns"] = (np.asarray(times, dtype=float) * 1000).astype(np.int64)
    cols["ibwire.payload_len"][:] = 0
    cols["infiniband.invariant.crc.status"][:] = 1
    for i, (src, op, psn, syn) in enumerate(rows):
        cols["ibwire.src"][i], cols["ibwire.dst"][i] = src, 1 - src
        cols["infiniband.bth.opcode"][i] = op
        cols["infiniband.bth.destqp"][i] = 0x22 if src == 0 else 0x11
        cols["infiniband.bth.psn"][i] = psn & 0xFFFFFF
        cols["infiniband.aeth.syndrome"][i] = syn
    cols[ENDPOINTS] = np.array(["A", "B"], dtype=object)
    return cols


def _names(res):
    return [R.flag_names(int(f)) for f in res.flags]


@pytest.mark.parametrize("use_numba", [True, False])
def test_nak_go_back_n(use_numba):
    base = 0xFFFFFE          # across the 24-bit wrap
    rows = [(0, SEND_ONLY, base + k, -1) for k in range(4)]
    rows += [(1, ACK, base, 31), (1, ACK, base + 1, NAK_SEQ)]
    rows += [(0, SEND_ONLY, base + 1, -1), (0, SEND_ONLY, base + 2, -1),
             (0, SEND_ONLY, base + 3, -1), (1, ACK, base + 3, 31)]
    res = analyze(_cols(rows), use_numba=use_numba)
    f = _names(res)
    assert "nak" in f[5] and "retry_start" in f[5]
    assert "lost_after_capture" in f[1]          # the responder asked for it again
    assert f[6][:2] == ["retransmission", "go_back_n"] or "go_back_n" in f[6]
    assert "retransmission" in f[7] and "retransmission" in f[8]
    assert res.ref[6] == 1 and res.trig[6] == 5
    assert R.REASON_NAMES[res.reason[6]] == "nak_seq"
    assert res.acked[9] == 3                     # coalesced: PSNs 1..3 after the NAK's
    k = dict(zip(R.COUNT_NAMES, res.counts[0].tolist()))
    assert (k["go_back_n"], k["retransmitted_packets"], k["nak_psn_seq_err"]) == (1, 3, 1)
    assert k["messages"] == 4 and k["duplicate_requests"] == 0


@pytest.mark.parametrize("use_numba", [True, False])
def test_rnr_then_retry(use_numba):
    rows = [(0, SEND_ONLY, 10, -1), (1, ACK, 10, RNR_640US), (0, SEND_ONLY, 10, -1),
            (1, ACK, 10, 31)]
    # The retry waits the RNR NAK's 640 us (IBA: at least the timer).
    res = analyze(_cols(rows, [0, 1, 700, 701]), use_numba=use_numba)
    f = _names(res)
    assert "rnr" in f[1] and "rnr_retry" in f[2] and "retransmission" in f[2]
    assert R.REASON_NAMES[res.reason[2]] == "rnr"
    k = dict(zip(R.COUNT_NAMES, res.counts[0].tolist()))
    assert (k["rnr_naks"], k["rnr_retries"], k["go_back_n"]) == (1, 1, 0)


@pytest.mark.parametrize("use_numba", [True, False])
def test_resend_sooner_than_rnr_timer_answers_the_nak(use_numba):
    # PSN 10 refused (RNR NAK, 640 us), 11 then out of sequence (NAK 10); PSN 10 comes
    # again 2 us later: sooner than the RNR timer, so the requester never got the RNR
    # NAK (lost after the tap) and this is the sequence NAK's go-back-N.
    rows = [(0, SEND_ONLY, 10, -1), (0, SEND_ONLY, 11, -1), (1, ACK, 10, RNR_640US),
            (1, ACK, 10, NAK_SEQ), (0, SEND_ONLY, 10, -1), (0, SEND_ONLY, 11, -1)]
    res = analyze(_cols(rows, [0, 1, 2, 3, 5, 6]), use_numba=use_numba)
    f = _names(res)
    assert "retransmission" in f[4] and "rnr_retry" not in f[4]
    assert R.REASON_NAMES[res.reason[4]] == "nak_seq"
    k = dict(zip(R.COUNT_NAMES, res.counts[0].tolist()))
    assert (k["rnr_naks"], k["rnr_retries"], k["go_back_n"]) == (1, 0, 1)


@pytest.mark.parametrize("use_numba", [True, False])
def test_network_duplicate_before_any_round_trip(use_numba):
    # A second copy 0.5 us after the first, no NAK, no RTT measured yet: a timeout
    # resend needs at least 8.192 us (IBA's shortest local ACK timeout).
    rows = [(0, SEND_ONLY, 1, -1), (0, SEND_ONLY, 1, -1), (0, SEND_ONLY, 2, -1)]
    res = analyze(_cols(rows, [0, 0.5, 1]), use_numba=use_numba)
    f = _names(res)
    assert "network_duplicate" in f[1] and "retransmission" not in f[1]
    # ... but 10 us later, with no cause seen, it is a timeout resend.
    res = analyze(_cols(rows, [0, 10, 11]), use_numba=use_numba)
    assert "retransmission" in _names(res)[1]


@pytest.mark.parametrize("use_numba", [True, False])
def test_original_delayed_past_its_resend(use_numba):
    # PSN 2 delayed before the tap: 3 passes, NAK 2, the requester resends 2, 3; then
    # NAK 4 (4 lost after the tap) and its resend 4 show the requester acted on an
    # implicit ACK of 2; the copy of 2 arriving after that is the late original.
    rows = [(0, SEND_ONLY, 1, -1), (0, SEND_ONLY, 3, -1), (0, SEND_ONLY, 4, -1),
            (1, ACK, 2, NAK_SEQ), (0, SEND_ONLY, 2, -1), (0, SEND_ONLY, 3, -1),
            (0, SEND_ONLY, 4, -1), (1, ACK, 4, NAK_SEQ), (0, SEND_ONLY, 4, -1),
            (0, SEND_ONLY, 2, -1), (0, SEND_ONLY, 5, -1)]
    res = analyze(_cols(rows), use_numba=use_numba)
    f = _names(res)
    assert "retransmission" in f[4] and "retransmission" in f[8]
    assert "out_of_sequence" in f[9] and "retransmission" not in f[9]
    k = dict(zip(R.COUNT_NAMES, res.counts[0].tolist()))
    assert k["lost_before_capture"] == 0 and k["out_of_sequence"] == 1


@pytest.mark.parametrize("use_numba", [True, False])
def test_gap_and_late_original(use_numba):
    # PSN 2 skipped (lost before the tap, or late): it arrives with no retry cause and
    # new PSNs follow it, so it is a late original, not a resend.
    rows = [(0, SEND_ONLY, 1, -1), (0, SEND_ONLY, 3, -1), (0, SEND_ONLY, 2, -1),
            (0, SEND_ONLY, 4, -1)]
    res = analyze(_cols(rows), use_numba=use_numba)
    f = _names(res)
    assert "psn_gap" in f[1] and res.gap[1] == 1
    assert "out_of_sequence" in f[2] and "retransmission" not in f[2]
    assert res.counts[0, R.COUNT["lost_before_capture"]] == 0


@pytest.mark.parametrize("use_numba", [True, False])
def test_timeout_resend_fills_hole(use_numba):
    # PSN 2 lost before the tap; after a silence the requester resends 2, 3: a timeout.
    rows = [(0, SEND_ONLY, 1, -1), (0, SEND_ONLY, 3, -1), (1, ACK, 1, 31),
            (0, SEND_ONLY, 2, -1), (0, SEND_ONLY, 3, -1), (1, ACK, 3, 31)]
    res = analyze(_cols(rows), use_numba=use_numba)
    f = _names(res)
    assert "retransmission" in f[3] and "go_back_n" in f[3] and "retransmission" in f[4]
    assert R.REASON_NAMES[res.reason[3]] == "timeout"
    assert res.counts[0, R.COUNT["timeouts"]] == 1


@given(st.integers(0, (1 << 24) - 1), st.integers(-(1 << 23), (1 << 23) - 1))
@settings(max_examples=200)
def test_psn_diff_is_serial_arithmetic(a, d):
    assert R.psn_diff((a + d) & 0xFFFFFF, a) == d


def test_opcode_classes():
    assert R.OPCLASS[0x04] & R.C_REQUEST and R.OPCLASS[0x04] & R.C_LAST
    assert R.OPCLASS[0x0C] & R.C_READ_REQ
    assert R.OPCLASS[0x10] & R.C_READ_RESP and R.OPCLASS[0x10] & R.C_RESPONSE
    assert R.OPCLASS[0x11] & R.C_ACK and R.OPCLASS[0x12] & R.C_ATOMIC_ACK
    assert R.OPCLASS[0x24] & R.C_UC and R.OPCLASS[0x64] & R.C_UD
    assert R.OPCLASS[0xAC] & R.C_READ_REQ and R.OPCLASS[0xAC] & R.C_RELIABLE    # XRC
    assert R.OPCLASS[0x81] == 0                                                 # CNP
    assert R.CREDIT_TABLE[31] == -1 and R.RNR_TIMER_NS[12] == 640_000


@given(st.lists(st.tuples(st.integers(0, (1 << 56) - 1), st.booleans()), max_size=300),
       st.integers(1, 40))
@settings(max_examples=50, deadline=None)   # (the first example may compile)
def test_flow_numbering_twins_equal_numpy(rows, distinct):
    from ibwire.engines.rc_prepass import flow_numbers

    keys = np.array([v % distinct * 7919 + v // distinct % 3 for v, _ in rows], dtype=np.int64)
    valid = np.array([ok for _, ok in rows], dtype=np.bool_)
    want, want_inv = np.unique(keys[valid], return_inverse=True)
    for use_numba in (True, False):
        uniq, rank, ids = flow_numbers(keys, valid, use_numba)
        np.testing.assert_array_equal(uniq, want)
        np.testing.assert_array_equal(rank[ids[valid]], want_inv.ravel())
        assert (ids[~valid] == -1).all()


def test_flow_numbers_past_the_hash_table(monkeypatch):
    """More flows than the table holds: np.unique's numbers, the same shape."""
    from ibwire.engines import rc_prepass as P

    keys = np.array([5, 3, 9, 3, 7, 1, 5, 11, 13], dtype=np.int64)
    valid = keys != 7
    monkeypatch.setattr(P, "TABLE_BITS", 2)
    uniq, rank, ids = P.flow_numbers(keys, valid)
    np.testing.assert_array_equal(uniq, [1, 3, 5, 9, 11, 13])
    np.testing.assert_array_equal(rank[ids[valid]], np.searchsorted(uniq, keys[valid]))
    assert ids[4] == -1


@given(st.lists(st.tuples(st.integers(0, (1 << 16) - 1), st.integers(0, (1 << 16) - 1),
                          st.integers(-1, (1 << 24) - 1), st.integers(-1, 2)), max_size=200))
@settings(max_examples=50, deadline=None)   # (the first example may compile)
def test_flow_keys_and_streams_twins_equal_numpy(rows):
    from ibwire.analysis.rc_pair import _QP_MASK, _SHIFT_DST, _SHIFT_SRC
    from ibwire.engines import rc_prepass as P

    src, dst, qp, kind = (np.array(c, dtype=np.int64).reshape(-1) for c in zip(*rows)) \
        if rows else (np.zeros(0, dtype=np.int64),) * 4
    want = (src << _SHIFT_SRC) | (dst << _SHIFT_DST) | (qp & _QP_MASK)
    # Row kinds: -1 neither, 0 request, 1 response (flow number = the key's rank).
    req_ids = np.where(kind == 0, qp & 7, -1)
    resp_ids = np.where(kind == 1, qp & 3, -1)
    req_hc, resp_hc = np.arange(8, dtype=np.int32) * 2, np.arange(4, dtype=np.int32) * 2 + 1
    hc_want = np.where(kind == 0, req_hc[req_ids], np.where(kind == 1, resp_hc[resp_ids], -1))
    for keys_of, streams_of in ((P.flow_keys, P.streams_of), (P.flow_keys_py, P.streams_of_py)):
        keys = np.empty(len(src), dtype=np.int64)
        keys_of(src.astype(np.int32), dst.astype(np.int32), qp.astype(np.int32), _SHIFT_SRC,
                _SHIFT_DST, _QP_MASK, keys)
        np.testing.assert_array_equal(keys, want)
        hc = np.empty(len(src), dtype=np.int32)
        streams_of(req_ids, resp_ids, req_hc, resp_hc, hc)
        np.testing.assert_array_equal(hc, hc_want)


def _with_opcode_prefix(rows, prefix):
    return [(s, op | prefix if s == 0 else op, p, syn) for s, op, p, syn in rows]


@pytest.mark.parametrize("use_numba", [True, False])
def test_xrc_uses_the_rc_rules(use_numba):
    rows = [(0, SEND_ONLY, 5, -1), (0, SEND_ONLY, 6, -1), (1, ACK, 5, NAK_SEQ),
            (0, SEND_ONLY, 5, -1), (0, SEND_ONLY, 6, -1)]
    res = analyze(_cols(_with_opcode_prefix(rows, 0xA0)), use_numba=use_numba)   # XRC
    f = _names(res)
    assert "go_back_n" in f[3] and "retransmission" in f[4]
    assert res.counts[0, R.COUNT["go_back_n"]] == 1


@pytest.mark.parametrize("use_numba", [True, False])
def test_uc_gap_and_ud_counts(use_numba):
    uc = [(0, 0x24, 1, -1), (0, 0x24, 2, -1), (0, 0x24, 5, -1)]       # UC SEND ONLY
    res = analyze(_cols(uc), use_numba=use_numba)
    assert R.flag_names(int(res.flags[2])) == ["message_end", "uc_gap"] and res.gap[2] == 2
    assert res.counts[0, R.COUNT["uc_gaps"]] == 1
    assert not (res.flags & (R.F_RETX | R.F_GAP)).any()
    ud = [(0, 0x64, 7, -1), (0, 0x64, 3, -1)]                          # UD: no sequencing
    res = analyze(_cols(ud), use_numba=use_numba)
    assert res.counts[0, R.COUNT["packets"]] == 2 and not res.flags.any()
