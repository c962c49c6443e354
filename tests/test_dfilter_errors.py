"""Display filters (`ibwire.cli.dfilter`): tshark-style errors and safety bounds."""

from __future__ import annotations

import builtins
import subprocess
import sys
import time

import pytest
from dfilter_helpers import P1, F, Pkt, err, m

from ibwire.cli.dfilter import MAX_DEPTH, FilterError, compile_filter


# ----------------------------------------------------------------------------- errors
def test_error_caret_rendering():
    e = err("infiniband.bth.psn ==== 3")
    assert e.caret() == "infiniband.bth.psn ==== 3\n                      ^"
    assert e.format() == ('"=" was unexpected in this context.\n'
                          "    infiniband.bth.psn ==== 3\n"
                          "                          ^")
    e = err("infiniband.bth.psx == 3")
    assert e.format() == ('"infiniband.bth.psx" is neither a field nor a protocol name.\n'
                          "    infiniband.bth.psx == 3\n"
                          "    ^~~~~~~~~~~~~~~~~~")
    e = err("infiniband.bth.psn == 0xzz")
    assert e.format(indent="") == ('"0xzz" is not a valid number.\n'
                                   "infiniband.bth.psn == 0xzz\n"
                                   "                      ^~~~")
    assert str(e) == '"0xzz" is not a valid number.' and e.position == 22 and e.length == 4
    e = err("(infiniband")
    assert e.format() == "Unexpected end of filter expression." and e.caret() == ""
    assert err("\tfoo").caret() == "\tfoo\n\t^~~"  # tabs keep the caret aligned


