"""The RC analysis's per-packet fields (`infiniband.analysis.*`), declared apart
from the analysis so that the field registry and `ibwire dump` can name them
without loading the RC engine (Numba). The provider (`rc_provider`) registers them."""

from __future__ import annotations

PACKET_FIELDS: tuple[tuple[str, str, str], ...] = (
    # (name, ftype, description)
    ("infiniband.analysis.retransmission", "bool", "Request PSN sent before (go-back-N resend)"),
    ("infiniband.analysis.retransmission_of", "uint32", "Frame of the first copy resent"),
    ("infiniband.analysis.go_back_n", "uint32", "Go-back-N episode this resend belongs to"),
    ("infiniband.analysis.episode_start", "bool", "First packet of a go-back-N episode"),
    ("infiniband.analysis.episode_reason", "string", "What started the episode"),
    ("infiniband.analysis.episode_trigger", "uint32", "Frame of the NAK/response that started it"),
    ("infiniband.analysis.psn_gap", "uint32", "PSNs skipped before it (lost before the tap)"),
    ("infiniband.analysis.lost_after_capture", "bool", "Captured, but the responder never got it"),
    ("infiniband.analysis.duplicate", "bool", "Responder had already accepted this PSN"),
    ("infiniband.analysis.out_of_sequence", "bool", "Late request, no retry cause (reordered)"),
    ("infiniband.analysis.responder_out_of_sequence", "bool", "Beyond the expected PSN"),
    ("infiniband.analysis.network_duplicate", "bool", "Copy sooner than any retry cause could act"),
    ("infiniband.analysis.ambiguous", "bool",
     "Resend, or a late or duplicated copy: the capture point cannot tell"),
    ("infiniband.analysis.nak", "string", "NAK kind"),
    ("infiniband.analysis.rnr", "bool", "RNR NAK"),
    ("infiniband.analysis.rnr_timer_us", "uint32", "RNR NAK minimum timer (microseconds)"),
    ("infiniband.analysis.rnr_retry", "bool", "First resend of the PSN an RNR NAK refused"),
    ("infiniband.analysis.implied_nak", "bool", "Response past a READ/atomic lacking responses"),
    ("infiniband.analysis.read_response_gap", "bool", "READ responses missing before this one"),
    ("infiniband.analysis.duplicate_ack", "bool", "ACK acknowledging nothing new"),
    ("infiniband.analysis.ack_rtt", "double", "ACK round-trip time (seconds)"),
    ("infiniband.analysis.acked_psns", "uint32", "Request PSNs this ACK newly acknowledges"),
    ("infiniband.analysis.credits", "uint32", "AETH credits advertised (receive WQEs)"),
    ("infiniband.analysis.message", "uint32", "Message number within the half-connection"),
    ("infiniband.analysis.message_end", "bool", "Last packet of a message"),
    ("infiniband.analysis.bad_icrc", "bool", "Bad ICRC: the receiver drops it"),
    ("infiniband.analysis.connection", "uint32", "Connection index (ibwire rc)"),
)
