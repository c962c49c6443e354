"""RC engine: how the kernel is built from its rule modules.

`rc_kernel._pass` is the loop; the rules it applies to a row are plain Python
functions in `rc_requests`, `rc_pending`, `rc_pending_copies`, `rc_copies`,
`rc_late_copies`, `rc_episodes`, `rc_run_shape`, `rc_response_row` and
`rc_responses`, each a block of the loop moved out verbatim (a `continue` turned
into an `else`). A rule
function takes the arrays and values it uses under the loop's own names, in the
call as in its definition (`late_decided(upsn, ..., h, u, d, n_ep)`); it changes
the arrays in place and returns what the loop needs back (`return n_ep`), as the
last statement, to the same names (`n_ep = late_decided(...)`).

- `inline_rules(_pass)`, the Numba build's source: `_pass` with each call of a rule
  function replaced by that function's body (the block it was), so Numba compiles
  one flat loop, as if the rules had never left it. (Numba functions called from
  the loop instead, inlined or not, pass every array through a reference count on
  each call: measured 14 times slower; with the count switched off, still 15-20%.)
  A statement of a rule function keeps the line of its call in `rc_kernel.py`, so
  a Numba error there names the call.
- `py_twin(_pass)`, the plain-Python twin: the loop and the rule functions as
  written, with every Numba function they call (`_mark`, `_cause_episode`, ...)
  run by the interpreter too.
- `helper_sources(_pass)`: the files Numba compiles into the kernel besides
  `rc_kernel.py` (see `rc_kernel.RC_HELPERS_DIGEST`).
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import sys
import types
from pathlib import Path
from typing import Any

from numba.extending import is_jitted


def _is_rule(f: Any) -> bool:
    return isinstance(f, types.FunctionType) and not is_jitted(f)


def _def(f: types.FunctionType, trees: dict[str, dict[str, ast.FunctionDef]]) -> ast.FunctionDef:
    """`f`'s definition, from its module's source: nodes of its own at each use (the
    source is parsed once per `inline_rules`, again for a function used twice)."""
    if f.__name__ not in trees.get(f.__module__, {}):
        tree = ast.parse(Path(inspect.getsourcefile(f)).read_text())
        trees[f.__module__] = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    fdef = trees[f.__module__].pop(f.__name__, None)
    if fdef is None or f.__code__.co_firstlineno not in (fdef.lineno, *(
            d.lineno for d in fdef.decorator_list)):
        raise ValueError(f"{f.__module__}.{f.__name__}: its definition is not in its module")
    return fdef


def _names(node: ast.expr | None) -> list[str] | None:
    """`a` or `a, b, ...` as a list of names (None for anything else)."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Tuple) and all(isinstance(e, ast.Name) for e in node.elts):
        return [e.id for e in node.elts]
    return None


def _body(f: types.FunctionType, node: ast.Expr | ast.Assign, env: dict[str, Any],
          trees: dict[str, dict[str, ast.FunctionDef]]) -> list[ast.stmt]:
    """The statements that replace `node`, a call of rule function `f`."""
    fdef, call = _def(f, trees), node.value
    where = f"{f.__module__}.{f.__name__}"
    params = [a.arg for a in fdef.args.args]
    args = [a.id if isinstance(a, ast.Name) else None for a in call.args]
    if args != params or call.keywords or fdef.args.vararg or fdef.args.kwonlyargs \
            or fdef.args.defaults or fdef.decorator_list:
        raise ValueError(f"{where}: call it with its own parameter names, in order "
                         f"(got {args})")
    body = list(fdef.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]                                       # the docstring
    if isinstance(node, ast.Assign):
        got = _names(node.targets[0]) if len(node.targets) == 1 else None
        last = body.pop() if body and isinstance(body[-1], ast.Return) else None
        if got is None or _names(last and last.value) != got:
            raise ValueError(f"{where}: must end with `return {', '.join(got or ['...'])}`")
    names, local = set(), set(params)
    for sub in body:
        for n in ast.walk(sub):
            if isinstance(n, (ast.Return, ast.FunctionDef, ast.Lambda, ast.Global,
                              ast.Nonlocal, ast.Yield)):
                raise ValueError(f"{where}: no return but a last one, no nested scopes")
            if isinstance(n, ast.Name):
                (names if isinstance(n.ctx, ast.Load) else local).add(n.id)
            if hasattr(n, "lineno"):                  # the call's place in the loop
                n.lineno, n.end_lineno = node.lineno, node.end_lineno
                n.col_offset, n.end_col_offset = node.col_offset, node.end_col_offset
    for name in names - local:                   # the globals it uses, in the loop's
        if name in f.__globals__:
            if name in env and env[name] is not f.__globals__[name]:
                raise ValueError(f"{where}: global {name!r} is another object in the loop")
            env[name] = f.__globals__[name]
    return _flat(body, env, trees)


