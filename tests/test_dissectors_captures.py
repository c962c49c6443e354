"""Every shared capture through Scapy with the generated layers: the full layer
stack, BTH exactly where tshark finds one (same QP, PSN, opcode), `show()`
working, and every frame rebuilding byte for byte (trailers included)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from ibwire.dissectors import BTH, DETH, ERF, LRH
from ibwire.dissectors.mad import MAD, MAD_AVAILABLE
from scapy.all import IP, UDP, Ether, IPv6, conf, rdpcap
from scapy.compat import raw

from ibwire import decode

CARRIERS = {"eth", "vlan", "ip", "ipv6", "udp"}   # Scapy's own Ether/Dot1Q/IP/IPv6/UDP
CAPTURES = Path(__file__).resolve().parents[1].parent / "shared" / "captures"
PER_FILE = 200   # frames per file: enough for every opcode the files hold, quick to run


def _files() -> list:
    files = sorted(CAPTURES.glob("*/*.pcap")) if CAPTURES.is_dir() else []
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(
            reason=f"shared captures not found at {CAPTURES} (they live beside the "
                   "repository on the project's machines)"))]
    return [pytest.param(f, id=f"{f.parent.name}/{f.name}") for f in files]


def _read(path: Path):
    old = conf.debug_dissector
    conf.debug_dissector = True     # a failing layer must fail the test, not become Raw
    try:
        return rdpcap(str(path), count=PER_FILE)
    finally:
        conf.debug_dissector = old


@pytest.mark.parametrize("path", _files())
def test_capture_layers_show_and_rebuild(path):
    for i, p in enumerate(_read(path), 1):
        text = p.show(dump=True)
        assert text, f"frame {i}"
        assert raw(p) == p.original, f"frame {i} does not rebuild byte for byte"
        if path.parent.name == "mad":
            assert [ERF, LRH, BTH, DETH] == p.layers()[:4], f"frame {i}"
            assert p[LRH].vcrc and p[BTH].icrc, f"frame {i}"
            if MAD_AVAILABLE:
                assert p.layers()[4] is MAD, f"frame {i}"
        elif BTH in p:
            assert p.layers()[:4] in ([Ether, IP, UDP, BTH], [Ether, IPv6, UDP, BTH]), i


@pytest.mark.parametrize("path", _files())
def test_scapy_layers_are_the_library_layers(path):
    """Same layouts in the same order as `ibwire.decode` (MADs included)."""
    linktype = 197 if path.parent.name == "mad" else 1
    for i, p in enumerate(_read(path), 1):
        ours = [c.ib_layout.name for c in p.layers() if hasattr(c, "ib_layout")]
        lib = [la.layout.name for la in decode(p.original, linktype).layers
               if la.layout.name not in CARRIERS]
        assert ours == lib, f"frame {i}"


@pytest.mark.parametrize("path", _files())
def test_bth_where_tshark_has_one(path):
    tshark = shutil.which("tshark")
    if tshark is None:
        pytest.skip("tshark is not installed")
    # TFTP off: one Huawei flow uses UDP source port 69 (see public/MANIFEST.md).
    out = subprocess.run(
        [tshark, "--disable-protocol", "tftp", "-r", str(path), "-c", str(PER_FILE),
         "-T", "fields", "-e", "frame.number", "-e", "infiniband.bth.opcode",
         "-e", "infiniband.bth.destqp", "-e", "infiniband.bth.psn"],
        capture_output=True, text=True, check=True).stdout
    theirs = {}
    for line in out.splitlines():
        num, op, qp, psn = line.split("\t")
        if op:
            theirs[int(num)] = (int(op), int(qp, 16), int(psn))
    ours = {i: (p[BTH].opcode, p[BTH].destqp, p[BTH].psn)
            for i, p in enumerate(_read(path), 1) if BTH in p}
    assert theirs, "tshark found no InfiniBand in the file"
    assert ours == theirs
