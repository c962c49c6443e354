"""Display filters (`ibwire.cli.dfilter`): operators, logic, literals, slices, sets,
multiple occurrences and the API. Errors, bounds, properties and the tshark differential
are in test_dfilter_errors.py."""

from __future__ import annotations

import builtins

import pytest
from dfilter_helpers import EMPTY, P1, P2, F, Pkt, check, m, v6

from ibwire.cli.dfilter import FilterError, compile_filter
from ibwire.fields import REGISTRY


# ----------------------------------------------------------------------------- operators
def test_equal():
    check([("infiniband.bth.psn == 82", True), ("infiniband.bth.psn == 83", False),
           ("infiniband.bth.psn eq 82", True), ("infiniband.bth.psn any_eq 83", False)])


def test_not_equal():
    check([("infiniband.bth.psn != 83", True), ("infiniband.bth.psn != 82", False),
           ("infiniband.bth.psn ne 83", True), ("infiniband.bth.psn all_ne 82", False)])


@pytest.mark.parametrize("op,word,true_for,false_for", [
    (">", "gt", 81, 82), ("<", "lt", 83, 82), (">=", "ge", 82, 83), ("<=", "le", 82, 81)])
def test_ordering(op, word, true_for, false_for):
    for form in (op, word):  # psn is 82
        assert m(f"infiniband.bth.psn {form} {true_for}") is True
        assert m(f"infiniband.bth.psn {form} {false_for}") is False


def test_all_eq_and_any_ne():
    check([("infiniband.bth.psn === 82", True), ("infiniband.bth.psn all_eq 83", False),
           ("infiniband.bth.psn !== 83", True), ("infiniband.bth.psn any_ne 82", False),
           ("infiniband.bth.psn ~= 82", False)])


def test_contains():
    check([("infiniband.payload contains 03:04", True),
           ("infiniband.payload contains 04:03", False),
           ('test.text contains "Request"', True), ('test.text contains "request"', False),
           ('infiniband.payload contains "\\x02\\x03"', True),
           ("eth.src contains da:f9", True), ("eth.src contains f9:da", False),
           ('test.text contains ""', False)])  # tshark: an empty needle never matches


def test_matches_is_case_insensitive_by_default_like_tshark4():
    check([('test.text matches "^connect"', True), ('test.text ~ "REQUEST$"', True),
           ('test.text matches "(?-i)^connect"', False),
           ('test.text matches "(?-i)^Connect"', True),
           ('test.text matches "^Request"', False),
           ('infiniband.bth matches "^d\\\\x00"', True),  # bytes: regex \x00 after "d"
           ('infiniband.payload matches "\\\\x05\\\\x06"', True),
           ('infiniband.payload[0:2] matches "^\\x01\\x02$"', True)])


def test_matches_string_field_is_text():
    assert m('test.text matches "^a\\"b\\\\x00\u00e9$"', P2)
    assert m('test.text matches "^.{5}$"', P2)  # five characters, not six bytes


def test_in_set_value_list_with_commas_or_spaces():
    check([("infiniband.bth.psn in {80, 82, 90}", True), ("infiniband.bth.psn in {80 82}", True),
           ("infiniband.bth.psn in {80,81}", False), ("infiniband.bth.psn in{82}", True),
           ("infiniband.bth.psn in {0x52}", True), ("infiniband.bth.psn in {80, 81 82}", True)])


def test_in_set_ranges():
    check([("infiniband.bth.psn in {1..5, 80..90}", True),
           ("infiniband.bth.psn in {80 .. 82}", True),
           ("infiniband.bth.psn in {82..82}", True), ("infiniband.bth.psn in {83..90}", False),
           ("infiniband.bth.psn in {90..80}", False), ("infiniband.bth.psn in {80 ..83}", True),
           ("ip.src in {192.168.2.1..192.168.2.30}", True),
           ("frame.time_relative in {0.2 .. 0.3}", True),
           ("frame.time_relative in {0.3..1}", False)])


