"""RC analysis of one shuffle partition, and the gathered document.

Each partition holds every row of the endpoint pairs hashed to it, from every
capture point. The RC engine runs once per capture point (one vantage point is
what its rules assume) and endpoint pair; a connection seen at several points is
then compared point against point: request PSNs seen upstream (earlier on the
command line) but not downstream were lost between the two points.

Gathering renumbers connections and episodes in one canonical order, the RC
engine's own (`_engine_order`; episodes by capture point and first frame), so the
document does not depend on chunking, partitions or workers, and for one capture
it is `ibwire rc -T json`'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ibwire.analysis.rc_input import ENDPOINTS
from ibwire.scale.chunks import CAPTURE, PAIR, engine_columns

MAX_LISTED = 32       # PSNs listed per point pair (the count is always complete)


def analyse(cols: dict[str, np.ndarray]) -> dict[str, Any]:
    """Connections, episodes and point comparisons of one partition.

    The RC engine runs once per capture point and endpoint pair (pair hash): its
    pairing only ever matches streams of one endpoint pair, but its bounds (how many
    rows pairing looks at, the PSN ring per stream) depend on everything it is
    given, so analysing each pair alone keeps the result independent of which pairs
    share a partition, i.e. of the number of partitions and workers."""
    out: dict[str, Any] = {"connections": [], "episodes": [], "psns": {}, "firsts": {}}
    if not cols:
        return out
    out["firsts"] = _first_seen(cols)
    group = (cols[CAPTURE].astype(np.int64) << 32) | cols[PAIR].astype(np.int64)
    order = np.argsort(group, kind="stable")          # stable: frame order kept
    bounds = np.flatnonzero(np.diff(group[order])) + 1
    for rows in np.split(order, bounds):
        point = int(cols[CAPTURE][rows[0]])
        _analyse_one(engine_columns({k: v if k == ENDPOINTS else v[rows]
                                     for k, v in cols.items()}), point, out)
    return out


def _first_seen(cols: dict[str, np.ndarray]) -> dict[tuple[int, str], int]:
    """Where each endpoint first appears in this partition, per capture point, as
    2 x frame + side (source 0, destination 1): the order `rc_columns` numbers
    endpoints in, which the engine's order of half-connections follows."""
    out: dict[tuple[int, str], int] = {}
    pos = 2 * cols["frame.number"].astype(np.int64)
    for point in np.unique(cols[CAPTURE]).tolist():
        rows = cols[CAPTURE] == point
        ids = np.concatenate([cols["ibwire.src"][rows], cols["ibwire.dst"][rows]])
        at = np.concatenate([pos[rows], pos[rows] + 1])
        order = np.lexsort((at, ids))
        ids, at = ids[order], at[order]
        first = np.flatnonzero(np.r_[True, np.diff(ids) != 0])
        for i, a in zip(ids[first].tolist(), at[first].tolist()):
            out[(point, str(cols[ENDPOINTS][i]))] = a
    return out


def _analyse_one(cols: dict[str, np.ndarray], point: int, out: dict[str, Any]) -> None:
    from ibwire.analysis.rc import analyze
    from ibwire.analysis.rc_report import connection

    res = analyze(cols)
    conns = [connection(res, h) for h in range(len(res.streams))]
    fn = res.cols["frame.number"]
    for h, c in enumerate(conns):
        c["capture_point"] = point
        c["_first"] = int(fn[res.streams.hc == h].min(initial=fn.max(initial=0)))
    out["connections"] += conns
    for e in res.episodes:
        e = dict(e, capture_point=point)
        e["_key"] = _key(conns[e["half_connection"]])
        out["episodes"].append(e)
    out["psns"].update(_request_psns(res, conns, point))


def _key(c: dict[str, Any]) -> tuple:
    r, s = c["requester"], c["responder"]
    return (c["capture_point"], c["_first"], r["endpoint"], r["qp"] or "", s["endpoint"],
            s["qp"] or "", c["transport"], c["packets"], _tap(c))


def _tap(c: dict[str, Any]) -> int:
    """The pcapng interface of a merged capture's connection (rc_pair), else -1."""
    return c.get("capture_interface", -1)


