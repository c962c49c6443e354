"""The protocol-graph extension the tests teach ibwire (this module holds no tests).

Two declarations, one place each: a vendor extended header on opcode 0xC0 (an
RC-style manufacturer-specific operation) and RoCEv2 on UDP port 4792. Every
consumer (decoder, encoder, bulk columns, Scapy layers, CLI) must then handle
both without being told anything else. The declarations change process-wide
state, so tests run them in a child process (`run_extended`).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

EXTENSION = textwrap.dedent('''
    from ibwire.fields import HEX, Layout, uint
    from ibwire.graph import GRAPH

    VENDOR_OPCODE, VENDOR_PORT = 0xC0, 4792
    VENDORETH = Layout("vendoreth", "infiniband.vendoreth", "Vendor Extended Transport Header", [
        uint("tag", 32, "Tag", base=HEX),
        uint("length", 16, "Length"),
        uint("flags", 16, "Flags", base=HEX),
    ])
    GRAPH.add_extended_header(VENDOR_OPCODE, VENDORETH, name="Vendor Tagged Send")
    GRAPH.add("udp", VENDOR_PORT, "roce2")
''')


def run_extended(body: str, *args: str, timeout: float = 300) -> str:
    """Run EXTENSION then `body` in a fresh interpreter; its stdout (fails on error)."""
    code = EXTENSION + textwrap.dedent(body)
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                       timeout=timeout)
    assert p.returncode == 0, f"child failed ({p.returncode}):\n{p.stderr[-4000:]}"
    return p.stdout
