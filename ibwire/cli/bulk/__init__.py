"""The CLI's bulk path: output built from column chunks, not packet by packet.

`ibwire dump` (summary lines, `-T fields`, `-z`) and `ibwire stats` first ask
`bulk.dump.try_dump` / `bulk.stats.try_stats`; they return None when the request
is outside what the bulk path reproduces exactly, and the per-packet loop runs.
Setting IBWIRE_PER_PACKET=1 forces the per-packet loop (tests compare both).
"""

from __future__ import annotations

import os

ENV_PER_PACKET = "IBWIRE_PER_PACKET"


def enabled() -> bool:
    return os.environ.get(ENV_PER_PACKET, "") in ("", "0")
