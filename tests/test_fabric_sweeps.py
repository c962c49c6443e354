"""Directed-route reconstruction on generated sweeps of other topologies (ports
down, nodes reached by several routes, parallel links), and partial captures:
what can be known is known, what is missing is said, and no link is ever wrong."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mad_helpers import MAD_DIR, need_shared

import ibwire
from ibwire.analysis.fabric import build_fabric
from ibwire.analysis.fabric_json import fabric_dict
from ibwire.gen.sweep import CA, SWITCH, Topology, fat_tree, ring, sweep

IB = 247    # LINKTYPE_INFINIBAND


def _links(fab) -> set[frozenset]:
    return {frozenset({(lk.a.guid, lk.a.port), (lk.b.guid, lk.b.port)}) for lk in fab.links}


def _origin(topo: Topology) -> int:
    return next(g for g, n in topo.nodes.items() if n.kind == CA)


def _build(tmp_path: Path, packets: list, name: str = "s.pcap"):
    path = tmp_path / name
    ibwire.write(path, packets, linktype=IB)
    return build_fabric([str(path)])


TOPOLOGIES = {"fat_tree": fat_tree, "fat_tree_wide": lambda: fat_tree(3, 4, 3, 10),
              "ring": ring, "ring_big": lambda: ring(6, 4, seed=3)}


@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
@pytest.mark.parametrize("local", [True, False], ids=["with_hop0", "wire_only"])
def test_sweep_reconstructs_topology(tmp_path: Path, name: str, local: bool) -> None:
    topo = TOPOLOGIES[name]()
    origin = _origin(topo)
    fab = _build(tmp_path, sweep(topo, origin, 1, include_local=local))
    assert set(fab.nodes) == set(topo.nodes)
    assert _links(fab) == topo.link_set()
    assert not fab.missing
    for guid, t in topo.nodes.items():
        node = fab.nodes[guid]
        if guid == origin and not local:
            # Its own NodeDescription (hop count 0) never reaches the wire.
            assert node.description is None
            continue
        assert node.description == t.desc and node.num_ports == t.nports
        for port, lid in t.lids.items():
            assert fab.lids[lid].guid == guid
            assert fab.lids[lid].port == port
        if t.kind == SWITCH:
            for p in range(1, t.nports + 1):
                up = topo.active(guid, p)
                assert node.ports[p].down == (not up)
                if (guid, p) in topo.down:
                    assert node.ports[p].phys_state == 3      # Disabled
    d = fabric_dict(fab)
    assert {(lk["width"], lk["speed"]) for lk in d["links"]} == {("4X", "25.78125 Gbps")}


def test_ring_has_nodes_reached_by_several_routes(tmp_path: Path) -> None:
    topo = ring()
    fab = _build(tmp_path, sweep(topo, _origin(topo), 1))
    several = [n for n in fab.nodes.values() if len(n.routes) > 1]
    assert several            # switches and dual-ported CAs answer on more than one route
    sw = [n for n in topo.nodes.values() if n.kind == SWITCH]
    # Parallel cables between the first two switches are two links.
    between = [lk for lk in _links(fab) if {g for g, _ in lk} == {sw[0].guid, sw[1].guid}]
    assert len(between) == 2


def _drop(packets: list, rng: random.Random, p: float) -> list:
    return [pk for pk in packets if rng.random() >= p]


@pytest.mark.parametrize("seed", range(6))
def test_dropped_packets_never_give_a_wrong_link(tmp_path: Path, seed: int) -> None:
    topo = ring(5, 3, seed=seed) if seed % 2 else fat_tree()
    packets = sweep(topo, _origin(topo), 1, include_local=bool(seed % 3))
    rng = random.Random(seed)
    kept = _drop(packets, rng, 0.3)
    fab = _build(tmp_path, kept)
    assert _links(fab) <= topo.link_set()
    assert set(fab.nodes) <= set(topo.nodes)
    assert fab.missing                      # it says what it could not see
    assert any("without a response" in m or "without their request" in m
               for m in fab.missing)


def test_requests_only_give_no_topology(tmp_path: Path) -> None:
    topo = fat_tree()
    packets = sweep(topo, _origin(topo), 1)
    requests = [pk for pk in packets if not ibwire.decode(pk, IB)["infiniband.mad.method"] & 0x80]
    fab = _build(tmp_path, requests)
    assert not fab.nodes and not fab.links
    assert any("NodeInfo request(s) without a response" in m for m in fab.missing)


def test_responses_only_are_enough(tmp_path: Path) -> None:
    """A response carries its route: the walk is complete without the requests."""
    topo = ring()
    packets = sweep(topo, _origin(topo), 1)
    responses = [pk for pk in packets if ibwire.decode(pk, IB)["infiniband.mad.method"] & 0x80]
    fab = _build(tmp_path, responses)
    assert _links(fab) == topo.link_set()


def test_changed_fabric_conflict_draws_no_link(tmp_path: Path) -> None:
    """Two sweeps in one capture, a host moved to another leaf port between them:
    the routes that now reach another node are reported and draw no link."""
    before = fat_tree()
    after = fat_tree()
    hosts = [n for n in after.nodes.values() if n.kind == CA]
    moved = hosts[-1]
    leaf_end = after.peer.pop((moved.guid, 1))
    after.peer.pop(leaf_end)
    other = hosts[1]              # hosts[0] sweeps
    leaf_other = after.peer.pop((other.guid, 1))
    after.peer.pop(leaf_other)
    after.cable(moved, 1, after.nodes[leaf_other[0]], leaf_other[1])
    origin = _origin(before)
    fab = _build(tmp_path, sweep(before, origin, 1) + sweep(after, origin, 1))
    links = _links(fab)
    assert links <= before.link_set() | after.link_set()
    assert any("different nodes" in m for m in fab.missing)
    assert not any((moved.guid, 1) in lk for lk in links)


def test_real_capture_with_dropped_packets(tmp_path: Path) -> None:
    need_shared()
    full = build_fabric([str(MAD_DIR / "ibnetdiscover.pcap")])
    truth = _links(full)
    pkts = list(ibwire.read(MAD_DIR / "ibnetdiscover.pcap"))
    for seed in range(3):
        kept = _drop(pkts, random.Random(seed), 0.25)
        path = tmp_path / f"part{seed}.pcap"
        ibwire.write(path, kept)
        fab = build_fabric([str(path)])
        assert _links(fab) <= truth
        assert len(_links(fab)) < len(truth)
        assert fab.missing


@pytest.mark.parametrize("name", ["fat_tree", "ring"])
def test_tables_partitions_qos_and_routes(tmp_path: Path, name: str) -> None:
    from ibwire.analysis.fabric_attrs import route
    from ibwire.gen import sweep_tables as tables
    topo = TOPOLOGIES[name]()
    fab = _build(tmp_path, sweep(topo, _origin(topo), 1, qos=True))
    assert _links(fab) == topo.link_set() and not fab.missing
    checked = 0
    for guid, t in topo.nodes.items():
        node = fab.nodes[guid]
        if t.kind == SWITCH:
            active = [p for p in range(1, t.nports + 1) if topo.active(guid, p)]
            for p in active:
                port = node.ports[p]
                assert [port.pkeys[0], port.pkeys[1]] == tables.pkeys(p)
                assert port.sl2vl == {active[0]: {sl: tables.sl2vl(active[0], p, sl)
                                                  for sl in range(16)}}
                assert port.vlarb["low"][:32] == [tables.vlarb(1, i) for i in range(32)]
                assert port.vlarb["high"][:32] == [tables.vlarb(3, i) for i in range(32)]
                checked += 1
            want = topo.lft(guid)
            assert {lid: port for lid, port in node.lft.items() if port != tables.UNROUTED} == want
            assert node.mft[tables.MCAST_BASE] == tables.mft_mask(topo, t)
        else:
            entered = next(p for p in node.ports if node.ports[p].pkeys)
            assert node.ports[entered].pkeys[1] == tables.pkeys(entered)[1]
    assert checked
    # The LFTs imply a route between every pair of CA LIDs, ending at the destination.
    ca_lids = [lid for t in topo.nodes.values() if t.kind == CA for lid in t.lids.values()
               if lid in fab.lids]
    for src in ca_lids:
        for dst in ca_lids:
            if src == dst:
                continue
            hops = route(fab, src, dst)
            assert hops is not None, (src, dst)
            last = hops[-1]
            assert fab.peer(last.guid, last.port) == fab.lids[dst]


@pytest.mark.parametrize("name", ["fat_tree", "ring"])
def test_lid_routed_queries_and_sa_link_records(tmp_path: Path, name: str) -> None:
    """No directed route at all: LIDs name the nodes, the SA's LinkRecords the links."""
    from ibwire.gen.mgmt_events import sa_view
    topo = TOPOLOGIES[name]()
    fab = _build(tmp_path, sa_view(topo, sm_lid=1))
    assert set(fab.nodes) == set(topo.nodes)
    assert _links(fab) == topo.link_set()
    assert {n.description for n in fab.nodes.values()} == {t.desc for t in topo.nodes.values()}
    # Dropping the NodeInfo of one LID drops exactly the links of that port.
    packets = sa_view(topo, sm_lid=1)
    victim = next(t for t in topo.nodes.values() if t.kind == CA)
    lid = victim.lids[1]
    kept = [pk for pk in packets
            if not (ibwire.decode(pk, IB)["infiniband.lrh.slid"] == lid and
                    ibwire.decode(pk, IB)["infiniband.mad.attributeid"] == 0x0011)]
    part = _build(tmp_path, kept, "part.pcap")
    assert _links(part) == {lk for lk in topo.link_set() if (victim.guid, 1) not in lk}
    assert victim.guid not in part.nodes
    assert any("NodeDescription response(s) from a node the capture does not identify" in m
               for m in part.missing)
    assert any("2 SA LinkRecord(s) name LIDs no captured node owns" in m for m in part.missing)


