"""Unit tests of the generator's parts: clock, PSN arithmetic, link credits, fabric
marking, MAD builders, the bulk writer (Numba kernel vs its Python twin vs
`encode`), configuration checks and the CLI."""

from __future__ import annotations

import io
import json
import struct

import pytest

from ibwire import decode
from ibwire.capture import read_capture
from ibwire.gen import GenConfig, mads, scenario, simulate
from ibwire.gen.bulk import BulkConfig, _fill, bulk_write
from ibwire.gen.clock import Clock, Timer
from ibwire.gen.credits import CreditPort, blocks
from ibwire.gen.fabric import ENCAPS, Fabric, make_hosts
from ibwire.gen.rcwire import RcInfo, npsn, packet_opcode, psn_add, psn_diff, rc_headers
from ibwire.headers.bth import BTH


# -- clock --------------------------------------------------------------------------------
def test_clock_runs_in_time_order_and_fifo_on_ties():
    c = Clock()
    seen = []
    c.at(30, seen.append, "c")
    c.at(10, seen.append, "a")
    c.at(10, seen.append, "b")
    c.after(5, lambda: c.after(0, seen.append, "z"))
    c.run()
    assert seen == ["z", "a", "b", "c"]
    assert c.now == 30


def test_timer_rearm_and_cancel_void_older_deadlines():
    c = Clock()
    fired = []
    t = Timer(c, lambda: fired.append(c.now))
    t.arm(100)
    c.at(50, t.arm, 100)          # re-armed at 50: fires at 150, not 100
    c.run()
    assert fired == [150]
    t.arm(10)
    t.cancel()
    c.run()
    assert fired == [150] and not t.armed


def test_clock_stop_at():
    c = Clock()
    seen = []
    for t in (5, 10, 15):
        c.at(t, seen.append, t)
    c.stop_at = 10
    c.run()
    assert seen == [5, 10]


# -- PSN arithmetic and message shapes -------------------------------------------------------
def test_psn_arithmetic_wraps_at_2_24():
    assert psn_add(0xFFFFFF, 1) == 0
    assert psn_add(0, -1) == 0xFFFFFF
    assert psn_diff(0, 0xFFFFFF) == 1
    assert psn_diff(0xFFFFFF, 0) == -1
    assert psn_diff(0x800000, 0) == -(1 << 23)
    assert psn_diff(0x7FFFFF, 0) == (1 << 23) - 1


@pytest.mark.parametrize("length,pmtu,n", [(0, 256, 1), (1, 256, 1), (256, 256, 1),
                                           (257, 256, 2), (4096, 1024, 4), (4097, 1024, 5)])
def test_psns_consumed(length, pmtu, n):
    assert npsn("read", length, pmtu) == n
    assert npsn("send", length, pmtu) == n
    assert npsn("cmp_swap", 8, pmtu) == 1


def test_packet_opcodes_first_middle_last_only():
    assert [packet_opcode("send", k, 4) for k in range(4)] == [0x00, 0x01, 0x01, 0x02]
    assert packet_opcode("send", 0, 1) == 0x04
    assert packet_opcode("send_imm", 2, 3) == 0x03
    assert packet_opcode("send_inv", 0, 1) == 0x17
    assert [packet_opcode("write_imm", k, 2) for k in range(2)] == [0x06, 0x09]
    assert packet_opcode("write_imm", 0, 1) == 0x0B


# -- link credits ---------------------------------------------------------------------------
def test_credit_gate_is_modulo_4096():
    cp = CreditPort(64, (0,), 100.0)
    assert not cp.can_send(0, 1)              # no FCCL received yet: limit 0
    cp.on_fc_packet(0, fctbs=0, fccl=10)
    assert cp.can_send(0, 10) and not cp.can_send(0, 11)
    cp.vl[0].tbs = 4090                       # counters wrap: limit 4095+5 = 4 (mod 4096)
    cp.on_fc_packet(0, fctbs=0, fccl=4)
    assert cp.available(0) == 10
    assert cp.can_send(0, 10) and not cp.can_send(0, 11)
    cp.on_send(0, 10, now=0)
    assert cp.vl[0].tbs == 4 and cp.available(0) == 0


