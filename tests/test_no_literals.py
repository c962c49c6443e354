"""No protocol number or header size is typed outside the registry.

Link types, EtherTypes, UDP ports and the like live in `ibwire.constants`; header
sizes and offsets come from the layouts (`Layout.size`, `Field.offset`,
`Layout.offsets()`). This test reads every module's tokens (comments and strings
do not count) and fails on the numbers that were once typed by hand."""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted([*(ROOT / "ibwire").rglob("*.py"), *(ROOT / "dissectors").rglob("*.py")])
# Where numbers are defined: the constants, the layouts and the MAD attribute tables.
ALLOWED = {"ibwire/constants.py"}
ALLOWED_DIRS = ("ibwire/headers/",)

# Values that only ever mean a protocol number.
PROTOCOL_NUMBERS = {
    0x8915: "ETHERTYPE_ROCE", 0x86DD: "ETHERTYPE_IPV6", 0x0806: "ETHERTYPE_ARP",
    0x8100: "ETHERTYPE_VLANS", 0x88A8: "ETHERTYPE_VLANS", 0x9100: "ETHERTYPE_VLANS",
    0x8808: "ETHERTYPE_MAC_CONTROL", 4791: "ROCEV2_PORT", 197: "LINKTYPE_ERF",
    247: "LINKTYPE_INFINIBAND", 242: "LINKTYPE_IPOIB", 276: "LINKTYPE_LINUX_SLL2",
}
# Header sizes typed as offsets: a literal slice of packet bytes (`pay[16:18]`,
# `data[12:20]`), a constant index into a payload (`pay[1]`), or a header size added
# to an offset (`off + 40`, `pos + 14`).
BUFFERS = {"data", "pay", "payload", "buf", "raw", "frame", "body", "seg", "segment", "hdr",
           "header", "chunk", "rec", "record", "blob"}
PAYLOADS = {"pay", "payload"}
HEADER_SIZES = {14, 16, 20, 24, 40, 48}
OFFSET_WORDS = ("off", "pos", "start", "base", "ib", "at")


def _hits(path: Path) -> list[str]:
    rel = path.relative_to(ROOT).as_posix()
    if rel in ALLOWED or rel.startswith(ALLOWED_DIRS):
        return []
    out = []
    toks = [t for t in tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
            if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT,
                              tokenize.DEDENT)]
    for i, tok in enumerate(toks):
        if tok.type != tokenize.NUMBER:
            continue
        try:
            value = int(tok.string, 0)
        except ValueError:
            continue
        where = f"{rel}:{tok.start[0]}: {tok.line.strip()}"
        if value in PROTOCOL_NUMBERS and tok.string.lower().startswith("0x") == (value > 999):
            out.append(f"{where}  (use {PROTOCOL_NUMBERS[value]})")
        elif _size_literal(toks, i, value):
            out.append(f"{where}  (a header size or offset: use the layout's .size/offsets)")
    return out


def _size_literal(toks: list, i: int, value: int) -> bool:
    def at(k: int) -> str:
        return toks[k].string if 0 <= k < len(toks) else ""
    # NAME [ INT : INT ]  or  NAME [ INT ]
    if at(i - 1) == "[" and at(i - 2) in BUFFERS:
        if at(i + 1) == ":" and toks[i + 2].type == tokenize.NUMBER and at(i + 3) == "]":
            return True
        return at(i + 1) == "]" and at(i - 2) in PAYLOADS
    # NAME + INT  with an offset-like name and a header size
    return (value in HEADER_SIZES and toks[i].string.isdigit() and at(i - 1) in ("+", "-")
            and any(w in at(i - 2).lower() for w in OFFSET_WORDS)
            and toks[i - 2].type == tokenize.NAME)


def test_no_protocol_numbers_or_header_sizes_outside_the_registry():
    hits = [h for path in SOURCES for h in _hits(path)]
    assert not hits, "literals that belong to the registry:\n" + "\n".join(hits)


def test_the_check_finds_a_planted_literal(tmp_path):
    planted = ROOT / "ibwire" / "_planted_literal_probe.py"
    planted.write_text("def f(data, pay, off):\n"
                       "    return data[off + 40:off + 48], 0x8915, pay[16:18], pay[1]\n")
    try:
        hits = _hits(planted)
    finally:
        planted.unlink()
    assert len(hits) == 5
