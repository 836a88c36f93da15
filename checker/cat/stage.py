"""Staging a model: split its `let`s into the static part (no dynamic base relation reaches them)
and the residual, so an engine evaluates the static part once per test instead of once per
candidate execution (brute force) or over symbolic tables (Z3).

Only a `let` whose names are bound once in the whole model and shadow no base name is hoisted,
and only if everything it mentions is a base name that is not dynamic, `id`, or a name hoisted
before it; everything else, and every check, stays in the residual model in its original order.
Inside the residual, every largest static subexpression that is not a bare name (`[W]`,
`W * R`, `po & loc`) is hoisted too, under a name `%N` no cat text can spell. Evaluating the
residual over the base plus the hoisted values therefore gives every check the same value as
evaluating the whole model.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Iterable, Mapping

from .algebra import Algebra
from .ast import Binary, Binding, Check, IfOption, Let, Unary, Universe, Var, Zero
from .interp import Model, evaluate


@dataclass(frozen=True)
class Staged:
    static: Model       # the hoisted lets (no checks)
    residual: Model     # everything else, checks included


def free_names(e) -> set[str]:
    out: set[str] = set()
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Var):
            out.add(x.name)
        elif isinstance(x, Unary):
            stack.append(x.arg)
        elif isinstance(x, Binary):
            stack += (x.left, x.right)
        elif isinstance(x, IfOption):
            stack += (x.then, x.orelse)
    return out


_cache: dict[tuple, tuple[Model, Staged]] = {}


def stage(model: Model, base_names: Iterable[str], dynamic: Iterable[str]) -> Staged:
    """Split `model` given the names of the base (all of them) and those of the dynamic ones."""
    base_names, dynamic = frozenset(base_names), frozenset(dynamic)
    key = (id(model), base_names, dynamic)
    hit = _cache.get(key)
    if hit is not None and hit[0] is model:
        return hit[1]
    bound = Counter(b.name for st in model.statements if isinstance(st, Let) for b in st.bindings)
    moving = set(dynamic)          # names whose value may depend on the dynamic relations
    hoisted, rest = [], []
    lifted: dict = {}              # static subexpression -> the name it is hoisted under
    for st in model.statements:
        if isinstance(st, Check):
            rest.append(replace(st, expr=_lift(st.expr, moving, lifted)))
            continue
        names = {b.name for b in st.bindings}
        mentions = set().union(*(free_names(b.expr) for b in st.bindings)) - (names if st.rec else set())
        if any(bound[n] > 1 or n in base_names for n in names) or mentions & moving:
            if st.rec:
                moving |= names
            st = replace(st, bindings=tuple(replace(b, expr=_lift(b.expr, moving, lifted)) for b in st.bindings))
            moving |= names
            rest.append(st)
        else:
            hoisted.append(st)
    hoisted += [Let((Binding(name, e),)) for e, name in lifted.items()]
    # The static part is evaluated without the dynamic names, so without the glossary's check.
    staged = Staged(replace(model, statements=tuple(hoisted), checks=(), glossary={}),
                    replace(model, statements=tuple(rest),
                            checks=tuple(st for st in rest if isinstance(st, Check))))
    if len(_cache) > 64:
        _cache.clear()
    _cache[key] = (model, staged)
    from . import cache         # (the compiled code of the parts is kept on disk)

    how = (tuple(sorted(base_names)), tuple(sorted(dynamic)))
    cache.derived(staged.static, model, "static", *how)
    cache.derived(staged.residual, model, "residual", *how)
    return staged


def _lift(e, moving: set[str], lifted: dict):
    """`e` with each largest static compound subexpression replaced by a hoisted name."""
    if isinstance(e, (Var, Zero, Universe)):
        return e
    if not free_names(e) & moving:
        name = lifted.get(e)
        if name is None:
            name = lifted[e] = f"%{len(lifted)}"
        return Var(name, e.loc)
    if isinstance(e, Unary):
        return replace(e, arg=_lift(e.arg, moving, lifted))
    if isinstance(e, Binary):
        return replace(e, left=_lift(e.left, moving, lifted), right=_lift(e.right, moving, lifted))
    if isinstance(e, IfOption):
        return replace(e, then=_lift(e.then, moving, lifted), orelse=_lift(e.orelse, moving, lifted))
    return e


def static_values(staged: Staged, base: Mapping[str, tuple[str, object]], algebra: Algebra,
                  options: frozenset[str] = frozenset()) -> dict[str, tuple[str, object]]:
    """The hoisted names' (kind, value) over `base` (which needs no dynamic names)."""
    from .compiled import compile_env

    run = compile_env(staged.static, {name: kind for name, (kind, _) in base.items()}, algebra, options)
    if run is not None:
        return run(base)
    return dict(evaluate(staged.static, base, algebra, options).env)
