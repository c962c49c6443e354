"""Field display types and bases, as tshark registers them: they decide how
`-T fields` prints a value. Shared by the layouts (`ibwire.fields`) and the registry
of public names (`ibwire.registry`)."""

UINT8, UINT16, UINT24, UINT32, UINT64 = "uint8", "uint16", "uint24", "uint32", "uint64"
BOOL, IPV6, BYTES, STRING, NONE, DOUBLE, IPV4, ETHER = (
    "bool", "ipv6", "bytes", "string", "none", "double", "ipv4", "ether")
DEC, HEX, DEC_HEX = "dec", "hex", "dec_hex"
