"""Summary lines, trees, hex dumps, JSON and the -T fields options, on crafted packets.

Packets of every opcode class and MAD kind are built with `ibwire.encode` into a
pcap (RoCEv2, Ethernet) and an ERF-in-pcap (native InfiniBand, as ibdump writes);
the summary lines must equal `tests/expected/summary_*.txt`.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from test_cli_common import EXPECTED, capture, lines, run_cli

import ibwire
from ibwire import (
    AETH,
    BTH,
    CNP_PAD,
    DETH,
    ERF,
    ETHERNET,
    GRH,
    IETH,
    IPV4,
    LINK,
    LRH,
    RDETH,
    RETH,
    UDP,
    XRCETH,
    AtomicAckETH,
    AtomicETH,
    ImmDt,
)
from ibwire.capture import PcapWriter, erf_ts_from_ns

T0 = 1_700_000_000_000_000_000
MAC = dict(dst="02:00:00:00:00:02", src="02:00:00:00:00:01")


def roce2(*headers, payload=b"", reply=False):
    src, dst = ("10.0.0.2", "10.0.0.1") if reply else ("10.0.0.1", "10.0.0.2")
    return ibwire.encode(ETHERNET(**MAC), IPV4(src=src, dst=dst), UDP(srcport=49152),
                         *headers, payload=payload)


TRANSPORT = [
    roce2(BTH(opcode=0x00, destqp=0x11, psn=1), payload=b"a" * 64),
    roce2(BTH(opcode=0x01, destqp=0x11, psn=2), payload=b"b" * 64),
    roce2(BTH(opcode=0x03, destqp=0x11, psn=3), ImmDt(data=0x1234), payload=b"c" * 10),
    roce2(BTH(opcode=0x06, destqp=0x11, psn=12), RETH(va=0x1000, r_key=7, dmalen=8192),
          payload=b"d" * 64),
    roce2(BTH(opcode=0x0A, destqp=0x11, psn=13), RETH(va=0x1000, r_key=7, dmalen=8),
          payload=b"e" * 8),
    roce2(BTH(opcode=0x0C, destqp=0x11, psn=14), RETH(va=0x1000, r_key=7, dmalen=4096)),
    roce2(BTH(opcode=0x0D, destqp=0x22, psn=14), AETH(syndrome=0x1F, msn=4),
          payload=b"f" * 64, reply=True),
    roce2(BTH(opcode=0x0F, destqp=0x22, psn=15), AETH(syndrome=0x1F, msn=5),
          payload=b"g" * 64, reply=True),
    roce2(BTH(opcode=0x11, destqp=0x22, psn=15), AETH(syndrome=0x1F, msn=5), reply=True),
    roce2(BTH(opcode=0x11, destqp=0x22, psn=16), AETH(syndrome=0x60, msn=5), reply=True),
    roce2(BTH(opcode=0x11, destqp=0x22, psn=16), AETH(syndrome=0x20 | 12, msn=5),
          reply=True),
    roce2(BTH(opcode=0x11, destqp=0x22, psn=16), AETH(syndrome=0x62, msn=5), reply=True),
    roce2(BTH(opcode=0x13, destqp=0x11, psn=17),
          AtomicETH(va=0x2000, r_key=9, swapdt=1, cmpdt=0)),
    roce2(BTH(opcode=0x14, destqp=0x11, psn=18),
          AtomicETH(va=0x2000, r_key=9, swapdt=5, cmpdt=0)),
    roce2(BTH(opcode=0x12, destqp=0x22, psn=18), AETH(syndrome=0x1F, msn=6),
          AtomicAckETH(origremdt=41), reply=True),
    roce2(BTH(opcode=0x17, destqp=0x11, psn=19), IETH(r_key=0x77), payload=b"h" * 4),
    roce2(BTH(opcode=0x24, destqp=0x33, psn=20), payload=b"i" * 16),
    roce2(BTH(opcode=0x2A, destqp=0x33, psn=21), RETH(va=0x3000, r_key=3, dmalen=16),
          payload=b"j" * 16),
    roce2(BTH(opcode=0x64, destqp=0x44, psn=22), DETH(q_key=0x1111, srcqp=0x55),
          payload=b"k" * 16),
    roce2(BTH(opcode=0xA4, destqp=0x66, psn=23), XRCETH(xrcsrq=0x77), payload=b"l" * 16),
    roce2(BTH(opcode=0x44, destqp=0x88, psn=24), RDETH(eecnxt=9), DETH(q_key=1, srcqp=2),
          payload=b"m" * 16),
    roce2(BTH(opcode=0x81, destqp=0x11, psn=0), CNP_PAD(), reply=True),
]


def mad(mgmt_class: int, method: int, attr: int, *, version: int = 1, status: int = 0,
        dr: tuple[int, int] | None = None, tid: int = 0x1234) -> bytes:
    """A 256-byte MAD: the common header (and DR hop pointer/count), zeros after."""
    head = bytearray(struct.pack(">BBBBHHQHHI", 1, mgmt_class, version, method, status, 0,
                                 tid, attr, 0, 0))
    if dr is not None:
        head[6], head[7] = dr
    return bytes(head) + bytes(256 - len(head))


def _erf_ts(i: int) -> bytes:
    return erf_ts_from_ns(T0 + i * 1000).to_bytes(8, "little")


def native(mad_bytes: bytes, qp: int, *, dlid: int = 1, slid: int = 12, i: int = 0) -> bytes:
    erf = ERF(type=21, vlen=1, ts_raw=_erf_ts(i))
    lrh = LRH(vl=15 if qp == 0 else 0, dlid=dlid, slid=slid)
    deth = DETH(q_key=0 if qp == 0 else 0x80010000, srcqp=qp)
    return ibwire.encode(erf, lrh, BTH(opcode=0x64, destqp=qp, psn=100 + i), deth,
                         payload=mad_bytes)


MADS = [
    (mad(0x01, 0x01, 0x0011), 0), (mad(0x01, 0x81, 0x0011), 0),
    (mad(0x01, 0x02, 0x0015), 0), (mad(0x81, 0x01, 0x0015, dr=(1, 2)), 0),
    (mad(0x81, 0x81, 0x0010, dr=(2, 2)), 0), (mad(0x81, 0x02, 0x0012, dr=(1, 1)), 0),
    (mad(0x03, 0x12, 0x0035, version=2), 1), (mad(0x03, 0x92, 0x0035, version=2), 1),
    (mad(0x03, 0x01, 0x0001, version=2), 1), (mad(0x04, 0x01, 0x0012), 1),
    (mad(0x04, 0x81, 0x001D), 1), (mad(0x07, 0x03, 0x0010, version=2), 1),
    (mad(0x07, 0x03, 0x0013, version=2), 1), (mad(0x07, 0x03, 0x0014, version=2), 1),
    (mad(0x07, 0x03, 0x0012, version=2), 1), (mad(0x03, 0x81, 0x0035, version=2,
                                                   status=0x0C00), 1),
]


def write(path: Path, linktype: int, packets: list[bytes]) -> Path:
    w = PcapWriter(path, linktype)
    for i, data in enumerate(packets):
        w.write(data, ts_ns=T0 + i * 1000)
    w.close()
    return path


@pytest.fixture(scope="module")
def crafted(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("crafted")
    bad = bytearray(TRANSPORT[0])
    bad[-1] ^= 0xFF                       # ICRC
    reserved = roce2(BTH(opcode=0x1F, destqp=0x11, psn=25))
    cut = bytearray(ibwire.encode(ERF(type=21, vlen=1, ts_raw=_erf_ts(18)), LRH(dlid=4, slid=1),
                                  BTH(opcode=0x06, destqp=0x12, psn=8),
                                  RETH(va=0x1000, r_key=7, dmalen=64), payload=b"n" * 64))
    cut = cut[:16 + 30]
    cut[10:12] = (16 + 30).to_bytes(2, "big")    # ERF rlen
    cut[14:16] = (30).to_bytes(2, "big")         # ERF wlen: the record holds 30 bytes
    link = ibwire.encode(ERF(type=25, wlen=6, rlen=22, ts_raw=_erf_ts(16)),
                         LINK(op=0, fctbs=123, vl=0, fccl=456))
    grh = ibwire.encode(ERF(type=21, vlen=1, ts_raw=_erf_ts(17)), LRH(dlid=4, slid=1),
                        GRH(sgid="fe80::1", dgid="fe80::2"),
                        BTH(opcode=0x04, destqp=0x12, psn=7), payload=b"hello!!!")
    return {
        "transport": write(d / "transport.pcap", 1, [*TRANSPORT, bytes(bad), reserved]),
        "mad": write(d / "mad.pcap", 197, [native(m, qp, i=i) for i, (m, qp) in
                                           enumerate(MADS)] + [link, grh, bytes(cut)]),
    }


def _summary(path: Path) -> list[str]:
    rc, out, err = run_cli("dump", "-r", path)
    assert rc == 0, err
    return lines(out)


@pytest.mark.parametrize("kind", ["transport", "mad"])
def test_summary_lines(crafted, kind):
    got = _summary(crafted[kind])
    want = (EXPECTED / f"summary_{kind}.txt").read_text().split("\n")[:-1]
    assert got == want


def test_summary_matches_tshark_columns_on_mads():
    """Number, time, addresses, protocol, length and (for MADs) Info as tshark has them."""
    from test_cli_common import tshark
    path = capture("mad", "smpquery-nodeinfo.pcap")
    assert _summary(path) == lines(tshark("-r", path))


def test_tree_crc_and_fields(crafted):
    rc, out, _ = run_cli("dump", "-r", crafted["transport"], "-V", "-Y", "frame.number == 10")
    assert rc == 0
    text = out.split("\n")
    assert "InfiniBand" in text
    assert "    Base Transport Header" in text
    assert "        Opcode: RC Acknowledge (17)" in text
    assert "        0... .... = Solicited Event: False" in text
    assert "        ..00 .... = Pad Count: 0" in text
    assert "    ACK Extended Transport Header" in text
    assert "        .11. .... = Opcode: NAK (3)" in text
    assert "        ...0 0000 = Error Code: PSN Sequence Error (0)" in text
    assert any(ln.startswith("    Invariant CRC: 0x") and ln.endswith("[correct]")
               for ln in text)
    rc, out, _ = run_cli("dump", "-r", crafted["transport"], "-V", "-Y", "frame.number == 23")
    assert any(ln.endswith("[incorrect]") for ln in out.split("\n"))


def test_O_expands_only_named_protocols():
    path = capture("public", "roce-v2-rxe-cm-write-read.pcap")
    rc, out, _ = run_cli("dump", "-r", path, "-O", "infiniband", "-Y", "frame.number == 5")
    text = lines(out)
    assert text[:5] == [
        "Frame 5: 62 bytes on wire (496 bits), 62 bytes captured (496 bits)",
        "Ethernet II, Src: 52:54:00:8b:2d:12, Dst: 52:54:00:da:f9:2d",
        "Internet Protocol Version 4, Src: 192.168.2.24, Dst: 192.168.2.25",
        "User Datagram Protocol, Src Port: 57236, Dst Port: 4791",
        "InfiniBand"]
    assert "    Invariant CRC: 0x884e6b4a [unverified]" in text or \
        "    Invariant CRC: 0x884e6b4a [correct]" in text
    assert text[-1] == ""


def test_hexdump_like_tshark():
    from test_cli_common import tshark
    for where in (("public", "roce-v2-rxe-cm-write-read.pcap"), ("mad", "sminfo.pcap")):
        path = capture(*where)
        rc, out, _ = run_cli("dump", "-r", path, "-x")
        assert rc == 0 and out == tshark("-r", path, "-x")


def test_json_shape(crafted):
    rc, out, _ = run_cli("dump", "-r", crafted["transport"], "-T", "json", "-c", "6")
    docs = json.loads(out)
    assert len(docs) == 6
    layers = docs[3]["_source"]["layers"]
    assert list(layers) == ["frame", "eth", "ip", "udp", "infiniband", "data"]
    ib = layers["infiniband"]
    assert ib["infiniband.bth_tree"]["infiniband.bth.opcode"] == "6"
    assert ib["infiniband.bth_tree"]["infiniband.bth.destqp"] == "0x000011"
    assert ib["infiniband.reth_tree"]["infiniband.reth.dmalen"] == "8192"
    assert ib["infiniband.bth"].count(":") == 11
    assert docs[0]["_index"].startswith("packets-") and docs[0]["_score"] is None
    rc, out, _ = run_cli("dump", "-r", crafted["transport"], "-T", "json", "-c", "1",
                         "-e", "frame.number", "-e", "infiniband.bth.psn")
    assert json.loads(out)[0]["_source"]["layers"] == {"frame.number": ["1"],
                                                       "infiniband.bth.psn": ["1"]}


def test_ek_shape(crafted):
    rc, out, _ = run_cli("dump", "-r", crafted["transport"], "-T", "ek", "-c", "2")
    rows = lines(out)
    assert len(rows) == 4
    import time
    day = time.strftime("%Y-%m-%d", time.localtime(T0 // 10**9))   # tshark: local date
    assert json.loads(rows[0]) == {"index": {"_index": f"packets-{day}", "_type": "doc"}}
    doc = json.loads(rows[1])
    assert doc["timestamp"] == "1700000000000"
    ib = doc["layers"]["infiniband"]
    assert ib["infiniband_infiniband_bth_psn"] == "1"
    assert ib["infiniband_infiniband_bth_se"] is False


def test_fields_options():
    path = capture("public", "roce-v2-rxe-cm-write-read.pcap")
    base = ["dump", "-r", path, "-c", "7", "-T", "fields", "-e", "frame.number",
            "-e", "infiniband.bth.psn", "-e", "ip.addr"]
    rc, out, _ = run_cli(*base, "-E", "header=y", "-E", "separator=,", "-E", "quote=d",
                         "-E", "occurrence=f")
    assert lines(out)[:2] == ["frame.number,infiniband.bth.psn,ip.addr",
                              '"1","82","192.168.2.25"']
    rc, out, _ = run_cli(*base, "-E", "separator=/s", "-E", "aggregator=/s",
                         "-E", "occurrence=l")
    assert lines(out)[3] == "4 12726936 192.168.2.24"
    rc, out, _ = run_cli(*base, "-E", "aggregator=;")
    assert lines(out)[3] == "4\t12726936\t192.168.2.25;192.168.2.24"
    rc, _, err = run_cli(*base, "-E", "occurrence=x")
    assert rc == 2 and "occurrence" in err


def test_unknown_field_prints_empty_with_warning():
    path = capture("public", "roce-v2-rxe-cm-write-read.pcap")
    rc, out, err = run_cli("dump", "-r", path, "-c", "2", "-T", "fields", "-e", "frame.number",
                           "-e", "infiniband.nosuch")
    assert rc == 0 and lines(out) == ["1\t", "2\t"]
    assert "infiniband.nosuch" in err


def test_write_displayed_frames(tmp_path):
    path = capture("public", "roce-v2-rxe-cm-write-read.pcap")
    for name in ("acks.pcap", "acks.pcapng"):
        out_path = tmp_path / name
        rc, out, _ = run_cli("dump", "-r", path, "-Y", "infiniband.aeth", "-w", out_path)
        assert rc == 0 and out == ""
        rc, out, _ = run_cli("dump", "-r", out_path, "-T", "fields", "-e", "frame.number",
                             "-e", "infiniband.bth.psn", "-e", "frame.time_epoch")
        assert lines(out) == ["1\t12726936\t1766338145.518079000",
                              "2\t12726937\t1766338145.518792000",
                              "3\t12726940\t1766338145.518814000"]
        head = out_path.read_bytes()[:4]
        assert head == (b"\x0a\x0d\x0d\x0a" if name.endswith("pcapng") else
                        b"\x4d\x3c\xb2\xa1")


def test_decode_as_other_port(tmp_path):
    pkt = ibwire.encode(ETHERNET(**MAC), IPV4(src="10.0.0.1", dst="10.0.0.2"),
                        UDP(srcport=1000, dstport=4792), BTH(opcode=0x04, destqp=5, psn=9),
                        payload=b"x" * 8)
    path = write(tmp_path / "port.pcap", 1, [pkt])
    rc, out, _ = run_cli("dump", "-r", path)
    assert rc == 0 and " UDP " in out
    rc, out, _ = run_cli("dump", "-r", path, "-d", "udp.port==4792,infiniband")
    assert rc == 0 and "RRoCE 66 RC Send Only QP=0x000005 PSN=9" in out
    for bad in ("udp.port==4792,http", "tcp.port==4792,infiniband", "udp.port:4792"):
        rc, out, err = run_cli("dump", "-r", path, "-d", bad)
        assert rc == 2 and out == "" and err.startswith("ibwire: -d:")


def test_color_only_when_asked_or_on_a_tty(crafted):
    rc, out, _ = run_cli("dump", "-r", crafted["transport"], "-c", "12")
    assert "\x1b[" not in out
    rc, out, _ = run_cli("dump", "-r", crafted["transport"], "-c", "12", "--color")
    assert "\x1b[" in out
    plain = [ln for ln in lines(out) if "PSN Sequence Error" in ln][0]
    assert plain.startswith("\x1b[") and plain.endswith("\x1b[0m"), "NAK lines are styled"


def test_progress_stays_off_without_a_tty(capsys):
    from ibwire.cli.output import Progress
    bar = Progress(10**9, enabled=True)
    assert not bar.enabled      # stderr is captured here, so not a terminal
    for i in range(1000):
        bar.update(i)
    bar.close()
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("mode", [[], ["-V"], ["-O", "infiniband"], ["-x"], ["-T", "json"],
                                  ["-T", "ek"], ["-P", "-V", "-x"], ["-t", "ad"], ["-t", "e"],
                                  ["-q", "-z", "conv,qp", "-z", "endpoints,ib", "-z", "ib,mad",
                                   "-z", "expert", "-z", "ib,opcodes", "-z", "conv,eth"]])
def test_every_mode_on_every_kind(crafted, mode):
    for path in (*crafted.values(), capture("mad", "saquery-pr.pcap"),
                 capture("public", "roce-v2-huawei-send-imm.pcap")):
        rc, out, err = run_cli("dump", "-r", path, *mode)
        assert rc == 0 and "Traceback" not in err and out


def test_fields_speed_5000_packets():
    """-T fields over a 5,681-packet capture: seconds, not minutes (no per-field O(n²))."""
    import time
    path = capture("rxe", "d2_send_rnr_slowrx.wire.pcap")
    start = time.monotonic()
    rc, out, _ = run_cli("dump", "-r", path, "-T", "fields", "-e", "frame.number",
                         "-e", "infiniband.bth.psn", "-e", "infiniband.aeth.syndrome",
                         "-e", "ip.src", "-e", "frame.protocols")
    assert rc == 0 and len(lines(out)) == 5681
    assert time.monotonic() - start < 30


def test_presentation_never_raises_on_damaged_packets():
    """Damaged packets (cut, bytes changed, junk appended) through every presentation
    path: summary, tree, hex, JSON, ek, every registered field, every -z collector."""
    import random

    from ibwire.capture import read_capture
    from ibwire.cli.columns import columns
    from ibwire.cli.fields_out import FieldsOptions, FieldsWriter
    from ibwire.cli.frames import FrameInfo, frame_lengths
    from ibwire.cli.jsonout import JsonWriter, ek_lines
    from ibwire.cli.reader import load_decoders
    from ibwire.cli.stats import parse_z
    from ibwire.cli.tree import hexdump, tree_lines
    from ibwire.fields import REGISTRY

    load_decoders()
    rnd = random.Random(5)
    frames = [f for where in (("public", "roce-v2-rxe-cm-write-read.pcap"),
                              ("mad", "saquery-pr.pcap"), ("mad", "sminfo.pcap"),
                              ("rxe", "d1_send_rnr.wire.pcap"))
              for f in read_capture(capture(*where))[:60]]
    writer = FieldsWriter(REGISTRY.names(), FieldsOptions())
    stats = [parse_z(z) for z in ("io,phs", "conv,qp", "endpoints,ib", "ib,mad",
                                  "ib,opcodes", "expert", "io,stat,0.001", "ib,summary")]
    for n in range(400):
        frame = rnd.choice(frames)
        data = bytearray(frame.data)
        if n % 3 == 0:
            data = data[:rnd.randrange(len(data) + 1)]
        elif n % 3 == 1:
            for _ in range(rnd.randrange(1, 6)):
                data[rnd.randrange(len(data))] = rnd.randrange(256)
        else:
            data += bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 40)))
        pkt = ibwire.decode(bytes(data), frame.linktype)
        length, cap_len = frame_lengths(pkt, len(data), len(data), frame.linktype)
        info = FrameInfo(n + 1, frame.ts_ns, 0, 0, length, cap_len, frame.linktype, 0, 0,
                         pkt=pkt)
        columns(info).line()
        tree_lines(info, pkt)
        hexdump(info, pkt)
        JsonWriter(None).packet(info, pkt)
        ek_lines(info, pkt, None)
        writer.row(info, pkt)
        for st in stats:
            st.feed(info, pkt)
    for st in stats:
        st.lines()


def test_tree_of_a_nak_is_the_expected_text(crafted):
    rc, out, _ = run_cli("dump", "-r", crafted["transport"], "-V", "-Y", "frame.number == 10")
    assert rc == 0
    assert out == (EXPECTED / "tree_nak.txt").read_text()
