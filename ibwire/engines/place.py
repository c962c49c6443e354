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


# Walk states: one per protocol layer (the protocol graph as a state machine; a
# single loop keeps the kernel free of calls, which cost more than the parsing).
(S_DONE, S_ETH, S_ETYPE, S_IP, S_UDP, S_ROCE1, S_IB, S_BTH, S_ERF, S_LINK, S_SLL,
 S_SLL2) = range(12)


@njit(cache=True, inline="always")
def _u(buf, p, spec):
    """A field at absolute byte `p`: spec = (offset, nbytes, shift, mask) relative to p."""
    v = 0
    for k in range(spec[1]):
        v = (v << 8) | buf[p + spec[0] + k]
    return (v >> spec[2]) & spec[3]


@njit(cache=True, inline="always")
def _be16(buf, p):
    return (int(buf[p]) << 8) | int(buf[p + 1])


@njit(cache=True, inline="always")
def _be24(buf, p):
    return (int(buf[p]) << 16) | (int(buf[p + 1]) << 8) | int(buf[p + 2])


@njit(cache=True, inline="always")
def _in(x, arr):
    for v in arr:
        if v == x:
            return True
    return False


@njit(cache=True, inline="always")
def _first(mal, code):
    """The malformed code keeps the first problem's layer."""
    return code if mal == 0 else mal


