"""The CLI follows the protocol graph: after `tests/graph_extension.EXTENSION` (a
vendor extended header on opcode 0xC0, RoCEv2 on UDP 4792), `ibwire dump` names
the operation, prints and filters the new fields (bulk and per-packet paths), shows
the header in `-V`, lists it in `ibwire fields`, and puts `infiniband` in the
protocol stack of the 4792 frames. Without the extension, 4792 is plain UDP."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from graph_extension import run_extended

# Writes a native InfiniBand capture of vendor-header packets and an Ethernet one with
# RoCEv2 on UDP 4792 (a vendor packet, then an RC Send Only), then runs the CLI on them;
# each command's output follows a "== <name>" line.
_CAPTURES = '''
import os, sys
from ibwire import BTH, ETHERNET, IPV4, LRH, UDP, encode, write
from ibwire.cli.main import main
from ibwire.constants import LINKTYPE_ETHERNET, LINKTYPE_INFINIBAND

d = sys.argv[1]
native = [encode(LRH(dlid=1, slid=2), BTH(opcode=0xC0, destqp=0x11, psn=7 + i),
                 VENDORETH(tag=0xABCD0000 + i, length=4, flags=1), payload=bytes(4))
          for i in range(3)]
write(f"{d}/native.pcap", native, linktype=LINKTYPE_INFINIBAND)
carriers = (ETHERNET(), IPV4(src="10.0.0.1", dst="10.0.0.2"), UDP(srcport=5000, dstport=4792))
roce = [encode(*carriers, BTH(opcode=0xC0, destqp=0x12, psn=100),
               VENDORETH(tag=0x1234, length=2, flags=0), payload=bytes(4)),
        encode(*carriers, BTH(opcode=0x04, destqp=0x12, psn=101), payload=bytes(8))]
write(f"{d}/roce.pcap", roce, linktype=LINKTYPE_ETHERNET)


def run(name, *argv):
    print("==", name, flush=True)
    assert main(list(argv)) == 0
    sys.stdout.flush()


FIELDS = ("-T", "fields", "-e", "infiniband.vendoreth.tag", "-e", "infiniband.bth.psn",
          "-e", "frame.protocols")
TAG_FILTER = "infiniband.vendoreth.tag == 0xabcd0001 || infiniband.vendoreth.tag == 0x1234"
for f in ("native", "roce"):
    path = f"{d}/{f}.pcap"
    run(f"{f}.summary", "dump", "-r", path)
    run(f"{f}.fields", "dump", "-r", path, *FIELDS)
    os.environ["IBWIRE_PER_PACKET"] = "1"
    run(f"{f}.fields.per_packet", "dump", "-r", path, *FIELDS)
    run(f"{f}.filter.per_packet", "dump", "-r", path, "-T", "fields", "-e", "frame.number",
        "-Y", TAG_FILTER)
    del os.environ["IBWIRE_PER_PACKET"]
    run(f"{f}.filter", "dump", "-r", path, "-T", "fields", "-e", "frame.number",
        "-Y", TAG_FILTER)
run("tree", "dump", "-r", f"{d}/roce.pcap", "-V", "-c", "1")
run("fields", "fields", "--filter", "vendoreth")
run("verify", "verify", f"{d}/roce.pcap")
'''


def _sections(out: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current = None
    for line in out.splitlines():
        if line.startswith("== "):
            current = sections.setdefault(line[3:], [])
        elif current is not None:
            current.append(line)
    return sections


@pytest.fixture(scope="module")
def extended(tmp_path_factory) -> dict[str, list[str]]:
    d = tmp_path_factory.mktemp("graph_cli")
    return _sections(run_extended(_CAPTURES, str(d)))


def test_summary_names_the_vendor_operation(extended):
    native = extended["native.summary"]
    assert len(native) == 3
    assert all("InfiniBand" in line and "Vendor Tagged Send QP=0x000011" in line
               for line in native)
    roce = extended["roce.summary"]
    assert "RRoCE" in roce[0] and "Vendor Tagged Send QP=0x000012 PSN=100" in roce[0]
    assert "RRoCE" in roce[1] and "RC Send Only QP=0x000012 PSN=101" in roce[1]


@pytest.mark.parametrize("path", ["fields", "fields.per_packet"])
def test_fields_print_the_new_header(extended, path):
    assert extended[f"native.{path}"] == [
        "0xabcd0000\t7\tinfiniband:data", "0xabcd0001\t8\tinfiniband:data",
        "0xabcd0002\t9\tinfiniband:data"]
    # frame.protocols ends in infiniband (then its payload) for RoCEv2 on UDP 4792.
    assert extended[f"roce.{path}"] == [
        "0x00001234\t100\teth:ethertype:ip:udp:infiniband:data",
        "\t101\teth:ethertype:ip:udp:infiniband:data"]


@pytest.mark.parametrize("path", ["filter", "filter.per_packet"])
def test_display_filter_on_the_new_field(extended, path):
    assert extended[f"native.{path}"] == ["2"]
    assert extended[f"roce.{path}"] == ["1"]


def test_tree_shows_the_new_header(extended):
    tree = extended["tree"]
    at = tree.index("    Vendor Extended Transport Header")
    assert tree[at + 1:at + 4] == ["        Tag: 0x00001234", "        Length: 2",
                                   "        Flags: 0x0000"]
    assert "    [Protocols in frame: eth:ethertype:ip:udp:infiniband:data]" in tree


def test_verify_checks_the_icrc_on_the_new_port(extended):
    icrc = next(line.split() for line in extended["verify"] if line.split()[:1] == ["ICRC"])
    assert icrc[1:5] == ["good", "2", "bad", "0"]


def test_field_list_has_the_new_fields(extended):
    names = [line.split("\t")[2] for line in extended["fields"] if line.startswith("F\t")]
    assert names == ["infiniband.vendoreth", "infiniband.vendoreth.flags",
                     "infiniband.vendoreth.length", "infiniband.vendoreth.tag"]


def test_without_the_extension_4792_is_plain_udp(extended, tmp_path):
    # The capture the extended child wrote; a fresh interpreter without EXTENSION.
    path = next(tmp_path.parent.glob("graph_cli*/roce.pcap"))
    code = textwrap.dedent('''
        import sys
        from ibwire.cli.main import main
        sys.exit(main(["dump", "-r", sys.argv[1], "-T", "fields", "-e", "frame.protocols",
                       "-e", "_ws.col.Protocol"]))
    ''')
    p = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["eth:ethertype:ip:udp:data\tUDP"] * 2


def test_dump_does_not_import_the_simulator_or_the_analyses():
    code = textwrap.dedent('''
        import io, sys
        from contextlib import redirect_stdout
        from ibwire.cli.main import main
        path = sys.argv[1]
        with redirect_stdout(io.StringIO()):
            assert main(["dump", "-r", path]) == 0
            assert main(["dump", "-r", path, "-T", "fields",
                         "-e", "infiniband.bth.psn", "-Y", "infiniband.bth.psn > 3"]) == 0
        heavy = ("ibwire.gen", "ibwire.analysis.rc", "ibwire.analysis.credits",
                 "ibwire.analysis.fabric", "ibwire.report", "ibwire.plots", "matplotlib",
                 "plotly", "dask")
        print(sorted(m for m in sys.modules if m.split(".")[0] in heavy or
                     any(m == h or m.startswith(h + ".") for h in heavy)))
    ''')
    path = Path(__file__).resolve().parent.parent / "pcaps" / "rc_loss_roce2.pcap"
    p = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


# Literals that once stood in the CLI for what the layouts, the graph and the constants
# say: header sizes and offsets, the AETH syndrome split, protocol numbers, QP0/QP1.
_KNOWN_LITERALS = (
    r">>\s*5\)?\s*&\s*3", r"&\s*0x1[fF]\b",                    # AETH syndrome by hand
    r"\s[-+]\s*(8|14|20|40)\b(?!\s*\*)", r"\[\s*(14|20|40)\s*:",  # header sizes
    r"==\s*(197|247|242|113|276)\b",                           # link types
    r"0x0?800\b|0x86[dD][dD]|0x0806|0x8915|\b4791\b",          # EtherTypes, RoCE port
    r"destqp\"?\)?\s*<=\s*1|srcqp\"?\)?\s*<=\s*1",              # QP0/QP1
    r"(proto|nxt)\w*\W+(==|in \(|not in \()\s*(1|6|17|58)\b",     # IP protocols
)


def test_cli_has_no_header_literals():
    import re

    root = Path(__file__).resolve().parent.parent / "ibwire"
    files = [p for p in (root / "cli").rglob("*.py") if p.name != "madinfo.py"]
    files += [root / "inner.py", root / "packet.py"]
    found = []
    for path in files:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if code.strip().startswith(("\"", "'")):
                continue
            for pat in _KNOWN_LITERALS:
                if re.search(pat, code):
                    found.append(f"{path.relative_to(root)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)