def test_in_set_typed_members():
    check([("ip.src in {10.0.0.1, 192.168.2.0/24}", True), ("ip.src in {10.0.0.0/8}", False),
           ('test.text in {"x", "ConnectRequest"}', True), ("eth.src in {52:54:00:da:f9:2d}", True),
           ("infiniband.bth.se in {true}", False), ("infiniband.bth.a in {true}", True),
           ("infiniband.bth.psn in {infiniband.lrh.dlid, 82}", True),
           ("infiniband.lrh.dlid in {infiniband.lrh.slid}", False)])


def test_not_in():
    check([("infiniband.bth.psn not in {80, 81}", True), ("infiniband.bth.psn not in {82}", False)])
    assert m("infiniband.bth.psn not in {82}", EMPTY) is True  # tshark: !(a in {...})
    assert m("infiniband.bth.psn in {82}", EMPTY) is False


def test_presence_of_fields_and_protocols():
    check([("infiniband", True), ("arp", False), ("infiniband.bth.psn", True),
           ("infiniband.aeth.msn", False), ("test.label", True), ("!arp", True)])
    assert m("arp", Pkt({}, {"arp"}))


# ----------------------------------------------------------------------------- logic
@pytest.mark.parametrize("a,b", [(x, y) for x in (True, False) for y in (True, False)])
def test_logical_operators(a, b):
    fa = "infiniband" if a else "arp"
    fb = "ip" if b else "ipv6"
    for word, sym, want in (("and", "&&", a and b), ("or", "||", a or b), ("xor", "^^", a != b)):
        assert m(f"{fa} {word} {fb}") is want
        assert m(f"{fa} {sym} {fb}") is want
    assert m(f"not {fa}") is (not a)
    assert m(f"!{fa}") is (not a)
    assert m(f"!!{fa}") is a


def test_precedence_not_and_xor_or():
    t, f = "infiniband", "arp"
    # and binds tighter than or (tshark verified: psn==82 || psn==45 && ip.src==... -> 1 2)
    assert m(f"{t} || {t} && {f}") is True
    assert m(f"({t} || {t}) && {f}") is False
    # not binds tighter than and / or
    assert m(f"not {f} and {t}") is True
    assert m(f"not ({f} or {t})") is False
    assert m(f"not {t} or {t}") is True
    # xor sits between and (tighter) and or (looser)
    assert m(f"{t} or {t} xor {t}") is True        # t or (t xor t)
    assert m(f"({t} or {t}) xor {t}") is False
    assert m(f"{t} xor {t} and {f}") is True       # t xor (t and f)
    assert m(f"({t} xor {t}) and {f}") is False
    # left to right, n-ary
    assert m(f"{t} xor {t} xor {t}") is True
    assert m(f"{f} or {f} or {f} or {t}") is True


def test_parentheses_and_whitespace():
    assert m("((infiniband.bth.psn==82))&&(!arp)")
    assert m("  infiniband.bth.psn\t==\n82  ")


def test_empty_filter_matches_everything():
    for text in ("", "   ", "\t\n"):
        f = F(text)
        assert f.matches(P1) and f.matches(EMPTY) and f.fields == set()


# ----------------------------------------------------------------------------- literals
def test_integer_literals():
    check([("infiniband.bth.psn == 0x52", True), ("infiniband.bth.psn == 0X52", True),
           ("infiniband.bth.psn == 0122", True),  # leading zero is octal, as in tshark
           ("infiniband.bth.psn == 122", False), ("infiniband.bth.psn == 0b1010010", True),
           ("infiniband.bth.psn == +82", True), ("infiniband.bth.psn == 'R'", True),
           ("infiniband.bth.psn == '\\x52'", True), ("infiniband.bth.psn == '\\122'", True),
           ("infiniband.bth.psn > -1", True), ("infiniband.bth.psn == 0", False),
           ("infiniband.reth.va == 0xdeadbeef00", True),
           ("infiniband.reth.va == 18446744073709551615", False)])


