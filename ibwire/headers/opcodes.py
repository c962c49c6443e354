"""The 256-entry BTH opcode table (IBA Vol. 1 §9.2.1, Table 35; Annex A19 for
FLUSH/ATOMIC WRITE; RoCEv2 Annex A17 for CNP).

Each entry says which extended headers follow the BTH, in order, and whether a
payload follows. Header order for every transport is
RDETH, DETH, XRCETH, FETH, RETH|AtomicETH, AETH, AtomicAckETH, ImmDt|IETH.
"""

from __future__ import annotations

from dataclasses import dataclass

TRANSPORTS = {0: "RC", 1: "UC", 2: "RD", 3: "UD", 4: "CNP", 5: "XRC", 6: "Vendor", 7: "Vendor"}

# Operation (low 5 bits): name, extended headers for RC/UC, payload?, which
# transports define it ("rucx" letters: r=RC, u=UC, d=RD, x=XRC; UD listed apart).
_OPS: dict[int, tuple[str, tuple[str, ...], bool, str]] = {
    0x00: ("Send First", (), True, "rudx"),
    0x01: ("Send Middle", (), True, "rudx"),
    0x02: ("Send Last", (), True, "rudx"),
    0x03: ("Send Last with Immediate", ("immdt",), True, "rudx"),
    0x04: ("Send Only", (), True, "rudx"),
    0x05: ("Send Only with Immediate", ("immdt",), True, "rudx"),
    0x06: ("RDMA Write First", ("reth",), True, "rudx"),
    0x07: ("RDMA Write Middle", (), True, "rudx"),
    0x08: ("RDMA Write Last", (), True, "rudx"),
    0x09: ("RDMA Write Last with Immediate", ("immdt",), True, "rudx"),
    0x0A: ("RDMA Write Only", ("reth",), True, "rudx"),
    0x0B: ("RDMA Write Only with Immediate", ("reth", "immdt"), True, "rudx"),
    0x0C: ("RDMA Read Request", ("reth",), False, "rdx"),
    0x0D: ("RDMA Read Response First", ("aeth",), True, "rdx"),
    0x0E: ("RDMA Read Response Middle", (), True, "rdx"),
    0x0F: ("RDMA Read Response Last", ("aeth",), True, "rdx"),
    0x10: ("RDMA Read Response Only", ("aeth",), True, "rdx"),
    0x11: ("Acknowledge", ("aeth",), False, "rdx"),
    0x12: ("Atomic Acknowledge", ("aeth", "atomicacketh"), False, "rdx"),
    0x13: ("CmpSwap", ("atomiceth",), False, "rdx"),
    0x14: ("FetchAdd", ("atomiceth",), False, "rdx"),
    0x15: ("Resync", (), False, "d"),
    0x16: ("Send Last with Invalidate", ("ieth",), True, "rx"),
    0x17: ("Send Only with Invalidate", ("ieth",), True, "rx"),
    0x1C: ("Flush", ("feth", "reth"), False, "r"),
    0x1D: ("Atomic Write", ("reth",), True, "r"),
}
_RESPONSES = range(0x0D, 0x13)
_UC_LAST = 0x0B


@dataclass(frozen=True)
class Opcode:
    code: int
    transport: str        # RC, UC, RD, UD, CNP, XRC, Vendor
    name: str             # operation name; "Reserved" where the transport has none
    headers: tuple[str, ...]  # extended header layout names, in wire order
    payload: bool
    valid: bool

    @property
    def label(self) -> str:
        return f"{self.transport} {self.name}"

    @property
    def is_request(self) -> bool:
        return self.valid and self.transport in ("RC", "UC", "RD", "UD", "XRC") and \
            not (0x0D <= (self.code & 0x1F) <= 0x12)

    @property
    def is_response(self) -> bool:
        return self.valid and (self.code & 0x1F) in _RESPONSES and self.transport != "UD"


def _entry(code: int) -> Opcode:
    prefix, low = code >> 5, code & 0x1F
    transport = TRANSPORTS[prefix]
    if transport == "Vendor":
        return Opcode(code, transport, f"Manufacturer Specific ({code:#04x})", (), True, False)
    if transport == "CNP":
        # RoCEv2 uses 0x81; Wireshark's table names 0x80. Both carry 16 reserved bytes.
        if code in (0x80, 0x81):
            return Opcode(code, transport, "Congestion Notification", ("cnp",), False, True)
        return Opcode(code, transport, "Reserved", (), True, False)
    if transport == "UD":
        if low in (0x04, 0x05):
            name, hdrs, payload, _ = _OPS[low]
            return Opcode(code, transport, name, ("deth",) + hdrs, payload, True)
        return Opcode(code, transport, "Reserved", (), True, False)
    letter = {"RC": "r", "UC": "u", "RD": "d", "XRC": "x"}[transport]
    op = _OPS.get(low)
    if op is None or letter not in op[3] or (transport == "UC" and low > _UC_LAST):
        return Opcode(code, transport, "Reserved", (), True, False)
    name, hdrs, payload, _ = op
    if transport == "RD":
        # Requests carry RDETH and DETH; responses carry RDETH only.
        extra = ("rdeth",) if low in _RESPONSES else ("rdeth", "deth")
        hdrs = extra + hdrs
    elif transport == "XRC" and low not in _RESPONSES:
        hdrs = ("xrceth",) + hdrs
    return Opcode(code, transport, name, hdrs, payload, True)


# A list: the protocol graph may put a new extended header in an opcode's chain.
OPCODES: list[Opcode] = [_entry(c) for c in range(256)]

# Named constants for the opcodes other modules single out (RC ones are looked up
# by name, e.g. `ibwire.gen.rcwire.rc_opcode`).
UD_SEND_ONLY, UD_SEND_ONLY_IMM = 0x64, 0x65
CNP = 0x81
