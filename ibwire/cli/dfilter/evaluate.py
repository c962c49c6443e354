"""Evaluation: the nodes a compiled filter is made of, and `DisplayFilter`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import regex

from .ftypes import norm_bytes, normalizer
from .regexp import search
from .slices import Ranges, apply_slice

ANY, ALL = "any", "all"


class Node:
    __slots__ = ()

    def test(self, pkt: Any) -> bool:
        raise NotImplementedError


class Always(Node):
    __slots__ = ()

    def test(self, pkt: Any) -> bool:
        return True


class Not(Node):
    __slots__ = ("child",)

    def __init__(self, child: Node) -> None:
        self.child = child

    def test(self, pkt: Any) -> bool:
        return not self.child.test(pkt)


class And(Node):
    __slots__ = ("children",)

    def __init__(self, children: list[Node]) -> None:
        self.children = children

    def test(self, pkt: Any) -> bool:
        return all(c.test(pkt) for c in self.children)


class Or(And):
    __slots__ = ()

    def test(self, pkt: Any) -> bool:
        return any(c.test(pkt) for c in self.children)


class Xor(And):
    __slots__ = ()

    def test(self, pkt: Any) -> bool:
        odd = False
        for c in self.children:
            odd ^= c.test(pkt)
        return odd


class Exists(Node):
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def test(self, pkt: Any) -> bool:
        return bool(pkt.has(self.name))


class Field:
    """A field reference, optionally sliced: `values(pkt)` gives normalized values."""

    __slots__ = ("name", "norm", "slices")

    def __init__(self, name: str, ftype: str, slices: list[Ranges]):
        self.name = name
        self.slices = slices
        self.norm = norm_bytes if slices else normalizer(ftype)

    def values(self, pkt: Any) -> list[Any]:
        out = []
        for v in pkt.values_of(self.name):
            x = self.norm(v)
            for ranges in self.slices:
                if x is None:
                    break
                x = apply_slice(ranges, x)
            if x is not None:
                out.append(x)
        return out


class Const:
    __slots__ = ("vals",)

    def __init__(self, value: Any) -> None:
        self.vals = [value]

    def values(self, pkt: Any) -> list[Any]:
        return self.vals


class SliceExists(Node):
    __slots__ = ("field",)

    def __init__(self, field: Field) -> None:
        self.field = field

    def test(self, pkt: Any) -> bool:
        return bool(self.field.values(pkt))


_RELS: dict[str, Callable[[int], bool]] = {
    "eq": lambda c: c == 0, "ne": lambda c: c != 0, "gt": lambda c: c > 0,
    "lt": lambda c: c < 0, "ge": lambda c: c >= 0, "le": lambda c: c <= 0}


class Compare(Node):
    __slots__ = ("lhs", "rhs", "rel", "every", "cmp")

    def __init__(self, lhs: Field, rhs: Field | Const, rel: str, quant: str,
                 cmp: Callable[[Any, Any], int]) -> None:
        self.lhs, self.rhs, self.rel = lhs, rhs, _RELS[rel]
        self.every, self.cmp = quant == ALL, cmp

    def test(self, pkt: Any) -> bool:
        left = self.lhs.values(pkt)
        right = self.rhs.values(pkt) if left else None
        if not left or not right:
            return False
        rel, cmp = self.rel, self.cmp
        if self.every:
            return all(rel(cmp(a, b)) for a in left for b in right)
        return any(rel(cmp(a, b)) for a in left for b in right)


class Contains(Node):
    __slots__ = ("lhs", "rhs", "every")

    def __init__(self, lhs: Field, rhs: Field | Const, quant: str) -> None:
        self.lhs, self.rhs, self.every = lhs, rhs, quant == ALL

    def test(self, pkt: Any) -> bool:
        left = self.lhs.values(pkt)
        right = [b for b in self.rhs.values(pkt) if b] if left else None
        if not left or not right:
            return False
        if self.every:
            return all(b in a for a in left for b in right)
        return any(b in a for a in left for b in right)


class Matches(Node):
    __slots__ = ("lhs", "pattern", "text_mode", "every")

    def __init__(self, lhs: Field, pattern: regex.Pattern, text_mode: bool,
                 quant: str) -> None:
        self.lhs, self.pattern, self.text_mode = lhs, pattern, text_mode
        self.every = quant == ALL

    def test(self, pkt: Any) -> bool:
        if self.text_mode:  # unsliced string field: match the text itself
            left = []
            for v in pkt.values_of(self.lhs.name):
                b = v if isinstance(v, str) else norm_bytes(v)
                if isinstance(b, bytes):
                    b = b.decode("utf-8", "surrogateescape")
                if b is not None:
                    left.append(b)
        else:
            left = self.lhs.values(pkt)
        if not left:
            return False
        pattern = self.pattern
        if self.every:
            return all(search(pattern, v) for v in left)
        return any(search(pattern, v) for v in left)


class Member(Node):
    """`lhs in {...}`: constant singles (a frozenset where hashing is exact), ranges,
    and field members."""

    __slots__ = ("lhs", "every", "cmp", "fixed", "singles", "ranges")

    def __init__(self, lhs: Field, members: list[tuple[Any, Any]], quant: str,
                 cmp: Callable[[Any, Any], int], hashable: bool) -> None:
        self.lhs, self.every, self.cmp = lhs, quant == ALL, cmp
        singles = [lo.vals[0] for lo, hi in members
                   if hi is None and isinstance(lo, Const)]
        self.fixed = frozenset(singles) if hashable else None
        self.singles = [] if hashable else singles
        self.ranges = [(lo, hi) for lo, hi in members
                       if hi is not None or not isinstance(lo, Const)]

    def test(self, pkt: Any) -> bool:
        left = self.lhs.values(pkt)
        if not left:
            return False
        cmp, fixed = self.cmp, self.fixed
        dynamic = [(lo.values(pkt), hi.values(pkt) if hi is not None else None)
                   for lo, hi in self.ranges]

        def inside(a: Any) -> bool:
            if fixed is not None and a in fixed:
                return True
            if any(cmp(a, s) == 0 for s in self.singles):
                return True
            for los, his in dynamic:
                if his is None:
                    if any(cmp(a, s) == 0 for s in los):
                        return True
                elif any(cmp(a, lo) >= 0 for lo in los) and \
                        any(cmp(a, hi) <= 0 for hi in his):
                    return True
            return False
        return all(map(inside, left)) if self.every else any(map(inside, left))


class DisplayFilter:
    """A compiled filter. `matches(pkt)` (also `filter(pkt)`) tests one packet."""

    __slots__ = ("text", "_names", "_root")

    def __init__(self, text: str, root: Node, names: Iterable[str]) -> None:
        self.text = text
        self._root = root
        self._names = frozenset(names)

    @property
    def fields(self) -> set[str]:
        """Every field and protocol name the filter reads."""
        return set(self._names)

    def matches(self, pkt: Any) -> bool:
        return self._root.test(pkt)

    __call__ = matches

    def __repr__(self) -> str:
        return f"DisplayFilter({self.text!r})"