def test_fccl_is_abr_plus_free_capped_at_2048():
    cp = CreditPort(3000, (0,), 100.0)
    cp.on_fc_packet(0, fctbs=100, fccl=0)     # ABR resynchronised to the peer's FCTBS
    assert cp.fccl(0) == (100 + 2048) % 4096
    done = cp.on_receive(0, 5, now=0)
    assert done == int(5 * 64 * 8 / 100.0)    # drained at the configured rate
    assert cp.vl[0].abr == 105 and cp.fccl(0) == (105 + 2048) % 4096
    small = CreditPort(8, (0,), 100.0)
    small.on_receive(0, 3, now=0)
    assert small.fccl(0) == 3 + 5
    assert blocks(30) == 1 and blocks(64) == 1 and blocks(65) == 2


def test_flow_control_packet_bytes():
    cp = CreditPort(24, (0, 1), 100.0)
    data = cp.fc_packet(1, init=True)
    p = decode(data, "ib_link")
    assert (p["infiniband_link.op"], p["infiniband_link.vl"], p["infiniband_link.fccl"]) == \
        (1, 1, 24)
    assert p["infiniband_link.lpcrc.status"] == 1


# -- fabric ---------------------------------------------------------------------------------
@pytest.mark.parametrize("encap", ENCAPS)
def test_fabric_builds_valid_packets_and_marks_congestion(encap):
    a, b = make_hosts(encap)
    fab = Fabric(encap, [a, b])
    info = RcInfo(0x04, 0xFFFFFE, ackreq=True, plen=20)
    data = fab.build(a, b, rc_headers(info, 0x1234), b"x" * 20, ect=True)
    linktype = "ib" if fab.native else "eth"
    p = decode(data, linktype)
    assert not p.problems and p["infiniband.bth.psn"] == 0xFFFFFE
    assert p["infiniband.invariant.crc.status"] == 1
    marked = decode(fab.mark_ce(data), linktype)
    assert not marked.problems
    assert marked["infiniband.invariant.crc.status"] == 1     # CE/FECN are masked
    if fab.native:
        assert marked["infiniband.variant.crc.status"] == 1
    if encap == "roce2":
        assert marked["ip.dsfield.ecn"] == 3
    elif encap == "roce2-v6":
        assert marked["ipv6.tclass"] & 3 == 3
    else:
        assert marked["infiniband.bth.fecn"] == 1


