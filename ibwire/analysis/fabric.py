"""Build the fabric view from capture files: `build_fabric(paths) -> Fabric`.

Order matters only for identities: SMP NodeInfo responses (by directed route and
by LID) name the nodes first, then every SMP attribute, SA record, PMA counter
read and trap is attached to the node or port it belongs to, then links are drawn
from the directed routes and LinkRecords. See docs/fabric.md for the rules.
"""

from __future__ import annotations

from collections.abc import Iterable

from ibwire.analysis import fabric_gsi, fabric_perf, fabric_smp
from ibwire.analysis.fabric_mads import Exchange, Mad, assign_origins, pair, read_mads
from ibwire.analysis.fabric_model import Fabric


def fabric_from_mads(mads: Iterable[Mad]) -> Fabric:
    """The view of MADs from one or more captures, taken in time order (so that
    several captures merge by when things happened; later facts win)."""
    mads = sorted(mads, key=lambda m: m.ts)
    exchanges: list[Exchange] = pair(mads)
    assign_origins(exchanges)
    fab = Fabric(mads=len(mads))
    view = fabric_smp.SmpView(fab)
    view.identify(exchanges)
    view.apply(exchanges)
    fabric_gsi.apply_sa(fab, exchanges)
    fabric_smp.add_links(fab, view.links() + fabric_gsi.link_records(fab, exchanges))
    _stale(fab)
    fabric_perf.apply_perf(fab, exchanges)
    fabric_gsi.apply_traps(fab, exchanges)
    fabric_smp.missing_responses(fab, exchanges)
    _unlinked(fab)
    return fab


def build_fabric(paths: Iterable[str]) -> Fabric:
    """The fabric view of one or more captures (each file's directed routes start at
    the port it was captured on). A file that cannot be read to its end gives what
    was read before the problem; the problem is in `fab.errors`."""
    rejected: list[tuple[int, int, str]] = []
    errors: list[str] = []
    return fabric_of(read_mads(list(paths), rejected, errors), rejected, errors)


def fabric_of(mads: Iterable[Mad], rejected: list[tuple[int, int, str]],
              errors: list[str]) -> Fabric:
    """The view of MADs read elsewhere (`fabric_mads.checked_mad` of every packet, in
    file order): `rejected` and `errors` fill as `read_mads` fills them (`build_fabric`;
    also the report's bulk read and ibwire.scale's gathered MADs)."""
    fab = fabric_from_mads(mads)
    fab.errors = errors
    if rejected:
        frames = ", ".join(str(frame) for _, frame, _ in rejected[:10])
        more = " ..." if len(rejected) > 10 else ""
        fab.missing.append(f"{len(rejected)} MAD(s) with a bad ICRC/VCRC ignored "
                           f"(frames {frames}{more})")
    return fab


def _unlinked(fab: Fabric) -> None:
    """Active external ports whose peer the capture does not show."""
    linked = {end for link in fab.links for end in (link.a, link.b)}
    n = 0
    for node in fab.nodes.values():
        for num, port in node.ports.items():
            if num == 0 and node.is_switch:
                continue
            if port.state is not None and not port.down and \
                    not any(e.guid == node.guid and e.port == num for e in linked):
                n += 1
    if n:
        fab.missing.append(f"{n} port(s) are up but their peer is not in the capture")


def _stale(fab: Fabric) -> None:
    """A link whose end a later PortInfo shows Down is history, not the fabric (times,
    not frame numbers, so that several captures compare)."""
    keep = []
    for link in fab.links:
        gone = None
        for end in (link.a, link.b):
            node = fab.nodes.get(end.guid)
            port = node.ports.get(end.port) if node is not None else None
            if port is not None and port.down and port.ts is not None and port.ts > link.ts:
                gone = port
        if gone is None:
            keep.append(link)
        else:
            fab.missing.append(f"link 0x{link.a.guid:016x}/{link.a.port} - "
                               f"0x{link.b.guid:016x}/{link.b.port} seen until frame "
                               f"{max(link.frames)} went Down (frame {gone.frame}); not drawn")
    fab.links = keep
