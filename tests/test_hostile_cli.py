"""The CLI on hostile input: no traceback on any file, every frame accounted for
(`stats`: frames read = decoded + malformed; `dump -q -z expert`: one Malformed item
per decoder problem), one stderr line and exit 1 for a broken file with the good
packets printed first, and no filter or field name that runs code."""

from __future__ import annotations

import io
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fuzz_strategies import SCALE, build_capture, capture_seeds, packet_seeds, with_field
from test_fuzz_capture import random_capture
from test_fuzz_dfilter import hostile_filters
from test_hostile_captures import GZIP_CUT, capture, packet_records

from ibwire import decode
from ibwire.capture import CaptureError, check_linktype, open_capture

main = pytest.importorskip("ibwire.cli.main").main
CLI_FILES = 150 * SCALE
EXPERT_ROW = re.compile(r"^\s*(\d+)\s+Malformed\s+\S+\s+Malformed (\S+): (.*)$")


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    """The CLI in this process: (status, stdout, stderr); an exception is an escape."""
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def truth(data: bytes, skipped: list | None = None) -> tuple[list, str | None]:
    """(decoded packets, error line) the way the library sees the file; the damaged
    regions it stepped over are appended to `skipped`."""
    pkts, error, cap = [], None, None
    try:
        with open_capture(io.BytesIO(data)) as cap:
            for fr in cap:
                if cap.format != "pcapng":
                    check_linktype(fr)
                pkts.append(decode(fr.data, fr.linktype))
    except CaptureError as exc:
        error = str(exc)
    except ValueError as exc:  # UnknownLinkTypeError
        error = str(exc)
    if skipped is not None and cap is not None:
        skipped.extend(cap.skipped)
    return pkts, error


def stat(text: str, label: str) -> int:
    m = re.search(rf"^\s*{label}:\s+(\d+)", text, re.M)
    assert m, f"no {label!r} in stats output"
    return int(m.group(1))


def test_mutated_captures_every_frame_is_accounted_for(tmp_path: Path, capsys):
    """stats and `dump -q -z expert` on mutated files agree with the library, frame by
    frame: read = clean + malformed, and one expert item per problem."""
    rng = random.Random(0x1B_0C11)
    seeds = capture_seeds()
    frames_seen = 0
    for i in range(CLI_FILES):
        _seed, ops, data, _plain = random_capture(rng, seeds)
        path = tmp_path / f"m{i}.cap"
        path.write_bytes(data)
        skipped: list = []
        pkts, error = truth(data, skipped)
        want_err = "" if error is None else f"ibwire: {error.replace('<stream>', str(path))}\n"
        if skipped:
            # Regions the reader stepped over: one warning each, then the error that
            # ended the file or else a summary line.
            lost = sum(s.length for s in skipped)
            if error is None:
                error = f"{path}: {len(skipped)} damaged region(s) ({lost} bytes) skipped"
                want_err = f"ibwire: {error}; the records around them were read\n"
            want_err = "".join(
                f"ibwire: warning: {path}: skipped {s.length} damaged bytes at byte offset "
                f"{s.offset} (before record {s.index}): {s.reason}\n" for s in skipped) + \
                want_err
        code, out, err = run(["stats", str(path)], capsys)
        assert (code, err) == (1 if error else 0, want_err), ops
        if not error or "records read" in error or skipped:
            assert stat(out, "Packets") == len(pkts), ops
            assert stat(out, "Malformed packets") == sum(1 for p in pkts if p.problems), ops
        code, out, err = run(["dump", "-q", "-z", "expert", str(path)], capsys)
        assert (code, err) == (1 if error else 0, want_err), ops
        rows = [EXPERT_ROW.match(line) for line in out.splitlines()]
        items = sorted((m.group(2), m.group(3), int(m.group(1))) for m in rows if m)
        want: dict[tuple[str, str], int] = {}
        for p in pkts:
            for m in p.problems:
                want[(m.layer, m.reason)] = want.get((m.layer, m.reason), 0) + 1
        assert items == sorted((k[0], k[1], n) for k, n in want.items()), ops
        frames_seen += len(pkts)
    print(f"CLI accounting: {CLI_FILES} mutated files, {frames_seen} frames, all accounted for")