# -- MADs -------------------------------------------------------------------------------------
def test_mad_builders_follow_the_offsets():
    req = mads.cm_req(0x1122334455667788, 0xAABBCCDD, 0x0002C90300A0B001, 0x123456,
                      0xFFFFF0, pmtu=1024, local_lid=1, remote_lid=2,
                      local_gid=bytes(range(16)), remote_gid=bytes(16), timeout=14,
                      retry_cnt=7, rnr_retry=6, rate=16)
    assert len(req) == 256 and req[:4] == bytes([1, 7, 2, 3])
    assert struct.unpack(">Q", req[8:16])[0] == 0x1122334455667788
    assert struct.unpack(">H", req[16:18])[0] == mads.CM_REQ
    body = req[24:]
    assert body[:4] == bytes.fromhex("AABBCCDD")
    assert body[32:35] == bytes.fromhex("123456")                # LocalQPN
    assert body[44:47] == bytes.fromhex("FFFFF0")                # StartingPSN
    assert body[50] >> 4 == 3 and body[50] & 7 == 6              # MTU 1024, RNR retry
    assert body[95] >> 3 == 14                                   # LocalACKTimeout
    rep = mads.cm_rep(1, 2, 3, 4, 0x654321, 0x000010, rnr_retry=7)
    assert rep[24 + 12:24 + 15] == bytes.fromhex("654321") and rep[24 + 27] >> 5 == 7
    smp = mads.smp_dr(mads.GET_RESP, 5, mads.NODE_INFO, mads.node_info(0x11, 0x22),
                      returning=True)
    assert len(smp) == 256 and smp[1] == 0x81 and smp[6:8] == b"\x01\x01"
    assert smp[4] & 0x80                                         # D bit
    assert smp[32:36] == b"\xff" * 4 and smp[64 + 2] == 1        # permissive; NodeType CA
    assert smp[64 + 12:64 + 20] == (0x11).to_bytes(8, "big")     # NodeGUID
    pi = mads.smp_dr(mads.SET, 6, mads.PORT_INFO, mads.port_info(2, 1, 1024, False, 3))
    assert pi[64 + 16:64 + 20] == bytes([0, 2, 0, 1])            # LID, MasterSMLID
    assert pi[64 + 36] >> 4 == 3 and pi[64 + 37] >> 4 == 3       # NeighborMTU, VLCap
    sgid, dgid = bytes(range(16)), bytes(range(16, 32))
    sa = mads.path_query(9, sgid, dgid)
    assert len(sa) == 256 and struct.unpack(">Q", sa[48:56])[0] == 0x340C
    assert sa[56 + 8:56 + 24] == dgid and sa[56 + 24:56 + 40] == sgid
    ans = mads.path_answer(9, sgid, dgid, 2, 1, mtu=2048, rate=16)
    assert ans[3] == 0x81 and ans[56 + 40:56 + 44] == bytes([0, 1, 0, 2])   # DLID, SLID
    assert ans[56 + 54] == 0x80 | 4                              # MTU exactly 2048


# -- bulk writer ------------------------------------------------------------------------------
@pytest.mark.parametrize("encap", ENCAPS)
@pytest.mark.parametrize("msg_pkts", [1, 3])
def test_bulk_kernel_twin_and_reference(encap, msg_pkts):
    cfg = BulkConfig(encap=encap, packets=120, connections=2, msg_pkts=msg_pkts,
                     psn_start=0xFFFFF8)
    fast, slow = io.BytesIO(), io.BytesIO()
    summary = bulk_write(fast, cfg)
    bulk_write(slow, cfg, kernel=_fill.py_func)
    assert fast.getvalue() == slow.getvalue()                   # Numba == pure Python
    frames = read_capture(io.BytesIO(fast.getvalue()))
    assert len(frames) == 120 and sum(summary["opcode_counts"].values()) == 120
    hosts = make_hosts(encap)
    fab = Fabric(encap, hosts)
    psns = []
    for f in frames:
        p = decode(f.data, f.linktype)
        assert not p.problems
        assert p["infiniband.invariant.crc.status"] == 1
        if fab.native:
            assert p["infiniband.variant.crc.status"] == 1
        psns.append(p["infiniband.bth.psn"])
        # Byte-identical to what encode() builds for the same fields.
        bth = p.layer("bth")
        hdrs = [BTH(**{k: bth.values[k] for k in ("opcode", "se", "m", "p_key", "destqp",
                                                   "a", "psn", "fecn", "becn")})]
        for lay in p.layers[p.layers.index(bth) + 1:]:
            if lay.offset < p.payload_offset or p.payload_offset < 0:
                hdrs.append(lay.layout(**{fl.name: lay.values[fl.name]
                                          for fl in lay.layout.fields
                                          if fl.name in lay.values and fl.derive is None
                                          and fl.overlay is None}))
        a, b = hosts if (p.get("erf.flags.cap", 0) == 0 and
                         p.get("eth.src", b"\x02\0\0\0\0\x0a") in
                         (b"\x02\0\0\0\0\x0a", "02:00:00:00:00:0a")) else hosts[::-1]
        a.ip_id = (p.get("ip.id", 1) - 1) & 0xFFFF      # build() advances the IPv4 ID
        ref = fab.build(a, b, hdrs, p.payload, sport=p.get("udp.srcport", 0xC000),
                        flow=p.get("infiniband.grh.flowlabel", p.get("ipv6.flow", 0)))
        wire = f.data[16:] if fab.native else f.data
        assert wire == ref
    assert 0xFFFFFF in psns or any(x < 0x100 for x in psns)     # wrapped


