"""Dispatch tables: management class -> body decoder, and (class, attribute ID) ->
the parts of the attribute, in one place so builders, tests and docs can list
what is supported.

| class | body after the 24-byte common header |
|---|---|
| 0x01 SMP LID-routed | M_Key, reserved, 64-byte attribute, reserved (`smp.py`) |
| 0x81 SMP directed-route | M_Key, DrSLID/DrDLID, attribute, InitialPath, ReturnPath |
| 0x03 SA | RMPP, SA header, 200 bytes of records (`sa.py`) |
| 0x04 PerfMgt | 40 reserved bytes, 192-byte attribute (`perf.py`) |
| 0x05 BaseboardMgt | B_Key, reserved, 192 bytes of data |
| 0x06 DevMgt | 40 reserved bytes, 192 bytes of data |
| 0x07 CM | 232-byte message (`cm.py`) |
| 0x21 CC | CC_Key, then log data (byte 32) or reserved + attribute (byte 64) (`cc.py`) |
| 0x30-0x4F vendor range 2 | RMPP, OUI, 216 bytes of data |
| anything else | 232 bytes of data |
"""

from __future__ import annotations

from collections.abc import Callable

from ibwire.mad import cc, cm, perf, sa, smp
from ibwire.mad._ctx import Ctx, Part
from ibwire.mad.header import decode_bm, decode_dm, decode_opaque, decode_vendor2

BodyDecoder = Callable[[Ctx], None]

CLASS_DECODERS: dict[int, BodyDecoder] = {
    0x01: smp.decode_lid, 0x81: smp.decode_dr, 0x03: sa.decode, 0x04: perf.decode,
    0x05: decode_bm, 0x06: decode_dm, 0x07: cm.decode, 0x21: cc.decode,
    **{c: decode_vendor2 for c in range(0x30, 0x50)},
}

# Class version a class uses today (IBA 1.3+): the builders' default.
CLASS_VERSIONS = {0x01: 1, 0x81: 1, 0x03: 2, 0x04: 1, 0x05: 1, 0x06: 1, 0x07: 2,
                  0x21: 2}


def body_decoder(mgmt_class: int) -> BodyDecoder:
    return CLASS_DECODERS.get(mgmt_class, decode_opaque)


def attribute_parts(mgmt_class: int, attribute_id: int) -> tuple[Part, ...] | None:
    """The parts decoding an attribute of a class, or None when kept as bytes."""
    if mgmt_class in (0x01, 0x81):
        return smp.SMP_ATTRIBUTES.get(attribute_id)
    if mgmt_class == 0x03:
        rec = sa.RECORDS.get(attribute_id)
        return rec.parts if rec else None
    table = {0x04: perf.PERF_ATTRIBUTES, 0x07: cm.CM_MESSAGES, 0x21: cc.CC_ATTRIBUTES}
    return table.get(mgmt_class, {}).get(attribute_id)


def supported() -> list[tuple[int, int]]:
    """Every (class, attribute ID) with a decoded attribute."""
    out = [(c, a) for c in (0x01, 0x81) for a in smp.SMP_ATTRIBUTES]
    out += [(0x03, a) for a in sa.RECORDS]
    out += [(0x04, a) for a in perf.PERF_ATTRIBUTES]
    out += [(0x07, a) for a in cm.CM_MESSAGES]
    out += [(0x21, a) for a in cc.CC_ATTRIBUTES]
    return out
