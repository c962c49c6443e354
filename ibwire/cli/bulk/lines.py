"""Summary lines and `-T fields` lines for a chunk, built in bulk.

Each line format is a `writer.Program`. Text that depends only on a group key
(addresses, protocol, opcode name, AETH and CRC notes, `frame.protocols`) comes
from the per-packet formatter run on the group's first row; numbers come from
the columns. Every group is checked: its first and last rows rendered in bulk
must equal the per-packet lines, else the whole group is printed per packet.
Rows the engine handed over (or marked malformed) are always printed per packet.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ibwire.cli.bulk.rows import B16_KEYS, Rows, groups, ints_matrix, last_rows
from ibwire.cli.bulk.writer import ALIGN_RIGHT, Program
from ibwire.cli.columns import columns, time_text
from ibwire.cli.fields_out import FieldsWriter
from ibwire.cli.frames import FrameInfo
from ibwire.cli.tshark_text import _HEX_DIGITS
from ibwire.crc import CrcStatus
from ibwire.engines.columns import CRC_COLUMNS
from ibwire.engines.tables import FIELD_ROWS, LAYER_NAMES
from ibwire.fields import BOOL, ETHER, HEX, IPV4, REGISTRY
from ibwire.headers.extended import SYN_ACK as ACK
from ibwire.headers.extended import syndrome_part
from ibwire.headers.opcodes import OPCODES

TIME_COLUMNS = {"r": "rel", "d": "delta", "dd": "disp_delta", "e": "ts"}
ICRC_ST, VCRC_ST, LPCRC_ST = ("infiniband.invariant.crc.status",
                              "infiniband.variant.crc.status", "infiniband_link.lpcrc.status")
SUMMARY_COLUMNS = ["infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn",
                   "infiniband.deth.srcqp",
                   "infiniband.aeth.syndrome", "infiniband.aeth.msn", "ip.src", "ip.dst",
                   "infiniband.lrh.slid", "infiniband.lrh.dlid", *B16_KEYS, ICRC_ST, VCRC_ST,
                   LPCRC_ST]
FRAME_INTS = {"frame.number": "number", "frame.len": "length", "frame.time_epoch": "ts",
              "frame.time_relative": "rel", "frame.time_delta": "delta",
              "frame.time_delta_displayed": "disp_delta"}
FRAME_COLS = {"frame.cap_len": "frame.cap_len", "frame.interface_id": "frame.interface_id",
              "frame.offset": "ibwire.frame.offset"}
FRAME_TIMES = {"frame.time_epoch", "frame.time_relative", "frame.time_delta",
               "frame.time_delta_displayed"}

Render = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


class Lines:
    """Base: `plan(rows)` -> (group per row, -1 = per packet; a renderer)."""

    columns: list[str] = []

    def per_packet(self, info: FrameInfo) -> str:
        raise NotImplementedError

    def plan(self, rows: Rows) -> tuple[np.ndarray, Render]:
        raise NotImplementedError

    def _checked(self, rows: Rows, gid: np.ndarray, first: np.ndarray,
                 texts: list[list[bytes]], render_with: Callable) -> tuple[np.ndarray, Render]:
        """Drop groups whose first or last row does not render as per packet."""
        last = last_rows(gid, len(first))
        probe = np.unique(np.concatenate([first, last]))
        sub = np.full(rows.n, -1, np.int64)
        sub[probe] = gid[probe]
        raw, off = render_with(sub, texts)
        bad = set()
        for i in probe:
            got = raw[off[i]:off[i + 1]].tobytes().decode()
            if got != self.per_packet(rows.info(int(i))) + "\n":
                bad.add(int(gid[i]))
        if bad:
            gid = np.where(np.isin(gid, list(bad)), -1, gid)
        return gid, lambda g: render_with(g, texts)


class SummaryLines(Lines):
    """tshark's one-line summary (`columns.Columns.line`)."""

    columns = SUMMARY_COLUMNS

    def __init__(self, time_mode: str) -> None:
        self.mode = time_mode
        p = self.prog = Program()
        p.dec(0, 5, ALIGN_RIGHT)
        p.lit(" ")
        p.time(1, 10)
        p.lit(" ")
        p.group()               # source, arrow, destination, protocol
        p.dec(2)
        p.lit(" ")
        p.group()               # "<opcode label> QP=0x"
        p.hex(3, 6)
        p.lit(" PSN=")
        p.dec(4)
        g = p.guard(5)
        p.lit(" MSN=")
        p.dec(5)
        p.end_guard(g)
        p.group()               # AETH and CRC notes
        p.lit("\n")

    def per_packet(self, info: FrameInfo) -> str:
        return columns(info, time_text(info, self.mode)).line()

    def plan(self, rows: Rows) -> tuple[np.ndarray, Render]:
        n = rows.n
        bth = rows.has_layer("bth")
        aeth = rows.has_layer("aeth")
        syn = np.where(aeth, rows.int("infiniband.aeth.syndrome"), -1)
        keys = [rows.linktype, rows.layer_bits(), rows.int("infiniband.bth.opcode"), syn,
                *rows.mad_qps(),
                rows.int("ibwire.payload.len") > 0,
                rows.int(ICRC_ST), rows.int(VCRC_ST), rows.int(LPCRC_ST),
                rows.int("ip.src"), rows.int("ip.dst"), rows.int("infiniband.lrh.slid"),
                rows.int("infiniband.lrh.dlid")]
        for name in B16_KEYS:
            keys += rows.b16(name)
        gid, first = groups(keys, n)
        fast = bth & ~rows.slow
        time_col = getattr(rows, TIME_COLUMNS[self.mode])
        msn_ok = aeth & (syndrome_part(syn, "syndrome_type") == ACK)
        ints, valid = ints_matrix(
            [rows.number, time_col, rows.length, rows.int("infiniband.bth.destqp"),
             rows.int("infiniband.bth.psn"), rows.int("infiniband.aeth.msn")],
            [np.ones(n, bool)] * 5 + [msn_ok], n)
        texts: list[list[bytes]] = []
        ok_group = np.zeros(len(first), bool)
        for g, i in enumerate(first):
            texts.append([b"", b"", b""])
            if not fast[i]:
                continue
            info = rows.info(int(i))
            cols = columns(info, time_text(info, self.mode))
            op = OPCODES[int(rows.int("infiniband.bth.opcode")[i])]
            head = f"{op.label} QP=0x{int(ints[3, i]):06x} PSN={int(ints[4, i])}"
            if msn_ok[i]:
                head += f" MSN={int(ints[5, i])}"
            if not cols.info.startswith(head):
                continue
            texts[g] = [f"{cols.source:>12} → {cols.destination:<12} {cols.protocol} ".encode(),
                        f"{op.label} QP=0x".encode(), cols.info[len(head):].encode()]
            ok_group[g] = True
        gid = np.where(fast & ok_group[gid], gid, -1)

        def render(g: np.ndarray, t: list[list[bytes]]) -> tuple[np.ndarray, np.ndarray]:
            return self.prog.run(ints, valid, g, t)
        return self._checked(rows, gid, first, texts, render)


