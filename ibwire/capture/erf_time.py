"""ERF timestamps: the raw 64-bit value and nanoseconds, as tshark shows them.

The ERF timestamp is seconds (high 32 bits) plus a 32-bit binary fraction.
Wireshark converts the fraction to nanoseconds rounding half up, ``(frac * 10**9 +
2**31) >> 32``, carrying into the seconds when that reaches 10**9. For native ERF and
for ERF inside pcap, tshark's ``frame.time`` is the ERF header's timestamp, not the
pcap record header's; inside pcapng it is the EPB's (checked against tshark 4.0.17).
The readers do the same, so ``Frame.ts_ns`` equals tshark's ``frame.time_epoch`` to
the nanosecond.

ibdump computes the fraction as ``usec * 4295`` instead of ``usec * 2**32 / 10**6``:
its timestamps read about 0.0008 % late within each second (at most 7.6 us) and, for
usec >= 999993, overflow into the next second. Readers follow tshark and do not undo
that (it cannot be told apart from a genuine timestamp in general);
``erf_ts_to_ns(ts, ibdump_quirk=True)`` undoes it for callers who know the writer.
"""

from __future__ import annotations

_NS = 10**9
_FRAC = 1 << 32
_IBDUMP_UNIT = 4295  # ibdump's approximation of 2**32 / 10**6


def erf_ts_to_ns(ts: int, ibdump_quirk: bool = False) -> int:
    """Nanoseconds since the epoch for a raw 64-bit ERF timestamp, as tshark shows it.

    With ``ibdump_quirk`` the fraction is read as ``usec * 4295`` (ibdump's encoding,
    including its overflow into the seconds) when it is one; otherwise as usual.
    """
    sec, frac = ts >> 32, ts & (_FRAC - 1)
    if ibdump_quirk:
        for s, f in ((sec, frac), (sec - 1, frac + _FRAC)):
            usec, rest = divmod(f, _IBDUMP_UNIT)
            if s >= 0 and rest == 0 and usec < 10**6:
                return s * _NS + usec * 1000
    # Round half up, like Wireshark; a result of 10**9 carries into the seconds.
    return sec * _NS + ((frac * _NS + (1 << 31)) >> 32)


def erf_ts_from_ns(ts_ns: int, ibdump_quirk: bool = False) -> int:
    """The raw 64-bit ERF timestamp for ``ts_ns``.

    The fraction is rounded to nearest, so ``erf_ts_to_ns`` gives back ``ts_ns``
    exactly (one fraction step is 0.23 ns). With ``ibdump_quirk`` it is encoded as
    ibdump does, ``(sec << 32) + usec * 4295`` (microsecond precision, may overflow).
    """
    if ts_ns < 0 or ts_ns >= _FRAC * _NS:
        raise ValueError(f"timestamp {ts_ns} ns does not fit an ERF timestamp")
    sec, ns = divmod(ts_ns, _NS)
    if ibdump_quirk:
        return ((sec << 32) + (ns // 1000) * _IBDUMP_UNIT) & ((1 << 64) - 1)
    return (sec << 32) | ((ns * _FRAC + _NS // 2) // _NS)