# (filter, message, position, length): message and caret as tshark 4.0.17 prints them
# (recorded from `tshark -Y`), except where noted.
TSHARK_ERRORS = [
    ("infiniband.bth.psn = 3", '"=" was unexpected in this context.', 19, 1),
    ("infiniband.bth.psn ==== 3", '"=" was unexpected in this context.', 22, 1),
    ("infiniband.bth.psn == 0xzz", '"0xzz" is not a valid number.', 22, 4),
    ("infiniband.bth.psn == 08", '"08" is not a valid number.', 22, 2),
    ("infiniband)", '")" was unexpected in this context.', 10, 1),
    ("()", '")" was unexpected in this context.', 1, 1),
    ("(infiniband", "Unexpected end of filter expression.", None, 1),
    ("((infiniband)", "Unexpected end of filter expression.", None, 1),
    ("ip.src == 192.168.2.25 and", "Unexpected end of filter expression.", None, 1),
    ("all infiniband", "Unexpected end of filter expression.", None, 1),
    ("infiniband.bth.psn == 82 ip", '"ip" was unexpected in this context.', 25, 2),
    ("infiniband.bth.psn == 82 && && ip", '"&&" was unexpected in this context.', 28, 2),
    ("and", '"and" was unexpected in this context.', 0, 3),
    ("infiniband.bth.psn in {}", '"}" was unexpected in this context.', 23, 1),
    ("infiniband.bth.psn in {82, }", '"}" was unexpected in this context.', 27, 1),
    ("infiniband.bth.psn in {82 .. }", '"}" was unexpected in this context.', 29, 1),
    ("infiniband.bth.psn in 82", '"82" was unexpected in this context.', 22, 2),
    ("infiniband.bth.psn in {82..83 .. 84}", '".." was unexpected in this context.', 30, 2),
    ("infiniband.grh.sgid == 12:34", '"12:34" is not a valid hostname or IPv6 address.', 23, 5),
    ("ip.src == fe80::1", '"fe80::1" is not a valid hostname or IPv4 address.', 10, 7),
    ("ip.src == 300.1.1.1", '"300.1.1.1" is not a valid hostname or IPv4 address.', 10, 9),
    ("ip.src == 192.168.2.24/33",
     "Netmask bits in a CIDR IPv4 address should be <= 32, not 33", 10, 15),
    ("ipv6.src == fe80::/129", "Prefix in a IPv6 address should be <= 128, not 129", 12, 10),
    ("infiniband.bth.psn == 16777216", '"16777216" too big for this field, maximum 16777215.',
     22, 8),
    ("infiniband.bth.psn == 99999999999999999999999",
     '"99999999999999999999999" causes an integer overflow.', 22, 23),
    ("infiniband.bth.psn == 1.5", '"1.5" is not a valid number.', 22, 3),
    ("infiniband.bth.psn == true", '"true" is not a valid number.', 22, 4),
    ('infiniband.bth.psn == "82"',
     'Unsigned integer (3 bytes) cannot be converted from a string ("82").', 22, 4),
    ("infiniband.bth.a == foo",
     '"foo" cannot be found among the possible values for infiniband.bth.a.', 20, 3),
    ("infiniband.bth.psn contains 1", "infiniband.bth.psn (type=Unsigned integer (3 bytes)) "
     "cannot participate in contains comparison.", 0, 18),
    ("infiniband.bth.psn matches \"82\"", "infiniband.bth.psn (type=Unsigned integer (3 bytes)) "
     "cannot participate in matches comparison.", 0, 18),
    ("infiniband.bth.psn == ip.src",
     "infiniband.bth.psn and ip.src are not of compatible types.", 22, 6),
    ("frame.protocols contains arp", "frame.protocols and arp are not of compatible types.", 25, 3),
    ("frame.protocols matches frame",
     "Matches requires a double quoted string on the right side.", 24, 5),
    ("infiniband.bth matches 64", "Matches requires a double quoted string on the right side.",
     23, 2),
    ("82 == infiniband.bth.psn",
     'Left side of "==" expression must be a field or function, not 82.', 0, 2),
    ("infiniband.bth.psn[0] == 00", '"infiniband.bth.psn" is a Unsigned integer (3 bytes) and '
     "cannot be sliced into a sequence of bytes.", 0, 18),
    ("infiniband.bth[0:2 == 64:00", "The right bracket was missing from a slice.", 27, 1),
    ("infiniband.bth[] == 64", '"]" was unexpected in this context.', 15, 1),
    ("infiniband.bth[a] == 64", '"a" is not a valid number.', 15, 1),
    ("infiniband.bth[0:0] == 64", "Range 0:0 isn't valid because length 0 isn't positive", 15, 3),
    ("infiniband.bth[0:-1] == 64", "Range 0:-1 isn't valid because length -1 isn't positive",
     15, 4),
    ("infiniband.bth[5-4] == 64",
     "Range 5-4 isn't valid because 5 is greater or equal than 4", 15, 3),
    ("infiniband.bth == zz", '"zz" is not a valid byte string.', 18, 2),
    ("infiniband.bth[0] == 0x064", '"0x064" is not a valid byte string.', 21, 5),
    ("infiniband.bth[0] == 0xf", '"0xf" is not a valid byte string.', 21, 3),
    ("infiniband.bth[0:2] == 64::00", '"64::00" is not a valid byte string.', 23, 6),
    ("eth.src == zz", '"zz" is not a valid Ethernet address.', 11, 2),
    ("eth.src == 52:54:00:8b:2d",
     '"52:54:00:8b:2d" contains too few bytes to be a valid Ethernet address.', 11, 14),
    ("eth.src == 52:54:00:8b:2d:12:00",
     '"52:54:00:8b:2d:12:00" contains too many bytes to be a valid Ethernet address.', 11, 20),
    ("eth.src == 0x52", '"0x52" contains too few bytes to be a valid Ethernet address.', 11, 4),
    ('eth.src == "abc"',
     'Ethernet or other MAC address cannot be converted from a string ("abc").', 11, 5),
    ('frame.protocols contains "abc', "The final quote was missing from a quoted string.", 29, 1),
    ('frame.protocols contains "\\q"', "\\q is not a valid character escape sequence", 26, 2),
    ('frame.protocols contains "x\\q"', "\\q is not a valid character escape sequence", 27, 2),
    ('frame.protocols contains "\\xg"', "\\x is not a valid character escape sequence", 26, 2),
    ('frame.protocols contains "\\777"', "\\777 is larger than 255.", 26, 4),
    ('frame.protocols contains "\\u0061"', "\\u0061 is not a valid universal character name",
     26, 6),
    ("infiniband.bth.psn == 'ab'", "'ab' is too long to be a valid character constant.", 22, 4),
    ("infiniband.bth.psn == ''", "Empty character constant.", 22, 2),
    ("infiniband.bth.psn == 'a", "The final quote was missing from a character constant.",
     24, 1),
    ("infiniband.bth.psn == 82 | ip", '"|" was unexpected in this context.', 25, 1),
    ("infiniband.bth.psn == 82 &&& ip", '"&" was unexpected in this context.', 27, 1),
    ("~infiniband", '"~" was unexpected in this context.', 0, 1),
    ("infiniband AND ip", '"AND" was unexpected in this context.', 11, 3),
    # tshark 4.0 prints these names unquoted; we quote them like every other token.
    ("infiniband.bth.psx", '"infiniband.bth.psx" is neither a field nor a protocol name.', 0, 18),
    ("foo && infiniband", '"foo" is neither a field nor a protocol name.', 0, 3),
    ("82", '"82" is neither a field nor a protocol name.', 0, 2),
    # tshark reports the PCRE2 message without a caret; ours has Python's and a caret.
    ('frame.protocols matches "["',
     "Regex compilation error: unterminated character set.", 24, 3),
]


