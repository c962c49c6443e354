"""PSN versus time for one QP, and the AETH credits it was given, with matplotlib.

Requests are dots (new), crosses (retransmitted); ACKs are the acknowledged PSN at
the time the ACK passed the tap; NAKs and RNR NAKs are triangles; each go-back-N
episode is shaded from its cause to its last resend.
"""

from __future__ import annotations

import numpy as np

from ibwire.analysis import rc_rules as R
from ibwire.analysis.rc import RcResult


def half_connections_of(res: RcResult, qp: int) -> list[int]:
    st = res.streams
    return [h for h in range(len(st)) if qp in (st.req_qp[h], st.resp_qp[h])]


def plot_qp(res: RcResult, qp: int, out: str, fmts: tuple[str, ...] = ("png",)) -> list[str]:
    """Write `<out>.<fmt>` for each format; returns the paths. Raises ValueError when no
    RC stream has QP `qp`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hcs = half_connections_of(res, qp)
    if not hcs:
        raise ValueError(f"no RC/UC/UD stream has QP {qp:#x}")
    ts = res.cols["frame.time_ns"]
    t0 = ts[np.isin(res.streams.hc, hcs)].min()
    fig, (ax, axc) = plt.subplots(2, 1, sharex=True, figsize=(11, 7),
                                  gridspec_kw={"height_ratios": [3, 1]})
    cls = R.OPCLASS[np.clip(res.cols["infiniband.bth.opcode"], 0, 255)]
    for h in hcs:
        rows = res.streams.hc == h
        x = (ts - t0) / 1e6
        base = res.upsn[rows].min() if rows.any() else 0
        y = res.upsn - base
        req = rows & ((cls & R.C_REQUEST) != 0)
        retx = req & ((res.flags & R.F_RETX) != 0)
        ack = rows & (res.acked > 0)
        nak = rows & ((res.flags & (R.F_NAK | R.F_RNR)) != 0)
        label = f"{res.streams.req_qp[h]:#x}->{res.streams.resp_qp[h]:#x}"
        ax.plot(x[req & ~retx], y[req & ~retx], ".", ms=3, label=f"sent {label}")
        ax.plot(x[retx], y[retx], "x", ms=5, color="tab:red", label="retransmitted")
        ax.plot(x[ack], y[ack], "_", ms=6, color="tab:green", label="ACKed")
        ax.plot(x[nak], y[nak], "v", ms=6, color="black", label="NAK / RNR NAK")
        for e in res.episodes:
            if e["half_connection"] == h:
                start = (e["start_ns"] - t0) / 1e6
                ax.axvspan(start, start + e["duration_ns"] / 1e6, color="tab:orange",
                           alpha=0.2)
        cred = rows & (res.credits >= 0) & (res.credits < R.CREDIT_UNLIMITED)
        if cred.any():
            axc.step(x[cred], R.CREDIT_TABLE[res.credits[cred]], where="post", label=label)
    ax.set_ylabel("PSN (relative)")
    ax.set_title(f"QP {qp:#x}: PSN over time (shaded: go-back-N episodes)")
    handles, labels = ax.get_legend_handles_labels()
    uniq = dict(zip(labels, handles))
    ax.legend(uniq.values(), uniq.keys(), loc="upper left", fontsize=8)
    axc.set_ylabel("AETH credits")
    axc.set_xlabel("time (ms)")
    fig.tight_layout()
    paths = []
    for fmt in fmts:
        path = f"{out}.{fmt}"
        fig.savefig(path, format=fmt)
        paths.append(path)
    plt.close(fig)
    return paths
