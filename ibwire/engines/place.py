"""The placement kernel: where each header of each frame starts.

`place` walks every frame of a chunk the way the per-packet decoder does (link
type -> ERF / SLL / Ethernet / VLAN / IP / UDP / LRH / GRH / BTH / the opcode's
extended headers / payload), choosing each next header from the protocol graph's
tables (`tables.kernel_tables`, passed in: no next-header number is written
here), but records only offsets: one row per layer in
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

from ibwire.constants import ICRC_LEN, PKTLEN_UNIT, VCRC_LEN
from ibwire.decoder.carriers import MAX_VLAN_TAGS
from ibwire.engines import positions as P
from ibwire.engines.scan_kernels import erf_header_end
from ibwire.engines.tables import (
    CRC_NATIVE,
    CRC_NATIVE_GRH,
    CRC_ROCE1,
    CRC_ROCE2_V4,
    CRC_ROCE2_V6,
    N_ERF,
    N_ERF_SKIP,
    N_ETYPE,
    N_IP4,
    N_IP6,
    N_LINKTYPE,
    N_LNH,
    N_NXTHDR,
    N_UDP,
    S_BTH,
    S_DONE,
    S_ERF,
    S_ETH,
    S_ETYPE,
    S_FALLBACK,
    S_GRH,
    S_IB,
    S_IP,
    S_LINK,
    S_ROCE1,
    S_ROCE2,
    S_SLL,
    S_SLL2,
    S_UDP,
    S_VLAN,
    layers,
)

# Rows of `info` (int32 per frame).
PAY_OFF, PAY_LEN, IB_OFF, CRC_KIND, ICRC_AT, VCRC_AT, LP_AT, MAL, FB = range(9)
N_INFO = 9

# The built-in layer rows and malformed codes never move (tables.layers).
_LAYERS = layers()
L_ERF, L_SLL, L_SLL2, L_ETH, L_VLAN = (_LAYERS.index[n] for n in ("erf", "sll", "sll2", "eth",
                                                                   "vlan"))
L_IP, L_IPV6, L_UDP, L_LRH, L_GRH = (_LAYERS.index[n] for n in ("ip", "ipv6", "udp", "lrh",
                                                                 "grh"))
L_BTH, L_DETH, L_MAD, L_LINK = (_LAYERS.index[n] for n in ("bth", "deth", "mad", "link"))
M = dict(_LAYERS.malformed)
M_ERF, M_SLL, M_SLL2, M_ETH, M_VLAN = M["erf"], M["sll"], M["sll2"], M["eth"], M["vlan"]
M_IP, M_IPV6, M_UDP, M_LRH, M_GRH, M_BTH = (M[n] for n in ("ip", "ipv6", "udp", "lrh", "grh",
                                                          "bth"))
M_ICRC, M_VCRC, M_FRAME, M_IBLINK, M_LINK = (M[n] for n in ("icrc", "vcrc", "frame",
                                                            "infiniband_link", "link"))
# The states are the protocol graph as a state machine (tables.NODE_STATE); a
# single loop keeps the kernel free of calls, which cost more than the parsing.


@njit(cache=True, inline="always")
def _u(buf, p, spec):
    """A field at absolute byte `p`: spec = (offset, nbytes, shift, mask) relative to p."""
    v = 0
    for k in range(spec[1]):
        v = (v << 8) | buf[p + spec[0] + k]
    return (v >> spec[2]) & spec[3]


@njit(cache=True, inline="always")
def _be16(buf, p):
    # int64, not uint64: values index the next-header table and mix with offsets.
    return (np.int64(buf[p]) << 8) | np.int64(buf[p + 1])


@njit(cache=True, inline="always")
def _be24(buf, p):
    return (np.int64(buf[p]) << 16) | (np.int64(buf[p + 1]) << 8) | np.int64(buf[p + 2])


@njit(cache=True, inline="always")
def _in(x, arr):
    for v in arr:
        if v == x:
            return True
    return False


@njit(cache=True, inline="always")
def _fit(lo, i, lay, off, end, lsize, layer_mal):
    """Place layer row `lay` of frame i at `off` if its bytes end by `end`: 0, else the
    layer's truncation code (nothing placed)."""
    if off + lsize[lay] > end:
        return layer_mal[lay]
    lo[lay, i] = off
    return 0


