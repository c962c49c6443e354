"""Link (flow-control) packets: 6 bytes, no LRH (IBA Vol. 1 §7.9.4)."""

from ibwire.fields import HEX, Layout, uint

LINK_OPS = {0: "Normal Flow Control", 1: "Flow Control Init"}

LINK = Layout("link", "infiniband_link", "InfiniBand Link", [
    uint("op", 4, "Operand", ftype="uint16", values=LINK_OPS),
    uint("fctbs", 12, "Flow Control Total Blocks Sent", ftype="uint16"),
    uint("vl", 4, "Virtual Lane", ftype="uint16"),
    uint("fccl", 12, "Flow Control Credit Limit", ftype="uint16"),
    uint("lpcrc", 16, "Link Packet CRC", base=HEX),
], protocol="infiniband_link")
