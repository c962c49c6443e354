"""Base Transport Header (IBA Vol. 1 §9.2)."""

from ibwire.fields import HEX, UINT8, UINT16, UINT24, Layout, flag, rsv, uint

BTH = Layout("bth", "infiniband.bth", "Base Transport Header", [
    uint("opcode", 8, "Opcode", ftype=UINT8),
    flag("se", "Solicited Event"),
    flag("m", "MigReq"),
    uint("padcnt", 2, "Pad Count", ftype=UINT8),
    uint("tver", 4, "Header Version", ftype=UINT8),
    uint("p_key", 16, "Partition Key", ftype=UINT16),
    # Byte 4 is Resv8a in base IBA; the congestion-control annex puts FECN/BECN
    # in its top bits. Wireshark 4.0 shows the byte as `infiniband.reserved`.
    flag("fecn", "Forward ECN"),
    flag("becn", "Backward ECN"),
    rsv("resv6", 6),
    uint("destqp", 24, "Destination Queue Pair", ftype=UINT24, base=HEX),
    flag("a", "Acknowledge Request"),
    rsv("reserved7", 7, wsname="infiniband.bth.reserved7", ftype=UINT8),
    uint("psn", 24, "Packet Sequence Number", ftype=UINT24),
], icrc_variant=("fecn", "becn", "resv6"), defaults={"p_key": 0xFFFF})