class FieldLines(Lines):
    """`-T fields` lines for names the columns hold as numbers (plus frame.protocols)."""

    def __init__(self, writer: FieldsWriter) -> None:
        self.writer = writer
        self.columns = []
        for name in writer.names:
            if name in FIELD_ROWS or name in CRC_COLUMNS:
                self.columns.append(name)

    @staticmethod
    def supported(writer: FieldsWriter) -> bool:
        if writer.unknown:
            return False
        occ = writer.opts.occurrence
        return all(_supported(name) for name in writer.names) and \
            (occ in ("f", "l", "a") or occ.isdigit())

    def per_packet(self, info: FrameInfo) -> str:
        assert info.pkt is not None
        return self.writer.row(info, info.pkt)

    def plan(self, rows: Rows) -> tuple[np.ndarray, Render]:
        o = self.writer.opts
        n = rows.n
        prog = Program()
        cols: list[np.ndarray] = []
        valid: list[np.ndarray] = []
        has_slot = False
        for k, name in enumerate(self.writer.names):
            if k:
                prog.lit(o.separator)
            if o.occurrence.isdigit() and int(o.occurrence) != 1:
                continue                          # only one occurrence: always empty
            if name == "frame.protocols":
                prog.group()
                has_slot = True
                continue
            values, ok = self._column(rows, name)
            j = len(cols)
            cols.append(values)
            valid.append(ok)
            g = prog.guard(j)
            prog.lit(o.quote)
            if name in FRAME_TIMES:
                prog.time(j)
            elif REGISTRY.entries[name].ftype in (IPV4, ETHER):
                prog.address(j, REGISTRY.entries[name].ftype == IPV4)
            else:
                entry = REGISTRY.entries.get(name)
                if entry is not None and entry.base == HEX and entry.ftype in _HEX_DIGITS:
                    prog.lit("0x")
                    prog.hex(j, _HEX_DIGITS[entry.ftype])
                else:
                    prog.dec(j)
            prog.lit(o.quote)
            prog.end_guard(g)
        prog.lit("\n")
        ints, ok_m = ints_matrix(cols, valid, n)
        keys = [rows.linktype, rows.layer_bits(), rows.int("ibwire.payload.len") > 0]
        gid, first = groups(keys, n)
        texts = []
        for i in first:
            slot = [b""]
            if has_slot and not rows.slow[i]:
                slot = [":".join(rows.info(int(i)).stack).encode()]
            texts.append(slot if has_slot else [])
        slow = rows.slow
        if has_slot:
            # Stacks of frames without InfiniBand depend on bytes no column holds
            # (TCP data, IPv6 extension headers): those rows go per packet.
            slow = slow | (rows.int("ibwire.ib.offset") < 0)
        gid = np.where(slow, -1, gid)

        def render(g: np.ndarray, t: list[list[bytes]]) -> tuple[np.ndarray, np.ndarray]:
            return prog.run(ints, ok_m, g, t)
        return self._checked(rows, gid, first, texts, render)

    @staticmethod
    def _column(rows: Rows, name: str) -> tuple[np.ndarray, np.ndarray]:
        n = rows.n
        if name in FRAME_INTS:
            return getattr(rows, FRAME_INTS[name]), np.ones(n, bool)
        if name in FRAME_COLS:
            return rows.int(FRAME_COLS[name]), np.ones(n, bool)
        values, present = rows.int(name), rows.present(name)
        # Where the per-packet decoder adds a CRC status at all (see decoder.transport).
        if name == ICRC_ST:
            present = values != CrcStatus.NOT_PRESENT
        elif name == VCRC_ST:
            present = (values != CrcStatus.NOT_PRESENT) | rows.has_layer("lrh")
        elif name == LPCRC_ST:
            present = rows.has_layer("link")
        return values, present


def _supported(name: str) -> bool:
    if name in FRAME_INTS or name in FRAME_COLS or name == "frame.protocols":
        return True
    if name in CRC_COLUMNS:
        return True
    rows = FIELD_ROWS.get(name)
    entry = REGISTRY.entries.get(name)
    if not rows or entry is None or any(LAYER_NAMES[r.layer] == "vlan" for r in rows):
        return False
    return entry.ftype in _HEX_DIGITS or entry.ftype in (BOOL, IPV4, ETHER)
