"""Known packets from protocol-facts §4.3: scapy's RoCE test frames (R1-R5) and
frames of the public native-IB sample (N1, N2), with their expected CRCs."""

from __future__ import annotations

from dataclasses import dataclass


def _hex(text: str) -> bytes:
    return bytes.fromhex("".join(text.split()))


@dataclass(frozen=True)
class Vector:
    name: str
    encap: str
    data: bytes
    crc32: int          # zlib.crc32 of the masked ICRC input
    icrc_wire: bytes
    vcrc_wire: bytes | None = None


VECTORS = [
    Vector("R1", "eth", _hex("""
        24 8a 07 a8 fa 22 24 8a 07 a8 fa 22 08 00 45 01 00 40 04 78 40 00 40 11 b4 d5 c0 a8
        00 07 c0 a8 00 07 c0 00 12 b7 00 2c ac a2 24 60 ff ff 00 00 00 d3 00 cf 17 10 46 30
        81 8b e2 89 35 d9 0e 9a 95 50 54 01 be 88 5e 50 00 00 78 f3 53 f3"""),
           0xF353F378, _hex("78 f3 53 f3")),
    Vector("R2", "eth", _hex("""
        e4 1d 2d ab 2b c2 7c fe 90 64 3b 32 08 00 45 c2 00 3c 71 8c 40 00 40 11 91 61 0a 00
        11 01 0a 00 12 01 00 00 12 b7 00 28 00 00 81 00 ff ff 40 00 01 18 00 00 00 00 00 00
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 82 fd 00 2a"""),
           0x2A00FD82, _hex("82 fd 00 2a")),
    Vector("R3", "eth", _hex("""
        7c fe 90 75 3c d8 7c fe 90 75 3c d8 89 15 60 20 00 00 00 28 1b 40 00 00 00 00 00 00
        00 00 00 00 ff ff 0f 00 00 02 00 00 00 00 00 00 00 00 00 00 ff ff 0f 00 00 02 0a 70
        ff ff 00 00 01 0a 80 a7 88 bc 00 00 55 d4 c0 72 60 00 00 00 47 b3 00 00 00 05 00 00
        00 00 01 00 00 00 e3 d8 56 bb"""),
           0xBB56D8E3, _hex("e3 d8 56 bb")),
    Vector("R4", "eth", _hex("""
        7c fe 90 75 3c d8 7c fe 90 75 3c d8 89 15 60 20 00 00 00 14 1b 40 00 00 00 00 00 00
        00 00 00 00 ff ff 0f 00 00 02 00 00 00 00 00 00 00 00 00 00 ff ff 0f 00 00 02 11 40
        ff ff 00 00 01 09 00 a7 88 c0 00 00 00 05 25 f0 c0 38"""),
           0x38C0F025, _hex("25 f0 c0 38")),
    Vector("R5", "eth", _hex("""
        24 8a 07 a8 fa 22 24 8a 07 a8 fa 22 86 dd 6e 21 fa ce 00 2c 11 ff 20 22 00 00 00 00
        00 00 00 00 00 00 00 00 10 23 20 23 00 00 00 00 00 00 00 00 00 00 00 00 10 24 c0 00
        12 b7 00 2c e7 c5 24 60 ff ff 00 00 00 d3 00 cf 17 10 46 30 81 8b e2 89 35 d9 0e 9a
        95 50 54 01 be 88 5e 50 00 00 3e 5b 74 3b"""),
           0x3B745B3E, _hex("3e 5b 74 3b")),
    Vector("N1", "ib", _hex("""
        00 02 00 04 00 07 00 01 11 40 ff ff 00 87 04 08 00 d4 0a 55 1f 00 00 01 a8 03 55 50
        30 81"""),
           0x505503A8, _hex("a8 03 55 50"), _hex("30 81")),
    Vector("N2", "ib", _hex("""
        00 03 c0 00 00 2b 00 05 60 00 00 00 00 7c 1b 00 fe 80 00 00 00 00 00 00 00 02 c9 03
        00 00 1f 2d ff 12 40 1b ff ff 00 00 00 00 00 00 ff ff ff ff 64 40 ff ff 00 ff ff ff
        00 0d e6 f8 00 00 0b 1b 00 00 00 48 08 00 00 00 45 00 00 60 00 00 40 00 40 11 25 6b
        0a 00 00 24 0a 00 00 ff c1 5d c1 5d 00 4c c8 db 00 00 10 06 00 00 00 3c 02 00 c1 5e
        c0 a8 7f 24 00 00 00 00 00 00 00 00 33 39 66 61 65 30 32 39 2d 32 38 35 64 2d 34 35
        32 37 2d 62 39 36 30 2d 31 34 64 34 32 35 33 63 35 30 63 32 00 00 00 00 00 00 00 00
        05 66 d5 4d 35 df"""),
           0x4DD56605, _hex("05 66 d5 4d"), _hex("35 df")),
]

BY_NAME = {v.name: v for v in VECTORS}
N1_MASKED = _hex("f0 02 00 04 00 07 00 01 11 40 ff ff ff 87 04 08 00 d4 0a 55 1f 00 00 01")