def test_boolean_literals():
    check([("infiniband.bth.a == 1", True), ("infiniband.bth.a == true", True),
           ("infiniband.bth.a == True", True), ("infiniband.bth.a == TRUE", True),
           ("infiniband.bth.a == 2", True), ("infiniband.bth.a == 0x1", True),
           ("infiniband.bth.a == false", False), ("infiniband.bth.se == False", True),
           ("infiniband.bth.se == 0", True), ("infiniband.bth.a > 0", True),
           ("infiniband.bth.a", True), ("infiniband.bth.se", True)])


def test_string_literals_and_escapes():
    check([('test.text == "ConnectRequest"', True), ("test.text == ConnectRequest", True),
           ('test.text == "\\x43onnect\\x52equest"', True),
           ('test.text == "\\103onnectRequest"', True),
           ('test.text == "connectrequest"', False), ('test.text > "Conn"', True),
           ('test.text < "Conn"', False), ('test.text < "D"', True)])  # strings: bytewise
    check([('test.text == "a\\"b\\x00\\u00e9"', True), ('test.text == "a\\"b\\0\u00e9"', True),
           ('test.text == r"a\\"b"', False)], P2)
    assert m('test.text contains r"\\d"', Pkt({"test.text": ["x\\d"]}))


def test_byte_string_literals():
    check([("infiniband.payload == 01:02:03:04:05:06:07:08", True),
           ("infiniband.payload == 01-02-03-04-05-06-07-08", True),
           ("infiniband.payload == 01.02.03.04.05.06.07.08", True),
           ("infiniband.payload == 0102030405060708", True),
           ("infiniband.payload == 0102.0304.0506.0708", True),
           ("infiniband.payload == 01:02:03:04:05:06:07", False),
           ("infiniband.payload[0] == 0x01", True), ("infiniband.payload[0] == 1", True),
           ("infiniband.payload[0:2] == 0102", True), ("infiniband.payload[0:2] == 010", False),
           ("infiniband.payload[0] == '\\x01'", True),
           ('infiniband.bth[0:2] == "d\\x00"', True),
           # tshark orders byte strings shorter first, then byte by byte
           ("infiniband.payload > 09", True), ("infiniband.payload[0:2] < 01:03", True),
           ("infiniband.payload < 01:02:03:04:05:06:07:09", True),
           ("infiniband.payload < 01:02:03:04:05:06:07:08:00", True),
           ("infiniband.payload >= 01:02:03:04:05:06:07:09", False)])


def test_address_literals():
    check([("infiniband.grh.sgid == fe80::2:c903:0:1f2d", True),
           ("infiniband.grh.sgid == fe80:0:0:0:2:c903:0:1f2d", True),
           ("infiniband.grh.sgid == fe80::1", False), ("infiniband.grh.sgid == fe80::/64", True),
           ("infiniband.grh.sgid == fe80::/10", True), ("infiniband.grh.dgid == ::1", False),
           ("infiniband.grh.sgid > infiniband.grh.dgid", True),
           ("ip.src == 192.168.2.25", True), ("ip.src == 192.168.2.24", False),
           ("ip.src == 192.168.2.24/31", True), ("ip.src != 192.168.2.24/31", False),
           ("ip.src == 0.0.0.0/0", True), ("ip.src > 192.168.2.24", True),
           ("eth.src == 52:54:00:da:f9:2d", True), ("eth.src == 52-54-00-da-f9-2d", True),
           ("eth.src == 5254.00da.f92d", True), ("eth.src == 525400daf92d", True),
           ("eth.src == 52:54:00:da:f9:2e", False)])


def test_double_literals():
    check([("frame.time_relative == 0.25", True), ("frame.time_relative > .2", True),
           ("frame.time_relative < 1", True), ("frame.time_relative >= 2.5e-1", True),
           ("frame.time_relative > 0.25", False)])


