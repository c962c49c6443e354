"""`ibwire dump` against tshark 4.0 on every given capture.

Fields compared per capture: every `infiniband*` field tshark or ibwire prints a
value for (minus tshark_diff.py's SKIP list). tshark is asked once per capture for all of
its `infiniband*` fields (`tshark -G fields`); the fields with a value in some
frame are the capture's field list, the same set as the leaves of `-T json`
under `infiniband*` that tshark_diff.py uses; ibwire's own decode adds the
`infiniband*` names it fills that tshark leaves empty. Cells are compared as exact
text both ways: a value ibwire prints where tshark prints none is a difference too
(unless pinned as a Wireshark mistake). The tshark runs go on in two threads while the
tests decode, so the whole file stays well under a minute.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import PCAPS, capture_params, shared_captures
from mad_helpers import KNOWN
from test_cli_common import SKIP, TSHARK, capture, lines, run_cli, tshark

import ibwire
from ibwire import BTH, DETH, ERF, LRH
from ibwire.capture import PcapWriter
from ibwire.cli.fields_out import getter

SAMPLES = sorted(PCAPS.glob("*.pcap"))   # the project's own captures (pcaps/)

# Documented Wireshark 4.0 mistakes (protocol-facts §12.1): field -> why we differ.
# Each has a test below that pins the exact difference.
WIRESHARK_MISTAKES = {
    "infiniband.rmpp.rresptime": "Wireshark splits RMPP byte 26 4/4; IBA says 5/3",
    "infiniband.rmpp.rmppflags": "Wireshark splits RMPP byte 26 4/4; IBA says 5/3",
    # MAD fields where Wireshark contradicts the specification, each pinned by a test
    # in test_mad_tshark.py (mad_helpers.KNOWN lists them with the reason).
    **{name: why for (name, _attr), why in KNOWN.items()},
}


def _crcs_hidden(pkt) -> bool:
    """Packets after which Wireshark 4.0's dissection never reaches the CRCs: PerfMgt
    MADs, SA NodeRecord/PortInfoRecord MADs (their record dissectors take the rest
    of the packet), and the CNP opcode it does not know (README's table)."""
    mgmt, attr = pkt.get("infiniband.mad.mgmtclass"), pkt.get("infiniband.mad.attributeid")
    return (mgmt == 0x04 or (mgmt == 0x03 and attr in (0x0011, 0x0012))
            or pkt.get("infiniband.bth.opcode") == 0x81)


# Values ibwire prints where Wireshark 4.0 prints none, each a pinned Wireshark mistake:
# field name (or prefix ending in ".") -> (the packets it concerns, why; the pin).
ONE_WAY = {
    "infiniband.invariant.crc": (_crcs_hidden, "Wireshark 4.0 shows no ICRC/VCRC after "
                                 "some MADs and CNPs (test_crcs_wireshark_omits)"),
    "infiniband.variant.crc": (_crcs_hidden, "as infiniband.invariant.crc"),
    "infiniband_link.": (lambda pkt: pkt.layer("link") is not None,
                         "Wireshark 4.0 reads a 6-byte link packet as malformed, without "
                         "its fields (test_gen_captures.py::"
                         "test_wireshark_mistake_six_byte_link_packets)"),
}


def one_way_ok(field: str, pkt) -> bool:
    rule = ONE_WAY.get(field) or next(
        (r for k, r in ONE_WAY.items() if k.endswith(".") and field.startswith(k)), None)
    return rule is not None and rule[0](pkt)


class Oracle:
    """tshark's -T fields for every infiniband field, per capture, computed ahead.

    Results are kept in pytest's cache, keyed by the capture's bytes and the tshark
    version, so a second run does not ask tshark again (`pytest --cache-clear` does)."""

    def __init__(self, cache: Path) -> None:
        version = subprocess.run(["tshark", "--version"], capture_output=True,
                                 text=True).stdout.split("\n")[0]
        out = subprocess.run(["tshark", "-G", "fields"], capture_output=True,
                             text=True).stdout
        self.names = [p[2] for p in (ln.split("\t") for ln in out.splitlines())
                      if len(p) > 2 and p[0] == "F" and p[2].startswith("infiniband")]
        self.key = hashlib.sha256((version + "\n".join(self.names)).encode()).hexdigest()
        self.cache = cache
        self.pool = ThreadPoolExecutor(2)
        self.jobs: dict[Path, Future] = {
            f: self.pool.submit(self._cached, f) for f in shared_captures() + SAMPLES}

    def _cached(self, path: Path) -> tuple[list[str], list[dict[str, str]]]:
        digest = hashlib.sha256(path.read_bytes() + self.key.encode()).hexdigest()[:32]
        store = self.cache / f"{path.name}.{digest}.json"
        if store.exists():
            fields, rows = json.loads(store.read_text())
            return fields, [dict(zip(fields, r)) for r in rows]
        fields, rows = self._run(path)
        store.write_text(json.dumps([fields, [[r[f] for f in fields] for r in rows]]))
        return fields, rows

    def _run(self, path: Path) -> tuple[list[str], list[dict[str, str]]]:
        args = [*TSHARK, "-r", str(path), "-T", "fields", "-E", "occurrence=a"]
        for name in self.names:
            args += ["-e", name]
        out = subprocess.run(args, capture_output=True, text=True).stdout
        rows = [dict(zip(self.names, ln.split("\t"))) for ln in lines(out)]
        seen = {n for row in rows for n, v in row.items() if v}
        fields = [n for n in self.names if n in seen and not SKIP.search(n)]
        return fields, [{f: row.get(f, "") for f in fields} for row in rows]

    def get(self, path: Path) -> tuple[list[str], list[dict[str, str]]]:
        return self.jobs[path].result()


@pytest.fixture(scope="session")
def oracle(request):
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed (apt-get install -y tshark)")
    cache = getattr(request.config, "cache", None)   # absent with -p no:cacheprovider
    o = Oracle(cache.mkdir("ibwire-tshark-fields") if cache is not None
               else Path(tempfile.mkdtemp(prefix="ibwire-tshark-")))
    yield o
    o.pool.shutdown(cancel_futures=True)


def ibwire_fields(pkts: list, names: set[str]) -> set[str]:
    """tshark's field names (of `names`) that ibwire gives a value in some frame."""
    seen: set[str] = set()
    for pkt in pkts:
        seen.update(n for n, _, _ in pkt.all_fields() if n in names)
    return {n for n in seen if not SKIP.search(n)}


def compare(path: Path, oracle: Oracle) -> tuple[dict, list[str]]:
    """(mismatches by field, fields ibwire does not know). Both ways: the fields
    compared are those tshark or ibwire fills in some frame, and a cell differs
    when either prints a value the other does not."""
    fields, rows = oracle.get(path)
    pkts = list(ibwire.read(path))
    extra = sorted(ibwire_fields(pkts, set(oracle.names)) - set(fields))
    args = ["dump", "-r", path, "-T", "fields", "-E", "occurrence=a"]
    for f in fields + extra:
        args += ["-e", f]
    rc, out, _ = run_cli(*args)
    assert rc == 0
    ours = lines(out)
    assert len(ours) == len(rows), "one line per frame, as tshark"
    unknown = [f for f in fields if getter(f) is None]
    bad: dict[str, list] = {}
    for n, (mine, theirs) in enumerate(zip(ours, rows), 1):
        for f, value in zip(fields + extra, mine.split("\t")):
            want = theirs.get(f, "")     # an extra field: tshark printed nothing
            if value != want and f not in unknown and not (
                    not want and one_way_ok(f, pkts[n - 1])):
                bad.setdefault(f, []).append((n, want, value))
    return bad, unknown


# Headers the CLI's own decoder core covers; any other infiniband.* field belongs to
# a payload decoder (ibwire.mad, ibwire.ipoib), whose owners pin their differences.
CORE = re.compile(r"^infiniband_link\.|^infiniband\.(lrh|grh|bth|rwh|rdeth|deth|xrceth|reth|"
                  r"atomiceth|aeth|atomicacketh|immdt|ieth|feth|invariant|variant|payload|"
                  r"vendor)\b")


@pytest.mark.parametrize("path", capture_params() + [
    pytest.param(p, id=f"pcaps/{p.name}") for p in SAMPLES])
def test_fields_agree_with_tshark(path, oracle):
    bad, unknown = compare(path, oracle)
    core = {f: rows[:3] for f, rows in bad.items()
            if CORE.match(f) and f not in WIRESHARK_MISTAKES}
    assert not core, f"fields that differ from tshark (frame, tshark, ibwire): {core}"
    payload = {f: rows[:2] for f, rows in bad.items()
               if not CORE.match(f) and f not in WIRESHARK_MISTAKES}
    assert not unknown, f"tshark fields ibwire does not decode: {unknown}"
    assert not payload, f"payload fields that differ from tshark: {payload}"


def test_rmpp_split_is_iba_not_wireshark(tmp_path):
    """RMPP byte 26: RRespTime is the top 5 bits, Flags the low 3 (IBA, libibmad);
    Wireshark 4.0 splits it 4/4 (protocol-facts §12.1). The given captures only hold
    0x00/0x01 there, where both agree, so a crafted SA response pins the difference."""
    if getter("infiniband.rmpp.rresptime") is None:
        pytest.xfail("ibwire.mad does not decode RMPP yet")
    mad = bytearray(256)
    mad[0:4] = bytes([1, 0x03, 2, 0x92])               # SA GetTableResp, class version 2
    mad[16:18] = (0x0035).to_bytes(2, "big")           # PathRecord
    mad[24:28] = bytes([1, 1, 0xF9, 0])                # RMPP v1 DATA, byte 26 = 0xF9
    erf = ERF(type=21, vlen=1)
    pkt = ibwire.encode(erf, LRH(dlid=12, slid=1), BTH(opcode=0x64, destqp=1, psn=5),
                        DETH(q_key=0x80010000, srcqp=1), payload=bytes(mad))
    path = tmp_path / "rmpp.pcap"
    w = PcapWriter(path, 197)
    w.write(pkt, ts_ns=0)
    w.close()
    args = ["-T", "fields", "-e", "infiniband.rmpp.rresptime", "-e", "infiniband.rmpp.rmppflags"]
    rc, out, _ = run_cli("dump", "-r", path, *args)
    assert lines(out) == ["0x1f\t0x01"]                # 0xF9 >> 3, 0xF9 & 7
    assert lines(tshark("-r", path, *args)) == ["0x0f\t0x09"]   # 0xF9 >> 4, 0xF9 & 15


CARRIER_FIELDS = [
    "frame.number", "frame.len", "frame.cap_len", "frame.protocols", "frame.time_relative",
    "frame.time_epoch", "frame.time_delta", "eth.src", "eth.dst", "eth.type", "eth.addr",
    "ip.src", "ip.dst", "ip.addr", "ip.len", "ip.id", "ip.flags", "ip.dsfield", "ip.ttl",
    "ip.proto", "ip.checksum", "ip.version", "ip.dsfield.ecn", "udp.srcport", "udp.dstport",
    "udp.port", "udp.length", "udp.checksum", "ipv6.src", "ipv6.dst", "ipv6.plen",
    "ipv6.nxt", "ipv6.hlim", "tcp.srcport", "tcp.dstport", "data.len", "data.data",
    "_ws.col.Protocol",
]


@pytest.mark.parametrize("path", capture_params("public") + [
    pytest.param(p, id=f"rxe/{p.name}") for p in shared_captures("rxe")
    if p.name.startswith(("e1_send_v6_clean.wire", "a6_write_rdmacm_clean.wire"))] + [
    pytest.param(p, id=f"mad/{p.name}") for p in shared_captures("mad")
    if p.name == "perfquery.pcap"])
def test_frame_and_carrier_fields(path):
    """frame.*, eth/ip/udp, tshark aggregates and the Protocol column, exactly."""
    args = ["-T", "fields"]
    for f in CARRIER_FIELDS:
        args += ["-e", f]
    want = lines(tshark("-r", path, *args))
    rc, out, _ = run_cli("dump", "-r", path, *args)
    got = lines(out)
    assert rc == 0 and len(got) == len(want)
    for n, (a, b) in enumerate(zip(got, want), 1):
        for f, x, y in zip(CARRIER_FIELDS, a.split("\t"), b.split("\t")):
            assert x == y, f"frame {n} {f}: ibwire {x!r} tshark {y!r}"


def test_subprocess_console_script_matches_tshark():
    """The installed `ibwire` script, run like tshark_diff.py runs it."""
    exe = shutil.which("ibwire")
    if exe is None:
        pytest.skip("the ibwire console script is not installed (pip install -e .)")
    path = capture("public", "roce-v2-rxe-cm-write-read.pcap")
    fields = ["frame.number", "infiniband.bth.opcode", "infiniband.bth.destqp",
              "infiniband.bth.psn", "infiniband.aeth.msn", "infiniband.reth.dmalen",
              "infiniband.invariant.crc"]
    args = ["-T", "fields", "-E", "separator=/t", "-E", "occurrence=a"]
    for f in fields:
        args += ["-e", f]
    p = subprocess.run([exe, "dump", "-r", str(path), *args], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout == tshark("-r", path, *args)


@pytest.mark.parametrize("group, name, frame", [
    ("mad", "perfquery.pcap", 1), ("mad", "saquery-nr.pcap", 1),
    ("mad", "saquery-pir.pcap", 1)])
def test_crcs_wireshark_omits(group, name, frame):
    """After PerfMgt MADs and SA NodeRecord/PortInfoRecord MADs Wireshark 4.0 shows no
    Invariant/Variant CRC; both are on the wire and good (ibwire shows and checks them)."""
    path = capture(group, name)
    args = ["-Y", f"frame.number == {frame}", "-T", "fields",
            "-e", "infiniband.invariant.crc", "-e", "infiniband.variant.crc"]
    assert lines(tshark("-r", path, *args))[0].split("\t")[0] == ""   # no ICRC shown
    rc, out, _ = run_cli("dump", "-r", path, *args, "-e", "infiniband.invariant.crc.status",
                         "-e", "infiniband.variant.crc.status")
    icrc, vcrc, icrc_ok, vcrc_ok = lines(out)[0].split("\t")
    assert (icrc_ok, vcrc_ok) == ("1", "1") and _crcs_hidden(
        list(ibwire.read(path))[frame - 1])
    assert icrc.startswith("0x") and len(icrc) == 10 and len(vcrc) == 6


class _SilentOracle:
    """An oracle whose tshark printed nothing at all."""

    def __init__(self, names: list[str], frames: int) -> None:
        self.names = names
        self.frames = frames

    def get(self, path: Path) -> tuple[list[str], list[dict[str, str]]]:
        return [], [{} for _ in range(self.frames)]


def test_differences_both_ways_are_found():
    """compare() reports a value ibwire prints where tshark prints none, and lets
    through only the pinned one-way Wireshark mistakes."""
    path = PCAPS / "rc_clean_roce2.pcap"
    frames = list(ibwire.read(path))
    names = ["infiniband.bth.psn", "infiniband.invariant.crc", "infiniband.bth.opcode"]
    bad, unknown = compare(path, _SilentOracle(names, len(frames)))
    assert unknown == []
    assert sorted(bad) == sorted(names)                      # every frame, both fields
    assert len(bad["infiniband.bth.psn"]) == len(frames)
    assert bad["infiniband.bth.psn"][0] == (1, "", str(frames[0]["infiniband.bth.psn"]))
    cnp = ibwire.decode(ibwire.encode(LRH(dlid=1, slid=2), BTH(opcode=0x81, destqp=5),
                                      payload=bytes(16)), "ib")
    assert one_way_ok("infiniband.invariant.crc", cnp)       # pinned: CNP
    assert not one_way_ok("infiniband.invariant.crc", frames[0])
    assert not one_way_ok("infiniband.bth.psn", cnp)
