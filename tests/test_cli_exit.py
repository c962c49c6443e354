"""Exit status (0 ok / 1 bad input / 2 bad usage), error lines, closed pipes.

Most run the real `ibwire` console script in a subprocess: exit codes, stderr and
EPIPE are properties of the process, not of main().
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from test_cli_common import capture, lines, run_cli

import ibwire
from ibwire import BTH, ETHERNET, IPV4, UDP
from ibwire.capture import PcapngWriter, PcapWriter

CM = ("public", "roce-v2-rxe-cm-write-read.pcap")


def ibwire_exe() -> str:
    exe = shutil.which("ibwire")
    if exe is None:
        pytest.skip("the ibwire console script is not installed (pip install -e .)")
    return exe


def run(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([ibwire_exe(), *map(str, args)], capture_output=True, text=True)


def test_ok_exit_0():
    p = run("dump", "-r", capture(*CM), "-c", "3")
    assert p.returncode == 0 and p.stderr == ""
    assert len(lines(p.stdout)) == 3
    assert "\x1b[" not in p.stdout, "no escape codes when piped"


def test_tshark_flags_without_command():
    rc, out, _ = run_cli("-r", capture(*CM), "-c", "2", "-T", "fields", "-e", "frame.number")
    assert rc == 0 and out == "1\n2\n"


def test_truncated_file_exit_1_after_good_packets(tmp_path):
    src = capture(*CM).read_bytes()
    bad = tmp_path / "cut.pcap"
    bad.write_bytes(src[:1000])
    p = run("dump", "-r", bad)
    assert p.returncode == 1
    # 24-byte file header + two 338-byte records: the third is cut at byte 1000.
    assert len(lines(p.stdout)) == 2, "the records before the damage are printed"
    err = lines(p.stderr)
    assert len(err) == 1 and "Traceback" not in p.stderr
    assert err[0].startswith(f"ibwire: {bad}: record 2 at byte offset 700: ")
    assert err[0].endswith("(2 records read)")


def test_not_a_capture_exit_1(tmp_path):
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"hello, this is not a capture file\n")
    p = run("dump", "-r", junk)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr == (f"ibwire: {junk}: not a capture file (pcap, pcapng, ERF or gzip of "
                        "these): first bytes 68 65 6c 6c\n")


def test_missing_file_exit_1(tmp_path):
    p = run("dump", "-r", tmp_path / "nope.pcap")
    assert p.returncode == 1 and p.stderr.startswith("ibwire: ") and len(lines(p.stderr)) == 1


def _pkt() -> bytes:
    return ibwire.encode(ETHERNET(), IPV4(src="10.0.0.1", dst="10.0.0.2"), UDP(),
                         BTH(opcode=0x04, destqp=5, psn=9), payload=b"x" * 8)


def test_unknown_linktype_pcap_exit_1(tmp_path):
    path = tmp_path / "lt.pcap"
    w = PcapWriter(path, 9999)
    w.write(_pkt(), ts_ns=10**18)
    w.close()
    p = run("dump", "-r", path)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr == "ibwire: unknown link type 9999 at record 0 (byte offset 24)\n"


def test_unknown_linktype_pcapng_interface_is_listed(tmp_path):
    path = tmp_path / "mixed.pcapng"
    w = PcapngWriter(path)
    good, odd = w.add_interface(1), w.add_interface(9999)
    w.write(_pkt(), ts_ns=10**18, interface=good)
    w.write(_pkt(), ts_ns=10**18 + 1000, interface=odd)
    w.write(_pkt(), ts_ns=10**18 + 2000, interface=good)
    w.close()
    rc, out, err = run_cli("dump", "-r", path, "-T", "fields", "-e", "frame.number",
                           "-e", "infiniband.bth.psn")
    assert rc == 0
    assert lines(out) == ["1\t9", "2\t", "3\t9"]
    assert err.count("unknown link type 9999") == 1


@pytest.mark.parametrize("args,needle", [
    (["dump", "--bogus"], "unrecognized arguments: --bogus"),
    (["dump", "-r", "x.pcap", "-T", "pdml"], '-T: invalid output format "pdml"'),
    (["dump", "-r", "x.pcap", "-c", "many"], "argument -c: invalid int value: 'many'"),
    (["dump", "-r", "x.pcap", "-T", "fields"], "no fields were specified with -e"),
    (["dump", "-r", "x.pcap", "-z", "bogus,stat"], 'invalid -z argument "bogus,stat"'),
    (["dump"], "no capture file given"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_usage_errors_exit_2(args, needle):
    p = run(*args)
    assert p.returncode == 2 and p.stdout == ""
    err = lines(p.stderr)
    assert len(err) == 2 and "Traceback" not in p.stderr
    assert err[0].startswith("ibwire: ") and needle in err[0]
    assert err[1].startswith("usage: ibwire")


def test_bad_filter_exit_2_subprocess():
    p = run("dump", "-r", capture(*CM), "-Y", "infiniband.bth.psn == ")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == "ibwire: Unexpected end of filter expression.\n"


def test_closed_pipe_is_quiet():
    """`ibwire dump big.pcap | head -1`: exit 0, nothing on stderr."""
    exe = ibwire_exe()
    path = capture("rxe", "d2_send_rnr_slowrx.wire.pcap")
    p = subprocess.run(["bash", "-c", f'"{exe}" dump -r "{path}" | head -1; '
                        'echo "status=${PIPESTATUS[0]}" >&2'],
                       capture_output=True, text=True)
    assert len(lines(p.stdout)) == 1
    assert p.stderr == "status=0\n"


def test_pipe_with_fields_and_json_closed_early():
    exe = ibwire_exe()
    path = capture("rxe", "d2_send_rnr_slowrx.wire.pcap")
    for fmt in ("-T fields -e frame.number", "-T json", "-V"):
        p = subprocess.run(["bash", "-c", f'"{exe}" dump -r "{path}" {fmt} | head -3 '
                            '>/dev/null; echo "status=${PIPESTATUS[0]}" >&2'],
                           capture_output=True, text=True)
        assert p.stderr == "status=0\n", fmt


def test_write_to_unwritable_is_error(tmp_path):
    rc, _, err = run_cli("dump", "-r", capture(*CM), "-w", tmp_path / "no" / "dir" / "x.pcap")
    assert rc == 1 and err.startswith("ibwire: ") and "Traceback" not in err


def test_header_only_pcap_is_empty_ok(tmp_path):
    path = tmp_path / "empty.pcap"
    path.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    p = run("dump", "-r", path)
    assert p.returncode == 0 and p.stdout == "" and p.stderr == ""


@pytest.mark.parametrize("argv", [["stats"], ["dump", "-q", "-z", "io,phs"]])
def test_ctrl_c_reports_what_was_read(monkeypatch, argv):
    """Ctrl-C while reading: the statistics of the frames read so far, then status 130."""
    import ibwire.cli.reader as reader

    real = reader.open_capture

    def interrupted(path):
        def frames():
            for i, frame in enumerate(real(path)):
                if i == 3:
                    raise KeyboardInterrupt
                yield frame
        return frames()

    monkeypatch.setattr(reader, "open_capture", interrupted)
    monkeypatch.setenv("IBWIRE_PER_PACKET", "1")   # the streaming reader is interrupted
    rc, out, err = run_cli(*argv, capture(*CM))
    assert rc == 130 and err == ""
    assert "frames:3 " in out
