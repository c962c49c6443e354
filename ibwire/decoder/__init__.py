"""The decoder: bytes into a `Packet`, never raising on packet bytes. The steps live in
the submodules (`base`, `carriers`, `transport`, `fastpath`); this is their entry point.

Entry points by encapsulation: native InfiniBand from the LRH (`"ib"`, also
LINKTYPE_INFINIBAND), link packets (`"ib_link"`), RoCEv1 from the GRH
(`"roce1"`), RoCEv2 from the BTH (`"roce2"`, ICRC unverifiable without the IP
header), Ethernet (`"eth"`), raw IP (`"ip"`) and ERF records (`"erf"`). Which step
follows which is the protocol graph's (`ibwire.graph.GRAPH`): a link type names a
node (`GRAPH.linktypes`), each header's deciding field leads to the next node
(`GRAPH.edges`), and `STEPS` holds the function that decodes each node. Other
modules add steps (`register_step`, `register_linktype`) and payload decoders
(`PAYLOAD_DECODERS`, e.g. MADs on QP0/QP1, IPoIB).

Trailers: native packets end where LRH.PktLen says (ICRC last), then the VCRC;
RoCEv1 ends where GRH.PayLen says; RoCEv2 ends with the UDP datagram. Bytes past
that end are the `trailer` (Ethernet padding, FCS), kept for re-encoding.
"""

from __future__ import annotations

from collections.abc import Callable

from ibwire.decoder.base import (  # noqa: F401 - the public decoder API lives here
    DEFAULT,
    ENCAPS,
    PAYLOAD_DECODERS,
    STEPS,
    Options,
    PayloadDecoder,
    Step,
    follow,
    keep_undecoded,
    register_step,
    take,
)
from ibwire.decoder.carriers import (  # noqa: F401
    decode_erf,
    decode_eth,
    decode_ip,
    decode_link,
    decode_mac_control,
    decode_sll,
    decode_udp,
    decode_vlan,
)
from ibwire.decoder.fastpath import fast_eth, fast_ib
from ibwire.decoder.transport import (  # noqa: F401
    decode_ib,
    decode_roce1,
    decode_roce2,
    icrc_masked_input,
)
from ibwire.graph import GRAPH
from ibwire.packet import Packet


def decode(data: bytes, encap: str | int = "ib", *, frame=None,
           options: Options | None = None) -> Packet:
    """Decode one packet or capture record. `encap` is a name or a pcap link type."""
    data = bytes(data)
    name = GRAPH.linktypes.get(encap, encap) if isinstance(encap, int) else encap
    pkt = Packet(data=data, encap=str(name), frame=frame)
    opts = options or DEFAULT
    pkt.options = opts
    handler = STEPS.get(name) if isinstance(name, str) else None
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


# The built-in steps: graph node -> function(packet, offset, end).
STEPS.update({
    "ib": decode_ib, "ib_link": decode_link, "roce1": decode_roce1, "roce2": decode_roce2,
    "eth": decode_eth, "vlan": decode_vlan, "ip": decode_ip, "udp": decode_udp,
    "erf": decode_erf, "sll": decode_sll, "sll2": decode_sll, "macc": decode_mac_control,
})
# Step -> its fast path for the common chain (decoder.fastpath).
_FAST: dict[Step, Callable[[Packet, Options], bool]] = {
    decode_eth: lambda pkt, opts: fast_eth(pkt, opts.roce_ports),
    decode_ib: lambda pkt, opts: fast_ib(pkt),
}


def register_linktype(linktype: int, name: str, handler: Step) -> None:
    """Let another module decode a link type (IPoIB 242, ...): the graph learns the
    link type's node, the step registry its step."""
    GRAPH.linktypes[linktype] = name
    register_step(name, handler)