@pytest.mark.parametrize("text,message,position,length", TSHARK_ERRORS,
                         ids=[c[0] for c in TSHARK_ERRORS])
def test_errors_like_tshark(text, message, position, length):
    e = err(text)
    assert (e.message, e.position) == (message, position)
    if position is not None:
        assert e.length == length
        assert e.caret() == f"{text}\n{' ' * position}^{'~' * (length - 1)}"


def test_more_errors():
    assert "not a valid number" in err('frame.time_relative > "x"').message
    assert "nested too deeply" in err("(" * (MAX_DEPTH + 1) + "ip" + ")" * (MAX_DEPTH + 1)).message
    assert err("test.label == 1").message == (
        "test.label (type=Label) cannot participate in == comparison.")
    assert err("infiniband.bth.psn not 3").message == '"not" was unexpected in this context.'
    assert err("ip.src == 1.2.3.4/").message.endswith("is not a valid hostname or IPv4 address.")
    assert err("infiniband.bth.psn == 82 ..").message == '".." was unexpected in this context.'
    assert err("82[0] == 1").message == '"[" was unexpected in this context.'
    assert err('test.text matches "a)"').message.startswith("Regex compilation error")
    assert err('test.text matches "a{99999999999}"').message.startswith("Regex compilation")
    assert err("é").message == '"é" was unexpected in this context.'
    with pytest.raises(TypeError):
        compile_filter(b"ip")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- bounds
def test_nesting_limit():
    ok = "(" * MAX_DEPTH + "infiniband" + ")" * MAX_DEPTH
    assert F(ok).matches(P1)
    deep = "".join("!(infiniband or " for _ in range(MAX_DEPTH)) + "arp" + ")" * MAX_DEPTH
    F(deep).matches(P1)  # evaluation depth follows the parentheses, within Python's limit
    e = err("(" * 100_000)
    assert e.position == MAX_DEPTH and "nested too deeply" in e.message


def test_long_filters_are_linear_and_do_not_recurse():
    start = time.perf_counter()
    assert F("!" * 100_001 + "infiniband").matches(P1) is False
    chain = " and ".join(["infiniband.bth.psn == 82"] * 20_000)
    assert F(chain).matches(P1)
    assert F(" || ".join(["arp"] * 20_000) + " || ip").matches(P1)
    assert F("infiniband.bth.psn in {" + ", ".join(map(str, range(20_000))) + "}").matches(P1)
    gap = " " * 20_000  # slice ranges are scanned in one pass (a regex here backtracked)
    for bad in (f"[1{gap}x]", f"[{gap}:{gap}x]", f"[1{gap}-{gap}2{gap}3]"):
        with pytest.raises(FilterError, match="not a valid number"):
            F(f"infiniband.payload{bad} == 01")
    for lit in ("1" * 100_000 + "x", "ab:" * 50_000, "0" + "7" * 100_000, "1." * 50_000):
        for name in ("ip.src", "infiniband.grh.sgid", "eth.src", "infiniband.payload",
                     "frame.time_relative", "infiniband.bth.psn"):
            try:  # some are valid (a long hex run is a byte string); none may be slow
                F(f"{name} == {lit}")
            except FilterError:
                pass
    assert time.perf_counter() - start < 20


