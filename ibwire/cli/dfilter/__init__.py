"""Wireshark-style display filters: `ibwire dump -Y FILTER`.

`compile_filter(text)` turns a filter into a `DisplayFilter` whose `.matches(pkt)` says
whether a decoded packet passes. The filter text is tokenized and parsed by hand; nothing
in it is ever evaluated as Python. Bad filters raise `FilterError`, which renders the
way tshark does::

    "=" was unexpected in this context.
        infiniband.bth.psn = 3
                           ^

The packet is a duck type: `pkt.values_of(name)` lists every occurrence of a field
(ints, bytes, str or float), `pkt.has(name)` tells whether a field or protocol is present.
Field types come from `ibwire.fields.REGISTRY`, or first from the `known_fields`
callable (name -> ftype, `"protocol"`, or None to fall back to the registry).

Rules kept (each checked against tshark 4.0.17 on a capture; tests pin them):

* Precedence, highest first: `not`/`!`, `and`/`&&`, `xor`/`^^`, `or`/`||`; all binary
  operators are left-associative. tshark 4.0 has no xor; we put it between and/or as
  later Wireshark releases do. Keywords are lower case only, as in tshark.
* A field that occurs several times is a list. `==`, `>`, `<`, `>=`, `<=`, `contains`,
  `matches`, `in` hold when ANY occurrence does. `!=` (`ne`, `all_ne`) holds when ALL
  occurrences differ: `ip.addr != 10.0.0.1` is false when either address is 10.0.0.1.
  `!==` / `~=` / `any_ne` is "some occurrence differs"; `===` / `all_eq` is "every
  occurrence equals". A leading `any` or `all` (`all ip.addr in {...}`) sets the
  quantifier of one test. Field against field compares every pair of occurrences.
* Every comparison, `!=` included, is false when the field is absent, so `a != 1` is not
  `!(a == 1)`. `a not in {...}` IS `!(a in {...})` and holds when `a` is absent.
* Literals are read by the type of the field they are compared with: integers in decimal,
  hex `0x1f`, octal `017` (leading zero; `08` is an error), binary `0b101`, or a character
  constant `'A'`; booleans as any number (non-zero is true) or `true`/`false` in any case;
  byte strings `01:02:ff`, `01-02-ff`, `01.02.ff`, `0102ff` (a 1-2 digit `0xNN` is one
  byte); IPv4/IPv6 addresses with optional CIDR prefix (compared under the mask);
  Ethernet addresses (exactly 6 bytes); strings in double quotes with C escapes
  (`\\n \\t \\" \\\\ \\xNN \\NNN \\uNNNN \\UNNNNNNNN`), raw strings `r"..."`. Unquoted
  words are accepted as strings for string fields. A byte field or slice compares with a
  quoted string by its bytes. A word that names a known field or protocol is a field
  reference, as in tshark; `.name` forces a field, `:word` forces a literal.
* Ordering: numbers numerically; strings byte by byte (`"ab"` < `"b"`); byte strings,
  slices and MAC addresses shorter first, then byte by byte (`02` < `01:00`), as tshark
  does; IP addresses by value under the shorter prefix.
* `matches` uses the `regex` package (the syntax of Python's `re`, plus its extensions).
  Like tshark 4.0 (PCRE2), it is CASE-INSENSITIVE by default; a leading `(?-i)` makes it
  case-sensitive. The pattern must be a quoted string; a bad pattern is a FilterError, and
  so is one too large once its counted repeats are unrolled ("regular expression is too
  large", as PCRE2 says). A search that runs longer than 0.2 s (CPU time) gives up and counts as no
  match, as tshark does when PCRE2 reaches its match limit (see `regexp`).
  `contains ""` is false, as in tshark.
* Slices of byte-like fields (bytes, ether, IP addresses, strings, protocols): `[i:j]`
  (start, length), `[i-j]` (start, end inclusive), `[i]`, `[:j]`, `[i:]`, negative
  offsets count from the end, `[0:2,5]` concatenates, `a[0][0]` chains. A slice that
  does not fit in an occurrence gives no value for it. Integers cannot be sliced.
* Sets: `{80, 443, 4430..4434}`. tshark 4.0 requires commas; we also accept
  whitespace-separated members (`{1 2 3}`), an extension.
* An empty (or all-whitespace) filter matches everything.

Bounds: nesting deeper than `MAX_DEPTH` parentheses is a FilterError; parsing uses an
explicit operator stack (no recursion) and chains of `and`/`or`/`xor` are flattened, so
time is linear in the filter length and evaluation depth follows the parenthesis depth.
Each `matches` search is bounded in time and each pattern in compiled size.

Layout: `lexer` (tokens), `literals` (literals typed by field type), `ftypes` (type
families, value normalizers, orderings), `slices`, `regexp` (`matches` patterns),
`parser` (filter text to a tree of `evaluate` nodes), `evaluate` (the nodes and
`DisplayFilter`), `errors`.

Not supported (tshark has them): functions (`len()`, `upper()`...), arithmetic and
bitwise `&`, the layer operator `#`, `${field}` references, value-string names
(`opcode == "RC SEND Only"`), hostnames, date/time strings. An unsigned field compared
with a negative number uses plain integer order (tshark gives odd results there).
"""

from __future__ import annotations

from .errors import FilterError
from .evaluate import DisplayFilter
from .parser import MAX_DEPTH, KnownFields, compile_filter

__all__ = ["MAX_DEPTH", "DisplayFilter", "FilterError", "KnownFields", "compile_filter"]
