"""Protocol numbers, written once: link types, ERF types, EtherTypes, IP protocols,
UDP ports, InfiniBand next-header codes, well-known QPs and trailer sizes.

Which value leads to which header is the protocol graph's business
(`ibwire.graph`); this module only names the numbers. Everything else imports
them from here.
"""

from __future__ import annotations

# pcap / pcapng link types (tcpdump.org LINKTYPE_* registry).
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LINUX_SLL = 113
LINKTYPE_ERF = 197
LINKTYPE_IPOIB = 242
LINKTYPE_INFINIBAND = 247
LINKTYPE_LINUX_SLL2 = 276
LINKTYPE_NAMES: dict[int, str] = {
    LINKTYPE_ETHERNET: "Ethernet", LINKTYPE_ERF: "ERF", LINKTYPE_INFINIBAND: "InfiniBand",
    LINKTYPE_IPOIB: "IPoIB", LINKTYPE_RAW: "Raw IP", LINKTYPE_LINUX_SLL: "Linux cooked",
    LINKTYPE_LINUX_SLL2: "Linux cooked v2",
}

# ERF record types (Endace ERF spec; ibdump writes 21 and 25).
ERF_TYPE_ETH = 2
ERF_TYPE_COLOR_ETH = 11
ERF_TYPE_DSM_COLOR_ETH = 16
ERF_TYPE_COLOR_HASH_ETH = 20
ERF_TYPE_IB = 21
ERF_TYPE_IB_LINK = 25
ERF_TYPE_META = 27
ERF_TYPE_PAD = 48
ERF_TYPE_NAMES: dict[int, str] = {ERF_TYPE_ETH: "ETH", ERF_TYPE_IB: "INFINIBAND",
                                  ERF_TYPE_IB_LINK: "INFINIBAND_LINK", ERF_TYPE_META: "META"}
ERF_ETH_PAD = 2          # offset/pad bytes between an ERF Ethernet header and the frame
# ERF Ethernet types: a 2-byte offset/pad field (not counted by wlen) precedes the frame.
ERF_TYPES_ETH = (ERF_TYPE_ETH, ERF_TYPE_COLOR_ETH, ERF_TYPE_DSM_COLOR_ETH,
                 ERF_TYPE_COLOR_HASH_ETH)

# EtherTypes.
ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_ARP = 0x0806
ETHERTYPE_RARP = 0x8035
ETHERTYPE_LLDP = 0x88CC
ETHERTYPE_PTP = 0x88F7
ETHERTYPE_IPV6 = 0x86DD
ETHERTYPE_MAC_CONTROL = 0x8808
ETHERTYPE_ROCE = 0x8915                      # RoCEv1 (IBA Annex A16)
ETHERTYPE_VLANS = (0x8100, 0x88A8, 0x9100)   # 802.1Q, 802.1ad, legacy QinQ

# IP protocol numbers (IPv4 Protocol, IPv6 Next Header).
IP_PROTO_ICMP = 1
IP_PROTO_IGMP = 2
IP_PROTO_TCP = 6
IP_PROTO_UDP = 17
IP_PROTO_GRE = 47
IP_PROTO_ESP = 50
IP_PROTO_ICMPV6 = 58
IP_PROTO_SCTP = 132

# ARP operations (RFC 826).
ARP_REQUEST, ARP_REPLY = 1, 2

# ECN codepoints (RFC 3168), the low two bits of the IPv4 TOS / IPv6 Traffic Class.
ECN_NOT_ECT, ECN_ECT1, ECN_ECT0, ECN_CE = 0, 1, 2, 3

# UDP ports.
ROCEV2_PORT = 4791                           # IANA, RoCEv2 (IBA Annex A17)

# InfiniBand next-header codes.
LNH_RAW, LNH_IP_NON_IBA, LNH_IBA_LOCAL, LNH_IBA_GLOBAL = 0, 1, 2, 3
NXTHDR_IBA = 0x1B                            # GRH NxtHdr: IBA transport follows

# Well-known QPs (IBA Vol. 1 §3.5.2): subnet management and general services.
QP_SMI, QP_GSI = 0, 1
MAD_QPS = (QP_SMI, QP_GSI)
QKEY_GSI = 0x80010000                        # the GSI's well-known Q_Key (IBA §13.5.3)

# MAD management classes with a class layout of their own (IBA Vol. 1 §13.4.4).
MGMT_CLASS_SMP_LID, MGMT_CLASS_SMP_DR, MGMT_CLASS_SA = 0x01, 0x81, 0x03
MGMT_CLASS_PERF, MGMT_CLASS_BM, MGMT_CLASS_DM, MGMT_CLASS_CM = 0x04, 0x05, 0x06, 0x07
MGMT_CLASS_CC = 0x21                         # congestion control (Annex A10)
MGMT_CLASSES_VENDOR_OUI = range(0x30, 0x50)  # vendor range 2: RMPP + OUI header

# MAC Control opcodes (802.3 Annex 31B PAUSE, 802.1Qbb PFC).
MACC_OP_PAUSE, MACC_OP_PFC = 0x0001, 0x0101

# Trailers and units.
ICRC_LEN = 4
VCRC_LEN = 2
PKTLEN_UNIT = 4                              # LRH PktLen counts 4-byte words
IHL_UNIT = 4                                 # IPv4 IHL counts 4-byte words
MAD_SIZE = 256
