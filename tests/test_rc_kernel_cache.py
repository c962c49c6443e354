"""RC kernel build: Numba's cached kernel cannot go stale, the Numba build is the loop
with its rules inlined, and the twin runs every rule in the interpreter."""

from __future__ import annotations

import types

import numpy as np
import pytest
from numba.extending import is_jitted

from ibwire.engines import rc_build as B
from ibwire.engines import rc_kernel as K

RULE_MODULES = {f"ibwire.engines.rc_{m}" for m in
                ("requests", "pending", "pending_copies", "copies", "late_copies", "episodes",
                 "causes", "responses", "response_row", "shared", "unseen", "run_shape")}


def test_helper_digest_is_current():
    """Numba's cache of `rc_pass` is keyed on rc_kernel.py alone (and the bytecode), but
    the rule modules and the rc_rules constants are compiled into it."""
    now = B.helpers_digest(K._pass)
    assert now == K.RC_HELPERS_DIGEST, (
        f"helper modules changed: set RC_HELPERS_DIGEST in ibwire/engines/rc_kernel.py to "
        f"{now!r} — editing that file also makes Numba recompile the kernel")


def test_rule_helpers_are_compiled_with_the_kernel_not_cached_apart():
    """A helper cached on its own is checked against its own file only: one calling a
    helper of another module kept the callee's old code in a rebuilt kernel (seen:
    `_timeout_episode` with an old `_unseen_implied`). The kernel's cache holds them."""
    import importlib

    helpers = [(m, n) for m in sorted(RULE_MODULES)
               for n, g in vars(importlib.import_module(m)).items()
               if is_jitted(g) and g.__module__ == m]
    assert len(helpers) >= 12, helpers
    for m, n in helpers:
        g = getattr(importlib.import_module(m), n)
        assert type(g._cache).__name__ == "NullCache", f"{m}.{n} is cached apart"


def test_digest_covers_every_module_compiled_in():
    got = set(B.helper_sources(K._pass))
    assert got == RULE_MODULES | {"ibwire.analysis.rc_rules"}, got


def test_numba_build_is_the_flat_loop():
    flat = K.rc_pass.py_func
    # Numba can cache it: the code names rc_kernel.py and `_pass`, as the loop itself.
    assert flat.__code__.co_filename == K._pass.__code__.co_filename == K.__file__
    assert (flat.__qualname__, flat.__module__) == ("_pass", K.__name__)
    assert flat.__code__.co_firstlineno == K._pass.__code__.co_firstlineno
    # No rule function is called any more: only Numba functions and the rules' names.
    calls = [n for n in flat.__code__.co_names
             if isinstance(flat.__globals__.get(n), types.FunctionType)]
    assert calls == [], calls
    rules = {n for n in K._pass.__code__.co_names
             if isinstance(K._pass.__globals__.get(n), types.FunctionType)}
    assert len(rules) >= 20 and not rules & set(flat.__code__.co_names)
    assert {"_mark", "_cause_episode", "_timeout_episode"} <= set(flat.__code__.co_names)


def test_twin_runs_every_rule_in_the_interpreter():
    seen: set = set()

    def walk(f):
        for name in f.__code__.co_names:
            g = f.__globals__.get(name)
            assert not is_jitted(g), f"{f.__name__} calls {name} compiled"
            if isinstance(g, types.FunctionType) and g.__module__ in RULE_MODULES \
                    and g not in seen:
                seen.add(g)
                walk(g)

    walk(K.rc_pass_py)
    names = {g.__name__ for g in seen}
    assert {"late_decided", "episode_start", "ack", "_mark", "_cause_episode",
            "_timeout_episode", "_rnr_wait_ns"} <= names and len(names) >= 25, names
    assert K.rc_pass_py is not K._pass


# -- inline_rules on small loops ---------------------------------------------------------------
def _bump(a, i):
    a[i] += 1


def _half(a, i, n):
    n += a[i] // 2
    return n


def _twice(a, i):
    _bump(a, i)
    _bump(a, i)


def _loop(a):
    n = 0
    for i in range(len(a)):
        if a[i] > 2:
            _twice(a, i)
        else:
            n = _half(a, i, n)
    return n


def _renamed(a):
    for j in range(len(a)):
        _bump(a, j)


def _no_return(a):
    for i in range(len(a)):
        n = _bump(a, i)
    return n


def _in_expression(a):
    n = 0
    for i in range(len(a)):
        n = 1 + _half(a, i, n)
    return n


def test_inline_rules_puts_the_bodies_in_place():
    flat = B.inline_rules(_loop)
    assert not {"_bump", "_half", "_twice"} & set(flat.__code__.co_names)
    a, b = np.arange(6), np.arange(6)
    assert flat(a) == _loop(b) and np.array_equal(a, b)


@pytest.mark.parametrize("fn,why", [(_renamed, "own parameter names"),
                                    (_no_return, "must end with `return n`"),
                                    (_in_expression, "left in place")])
def test_inline_rules_refuses_what_it_cannot_inline_verbatim(fn, why):
    with pytest.raises(ValueError, match=why):
        B.inline_rules(fn)
