"""Ground truth: what the generator did, for analysers to be checked against.

Everything is collected against transmission ids while the simulation runs and
turned into capture frame numbers (1-based, as tshark's `frame.number`) at the
end, because a packet's frame number is only known once it crosses the tap (and
a packet lost before the tap, or missed by the capture, has none: such entries
carry `"frame": null` and `"after_frame"`, the last frame captured before it).

The truth document (`<name>.truth.json`, format "ibwire-gen-truth/1"):

* `params`, `seed`, `scenario`: the whole GenConfig; `capture`: file, format,
  linktype, frame count, first/last timestamps; `fabric`: hosts and addresses;
* `connections[]`: per QP pair, side `a`/`b` with QPN, `requester` final state
  (start/next PSN, una, state RTS/ERR, messages posted/completed, retry counts),
  `messages[]` (op, length, first_psn, npsn) and `responder` (ePSN, MSN, counts);
* `events[]`: injected faults, `kind` in loss (`where` before_tap/after_tap),
  corrupt (`bit` in the packet), reorder (`delay_ns`), duplicate
  (`original_frame`), capture_loss, ecn_mark, rnr_injected (`hold_ns`);
* `retransmissions[]`: every re-sent request with `reason` nak_seq | timeout |
  rnr | implied_nak (READ responses or atomic ACK missing), `trigger_frame` (the
  NAK or response that caused it), `attempt` and `tap_visible` (below);
* `naks[]` (PSN, `code`, MSN), `rnr_naks[]` (PSN, `timer_code`, `timer_us`,
  `retry_frame`, `retry_wait_ns`, `tap_retry_frame`), `cnps[]` and
  `becn_marked_responses[]` (with
  `cause_frame`), `corrupted_frames`, `opcode_counts`, `management[]` (every MAD);
* `link` (credits on): buffer, period, drain rate, and per direction and VL the
  credit stall intervals (`start_ts_ns`, `end_ts_ns`, `blocks_needed`,
  `credits_available`, `released_by_frame`), final TBS, receiver overruns.

What the tap can know. The truth records what happened; two facts in it are
beyond any observer at the capture point, so each has a tap's-eye companion that
analysers are checked against:

* `tap_visible: false` on a retransmission none of whose earlier copies crossed the
  tap (lost before it, or missed by the capture) while nothing after its PSN had been
  captured either: at the tap it is, bit for bit and in sequence, a first
  transmission (typically the last packet sent before a go-back-N, lost before the
  tap, and sent again by the restart);
* `tap_retry_frame` of an RNR NAK lost after the tap: the requester never saw it and
  resent the PSN later for another reason (`retry_frame` null). IBA bounds the RNR
  wait only from below, so the first resend of the refused PSN at least the RNR
  timer after the NAK is, at the tap, that NAK's retry; so is it when the retry was
  lost before the tap and nothing else was sent once the wait was over. An RNR NAK
  the capture missed, or saw damaged (bad ICRC), has none (`tap_retry_frame` null).

Directions are `a2b` (host A -> B) and `b2a`; `destqp`/`psn`/`opcode` are the
BTH's. `ts_ns` is when the generator acted (sent, dropped, marked) on the capture's
clock (ns since the epoch); a captured frame's own timestamp is when it crossed
the tap, a little later.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from ibwire.gen.faults import DIRS, Fate
from ibwire.gen.rcwire import psn_add, psn_diff

if TYPE_CHECKING:
    from ibwire.gen.clock import Clock
    from ibwire.gen.net import Pkt
    from ibwire.gen.tap import Tap

HOSTS = "AB"


class Truth:
    def __init__(self, clock: Clock | None = None, base_ns: int = 0) -> None:
        self.clock = clock
        self.base_ns = base_ns
        self.events: list[dict[str, Any]] = []
        self.retx: list[dict[str, Any]] = []
        self.naks: list[dict[str, Any]] = []
        self.rnrs: list[dict[str, Any]] = []
        self.cnps: list[dict[str, Any]] = []
        self.becn: list[dict[str, Any]] = []
        self.sent: Counter[str] = Counter()
        self.discards = 0

    @property
    def ts_ns(self) -> int:
        return self.base_ns + (self.clock.now if self.clock is not None else 0)

    def event(self, kind: str, **kw: Any) -> None:
        """An injected event that is not about one transmitted packet."""
        self.events.append({"kind": kind, "frame": None, "ts_ns": self.ts_ns, **kw})

    # -- while running ------------------------------------------------------------
    def _pkt(self, pkt: Pkt) -> dict[str, Any]:
        d: dict[str, Any] = {"direction": DIRS[pkt.src], "tx": pkt.tx, "packet": pkt.kind,
                             "ts_ns": self.ts_ns}
        if pkt.opcode >= 0:
            d.update(opcode=pkt.opcode, destqp=pkt.qp, psn=pkt.psn)
        return d

    def fate(self, pkt: Pkt, fate: Fate, frame: int | None, after_frame: int) -> None:
        base = self._pkt(pkt)
        where = {"frame": frame} if frame is not None else {"frame": None,
                                                            "after_frame": after_frame}

        def add(kind: str, **kw: Any) -> None:
            self.events.append({"kind": kind, **where, **base, **kw})

        if fate.drop_before:
            add("loss", where="before_tap")
            return
        if fate.ce:
            add("ecn_mark")
        if fate.corrupt_bit >= 0:
            add("corrupt", bit=fate.corrupt_bit)
        if fate.delay_ns:
            add("reorder", delay_ns=fate.delay_ns)
        if fate.capture_miss:
            add("capture_loss")
        if fate.drop_after:
            add("loss", where="after_tap")

    def duplicate(self, pkt: Pkt, frame: int | None) -> None:
        self.events.append({"kind": "duplicate", "frame": frame, **self._pkt(pkt)})

    def discarded(self, pkt: Pkt) -> None:
        self.discards += 1

    def retransmit(self, pkt: Pkt, reason: str, trigger: int | None, attempt: int) -> None:
        self.retx.append({**self._pkt(pkt), "reason": reason, "trigger_tx": trigger,
                          "attempt": attempt})

    def nak(self, pkt: Pkt, code: int, msn: int) -> None:
        self.naks.append({**self._pkt(pkt), "code": code, "msn": msn})

    def rnr(self, pkt: Pkt, timer_code: int, timer_us: int, request_qp: int = -1
            ) -> dict[str, Any]:
        entry = {**self._pkt(pkt), "timer_code": timer_code, "timer_us": timer_us,
                 "retry_tx": None, "retry_wait_ns": None, "request_qp": request_qp}
        self.rnrs.append(entry)
        return entry

    def cnp(self, pkt: Pkt, cause: Pkt) -> None:
        self.cnps.append({**self._pkt(pkt), "cause_tx": cause.tx})

    def becn_ack(self, pkt: Pkt, cause: Pkt) -> None:
        self.becn.append({**self._pkt(pkt), "cause_tx": cause.tx})

    # -- at the end -----------------------------------------------------------------
    def resolve(self, tap: Tap) -> dict[str, Any]:
        """Lists with transmission ids replaced by frame numbers."""

        def fix(entry: dict[str, Any]) -> dict[str, Any]:
            out = dict(entry)
            tx = out.pop("tx", None)
            if "frame" not in out:
                frames = tap.frames_of(tx)
                out["frame"] = frames[0] if frames else None
            for key in ("trigger_tx", "cause_tx", "retry_tx"):
                if key in out:
                    t = out.pop(key)
                    out[key.replace("_tx", "_frame")] = tap.first_frame(t)
            out["direction"] = out.get("direction")
            return out

        for e in self.events:
            if e["kind"] == "duplicate":
                e["original_frame"] = tap.first_frame(e["tx"])
        corrupted = sorted(e["frame"] for e in self.events
                           if e["kind"] == "corrupt" and e["frame"] is not None)
        events = [fix(e) for e in self.events]
        return {
            "events": events,
            "retransmissions": tap_view_retransmissions([fix(e) for e in self.retx], tap),
            "naks": [fix(e) for e in self.naks],
            "rnr_naks": tap_view_rnr([fix(e) for e in self.rnrs], events, tap),
            "cnps": [fix(e) for e in self.cnps],
            "becn_marked_responses": [fix(e) for e in self.becn],
            "corrupted_frames": corrupted,
            "receiver_discards": self.discards,
        }


def _front_before(tap: Tap) -> dict[int, int | None]:
    """For every captured request frame, the stream's front before it: the first PSN
    after every request of its stream captured earlier (None for the first)."""
    out: dict[int, int | None] = {}
    for rows in tap.requests.values():
        front: int | None = None
        for frame, psn, npsn in rows:
            out[frame] = front
            end = psn_add(psn, npsn)
            if front is None or psn_diff(end, front) > 0:
                front = end
    return out


def tap_view_retransmissions(retx: list[dict[str, Any]], tap: Tap) -> list[dict[str, Any]]:
    """Mark each retransmission `tap_visible`: False when, as it crosses the tap, no
    earlier captured request of its stream reached its PSN. Every earlier copy was then
    lost before the tap or missed by the capture, and nothing sent after them was seen,
    so at the tap it is, bit for bit and in sequence, a first transmission: no observer
    there can tell it was resent (docs/rc-analysis.md, "Limits")."""
    front = _front_before(tap)
    for e in retx:
        f = e.get("frame")
        if f is None:
            e["tap_visible"] = False
            continue
        fr = front.get(f)
        e["tap_visible"] = fr is not None and psn_diff(e["psn"], fr) < 0
    return retx


def tap_view_rnr(rnrs: list[dict[str, Any]], events: list[dict[str, Any]], tap: Tap
                 ) -> list[dict[str, Any]]:
    """`tap_retry_frame`: the RNR retry as the tap sees it. When the RNR NAK crossed the
    tap and was lost after it, the requester never waited for it (`retry_frame` is
    None) and resent the PSN later for another cause (its timeout). IBA gives the RNR
    wait only a minimum, and the loss happened past the tap, so the first resend of the
    refused PSN at least the RNR timer after the NAK is, at the tap, that NAK's retry.
    So too when the requester did wait but its retry did not reach the tap and its
    first request there once the wait is over is the refused PSN again (the tap
    cannot tell the two apart); not when the retry run shows without its first
    packet. An RNR NAK the capture missed has no retry the tap can know (null: it
    sees a timeout-like resend), nor one the tap saw damaged (corruption happens
    before the tap: the requester would have dropped it for its bad ICRC even had it
    arrived). Otherwise `tap_retry_frame` equals `retry_frame`."""
    lost = {e["frame"] for e in events
            if e["kind"] == "loss" and e.get("where") == "after_tap" and e["frame"]}
    lost -= {e["frame"] for e in events if e["kind"] == "corrupt"}
    ts = {i + 1: fr.ts_ns for i, fr in enumerate(tap.frames)}
    for e in rnrs:
        f = e["frame"]
        e["tap_retry_frame"] = e["retry_frame"] if f is not None else None
        if f is None or e["retry_frame"] is not None:
            continue
        # The retry sent, but not seen at the tap: if the first request once the wait
        # is over is the refused PSN again, the tap cannot tell it from the retry.
        unseen = f not in lost and e["retry_wait_ns"] is not None
        if f not in lost and not unseen:
            continue
        src = 0 if e["direction"] == "b2a" else 1       # the requester's host
        wait = e["timer_us"] * 1000
        for frame, psn, _n in tap.requests.get((src, e.get("request_qp", -1)), []):
            if frame <= f:
                continue
            early = ts[frame] - ts[f] < wait
            # Unseen retry: the first request once the wait is over (those before may
            # have left before the NAK arrived). NAK lost: the first resend of its PSN.
            if (early if unseen else psn != e["psn"]):
                continue
            if psn == e["psn"] and not early:
                e["tap_retry_frame"] = frame
            break
    return rnrs