@njit(cache=True)
def place(buf, data_off, caplen, linktype, lo, info, chain, payload, valid, lsize, ports,
          udp_encaps, eth_encaps):
    """Fill `lo` (layers x frames, -1 = absent) and `info` (N_INFO x frames) for every
    frame: frame i is buf[data_off[i]:data_off[i] + caplen[i]] of link type linktype[i]."""
    lo[:] = -1
    for i in range(data_off.shape[0]):
        b = data_off[i]
        end = caplen[i]
        lt = linktype[i]
        off = 0
        etype = 0
        limit = 0
        ip_kind = 0
        mal = 0
        fb = 0
        pend = 0  # a VCRC problem: the decoder finds it after the transport headers
        pay_off, pay_len, ib, kind, icrc, vcrc, lp = -1, 0, -1, 0, -1, -1, -1
        if lt == LINKTYPE_ETHERNET:
            st = S_ETH
        elif lt == LINKTYPE_INFINIBAND:
            st = S_IB
        elif lt == LINKTYPE_ERF:
            st = S_ERF
        elif lt == LINKTYPE_RAW:
            st = S_IP
        elif lt == LINKTYPE_LINUX_SLL:
            st = S_SLL
        elif lt == LINKTYPE_LINUX_SLL2:
            st = S_SLL2
        else:
            st = S_DONE
            fb = 1  # link types the kernel does not model (IPoIB, ...)
        while st != S_DONE:
            if st == S_ETH:
                st = S_DONE
                if off + SZ_ETH > end:
                    mal, fb = _first(mal, M_ETH), 1
                    continue
                lo[L_ETH, i] = off
                etype = _be16(buf, b + off + ETH_TYPE)
                off += SZ_ETH
                depth = 0
                while _in(etype, VLAN_TYPES) and depth < 8:
                    if off + SZ_VLAN > end:
                        mal, fb, etype = _first(mal, M_VLAN), 1, -1
                        break
                    if depth == 0:
                        lo[L_VLAN, i] = off
                    etype = _be16(buf, b + off + VLAN_ETYPE)
                    off += SZ_VLAN
                    depth += 1
                if etype >= 0:
                    st = S_ETYPE
            elif st == S_SLL or st == S_SLL2:
                size = SZ_SLL if st == S_SLL else SZ_SLL2
                code = M_SLL if st == S_SLL else M_SLL2
                st = S_DONE
                if end < size:
                    mal, fb = _first(mal, code), 1
                    continue
                lo[L_SLL if size == SZ_SLL else L_SLL2, i] = 0
                etype = _be16(buf, b + (SLL_ETYPE if size == SZ_SLL else SLL2_ETYPE))
                off = size
                st = S_ETYPE
            elif st == S_ETYPE:
                st = S_DONE
                if etype == ETHERTYPE_ROCE:
                    st = S_ROCE1
                elif etype == ETHERTYPE_IPV4 or etype == ETHERTYPE_IPV6:
                    st = S_IP
                elif _in(etype, eth_encaps):
                    fb = 1
            elif st == S_IP:
                st = S_DONE
                if off >= end:
                    mal, fb = _first(mal, M_IP), 1
                    continue
                ver = _u(buf, b + off, IP_VER)
                if ver == 4:
                    if off + SZ_IP > end:
                        mal, fb = _first(mal, M_IP), 1
                        continue
                    lo[L_IP, i] = off
                    hlen = 4 * _u(buf, b + off, IP_IHL)
                    total = _be16(buf, b + off + IP_LEN)
                    if hlen < SZ_IP or off + hlen > end:
                        mal, fb = _first(mal, M_IP), 1
                        continue
                    if total < hlen or off + total > end:
                        mal, fb = _first(mal, M_IP), 1
                        total = end - off
                    if (buf[b + off + IP_PROTO] == UDP_PROTO and _u(buf, b + off, IP_FRAG) == 0
                            and _u(buf, b + off, IP_MF) == 0):
                        end = off + total
                        off += hlen
                        ip_kind = CRC_ROCE2_V4
                        st = S_UDP
                elif ver == 6:
                    if off + SZ_IP6 > end:
                        mal, fb = _first(mal, M_IPV6), 1
                        continue
                    lo[L_IPV6, i] = off
                    ip_end = off + SZ_IP6 + _be16(buf, b + off + IP6_PLEN)
                    if ip_end > end:
                        mal, fb = _first(mal, M_IPV6), 1
                        ip_end = end
                    if buf[b + off + IP6_NXT] == UDP_PROTO:
                        end = ip_end
                        off += SZ_IP6
                        ip_kind = CRC_ROCE2_V6
                        st = S_UDP
                else:
                    mal, fb = _first(mal, M_IP), 1
            elif st == S_UDP:
                st = S_DONE
                if off + SZ_UDP > end:
                    mal, fb = _first(mal, M_UDP), 1
                    continue
                lo[L_UDP, i] = off
                length = _be16(buf, b + off + UDP_LEN)
                udp_end = off + length
                cut = False
                if length < SZ_UDP or udp_end > end:
                    mal, fb = _first(mal, M_UDP), 1
                    cut = udp_end > end
                    udp_end = end
                elif udp_end < end:
                    mal, fb = _first(mal, M_UDP), 1
                dport = _be16(buf, b + off + UDP_DPORT)
                if _in(dport, ports):
                    off += SZ_UDP
                    ib = off
                    if cut or udp_end - off < SZ_BTH + ICRC_LEN:
                        fb = 1  # ICRC not captured: the decoder's rules
                        continue
                    icrc = udp_end - ICRC_LEN
                    kind = ip_kind
                    limit = icrc
                    st = S_BTH
                elif _in(dport, udp_encaps):
                    fb = 1
            elif st == S_ROCE1:
                st = S_DONE
                ib = off
                if off + SZ_GRH > end:
                    mal, fb = _first(mal, M_GRH), 1
                    continue
                ib_end = off + SZ_GRH + _be16(buf, b + off + GRH_PAYLEN)
                if ib_end > end or ib_end - off - SZ_GRH < SZ_BTH + ICRC_LEN:
                    mal, fb = _first(mal, M_GRH), 1
                    continue
                lo[L_GRH, i] = off
                if buf[b + off + GRH_NXT] != NXTHDR_IBA:
                    mal, fb = _first(mal, M_GRH), 1
                    continue
                off += SZ_GRH
                icrc = ib_end - ICRC_LEN
                kind = CRC_ROCE1
                limit = icrc
                st = S_BTH
            elif st == S_IB:
                # Native: the packet ends at PktLen*4 (ICRC last), then the VCRC.
                st = S_DONE
                ib = off
                if off + SZ_LRH > end:
                    mal, fb = _first(mal, M_LRH), 1
                    continue
                lo[L_LRH, i] = off
                ib_end = off + 4 * _u(buf, b + off, LRH_PKTLEN)
                lnh = _u(buf, b + off, LRH_LNH)
                if lnh < 2:
                    fb = 1  # raw packets: the decoder's
                    continue
                if ib_end - off < SZ_LRH + SZ_BTH + ICRC_LEN or ib_end > end:
                    mal, fb = _first(mal, M_LRH), 1
                    continue
                off += SZ_LRH
                kind = CRC_NATIVE
                if lnh == 3:
                    if off + SZ_GRH > ib_end - ICRC_LEN:
                        mal, fb = _first(mal, M_GRH), 1
                        continue
                    lo[L_GRH, i] = off
                    if buf[b + off + GRH_NXT] != NXTHDR_IBA:
                        mal, fb = _first(mal, M_GRH), 1
                        continue
                    off += SZ_GRH
                    kind = CRC_NATIVE_GRH
                icrc = ib_end - ICRC_LEN
                limit = icrc
                if ib_end + VCRC_LEN <= end:
                    vcrc = ib_end
                    if ib_end + VCRC_LEN < end:
                        pend = M_FRAME
                elif ib_end < end:
                    pend = M_VCRC
                st = S_BTH
            elif st == S_BTH:
                # BTH, the opcode's extended headers, payload and pad.
                st = S_DONE
                if off + SZ_BTH > limit:
                    mal, fb = _first(mal, M_BTH), 1
                    continue
                lo[L_BTH, i] = off
                bth = off
                opc = buf[b + off + BTH_OPC]
                if valid[opc] == 0:
                    mal, fb = _first(mal, M_BTH), 1
                off += SZ_BTH
                fits = True
                for k in range(chain.shape[1]):
                    lay = chain[opc, k]
                    if lay < 0:
                        break
                    if off + lsize[lay] > limit:
                        # Codes list the extended headers after "bth", in layer order.
                        mal, fb, fits = _first(mal, M_BTH + lay - L_BTH), 1, False
                        break
                    lo[lay, i] = off
                    off += lsize[lay]
                if not fits:
                    continue
                pad = _u(buf, b + bth, BTH_PAD)
                if payload[opc] == 0 and limit - off > 0:
                    mal, fb = _first(mal, M_BTH), 1
                if limit - off < pad:
                    mal, fb = _first(mal, M_BTH), 1
                pay_off = off
                pay_len = max(limit - pad, off) - off
                if (opc == UD_SEND_ONLY or opc == UD_SEND_ONLY_IMM) and pay_len > 0:
                    fb = 1  # a payload decoder (MAD, IPoIB) may claim it: the decoder's
                    d = lo[L_DETH, i]
                    if d >= 0 and pay_len >= SZ_MAD:
                        qp = _be24(buf, b + bth + BTH_QP)
                        sq = _be24(buf, b + d + DETH_SRCQP)
                        if qp == MAD_QP0 or qp == MAD_QP1 or sq == MAD_QP0 or sq == MAD_QP1:
                            lo[L_MAD, i] = off
            elif st == S_ERF:
                # Anything but a plain record whose rlen and wlen agree with the bytes
                # present goes to the decoder. Inside pcap a padded rlen beyond the bytes
                # present is fine; fewer bytes than header + wlen is not (unless the
                # record says it was truncated).
                st = S_DONE
                if end < SZ_ERF:
                    mal, fb = _first(mal, M_ERF), 1
                    continue
                lo[L_ERF, i] = 0
                if _u(buf, b, ERF_EXT):
                    fb = 1  # extension headers
                    continue
                et = _u(buf, b, ERF_TYPE)
                rlen = _be16(buf, b + ERF_RLEN)
                want = _be16(buf, b + ERF_WLEN) + (ERF_PAD_FIELD if _in(et, ERF_ETH_TYPES)
                                                   else 0)
                if rlen < SZ_ERF or rlen < end or (end < SZ_ERF + want
                                                   and _u(buf, b, ERF_TRUNC) == 0):
                    mal, fb = _first(mal, M_ERF), 1
                if rlen != end or end < SZ_ERF + want:
                    fb = 1
                end = SZ_ERF + min(want, end - SZ_ERF)
                off = SZ_ERF
                if et == ERF_TYPE_IB:
                    st = S_IB
                elif et == ERF_TYPE_IB_LINK:
                    st = S_LINK
                elif et == ERF_TYPE_ETH:
                    if end - off < ERF_PAD_FIELD:
                        mal, fb = _first(mal, M_ERF), 1
                        continue
                    off += ERF_PAD_FIELD
                    st = S_ETH
                else:
                    mal, fb = _first(mal, M_ERF), 1
            elif st == S_LINK:
                st = S_DONE
                ib = off
                if off + SZ_LINK > end:
                    mal, fb = _first(mal, M_LINK), 1
                    continue
                lo[L_LINK, i] = off
                lp = off
                if _u(buf, b + off, LINK_OP) > 1:
                    mal, fb = _first(mal, M_IBLINK), 1
        if pend:
            mal, fb = _first(mal, pend), 1
        info[PAY_OFF, i] = pay_off
        info[PAY_LEN, i] = pay_len
        info[IB_OFF, i] = ib
        info[CRC_KIND, i] = kind
        info[ICRC_AT, i] = icrc
        info[VCRC_AT, i] = vcrc
        info[LP_AT, i] = lp
        info[MAL, i] = mal
        info[FB, i] = fb
