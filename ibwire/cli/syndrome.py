"""The AETH syndrome as the CLI reads it: its type (ACK, RNR NAK, NAK, reserved)
and its low bits (credit count, RNR timer or NAK code), taken from the AETH
layout's overlay fields, so the split of the byte is written only in the layout.

Decoded packets carry the parts as layer values (`syndrome_type`, `error_code`,
...); bulk columns carry the whole syndrome byte, split here by the layout's
`offsets()` shifts and masks.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np

from ibwire.headers.extended import AETH, SYNDROME_TYPES

_KINDS = {name: code for code, name in SYNDROME_TYPES.items()}
ACK, RNR_NAK, NAK = _KINDS["ACK"], _KINDS["RNR NAK"], _KINDS["NAK"]

Value = TypeVar("Value", int, np.ndarray)


def syndrome_part(syndrome: Value, name: str) -> Value:
    """Overlay field `name` of the AETH (`syndrome_type`, `credit_count`, `timer`,
    `error_code`) from syndrome byte value(s)."""
    offsets = AETH.offsets()
    first, nbytes, shift, mask = offsets[name]
    # Overlays of the syndrome byte only: the shift and mask apply to its value.
    assert (first, nbytes) == offsets["syndrome"][:2], name
    return (syndrome >> shift) & mask