def test_corrupted_and_truncated_mads(tmp_path: Path) -> None:
    """Bad input never crashes: flipped bytes (bad CRCs) are not evidence, truncated
    MADs give what they hold; no link is wrong."""
    topo = ring()
    packets = sweep(topo, _origin(topo), 1)
    rng = random.Random(7)
    mutated = []
    for pk in packets:
        roll = rng.random()
        if roll < 0.2:
            pos = rng.randrange(len(pk))
            pk = pk[:pos] + bytes([pk[pos] ^ 0x5A]) + pk[pos + 1:]
        elif roll < 0.3:
            pk = pk[:rng.randrange(1, len(pk))]
        mutated.append(pk)
    fab = _build(tmp_path, mutated)
    assert _links(fab) <= topo.link_set()
    assert set(fab.nodes) <= set(topo.nodes)
    assert any("bad ICRC/VCRC ignored" in m for m in fab.missing)


_ATTRS = [0x0002, 0x0010, 0x0011, 0x0012, 0x0015, 0x0016, 0x0017, 0x0018, 0x0019, 0x001B,
          0x0020, 0x001D]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from([0x01, 0x81, 0x03, 0x04]),
                          st.sampled_from([0x01, 0x02, 0x05, 0x06, 0x07, 0x81, 0x92]),
                          st.sampled_from(_ATTRS), st.binary(min_size=232, max_size=232),
                          st.integers(0, 3), st.binary(min_size=4, max_size=4)),
                min_size=1, max_size=12))
