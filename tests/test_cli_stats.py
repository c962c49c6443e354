"""`-z` statistics and `ibwire stats` / `ibwire fields`."""

from __future__ import annotations

import subprocess

import pytest
from test_cli_common import capture, lines, need_tshark, run_cli, tshark

CM = ("public", "roce-v2-rxe-cm-write-read.pcap")
RNR = ("rxe", "d1_send_rnr.wire.pcap")


@pytest.mark.parametrize("where", [CM, ("public", "roce-v2-huawei-send-imm.pcap"),
                                   ("mad", "sminfo.pcap"), ("rxe", "e1_send_v6_clean.wire.pcap")])
def test_phs_is_tsharks(where):
    path = capture(*where)
    rc, out, _ = run_cli("dump", "-q", "-r", path, "-z", "io,phs")
    assert rc == 0 and out == tshark("-q", "-r", path, "-z", "io,phs")


def test_phs_filter_and_stats_see_every_frame():
    """-Y selects what is printed; -z sees every frame read (as in tshark)."""
    path = capture(*CM)
    args = ["-q", "-r", path, "-Y", "infiniband.aeth", "-z", "io,phs,infiniband"]
    rc, out, _ = run_cli("dump", *args)
    assert rc == 0 and out == tshark(*args)


def test_conv_qp_pairs_both_directions():
    rc, out, _ = run_cli("dump", "-q", "-r", capture(*CM), "-z", "conv,qp")
    rows = [ln for ln in lines(out) if "<->" in ln]
    assert len(rows) == 2
    data, mads = rows
    # A = 192.168.2.25 (first sender) uses QP 0x17; B = 192.168.2.24 uses QP 0x11.
    assert data.split()[:5] == ["192.168.2.25", "QP=0x000017", "<->", "192.168.2.24",
                                "QP=0x000011"]
    # <- (B to A): 5 frames 4398 bytes; -> (A to B): 2 frames 168 bytes; total 7 / 4566.
    assert data.split()[5:11] == ["5", "4398", "2", "168", "7", "4566"]
    assert data.split()[11] == "0.004454000"
    assert mads.split()[:5] == ["192.168.2.25", "QP=0x000001", "<->", "192.168.2.24",
                                "QP=0x000001"]


def test_conv_qp_on_rc_without_cm():
    rc, out, _ = run_cli("dump", "-q", "-r", capture(*RNR), "-z", "conv,qp")
    rows = [ln.split() for ln in lines(out) if "<->" in ln]
    assert rows == [["10.0.0.1", "QP=0x000020", "<->", "10.0.0.2", "QP=0x000020", "206",
                     "12772", "928", "1004096", "1134", "1016868", "0.030759000", "0.0888",
                     "90421424", "1150151"]]


def test_endpoints_ib_and_ip_agree_with_tshark_counts():
    path = capture(*RNR)
    rc, out, _ = run_cli("dump", "-q", "-r", path, "-z", "endpoints,ib")
    ours = {ln.split()[0]: ln.split()[1:] for ln in lines(out) if ln.startswith("10.")}
    assert ours["10.0.0.1"] == ["1134", "1016868", "928", "1004096", "206", "12772"]
    theirs = tshark("-q", "-r", path, "-z", "endpoints,ip,infiniband")
    row = next(ln.split() for ln in lines(theirs) if ln.startswith("10.0.0.1"))
    assert row[1:7] == ours["10.0.0.1"]


def test_opcode_histogram_counts_match_manifest():
    rc, out, _ = run_cli("dump", "-q", "-r", capture(*RNR), "-z", "ib,opcodes")
    counts = {ln.split()[1]: int(ln.split()[-3]) for ln in lines(out) if " 0x" in ln}
    # MANIFEST.md: 0 SEND_FIRST 232, 1 SEND_MIDDLE 464, 2 SEND_LAST 232, 17 ACK 206.
    assert counts == {"0x00": 232, "0x01": 464, "0x02": 232, "0x11": 206}


