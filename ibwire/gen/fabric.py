"""Hosts and the routing/carrier headers around a transport packet.

A simulated fabric is two hosts on one link (a tap in the middle of it sees both
directions). `Fabric.build` wraps BTH + extended headers + payload in what the
chosen encapsulation puts around them:

* ``ib``       LRH (LNH 2)                       native, local route
* ``ib-grh``   LRH + GRH (LNH 3)                 native, global route
* ``roce1``    Ethernet (0x8915) + GRH           RoCEv1, IPv4-mapped GIDs
* ``roce2``    Ethernet + IPv4 + UDP 4791        RoCEv2
* ``roce2-v6`` Ethernet + IPv6 + UDP 4791        RoCEv2 over IPv6

`ibwire.encode` fills every length and CRC; nothing here computes one.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

from ibwire.constants import ECN_CE, ECN_ECT0
from ibwire.decoder import decode
from ibwire.encode import encode
from ibwire.fields import Header
from ibwire.headers.carriers import ETHERNET, IPV4, IPV6, UDP
from ibwire.headers.routing import GRH, LRH

ENCAPS = ("ib", "ib-grh", "roce1", "roce2", "roce2-v6")
NATIVE = ("ib", "ib-grh")
PERMISSIVE_LID = 0xFFFF
SUBNET_PREFIX = bytes.fromhex("fe80000000000000")
ROCE_DSCP = 26          # a common RoCE traffic class (AF31)


@dataclass
class Host:
    """One channel adapter port: its addresses on every encapsulation."""

    index: int
    name: str
    lid: int
    guid: int
    mac: str
    ipv4: str
    ipv6: str
    encap: str
    ip_id: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def gid(self) -> bytes:
        """The port GID: subnet prefix + GUID natively, the IP address on RoCE."""
        if self.encap in NATIVE:
            return SUBNET_PREFIX + self.guid.to_bytes(8, "big")
        if self.encap == "roce2-v6":
            return ipaddress.IPv6Address(self.ipv6).packed
        return ipaddress.IPv6Address("::ffff:" + self.ipv4).packed

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "gid": str(ipaddress.IPv6Address(self.gid))}
        if self.encap in NATIVE:
            out.update(lid=self.lid, guid=f"{self.guid:#018x}")
        else:
            out.update(mac=self.mac, ip=self.ipv6 if self.encap == "roce2-v6" else self.ipv4)
        return out


def make_hosts(encap: str, n: int = 2) -> list[Host]:
    """Two (or more) hosts with fixed, private addresses (deterministic by design)."""
    if encap not in ENCAPS:
        raise ValueError(f"unknown encapsulation {encap!r}; choose from {', '.join(ENCAPS)}")
    hosts = []
    for i in range(n):
        hosts.append(Host(
            index=i, name="AB"[i] if n <= 2 else f"H{i}", lid=i + 1,
            guid=0x0002C90300A0B000 + i + 1, mac=f"02:00:00:00:00:{0x0A + i:02x}",
            ipv4=f"10.0.0.{i + 1}", ipv6=f"fd00::{i + 1}", encap=encap,
            ip_id=0x1000 * (i + 1)))
    return hosts


UDP_SPORTS = ("flow", "qp")


def udp_source_port(src_qpn: int, dst_qpn: int, style: str = "flow") -> int:
    """RoCEv2 UDP source port of a QP (flow entropy for ECMP).

    "flow": as Linux sets it since 5.17 (`rdma_get_udp_sport`, rxe and mlx5 with no
    flow label given): the port of `rdma_calc_flow_label(lqpn, rqpn)`, a product of
    the two QPNs, so both ends of a QP pair use one port (QPs 0x11 and 0x11: 49441,
    as in the rxe captures). "qp": a hash per QP and direction, as older stacks."""
    if style == "flow":
        fl = src_qpn * dst_qpn
        fl ^= fl >> 20
        fl ^= fl >> 40
        fl &= 0xFFFFF
        return 0xC000 | ((fl & 0x3FFF) ^ (fl >> 14))
    h = (src_qpn * 0x9E3779B1 ^ dst_qpn) & 0xFFFFFFFF
    return 0xC000 | ((h ^ (h >> 14) ^ (h >> 28)) & 0x3FFF)


class Fabric:
    """Builds wire bytes for packets between hosts in one encapsulation."""

    def __init__(self, encap: str, hosts: list[Host]) -> None:
        if encap not in ENCAPS:
            raise ValueError(f"unknown encapsulation {encap!r}")
        self.encap = encap
        self.hosts = hosts

    @property
    def native(self) -> bool:
        return self.encap in NATIVE

    def build(self, src: Host, dst: Host, transport: list[Header], payload: bytes = b"",
              *, vl: int = 0, sl: int = 0, ce: bool = False, ect: bool = False,
              flow: int = 0, sport: int = 0xC000, permissive: bool = False,
              grh: bool | None = None) -> bytes:
        """Wire bytes of `transport` (BTH first) from `src` to `dst`.

        `ce` marks congestion the way the encapsulation carries it: IP ECN = CE on
        RoCEv2, BTH FECN natively and on RoCEv1 (the caller sets FECN in the BTH;
        here only the IP header is touched). `permissive` gives the directed-route
        SMP addressing (DLID = SLID = 0xFFFF, no GRH).
        """
        enc = self.encap
        if enc in NATIVE:
            use_grh = (enc == "ib-grh") if grh is None else grh
            if permissive:
                lrh = LRH(vl=vl, sl=sl, dlid=PERMISSIVE_LID, slid=PERMISSIVE_LID)
                return encode(lrh, *transport, payload=payload)
            lrh = LRH(vl=vl, sl=sl, dlid=dst.lid, slid=src.lid)
            if use_grh:
                g = GRH(tclass=0, flowlabel=flow & 0xFFFFF, hoplmt=64, sgid=src.gid,
                        dgid=dst.gid)
                return encode(lrh, g, *transport, payload=payload)
            return encode(lrh, *transport, payload=payload)
        eth = ETHERNET(dst=dst.mac, src=src.mac)
        if enc == "roce1":
            g = GRH(tclass=0, flowlabel=flow & 0xFFFFF, hoplmt=64, sgid=src.gid, dgid=dst.gid)
            return encode(eth, g, *transport, payload=payload)
        ecn = ECN_CE if ce else ECN_ECT0 if ect else 0
        udp = UDP(srcport=sport)
        if enc == "roce2":
            src.ip_id = (src.ip_id + 1) & 0xFFFF
            ip: Header = IPV4(src=src.ipv4, dst=dst.ipv4, dscp=ROCE_DSCP, ecn=ecn,
                              id=src.ip_id)
        else:
            ip = IPV6(src=src.ipv6, dst=dst.ipv6, tclass=(ROCE_DSCP << 2) | ecn,
                      flow=flow & 0xFFFFF)
        return encode(eth, ip, udp, *transport, payload=payload)

    def mark_ce(self, data: bytes) -> bytes:
        """Congestion-mark a built packet the way a switch would.

        RoCEv2: IP ECN = CE (IPv4 header checksum updated; the ICRC masks both).
        Native and RoCEv1: BTH FECN (masked by the ICRC; natively the VCRC is
        recomputed, as every hop does)."""
        pkt = decode(data, "ib" if self.native else "eth")
        if self.encap == "roce2":
            pkt.layer("ip").values["ecn"] = ECN_CE
        elif self.encap == "roce2-v6":
            pkt.layer("ipv6").values["tclass"] |= ECN_CE
        else:
            pkt.layer("bth").values["fecn"] = 1
        return encode(pkt, fill=True)   # IP checksum and VCRC follow; the ICRC masks both

    def describe(self) -> dict[str, Any]:
        return {"encap": self.encap, "hosts": [h.describe() for h in self.hosts]}


# Frame prefixes the capture needs: where the BTH starts in a built frame.
def bth_offset(encap: str, has_grh: bool) -> int:
    if encap in NATIVE:
        return LRH.size + (GRH.size if has_grh else 0)
    if encap == "roce1":
        return ETHERNET.size + GRH.size
    return ETHERNET.size + (IPV4.size if encap == "roce2" else IPV6.size) + UDP.size
