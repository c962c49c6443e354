"""pcap LINKTYPE values this project decodes.

Readers do not reject other link types: a file with an unknown link type is still a
well-formed capture, and the decoder reports the problem per packet. Callers that want
to refuse such files early (the CLI does) use ``check_linktype``.
"""

from __future__ import annotations

from ibwire.capture.frame import Frame
from ibwire.constants import LINKTYPE_NAMES
from ibwire.graph import GRAPH

# The link types the protocol graph leads somewhere, by name (in LINKTYPE_NAMES order).
KNOWN_LINKTYPES: dict[int, str] = {lt: name for lt, name in LINKTYPE_NAMES.items()
                                   if lt in GRAPH.linktypes}


class UnknownLinkTypeError(ValueError):
    """A record whose link type ibwire cannot decode."""

    def __init__(self, linktype: int, index: int | None = None, offset: int | None = None) -> None:
        self.linktype = linktype
        self.index = index
        self.offset = offset
        message = f"unknown link type {linktype}"
        if index is not None:
            message += f" at record {index}"
            if offset is not None:
                message += f" (byte offset {offset})"
        super().__init__(message)


def check_linktype(linktype: int | Frame) -> str:
    """The name of a known link type; raise UnknownLinkTypeError otherwise.

    Given a Frame, the error names its record and byte offset:
    ``unknown link type 248 at record 3 (byte offset 1234)``.
    """
    if isinstance(linktype, Frame):
        frame = linktype
        name = KNOWN_LINKTYPES.get(frame.linktype)
        if name is None:
            raise UnknownLinkTypeError(frame.linktype, frame.index, frame.offset)
        return name
    name = KNOWN_LINKTYPES.get(linktype)
    if name is None:
        raise UnknownLinkTypeError(linktype)
    return name