def test_mad_histogram_matches_manifest():
    rc, out, _ = run_cli("dump", "-q", "-r", capture("mad", "smpquery-pkeys.pcap"),
                         "-z", "ib,mad")
    rows = [ln.split() for ln in lines(out)]
    # MANIFEST.md: NodeInfo Get/GetResp 1 each, P_KeyTable Get/GetResp 2 each.
    assert ["0x01", "SubnMgmt(LID)", "6"] in rows
    assert ["0x01", "SubnGet", "0x0016", "P_KeyTable", "2"] in rows
    assert ["0x81", "SubnGetResp", "0x0011", "NodeInfo", "1"] in rows
    assert ["Total", "6"] in rows


def test_expert_groups_by_severity():
    rc, out, _ = run_cli("dump", "-q", "-r", capture(*RNR), "-z", "expert")
    # NAK/RNR items from the AETH; the others from the RC engine (infiniband.analysis):
    # 3 RNR retries whose resend runs repeat 128 packets (MANIFEST: 1134 - 1000 - 6).
    assert lines(out) == [
        "", "Warns (6)", "=============",
        "   Frequency      Group           Protocol  Summary",
        "           3   Sequence         InfiniBand  NAK: PSN Sequence Error",
        "           3   Sequence         InfiniBand  RC resend episode starts (rnr)",
        "", "Notes (134)", "=============",
        "   Frequency      Group           Protocol  Summary",
        "         128   Sequence         InfiniBand  RC retransmission",
        "           3   Sequence         InfiniBand  RNR NAK",
        "           3   Sequence         InfiniBand  RC retry after RNR NAK"]


def test_io_stat_with_filters():
    path = capture(*CM)
    rc, out, _ = run_cli("dump", "-q", "-r", path, "-z",
                         "io,stat,5,infiniband.bth.opcode==17,infiniband")
    rows = [ln for ln in lines(out) if "<>" in ln]
    assert rows == ["|  0 <>  5 |      1 |    62 |     11 |  5854 |",
                    "|  5 <> 10 |      0 |     0 |      0 |     0 |",
                    "| 10 <> Dur|      0 |     0 |      1 |   322 |"] or \
        [r.replace(" ", "") for r in rows] == ["|0<>5|1|62|11|5854|", "|5<>10|0|0|0|0|",
                                               "|10<>Dur|0|0|1|322|"]
    theirs = tshark("-q", "-r", path, "-z", "io,stat,5,infiniband.bth.opcode==17,infiniband")
    nums = [ln.split("|")[2:] for ln in lines(theirs) if "<>" in ln]
    assert [[c.strip() for c in n if c.strip()] for n in nums] == \
        [[c.strip() for c in r.split("|")[2:] if c.strip()] for r in rows]


def test_stats_command_default_set():
    rc, out, err = run_cli("stats", capture(*CM))
    assert rc == 0 and err == ""
    text = lines(out)
    for title in ("Capture Summary: ", "Protocol Hierarchy Statistics", "InfiniBand Opcodes",
                  "InfiniBand MADs", "InfiniBand QP Conversations", "Chats (5)"):
        assert any(ln.startswith(title) for ln in text), title
    assert "  Packets:             16" in text
    assert "  InfiniBand packets:  12 (RRoCE 12)" in text
    assert "  ICRC:                good 12" in text


def test_stats_command_with_z():
    rc, out, _ = run_cli("stats", "-r", capture(*CM), "-z", "ib,opcodes")
    assert rc == 0 and "InfiniBand Opcodes" in out and "Capture Summary" not in out


def test_fields_listing_like_tshark_G_fields():
    rc, out, _ = run_cli("fields", "--filter", "infiniband.lrh")
    ours = set(lines(out))
    need_tshark()
    theirs = subprocess.run(["tshark", "-G", "fields"], capture_output=True, text=True).stdout
    for name in ("infiniband.lrh.vl", "infiniband.lrh.pktlen", "infiniband.lrh.dlid"):
        row = next(ln for ln in theirs.splitlines() if f"\t{name}\t" in ln)
        ours_row = next(ln for ln in ours if f"\t{name}\t" in ln)
        # Label wording is ibwire's; name, type, protocol, base and mask are tshark's.
        assert ours_row.split("\t")[2:7] == row.split("\t")[2:7]
    assert all("infiniband.lrh" in ln for ln in ours)
    rc, out, _ = run_cli("fields")
    assert any(ln.startswith("F\t") and "\tframe.protocols\t" in ln for ln in lines(out))