def test_forced_field_and_forced_literal():
    assert m("infiniband.lrh.dlid == .infiniband.lrh.slid", P2)
    assert m("infiniband.payload[0] == :01")


# ----------------------------------------------------------------------------- slices
def test_slices():
    check([("infiniband.payload[0:4] == 01:02:03:04", True),
           ("infiniband.payload[2] == 03", True),
           ("infiniband.payload[1-3] == 02:03:04", True),
           ("infiniband.payload[6:] == 07:08", True),
           ("infiniband.payload[:2] == 01:02", True),
           ("infiniband.payload[-1] == 08", True),
           ("infiniband.payload[-2:2] == 07:08", True),
           ("infiniband.payload[-3--1] == 06:07:08", True),
           ("infiniband.payload[0,7] == 01:08", True),
           ("infiniband.payload[0:2,6:] == 01:02:07:08", True),
           ("infiniband.payload[ 0 : 2 ] == 01:02", True),
           ("infiniband.payload[2:4][1] == 04", True),
           ("infiniband.payload[0:4] == 01:02:03:05", False)])


def test_slices_out_of_range_give_no_value():
    check([("infiniband.payload[0:9] contains 01", False), ("infiniband.payload[8] == 00", False),
           ("infiniband.payload[-9] == 01", False), ("infiniband.payload[-8] == 01", True),
           ("infiniband.payload[7:]", True), ("infiniband.payload[8:]", False),
           ("infiniband.payload[0:9]", False)])


def test_slices_of_addresses_strings_and_protocols():
    pkt = Pkt({"infiniband": [bytes.fromhex("6400ffff")]}, {"infiniband"})
    assert m("infiniband[0:2] == 64:00", pkt) and m("infiniband contains ff:ff", pkt)
    check([("ip.src[0] == c0", True), ("ip.src[3] == 19", True),
           ("eth.src[0:3] == 52:54:00", True), ("infiniband.grh.sgid[0:2] == fe:80", True),
           ('test.text[0:7] == "Connect"', True), ("test.text[0] == 43", True),
           ('infiniband.bth[0] < "e"', True)])


# ----------------------------------------------------------------------------- occurrences
def test_multiple_occurrences_follow_tshark4():
    # ip.addr holds 192.168.2.25 and 192.168.2.24 (verified with tshark 4.0.17 on frame 1)
    check([("ip.addr == 192.168.2.25", True), ("ip.addr != 192.168.2.25", False),
           ("ip.addr ~= 192.168.2.25", True), ("ip.addr !== 192.168.2.25", True),
           ("ip.addr === 192.168.2.25", False), ("ip.addr != 10.0.0.1", True),
           ("ip.addr === 192.168.2.0/24", True), ("ip.addr > 192.168.2.24", True),
           ("all ip.addr > 192.168.2.24", False), ("any ip.addr != 192.168.2.25", True),
           ("all ip.addr == 192.168.2.0/24", True), ("all ip.addr in {192.168.2.25}", False),
           ("any ip.addr in {192.168.2.25}", True), ("all eth.addr contains 52:54", True)])
    check([("infiniband.bth.psn == 2", True), ("infiniband.bth.psn != 2", False),
           ("infiniband.bth.psn > 1", True), ("all infiniband.bth.psn > 1", False)], P2)


def test_absent_field_comparisons_are_false():
    for f in ("infiniband.bth.psn == 1", "infiniband.bth.psn != 1", "infiniband.bth.psn ~= 1",
              "infiniband.bth.psn === 1", "infiniband.bth.psn < 1",
              "infiniband.payload contains 01",
              'test.text matches "."', "infiniband.bth.psn in {0..99}",
              "infiniband.lrh.dlid == infiniband.lrh.slid"):
        assert m(f, EMPTY) is False, f
    assert m("!(infiniband.bth.psn == 1)", EMPTY) is True


