"""The decoder: bytes into a `Packet`, never raising on packet bytes. The steps live in
the submodules (`base`, `carriers`, `transport`, `fastpath`); this is their entry point.

Entry points by encapsulation: native InfiniBand from the LRH (`"ib"`, also
LINKTYPE_INFINIBAND), link packets (`"ib_link"`), RoCEv1 from the GRH
(`"roce1"`), RoCEv2 from the BTH (`"roce2"`, ICRC unverifiable without the IP
header), Ethernet (`"eth"`), raw IP (`"ip"`) and ERF records (`"erf"`). Other
modules add encapsulations (`ENCAPS`) and payload decoders (`PAYLOAD_DECODERS`,
e.g. MADs on QP0/QP1, IPoIB).

Trailers: native packets end where LRH.PktLen says (ICRC last), then the VCRC;
RoCEv1 ends where GRH.PayLen says; RoCEv2 ends with the UDP datagram. Bytes past
that end are the `trailer` (Ethernet padding, FCS), kept for re-encoding.
"""

from __future__ import annotations

from collections.abc import Callable

from ibwire.constants import (
    LINKTYPE_ERF,
    LINKTYPE_ETHERNET,
    LINKTYPE_INFINIBAND,
    LINKTYPE_LINUX_SLL,
    LINKTYPE_LINUX_SLL2,
    LINKTYPE_RAW,
)
from ibwire.decoder.base import (  # noqa: F401 - the public decoder API lives here
    DEFAULT,
    ENCAPS,
    PAYLOAD_DECODERS,
    Options,
    PayloadDecoder,
    keep_undecoded,
    take,
)
from ibwire.decoder.carriers import (  # noqa: F401
    decode_erf,
    decode_eth,
    decode_ip,
    decode_link,
    decode_sll,
    decode_udp,
)
from ibwire.decoder.fastpath import fast_eth, fast_ib
from ibwire.decoder.transport import (  # noqa: F401
    decode_ib,
    decode_roce1,
    decode_roce2,
    icrc_masked_input,
)
from ibwire.packet import Packet


def decode(data: bytes, encap: str | int = "ib", *, frame=None,
           options: Options | None = None) -> Packet:
    """Decode one packet or capture record. `encap` is a name or a pcap link type."""
    data = bytes(data)
    name = _ENCAP_BY_LINKTYPE.get(encap, encap) if isinstance(encap, int) else encap
    pkt = Packet(data=data, encap=str(name), frame=frame)
    opts = options or DEFAULT
    pkt.options = opts
    handler = _HANDLERS.get(name) or ENCAPS.get(name) or ENCAPS.get(encap)
    if handler is None:
        pkt.mark("frame", 0, f"unknown encapsulation {encap!r}")
        keep_undecoded(pkt, 0, len(data))
        return pkt
    fast = _FAST.get(handler) if opts.fast_path else None
    if fast is not None:
        try:
            if fast(pkt, opts):
                return pkt
        except Exception:  # noqa: BLE001 - the general steps below decide what to report
            pass
        pkt = Packet(data=data, encap=str(name), frame=frame)
        pkt.options = opts
    try:
        handler(pkt, 0, len(data))
    except Exception as exc:  # noqa: BLE001 - the promise: decode never raises on bytes
        pkt.mark("decoder", 0, f"internal error {type(exc).__name__}: {exc}")
    return pkt


_HANDLERS: dict[str | int, Callable[[Packet, int, int], None]] = {
    "ib": decode_ib, "ib_link": decode_link, "roce1": decode_roce1, "roce2": decode_roce2,
    "eth": decode_eth, "ip": decode_ip, "erf": decode_erf, "sll": decode_sll,
    "sll2": decode_sll,
}
# Handler -> its fast path for the common chain (decoder.fastpath).
_FAST: dict[Callable[[Packet, int, int], None], Callable[[Packet, Options], bool]] = {
    decode_eth: lambda pkt, opts: fast_eth(pkt, opts.roce_ports),
    decode_ib: lambda pkt, opts: fast_ib(pkt),
}
_ENCAP_BY_LINKTYPE: dict[int, str] = {
    LINKTYPE_ETHERNET: "eth", LINKTYPE_RAW: "ip", LINKTYPE_ERF: "erf",
    LINKTYPE_INFINIBAND: "ib", LINKTYPE_LINUX_SLL: "sll", LINKTYPE_LINUX_SLL2: "sll2",
}


def register_linktype(linktype: int, name: str,
                      handler: Callable[[Packet, int, int], None]) -> None:
    """Let another module decode a link type (IPoIB 242, Linux cooked, ...)."""
    _ENCAP_BY_LINKTYPE[linktype] = name
    ENCAPS[name] = handler
