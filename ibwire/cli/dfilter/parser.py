"""The display-filter parser: an operator-precedence parser with explicit stacks for the
logical layer (no recursion), and the typing of each test's operands."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ibwire.fields import REGISTRY

from .errors import Bad, FilterError
from .evaluate import (
    ALL,
    ANY,
    Always,
    And,
    Compare,
    Const,
    Contains,
    DisplayFilter,
    Exists,
    Field,
    Matches,
    Member,
    Node,
    Not,
    Or,
    SliceExists,
    Xor,
)
from .ftypes import DESC, SLICEABLE, comparator, family
from .lexer import Lexer, Tok
from .literals import typed_literal
from .regexp import compile_pattern
from .slices import Ranges, parse_slice

MAX_DEPTH = 200

KnownFields = Callable[[str], "str | None"]

# Comparison operators -> (relation, default quantifier).
_RELOPS = {"==": ("eq", ANY), "eq": ("eq", ANY), "any_eq": ("eq", ANY),
           "!=": ("ne", ALL), "ne": ("ne", ALL), "all_ne": ("ne", ALL),
           "===": ("eq", ALL), "all_eq": ("eq", ALL),
           "!==": ("ne", ANY), "~=": ("ne", ANY), "any_ne": ("ne", ANY),
           ">": ("gt", ANY), "gt": ("gt", ANY), "<": ("lt", ANY), "lt": ("lt", ANY),
           ">=": ("ge", ANY), "ge": ("ge", ANY), "<=": ("le", ANY), "le": ("le", ANY)}
_LOGICAL = {"and": "and", "&&": "and", "or": "or", "||": "or", "xor": "xor", "^^": "xor"}
_PREC = {"or": 1, "xor": 2, "and": 3}
_COMBINE = {"and": And, "or": Or, "xor": Xor}
_KEYWORDS = frozenset(_RELOPS) | frozenset(_LOGICAL) | {
    "not", "in", "contains", "matches", "any", "all", "bitwise_and"}
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*(?:\.[A-Za-z0-9_\-]+)*\Z")


class _Ref:
    """A parsed operand before typing: a field (ftype set) or a literal (ftype None)."""

    __slots__ = ("tok", "name", "ftype", "slices")

    def __init__(self, tok: Tok, name: str, ftype: str | None) -> None:
        self.tok, self.name, self.ftype = tok, name, ftype
        self.slices: list[Ranges] = []

    @property
    def is_field(self) -> bool:
        return self.ftype is not None

    @property
    def type(self) -> str:
        return "bytes" if self.slices else self.ftype or ""

    def quoted(self) -> str:
        return self.tok.text if self.tok.kind != "word" else f'"{self.name}"'


class _Parser:
    def __init__(self, text: str, known_fields: KnownFields | None) -> None:
        self.text = text
        self.known = known_fields
        self.lexer = Lexer(text)
        self.tok = self.lexer.next()
        self.ahead: Tok | None = None
        self.names: set[str] = set()

    # -- tokens and errors
    def advance(self) -> None:
        if self.ahead is not None:
            self.tok, self.ahead = self.ahead, None
        else:
            self.tok = self.lexer.next()

    def peek(self) -> Tok:
        if self.ahead is None:
            self.ahead = self.lexer.next()
        return self.ahead

    def error(self, msg: str, pos: int | None, length: int = 1) -> FilterError:
        return FilterError(msg, pos, length, self.text)

    def unexpected(self, tok: Tok) -> FilterError:
        if tok.kind == "eof":
            return self.error("Unexpected end of filter expression.", None)
        text = "[" if tok.kind == "slice" else tok.text
        return self.error(f'"{text}" was unexpected in this context.', tok.pos, len(text))

    def at(self, tok: Tok, msg: str) -> FilterError:
        return self.error(msg, tok.pos, len(tok.text))

    # -- the logical layer: an operator-precedence parser with explicit stacks
    def parse(self) -> Node:
        if self.tok.kind == "eof":
            return Always()
        operands: list[Node] = []
        ops: list[str] = []
        depth = 0
        want_operand = True
        while True:
            tok = self.tok
            if want_operand:
                if tok.kind == "(":
                    depth += 1
                    if depth > MAX_DEPTH:
                        raise self.at(tok, f"Filter is nested too deeply (more than "
                                           f"{MAX_DEPTH} levels of parentheses).")
                    ops.append("(")
                elif tok.text in ("!", "not") and tok.kind in ("op", "word"):
                    ops.append("not")
                else:
                    operands.append(self.parse_test())
                    want_operand = False
                    continue
                self.advance()
                continue
            op = _LOGICAL.get(tok.text) if tok.kind in ("op", "word") else None
            if op is not None:
                while ops and ops[-1] != "(" and (
                        ops[-1] == "not" or _PREC[ops[-1]] >= _PREC[op]):
                    self.reduce(ops.pop(), operands)
                ops.append(op)
                want_operand = True
            elif tok.kind == ")":
                while ops and ops[-1] != "(":
                    self.reduce(ops.pop(), operands)
                if not ops:
                    raise self.unexpected(tok)
                ops.pop()
                depth -= 1
            elif tok.kind == "eof":
                while ops:
                    top = ops.pop()
                    if top == "(":
                        raise self.unexpected(tok)
                    self.reduce(top, operands)
                return operands[0]
            else:
                raise self.unexpected(tok)
            self.advance()

    @staticmethod
    def reduce(op: str, operands: list[Node]) -> None:
        if op == "not":
            x = operands.pop()
            operands.append(x.child if isinstance(x, Not) else Not(x))
            return
        b = operands.pop()
        a = operands.pop()
        cls = _COMBINE[op]
        node = a if type(a) is cls else cls([a])
        assert isinstance(node, And)
        if type(b) is cls:
            node.children.extend(b.children)  # type: ignore[attr-defined]
        else:
            node.children.append(b)
        operands.append(node)

    # -- one test: [any|all] operand [op operand | in {..} | not in {..}]
    def parse_test(self) -> Node:
        quant = None
        if self.tok.kind == "word" and self.tok.text in (ANY, ALL):
            quant = self.tok.text
            self.advance()
        lhs = self.parse_operand()
        tok = self.tok
        word = tok.text if tok.kind in ("op", "word") else None
        if word == "not" and self.peek().kind == "word" and self.peek().text == "in":
            self.advance()
            return Not(self.parse_member(lhs, quant, "in"))
        if word in _RELOPS:
            return self.parse_compare(lhs, quant, word)
        if word == "in":
            return self.parse_member(lhs, quant, word)
        if word == "contains":
            return self.parse_contains(lhs, quant)
        if word in ("matches", "~"):
            return self.parse_matches(lhs, quant, word)
        if quant is not None:
            raise self.unexpected(tok)
        if not lhs.is_field:
            raise self.at(lhs.tok, f"{lhs.quoted()} is neither a field nor a protocol name.")
        if lhs.slices:
            return SliceExists(self.field(lhs))
        self.names.add(lhs.name)
        return Exists(lhs.name)

    def parse_operand(self) -> _Ref:
        tok = self.tok
        if tok.kind == "word" and tok.text not in _KEYWORDS:
            ref = self.resolve(tok)
        elif tok.kind in ("str", "chr"):
            ref = _Ref(tok, tok.text, None)
        else:
            raise self.unexpected(tok)
        self.advance()
        while self.tok.kind == "slice":
            if not ref.is_field:
                raise self.unexpected(self.tok)
            if ref.type not in SLICEABLE:
                raise self.at(ref.tok, f'"{ref.name}" is a {DESC.get(ref.type, ref.type)} '
                                       "and cannot be sliced into a sequence of bytes.")
            ref.slices.append(parse_slice(self.tok, self.text))
            self.advance()
        return ref

    def lookup(self, name: str) -> str | None:
        if self.known is not None:
            ft = self.known(name)
            if ft:
                return ft
        if name in REGISTRY:
            return REGISTRY[name].ftype
        if name in REGISTRY.protocols:
            return "protocol"
        return None

    def resolve(self, tok: Tok) -> _Ref:
        text = tok.text
        if text.startswith(":") and not text.startswith("::"):
            return _Ref(Tok("word", text[1:], tok.pos + 1), text[1:], None)
        name = text[1:] if text.startswith(".") else text
        ftype = self.lookup(name) if _IDENT_RE.match(name) else None
        return _Ref(tok, name if ftype else text, ftype)

    # -- typing
    def field(self, ref: _Ref) -> Field:
        self.names.add(ref.name)
        return Field(ref.name, ref.ftype or "", ref.slices)

    def left(self, lhs: _Ref, op: str, allowed: Callable[[str | None], bool]) -> str:
        """Check the left operand of `op`; returns its (possibly sliced) type."""
        if not lhs.is_field:
            if lhs.tok.kind == "word" and _IDENT_RE.match(lhs.name):
                raise self.at(lhs.tok, f"{lhs.quoted()} is neither a field nor a protocol name.")
            raise self.at(lhs.tok, f'Left side of "{op}" expression must be a field or '
                                   f"function, not {lhs.tok.text}.")
        ltype = lhs.type
        if not allowed(family(ltype)):
            desc = DESC.get(ltype, ltype)
            raise self.at(lhs.tok, f"{lhs.name} (type={desc}) cannot participate in "
                                   f"{op} comparison.")
        return ltype

    def right(self, lhs: _Ref, ltype: str, rhs: _Ref, loose: bool = False) -> Field | Const:
        """The right operand typed by the left one: a field of a compatible type, or a
        literal read as `ltype` (`loose`: byte-like types take any byte string)."""
        if rhs.is_field:
            rfam = family(rhs.type)
            if rfam is None or rfam != family(ltype):
                raise self.at(rhs.tok, f"{lhs.name} and {rhs.name} are not of compatible "
                                       "types.")
            return self.field(rhs)
        if loose and family(ltype) == "bytes":
            ltype = "bytes"
        try:
            return Const(typed_literal(ltype, rhs.tok, rhs.name, lhs.name))
        except Bad as e:
            raise self.at(rhs.tok, str(e)) from None

    # -- the test kinds
    def parse_compare(self, lhs: _Ref, quant: str | None, op: str) -> Node:
        ltype = self.left(lhs, op, lambda fam: fam is not None)
        self.advance()
        rhs = self.right(lhs, ltype, self.parse_operand())
        rel, default = _RELOPS[op]
        return Compare(self.field(lhs), rhs, rel, quant or default, comparator(ltype))

    def parse_contains(self, lhs: _Ref, quant: str | None) -> Node:
        ltype = self.left(lhs, "contains", lambda fam: fam in ("bytes", "string"))
        self.advance()
        rhs = self.right(lhs, ltype, self.parse_operand(), loose=True)
        return Contains(self.field(lhs), rhs, quant or ANY)

    def parse_matches(self, lhs: _Ref, quant: str | None, op: str) -> Node:
        ltype = self.left(lhs, op, lambda fam: fam in ("bytes", "string"))
        self.advance()
        tok = self.tok
        if tok.kind == "eof":
            raise self.unexpected(tok)
        if tok.kind != "str":
            length = len(tok.text) if tok.kind != "slice" else 1
            raise self.error("Matches requires a double quoted string on the right side.",
                             tok.pos, length)
        self.advance()
        text_mode = ltype == "string"
        try:
            pattern = compile_pattern(tok.value, text_mode)
        except Bad as e:
            raise self.at(tok, str(e)) from None
        return Matches(self.field(lhs), pattern, text_mode, quant or ANY)

    def parse_member(self, lhs: _Ref, quant: str | None, op: str) -> Node:
        ltype = self.left(lhs, op, lambda fam: fam is not None)
        self.advance()
        if self.tok.kind != "{":
            raise self.unexpected(self.tok)
        self.advance()
        members: list[tuple[Any, Any]] = []
        while True:
            lo = self.right(lhs, ltype, self.parse_operand())
            hi = None
            if self.tok.kind == "..":
                self.advance()
                hi = self.right(lhs, ltype, self.parse_operand())
            members.append((lo, hi))
            if self.tok.kind == ",":
                self.advance()
            elif self.tok.kind == "}":
                self.advance()
                break
            elif self.tok.kind not in ("word", "str", "chr"):
                raise self.unexpected(self.tok)
        hashable = ltype not in ("ipv4", "ipv6")
        return Member(self.field(lhs), members, quant or ANY, comparator(ltype), hashable)


def compile_filter(text: str, known_fields: KnownFields | None = None) -> DisplayFilter:
    """Compile a display filter. Raises FilterError (with a caret position) when bad.

    `known_fields(name)` is asked first for a name's ftype (`"protocol"` for protocols);
    None falls back to `ibwire.fields.REGISTRY`."""
    if not isinstance(text, str):
        raise TypeError(f"filter must be str, not {type(text).__name__}")
    parser = _Parser(text, known_fields)
    root = parser.parse()
    return DisplayFilter(text, root, parser.names)
