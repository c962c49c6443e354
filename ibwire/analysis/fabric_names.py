"""Link width, speed and state spelled the way infiniband-diags prints them.

libibmad's dump functions (used by iblinkinfo, smpquery, perfquery) print the
PortInfo encodings (IBA 14.2.5.6) as "4X", "25.78125 Gbps", "Active", "LinkUp";
ibnetdiscover prints the compact "4xEDR". A port whose PortState is Down carries
no valid width or speed (IBA C14-24.2.1), so none is printed for it.
"""

from __future__ import annotations

from ibwire.mad.names import PHYS_STATES, PORT_STATES

WIDTHS = {1: "1X", 2: "4X", 4: "8X", 8: "12X", 16: "2X"}
SPEEDS = {1: "2.5 Gbps", 2: "5.0 Gbps", 4: "10.0 Gbps"}
EXT_SPEEDS = {1: "14.0625 Gbps", 2: "25.78125 Gbps", 4: "53.125 Gbps", 8: "106.25 Gbps"}
EXT_SPEEDS2 = {1: "212.5 Gbps"}            # LinkSpeedExtActive2 (XDR)
COMPAT_SPEEDS = {1: "SDR", 2: "DDR", 4: "QDR"}
COMPAT_EXT = {1: "FDR", 2: "EDR", 4: "HDR", 8: "NDR"}
COMPAT_EXT2 = {1: "XDR"}
NODE_KINDS = {1: "CA", 2: "Switch", 3: "Router"}
TOPO_KINDS = {1: "Ca", 2: "Switch", 3: "Rt"}      # ibnetdiscover's node keywords
TOPO_PREFIX = {1: "H", 2: "S", 3: "R"}
PORT_DOWN = 1
CAP_EXT_SPEEDS = 1 << 14                          # PortInfo CapabilityMask bit 14


def width_text(code: int | None) -> str | None:
    if not code:
        return None
    return WIDTHS.get(code, f"undefined ({code})")


def bits_text(code: int | None, table: dict[int, str]) -> str | None:
    """A supported/enabled bit mask: every set value joined by " or "."""
    if not code:
        return None
    parts = [name for bit, name in table.items() if code & bit]
    return " or ".join(parts) if parts else f"undefined ({code})"


def speed_text(speed: int | None, ext: int | None = 0, ext2: int | None = 0) -> str | None:
    """The active speed: the extended speed when one is active, else the base one."""
    if ext2:
        return EXT_SPEEDS2.get(ext2, f"undefined ({ext2})")
    if ext:
        return EXT_SPEEDS.get(ext, f"undefined ({ext})")
    if not speed:
        return None
    return SPEEDS.get(speed, f"undefined ({speed})")


def compat_text(width: int | None, speed: int | None, ext: int | None = 0,
                ext2: int | None = 0) -> str:
    """ibnetdiscover's "4xEDR"."""
    w = WIDTHS.get(width or 0, "?").lower() if width else "?"
    if ext2:
        s = COMPAT_EXT2.get(ext2, "?")
    elif ext:
        s = COMPAT_EXT.get(ext, "?")
    else:
        s = COMPAT_SPEEDS.get(speed or 0, "?")
    return f"{w}{s}"


def state_text(state: int | None) -> str | None:
    return None if state is None else PORT_STATES.get(state, f"undefined ({state})")


def phys_text(phys: int | None) -> str | None:
    return None if phys is None else PHYS_STATES.get(phys, f"undefined ({phys})")


def guid_text(guid: int | None) -> str | None:
    return None if guid is None else f"0x{guid:016x}"
