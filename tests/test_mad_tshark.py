"""Differential test against tshark 4.0 on every MAD field it decodes in the real
captures, and one pinned test per place where Wireshark contradicts the
specification (each asserts what tshark says and what we say)."""

from __future__ import annotations

import pytest
from mad_helpers import (
    CM_CAPTURES,
    MAD_DIR,
    base_offset,
    compare,
    decoded,
    known,
    mad_pcaps,
    mad_start,
    need_shared,
    need_tshark,
    tshark_fields,
    tshark_types,
)

from ibwire.cli.tshark_text import format_field
from ibwire.fields import BYTES, DEC, DEC_HEX, HEX, IPV4, IPV6, STRING, UINT64
from ibwire.mad._layout import MAD_LAYOUTS


def disagreements(path) -> list[tuple]:
    need_tshark()
    tf = tshark_fields(path)
    out = []
    for num, _, pkt in decoded(path, only_mads=True):
        assert num in tf, f"tshark did not see a MAD in frame {num}"
        for name, pos, want, mine in compare(pkt, tf[num], base_offset(pkt), mad_start(pkt)):
            out.append((num, pkt["infiniband.mad.attributename"], name, pos - mad_start(pkt),
                        want, mine))
    return out


ALL = [p.name for p in mad_pcaps()] + [p.name for p in CM_CAPTURES]


@pytest.mark.parametrize("name", ALL or ["<missing>"])
def test_tshark_agrees_on_every_mad_field(name: str) -> None:
    need_shared()
    path = MAD_DIR / name if (MAD_DIR / name).exists() else next(
        p for p in CM_CAPTURES if p.name == name)
    unexpected = [d for d in disagreements(path) if not known(d[2], d[1])]
    assert not unexpected, unexpected[:10]


def test_tshark_field_count_is_substantial() -> None:
    """The comparison really covers tshark's MAD fields (not an empty loop)."""
    need_shared()
    need_tshark()
    path = MAD_DIR / "smpquery-portinfo.pcap"
    fields = tshark_fields(path)[2]
    pkt = decoded(path)[1][2]
    mad = [f for f in fields if f.pos >= mad_start(pkt) and not f.container]
    assert len(mad) > 80


_TYPES = {"uint8": "FT_UINT8", "uint16": "FT_UINT16", "uint24": "FT_UINT24",
          "uint32": "FT_UINT32", UINT64: "FT_UINT64", BYTES: "FT_BYTES", IPV6: "FT_IPv6",
          IPV4: "FT_IPv4", STRING: "FT_STRING", "bool": "FT_BOOLEAN"}
_BASES = {HEX: "BASE_HEX", DEC: "BASE_DEC", DEC_HEX: "BASE_DEC_HEX"}
# Wireshark registers these 16-bit trap 259 fields as FT_IPv6 (2 bytes): a bug.
TYPE_EXCEPTIONS = {"infiniband.trap.datavalid", "infiniband.trap.swlidaddr"}


def test_wireshark_names_have_wiresharks_types() -> None:
    """Every MAD field we publish under a Wireshark name has its registered type and
    display base (they decide how `-T fields` prints)."""
    need_tshark()
    types = tshark_types()
    checked = 0
    for layout in MAD_LAYOUTS.values():
        for f in layout.fields:
            if not f.wsname or f.wsname not in types or f.wsname in TYPE_EXCEPTIONS:
                continue
            ftype, base, _ = types[f.wsname]
            assert _TYPES[f.ftype] == ftype, (f.wsname, f.ftype, ftype)
            if ftype.startswith("FT_UINT"):
                assert _BASES[f.base] == base, (f.wsname, f.base, base)
            checked += 1
    assert checked > 250


def test_pinned_trap259_types() -> None:
    need_tshark()
    assert tshark_types()["infiniband.trap.datavalid"][0] == "FT_IPv6"
    assert tshark_types()["infiniband.trap.swlidaddr"][0] == "FT_IPv6"
    from ibwire.mad.general import TRAP_259
    assert TRAP_259.by_name["data_valid"].bits == 16
    assert TRAP_259.by_name["sw_lid_addr"].bits == 16


# -- pinned differences on the real captures ------------------------------------------
def _one(path_name: str, frame: int):
    need_shared()
    need_tshark()
    path = MAD_DIR / path_name if (MAD_DIR / path_name).exists() else next(
        p for p in CM_CAPTURES if p.name == path_name)
    pkt = next(p for n, _, p in decoded(path) if n == frame)
    fields = tshark_fields(path)[frame]
    return pkt, fields


def _ts(fields, name: str, rel: int | None = None, pkt=None) -> list[str]:
    from mad_helpers import tshark_text
    return [tshark_text(f) for f in fields if f.name == name and
            (rel is None or f.pos - mad_start(pkt) == rel)]


