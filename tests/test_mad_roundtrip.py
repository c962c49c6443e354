"""Every MAD of the real captures decodes cleanly and re-encodes byte for byte:
the whole record through `ibwire.encode(pkt)` (which calls the MAD payload
encoder) and the MAD alone through `encode_mad`."""

from __future__ import annotations

import pytest
from mad_helpers import CM_CAPTURES, MAD_DIR, decoded, mad_pcaps, need_shared

import ibwire
from ibwire.crc import CrcStatus
from ibwire.mad import decode_mad, encode_mad, mad_layers
from ibwire.mad.dispatch import encode_layers

CAPTURES = [p.name for p in mad_pcaps()] or ["<missing>"]


def _path(name: str):
    need_shared()
    return MAD_DIR / name


@pytest.mark.parametrize("name", CAPTURES)
def test_every_mad_capture_packet_round_trips(name: str) -> None:
    path = _path(name)
    records = decoded(path)
    assert records, f"{name} has no records"
    for num, data, pkt in records:
        assert pkt.layer("mad") is not None, f"{name} frame {num}: no MAD found"
        assert not pkt.problems, f"{name} frame {num}: {pkt.problems}"
        assert pkt.icrc_status == CrcStatus.GOOD and pkt.vcrc_status == CrcStatus.GOOD
        assert ibwire.encode(pkt) == data, f"{name} frame {num}: whole record differs"
        mad = encode_mad(pkt)
        assert len(mad) == 256 and mad == pkt.payload, f"{name} frame {num}: MAD differs"
        # The MAD alone decodes to the same layers and values.
        alone = decode_mad(mad)
        assert [(lay.name, lay.values) for lay in alone.layers] == \
            [(lay.name, lay.values) for lay in mad_layers(pkt)]


@pytest.mark.parametrize("index", range(len(CM_CAPTURES)))
def test_cm_mads_over_rocev2_round_trip(index: int) -> None:
    need_shared()
    path = CM_CAPTURES[index]
    cms = decoded(path, only_mads=True)
    assert len(cms) == (5 if index == 0 else 12)
    names = set()
    for num, data, pkt in cms:
        assert pkt["infiniband.mad.mgmtclass"] == 0x07
        assert pkt["infiniband.bth.destqp"] == 1 and pkt.layer("udp") is not None
        assert not pkt.problems, (num, pkt.problems)
        assert ibwire.encode(pkt) == data
        assert encode_mad(pkt) == pkt.payload
        names.add(pkt["infiniband.mad.attributename"])
    assert {"ConnectRequest", "ConnectReply", "ReadyToUse", "DisconnectRequest",
            "DisconnectReply"} <= names


def test_rocev2_cm_req_values() -> None:
    """The public rxe capture's REQ: IP CM service ID and private data (Annex A11)."""
    need_shared()
    req = decoded(CM_CAPTURES[0], only_mads=True)[0][2]
    assert req["infiniband.cm.req"] == 0xAC6608B9
    assert req["infiniband.cm.req.serviceid"] == 0x0000000001061D2F
    assert req["infiniband.cm.req.serviceid.protocol"] == 6          # TCP port space
    assert req["infiniband.cm.req.serviceid.dport"] == 0x1D2F        # 7471
    assert req["infiniband.cm.req.localqpn"] == 0x17
    assert req["infiniband.cm.req.startpsn"] == 0x89BB0E
    assert req["infiniband.cm.req.pppmtu"] == 3                      # 1024
    assert req["infiniband.cm.req.prim_localgid_ipv4"] == bytes([192, 168, 2, 25])
    assert req["infiniband.cm.req.prim_flowlabel"] == 0x3A126
    assert req["infiniband.cm.req.prim_hoplim"] == 64
    assert req["infiniband.cm.req.prim_localacktout"] == 19
    assert req["infiniband.cm.req.ip_cm.ipv"] == 4
    assert req["infiniband.cm.req.ip_cm.sport"] == 0xA129
    assert req["infiniband.cm.req.ip_cm.sip4"] == bytes([192, 168, 2, 25])
    assert req["infiniband.cm.req.ip_cm.dip4"] == bytes([192, 168, 2, 24])


def test_edited_value_is_re_encoded() -> None:
    """Encoding uses the layer values, not the captured bytes."""
    need_shared()
    num, data, pkt = decoded(MAD_DIR / "saquery-pr.pcap")[1]
    rec = pkt.layer("pathrecord")
    rec.values["dlid"] = 0x1234
    again = ibwire.decode(ibwire.encode(pkt, fill=True), "erf")
    assert again["infiniband.pathrecord.dlid"] == 0x1234
    assert again.icrc_status == CrcStatus.GOOD and again.vcrc_status == CrcStatus.GOOD
    assert encode_layers(mad_layers(pkt)) != encode_mad(decoded(MAD_DIR / "saquery-pr.pcap")[1][2])
