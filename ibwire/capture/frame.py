"""The record every reader yields, the damage a reader skipped, and the one error a
broken capture file raises."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Frame:
    """One captured record, independent of the file format it came from."""

    index: int  # 0-based record number in the file
    ts_ns: int  # integer nanoseconds since the Unix epoch (exact to the file's resolution)
    linktype: int  # pcap LINKTYPE of this record (per interface for pcapng)
    data: bytes  # captured bytes (for LINKTYPE_ERF 197 this includes the ERF header)
    wire_len: int  # original length on the wire as the file records it
    interface: int = 0  # pcapng interface index (0 for other formats)
    offset: int = 0  # byte offset of the record header in the (decompressed) file

    @property
    def erf_cap(self) -> int:
        """The ERF capture interface (flags bits 0-1, tshark's `erf.flags.cap`) of a
        LINKTYPE_ERF record, -1 for other records. ibdump writes the port/direction
        there (flags 4 and 5: interface 0 and 1), a direction hint for analyses."""
        from ibwire.constants import LINKTYPE_ERF
        from ibwire.headers.carriers import ERF
        at = ERF.by_name["cap"].offset            # the flags byte; cap is its low 2 bits
        if self.linktype != LINKTYPE_ERF or len(self.data) <= at:
            return -1
        return self.data[at] & 0x03


@dataclass(frozen=True, slots=True)
class Skipped:
    """A damaged region a reader stepped over to resynchronise (see ``resync=``).

    ``index`` is the number of records delivered before it (so the index the next
    Frame gets), ``offset`` where the damaged record starts in the (decompressed)
    file, ``length`` how many bytes were skipped, ``reason`` what was wrong: the
    message a strict reader (``resync=False``) raises there.
    """

    index: int
    offset: int
    length: int
    reason: str


class CaptureError(Exception):
    """A structurally broken capture file.

    Readers raise it only after yielding every good record before the bad one, so
    ``index`` is both the number of records delivered and the index of the bad record.
    ``at_record=False`` is for problems with the file as a whole (empty, not a capture,
    bad file header), where naming a record would mislead.
    """

    def __init__(
        self,
        reason: str,
        *,
        source: str = "<capture>",
        index: int = 0,
        offset: int = 0,
        at_record: bool = True,
    ) -> None:
        self.reason = reason
        self.source = source
        self.index = index
        self.offset = offset
        if at_record:
            message = (
                f"{source}: record {index} at byte offset {offset}: {reason} "
                f"({index} records read)"
            )
        else:
            message = f"{source}: {reason}"
        super().__init__(message)
