"""A decoded packet seen through an index of its fields, for the column builders.

`credit_input.ColumnBuilder` and `rc_input.ColumnBuilder` ask each packet for some
60 fields by name; each `Packet.get` walks every layer. `Indexed` walks the packet
once (`all_fields`) and answers `get` from that walk; everything else goes to the
packet itself. The builders then produce the very same columns
(tests/test_report.py checks them against `credit_columns` and `rc_columns`).
"""

from __future__ import annotations

from typing import Any

from ibwire.packet import Packet


class Indexed:
    __slots__ = ("_pkt", "_first")

    def __init__(self, pkt: Packet) -> None:
        self._pkt = pkt
        first: dict[str, Any] = {}
        for name, value, _ in pkt.all_fields():
            if name not in first:
                first[name] = value
        self._first = first

    def get(self, wsname: str, default: Any = None) -> Any:
        return self._first.get(wsname, default)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pkt, name)
