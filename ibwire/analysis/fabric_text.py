"""The fabric view printed like infiniband-diags: `ibnetdiscover` topology text,
`iblinkinfo` link list and `perfquery` counters. Values the capture did not show
print as "?"; ports whose peer is unknown are left out of the topology (as
ibnetdiscover leaves out ports it found nothing behind)."""

from __future__ import annotations

from typing import Any

from ibwire.analysis import fabric_names as fn
from ibwire.analysis.fabric_json import port_lid
from ibwire.analysis.fabric_model import Fabric, Node, Port
from ibwire.analysis.fabric_perf import KINDS

DOTS_TO = 32          # perfquery pads "Name:" with dots to column 33


def _q(v: object) -> str:
    return "?" if v is None else str(v)


def _name(node: Node | None) -> str:
    return node.description if node is not None and node.description is not None else "?"


def _ident(node: Node) -> str:
    return f'"{fn.TOPO_PREFIX.get(node.type or 0, "?")}-{node.guid:016x}"'


def _compat(node: Node, port: Port | None) -> str:
    if port is None or port.state is None or port.down:
        return "?"
    ext = node.ext_capable(port.num)
    return fn.compat_text(port.width_active, port.speed_active,
                          port.ext_active if ext else 0, port.ext2_active if ext else 0)


def _peer_text(fab: Fabric, node: Node, num: int) -> str | None:
    end = fab.peer(node.guid, num)
    if end is None:
        return None
    peer = fab.nodes.get(end.guid)
    if peer is None:
        return None
    pport = peer.ports.get(end.port)
    head = f"{_ident(peer)}[{end.port}]"
    if not peer.is_switch and pport is not None and pport.guid is not None:
        head += f"({pport.guid:x}) "
    lid = port_lid(peer, pport) if pport is not None else (peer.lid if peer.is_switch else None)
    return f'{head}\t\t# "{_name(peer)}" lid {_q(lid)} {_compat(node, node.ports.get(num))}'


def topology(fab: Fabric) -> str:
    """ibnetdiscover's topology file: switches first, then CAs and routers."""
    out: list[str] = ["#", "# Topology file: reconstructed by ibwire from captured MADs", "#"]
    order = sorted(fab.nodes.values(), key=lambda n: (not n.is_switch, n.guid))
    for node in order:
        out.append("")
        out.append(f"vendid=0x{node.vendor_id:x}" if node.vendor_id is not None else "vendid=?")
        out.append(f"devid=0x{node.device_id:x}" if node.device_id is not None else "devid=?")
        sysimg = node.system_image_guid
        out.append(f"sysimgguid=0x{sysimg:x}" if sysimg is not None else "sysimgguid=?")
        if node.is_switch:
            p0 = node.ports.get(0)
            pguid = p0.guid if p0 is not None and p0.guid is not None else node.guid
            out.append(f"switchguid=0x{node.guid:x}({pguid:x})")
            enhanced = (node.switch_info or {}).get("enhanced_port_zero")
            kind = "enhanced" if enhanced else "base"
            out.append(f'Switch\t{_q(node.num_ports)} {_ident(node)}\t\t# "{_name(node)}" '
                       f"{kind} port 0 lid {_q(node.lid)} lmc {_q(p0.lmc if p0 else None)}")
        else:
            label = "caguid" if node.type == 1 else "rtguid"
            out.append(f"{label}=0x{node.guid:x}")
            out.append(f'{fn.TOPO_KINDS.get(node.type or 0, "Ca")}\t{_q(node.num_ports)} '
                       f'{_ident(node)}\t\t# "{_name(node)}"')
        for num in sorted(node.ports):
            if num == 0:
                continue
            peer = _peer_text(fab, node, num)
            if peer is None:
                continue
            port = node.ports[num]
            if node.is_switch:
                out.append(f"[{num}]\t{peer}")
            else:
                own = f"({port.guid:x}) " if port.guid is not None else ""
                head, _, tail = peer.partition("\t\t# ")
                out.append(f"[{num}]{own}\t{head}\t\t# lid {_q(port.lid)} lmc "
                           f"{_q(port.lmc)} {tail}")
    return "\n".join(out) + "\n"


