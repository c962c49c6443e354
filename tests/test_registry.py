"""The field registry: every layout's Construct schema, fast codec and offset
table agree, and public names are unique and well formed."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ibwire  # noqa: F401 - registers every layout
from ibwire.fields import REGISTRY, Layout
from ibwire.headers import BTH, GRH, LRH, OPCODES

LAYOUTS = sorted(REGISTRY.layouts.values(), key=lambda lay: lay.name)


def _construct_values(layout: Layout, data: bytes) -> dict:
    parsed = layout.struct.parse(data)
    return {f.name: parsed[f.name] for f in layout.wire}


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda lay: lay.name)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_construct_and_fast_codec_agree(layout, data):
    raw = data.draw(st.binary(min_size=layout.size, max_size=layout.size))
    fast = layout.unpack(raw)
    wire = {f.name: fast[f.name] for f in layout.wire}
    assert _construct_values(layout, raw) == wire
    assert layout.pack(fast) == raw
    assert layout.struct.build(wire) == raw


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda lay: lay.name)
def test_offset_table_reads_the_same_values(layout):
    raw = bytes((i * 37 + 11) & 0xFF for i in range(layout.size))
    values = layout.unpack(raw)
    for name, (off, nbytes, shift, mask) in layout.offsets().items():
        word = int.from_bytes(raw[off:off + nbytes], "big")
        assert (word >> shift) & mask == values[name], name


def test_public_names_are_dotted_lowercase_and_unique():
    seen = set()
    for name in REGISTRY.names():
        # tshark's own column pseudo-fields are capitalised (`_ws.col.Info`).
        pattern = r"_ws\.col\.[A-Za-z]+" if name.startswith("_ws.col.") else \
            r"[a-z_][a-z0-9_]*(\.[a-z0-9_]+)*"
        assert re.fullmatch(pattern, name), name
        assert name not in seen
        seen.add(name)


def test_known_offsets_from_the_specification():
    assert (LRH.size, GRH.size, BTH.size) == (8, 40, 12)
    assert LRH.by_name["pktlen"].bit_offset == 37 and LRH.by_name["pktlen"].bits == 11
    assert BTH.by_name["destqp"].offset == 5 and BTH.by_name["psn"].offset == 9
    assert GRH.by_name["sgid"].offset == 8 and GRH.by_name["dgid"].offset == 24
    assert BTH.offsets()["padcnt"] == (1, 1, 4, 3)
    assert REGISTRY["infiniband.bth.psn"].ftype == "uint24"
    assert REGISTRY["infiniband.deth.q_key"].ftype == "uint64"   # as tshark registers it


# protocol-facts §2.3: the valid opcodes per transport.
_VALID = {
    "RC": set(range(0x00, 0x15)) | {0x16, 0x17, 0x1C, 0x1D},
    "UC": set(range(0x20, 0x2C)),
    "RD": set(range(0x40, 0x56)),
    "UD": {0x64, 0x65},
    "CNP": {0x80, 0x81},
    "XRC": set(range(0xA0, 0xB5)) | {0xB6, 0xB7},
}


def test_opcode_table_has_every_code_and_the_right_valid_set():
    assert len(OPCODES) == 256
    valid = {op.code for op in OPCODES if op.valid}
    assert valid == set().union(*_VALID.values())
    for transport, codes in _VALID.items():
        for code in codes:
            assert OPCODES[code].transport == transport


@pytest.mark.parametrize("code,headers,payload", [
    (0x00, (), True), (0x03, ("immdt",), True), (0x06, ("reth",), True),
    (0x0B, ("reth", "immdt"), True), (0x0C, ("reth",), False), (0x0D, ("aeth",), True),
    (0x0E, (), True), (0x11, ("aeth",), False), (0x12, ("aeth", "atomicacketh"), False),
    (0x13, ("atomiceth",), False), (0x16, ("ieth",), True), (0x1C, ("feth", "reth"), False),
    (0x1D, ("reth",), True), (0x24, (), True), (0x2A, ("reth",), True),
    (0x44, ("rdeth", "deth"), True), (0x4C, ("rdeth", "deth", "reth"), False),
    (0x51, ("rdeth", "aeth"), False), (0x64, ("deth",), True), (0x65, ("deth", "immdt"), True),
    (0x81, ("cnp",), False), (0xA0, ("xrceth",), True), (0xAB, ("xrceth", "reth", "immdt"), True),
    (0xB1, ("aeth",), False), (0xB7, ("xrceth", "ieth"), True),
])
def test_opcode_header_chains(code, headers, payload):
    assert OPCODES[code].headers == headers
    assert OPCODES[code].payload is payload


# -- the field list does not depend on what was imported first ------------------------
_ORDERS = (
    ("ibwire",),
    ("ibwire.fields",),
    ("ibwire.cli.main",),
    ("ibwire.mad", "ibwire"),
    ("ibwire.analysis.rc", "ibwire.cli.main"),
    ("ibwire.dissectors",),
    ("ibwire.headers", "ibwire.analysis.providers"),
)
_PRINT_REGISTRY = '''
import hashlib, importlib, io, sys
from contextlib import redirect_stdout
for module in sys.argv[1:]:
    importlib.import_module(module)
from ibwire.fields import REGISTRY
names = REGISTRY.names()
from ibwire.cli.main import main
buf = io.StringIO()
with redirect_stdout(buf):
    assert main(["fields"]) == 0
print(len(names), hashlib.sha256("\\n".join(names).encode()).hexdigest(),
      hashlib.sha256(buf.getvalue().encode()).hexdigest())
'''


def test_field_list_is_the_same_whatever_is_imported_first():
    import subprocess
    import sys

    seen = {}
    for order in _ORDERS:
        p = subprocess.run([sys.executable, "-c", _PRINT_REGISTRY, *order],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-2000:]
        seen[order] = p.stdout.strip()
    assert len(set(seen.values())) == 1, seen
    assert int(next(iter(seen.values())).split()[0]) > 900


def test_every_field_module_is_listed():
    # Modules that call REGISTRY.add / add_protocol register fields outside a layout:
    # each must be (or be imported by) an entry of FIELD_MODULES.
    import importlib
    import pathlib
    import sys

    from ibwire.registry import FIELD_MODULES

    root = pathlib.Path(importlib.import_module("ibwire").__file__).parent
    for module in FIELD_MODULES:
        importlib.import_module(module)
    for path in root.rglob("*.py"):
        src = path.read_text()
        if "REGISTRY.add(" in src or "REGISTRY.add_protocol(" in src or "register(" in src \
                and "FieldProvider" in src:
            name = "ibwire." + ".".join(path.relative_to(root).with_suffix("").parts)
            name = name.removesuffix(".__init__")
            if name in ("ibwire.fields", "ibwire.analysis.providers"):
                continue
            assert name in sys.modules, f"{name} registers fields; not in FIELD_MODULES"