def _flat(stmts: list[ast.stmt], env: dict[str, Any],
          trees: dict[str, dict[str, ast.FunctionDef]]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for node in stmts:
        call = node.value if isinstance(node, (ast.Expr, ast.Assign)) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and \
                _is_rule(env.get(call.func.id)):
            out += _body(env[call.func.id], node, env, trees)
            continue
        for field in ("body", "orelse"):
            if isinstance(getattr(node, field, None), list):
                setattr(node, field, _flat(getattr(node, field), env, trees))
        out.append(node)
    return out


def inline_rules(fn: types.FunctionType) -> types.FunctionType:
    """`fn` with every call of a rule function (a plain Python function it calls by a
    global name, as a statement) replaced by that function's body, recursively."""
    trees: dict[str, dict[str, ast.FunctionDef]] = {}
    fdef = _def(fn, trees)
    env = dict(fn.__globals__)
    fdef.body = _flat(fdef.body, env, trees)
    code = compile(ast.Module([fdef], []), fn.__code__.co_filename, "exec", dont_inherit=True)
    exec(code, env)
    flat = env[fn.__name__]
    left = [n for n in flat.__code__.co_names if _is_rule(env.get(n))]
    if left:
        raise ValueError(f"{fn.__name__}: rule functions left in place (call them as "
                         f"statements, inside if/for/while blocks only): {left}")
    return flat


def py_twin(fn: Any, _done: dict | None = None) -> types.FunctionType:
    """`fn`'s plain-Python twin: its code, with each Numba function and each rule
    function it calls by a global name replaced by that function's own twin."""
    done = {} if _done is None else _done
    f = getattr(fn, "py_func", fn)
    if f not in done:
        env = dict(f.__globals__)
        done[f] = types.FunctionType(f.__code__, env, f.__name__, f.__defaults__,
                                     f.__closure__)
        for name in f.__code__.co_names:
            g = env.get(name)
            if is_jitted(g) or (isinstance(g, types.FunctionType)
                                and g.__module__.startswith("ibwire.engines.rc_")):
                env[name] = py_twin(g, done)
    return done[f]


def helper_sources(fn: types.FunctionType) -> dict[str, Path]:
    """The modules Numba compiles into the kernel built from `fn`, besides `fn`'s own:
    each module holding a rule function or a Numba function it calls (at any depth),
    and `ibwire.analysis.rc_rules` (its constants are compiled in)."""
    out = {"ibwire.analysis.rc_rules": Path(sys.modules["ibwire.analysis.rc_rules"].__file__)}
    seen, todo = set(), [fn]
    while todo:
        f = todo.pop()
        for name in f.__code__.co_names:
            g = f.__globals__.get(name)
            g = g.py_func if is_jitted(g) else g
            if isinstance(g, types.FunctionType) and g not in seen and \
                    g.__module__.startswith("ibwire."):
                seen.add(g)
                todo.append(g)
                if g.__module__ != fn.__module__:
                    out[g.__module__] = Path(sys.modules[g.__module__].__file__)
    return out


def helpers_digest(fn: types.FunctionType) -> str:
    """sha256 of the `helper_sources` (line endings normalised), first 12 hex digits."""
    h = hashlib.sha256()
    for name, path in sorted(helper_sources(fn).items()):
        h.update(name.encode() + b"\0" + path.read_bytes().replace(b"\r\n", b"\n") + b"\0")
    return h.hexdigest()[:12]
