"""Analysis field providers: whole-capture analyses that add per-packet fields.

A provider runs once over a capture before packets are filtered or printed and
then answers, for each frame (0-based row in capture order), the values of its
fields. `ibwire dump` asks only the providers whose fields the command line names
(in `-Y`, `-e`, or the `infiniband.analysis` prefix), attaches their values to
each packet as extra fields (`Packet.add`), and from there display filters,
`-T fields/json` and `-V` treat them like any decoded field.

To add one (e.g. link-credit fields): write a `FieldProvider` with its field list
and `run(path)`, and call `register(provider)` at import of a module listed in
`PROVIDER_MODULES`. Its field names are registered in the field registry (so
`ibwire fields` lists them and filters know their types) at registration.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ibwire.fields import REGISTRY

RowValues = Callable[[int], dict[str, Any]]
EXPERT = "ibwire.expert"        # list of (severity, group, protocol, summary) for -z expert
# Modules that register providers when imported (missing ones are skipped).
PROVIDER_MODULES = ("ibwire.analysis.rc_provider", "ibwire.analysis.credits_provider")


@dataclass(frozen=True)
class FieldProvider:
    name: str
    fields: tuple[tuple[str, str, str], ...]       # (field name, ftype, label)
    run: Callable[[str], RowValues]               # capture path -> values of a row

    def names(self) -> list[str]:
        return [f[0] for f in self.fields]


PROVIDERS: dict[str, FieldProvider] = {}
_loaded = False


def register(provider: FieldProvider) -> None:
    for wsname, ftype, label in provider.fields:
        REGISTRY.add(wsname, ftype, label)
    PROVIDERS[provider.name] = provider


def load() -> dict[str, FieldProvider]:
    global _loaded
    if not _loaded:
        _loaded = True
        for module in PROVIDER_MODULES:
            try:
                importlib.import_module(module)
            except ImportError:
                continue
    return PROVIDERS


def wanted(texts: Iterable[str], expert: bool = False) -> list[FieldProvider]:
    """The providers whose fields (or a prefix of them) appear in these texts; all of
    them when expert items are asked for."""
    joined = " ".join(t for t in texts if t)
    if expert:
        return list(load().values())
    out = []
    for p in load().values():
        if any(_mentions(joined, n) for n in p.names()):
            out.append(p)
    return out


def _mentions(text: str, name: str) -> bool:
    parts = name.split(".")
    # The field itself, or any dotted prefix deeper than the protocol ("infiniband.analysis").
    return any(".".join(parts[:k]) in text for k in range(len(parts), 1, -1))


def attach(path: str, providers: list[FieldProvider]) -> Callable[[int, Any], None] | None:
    """Run the providers over the capture; returns `add(row, packet)` that adds a row's
    values to the packet, or None when there is nothing to add."""
    runs = [p.run(path) for p in providers]
    if not runs:
        return None

    def add(row: int, pkt: Any) -> None:
        for values in runs:
            for name, value in values(row).items():
                for v in value if isinstance(value, list) else (value,):
                    pkt.add(name, v)
    return add


def provider_fields(path: str, texts: Iterable[str], expert: bool = False
                    ) -> Callable[[int, Any], None] | None:
    """`attach` for the providers the command line needs (none: None, nothing runs)."""
    chosen = wanted(texts, expert)
    if not chosen or path == "-":       # standard input cannot be read twice
        return None
    return attach(path, chosen)


load()
