"""Slices of byte-like fields: `[i:j]` (start, length), `[i-j]` (start, end inclusive),
`[i]`, `[:j]`, `[i:]`, negative offsets, `[0:2,5]` concatenation. `parse_slice` reads
the text between the brackets; `apply_slice` cuts one value."""

from __future__ import annotations

import re

from .errors import FilterError
from .lexer import WS_RE, Tok

Ranges = list[tuple[str, int, int]]  # (kind, a, b): one, rest, len or end

_NUM_RE = re.compile(r"-?[0-9]{1,18}")


def _split_range(s: str) -> tuple[int | None, str, int | None] | None:
    """One slice range `a`, `a:`, `:b`, `a:b` or `a-b` (spaces around the separator
    allowed) as (a, separator, b); None when malformed. One pass, no backtracking."""
    a = b = None
    m = _NUM_RE.match(s)
    if m:
        a, i = int(m.group()), m.end()
    else:
        i = 0
    i = WS_RE.match(s, i).end()
    sep = ""
    if i < len(s) and s[i] in ":-":
        sep, i = s[i], WS_RE.match(s, i + 1).end()
    m = _NUM_RE.match(s, i)
    if m:
        b, i = int(m.group()), m.end()
    ok = {"": a is not None and b is None, "-": a is not None and b is not None,
          ":": a is not None or b is not None}[sep]
    return (a, sep, b) if ok and i == len(s) else None


def parse_slice(tok: Tok, text: str) -> Ranges:
    """The ranges of a `slice` token of the filter `text`; FilterError when malformed."""
    def error(msg: str, pos: int, length: int = 1) -> FilterError:
        return FilterError(msg, pos, length, text)

    inner: str = tok.value
    if not inner.strip():
        raise error('"]" was unexpected in this context.', tok.pos + len(inner) + 1)
    ranges = []
    pos = tok.pos + 1
    for part in inner.split(","):
        at = pos + len(part) - len(part.lstrip())
        shown = part.strip()
        pos += len(part) + 1
        parsed = _split_range(shown)
        if parsed is None:
            raise error(f'"{shown}" is not a valid number.', at, len(shown))
        a, sep, b = parsed
        if not sep:
            ranges.append(("one", a, 1))
        elif sep == ":" and b is None:
            ranges.append(("rest", a, 0))
        elif sep == ":":
            if b <= 0:
                raise error(f"Range {shown} isn't valid because length {b} "
                            "isn't positive", at, len(shown))
            ranges.append(("len", a or 0, b))
        else:
            if a >= b:
                raise error(f"Range {shown} isn't valid because {a} is greater "
                            f"or equal than {b}", at, len(shown))
            ranges.append(("end", a, b))
    return ranges


def apply_slice(ranges: Ranges, data: bytes) -> bytes | None:
    n = len(data)
    out = b""
    for kind, a, b in ranges:
        start = a if a >= 0 else n + a
        if kind == "len":
            end = start + b
        elif kind == "end":
            end = (b if b >= 0 else n + b) + 1
        elif kind == "rest":
            end = n
        else:
            end = start + 1
        if start < 0 or start >= n or end > n or end <= start:
            return None
        out += data[start:end]
    return out