@pytest.mark.parametrize("argv", [["-V"], ["-x"], ["-T", "json"], ["-T", "ek"],
                                  ["-T", "fields", "-e", "frame.number", "-e",
                                   "ibwire.malformed", "-e", "infiniband.bth.psn"],
                                  ["-Y", "infiniband.bth.psn > 3 or ibwire.malformed"],
                                  ["-q", "-z", "ib,opcodes", "-z", "conv,qp", "-z", "io,phs"]])
def test_every_output_mode_survives_mutated_captures(tmp_path: Path, capsys, argv):
    rng = random.Random(len(" ".join(argv)))
    seeds = capture_seeds()
    for i in range(25 * SCALE):
        _seed, ops, data, _plain = random_capture(rng, seeds)
        path = tmp_path / f"m{i}.cap"
        path.write_bytes(data)
        code, _out, err = run(["dump", *argv, str(path)], capsys)
        assert code in (0, 1) and "Traceback" not in err, (ops, err)
        assert err.count("\n") <= 1 + err.count("warning:"), err


# -- exact messages for broken files -------------------------------------------------
def _broken_cases() -> list[tuple[str, bytes]]:
    """Record 4 damaged: ends mid header, mid body (mid pcapng block), corrupt length."""
    out = []
    for kind in ("pcap-le-us", "pcap-be-ns", "pcapng-le", "pcapng-be", "erf"):
        seed = capture(kind)
        off, _ = packet_records(seed)[4]
        key, bad = {"pcap": (("pcap_record", "incl_len"), 0xFFFFFFFF),
                    "pcapng": (("pcapng_block", "total_length"), 7),
                    "erf": (("erf_record", "rlen"), 7)}[kind.split("-")[0]]
        out += [(f"{kind}-mid-header", seed.data[:off + 5]),
                (f"{kind}-mid-body", seed.data[:off + 40]),
                (f"{kind}-corrupt-length", with_field(seed, key, off, bad))]
    return out


@pytest.mark.parametrize("name, data", _broken_cases(), ids=[c[0] for c in _broken_cases()])
def test_cli_broken_file_one_line_and_exit_1_after_the_good_packets(tmp_path: Path, capsys,
                                                                     name, data):
    path = tmp_path / f"{name}.cap"
    path.write_bytes(data)
    skipped: list = []
    pkts, error = truth(data, skipped)
    if skipped:
        # The reader stepped over the damage: every record around it is shown, each
        # skipped region is a warning, and the run still ends as a bad input file.
        assert error is None and len(pkts) > 4
        code, out, err = run(["dump", str(path)], capsys)
        assert code == 1
        lost = sum(s.length for s in skipped)
        assert err.splitlines() == [
            *(f"ibwire: warning: {path}: skipped {s.length} damaged bytes at byte offset "
              f"{s.offset} (before record {s.index}): {s.reason}" for s in skipped),
            f"ibwire: {path}: {len(skipped)} damaged region(s) ({lost} bytes) skipped; the "
            "records around them were read"]
        assert [int(line.split()[0]) for line in out.splitlines()] == \
            list(range(1, len(pkts) + 1))
        return
    assert error is not None and len(pkts) == 4
    code, out, err = run(["dump", str(path)], capsys)
    assert code == 1
    assert err == f"ibwire: {error.replace('<stream>', str(path))}\n"
    lines = out.splitlines()
    assert [int(line.split()[0]) for line in lines] == [1, 2, 3, 4]