def test_arbitrary_mad_contents_never_crash(mads) -> None:
    """Well-formed packets (good CRCs) carrying arbitrary MAD contents: the view is
    built and printed in every format without an exception."""
    import json

    from ibwire.analysis import fabric_text
    from ibwire.analysis.fabric import fabric_from_mads
    from ibwire.analysis.fabric_mads import mad_of
    from ibwire.mad.build import mad_packet
    out = []
    for i, (cls, method, attr, body, tid, status) in enumerate(mads):
        head = bytes([1, cls, 1, method]) + status + tid.to_bytes(8, "big") + \
            attr.to_bytes(2, "big") + bytes(6)
        pkt = ibwire.decode(mad_packet(head + body, slid=1, dlid=2), IB)
        mad = mad_of(pkt, i + 1, 0)
        if mad is not None:
            out.append(mad)
    fab = fabric_from_mads(out)
    json.dumps(fabric_dict(fab))
    fabric_text.topology(fab)
    fabric_text.links(fab)
    fabric_text.counters(fab)


def _two_requesters(topo: Topology, observe: tuple[int, int]) -> list:
    cas = [g for g, n in topo.nodes.items() if n.kind == CA]
    return sweep(topo, cas[0], 1, observe=observe) + sweep(topo, cas[-1], 1, observe=observe)


