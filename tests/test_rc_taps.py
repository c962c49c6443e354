"""Captures merged from several taps (mergecap: one pcapng interface per input): each
tap's view of a connection is analysed on its own (rc_pair, issue #13's interface
hint). Interfaces that only code direction change nothing."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import PCAPS, REPO
from test_cli_common import run_cli

from ibwire.analysis.rc import analyze
from ibwire.analysis.rc_input import rc_columns, rc_columns_per_packet
from ibwire.analysis.rc_report import document
from ibwire.capture import PcapngWriter, open_capture

LOSS = PCAPS / "rc_loss_roce2.pcap"
RNR = PCAPS / "rc_rnr_ib.pcap"
SKEW_NS = 300          # tap B sees each packet this much later


def _frames(path):
    with open_capture(str(path)) as frames:
        return list(frames)


def _merge(out, frames, interface_of, skip_b=frozenset(), skew=SKEW_NS):
    """A pcapng with one interface per tap; returns the source frame of each row."""
    recs = []
    for i, f in enumerate(frames):
        for tap in interface_of(i, f):
            if not (tap == 1 and i in skip_b):
                recs.append((f.ts_ns + skew * tap, tap, i, f))
    recs.sort(key=lambda r: (r[0], r[2], r[1]))
    with PcapngWriter(str(out)) as w:
        for _ in range(1 + max(r[1] for r in recs)):
            w.add_interface(frames[0].linktype)
        for ts, tap, _, f in recs:
            w.write(f.data, ts_ns=ts, interface=tap)
    return np.array([r[2] for r in recs]), np.array([r[1] for r in recs])


def test_two_taps_are_two_views(tmp_path):
    """Every packet seen at two taps: before, the second copy of each was a network
    duplicate or a retransmission (34 episodes instead of 7). Now each tap's rows
    carry exactly the findings of that tap's capture alone, and a tap that missed
    three requests shows them as its own loss."""
    frames = _frames(LOSS)
    single = analyze(rc_columns(LOSS))
    skip = {i for i in range(20, 200) if single.streams.hc[i] == 0
            and single.cols["ibwire.src"][i] == single.streams.req_src[0]}
    skip = set(sorted(skip)[:3])
    path = tmp_path / "two_taps.pcapng"
    src, tap = _merge(path, frames, lambda i, f: (0, 1), skip_b=skip)
    res = analyze(rc_columns(path))
    assert sorted(res.streams.tap) == [0, 1]
    assert len(res.streams) == 2 * len(single.streams)
    a = tap == 0
    assert np.array_equal(res.flags[a], single.flags[src[a]])
    ref = res.ref[a]           # rows of the merged capture, back to the source's frames
    assert np.array_equal(np.where(ref >= 0, src[ref], -1), single.ref[src[a]])
    assert (single.ref >= 0).sum() > 30
    doc, one = document(res), document(single)
    at = {c["capture_interface"]: c for c in doc["connections"]}
    want = one["connections"][0]
    assert {k: at[0][k] for k in want if k not in ("connection", "half_connection")} == \
        {k: v for k, v in want.items() if k not in ("connection", "half_connection")}
    # Tap B missed three requests: fewer packets, and a view of its own.
    assert at[1]["packets"] == want["packets"] - 3
    assert at[1]["connection"] != at[0]["connection"]
    # Without the tap missing anything, both views are the single capture's.
    src2, tap2 = _merge(tmp_path / "same.pcapng", frames, lambda i, f: (0, 1))
    res2 = analyze(rc_columns(tmp_path / "same.pcapng"))
    for t in (0, 1):
        assert np.array_equal(res2.flags[tap2 == t], single.flags[src2[tap2 == t]])
    assert len(document(res2)["episodes"]) == 2 * len(one["episodes"])


def test_interfaces_that_code_direction_change_nothing(tmp_path):
    """Wireshark gives each ERF capture interface (an Endace tap's direction) a pcapng
    interface: requests on one, responses on the other. No flow is at two
    interfaces, so nothing is split and the findings are the single capture's."""
    frames = _frames(RNR)
    single = analyze(rc_columns(RNR))
    first_src = single.cols["ibwire.src"][0]
    path = tmp_path / "by_direction.pcapng"
    src, _ = _merge(path, frames,
                    lambda i, f: (0 if single.cols["ibwire.src"][i] == first_src else 1,),
                    skew=0)
    assert np.array_equal(src, np.arange(len(frames)))
    cols = rc_columns(path)
    assert set(cols["frame.interface_id"].tolist()) == {0, 1}
    res = analyze(cols)
    assert set(res.streams.tap) == {-1}
    assert np.array_equal(res.flags, single.flags[src])
    assert [c["packets"] for c in document(res)["connections"]] == \
        [c["packets"] for c in document(single)["connections"]]


def test_erf_capture_interface_is_direction_not_tap():
    """ibwire gen (like ibdump's sample) puts host A's packets at ERF interface 0 and
    B's at 1: no split."""
    cols = rc_columns(RNR)
    assert set(cols["erf.flags.cap"].tolist()) == {0, 1}
    assert set(analyze(cols).streams.tap) == {-1}


def test_merged_taps_in_json_text_and_scaled_run(tmp_path):
    """The interface is in the JSON document (schema) and the text table, and the
    chunked path numbers connections as the engine does."""
    jsonschema = pytest.importorskip("jsonschema")
    path = tmp_path / "two_taps.pcapng"
    _merge(path, _frames(LOSS), lambda i, f: (0, 1))
    rc, out, _ = run_cli("rc", path, "-T", "json")
    assert rc == 0
    doc = json.loads(out)
    jsonschema.validate(doc, json.loads((REPO / "docs" / "schemas" /
                                         "rc.schema.json").read_text()))
    assert sorted(c["capture_interface"] for c in doc["connections"]) == [0, 1]
    rc, text, _ = run_cli("rc", path, "--episodes", "0")
    assert rc == 0 and "[if 0]" in text and "[if 1]" in text
    rc, scaled, _ = run_cli("rc", path, "-T", "json", "--jobs", "2", "--chunk", "100")
    assert rc == 0
    assert json.loads(scaled)["connections"] == doc["connections"]
    assert json.loads(scaled)["episodes"] == doc["episodes"]


def test_interface_column_bulk_equals_per_packet(tmp_path):
    path = tmp_path / "two_taps.pcapng"
    _merge(path, _frames(LOSS), lambda i, f: (0, 1))
    bulk, slow = rc_columns(path), rc_columns_per_packet(path)
    assert np.array_equal(bulk["frame.interface_id"], slow["frame.interface_id"])
    assert set(bulk["frame.interface_id"].tolist()) == {0, 1}
