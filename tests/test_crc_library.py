"""The ICRC kernel's library CRC-32 (zlib-ng, called by symbol from compiled code): the
same CRC as `ibwire.crc`, on every span length and alignment, in captures with damaged
payloads, and the tables-only build where the library is missing."""

from __future__ import annotations

import json
import subprocess
import sys
import zlib

import numpy as np
from engine_compare import compare
from numba import njit

import ibwire
from ibwire.crc import CrcStatus
from ibwire.engines import crc_kernels as CK
from ibwire.gen.bulk import BulkConfig, bulk_write

STATUS = "infiniband.invariant.crc.status"


@njit
def _lib(buf, p, n, c):
    return CK.lib_crc32(c, buf.ctypes.data + p, n)


def test_library_is_loaded_and_is_crc32_ieee():
    assert CK.HAVE_LIB  # a dependency: the fast path must be the one that runs
    rng = np.random.default_rng(7)
    buf = rng.integers(0, 256, 20_000, dtype=np.uint8)
    for p in range(8):
        for n in (0, 1, 15, 63, 64, 65, 255, 256, 1000, 4096, 9000):
            c0 = int(rng.integers(0, 1 << 32))
            want = zlib.crc32(buf[p:p + n].tobytes(), c0)
            assert _lib(buf, p, n, c0) == want, (p, n)
            # chained over two spans, as the kernel continues from the headers' register
            h = n // 3
            assert _lib(buf, p + h, n - h, _lib(buf, p, h, c0)) == want


def _damaged(tmp_path, encap: str, last_len: int):
    """A big-packet capture with one payload bit flipped in every seventh frame."""
    src = tmp_path / f"{encap}{last_len}.pcap"
    bulk_write(str(src), BulkConfig(encap=encap, packets=140, msg_pkts=3, pmtu=4096,
                                    last_len=last_len))
    data = bytearray(src.read_bytes())
    pos, flipped = 24, []  # after the pcap file header
    k = 0
    while pos < len(data):
        cap = int.from_bytes(data[pos + 8:pos + 12], "little")
        if k % 7 == 3 and cap > 200:
            data[pos + 16 + cap - 40] ^= 0x10  # in the payload, before the ICRC
            flipped.append(k)
        pos += 16 + cap
        k += 1
    assert pos == len(data) and flipped
    src.write_bytes(bytes(data))
    return src, flipped


def test_damaged_big_payloads_equal_the_decoder_and_are_bad(tmp_path):
    for encap in ("roce2", "roce2-v6", "roce1", "ib", "ib-grh"):
        for last_len in (CK.LIB_MIN - 1, CK.LIB_MIN, CK.LIB_MIN + 1, 1500):
            path, flipped = _damaged(tmp_path, encap, last_len)
            frames, _, diffs = compare(path)
            assert frames == 140 and not diffs, diffs[:5]
            st = ibwire.columns(path, fields=[STATUS]).column(STATUS).to_pylist()
            bad = [i for i, s in enumerate(st) if s == CrcStatus.BAD]
            assert bad == flipped, (encap, last_len)
            assert st.count(CrcStatus.GOOD) == 140 - len(flipped)


_WITHOUT = """
import json, sys
sys.modules["zlib_ng"] = None  # the package missing: import fails
from ibwire.engines import crc_kernels as CK
import ibwire
st = ibwire.columns(sys.argv[1], fields=["infiniband.invariant.crc.status"]).column(
    "infiniband.invariant.crc.status").to_pylist()
print(json.dumps([CK.HAVE_LIB, st]))
"""


def test_without_the_library_the_tables_give_the_same_statuses(tmp_path):
    path, flipped = _damaged(tmp_path, "roce2", 1500)
    out = subprocess.run([sys.executable, "-c", _WITHOUT, str(path)], capture_output=True,
                         text=True, check=True)
    have, st = json.loads(out.stdout)
    assert have is False
    assert [i for i, s in enumerate(st) if s == CrcStatus.BAD] == flipped
    assert st.count(CrcStatus.GOOD) == 140 - len(flipped)
