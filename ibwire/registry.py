"""The registry of public field names: every field `ibwire fields` lists, display
filters accept and the Scapy layers carry (Wireshark's name where Wireshark has the
field, `infiniband.*`/`ibwire.*` otherwise). Layouts register their fields when they
are built (`ibwire.fields.Layout`); other modules add theirs with `Registry.add`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ibwire.field_types import BYTES, DEC

if TYPE_CHECKING:
    from ibwire.fields import Field, Layout


@dataclass(frozen=True)
class Entry:
    """A public field name and where it is defined."""

    wsname: str
    layout: Layout | None
    field: Field | None
    ftype: str
    label: str
    base: str = DEC


# Every module that defines public fields (layouts register when they are built, the
# rest with `Registry.add`). The registry imports them all before it answers its
# first question, so the field list is the same whatever was imported first.
FIELD_MODULES: tuple[str, ...] = (
    "ibwire.headers",               # the header layouts
    "ibwire.packet",                # CRC status, payload, malformation
    "ibwire.inner",                 # tshark's TCP/ICMP/ARP fields filled from Scapy
    "ibwire.ipoib",                 # IPoIB header and ARP
    "ibwire.mad",                   # MAD classes (dispatch, perf)
    "ibwire.cli.frames",            # frame.* and _ws.col.*
    "ibwire.cli.fields_out",        # tshark's aggregate fields the CLI computes
    "ibwire.analysis.providers",    # analysis fields (RC, credits)
    "ibwire.analysis.credit_fields",
    "ibwire.analysis.fabric_fields",
)


class Registry:
    """All public field names; `ibwire fields` prints it.

    `entries`, `layouts` and `protocols` (and every query) first import
    `FIELD_MODULES`; `add_layout`, `add` and `add_protocol` do not, so the modules
    can register while they are being imported."""

    def __init__(self, modules: tuple[str, ...] = ()) -> None:
        self._entries: dict[str, Entry] = {}
        self._layouts: dict[str, Layout] = {}
        self._protocols: dict[str, str] = {}
        self._modules = modules
        self._complete = not modules
        self._completing = False

    def complete(self) -> None:
        """Import every field-defining module (once; re-entrant calls return early)."""
        if self._complete or self._completing:
            return
        self._completing = True
        try:
            import importlib
            for module in self._modules:
                importlib.import_module(module)
            self._complete = True
        finally:
            self._completing = False

    @property
    def entries(self) -> dict[str, Entry]:
        if not self._complete:
            self.complete()
        return self._entries

    @property
    def layouts(self) -> dict[str, Layout]:
        if not self._complete:
            self.complete()
        return self._layouts

    @property
    def protocols(self) -> dict[str, str]:
        if not self._complete:
            self.complete()
        return self._protocols

    def add_layout(self, layout: Layout) -> None:
        if layout.name in self._layouts and self._layouts[layout.name] is not layout:
            raise ValueError(f"layout name {layout.name} registered twice")
        self._layouts[layout.name] = layout
        if layout.prefix and layout.prefix not in self._entries:
            self._entries[layout.prefix] = Entry(layout.prefix, layout, None, BYTES, layout.label)
        for f in layout.fields:
            if f.wsname and f.wsname not in self._entries:
                self._entries[f.wsname] = Entry(f.wsname, layout, f, f.ftype, f.label, f.base)

    def add(self, wsname: str, ftype: str, label: str, base: str = DEC) -> None:
        """A field that no layout holds (CRC status, analysis results, frame data)."""
        if wsname not in self._entries:
            self._entries[wsname] = Entry(wsname, None, None, ftype, label, base)

    def add_protocol(self, name: str, label: str) -> None:
        self._protocols.setdefault(name, label)

    def __contains__(self, wsname: str) -> bool:
        return wsname in self.entries

    def __getitem__(self, wsname: str) -> Entry:
        return self.entries[wsname]

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def names(self) -> list[str]:
        return sorted(self.entries)


REGISTRY = Registry(FIELD_MODULES)
