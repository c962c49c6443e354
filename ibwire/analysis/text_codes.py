"""Text columns (object arrays of str, e.g. addresses) as integer codes.

The analyses group rows by address; comparing millions of Python strings (or
converting them to fixed-width numpy text, 4 bytes a character) is slow and large.
`factorize` hashes them once in Arrow: a code per row and the distinct texts.
"""

from __future__ import annotations

import numpy as np


def factorize(values: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """(code per row, distinct texts) with texts[code[i]] == str(values[i])."""
    if len(values) == 0:
        return np.zeros(0, np.int64), []
    import pyarrow as pa

    try:
        enc = pa.array(values, type=pa.string()).dictionary_encode()
    except (pa.ArrowInvalid, pa.ArrowTypeError):     # not all str: as numpy's str() says
        enc = pa.array(np.asarray(values).astype(str).astype(object),
                       type=pa.string()).dictionary_encode()
    texts = enc.dictionary.to_pylist()
    codes = enc.indices
    if codes.null_count:                              # None: "None", as astype(str)
        codes = codes.fill_null(len(texts))
        texts.append("None")
    return codes.to_numpy(zero_copy_only=False).astype(np.int64), texts


def merged(parts: list[tuple[np.ndarray, list[str]]]) -> tuple[list[np.ndarray], list[str]]:
    """Codes of several factorized columns in one space of distinct texts (equal texts,
    equal codes), and that space."""
    index: dict[str, int] = {}
    out = []
    for codes, texts in parts:
        remap = np.array([index.setdefault(t, len(index)) for t in texts] or [0], np.int64)
        out.append(remap[codes] if len(codes) else codes)
    return out, list(index)
