"""Build MADs in a few readable lines.

    smp_get("NodeInfo", dr_path=[0, 1, 3])                 # DR SubnGet(NodeInfo), 2 hops
    smp_get("PortInfo", attribute_modifier=1)               # LID-routed SubnGet(PortInfo)
    sa_path_record_query(slid=12, dlid=20, numb_path=127)   # ComponentMask from the fields
    perf_get("PortCounters", port_select=1)
    mad_packet(mad, slid=1, dlid=4)                          # the whole native packet

Every builder returns the 256 MAD bytes. Fields are given by their specification
names (`port_select`, `p_key_base`, `service_id` ...) - a name sets the first layer
that has it, so use the public name where two layers share one
(`**{"infiniband.trap.mkey": k}` rather than the SMP's `m_key`) - and a list sets
successive table entries (`port=[1, 2, 3]` for LinearForwardingTable entries).
Common-header fields other than the attribute modifier and transaction ID go in
`header={...}` (attributes have fields called `status`, `class_version`). The structure comes
from the decoder itself: a zero MAD with the chosen header is decoded, the values
are set on its layers and the layers are packed; when a value changes the
structure (a Notice's trap number, an IP CM ServiceID) this repeats until stable.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ibwire.constants import (
    MAD_SIZE,
    MGMT_CLASS_CC,
    MGMT_CLASS_CM,
    MGMT_CLASS_PERF,
    MGMT_CLASS_SA,
    MGMT_CLASS_SMP_DR,
    MGMT_CLASS_SMP_LID,
    QKEY_GSI,
    QP_GSI,
    QP_SMI,
)
from ibwire.encode import encode
from ibwire.headers import BTH, DETH, LRH
from ibwire.headers.opcodes import UD_SEND_ONLY
from ibwire.mad.classes import CLASS_VERSIONS
from ibwire.mad.dispatch import decode_mad, encode_layers
from ibwire.mad.header import MAD_HEADER, SA_HEADER
from ibwire.mad.names import METHOD_NAMES, attribute_id
from ibwire.mad.sa import (
    RECORDS,
    SA_DATA_OFFSET,
    SA_DATA_SIZE,
    TABLE_METHODS,
    component_mask,
)
from ibwire.packet import Layer

SMP_CLASSES = (MGMT_CLASS_SMP_LID, MGMT_CLASS_SMP_DR)
_CLASS = MAD_HEADER.by_name["mgmt_class"]
_ATTRIBUTE = MAD_HEADER.by_name["attribute_id"]
# The SA header's AttributeOffset, within the MAD (the SA header ends where data starts).
_SA_ATTRIBUTE_OFFSET = (SA_DATA_OFFSET - SA_HEADER.size
                        + SA_HEADER.by_name["attribute_offset"].offset)
GSI_QKEY = QKEY_GSI
PERMISSIVE_LID = 0xFFFF
CM_NAMES = {"REQ": "ConnectRequest", "MRA": "MsgRcptAck", "REJ": "ConnectReject",
            "REP": "ConnectReply", "RTU": "ReadyToUse", "DREQ": "DisconnectRequest",
            "DREP": "DisconnectReply", "SIDR_REQ": "ServiceIDResReq",
            "SIDR_REP": "ServiceIDResReqResp", "LAP": "LoadAlternatePath",
            "APR": "AlternatePathResponse"}


# (class, attribute) -> {field: (MAD offset, bytes)} the decoder reads to choose a layout.
PRESETS = {(MGMT_CLASS_CC, 0x0013): {"log_type": (32, 1)}}


def method_code(method: int | str) -> int:
    if isinstance(method, int):
        return method
    want = method.lower()
    for code, name in METHOD_NAMES.items():
        if name.lower() == want:
            return code
    raise KeyError(f"unknown MAD method {method!r}")


def _targets(layers: list[Layer], key: str) -> list[tuple[Layer, str]]:
    out = []
    for lay in layers:
        for f in lay.layout.wire:
            if f.name == key or f.wsname == key:
                out.append((lay, f.name))
    return out


def _view_of(layers: list[Layer], key: str) -> str | None:
    for lay in layers:
        for f in lay.layout.fields:
            if (f.name == key or f.wsname == key) and f not in lay.layout.wire:
                return lay.layout.name
    return None


def _apply(layers: list[Layer], fields: dict[str, Any]) -> list[str]:
    """Set field values on the layers; return the keys no layer has (yet)."""
    missing = []
    for key, value in fields.items():
        targets = _targets(layers[1:], key)
        if not targets:
            missing.append(key)
            continue
        if isinstance(value, (list, tuple)):
            if len(value) > len(targets):
                raise ValueError(f"{key}: {len(value)} values for {len(targets)} entries")
            for (lay, name), v in zip(targets, value):
                lay.values[name] = v
        else:
            lay, name = targets[0]
            lay.values[name] = value
    return missing


def build_mad(mgmt_class: int, method: int | str, attribute: int | str, *,
              attribute_modifier: int = 0, transaction_id: int = 0,
              header: dict[str, int] | None = None, **fields: Any) -> bytes:
    """A 256-byte MAD of any class with the attribute fields set.

    `header` sets the other common-header fields (`status`, `class_specific`,
    `class_version` - default the class's current version - `base_version`); they are
    kept apart because attributes have fields of the same names (NodeInfo
    `class_version`, SIDR_REP `status` ...)."""
    values = {"base_version": 1, "class_version": CLASS_VERSIONS.get(mgmt_class, 1),
              **(header or {}), "mgmt_class": mgmt_class, "method": method_code(method),
              "transaction_id": transaction_id,
              "attribute_id": attribute_id(mgmt_class, attribute),
              "attribute_modifier": attribute_modifier}
    unknown = set(values) - {f.name for f in MAD_HEADER.wire}
    if unknown:
        raise TypeError(f"not common-header fields: {sorted(unknown)}")
    header_bytes = MAD_HEADER.pack(values)
    mad = _preset(bytes(header_bytes + bytes(MAD_SIZE - len(header_bytes))), mgmt_class,
                  fields)
    for _ in range(6):
        # Lay the MAD out as the decoder sees it, then fill that layout from zero: a
        # value that changes the layout (trap number, IP CM ServiceID) takes effect on
        # the next round, without leftovers from the previous layout.
        pkt = decode_mad(mad)
        shape = [(lay.layout.name, lay.offset) for lay in pkt.layers]
        for lay in pkt.layers[1:]:
            lay.values = lay.layout.unpack(bytes(lay.layout.size))
        missing = _apply(pkt.layers, fields)
        new = encode_layers(pkt.layers)
        assert new is not None
        new = _preset(new, mgmt_class, fields)
        if [(lay.layout.name, lay.offset) for lay in decode_mad(new).layers] == shape:
            if missing:
                break
            return new
        mad = new
    views = {k: _view_of(pkt.layers, k) for k in missing}
    raise TypeError("; ".join(f"{k} is a view, set the field it is computed from" if v else
                              f"{k} is not a field of this MAD" for k, v in views.items())
                    or "the MAD layout does not settle")


def _preset(mad: bytes, mgmt_class: int, fields: dict[str, Any]) -> bytes:
    """Write the values the decoder peeks at to choose a layout."""
    attr = int.from_bytes(mad[_ATTRIBUTE.offset:_ATTRIBUTE.offset + _ATTRIBUTE.bits // 8], "big")
    presets = PRESETS.get((mgmt_class, attr), {})
    if not any(name in fields for name in presets):
        return mad
    out = bytearray(mad)
    for name, (off, size) in presets.items():
        if name in fields:
            out[off:off + size] = int(fields[name]).to_bytes(size, "big")
    return bytes(out)


# -- SMP ---------------------------------------------------------------------------
def _smp(method: str, attribute: int | str, dr_path: Iterable[int] | None,
         hop_pointer: int, direction: int, dr_slid: int, dr_dlid: int,
         fields: dict[str, Any], **header: Any) -> bytes:
    if dr_path is None:
        return build_mad(MGMT_CLASS_SMP_LID, method, attribute, **header, **fields)
    path = bytes(dr_path)
    if not path or len(path) > 64:
        raise ValueError("dr_path is [0, port at hop 1, port at hop 2, ...] (1 to 64 entries)")
    hdr = {"status": direction << 15, "class_specific": (hop_pointer << 8) | (len(path) - 1)}
    return build_mad(MGMT_CLASS_SMP_DR, method, attribute, header=hdr, dr_slid=dr_slid,
                     dr_dlid=dr_dlid, initial_path=path, **header, **fields)


def smp_get(attribute: int | str, *, dr_path: Iterable[int] | None = None,
            attribute_modifier: int = 0, transaction_id: int = 0, m_key: int = 0,
            hop_pointer: int = 0, dr_slid: int = PERMISSIVE_LID,
            dr_dlid: int = PERMISSIVE_LID) -> bytes:
    """SubnGet(attribute): directed-route along `dr_path` (entry 0 unused, then the
    egress port at each hop; HopCount = len - 1), LID-routed without it."""
    return _smp("Get", attribute, dr_path, hop_pointer, 0, dr_slid, dr_dlid,
                {"m_key": m_key}, attribute_modifier=attribute_modifier,
                transaction_id=transaction_id)


def smp_set(attribute: int | str, *, dr_path: Iterable[int] | None = None,
            attribute_modifier: int = 0, transaction_id: int = 0, m_key: int = 0,
            hop_pointer: int = 0, dr_slid: int = PERMISSIVE_LID,
            dr_dlid: int = PERMISSIVE_LID, **fields: Any) -> bytes:
    """SubnSet(attribute) with the attribute fields given."""
    return _smp("Set", attribute, dr_path, hop_pointer, 0, dr_slid, dr_dlid,
                {"m_key": m_key, **fields}, attribute_modifier=attribute_modifier,
                transaction_id=transaction_id)


# -- SA ------------------------------------------------------------------------------
def _pack_record(rec_parts: tuple, values: dict[str, Any]) -> bytes:
    out = []
    used: set[str] = set()
    for part in rec_parts:
        if callable(part) and not isinstance(part, tuple) and not hasattr(part, "size"):
            raise ValueError("this record has a variable part; build it with sa_mad(...)")
        layout, count = part if isinstance(part, tuple) else (part, 1)
        names = {f.name for f in layout.wire}
        for i in range(count):
            vals = {}
            for k, v in values.items():
                if k not in names:
                    continue
                used.add(k)
                if not isinstance(v, (list, tuple)):
                    vals[k] = v
                elif len(v) > count:
                    raise ValueError(f"{k}: {len(v)} values for {count} entries")
                elif i < len(v):
                    vals[k] = v[i]
            out.append(layout.pack(vals))
    unknown = set(values) - used
    if unknown:
        raise TypeError(f"not fields of this record: {sorted(unknown)}")
    return b"".join(out)


def sa_mad(method: int | str, attribute: int | str, records: list[dict[str, Any]] | None = None,
           *, component_mask: int = 0, attribute_offset: int | None = None, sm_key: int = 0,
           transaction_id: int = 0, attribute_modifier: int = 0,
           header: dict[str, int] | None = None, **fields: Any) -> bytes:
    """An SA MAD; with `records` a table (GetTableResp) of records every
    AttributeOffset x 8 bytes (default: the record size rounded up to 8 bytes)."""
    aid = attribute_id(MGMT_CLASS_SA, attribute)
    rec = RECORDS.get(aid)
    common = dict(transaction_id=transaction_id, attribute_modifier=attribute_modifier,
                  header=header, sm_key=sm_key, component_mask=component_mask, **fields)
    if not records or rec is None:
        return build_mad(MGMT_CLASS_SA, method, aid, **common)
    stride = attribute_offset * 8 if attribute_offset is not None else -(-rec.size // 8) * 8
    if method_code(method) in TABLE_METHODS:
        common["attribute_offset"] = stride // 8
    if len(records) == 1:
        # One record: the decoder lays it out (also records with variable parts).
        return build_mad(MGMT_CLASS_SA, method, aid, **common, **records[0])
    base = build_mad(MGMT_CLASS_SA, method, aid, **common)
    area = bytearray()
    for i, values in enumerate(records):
        body = _pack_record(rec.parts, values)
        if i + 1 < len(records):
            body += bytes(stride - len(body))
        area += body
    if len(area) > SA_DATA_SIZE:
        raise ValueError(f"{len(records)} records need {len(area)} bytes; one MAD holds "
                         f"{SA_DATA_SIZE} (RMPP segmentation is not built here)")
    mad = bytearray(base)
    width = SA_HEADER.by_name["attribute_offset"].bits // 8
    mad[_SA_ATTRIBUTE_OFFSET:_SA_ATTRIBUTE_OFFSET + width] = (stride // 8).to_bytes(width, "big")
    mad[SA_DATA_OFFSET:SA_DATA_OFFSET + len(area)] = area
    return bytes(mad)


def sa_query(attribute: int | str, method: int | str = "GetTable", *,
             component_mask: int | None = None, transaction_id: int = 0,
             sm_key: int = 0, **fields: Any) -> bytes:
    """An SA query whose ComponentMask selects exactly the record fields given."""
    aid = attribute_id(MGMT_CLASS_SA, attribute)
    rec = RECORDS[aid]
    mask = component_mask_of(rec, fields) if component_mask is None else component_mask
    return build_mad(MGMT_CLASS_SA, method, aid, transaction_id=transaction_id, sm_key=sm_key,
                     component_mask=mask, **fields)


def component_mask_of(rec: Any, fields: dict[str, Any]) -> int:
    return component_mask(rec, [k for k in fields if k in rec.components])


def sa_path_record_query(*, sgid: str | bytes | None = None, dgid: str | bytes | None = None,
                         slid: int | None = None, dlid: int | None = None,
                         transaction_id: int = 0, **fields: Any) -> bytes:
    """SubnAdmGetTable(PathRecord) for the given endpoints and path properties
    (`numb_path`, `p_key`, `sl`, `mtu`, ...); ComponentMask from what is given."""
    given = {k: v for k, v in (("sgid", sgid), ("dgid", dgid), ("slid", slid),
                               ("dlid", dlid)) if v is not None}
    return sa_query("PathRecord", transaction_id=transaction_id, **given, **fields)


# -- PerfMgt, CM -----------------------------------------------------------------------
def perf_get(attribute: int | str = "PortCounters", *, port_select: int = 1,
             transaction_id: int = 0, **fields: Any) -> bytes:
    """PerfMgt Get(attribute) for a port (PortSelect 255 = all ports)."""
    if attribute_id(MGMT_CLASS_PERF, attribute) == 0x0001:
        return build_mad(MGMT_CLASS_PERF, "Get", attribute, transaction_id=transaction_id, **fields)
    return build_mad(MGMT_CLASS_PERF, "Get", attribute, transaction_id=transaction_id,
                     port_select=port_select, **fields)


def cm_mad(message: str | int, *, transaction_id: int = 0, **fields: Any) -> bytes:
    """A CM message (Send): `cm_mad("REQ", local_comm_id=..., service_id=..., ...)`."""
    name = CM_NAMES.get(message, message) if isinstance(message, str) else message
    return build_mad(MGMT_CLASS_CM, "Send", name, transaction_id=transaction_id, **fields)


# -- the whole packet ---------------------------------------------------------------------
def mad_packet(mad: bytes, *, slid: int | None = None, dlid: int | None = None, sl: int = 0,
               vl: int | None = None, p_key: int = 0xFFFF, psn: int = 0,
               dest_qp: int | None = None, src_qp: int | None = None,
               q_key: int | None = None) -> bytes:
    """The native InfiniBand packet (LRH, BTH UD SEND Only, DETH, MAD, ICRC, VCRC).

    SMPs go QP0 to QP0 on VL15 with Q_Key 0 (directed-route SMPs default to the
    permissive LID 0xFFFF both ways); other classes QP1 to QP1 on VL `vl` (default 0)
    with the GSI Q_Key 0x80010000."""
    mgmt_class = mad[_CLASS.offset] if len(mad) > _CLASS.offset else 0
    smp = mgmt_class in SMP_CLASSES
    if mgmt_class == MGMT_CLASS_SMP_DR:
        slid = PERMISSIVE_LID if slid is None else slid
        dlid = PERMISSIVE_LID if dlid is None else dlid
    if slid is None or dlid is None:
        raise ValueError("give slid and dlid (only directed-route SMPs have defaults)")
    qp = QP_SMI if smp else QP_GSI
    lrh = LRH(vl=15 if smp else (vl or 0), sl=sl, dlid=dlid, slid=slid)
    bth = BTH(opcode=UD_SEND_ONLY, p_key=p_key, destqp=qp if dest_qp is None else dest_qp, psn=psn)
    deth = DETH(q_key=(0 if smp else GSI_QKEY) if q_key is None else q_key,
                srcqp=qp if src_qp is None else src_qp)
    return encode(lrh, bth, deth, payload=bytes(mad))
