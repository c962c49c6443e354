"""ibwire: InfiniBand and RoCE packets on the wire — decode, encode, validate, analyse."""

from ibwire.capture.packets import read, write
from ibwire.crc import CrcStatus
from ibwire.decoder import Options, decode
from ibwire.encode import encode
from ibwire.fields import REGISTRY, Header, Layout
from ibwire.headers import (
    AETH,
    BTH,
    CNP_PAD,
    DETH,
    ERF,
    ETHERNET,
    FETH,
    GRH,
    IETH,
    IPV4,
    IPV6,
    LINK,
    LRH,
    OPCODES,
    RDETH,
    RETH,
    RWH,
    UDP,
    VLAN,
    XRCETH,
    AtomicAckETH,
    AtomicETH,
    ImmDt,
)
from ibwire.packet import Layer, Malformed, Packet

# Payload decoders register themselves: MADs on QP0/QP1, IPoIB on UD.
from ibwire import ipoib as _ipoib  # noqa: E402,F401  isort: skip
from ibwire import mad as _mad  # noqa: E402,F401  isort: skip

__version__ = "0.1.0"


def __getattr__(name: str):
    # The bulk engines (Numba, pyarrow) load on first use, not with `import ibwire`.
    if name in ("columns", "iter_columns"):
        from ibwire.engines import columns as _columns

        return getattr(_columns, name)
    raise AttributeError(f"module 'ibwire' has no attribute {name!r}")


__all__ = [
    "AETH", "BTH", "CNP_PAD", "DETH", "ERF", "ETHERNET", "FETH", "GRH", "IETH", "IPV4", "IPV6",
    "LINK", "LRH", "OPCODES", "RDETH", "REGISTRY", "RETH", "RWH", "UDP", "VLAN", "XRCETH",
    "AtomicAckETH", "AtomicETH", "CrcStatus", "Header", "ImmDt", "Layer", "Layout",
    "Malformed", "Options", "Packet", "columns", "decode", "encode", "iter_columns", "read",
    "write",
]