@pytest.mark.parametrize("name, data, message", [
    ("empty", b"", "empty file"),
    ("text", b"not a capture\n", "not a capture file (pcap, pcapng, ERF or gzip of these): "
     "first bytes 6e 6f 74 20"),
    ("elf", b"\x7fELF" + bytes(60), "not a capture file (pcap, pcapng, ERF or gzip of these): "
     "first bytes 7f 45 4c 46"),
    ("png", b"\x89PNG\r\n\x1a\n" + bytes(40), "not a capture file (pcap, pcapng, ERF or gzip "
     "of these): first bytes 89 50 4e 47"),
])
def test_cli_not_a_capture(tmp_path: Path, capsys, name, data, message):
    path = tmp_path / f"{name}.pcap"
    path.write_bytes(data)
    code, out, err = run(["dump", str(path)], capsys)
    assert (code, out, err) == (1, "", f"ibwire: {path}: {message}\n")


def test_cli_gzip_truncated(tmp_path: Path, capsys):
    import gzip

    seed = capture("pcap-le-us")
    packed = gzip.compress(seed.data, mtime=0)
    path = tmp_path / "cut.pcap.gz"
    path.write_bytes(packed[:int(len(packed) * 0.9)])
    pkts, error = truth(path.read_bytes())
    assert error is not None and GZIP_CUT in error
    code, out, err = run(["dump", str(path)], capsys)
    assert (code, err) == (1, f"ibwire: {error.replace('<stream>', str(path))}\n")
    assert len(out.splitlines()) == len(pkts)


def test_cli_subprocess_broken_file_no_traceback(tmp_path: Path):
    """The real process: exit status 1, one stderr line, the good packets on stdout."""
    seed = capture("pcapng-le")
    off, _ = packet_records(seed)[4]
    path = tmp_path / "cut.pcapng"
    path.write_bytes(seed.data[:off + 5])
    res = subprocess.run([sys.executable, "-m", "ibwire.cli.main", "dump", str(path)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    assert res.stderr == (f"ibwire: {path}: record 4 at byte offset {off}: truncated block "
                          "header: 5 of 8 bytes (4 records read)\n")
    assert len(res.stdout.splitlines()) == 4


# -- filters and field names never execute ----------------------------------------------
def test_cli_filters_and_field_names_never_execute(tmp_path: Path, capsys):
    sentinel = tmp_path / "executed"
    path = tmp_path / "ok.pcap"
    frames = [s.data for s in packet_seeds(False) if s.encap == "eth"][:3]
    path.write_bytes(build_capture("pcap-le-us", frames, 1).data)
    for text in hostile_filters(sentinel):
        for argv in (["dump", "-Y", text, str(path)],
                     ["dump", "-T", "fields", "-e", text, str(path)],
                     ["stats", "-z", f"io,stat,1,{text}", str(path)],
                     ["fields", "--filter", text]):
            code, _out, err = run(argv, capsys)
            assert code in (0, 2) and "Traceback" not in err, (argv, err)
            assert not sentinel.exists(), f"executed: {argv}"


# -- interrupted runs ------------------------------------------------------------------
@pytest.mark.parametrize("argv", [["stats"], ["dump", "-q", "-z", "io,phs"]])
def test_sigint_mid_file_prints_the_statistics_of_what_was_read(tmp_path: Path, capsys,
                                                                monkeypatch, argv):
    """Ctrl-C after three frames: exit 130, no traceback, the statistics of those three
    (tools/bench_hugefile.py does the same with a real SIGINT on a huge file)."""
    import ibwire.cli.reader as reader

    real = reader.open_capture

    def interrupted(path):
        cap = real(path)

        def frames():
            for i, frame in enumerate(cap):
                if i == 3:
                    raise KeyboardInterrupt
                yield frame
        return frames()

    monkeypatch.setattr(reader, "open_capture", interrupted)
    monkeypatch.setenv("IBWIRE_PER_PACKET", "1")   # the streaming reader is interrupted
    path = tmp_path / "big.pcap"
    path.write_bytes(capture("pcap-le-us").data)
    code, out, err = run([*argv, str(path)], capsys)
    assert code == 130 and err == ""
    assert "frames:3 " in out or re.search(r"Packets:\s+3$", out, re.M), out
