"""`-T json` and `-T ek`, shaped like tshark's.

json: a list of `{"_index", "_type", "_score", "_source": {"layers": {...}}}`; each
protocol is an object of string values keyed by field name; an InfiniBand header
appears as `"infiniband.bth": "64:00:..."` plus `"infiniband.bth_tree": {...}`.
Keys may repeat within an object (tshark does that too, e.g.
`infiniband.reserved`), so objects are lists of pairs and serialised here.
ek: Elasticsearch bulk lines, keys flattened to `infiniband_infiniband_bth_psn`.
With `-e`, both hold just the named fields as lists of strings.
"""

from __future__ import annotations

import json
import time
from typing import Any

from ibwire.cli.fields_out import FieldsWriter, data_bytes
from ibwire.cli.frames import FrameInfo, fmt_ns
from ibwire.cli.tshark_text import format_field
from ibwire.fields import BOOL, BYTES, REGISTRY
from ibwire.packet import Packet

Obj = list[tuple[str, Any]]   # an object with ordered, possibly repeated keys


def _value(name: str, value: Any) -> Any:
    """tshark's JSON text: like -T fields, but byte strings colon-separated."""
    if isinstance(value, (bytes, bytearray)):
        entry = REGISTRY.entries.get(name)
        if entry is None or entry.ftype == BYTES:
            return ":".join(f"{b:02x}" for b in value)
    return format_field(name, value)


def _frame_obj(info: FrameInfo) -> Obj:
    sec, frac = divmod(info.ts_ns, 1_000_000_000)
    when = time.strftime("%b %d, %Y %H:%M:%S", time.gmtime(sec)) + f".{frac:09d} UTC"
    return [
        ("frame.encap_type", info.value("frame.encap_type")),
        ("frame.time", when),
        ("frame.time_epoch", fmt_ns(info.ts_ns)),
        ("frame.time_delta", fmt_ns(info.delta_ns)),
        ("frame.time_delta_displayed", fmt_ns(info.delta_disp_ns)),
        ("frame.time_relative", fmt_ns(info.rel_ns)),
        ("frame.number", str(info.number)),
        ("frame.len", str(info.length)),
        ("frame.cap_len", str(info.cap_len)),
        ("frame.marked", "0"),
        ("frame.ignored", "0"),
        ("frame.protocols", ":".join(info.stack)),
    ]


def layers_obj(info: FrameInfo, pkt: Packet) -> Obj:
    """`_source.layers`: frame, then one object per protocol."""
    layers: Obj = [("frame", _frame_obj(info))]
    current: Obj | None = None
    current_proto = None
    for lay in pkt.layers:
        proto = lay.layout.protocol
        if proto != current_proto:
            current = []
            layers.append((proto, current))
            current_proto = proto
        assert current is not None
        fields: Obj = [(f.wsname, _value(f.wsname, v)) for f, v in lay.fields()
                       if f.wsname and v is not None]
        prefix = lay.layout.prefix
        if prefix and prefix != proto:
            current.append((prefix, _value(prefix, pkt.data[lay.offset:lay.offset + lay.size])))
            current.append((prefix + "_tree", fields))
        else:
            current.extend(fields)
    for name, vals in pkt.extras.items():
        proto = name.split(".")[0]
        if proto in ("frame", "_ws"):
            continue
        target = next((obj for key, obj in layers if key == proto), None)
        if target is None and proto in info.stack:
            target = []                # a protocol IP carries (TCP, ICMP: ibwire.inner)
            layers.append((proto, target))
        if target is None:
            continue
        target.extend((name, _value(name, v)) for v in vals)
    data = data_bytes(info, pkt)
    if data:
        layers.append(("data", [("data.data", _value("data.data", data)),
                                ("data.len", str(len(data)))]))
    return layers


def _dumps(obj: Any, indent: int) -> str:
    pad = "  " * indent
    if isinstance(obj, list) and (not obj or isinstance(obj[0], tuple)):
        if not obj:
            return "{}"
        inner = ",\n".join(f'{pad}  {json.dumps(k)}: {_dumps(v, indent + 1)}' for k, v in obj)
        return "{\n" + inner + "\n" + pad + "}"
    if isinstance(obj, list):
        inner = ",\n".join(f"{pad}  {_dumps(v, indent + 1)}" for v in obj)
        return "[\n" + inner + "\n" + pad + "]"
    return json.dumps(obj, ensure_ascii=False)


def _index(info: FrameInfo) -> str:
    return "packets-" + time.strftime("%Y-%m-%d", time.localtime(info.ts_ns // 10**9))


class JsonWriter:
    """-T json: `start()`, then one `packet()` per displayed frame, then `end()`."""

    def __init__(self, fields: FieldsWriter | None) -> None:
        self.fields = fields
        self.count = 0

    def start(self) -> str:
        return "[\n"

    def packet(self, info: FrameInfo, pkt: Packet) -> str:
        if self.fields is not None:
            layers: Obj = [(n, vals) for n, vals in _selected(self.fields, info, pkt)]
        else:
            layers = layers_obj(info, pkt)
        doc: Obj = [("_index", _index(info)), ("_type", "doc"), ("_score", None),
                    ("_source", [("layers", layers)])]
        text = ("" if self.count == 0 else ",\n") + "  " + _dumps(doc, 1)
        self.count += 1
        return text

    def end(self) -> str:
        return ("\n" if self.count else "") + "]\n"


def _selected(fields: FieldsWriter, info: FrameInfo, pkt: Packet) -> list[tuple[str, list]]:
    out = []
    for name, get in zip(fields.names, fields._getters):
        vals = get(info, pkt)
        if vals:
            out.append((name, vals))
    return out


def _ek_flat(proto: str, obj: Obj, out: dict[str, Any]) -> None:
    for key, val in obj:
        if isinstance(val, list):
            _ek_flat(proto, val, out)
            continue
        entry = REGISTRY.entries.get(key)
        flat = f"{proto}_{key.replace('.', '_')}"
        if entry is not None and entry.ftype == BOOL:
            val = val == "1"
        elif key in ("frame.marked", "frame.ignored"):
            val = val == "1"
        if flat in out:
            # tshark repeats such keys; JSON objects here cannot, so keep all values.
            prev = out[flat]
            out[flat] = (prev if isinstance(prev, list) else [prev]) + [val]
        else:
            out[flat] = val


def ek_lines(info: FrameInfo, pkt: Packet, fields: FieldsWriter | None) -> str:
    """-T ek: the bulk index line and the document line of one frame."""
    head = json.dumps({"index": {"_index": _index(info), "_type": "doc"}},
                      separators=(",", ":"))
    if fields is not None:
        layers: dict[str, Any] = {n.replace(".", "_"): vals
                                  for n, vals in _selected(fields, info, pkt)}
    else:
        layers = {}
        for proto, obj in layers_obj(info, pkt):
            flat: dict[str, Any] = {}
            _ek_flat(proto, obj, flat)
            layers[proto] = flat
    doc = {"timestamp": str(info.ts_ns // 1_000_000), "layers": layers}
    return head + "\n" + json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n"