@pytest.mark.parametrize("pattern,subject", [
    ("(a|aa)*c", "a" * 100_000),  # runs for minutes under Python's re
    ("(x+x+)+y", "x" * 5_000),    # backtracks for hours under the regex package too
], ids=["a-aa-c", "x+x+y"])
def test_matches_gives_up_on_catastrophic_backtracking(pattern, subject):
    pkt = Pkt({"test.text": [subject], "infiniband.payload": [subject.encode()]})
    for field in ("test.text", "infiniband.payload"):
        flt = F(f'{field} matches "{pattern}"')
        start, cpu = time.perf_counter(), time.process_time()
        assert flt.matches(pkt) is False  # a search that gives up is no match, as in tshark
        assert time.process_time() - cpu < 1.0  # the timeout counts CPU time
        assert time.perf_counter() - start < 5  # (wall time, with slack for a busy machine)
    assert m(f'!(test.text matches "{pattern}")', pkt) is True


@pytest.mark.parametrize("pattern", [
    "a{500000}", "(?:ab|c){20000}", "(?:(?:a{400}){400}){2}", "(?:x|(?:a{50}){50}){50}",
    "(?:(?:a{400}[[:alpha:](]){400}[[:alpha:])]", "(?x)(?:a{ 400 }){ 400 }",
    "(?V1)(?:[[a]b]{400}){400}"])
def test_matches_refuses_patterns_too_large_to_compile(pattern):
    # The regex package unrolls counted repeats; these would take up to ~150 MB each.
    assert err(f'test.text matches "{pattern}"').message == (
        "Regex compilation error: regular expression is too large.")


def test_matches_accepts_ordinary_counted_repeats():
    assert m('test.text matches "^.{14}$"')
    assert not m('test.text matches ".{65535}"')  # PCRE2's largest count
    uuid = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    assert m(f'test.text matches "^{uuid}$"',
             Pkt({"test.text": ["123e4567-e89b-12d3-a456-426614174000"]}))
    assert m('test.text matches "(?x) ^ conn (?# a comment ) ect {1,2} "')


def test_matches_refuses_fuzzy_matching():
    # An extension of the regex package (not in PCRE2) where it has crashed: `(?R){e<=1}`
    # is a segfault in regex up to 2026.7.10.
    for pattern in ("(?R){e<=1}", "(?:a(?R)?b){e<=1}", "(?:connect){1<=e<=2}",
                    "(?:connect){2i+1d<=3}", "(?x)(?:connect){ e }"):
        assert err(f'test.text matches "{pattern}"').message == (
            "Regex compilation error: fuzzy matching is not supported.")
    assert m('test.text matches "o{1}n{2}"') and not m('test.text matches "{x}"')


def test_matches_huge_patterns_neither_crash_nor_exhaust_memory():
    # Compiled, these take gigabytes or overflow the C stack of the regex package.
    code = ("from ibwire.cli.dfilter import compile_filter, FilterError\n"
            "for p in ['a{4294967294}', '(?:ab|c){200000}', '(?:(?:a{1000}){1000}){1000}',\n"
            "          '(?R){e<=1}']:\n"
            "    try:\n"
            "        compile_filter(f'infiniband.payload matches \"{p}\"').matches(None)\n"
            "    except FilterError as e:\n"
            "        print(e.message)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines() == ["Regex compilation error: regular expression is "
                                       "too large."] * 3 + [
        "Regex compilation error: fuzzy matching is not supported."]


def test_matches_never_evaluates_python(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("Python code evaluation")
    for name in ("eval", "exec", "compile"):  # (regex.compile itself runs an import)
        monkeypatch.setattr(builtins, name, boom)
    assert m('test.text matches "(?-i)^Connect"') and not m('test.text matches "(?-i)^connect"')
