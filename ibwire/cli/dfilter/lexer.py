"""The display-filter lexer: tokens on demand, quoted strings with C escapes."""

from __future__ import annotations

import re
from typing import Any

from .errors import FilterError


class Tok:
    __slots__ = ("kind", "text", "pos", "value")

    def __init__(self, kind: str, text: str, pos: int, value: Any = None) -> None:
        self.kind = kind    # word str chr op ( ) { } , .. slice eof
        self.text = text    # source text
        self.pos = pos
        self.value = value  # str/chr: the bytes; slice: the inside text


WS_RE = re.compile(r"[ \t\r\n\f\v]*")
HEX_RE = re.compile(r"[0-9a-fA-F]+\Z")
_WORD_RE = re.compile(r"[A-Za-z0-9_.:/+\-]+")
_OPS = ("===", "!==", "==", "!=", "~=", ">=", "<=", "&&", "||", "^^", ">", "<", "!", "~")
_SIMPLE_ESC = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11,
               "\\": 92, '"': 34, "'": 39}
_OCT_RE = re.compile(r"[0-7]{1,3}")
_HEX2_RE = re.compile(r"[0-9a-fA-F]{1,2}")


class Lexer:
    """Produces tokens on demand, so errors surface in reading order, like tshark."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def error(self, msg: str, pos: int | None, length: int = 1) -> FilterError:
        return FilterError(msg, pos, length, self.text)

    def next(self) -> Tok:
        t, n = self.text, len(self.text)
        i = WS_RE.match(t, self.i).end()
        if i >= n:
            self.i = n
            return Tok("eof", "", n)
        c = t[i]
        if c == '"' or (c == "r" and t.startswith('"', i + 1)):
            start = i + 1 if c == "r" else i
            data, end = self.quoted(start, '"', raw=c == "r",
                                    missing="The final quote was missing from a quoted string.")
            self.i = end
            return Tok("str", t[i:end], i, data)
        if c == "'":
            data, end = self.quoted(i, "'", raw=False, missing="The final quote was "
                                    "missing from a character constant.")
            self.i = end
            src = t[i:end]
            if not data:
                raise self.error("Empty character constant.", i, end - i)
            if len(data) > 1:
                raise self.error(f"{src} is too long to be a valid character constant.",
                                 i, end - i)
            return Tok("chr", src, i, data)
        if c in "(){},":
            self.i = i + 1
            return Tok(c, c, i)
        if c == "[":
            j = t.find("]", i + 1)
            if j < 0:
                raise self.error("The right bracket was missing from a slice.", n)
            self.i = j + 1
            return Tok("slice", t[i:j + 1], i, t[i + 1:j])
        for op in _OPS:
            if t.startswith(op, i):
                self.i = i + len(op)
                return Tok("op", op, i)
        m = _WORD_RE.match(t, i)
        if m is None:
            raise self.error(f'"{c}" was unexpected in this context.', i)
        word = m.group()
        cut = word.find("..")  # range operator inside sets: 1..5, 1 ..5, 1.. 5
        if cut == 0:
            self.i = i + 2
            return Tok("..", "..", i)
        if cut > 0:
            word = word[:cut]
        self.i = i + len(word)
        return Tok("word", word, i)

    def quoted(self, i: int, quote: str, raw: bool, missing: str) -> tuple[bytes, int]:
        """Scan a quoted literal opening at `i`; returns its bytes and the end index."""
        t, n = self.text, len(self.text)
        out = bytearray()
        j = i + 1
        while True:
            if j >= n:
                raise self.error(missing, n)
            c = t[j]
            if c == quote:
                return bytes(out), j + 1
            if c != "\\":
                out += c.encode("utf-8", "surrogatepass")
                j += 1
            elif j + 1 >= n:
                raise self.error(missing, n)
            elif raw:  # raw strings keep the backslash, and the escaped character
                out += t[j:j + 2].encode("utf-8", "surrogatepass")
                j += 2
            else:
                j = self.escape(j, out)

    def escape(self, j: int, out: bytearray) -> int:
        t = self.text
        k = t[j + 1]
        if k in _SIMPLE_ESC:
            out.append(_SIMPLE_ESC[k])
            return j + 2
        if k == "x":
            m = _HEX2_RE.match(t, j + 2)
            if m is None:
                raise self.error("\\x is not a valid character escape sequence", j, 2)
            out.append(int(m.group(), 16))
            return m.end()
        if "0" <= k <= "7":
            m = _OCT_RE.match(t, j + 1)
            assert m is not None
            if int(m.group(), 8) > 255:
                raise self.error(f"\\{m.group()} is larger than 255.", j, m.end() - j)
            out.append(int(m.group(), 8))
            return m.end()
        if k in "uU":
            width = 4 if k == "u" else 8
            digits = t[j + 2:j + 2 + width]
            if len(digits) != width or not HEX_RE.match(digits):
                raise self.error(f"\\{k} is not a valid character escape sequence", j, 2)
            cp = int(digits, 16)
            if (cp < 0xA0 and cp not in (0x24, 0x40, 0x60)) or 0xD800 <= cp <= 0xDFFF \
                    or cp > 0x10FFFF:
                raise self.error(f"\\{k}{digits} is not a valid universal character name",
                                 j, 2 + width)
            out += chr(cp).encode("utf-8")
            return j + 2 + width
        raise self.error(f"\\{k} is not a valid character escape sequence", j, 2)
