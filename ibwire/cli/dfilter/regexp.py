"""The patterns of `matches`, run by the `regex` package within two bounds that Python's
`re` does not have.

* Time: a search that runs longer than `MATCH_TIMEOUT` seconds (CPU time, as the regex
  package counts it) gives up and counts as no match, as tshark does when PCRE2 reaches
  its match limit. Without it `(x+x+)+y` on a long field backtracks for hours.
* Size: the regex package unrolls the minimum count of every repeat when it compiles, so
  `a{1000000}` takes 280 MB and `(?:ab|c){200000}` overflows the C stack and kills the
  process. A pattern whose unrolled size (see `_scan`) is above `MAX_PATTERN_SIZE`
  is refused before it is compiled, with PCRE2's words: "regular expression is too large".
* Fuzzy matching (`(?:abc){e<=1}`), an extension of the regex package that PCRE2 does
  not have, is refused: it is where the package's crashes have been (a segfault with
  `(?R){e<=1}` up to regex 2026.7.10).
"""

from __future__ import annotations

import re

import regex

from .errors import Bad

MATCH_TIMEOUT = 0.2
MAX_PATTERN_SIZE = 100_000

# A counted repeat `{n}`, `{n,}`, `{,m}`, `{n,m}` (the regex package's syntax).
_COUNT_RE = re.compile(r"\{([0-9]*)(?:,([0-9]*))?\}")
# A POSIX class inside a set, `[:alpha:]`, `[:^digit:]`, `[:script=latin:]`.
_POSIX_RE = re.compile(
    r"\[:\^?[A-Za-z0-9 &_.\-]*(?:[:=] *[A-Za-z0-9&_./\-][A-Za-z0-9 &_./\-]*)?:\]")
# An inline flag group that may turn on verbose mode (x) or choose a version (V0/V1).
_SYNTAX_FLAGS_RE = re.compile(r"\(\?[-^A-Za-z0-9]*[xV]")
# What may start a fuzzy constraint in any syntax: a brace that is not a plain count,
# then (after spaces) a constraint letter, a cost digit or a verbose-mode comment.
_FUZZY_RE = re.compile(r"\{(?![0-9\s]*(?:,[0-9\s]*)?\})\s*[deis0-9#]")
_FUZZY_START = frozenset("deis0123456789")


def compile_pattern(pattern: bytes, text_mode: bool) -> regex.Pattern:
    """Compile the (unescaped) pattern of `matches`: case-insensitive unless it starts
    with `(?-i)`; a str pattern for string fields (`text_mode`), else a bytes one.
    Raises Bad with the message of the compilation error."""
    flags = regex.IGNORECASE
    if pattern.startswith(b"(?-i)"):
        pattern, flags = pattern[5:], 0
    source: str | bytes = pattern
    if text_mode:
        source = pattern.decode("utf-8", "surrogateescape")
    problem = check_pattern(source if text_mode else pattern.decode("latin-1"))
    if problem:
        raise Bad(f"Regex compilation error: {problem}.")
    try:
        return regex.compile(source, flags, cache_pattern=False)
    except Exception as e:  # hostile input to a third-party parser: any failure is the pattern's
        msg = getattr(e, "msg", None) or str(e) or type(e).__name__
        raise Bad(f"Regex compilation error: {msg}.") from None


def search(pattern: regex.Pattern, value: str | bytes) -> bool:
    """Whether `pattern` matches somewhere in `value`; False when the search times out."""
    try:
        return pattern.search(value, timeout=MATCH_TIMEOUT) is not None
    except TimeoutError:
        return False


def check_pattern(p: str) -> str | None:
    """Why pattern `p` (bytes as latin-1) must not be compiled, or None when it may."""
    scanned = None if _SYNTAX_FLAGS_RE.search(p) else _scan(p)
    if scanned is None:  # a syntax that `_scan` does not follow: cruder bounds
        size, fuzzy = _crude_size(p), _FUZZY_RE.search(p) is not None
    else:
        size, fuzzy = scanned
    if fuzzy:
        return "fuzzy matching is not supported"
    if size > MAX_PATTERN_SIZE:
        return "regular expression is too large"
    return None


def _scan(p: str) -> tuple[int, bool] | None:
    """The unrolled size of `p` (counting stops once past MAX_PATTERN_SIZE), and whether
    a fuzzy constraint may start in it. The structure (escapes, sets, comments, groups)
    is followed in the regex package's default syntax (version 0, not verbose); None when
    the groups do not balance or a set or comment is not closed. One pass, no recursion."""
    stack: list[int] = []  # the sizes so far of the enclosing groups
    size = last = 0        # the size so far of this group, and of its last item
    i, n = 0, len(p)
    while i < n and size <= MAX_PATTERN_SIZE:
        c, start = p[i], i
        if c == "(" and p.startswith("(?#", i):
            end = _comment_end(p, i)
            if end is None:
                return None
            size, i = size + end - i, end
            continue  # not an item: a repeat after a comment repeats what came before
        if c == "(":
            stack.append(size)
            size = last = 0
            i += 1
            continue
        if c == ")":
            if not stack:
                return None
            last = size + 2
            size = stack.pop() + last
            i += 1
            continue
        m = _COUNT_RE.match(p, i) if c == "{" else None
        if m and (m[1] or m[2] is not None):
            count = int(m[1] or 0) if len(m[1]) <= 9 else MAX_PATTERN_SIZE + 1
            if count > 1:
                size += last * (count - 1)
                last *= count
            size, i = size + m.end() - i, m.end()
            continue
        if c == "{" and p[i + 1:i + 2] in _FUZZY_START:
            return size, True
        if c == "\\":
            i += 2
        elif c == "[":
            end = _set_end(p, i)
            if end is None:
                return None
            i = end
        else:
            i += 1
        last = i - start
        size += last
    return None if stack and size <= MAX_PATTERN_SIZE else (size, False)


def _crude_size(p: str) -> int:
    """A bound that holds whatever the structure: every count is below 10 to the power of
    its number of digits, so their product is below 10 to the number of digits in `p`."""
    digits = sum(p.count(d) for d in "0123456789")
    return len(p) * 10 ** min(digits, 10)


def _comment_end(p: str, i: int) -> int | None:
    """The index after the comment `(?#...)` that opens at `i` (a backslash escapes the
    next character, as in the regex package), or None when it is not closed."""
    j, n = i + 3, len(p)
    while j < n:
        if p[j] == ")":
            return j + 1
        j += 2 if p[j] == "\\" else 1
    return None


def _set_end(p: str, i: int) -> int | None:
    """The index after the set that opens at `i` (version 0 syntax: a `]` first is a
    member, escapes and POSIX classes are skipped whole), or None when it is not closed."""
    j, n = i + 1, len(p)
    if j < n and p[j] == "^":
        j += 1
    first = True
    while j < n:
        c = p[j]
        if c == "]" and not first:
            return j + 1
        first = False
        m = _POSIX_RE.match(p, j) if c == "[" else None
        if m:
            j = m.end()
        else:
            j += 2 if c == "\\" else 1
    return None
