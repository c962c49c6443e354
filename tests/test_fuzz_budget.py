"""The CI fuzz budget (issue 7): at least 100,000 mutated packets a run, zero escapes.

Each fuzz test asserts that it ran its own count and found no escape; this adds up
the seeded loops' guaranteed minimum. On top of it come the Hypothesis examples, the
length-field and opcode sweeps (about 30,000 more packets) and 30,000 filters. For a
longer run: `IBWIRE_FUZZ_SCALE=10 python -m pytest -q tests/test_fuzz*.py`, or
`python tools/fuzz_atheris.py` for coverage-guided fuzzing.
"""

from __future__ import annotations

from test_fuzz_capture import FILES_BUDGET
from test_fuzz_decode import DECODE_BUDGET
from test_fuzz_dfilter import FILTER_BUDGET
from test_fuzz_mad import MAD_BUDGET

MIN_FRAMES_PER_FILE = 3   # test_seeded_mutated_captures_never_escape asserts more


def test_ci_budget_is_at_least_100k_mutated_packets():
    packets = DECODE_BUDGET + MAD_BUDGET + MIN_FRAMES_PER_FILE * FILES_BUDGET
    print(f"fuzz budget: >= {packets} mutated packets (decode {DECODE_BUDGET}, MAD "
          f"{MAD_BUDGET}, >= {MIN_FRAMES_PER_FILE * FILES_BUDGET} frames in {FILES_BUDGET} "
          f"mutated capture files) + {FILTER_BUDGET} filters")
    assert packets >= 100_000