def _request_psns(res: Any, conns: list[dict[str, Any]], point: int) -> dict[tuple, Any]:
    """Request PSNs per (connection without point) at this point."""
    st, cols = res.streams, res.cols
    out: dict[tuple, Any] = {}
    for h, c in enumerate(conns):
        rows = (st.hc == h) & (cols["ibwire.src"] == st.req_src[h]) & \
            (cols["ibwire.dst"] == st.req_dst[h])
        out[(point,) + _key(c)[2:7] + (_tap(c),)] = np.unique(cols["infiniband.bth.psn"][rows])
    return out


def gather(parts: list[dict[str, Any]], points: list[str]) -> dict[str, Any]:
    """The document of every partition, in canonical order."""
    from ibwire.analysis.rc_report import FORMAT

    firsts: dict[tuple[int, str], int] = {}
    for p in parts:
        for k, v in p["firsts"].items():
            firsts[k] = min(v, firsts.get(k, v))
    conns = sorted((c for p in parts for c in p["connections"]),
                   key=lambda c: (*_engine_order(c, firsts), _key(c)))
    half = {_key(c): i for i, c in enumerate(conns)}
    number: dict[tuple, int] = {}
    for h, c in enumerate(conns):
        # The two halves of one QP pair share a connection number (rc_pair._connections).
        r, s = c["requester"], c["responder"]
        pair: tuple = ("hc", h)
        if r["qp"] is not None and s["qp"] is not None:
            pair = (c["capture_point"], _tap(c)) + tuple(sorted([(r["endpoint"], r["qp"]),
                                                         (s["endpoint"], s["qp"])]))
        c["connection"] = number.setdefault(pair, len(number))
        c["half_connection"] = h
    eps = sorted((e for p in parts for e in p["episodes"]),
                 key=lambda e: (e["capture_point"], e["first_frame"], e["_key"]))
    for i, e in enumerate(eps):
        c = conns[half[e.pop("_key")]]
        e.update(episode=i, connection=c["connection"], half_connection=c["half_connection"])
    for c in conns:
        del c["_first"]
    if len(points) == 1:
        for x in (*conns, *eps):
            del x["capture_point"]
        return {"format": FORMAT, "capture": points[0], "connections": conns, "episodes": eps}
    for x in (*conns, *eps):
        x["capture_point"] = points[x["capture_point"]]
    psns: dict[tuple, Any] = {}
    for p in parts:
        psns.update(p["psns"])
    return {"format": FORMAT, "captures": points, "connections": conns, "episodes": eps,
            "points_compared": compare(psns, points)}


def _engine_order(c: dict[str, Any], firsts: dict[tuple[int, str], int]) -> tuple:
    """The RC engine's order of half-connections (`rc_pair.pair_streams`), so that one
    capture gives `ibwire rc`'s numbering: request flows by (requester, responder,
    responder QP), then flows of responses alone by (responder, requester, QP);
    endpoints in order of first appearance; in a capture merged from several taps,
    each capture interface's flows together."""
    point, r, s = c["capture_point"], c["requester"], c["responder"]
    rank_r, rank_s = firsts[(point, r["endpoint"])], firsts[(point, s["endpoint"])]
    if s["qp"] is None:
        return (point, 1, _tap(c), rank_s, rank_r, int(r["qp"] or "-1", 16))
    return (point, 0, _tap(c), rank_r, rank_s, int(s["qp"], 16))


def compare(psns: dict[tuple, Any], points: list[str]) -> list[dict[str, Any]]:
    """For each connection seen at two or more points: request PSNs seen at an upstream
    point (earlier in `points`) and missing at a downstream one."""
    by_conn: dict[tuple, dict[int, np.ndarray]] = {}
    for key, values in psns.items():
        by_conn.setdefault(key[1:], {})[key[0]] = values
    out = []
    for conn in sorted(by_conn):
        seen = by_conn[conn]
        at = sorted(seen)
        for i, a in enumerate(at):
            for b in at[i + 1:]:
                lost = np.setdiff1d(seen[a], seen[b])
                out.append({
                    "requester": {"endpoint": conn[0], "qp": conn[1] or None},
                    "responder": {"endpoint": conn[2], "qp": conn[3] or None},
                    "transport": conn[4], "upstream": points[a], "downstream": points[b],
                    "requests_upstream": int(len(seen[a])),
                    "requests_downstream": int(len(seen[b])),
                    "lost_between": int(len(lost)),
                    "lost_psns": [int(x) for x in lost[:MAX_LISTED]],
                    "only_downstream": int(len(np.setdiff1d(seen[b], seen[a]))),
                })
    return out