@pytest.mark.parametrize("name", ["fat_tree", "ring", "ring_big"])
def test_capture_mid_fabric_with_two_requesters(tmp_path: Path, name: str) -> None:
    """On a switch-to-switch cable two SMs' sweeps pass with HopPointer j (the j-th
    link of their routes): routes anchored at the cable agree whoever sent them."""
    topo = TOPOLOGIES[name]()
    isl = next(end for end, peer in sorted(topo.peer.items())
               if topo.nodes[end[0]].kind == SWITCH and topo.nodes[peer[0]].kind == SWITCH
               and topo.active(*end))
    packets = _two_requesters(topo, isl)
    assert packets
    fab = _build(tmp_path, packets)
    links = _links(fab)
    assert links and links <= topo.link_set()


def test_capture_at_a_host_seeing_a_remote_sm(tmp_path: Path) -> None:
    """A host's own sweep and a remote SM's SMPs arriving at the host, one capture."""
    topo = fat_tree()
    cas = [g for g, n in topo.nodes.items() if n.kind == CA]
    here = cas[-1]
    packets = sweep(topo, here, 1) + sweep(topo, cas[0], 1, observe=(here, 1))
    fab = _build(tmp_path, packets)
    assert _links(fab) == topo.link_set()


@pytest.mark.parametrize("order", ["in_time_order", "reversed"])
def test_two_captures_merge_by_time(tmp_path: Path, order: str) -> None:
    """A sweep, then (a second capture, later) one after a cable was pulled: the
    merged view has the later fabric whatever order the files are given in."""
    before, after = fat_tree(), fat_tree()
    host = next(n for n in after.nodes.values() if n.kind == CA and n.desc.endswith("2-2 HCA-1"))
    leaf_end = after.peer.pop((host.guid, 1))
    after.peer.pop(leaf_end)
    origin = _origin(before)
    first, second = tmp_path / "before.pcap", tmp_path / "after.pcap"
    ibwire.write(first, sweep(before, origin), linktype=IB, start_ns=10**9)
    ibwire.write(second, sweep(after, origin), linktype=IB, start_ns=2 * 10**9)
    files = [first, second] if order == "in_time_order" else [second, first]
    fab = build_fabric([str(f) for f in files])
    assert _links(fab) == after.link_set()
    assert fab.nodes[leaf_end[0]].ports[leaf_end[1]].down
    assert any("went Down" in m for m in fab.missing)


def test_resolver_names_route_targets_mid_fabric(tmp_path: Path) -> None:
    """Every DR SMP seen on a switch-to-switch cable resolves to the node its route
    reaches (checked against the NodeInfo responses themselves)."""
    from ibwire.analysis.fabric_fields import frame_values
    topo = ring(6, 4, seed=3)
    isl = next(end for end, peer in sorted(topo.peer.items())
               if topo.nodes[end[0]].kind == SWITCH and topo.nodes[peer[0]].kind == SWITCH
               and topo.active(*end))
    path = tmp_path / "isl.pcap"
    ibwire.write(path, _two_requesters(topo, isl), linktype=IB)
    vals = frame_values(str(path))
    checked = 0
    for n, pkt in enumerate(ibwire.read(path), start=1):
        guid = pkt.get("infiniband.nodeinfo.nodeguid")
        if guid is not None and pkt["infiniband.mad.method"] & 0x80:
            assert vals[n]["ibwire.dr.node_guid"] == guid
            checked += 1
    assert checked > 5


def test_unfilled_return_path_is_reported_not_used(tmp_path: Path) -> None:
    """Some SMP sources leave ReturnPath as a copy of InitialPath: the links come
    from NodeInfo.LocalPortNum all the same, and the mismatch is reported."""
    from ibwire.encode import encode
    topo = fat_tree()
    packets = []
    for pk in sweep(topo, _origin(topo), 1):
        pkt = ibwire.decode(pk, IB)
        paths = pkt.layer("smp_dr_paths")
        if pkt["infiniband.mad.method"] & 0x80 and paths is not None:
            paths.values["return_path"] = paths.values["initial_path"]
            pk = encode(pkt, fill=True)
        packets.append(pk)
    fab = _build(tmp_path, packets)
    assert _links(fab) == topo.link_set()
    assert any("ReturnPath does not end in NodeInfo.LocalPortNum" in m for m in fab.missing)
