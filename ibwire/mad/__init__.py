"""Management datagrams: decode and encode MADs of every class wherever they travel.

Importing this package registers the MAD payload decoder and encoder with
`ibwire.decode` / `ibwire.encode` (and the "mad" encapsulation for bare MAD bytes).
After that, a UD SEND Only to or from QP0/QP1 - native, RoCEv1 or RoCEv2 - carries
MAD layers: `pkt["infiniband.mad.attributeid"]`, `pkt.values_of(
"infiniband.pathrecord.dlid")` (one value per SA record), ... and `encode(pkt)`
rebuilds the packet from the (possibly edited) values.

    mad = smp_get("NodeInfo", dr_path=[0, 1, 3])     # DR SubnGet(NodeInfo), 2 hops
    wire = mad_packet(mad)                             # LRH VL15 ... ICRC, VCRC

Modules: `header` (common header, RMPP, class headers), `smp`, `sa`, `perf`, `cm`,
`cc`, `general` (ClassPortInfo, Notice/traps, InformInfo), `names` (value tables),
`classes` (dispatch tables), `dispatch` (the hooks), `build` (builders).
"""

from ibwire.constants import MAD_SIZE
from ibwire.mad import dispatch
from ibwire.mad.build import (
    build_mad,
    cm_mad,
    mad_packet,
    perf_get,
    sa_mad,
    sa_path_record_query,
    sa_query,
    smp_get,
    smp_set,
)
from ibwire.mad.classes import attribute_parts, supported
from ibwire.mad.dispatch import carries_mad, decode_mad, encode_mad, mad_layers
from ibwire.mad.header import MAD_HEADER
from ibwire.mad.names import attribute_id, attribute_name, class_name, status_text

dispatch.install()

__all__ = [
    "MAD_HEADER", "MAD_SIZE", "attribute_id", "attribute_name", "attribute_parts",
    "build_mad", "carries_mad", "class_name", "cm_mad", "decode_mad", "encode_mad",
    "mad_layers", "mad_packet", "perf_get", "sa_mad", "sa_path_record_query", "sa_query",
    "smp_get", "smp_set", "status_text", "supported",
]
