"""Byte positions and sizes the placement kernel walks by, all read from the
registry layouts (`Layout.offsets()`, `Layout.size`) and the capture modules."""

from __future__ import annotations

from ibwire.headers import BTH, DETH, ERF, ETHERNET, GRH, IPV4, IPV6, LINK, LRH, UDP, VLAN
from ibwire.headers.carriers import SLL, SLL2
from ibwire.mad.header import MAD_HEADER


def _at(layout, name):
    """(byte offset, byte count, shift, mask) of a field, from the registry."""
    return layout.offsets()[name]


# Field positions the walk needs, all from the layouts.
ETH_TYPE = _at(ETHERNET, "type")[0]
VLAN_ETYPE = _at(VLAN, "etype")[0]
SLL_ETYPE, SLL2_ETYPE = _at(SLL, "etype")[0], _at(SLL2, "etype")[0]
IP_VER = _at(IPV4, "version")
IP_IHL, IP_LEN, IP_PROTO = _at(IPV4, "ihl"), _at(IPV4, "len")[0], _at(IPV4, "proto")[0]
IP_MF, IP_FRAG = _at(IPV4, "mf"), _at(IPV4, "frag_offset")
IP6_PLEN, IP6_NXT = _at(IPV6, "plen")[0], _at(IPV6, "nxt")[0]
UDP_LEN, UDP_DPORT = _at(UDP, "length")[0], _at(UDP, "dstport")[0]
LRH_LNH, LRH_PKTLEN = _at(LRH, "lnh"), _at(LRH, "pktlen")
GRH_PAYLEN, GRH_NXT = _at(GRH, "paylen")[0], _at(GRH, "nxthdr")[0]
BTH_OPC, BTH_PAD, BTH_QP = _at(BTH, "opcode")[0], _at(BTH, "padcnt"), _at(BTH, "destqp")[0]
DETH_SRCQP = _at(DETH, "srcqp")[0]
LINK_OP = _at(LINK, "op")
ERF_TYPE = _at(ERF, "type")
ERF_TRUNC = _at(ERF, "trunc")
ERF_RLEN, ERF_WLEN = _at(ERF, "rlen")[0], _at(ERF, "wlen")[0]
SZ_ERF, SZ_ETH, SZ_VLAN, SZ_IP, SZ_IP6 = ERF.size, ETHERNET.size, VLAN.size, IPV4.size, IPV6.size
SZ_UDP, SZ_LRH, SZ_GRH, SZ_BTH, SZ_LINK = UDP.size, LRH.size, GRH.size, BTH.size, LINK.size
SZ_SLL, SZ_SLL2, SZ_MAD = SLL.size, SLL2.size, MAD_HEADER.size