def _link_str(node: Node, port: Port) -> str:
    state, phys = fn.state_text(port.state) or "?", fn.phys_text(port.phys_state) or "?"
    if port.down:
        return f"(              {state:>6}/{phys:>8})"
    return (f"({port.width() or '?':>3} {port.speed(node.ext_capable(port.num)) or '?':>18} "
            f"{state:>6}/{phys:>8})")


def links(fab: Fabric) -> str:
    """iblinkinfo's per-node port list."""
    out: list[str] = []
    order = sorted(fab.nodes.values(), key=lambda n: (not n.is_switch, n.guid))
    for node in order:
        ports = [n for n in sorted(node.ports) if n and node.ports[n].state is not None]
        if not ports:
            continue
        kind = fn.NODE_KINDS.get(node.type or 0, "??")
        if node.is_switch:
            p0 = node.ports.get(0)
            guid = p0.guid if p0 is not None and p0.guid is not None else node.guid
            out.append(f"{kind}: 0x{guid:016x} {_name(node)}:")
        else:
            out.append(f"{kind}: {_name(node)}:")
        for num in ports:
            port = node.ports[num]
            lead = "      "
            if not node.is_switch:
                lead += f"{fn.guid_text(port.guid) or '?':<18} "
            lid = port_lid(node, port)
            line = f"{lead}{_q(lid):>6} {num:4}[  ] =={_link_str(node, port)}==>  "
            end = fab.peer(node.guid, num)
            peer = fab.nodes.get(end.guid) if end is not None else None
            if peer is not None and end is not None:
                plid = port_lid(peer, peer.ports[end.port]) if end.port in peer.ports \
                    else peer.lid
                line += f'{_q(plid):>6} {end.port:4}[  ] "{_name(peer)}" ( )'
            elif port.down:
                line += '           [  ] "" ( )'
            else:
                line += '    "Port not available"'
            out.append(line)
    return "\n".join(out) + ("\n" if out else "")


def _perf_name(field: str) -> str:
    name = "".join(p[:1].upper() + p[1:] for p in field.split("_"))
    return name.replace("Qp1", "QP1").replace("Vl15", "VL15")


def _order(kind: str, layout: Any) -> list[Any]:
    """perfquery's field order: PortCountersExtended's CounterSelect2 comes with the
    error counters it selects, after the packet counters."""
    fields = [f for f in layout.fields if not f.reserved]
    if kind != "PortCountersExtended":
        return fields
    cs2 = next(f for f in fields if f.name == "counter_select2")
    fields.remove(cs2)
    at = next(i for i, f in enumerate(fields) if f.name == "symbol_error_counter")
    return fields[:at] + [cs2] + fields[at:]


def _caps_text(kind: str, caps: tuple[int, int] | None) -> str:
    if caps is None:
        return ""
    if kind == "PortCountersExtended":
        return f" (CapMask: 0x{caps[0]:02X} CapMask2: 0x{caps[1]:07X})"
    return f" (CapMask: 0x{caps[0]:02X})"


def counters(fab: Fabric) -> str:
    """perfquery's dump of every counter read, in capture order."""
    out: list[str] = []
    reads = sorted(((r, key) for key, rs in fab.counters.items() for r in rs),
                   key=lambda rk: (rk[0].ts, rk[0].frame))
    layouts = {kind: lay for _, kind, lay in KINDS.values()}
    for r, (lid, port) in reads:
        if not r.values:
            out.append(f"# Counters reset (CounterSelect 0x{r.reset_mask:x}): Lid {_q(lid)} "
                       f"port {port} (frame {r.frame}, no response captured)")
            continue
        title = "Port extended counters" if r.kind == "PortCountersExtended" else \
            "Port counters"
        note = " - reset by this Set" if r.reset else ""
        out.append(f"# {title}: Lid {_q(lid)} port {port}"
                   f"{_caps_text(r.kind, fab.pma_caps.get(lid))}{note}")
        for f in _order(r.kind, layouts[r.kind]):
            if f.name in r.selects:
                val = r.selects[f.name]
                text = str(val) if f.name == "port_select" else \
                    f"0x{val:0{max(f.bits // 4, 2)}x}"
            elif f.name in r.values:
                text = str(r.values[f.name])
            else:
                continue
            label = _perf_name(f.name) + ":"
            out.append(f"{label}{'.' * max(DOTS_TO + 1 - len(label), 1)}{text}")
    return "\n".join(out) + ("\n" if out else "")