@njit(cache=True, inline="always")
def _grh_bth(lo, i, buf, b, off, nxt):
    """Place a GRH at `off`: 0 if its NxtHdr leads to the BTH, else its malformed code."""
    lo[L_GRH, i] = off
    return 0 if int(nxt[N_NXTHDR, buf[b + off + P.GRH_NXT]]) == S_BTH else M_GRH


@njit(cache=True, inline="always")
def _first(mal, code):
    """The malformed code keeps the first problem's layer."""
    return code if mal == 0 else mal


@njit(cache=True)
def place(buf, data_off, caplen, linktype, lo, info, nxt, chain, payload, valid, op_mad,
          mad_qps, lsize, layer_mal):
    """Fill `lo` (layers x frames, -1 = absent) and `info` (N_INFO x frames) for every
    frame: frame i is buf[data_off[i]:data_off[i] + caplen[i]] of link type linktype[i].
    The tables after `info` are `tables.kernel_tables()`: `nxt` the next-header table
    (graph edges as states), the opcode chain/payload/valid/MAD-carrier rows, the MAD
    QPs, and per layer row its size and truncation code."""
    lo[:] = -1
    for i in range(data_off.shape[0]):
        b = data_off[i]
        end = caplen[i]
        lt = linktype[i]
        off = 0
        etype = 0
        limit = 0
        ip_kind = 0
        tags = 0
        mal = 0
        fb = 0
        bad = 0   # the problem that stops the walk (`_fit`'s code)
        pend = 0  # a VCRC problem: the decoder finds it after the transport headers
        pay_off, pay_len, ib, kind, icrc, vcrc, lp = -1, 0, -1, 0, -1, -1, -1
        st = int(nxt[N_LINKTYPE, lt]) if 0 <= lt < nxt.shape[1] else S_FALLBACK
        while st != S_DONE:
            cur, st = st, S_DONE  # each state names the next one, or the walk ends
            if cur == S_FALLBACK:
                fb = 1  # a node the decoder has a step for and the kernel does not model
            elif cur == S_ETH:
                bad = _fit(lo, i, L_ETH, off, end, lsize, layer_mal)
                if bad:
                    continue
                etype = _be16(buf, b + off + P.ETH_TYPE)
                off += P.SZ_ETH
                st = S_ETYPE
            elif cur == S_SLL or cur == S_SLL2:
                lay = L_SLL if cur == S_SLL else L_SLL2
                bad = _fit(lo, i, lay, 0, end, lsize, layer_mal)
                if bad:
                    continue
                etype = _be16(buf, b + (P.SLL_ETYPE if cur == S_SLL else P.SLL2_ETYPE))
                off = lsize[lay]
                st = S_ETYPE
            elif cur == S_ETYPE:
                st = int(nxt[N_ETYPE, etype])
            elif cur == S_VLAN:
                # 802.1Q/802.1ad tags (at most MAX_VLAN_TAGS, as the decoder).
                if tags >= MAX_VLAN_TAGS:
                    continue
                if off + P.SZ_VLAN > end:
                    bad = M_VLAN
                    continue
                if tags == 0:
                    lo[L_VLAN, i] = off
                etype = _be16(buf, b + off + P.VLAN_ETYPE)
                off += P.SZ_VLAN
                tags += 1
                st = S_ETYPE
            elif cur == S_IP:
                ver = _u(buf, b + off, P.IP_VER) if off < end else 0
                if ver == 4:
                    bad = _fit(lo, i, L_IP, off, end, lsize, layer_mal)
                    if bad:
                        continue
                    hlen = 4 * _u(buf, b + off, P.IP_IHL)
                    total = _be16(buf, b + off + P.IP_LEN)
                    if hlen < P.SZ_IP or off + hlen > end:
                        bad = M_IP
                        continue
                    if total < hlen or off + total > end:
                        mal, fb = _first(mal, M_IP), 1
                        total = end - off
                    if _u(buf, b + off, P.IP_FRAG) == 0 and _u(buf, b + off, P.IP_MF) == 0:
                        st = int(nxt[N_IP4, buf[b + off + P.IP_PROTO]])
                        end = off + total
                        off += hlen
                        ip_kind = CRC_ROCE2_V4
                elif ver == 6:
                    bad = _fit(lo, i, L_IPV6, off, end, lsize, layer_mal)
                    if bad:
                        continue
                    ip_end = off + P.SZ_IP6 + _be16(buf, b + off + P.IP6_PLEN)
                    if ip_end > end:
                        mal, fb = _first(mal, M_IPV6), 1
                        ip_end = end
                    st = int(nxt[N_IP6, buf[b + off + P.IP6_NXT]])
                    end = ip_end
                    off += P.SZ_IP6
                    ip_kind = CRC_ROCE2_V6
                else:
                    bad = M_IP  # no version (nothing captured) or an unknown one
            elif cur == S_UDP:
                bad = _fit(lo, i, L_UDP, off, end, lsize, layer_mal)
                if bad:
                    continue
                length = _be16(buf, b + off + P.UDP_LEN)
                udp_end = off + length
                cut = False
                if length < P.SZ_UDP or udp_end > end:
                    mal, fb = _first(mal, M_UDP), 1
                    cut = udp_end > end
                    udp_end = end
                elif udp_end < end:
                    mal, fb = _first(mal, M_UDP), 1
                st = int(nxt[N_UDP, _be16(buf, b + off + P.UDP_DPORT)])
                if st == S_ROCE2:
                    st = S_DONE
                    off += P.SZ_UDP
                    ib = off
                    if cut or udp_end - off < P.SZ_BTH + ICRC_LEN:
                        fb = 1  # ICRC not captured: the decoder's rules
                        continue
                    icrc = udp_end - ICRC_LEN
                    kind = ip_kind
                    limit = icrc
                    st = S_BTH
                elif st != S_FALLBACK:
                    st = S_DONE
            elif cur == S_ROCE1:
                ib = off
                if off + P.SZ_GRH > end:
                    bad = M_GRH
                    continue
                ib_end = off + P.SZ_GRH + _be16(buf, b + off + P.GRH_PAYLEN)
                if ib_end > end or ib_end - off - P.SZ_GRH < P.SZ_BTH + ICRC_LEN:
                    bad = M_GRH
                    continue
                bad = _grh_bth(lo, i, buf, b, off, nxt)
                if bad:
                    continue
                off += P.SZ_GRH
                icrc = ib_end - ICRC_LEN
                kind = CRC_ROCE1
                limit = icrc
                st = S_BTH
            elif cur == S_IB:
                if end - off == lsize[L_LINK]:
                    # Six bytes can only be a link packet (IBA 7.9.4), as in the decoder:
                    # the smallest data packet, LRH + VCRC, is ten.
                    st = S_LINK
                    continue
                # Native: the packet ends at PktLen*4 (ICRC last), then the VCRC.
                ib = off
                bad = _fit(lo, i, L_LRH, off, end, lsize, layer_mal)
                if bad:
                    continue
                ib_end = off + PKTLEN_UNIT * _u(buf, b + off, P.LRH_PKTLEN)
                after = int(nxt[N_LNH, _u(buf, b + off, P.LRH_LNH)])
                if after != S_BTH and after != S_GRH:
                    fb = 1  # raw packets: the decoder's
                    continue
                if ib_end - off < P.SZ_LRH + P.SZ_BTH + ICRC_LEN or ib_end > end:
                    bad = M_LRH
                    continue
                off += P.SZ_LRH
                kind = CRC_NATIVE
                if after == S_GRH:
                    bad = _fit(lo, i, L_GRH, off, ib_end - ICRC_LEN, lsize, layer_mal)
                    if bad == 0:
                        bad = _grh_bth(lo, i, buf, b, off, nxt)
                    if bad:
                        continue
                    off += P.SZ_GRH
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
            elif cur == S_BTH:
                # BTH, the opcode's extended headers, payload and pad.
                bad = _fit(lo, i, L_BTH, off, limit, lsize, layer_mal)
                if bad:
                    continue
                bth = off
                opc = buf[b + off + P.BTH_OPC]
                if valid[opc] == 0:
                    mal, fb = _first(mal, M_BTH), 1
                off += P.SZ_BTH
                for k in range(chain.shape[1]):
                    lay = chain[opc, k]
                    if lay < 0:
                        break
                    bad = _fit(lo, i, lay, off, limit, lsize, layer_mal)
                    if bad:
                        break
                    off += lsize[lay]
                if bad:
                    continue
                pad = _u(buf, b + bth, P.BTH_PAD)
                if payload[opc] == 0 and limit - off > 0:
                    mal, fb = _first(mal, M_BTH), 1
                if limit - off < pad:
                    mal, fb = _first(mal, M_BTH), 1
                pay_off = off
                pay_len = max(limit - pad, off) - off
                if op_mad[opc] and pay_len > 0:
                    fb = 1  # a payload decoder (MAD, IPoIB) may claim it: the decoder's
                    d = lo[L_DETH, i]
                    if d >= 0 and pay_len >= P.SZ_MAD:
                        qp = _be24(buf, b + bth + P.BTH_QP)
                        sq = _be24(buf, b + d + P.DETH_SRCQP)
                        if _in(qp, mad_qps) or _in(sq, mad_qps):
                            lo[L_MAD, i] = off
            elif cur == S_ERF:
                # Anything but a plain record whose rlen and wlen agree with the bytes
                # present goes to the decoder. Inside pcap a padded rlen beyond the bytes
                # present is fine; fewer bytes than header + wlen is not (unless the
                # record says it was truncated).
                bad = _fit(lo, i, L_ERF, 0, end, lsize, layer_mal)
                if bad:
                    continue
                # The header ends after its extension headers (the one chain parser).
                hend = erf_header_end(buf, b, b + end)
                if hend < 0:
                    bad = M_ERF  # the chain runs past the record
                    continue
                hlen = hend - b
                et = _u(buf, b, P.ERF_TYPE)
                rlen = _be16(buf, b + P.ERF_RLEN)
                skip = int(nxt[N_ERF_SKIP, et])
                want = _be16(buf, b + P.ERF_WLEN) + skip
                if rlen < hlen or rlen < end or (end < hlen + want
                                                 and _u(buf, b, P.ERF_TRUNC) == 0):
                    mal, fb = _first(mal, M_ERF), 1
                if rlen != end or end < hlen + want:
                    fb = 1
                end = hlen + min(want, end - hlen)
                off = hlen
                st = int(nxt[N_ERF, et])
                if st == S_DONE:
                    bad = M_ERF  # a type the decoder does not decode
                elif end - off < skip:
                    bad, st = M_ERF, S_DONE
                else:
                    off += skip
            elif cur == S_LINK:
                ib = off
                bad = _fit(lo, i, L_LINK, off, end, lsize, layer_mal)
                if bad:
                    continue
                lp = off
                if _u(buf, b + off, P.LINK_OP) > 1:
                    mal, fb = _first(mal, M_IBLINK), 1
        for code in (bad, pend):  # the stopping problem first, then a VCRC one
            if code:
                mal, fb = _first(mal, code), 1
        info[PAY_OFF, i] = pay_off
        info[PAY_LEN, i] = pay_len
        info[IB_OFF, i] = ib
        info[CRC_KIND, i] = kind
        info[ICRC_AT, i] = icrc
        info[VCRC_AT, i] = vcrc
        info[LP_AT, i] = lp
        info[MAL, i] = mal
        info[FB, i] = fb
