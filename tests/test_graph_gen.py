"""The generator, the MAD decision and `madinfo` follow the protocol graph.

* Every opcode the generator emits gets the extended headers `GRAPH.chain` lists,
  in the built headers and on the wire (decoded back from a simulated capture).
* The RC vocabulary derived from the opcode table by name equals the IBA's.
* With the test extension (`graph_extension`), a vendor opcode's chain reaches the
  generator, and `ibwire.mad`, `madinfo` and the IPoIB heuristic agree with
  `GRAPH.carries_mad` for QP0/QP1/other QPs and MAD / non-MAD opcodes.
"""

from __future__ import annotations

import json

from graph_extension import run_extended

from ibwire.cli.madinfo import mad_header
from ibwire.decoder import decode
from ibwire.gen import rcwire, scenario, simulate
from ibwire.gen.mads import describe, mad_qp, path_query, smp_dr
from ibwire.gen.rcwire import RcInfo, rc_headers
from ibwire.graph import GRAPH
from ibwire.mad import MAD_HEADER

EMITTED = sorted({*(op for ops in rcwire.SEND_OPS.values() for op in ops),
                  *rcwire.ATOMICS.values(), rcwire.OP_READ_REQ, rcwire.OP_ACK,
                  rcwire.OP_ATOMIC_ACK, rcwire.RESP_FIRST, rcwire.RESP_MIDDLE,
                  rcwire.RESP_LAST, rcwire.RESP_ONLY})


def test_built_chains_are_the_graphs():
    for op in EMITTED:
        names = [h.layout.name for h in rc_headers(RcInfo(op, 0, syndrome=0), 0x12)]
        assert names == ["bth", *GRAPH.chain(op)], hex(op)


def test_rc_vocabulary_matches_the_iba_opcodes():
    assert rcwire.SEND_OPS == {"send": (0x00, 0x01, 0x02, 0x04),
                               "send_imm": (0x00, 0x01, 0x03, 0x05),
                               "send_inv": (0x00, 0x01, 0x16, 0x17),
                               "write": (0x06, 0x07, 0x08, 0x0A),
                               "write_imm": (0x06, 0x07, 0x09, 0x0B)}
    assert rcwire.ATOMICS == {"cmp_swap": 0x13, "fetch_add": 0x14}
    assert (rcwire.OP_READ_REQ, rcwire.OP_ACK, rcwire.OP_ATOMIC_ACK) == (0x0C, 0x11, 0x12)
    assert rcwire.NEEDS_RQ == {0x00, 0x04, 0x05, 0x17, 0x09, 0x0B}
    assert rcwire.MSG_START == {0x00, 0x04, 0x05, 0x17, 0x06, 0x0A, 0x0B, 0x0C, 0x13, 0x14}
    assert rcwire.MSG_END == {0x02, 0x03, 0x04, 0x05, 0x16, 0x17, 0x08, 0x09, 0x0A, 0x0B,
                              0x0C, 0x13, 0x14}
    assert rcwire.RESPONSES == set(range(0x0D, 0x13))
    assert (rcwire.SYN_ACK_UNLIMITED, rcwire.SYN_RNR, rcwire.SYN_NAK_SEQ) == (0x1F, 0x20, 0x60)
    for s in (0x00, 0x1F, 0x2C, 0x60, 0x64, 0xFF):
        assert rcwire.syndrome_type(s) == (s >> 5) & 3
        assert rcwire.syndrome_value(s) == s & 0x1F
        assert rcwire.make_syndrome(rcwire.syndrome_type(s), rcwire.syndrome_value(s)) == s & 0x7F


def test_generated_capture_carries_the_graphs_chains():
    ops = "send=1,send_imm=1,send_inv=1,write=1,write_imm=1,read=1,cmp_swap=1,fetch_add=1"
    weights = {k: int(v) for k, v in (kv.split("=") for kv in ops.split(","))}
    result = simulate(scenario("rc_clean", encap="ib", messages=30, seed=4, ops=weights,
                               pmtu=256))
    seen = set()
    for frame in result.frames:
        pkt = decode(frame.data, frame.linktype, frame=frame)
        op = pkt.opcode
        if op is None or op.transport != "RC":
            continue
        seen.add(op.code)
        bth = next(i for i, lay in enumerate(pkt.layers) if lay.layout.name == "bth")
        after = [lay.layout.name for lay in pkt.layers[bth + 1:bth + 1 + len(op.headers)]]
        assert after == list(GRAPH.chain(op.code)), hex(op.code)
    assert seen <= set(EMITTED)
    assert len(seen) >= 12, sorted(seen)


