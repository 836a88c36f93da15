"""The fixed points of a candidate whose read values depend on themselves (thin air: load
buffering with data dependencies, a cycle of read-modify-writes), for the brute-force engine.

Under well-formedness alone such a candidate is an execution for every assignment of values that
is a fixed point of its value equations (each read returns the value its write stores), and the
Z3 engine finds any of them. Brute force has no solver: it decides the question exactly on the
shapes it can solve, and refuses the others (Unsupported, naming what it cannot solve).

The shape solved: each value on the cycle is `wrap_w(v + c) + d` of one free value v (a cycle's
first read): copies, sized stores (which keep the low bits), and the addition or subtraction of
values that do not depend on v (an atom.add's write). A cycle then has every v of a range as
fixed points (its offsets sum to 0 modulo its narrowest wrap) or none. Every equality the
question tests (the condition's, an await's, a guard's, an undefined behaviour's) is true at
one value of v at most, if each is of that shape with a wrap no narrower than the cycle's: the
values that make some equality true, and one value that makes none true, cover every way the
equalities can come out; those are the values brute force tries."""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import Iterator, Mapping

from ..ast import And, Cond, Eq, EqRef, Not, Or
from ..errors import Unsupported
from ..model.events import EventStructure
from ..model.observables import key
from ..model.values import Bin, Const, Expr, Ite, ReadVal, _apply, evaluate, reads_of


@dataclass(frozen=True)
class Form:
    """wrap_w(v + c) + d, v the value of read `var` (w None: v + c + d)."""

    var: int
    c: int
    w: int | None
    d: int = 0

    def at(self, v: int) -> int:
        x = v + self.c
        return (x & ((1 << self.w) - 1) if self.w is not None else x) + self.d


Sym = int | Form


def _unsolved(why: str) -> Unsupported:
    return Unsupported(f"brute force: a candidate's values depend on themselves (thin air) through {why}; "
                              "brute force cannot enumerate their fixed points (ask --engine z3 or auto)")


def _shift(s: Sym, k: int) -> Sym:
    return s + k if isinstance(s, int) else Form(s.var, s.c, s.w, s.d + k)


def _form(e: Expr, env: Mapping[int, Sym]) -> Sym:
    """`e` as a number or a Form over env's values of the reads."""
    if isinstance(e, Const):
        return e.value
    if isinstance(e, ReadVal):
        return env[e.eid]
    if isinstance(e, Ite):
        parts = [_form(x, env) for x in (e.a, e.b, e.then, e.other)]
        if any(isinstance(p, Form) for p in parts):
            raise _unsolved(f"a comparison ({e.cmp})")
        return evaluate(Ite(e.cmp, *(Const(p) for p in parts)), lambda r: 0)
    if isinstance(e, Bin):
        a, b = _form(e.a, env), _form(e.b, env)
        if isinstance(a, int) and isinstance(b, int):
            return _apply(e.op, a, b, e.bits)
        if e.op == "add" and isinstance(b, int):
            return _shift(a, b)
        if e.op == "add" and isinstance(a, int):
            return _shift(b, a)
        if e.op == "sub" and isinstance(b, int):
            return _shift(a, -b)
        if e.op == "low" and isinstance(a, Form) and isinstance(b, int):
            if a.w is None:
                return Form(a.var, a.c + a.d, b)
            if b <= a.w:        # wrap_b(wrap_w(x) + d) = wrap_b(x + d) for b <= w
                return Form(a.var, a.c + a.d, b)
            if 0 <= a.d and a.d + (1 << a.w) <= (1 << b):     # wrap_w(x) + d fits in b bits already
                return a
        raise _unsolved(f"'{e.op}'")
    raise TypeError(e)