def test_pinned_dr_smp_direction_bit() -> None:
    """Wireshark adds the D bit as an FT_UINT64 with mask 0x8000 over ONE byte, so
    it always reads 0; responses have D = 1 (status 0x8000)."""
    pkt, fields = _one("ibnetdiscover.pcap", 2)
    assert pkt["infiniband.mad.method"] == 0x81
    assert _ts(fields, "infiniband.smpdirected.d") == ["0x0000000000000000"]
    assert _ts(fields, "infiniband.smpdirected.smpstatus") == ["0x8000"]
    assert format_field("infiniband.smpdirected.d", pkt["infiniband.smpdirected.d"]) == \
        "0x0000000000000001"
    assert pkt["infiniband.smpdirected.status"] == 0


def test_pinned_portinforecord_options() -> None:
    pkt, fields = _one("saquery-pir.pcap", 2)
    assert _ts(fields, "infiniband.reserved", 59, pkt) == ["00"]
    assert pkt["infiniband.portinforecord.options"] == 0
    assert "infiniband.portinforecord.options" not in tshark_types()


def test_pinned_pathrecord_service_id() -> None:
    pkt, fields = _one("saquery-pr.pcap", 2)
    assert _ts(fields, "infiniband.reserved", 56, pkt) == ["0000000000000000"]
    assert pkt["infiniband.pathrecord.serviceid"] == 0
    assert "infiniband.pathrecord.serviceid" not in tshark_types()


def test_pinned_portcounters_newer_fields() -> None:
    """Bytes 18 and 20-21 are CounterSelect2 and QP1Dropped (libibmad, perfquery
    prints them); Wireshark shows them reserved and stops before PortXmitWait."""
    pkt, fields = _one("perfquery.pcap", 4)
    assert _ts(fields, "infiniband.reserved", 82, pkt) == ["00"]
    assert _ts(fields, "infiniband.reserved", 84, pkt) == ["0000"]
    assert _ts(fields, "infiniband.portcounters.portxmitwait") == []
    assert pkt["infiniband.portcounters.counterselect2"] == 0
    assert pkt["infiniband.portcounters.qp1dropped"] == 0
    assert pkt["infiniband.portcounters.portxmitwait"] == 0


def test_pinned_portcounters_extended_counterselect2() -> None:
    pkt, fields = _one("perfquery-ext.pcap", 4)
    assert _ts(fields, "infiniband.reserved", 68, pkt) == ["00000000"]
    assert pkt["infiniband.portcounters_ext.counterselect2"] == 0
    assert _ts(fields, "infiniband.portcounters_ext.portxmitwait") == []
    assert pkt["infiniband.portcounters_ext.portxmitwait"] == 0      # bytes 168-175


def test_pinned_cm_req_flow_label_word() -> None:
    """REQ bytes 88-91 are FlowLabel(20) / reserved(6) / PacketRate(6). Wireshark
    reads the flow label from 3 bytes and rate/reserved from 1 byte of that word."""
    pkt, fields = _one("roce-v2-rxe-cm-write-read.pcap", 1)
    word = int.from_bytes(pkt.data[pkt.layer("cm_req").offset + 88:][:4], "big")
    assert word == 0x3A126000
    assert _ts(fields, "infiniband.cm.req.prim_flowlabel") == ["0x000003a1"]
    assert _ts(fields, "infiniband.cm.req.prim_pktrate") == ["0x0000003a"]
    assert pkt["infiniband.cm.req.prim_flowlabel"] == word >> 12 == 0x3A126
    assert pkt["infiniband.cm.req.prim_reserved0"] == 0
    assert pkt["infiniband.cm.req.prim_pktrate"] == word & 0x3F == 0


def test_pinned_icrc_hidden_after_some_mads() -> None:
    """Wireshark shows the CRCs only when its MAD parser ends right before them: not
    after PMA MADs (and SA GetTable MADs); ours are always there and valid."""
    pkt, fields = _one("perfquery.pcap", 4)
    assert _ts(fields, "infiniband.invariant.crc") == []
    assert _ts(fields, "infiniband.variant.crc") == []
    assert pkt["infiniband.invariant.crc"] == int.from_bytes(pkt.icrc, "big")
    assert pkt["infiniband.variant.crc"] == int.from_bytes(pkt.vcrc, "big")


def test_pinned_mellanox_ext_port_info_is_opaque() -> None:
    """0xFF90 (MlnxExtPortInfo) is vendor-specific: Wireshark shows an unknown
    attribute, we keep its data as bytes with the SMP header decoded."""
    pkt, fields = _one("opensm-sweep.pcap", 8)
    assert pkt["infiniband.mad.attributeid"] == 0xFF90
    assert pkt["infiniband.mad.attributename"] == "MlnxExtPortInfo"
    assert len(pkt["infiniband.mad.rawdata"]) == 64
    assert _ts(fields, "infiniband.smplid.smpdata") and not [
        f for f in fields if f.name.startswith("infiniband.mlnx")]
    assert pkt["infiniband.smpdirected.hopcount"] == 0
