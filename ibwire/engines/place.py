"""The placement kernel: where each header of each frame starts.

`place` walks every frame of a chunk the way the per-packet decoder does (link
type -> ERF / SLL / Ethernet / VLAN / IP / UDP / LRH / GRH / BTH / the opcode's
extended headers / payload) but records only offsets: one row per layer in
`lo` (-1 where absent) and a few per-frame facts in `info`. Field values are
read afterwards by `extract`, CRCs by `crc_kernels`; no bytes are copied.

Whatever the decoder would mark as malformed sets `info[MAL]` (the layer code of
the first problem, `tables.MALFORMED`) and `info[FB]`: such frames, and frames
a payload decoder may claim (UD SENDs: MADs, IPoIB) or of encapsulations the
kernel does not model, are handed to the per-packet decoder by `columns`.
`place.py_func` is the plain-Python twin.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ibwire.capture.erf import _ETH_TYPES
from ibwire.capture.linktypes import (
    LINKTYPE_ERF,
    LINKTYPE_ETHERNET,
    LINKTYPE_INFINIBAND,
    LINKTYPE_LINUX_SLL,
    LINKTYPE_LINUX_SLL2,
    LINKTYPE_RAW,
)
from ibwire.decoder.base import ICRC_LEN, UDP_PROTO, VCRC_LEN
from ibwire.engines.tables import (
    CRC_NATIVE,
    CRC_NATIVE_GRH,
    CRC_ROCE1,
    CRC_ROCE2_V4,
    CRC_ROCE2_V6,
    LAYER,
    MALFORMED,
)
from ibwire.headers import BTH, DETH, ERF, ETHERNET, GRH, IPV4, IPV6, LINK, LRH, UDP, VLAN
from ibwire.headers.carriers import (
    ERF_TYPE_ETH,
    ERF_TYPE_IB,
    ERF_TYPE_IB_LINK,
    ETHERTYPE_IPV4,
    ETHERTYPE_IPV6,
    ETHERTYPE_ROCE,
    ETHERTYPE_VLANS,
    SLL,
    SLL2,
)
from ibwire.headers.opcodes import UD_SEND_ONLY, UD_SEND_ONLY_IMM
from ibwire.headers.routing import NXTHDR_IBA
from ibwire.mad.dispatch import MAD_QPS
from ibwire.mad.header import MAD_HEADER

# Rows of `info` (int32 per frame).
PAY_OFF, PAY_LEN, IB_OFF, CRC_KIND, ICRC_AT, VCRC_AT, LP_AT, MAL, FB = range(9)
N_INFO = 9

L_ERF, L_SLL, L_SLL2, L_ETH, L_VLAN = (LAYER[n] for n in ("erf", "sll", "sll2", "eth", "vlan"))
L_IP, L_IPV6, L_UDP, L_LRH, L_GRH = (LAYER[n] for n in ("ip", "ipv6", "udp", "lrh", "grh"))
L_BTH, L_DETH, L_MAD, L_LINK = (LAYER[n] for n in ("bth", "deth", "mad", "link"))
M = {name: MALFORMED[name] for name in MALFORMED}
M_ERF, M_SLL, M_SLL2, M_ETH, M_VLAN = M["erf"], M["sll"], M["sll2"], M["eth"], M["vlan"]
M_IP, M_IPV6, M_UDP, M_LRH, M_GRH, M_BTH = (M[n] for n in ("ip", "ipv6", "udp", "lrh", "grh",
                                                          "bth"))
M_ICRC, M_VCRC, M_FRAME, M_IBLINK, M_LINK = (M[n] for n in ("icrc", "vcrc", "frame",
                                                            "infiniband_link", "link"))


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
ERF_TYPE, ERF_EXT = _at(ERF, "type"), _at(ERF, "ext_header")
ERF_TRUNC = _at(ERF, "trunc")
ERF_RLEN, ERF_WLEN = _at(ERF, "rlen")[0], _at(ERF, "wlen")[0]
SZ_ERF, SZ_ETH, SZ_VLAN, SZ_IP, SZ_IP6 = ERF.size, ETHERNET.size, VLAN.size, IPV4.size, IPV6.size
SZ_UDP, SZ_LRH, SZ_GRH, SZ_BTH, SZ_LINK = UDP.size, LRH.size, GRH.size, BTH.size, LINK.size
SZ_SLL, SZ_SLL2, SZ_MAD = SLL.size, SLL2.size, MAD_HEADER.size
VLAN_TYPES = np.array(ETHERTYPE_VLANS, dtype=np.int64)
ERF_ETH_TYPES = np.array(sorted(_ETH_TYPES), dtype=np.int64)
MAD_QP0, MAD_QP1 = MAD_QPS
ERF_PAD_FIELD = 2  # ERF Ethernet types: 2 bytes of offset/pad before the frame


@njit(cache=True)
def _u(buf, p, spec):
    """A field at absolute byte `p`: spec = (offset, nbytes, shift, mask) relative to p."""
    v = 0
    for k in range(spec[1]):
        v = (v << 8) | buf[p + spec[0] + k]
    return (v >> spec[2]) & spec[3]


@njit(cache=True)
def _be16(buf, p):
    return (int(buf[p]) << 8) | int(buf[p + 1])


@njit(cache=True)
def _mark(info, i, code):
    if info[MAL, i] == 0:
        info[MAL, i] = code
    info[FB, i] = 1


@njit(cache=True)
def _in(x, arr):
    for v in arr:
        if v == x:
            return True
    return False


@njit(cache=True)
def _transport(buf, b, off, limit, i, lo, info, chain, payload, valid, lsize):
    """BTH, the opcode's extended headers, payload and pad (decoder's rules)."""
    if off + SZ_BTH > limit:
        _mark(info, i, M_BTH)
        return
    lo[L_BTH, i] = off
    opc = buf[b + off + BTH_OPC]
    if valid[opc] == 0:
        _mark(info, i, M_BTH)
    bth = off
    off += SZ_BTH
    for k in range(chain.shape[1]):
        lay = chain[opc, k]
        if lay < 0:
            break
        if off + lsize[lay] > limit:
            _mark(info, i, lay_code(lay))
            return
        lo[lay, i] = off
        off += lsize[lay]
    pad = _u(buf, b + bth, BTH_PAD)
    if payload[opc] == 0 and limit - off > 0:
        _mark(info, i, M_BTH)
    if limit - off < pad:
        _mark(info, i, M_BTH)
    pay_end = max(limit - pad, off)
    info[PAY_OFF, i] = off
    info[PAY_LEN, i] = pay_end - off
    if (opc == UD_SEND_ONLY or opc == UD_SEND_ONLY_IMM) and pay_end > off:
        # A payload decoder (MAD, IPoIB) may claim it: the decoder decides.
        info[FB, i] = 1
        d = lo[L_DETH, i]
        if d >= 0 and pay_end - off >= SZ_MAD:
            qp = (int(buf[b + bth + BTH_QP]) << 16) | _be16(buf, b + bth + BTH_QP + 1)
            sq = (int(buf[b + d + DETH_SRCQP]) << 16) | _be16(buf, b + d + DETH_SRCQP + 1)
            if qp == MAD_QP0 or qp == MAD_QP1 or sq == MAD_QP0 or sq == MAD_QP1:
                lo[L_MAD, i] = off


@njit(cache=True)
def lay_code(lay):
    # Malformed codes list the extended headers right after "bth", in layer order.
    return M_BTH + (lay - L_BTH)


@njit(cache=True)
def _ib(buf, b, off, end, i, lo, info, chain, payload, valid, lsize):
    """Native InfiniBand from the LRH: ends at PktLen*4, then the VCRC."""
    info[IB_OFF, i] = off
    if off + SZ_LRH > end:
        _mark(info, i, M_LRH)
        return
    lo[L_LRH, i] = off
    ib_end = off + 4 * _u(buf, b + off, LRH_PKTLEN)
    lnh = _u(buf, b + off, LRH_LNH)
    if lnh < 2:
        info[FB, i] = 1  # raw packets: the decoder's
        return
    if ib_end - off < SZ_LRH + SZ_BTH + ICRC_LEN or ib_end > end:
        _mark(info, i, M_LRH)
        return
    t = off + SZ_LRH
    kind = CRC_NATIVE
    if lnh == 3:
        if t + SZ_GRH > ib_end - ICRC_LEN:
            _mark(info, i, M_GRH)
            return
        lo[L_GRH, i] = t
        if buf[b + t + GRH_NXT] != NXTHDR_IBA:
            _mark(info, i, M_GRH)
            return
        t += SZ_GRH
        kind = CRC_NATIVE_GRH
    _transport(buf, b, t, ib_end - ICRC_LEN, i, lo, info, chain, payload, valid, lsize)
    info[ICRC_AT, i] = ib_end - ICRC_LEN
    info[CRC_KIND, i] = kind
    if ib_end + VCRC_LEN <= end:
        info[VCRC_AT, i] = ib_end
        if ib_end + VCRC_LEN < end:
            _mark(info, i, M_FRAME)
    elif ib_end < end:
        _mark(info, i, M_VCRC)


@njit(cache=True)
def _roce1(buf, b, off, end, i, lo, info, chain, payload, valid, lsize):
    info[IB_OFF, i] = off
    if off + SZ_GRH > end:
        _mark(info, i, M_GRH)
        return
    ib_end = off + SZ_GRH + _be16(buf, b + off + GRH_PAYLEN)
    if ib_end > end or ib_end - off - SZ_GRH < SZ_BTH + ICRC_LEN:
        _mark(info, i, M_GRH)
        return
    lo[L_GRH, i] = off
    if buf[b + off + GRH_NXT] != NXTHDR_IBA:
        _mark(info, i, M_GRH)
        return
    _transport(buf, b, off + SZ_GRH, ib_end - ICRC_LEN, i, lo, info, chain, payload, valid,
               lsize)
    info[ICRC_AT, i] = ib_end - ICRC_LEN
    info[CRC_KIND, i] = CRC_ROCE1


@njit(cache=True)
def _ip(buf, b, off, end, i, lo, info, chain, payload, valid, lsize, ports, udp_encaps):
    if off >= end:
        _mark(info, i, M_IP)
        return
    ver = _u(buf, b + off, IP_VER)
    if ver == 4:
        if off + SZ_IP > end:
            _mark(info, i, M_IP)
            return
        lo[L_IP, i] = off
        hlen = 4 * _u(buf, b + off, IP_IHL)
        total = _be16(buf, b + off + IP_LEN)
        if hlen < SZ_IP or off + hlen > end:
            _mark(info, i, M_IP)
            return
        if total < hlen or off + total > end:
            _mark(info, i, M_IP)
            total = end - off
        if (buf[b + off + IP_PROTO] == UDP_PROTO and _u(buf, b + off, IP_FRAG) == 0
                and _u(buf, b + off, IP_MF) == 0):
            _udp(buf, b, off + hlen, off + total, i, lo, info, chain, payload, valid, lsize,
                 ports, udp_encaps, CRC_ROCE2_V4)
    elif ver == 6:
        if off + SZ_IP6 > end:
            _mark(info, i, M_IPV6)
            return
        lo[L_IPV6, i] = off
        ip_end = off + SZ_IP6 + _be16(buf, b + off + IP6_PLEN)
        if ip_end > end:
            _mark(info, i, M_IPV6)
            ip_end = end
        if buf[b + off + IP6_NXT] == UDP_PROTO:
            _udp(buf, b, off + SZ_IP6, ip_end, i, lo, info, chain, payload, valid, lsize,
                 ports, udp_encaps, CRC_ROCE2_V6)
    else:
        _mark(info, i, M_IP)


@njit(cache=True)
def _udp(buf, b, off, end, i, lo, info, chain, payload, valid, lsize, ports, udp_encaps,
         kind):
    if off + SZ_UDP > end:
        _mark(info, i, M_UDP)
        return
    lo[L_UDP, i] = off
    length = _be16(buf, b + off + UDP_LEN)
    udp_end = off + length
    cut = False
    if length < SZ_UDP or udp_end > end:
        _mark(info, i, M_UDP)
        cut = udp_end > end
        udp_end = end
    elif udp_end < end:
        _mark(info, i, M_UDP)
    dport = _be16(buf, b + off + UDP_DPORT)
    if _in(dport, ports):
        t = off + SZ_UDP
        info[IB_OFF, i] = t
        if cut or udp_end - t < SZ_BTH + ICRC_LEN:
            info[FB, i] = 1  # ICRC not captured: the decoder's rules
            return
        _transport(buf, b, t, udp_end - ICRC_LEN, i, lo, info, chain, payload, valid, lsize)
        info[ICRC_AT, i] = udp_end - ICRC_LEN
        info[CRC_KIND, i] = kind
    elif _in(dport, udp_encaps):
        info[FB, i] = 1


@njit(cache=True)
def _ethertype(buf, b, etype, off, end, i, lo, info, chain, payload, valid, lsize, ports,
               udp_encaps, eth_encaps):
    if etype == ETHERTYPE_ROCE:
        _roce1(buf, b, off, end, i, lo, info, chain, payload, valid, lsize)
    elif etype == ETHERTYPE_IPV4 or etype == ETHERTYPE_IPV6:
        _ip(buf, b, off, end, i, lo, info, chain, payload, valid, lsize, ports, udp_encaps)
    elif _in(etype, eth_encaps):
        info[FB, i] = 1


@njit(cache=True)
def _eth(buf, b, off, end, i, lo, info, chain, payload, valid, lsize, ports, udp_encaps,
         eth_encaps):
    if off + SZ_ETH > end:
        _mark(info, i, M_ETH)
        return
    lo[L_ETH, i] = off
    etype = _be16(buf, b + off + ETH_TYPE)
    off += SZ_ETH
    depth = 0
    while _in(etype, VLAN_TYPES) and depth < 8:
        if off + SZ_VLAN > end:
            _mark(info, i, M_VLAN)
            return
        if depth == 0:
            lo[L_VLAN, i] = off
        etype = _be16(buf, b + off + VLAN_ETYPE)
        off += SZ_VLAN
        depth += 1
    _ethertype(buf, b, etype, off, end, i, lo, info, chain, payload, valid, lsize, ports,
               udp_encaps, eth_encaps)


@njit(cache=True)
def _erf(buf, b, end, i, lo, info, chain, payload, valid, lsize, ports, udp_encaps,
         eth_encaps):
    """An ERF record (native ERF or LINKTYPE_ERF). Anything but a plain record, whose
    rlen and wlen agree with the bytes present, goes to the decoder (its rules)."""
    if end < SZ_ERF:
        _mark(info, i, M_ERF)
        return
    lo[L_ERF, i] = 0
    if _u(buf, b, ERF_EXT):
        info[FB, i] = 1  # extension headers
        return
    etype = _u(buf, b, ERF_TYPE)
    rlen = _be16(buf, b + ERF_RLEN)
    want = _be16(buf, b + ERF_WLEN) + (ERF_PAD_FIELD if _in(etype, ERF_ETH_TYPES) else 0)
    # A padded rlen beyond the bytes present is fine inside pcap; fewer bytes than
    # header + wlen is not (unless the record says it was truncated).
    if rlen < SZ_ERF or rlen < end or (end < SZ_ERF + want and _u(buf, b, ERF_TRUNC) == 0):
        _mark(info, i, M_ERF)
    if rlen != end or end < SZ_ERF + want:
        info[FB, i] = 1
    pay_end = SZ_ERF + min(want, end - SZ_ERF)
    if etype == ERF_TYPE_IB:
        _ib(buf, b, SZ_ERF, pay_end, i, lo, info, chain, payload, valid, lsize)
    elif etype == ERF_TYPE_IB_LINK:
        info[IB_OFF, i] = SZ_ERF
        if SZ_ERF + SZ_LINK > pay_end:
            _mark(info, i, M_LINK)
            return
        lo[L_LINK, i] = SZ_ERF
        info[LP_AT, i] = SZ_ERF
        if _u(buf, b + SZ_ERF, LINK_OP) > 1:
            _mark(info, i, M_IBLINK)
    elif etype == ERF_TYPE_ETH:
        if pay_end - SZ_ERF < ERF_PAD_FIELD:
            _mark(info, i, M_ERF)
            return
        _eth(buf, b, SZ_ERF + ERF_PAD_FIELD, pay_end, i, lo, info, chain, payload, valid,
             lsize, ports, udp_encaps, eth_encaps)
    else:
        _mark(info, i, M_ERF)


@njit(cache=True)
def place(buf, data_off, caplen, linktype, lo, info, chain, payload, valid, lsize, ports,
          udp_encaps, eth_encaps):
    """Fill `lo` (layers x frames, -1 = absent) and `info` (N_INFO x frames) for every
    frame: frame i is buf[data_off[i]:data_off[i] + caplen[i]] of link type linktype[i]."""
    for i in range(data_off.shape[0]):
        for r in range(lo.shape[0]):
            lo[r, i] = -1
        for r in range(N_INFO):
            info[r, i] = 0
        info[PAY_OFF, i] = -1
        info[IB_OFF, i] = -1
        info[ICRC_AT, i] = -1
        info[VCRC_AT, i] = -1
        info[LP_AT, i] = -1
        b = data_off[i]
        end = caplen[i]
        lt = linktype[i]
        if lt == LINKTYPE_ETHERNET:
            _eth(buf, b, 0, end, i, lo, info, chain, payload, valid, lsize, ports,
                 udp_encaps, eth_encaps)
        elif lt == LINKTYPE_INFINIBAND:
            _ib(buf, b, 0, end, i, lo, info, chain, payload, valid, lsize)
        elif lt == LINKTYPE_ERF:
            _erf(buf, b, end, i, lo, info, chain, payload, valid, lsize, ports, udp_encaps,
                 eth_encaps)
        elif lt == LINKTYPE_RAW:
            _ip(buf, b, 0, end, i, lo, info, chain, payload, valid, lsize, ports, udp_encaps)
        elif lt == LINKTYPE_LINUX_SLL:
            if end < SZ_SLL:
                _mark(info, i, M_SLL)
            else:
                lo[L_SLL, i] = 0
                _ethertype(buf, b, _be16(buf, b + SLL_ETYPE), SZ_SLL, end, i, lo, info,
                           chain, payload, valid, lsize, ports, udp_encaps, eth_encaps)
        elif lt == LINKTYPE_LINUX_SLL2:
            if end < SZ_SLL2:
                _mark(info, i, M_SLL2)
            else:
                lo[L_SLL2, i] = 0
                _ethertype(buf, b, _be16(buf, b + SLL2_ETYPE), SZ_SLL2, end, i, lo, info,
                           chain, payload, valid, lsize, ports, udp_encaps, eth_encaps)
        else:
            info[FB, i] = 1  # link types the kernel does not model (IPoIB, ...)