def _sccs(deps: Mapping[int, frozenset[int]]) -> list[list[int]]:
    """Strongly connected components, each after those it depends on (Tarjan)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on: set[int] = set()
    out: list[list[int]] = []

    def visit(v: int) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(deps[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(deps):
        if v not in index:
            visit(v)
    return out


def _equalities(c: Cond | None, es: EventStructure, out: list) -> None:
    """(observable name, value) of each `name = value` in `c`; an `a = b` as (a, b) names."""
    if c is None:
        return
    if isinstance(c, Eq):
        out.append((key(c.lhs, es.names), c.value))
    elif isinstance(c, EqRef):
        out.append((key(c.lhs, es.names), key(c.rhs, es.names)))
    elif isinstance(c, Not):
        _equalities(c.arg, es, out)
    elif isinstance(c, (And, Or)):
        for a in c.args:
            _equalities(a, es, out)


def fixed_points(es: EventStructure, source: Mapping[int, int], conds: tuple[Cond | None, ...]) -> Iterator[dict[int, int]]:
    """Read values of the candidate `source` (read -> write) that are fixed points of its value
    equations, one for each way the equalities of `conds`, the awaits, the guards and the
    value-dependent sets can come out (module docstring). Unsupported where the shape
    is not one brute force solves exactly."""
    deps = {r: reads_of(es.write_value[w]) & set(source) for r, w in source.items()}
    env: dict[int, Sym] = {}
    # a free value -> its range [lo, lo + 2^w) as (lo, w) (None: every integer)
    domain: dict[int, tuple[int, int] | None] = {}
    for comp in _sccs(deps):
        if len(comp) == 1 and comp[0] not in deps[comp[0]]:
            env[comp[0]] = _form(es.write_value[source[comp[0]]], env)
            continue
        root = comp[0]
        env[root] = Form(root, 0, None)
        _members(comp, root, deps, es, source, env)
        back = _form(es.write_value[source[root]], env)
        if not isinstance(back, Form) or back.var != root:
            raise _unsolved("more than one cycle")
        if back.w is None:
            if back.c + back.d != 0:
                return              # v = v + k, k != 0: no fixed point, no execution
            domain[root] = None
        else:
            # v = wrap_w(v + c) + d: v - d is in [0, 2^w) and congruent to v + c, so c + d is 0
            # modulo 2^w (then every v of that range is a fixed point)
            if (back.c + back.d) % (1 << back.w):
                return
            domain[root] = (back.d, back.w)
            # each value on the cycle is the free value, written as a wrap in its range
            env[root] = Form(root, -back.d, back.w, back.d)
            for r in comp[1:]:
                del env[r]
            _members(comp, root, deps, es, source, env)

    equal: list[tuple[Sym, int]] = [(env[r], v) for r, v in es.awaits]
    equal += [(_form(e, env), v) for e, v in es.guards]
    equal += [(_form(x, env), 0) for xs in es.value_sets.values() for _, x in xs]
    names: list = []
    for c in conds:
        _equalities(c, es, names)
    for a, b in names:
        if isinstance(b, str):
            if any(isinstance(s, Form) for s in _observed(a, es, env) + _observed(b, es, env)):
                raise _unsolved("a condition comparing two observables")
            continue
        if not isinstance(b, int):
            raise _unsolved("a condition on a floating-point value")
        equal += [(s, b) for s in _observed(a, es, env)]

    points: dict[int, set[int]] = {v: set() for v in domain}
    for s, k in equal:
        if not isinstance(s, Form):
            continue
        dom = domain[s.var]
        if s.w is None:
            v = k - s.d - s.c
        elif dom is None or dom[1] > s.w:
            raise _unsolved(f"a {s.w}-bit value of a wider cycle compared")
        elif 0 <= k - s.d < (1 << s.w):
            # the one v of the range with wrap_w(v + c) = k - d (w is at least the range's width)
            v = dom[0] + (k - s.d - s.c - dom[0]) % (1 << s.w)
        else:
            continue
        if dom is None or dom[0] <= v < dom[0] + (1 << dom[1]):
            points[s.var].add(v)
    for var, ps in points.items():
        lo = 0 if domain[var] is None else domain[var][0]
        fresh = next(n for n in range(lo, lo + len(ps) + 1) if n not in ps)
        if domain[var] is None or fresh < lo + (1 << domain[var][1]):
            ps.add(fresh)
    free = sorted(points)
    for pick in product(*(sorted(points[v]) for v in free)):
        at = dict(zip(free, pick))
        values = {r: s if isinstance(s, int) else s.at(at[s.var]) for r, s in env.items()}
        yield values


def _members(comp, root, deps, es, source, env) -> None:
    """The Forms of a cycle's reads other than its root (which env holds)."""
    busy: set[int] = set()

    def visit(r: int) -> None:
        if r in env:
            return
        if r in busy:
            raise _unsolved("more than one cycle")
        busy.add(r)
        for d in sorted(deps[r]):
            visit(d)
        env[r] = _form(es.write_value[source[r]], env)
        busy.discard(r)

    for r in comp:
        visit(r)


def _observed(name: str, es: EventStructure, env) -> list[Sym]:
    """The values an observable may have: a register's, or each final write's of a location."""
    if ":" in name:
        t, r = name.split(":", 1)
        e = es.registers.get((t, r))
        return [0] if e is None else [_form(e, env)]
    parts = [a for a, _ in es.compose.get(name, ())] or [name]
    out = [_form(es.write_value[w], env) for p in parts for w in es.final_writes.get(p, ())]
    if len(parts) > 1 and any(isinstance(s, Form) for s in out):
        raise _unsolved(f"'{name}', composed of byte ranges")
    return out or [0]