def test_generated_mads_travel_where_the_graph_says():
    sgid = bytes(16)
    for mad in (smp_dr(0x01, 7, 0x0011), path_query(8, sgid, sgid)):
        cls, method, attr, tid = describe(mad)
        hdr = MAD_HEADER.unpack(mad)
        assert (cls, method, attr, tid) == (hdr["mgmt_class"], hdr["method"],
                                            hdr["attribute_id"], hdr["transaction_id"])
    assert mad_qp(smp_dr(0x01, 7, 0x0011)) == 0
    assert mad_qp(path_query(8, sgid, sgid)) == 1


def test_mad_header_in_cli_agrees_with_the_decoder_on_generated_traffic():
    result = simulate(scenario("fabric_mads", seed=2, messages=2, connections=1))
    mads = 0
    for frame in result.frames:
        pkt = decode(frame.data, frame.linktype, frame=frame)
        bth, deth = pkt.layer("bth"), pkt.layer("deth")
        rule = pkt.opcode is not None and bth is not None and GRAPH.carries_mad(
            pkt.opcode.code, bth.destqp, deth.srcqp if deth is not None else None)
        assert (mad_header(pkt) is not None) == (rule and len(pkt.payload) > 0)
        mads += rule
    assert mads > 4


# -- with the test extension (child process) ---------------------------------------------
_AGREEMENT = '''
import json
from ibwire import ipoib
from ibwire.cli import madinfo
from ibwire.decoder import PAYLOAD_DECODERS, decode
from ibwire.encode import encode
from ibwire.headers import BTH, DETH, LRH
from ibwire.mad import build_mad, carries_mad, dispatch
from ibwire.gen.rcwire import RcInfo, rc_headers

mad = build_mad(0x03, "Get", "PathRecord", transaction_id=9)
ops = {"ud_send_only": 0x64, "ud_send_only_imm": 0x65, "rc_send_only": 0x04,
       "uc_send_only": 0x24, "vendor": VENDOR_OPCODE}
rows = []
for label, op in ops.items():
    for destqp in (0, 1, 0x45):
        for srcqp in (0, 1, 0x46):
            hdrs = [LRH(dlid=1, slid=2), BTH(opcode=op, destqp=destqp, psn=3)]
            if GRAPH.chain(op)[:1] == ("deth",):
                hdrs.append(DETH(q_key=0x80010000, srcqp=srcqp))
                src = srcqp
            else:
                src = None
            hdrs += [GRAPH.extended_layout(n)() for n in GRAPH.chain(op) if n != "deth"]
            wire = encode(*hdrs, payload=mad)
            pkt = decode(wire, "ib")
            rule = GRAPH.carries_mad(op, destqp, src)
            decoded = madinfo.mad_header(pkt)
            PAYLOAD_DECODERS.remove(dispatch.payload_decoder)
            try:
                bare = madinfo.mad_header(decode(wire, "ib"))   # read through MAD_HEADER
            finally:
                PAYLOAD_DECODERS.append(dispatch.payload_decoder)
            rows.append({
                "case": [label, destqp, srcqp], "rule": rule, "ibwire_mad": carries_mad(pkt),
                "layers": pkt.layer("mad") is not None, "madinfo": decoded is not None,
                "madinfo_bare": bare is not None,
                "same_header": (decoded is None and bare is None) or (
                    decoded is not None and bare is not None
                    and (decoded.mgmt_class, decoded.method, decoded.attr, decoded.status)
                    == (bare.mgmt_class, bare.method, bare.attr, bare.status)),
                "ipoib_claims": ipoib.is_ipoib_payload(op, destqp, src, None, mad)})
chain = [h.layout.name for h in rc_headers(RcInfo(VENDOR_OPCODE, 0), 5)]
print(json.dumps({"rows": rows, "vendor_chain": chain,
                  "graph_chain": list(GRAPH.chain(VENDOR_OPCODE))}))
'''


def test_mad_decision_agrees_with_the_graph_under_the_extension():
    out = json.loads(run_extended(_AGREEMENT).strip().splitlines()[-1])
    assert out["vendor_chain"] == ["bth", *out["graph_chain"]]
    assert "vendoreth" in out["graph_chain"]
    rules = 0
    for row in out["rows"]:
        rule = row["rule"]
        rules += rule
        assert row["ibwire_mad"] == rule, row
        assert row["layers"] == rule, row
        assert row["madinfo"] == rule, row
        assert row["madinfo_bare"] == rule, row
        assert row["same_header"], row
        if rule:
            assert not row["ipoib_claims"], row
    # UD SEND Only (+imm) with a QP0/QP1 end: 2 opcodes x (9 - 1 non-MAD pair)
    assert rules == 16