def test_bulk_rate_is_reasonable(tmp_path):
    s = bulk_write(str(tmp_path / "b.pcap"), BulkConfig(packets=200_000))
    assert s["packets_per_s"] > 100_000          # the 10M measurement is tools/bench_gen.py


# -- configuration and CLI ----------------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(encap="x"), dict(pmtu=300), dict(loss=1.5),
                                dict(encap="roce2", link_credits=16),
                                dict(encap="ib", link_credits=16, reorder=0.1),
                                dict(encap="roce2", mads=True), dict(ops={"nope": 1}),
                                dict(psn_start=1 << 24), dict(timeout=0)])
def test_config_rejects_nonsense(kw):
    with pytest.raises(ValueError):
        GenConfig(**kw)


def test_scenarios_apply_overrides():
    cfg = scenario("rc_loss", seed=9, loss=0.1)
    assert cfg.seed == 9 and cfg.loss == 0.1 and cfg.name == "rc_loss"
    with pytest.raises(KeyError):
        scenario("nope")


def test_cli_writes_capture_and_truth(tmp_path, capsys):
    from ibwire.gen import cli
    out = tmp_path / "x.pcapng"
    rc = cli.main(["rc_clean", "--messages", "5", "--seed", "3", "--format", "pcapng",
                   "--loss", "2%", "-o", str(out)])
    assert rc == 0 and out.exists()
    truth = json.loads((tmp_path / "x.truth.json").read_text())
    assert truth["params"]["loss"] == 0.02 and truth["capture"]["format"] == "pcapng"
    assert truth["capture"]["frames"] == len(read_capture(str(out)))
    assert "x.pcapng" in capsys.readouterr().out
    assert cli.main(["--list"]) == 0
    assert "rc_loss" in capsys.readouterr().out
    assert cli.main(["--encap", "roce2", "--link-credits", "8", "-o",
                     str(tmp_path / "y.pcap")]) == 2
    assert cli.main(["rc_clean", "--format", "erf", "-o", str(tmp_path / "z.erf")]) == 2


def test_cli_bulk_engine(tmp_path):
    from ibwire.gen import cli
    out = tmp_path / "big.pcap"
    assert cli.main(["--engine", "bulk", "--packets", "5000", "--encap", "ib", "-q",
                     "-o", str(out)]) == 0
    frames = read_capture(str(out))
    assert len(frames) == 5000 and frames[0].linktype == 197
    truth = json.loads((tmp_path / "big.truth.json").read_text())
    assert truth["packets"] == 5000


def test_main_cli_has_gen(tmp_path):
    main = pytest.importorskip("ibwire.cli.main")
    out = tmp_path / "m.pcap"
    assert main.main(["gen", "rc_clean", "--messages", "3", "-q", "-o", str(out)]) == 0
    assert out.exists()


def test_simulation_is_deterministic():
    a = simulate(scenario("rc_loss", seed=4, messages=20, reorder=0.05, capture_loss=0.05))
    b = simulate(scenario("rc_loss", seed=4, messages=20, reorder=0.05, capture_loss=0.05))
    assert [f.data for f in a.frames] == [f.data for f in b.frames]
    assert [f.ts_ns for f in a.frames] == [f.ts_ns for f in b.frames]
    assert json.dumps(a.truth) == json.dumps(b.truth)
    c = simulate(scenario("rc_loss", seed=5, messages=20))
    assert [f.data for f in a.frames] != [f.data for f in c.frames]


def test_faults_do_not_shift_the_traffic():
    """Each fault draws from its own stream: adding loss keeps the same messages."""
    clean = simulate(scenario("rc_clean", seed=8, messages=15))
    lossy = simulate(scenario("rc_clean", seed=8, messages=15, loss=0.05))
    assert clean.truth["connections"][0]["a"]["messages"] == \
        lossy.truth["connections"][0]["a"]["messages"]