def test_field_to_field():
    check([("infiniband.lrh.dlid == infiniband.lrh.slid", False),
           ("infiniband.lrh.dlid != infiniband.lrh.slid", True),
           ("infiniband.lrh.dlid < infiniband.lrh.slid", True),
           ("infiniband.bth.psn > infiniband.bth.opcode", True),
           ("ip.src != ip.dst", True), ("eth.src == eth.dst", False),
           ("eth.addr == eth.src", True),
           ("infiniband.payload contains infiniband.payload[2:2]", True)])
    assert m("infiniband.lrh.dlid == infiniband.lrh.slid", P2)


def test_bad_packet_values_are_skipped_not_raised():
    odd = Pkt({"infiniband.bth.psn": ["x", None, 82], "ip.src": [b"\x01", "10.0.0.1"],
               "infiniband.payload": [7, b"\x01"], "test.text": [b"ab\xff", 3],
               "frame.time_relative": ["1.0", 0.5]})
    assert m("infiniband.bth.psn == 82", odd)
    assert m("ip.src == 10.0.0.1", odd)
    assert m("infiniband.payload == 01", odd)
    assert m('test.text matches "^ab"', odd)
    assert m("frame.time_relative == 0.5", odd) and not m("frame.time_relative == 1", odd)


# ----------------------------------------------------------------------------- API
def test_fields_property_lists_names_read():
    f = F("infiniband && ip.src == 10.0.0.1 || infiniband.payload[0] == 01 || "
          "infiniband.lrh.dlid == infiniband.lrh.slid || "
          "infiniband.bth.psn in {infiniband.aeth.msn}")
    assert f.fields == {"infiniband", "ip.src", "infiniband.payload", "infiniband.lrh.dlid",
                        "infiniband.lrh.slid", "infiniband.bth.psn", "infiniband.aeth.msn"}
    assert isinstance(f.fields, set)
    assert f(P1) is True and repr(f).startswith("DisplayFilter(")


@pytest.fixture
def registry():
    """REGISTRY with test entries added, restored afterwards."""
    entries, protocols = dict(REGISTRY.entries), dict(REGISTRY.protocols)
    REGISTRY.add("dftest.qp", "uint24", "Test QP")
    REGISTRY.add("dftest.gid", "ipv6", "Test GID")
    REGISTRY.add_protocol("dftestproto", "Test protocol")
    yield REGISTRY
    REGISTRY.entries.clear()
    REGISTRY.entries.update(entries)
    REGISTRY.protocols.clear()
    REGISTRY.protocols.update(protocols)


def test_registry_lookup_and_known_fields_override(registry):
    pkt = Pkt({"dftest.qp": [0x11], "dftest.gid": [v6("fe80::1")]}, {"dftestproto"})
    assert compile_filter("dftest.qp == 0x11 && dftest.gid == fe80::1 && dftestproto").matches(pkt)
    with pytest.raises(FilterError, match="neither a field"):
        compile_filter("dftest.nope")
    # known_fields is asked first, and None falls back to the registry
    extra = {"dftest.qp": "bytes", "cli.extra": "uint8"}.get
    assert compile_filter("dftest.qp == 11", extra).matches(Pkt({"dftest.qp": [b"\x11"]}))
    assert compile_filter("cli.extra == 3 && dftest.gid", extra).matches(
        Pkt({"cli.extra": [3], "dftest.gid": [v6("::")]}))


def test_never_evaluates_python(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("Python code evaluation")
    for name in ("eval", "exec", "compile", "__import__"):
        monkeypatch.setattr(builtins, name, boom)
    for text in ("__import__('os').system('true')", "infiniband.bth.psn == 82",
                 'test.text matches "(?-i)x" || ip.addr in {1.2.3.4/8}'):
        try:
            F(text)
        except FilterError:
            pass