# -- bulk records and the extension in the generator ------------------------------------
def test_bulk_records_are_what_the_capture_writers_write():
    import io

    from ibwire.capture import PcapWriter, read_capture
    from ibwire.capture.erf import erf_record, parse_erf_record
    from ibwire.constants import ERF_TYPE_IB, LINKTYPE_ERF
    from ibwire.gen.bulk import BulkConfig, _fill, bulk_write

    for encap in ("ib", "roce2"):
        for kernel in (None, _fill.py_func):
            cfg = BulkConfig(encap=encap, packets=90, connections=2, msg_pkts=2)
            out = io.BytesIO()
            bulk_write(out, cfg, kernel=kernel)
            frames = read_capture(io.BytesIO(out.getvalue()))
            again = io.BytesIO()
            writer = PcapWriter(again, frames[0].linktype, nanosecond=True)
            for f in frames:
                if f.linktype == LINKTYPE_ERF:
                    rec = parse_erf_record(f.data)
                    assert f.data == erf_record(rec.payload, f.ts_ns, ERF_TYPE_IB,
                                                f.data[9] & 3)
                writer.write(f.data, ts_ns=f.ts_ns)
            assert again.getvalue() == out.getvalue()


_GEN_EXTENDED = '''
import io, json
from ibwire.capture import read_capture
from ibwire.decoder import Options, decode
from ibwire.gen import scenario, simulate
from ibwire.gen.bulk import BulkConfig, _fill, bulk_write
from ibwire.gen.rcwire import SEND_OPS

# The decoder's fast path keeps opcode chains from import time (the decoder's owner
# follows GRAPH.version); the general path reads them from the graph.
OPTS = Options(fast_path=False)
WRITE_FIRST = SEND_OPS["write"][0]
GRAPH.add_extended_header(WRITE_FIRST, VENDORETH, after="reth")
report = {}
for encap in ("ib", "roce2"):
    fast, slow = io.BytesIO(), io.BytesIO()
    cfg = BulkConfig(encap=encap, packets=60, connections=1, msg_pkts=3)
    bulk_write(fast, cfg)
    bulk_write(slow, cfg, kernel=_fill.py_func)
    chains, bad = [], 0
    for f in read_capture(io.BytesIO(fast.getvalue())):
        p = decode(f.data, f.linktype, options=OPTS)
        bad += p["infiniband.invariant.crc.status"] != 1 or bool(p.problems)
        if p.opcode.code == WRITE_FIRST:
            chains.append([lay.layout.name for lay in p.layers
                           if lay.layout.name in ("reth", "vendoreth")])
    report[encap] = {"twin": fast.getvalue() == slow.getvalue(), "bad": bad,
                     "chains": chains}
sim = simulate(scenario("rc_clean", encap="roce2", messages=8, ops={"write": 1}, seed=5,
                        sizes=[700], pmtu=256))
sim_chains = []
for f in sim.frames:
    p = decode(f.data, f.linktype, options=OPTS)
    if p.opcode is not None and p.opcode.code == WRITE_FIRST:
        sim_chains.append([lay.layout.name for lay in p.layers
                           if lay.layout.name in ("reth", "vendoreth")])
report["sim"] = sim_chains
print(json.dumps(report))
'''


def test_an_extended_header_reaches_the_generators():
    out = json.loads(run_extended(_GEN_EXTENDED).strip().splitlines()[-1])
    for encap in ("ib", "roce2"):
        rep = out[encap]
        assert rep["twin"] and rep["bad"] == 0, rep
        assert rep["chains"] and all(c == ["reth", "vendoreth"] for c in rep["chains"]), rep
    assert out["sim"] and all(c == ["reth", "vendoreth"] for c in out["sim"]), out["sim"]


_NEW_CLASS = '''
import json
from ibwire.cli import madinfo
from ibwire.mad import build_mad, decode_mad, mad_packet
from ibwire.decoder import decode

PERF_LIKE = 0x0A                      # a vendor class (range 1) taught to read as PerfMgt
GRAPH.add("mad", PERF_LIKE, "mad_perf")
mad = bytearray(build_mad(0x04, "Get", "PortCounters", transaction_id=3, port_select=1))
mad[MAD_CLASS_AT] = PERF_LIKE
pkt = decode(mad_packet(bytes(mad), slid=1, dlid=2), "ib")
hdr = madinfo.mad_header(pkt)
print(json.dumps({"port_select": pkt.values_of("infiniband.portcounters.portselect"),
                  "info": madinfo.mad_info(hdr), "bare": decode_mad(bytes(mad)).problems}))
'''


def test_a_mad_class_added_to_the_graph_reaches_decoder_and_cli():
    at = MAD_HEADER.by_name["mgmt_class"].offset
    out = json.loads(run_extended(f"MAD_CLASS_AT = {at}\n" + _NEW_CLASS).strip().splitlines()[-1])
    assert out["port_select"] == [1]
    assert out["info"] == ["PERF (PortCounters)", True]
    assert out["bare"] == []
