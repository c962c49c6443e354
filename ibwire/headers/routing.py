"""Local and Global Route Headers (IBA Vol. 1 §7.7, §8.3) and the raw header."""

from ibwire.constants import LNH_IBA_LOCAL, NXTHDR_IBA
from ibwire.fields import DEC, HEX, UINT8, UINT16, UINT32, Layout, gid, rsv, uint

LNH_NAMES = {0: "Raw", 1: "IP Non-IBA", 2: "IBA Local", 3: "IBA Global"}

LRH = Layout("lrh", "infiniband.lrh", "Local Route Header", [
    uint("vl", 4, "Virtual Lane", ftype=UINT8, base=HEX),
    uint("lver", 4, "Link Version", ftype=UINT8),
    uint("sl", 4, "Service Level", ftype=UINT8),
    rsv("reserved2", 2, wsname="infiniband.lrh.reserved2", ftype=UINT8),
    uint("lnh", 2, "Link Next Header", ftype=UINT8, base=HEX, values=LNH_NAMES),
    uint("dlid", 16, "Destination Local ID"),
    rsv("reserved5", 5, wsname="infiniband.lrh.reserved5", ftype=UINT16),
    uint("pktlen", 11, "Packet Length", ftype=UINT16),
    uint("slid", 16, "Source Local ID"),
], icrc_variant=("vl",), defaults={"lnh": LNH_IBA_LOCAL})

GRH = Layout("grh", "infiniband.grh", "Global Route Header", [
    uint("ipver", 4, "IP Version", ftype=UINT8),
    uint("tclass", 8, "Traffic Class", ftype=UINT16),
    uint("flowlabel", 20, "Flow Label", ftype=UINT32),
    uint("paylen", 16, "Payload Length"),
    uint("nxthdr", 8, "Next Header"),
    uint("hoplmt", 8, "Hop Limit"),
    gid("sgid", "Source GID"),
    gid("dgid", "Destination GID"),
], icrc_variant=("tclass", "flowlabel", "hoplmt"),
   defaults={"ipver": 6, "nxthdr": NXTHDR_IBA})

# LNH 0: two reserved bytes and an EtherType before the raw payload.
RWH = Layout("rwh", "infiniband.rwh", "Raw Header", [
    rsv("reserved", 16),
    uint("etype", 16, "Ethertype", base=HEX),
])

__all__ = ["GRH", "LNH_NAMES", "LRH", "NXTHDR_IBA", "RWH", "DEC"]
