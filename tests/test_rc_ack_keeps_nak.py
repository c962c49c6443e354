"""RC engine (issue #13): an ACK answers only the causes it acknowledges.

An ACK (or a duplicate one) acknowledging PSNs below p answers a pending cause that
names a PSN below p: nothing is left to resend there. A sequence NAK naming p or a
later PSN is not answered by it: the responder still expects that PSN (its NAK was
an acknowledgement of everything before, no more), and the requester, once it has
the NAK, goes back there (IBA 9.7.5.1.3). Unless a restart was already taken for
that NAK. The engine used to drop every pending cause once an ACK passed the
earliest of them, so a restart for the later NAK read as a network duplicate."""

from __future__ import annotations

import numpy as np
from rc_helpers import check_exact, flags_of, start_of, ts_ns, wide_draw

from ibwire.analysis.rc import analyze

LOW = 0xFFF      # the PSNs' last three hex digits, as the docstrings name them


def _psn(res, frame: int) -> int:
    return int(res.cols["infiniband.bth.psn"][frame - 1]) & LOW


def test_a_duplicate_ack_below_a_later_nak_leaves_that_nak_pending(tmp_path):
    """Wide 331:183. NAK 353 names ..6bd; its run (367..379) resends ..6bd to ..6c3.
    NAK 358 names ..6be and NAK 371 ..6c3, both while that run goes on. 379 is the
    run's ..6c3, 195 ns after NAK 371 (sooner than the 226 ns fastest of the six
    restarts the requester had shown). Duplicate ACK 381 acknowledges up to ..6c2: it
    answers NAK 358, not NAK 371. 382, ..6c3 again 50 ns after 379 (one packet at the
    run's pace), is NAK 371's restart, and its run goes on (386: ..6c4). Before: every
    cause dropped at 381, 382 a network duplicate, and the run after it NAK 353's."""
    truth, res, diff = wide_draw(tmp_path, 331, 183)
    assert _psn(res, 353) == 0x6BD and _psn(res, 358) == 0x6BE
    assert _psn(res, 371) == _psn(res, 379) == _psn(res, 382) == 0x6C3
    assert _psn(res, 381) == 0x6C2 and "duplicate_ack" in flags_of(res, 381)
    assert ts_ns(res, 379) - ts_ns(res, 371) == 195
    assert ts_ns(res, 382) - ts_ns(res, 379) == 50
    assert start_of(res, 379) == ("nak_seq", 353)
    assert {"retransmission", "go_back_n"} <= flags_of(res, 382)
    assert "network_duplicate" not in flags_of(res, 382)
    assert start_of(res, 382) == ("nak_seq", 371)
    assert _psn(res, 386) == 0x6C4 and start_of(res, 386) == ("nak_seq", 371)
    assert check_exact(truth, res, diff) == []
    twin = analyze(res.cols, use_numba=False)      # the plain-Python twin agrees
    np.testing.assert_array_equal(twin.flags, res.flags)
    np.testing.assert_array_equal(twin.episode, res.episode)
