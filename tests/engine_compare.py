"""Compare bulk columns with the per-packet decoder, frame by frame (test helper)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ibwire.capture import CaptureError, open_capture
from ibwire.decoder import Options, decode
from ibwire.engines.columns import CRC_COLUMNS, FRAME_COLUMNS, iter_chunks
from ibwire.engines.place import FB, IB_OFF, MAL, PAY_LEN, PAY_OFF
from ibwire.engines.scan import clamp_ns
from ibwire.engines.tables import FIELD_ROWS, LAYER_NAMES, malformed_code


def _expect(v: Any) -> Any:
    if isinstance(v, (bytes, bytearray)):
        return bytes(v) if len(v) == 16 else int.from_bytes(v, "big")
    return int(v)


def _got(arr: Any, pres: Any, i: int) -> Any:
    if pres is not None and not pres[i]:
        return None
    return bytes(arr[i]) if arr.ndim == 2 else int(arr[i])


def compare(path: Path | str, *, fallback_decode: bool = False, chunk: int = 1 << 18,
            options: Options | None = None, limit: int = 50) -> tuple[int, int, list[str]]:
    """(frames, frames handed over, differences) between columns and `decode`.

    Without `fallback_decode`, rows the kernels hand over are checked only for
    having been handed over when the decoder marks them malformed."""
    diffs: list[str] = []
    frames = 0
    handed = 0
    names = [*FRAME_COLUMNS, *CRC_COLUMNS, *FIELD_ROWS]
    want: list[Any] = []
    want_err = got_err = None
    try:
        with open_capture(path) as reader:
            want.extend(reader)
    except CaptureError as exc:  # the reader stops here: columns must stop alike
        want_err = str(exc)
    try:
        for ch in iter_chunks(path, names, chunk=chunk, fallback_decode=fallback_decode,
                              options=options):
            b = ch.batch
            for i in range(len(ch)):
                if frames >= len(want):
                    diffs.append(f"{Path(path).name}: columns have more frames")
                    return frames, handed, diffs
                fr = want[frames]
                frames += 1
                pkt = decode(fr.data, fr.linktype, frame=fr, options=options)
                where = f"{Path(path).name} frame {fr.index}"
                got_frame = (b.first + i, int(b.ts[i]), int(b.wire[i]), int(b.cap[i]),
                             int(b.lt[i]), int(b.ifc[i]), int(b.roff[i]))
                want_frame = (fr.index, clamp_ns(fr.ts_ns), fr.wire_len, len(fr.data), fr.linktype,
                              fr.interface, fr.offset)
                if got_frame != want_frame:
                    diffs.append(f"{where}: record {got_frame} != {want_frame}")
                if bytes(b.buf[b.doff[i]:b.doff[i] + b.cap[i]]) != fr.data:
                    diffs.append(f"{where}: frame bytes differ")
                fb = bool(ch.info[FB, i])
                handed += fb
                if fb and not fallback_decode:
                    if pkt.problems == [] and ch.info[MAL, i]:
                        diffs.append(f"{where}: kernel marks {ch.info[MAL, i]}, decoder none")
                    continue
                if bool(ch.info[MAL, i]) != bool(pkt.problems):
                    diffs.append(f"{where}: malformed {ch.info[MAL, i]} vs {pkt.problems}")
                elif pkt.problems and ch.info[MAL, i] != malformed_code(pkt.problems[0].layer):
                    diffs.append(f"{where}: malformed code {ch.info[MAL, i]} vs "
                                 f"{pkt.problems[0]}")
                _rows(ch, i, pkt, where, diffs)
                if len(diffs) >= limit:
                    return frames, handed, diffs
    except CaptureError as exc:
        got_err = str(exc)
    if frames != len(want):
        diffs.append(f"{Path(path).name}: {frames} frames in columns, {len(want)} read")
    if got_err != want_err:
        diffs.append(f"{Path(path).name}: error {got_err!r}, reader {want_err!r}")
    return frames, handed, diffs


def _rows(ch: Any, i: int, pkt: Any, where: str, diffs: list[str]) -> None:
    firsts: dict[str, int] = {}
    for lay in pkt.layers:
        firsts.setdefault(lay.layout.name, lay.offset)
    for r, name in enumerate(LAYER_NAMES):
        if int(ch.lo[r, i]) != firsts.get(name, -1):
            diffs.append(f"{where}: layer {name} at {ch.lo[r, i]} vs {firsts.get(name, -1)}")
    info = ch.info
    want = (pkt.payload_offset, len(pkt.payload) if pkt.payload_offset >= 0 else 0,
            pkt.ib_offset)
    got = (int(info[PAY_OFF, i]), int(info[PAY_LEN, i]), int(info[IB_OFF, i]))
    if got != want:
        diffs.append(f"{where}: payload/ib offsets {got} vs {want}")
    ist, vst, lst, ival, vval = ch.crc
    got_crc = (int(ist[i]), int(vst[i]), int(lst[i]))
    want_crc = (int(pkt.icrc_status), int(pkt.vcrc_status), int(pkt.lpcrc_status))
    if got_crc != want_crc:
        diffs.append(f"{where}: CRC statuses {got_crc} vs {want_crc}")
    if pkt.icrc and int(ival[i]) != int.from_bytes(pkt.icrc, "big"):
        diffs.append(f"{where}: ICRC value {ival[i]:#x}")
    if pkt.vcrc and int(vval[i]) != int.from_bytes(pkt.vcrc, "big"):
        diffs.append(f"{where}: VCRC value {vval[i]:#x}")
    for name, arr in ch.values.items():
        vals = pkt.values_of(name)
        want_v = _expect(vals[0]) if vals else None
        got_v = _got(arr, ch.present.get(name), i)
        if got_v != want_v:
            diffs.append(f"{where}: {name} = {got_v!r}, decoder {want_v!r}")
