"""What a violated axiom shows on one execution, as a path of named relations.

A check fails on a concrete relation value: a cycle (acyclic), a self-loop (irreflexive), an edge
(empty). `violation_path` turns that into steps `(a, name, b)` by walking the check's cat
expression: a union picks the member holding the edge, a sequence finds the middle event, a
closure the path, `[S]` steps vanish, and an intersection or difference follows its left side
(the carrier; the right side only filters). Names stop the walk: `e7 -fr-> e2 -cause-> e7` is in
the model's own vocabulary. Let-bound names defined as a plain union of names (`com = rf | co |
fr`) are opened, so the step names the member.
"""
from __future__ import annotations

from collections import deque

from .ast import Binary, Check, Expr, IfOption, Let, Unary, Var, format_expr
from .concrete import ConcreteAlgebra, find_cycle
from .interp import Model, evaluate_expr

Step = tuple[int, str, int]


class _Walker:
    def __init__(self, model: Model, base: dict, env: dict, n_events: int, options=frozenset()):
        self.alg = ConcreteAlgebra(range(n_events))
        self.options = frozenset(options)
        self.env = {**base, **env}
        self.defs = {b.name: b.expr for st in model.statements if isinstance(st, Let) and not st.rec
                     for b in st.bindings}
        self.cache: dict[Expr, frozenset] = {}

    def value(self, e: Expr) -> frozenset:
        if e not in self.cache:
            kind, v = evaluate_expr(e, self.env, self.alg, self.options)
            self.cache[e] = v if kind == "rel" else frozenset()
        return self.cache[e]

    def _union_of_names(self, e: Expr) -> bool:
        if isinstance(e, Var):
            return True
        return isinstance(e, Binary) and e.op == "|" and self._union_of_names(e.left) and self._union_of_names(e.right)

    def steps(self, e: Expr, a: int, b: int, depth: int = 0) -> list[Step]:
        if depth > 40:
            return [(a, format_expr(e), b)]
        match e:
            case Var(name=name):
                d = self.defs.get(name)
                if d is not None and not isinstance(d, Var) and self._union_of_names(d):
                    return self.steps(d, a, b, depth + 1)
                return [(a, name, b)]
            case IfOption(option=o, then=t, orelse=f):
                return self.steps(t if o in self.options else f, a, b, depth + 1)
            case Binary(op="|", left=l, right=r):
                side = l if (a, b) in self.value(l) else r
                return self.steps(side, a, b, depth + 1)
            case Binary(op=";", left=l, right=r):
                lv, rv = self.value(l), self.value(r)
                mids = sorted(m for x, m in lv if x == a and (m, b) in rv)
                if not mids:
                    return [(a, format_expr(e), b)]
                return self.steps(l, a, mids[0], depth + 1) + self.steps(r, mids[0], b, depth + 1)
            case Binary(op="&" | "\\", left=l):
                if (a, b) in self.value(l):
                    return self.steps(l, a, b, depth + 1)
            case Unary(op="[]"):
                return []
            case Unary(op="^-1", arg=x):
                return [(p, f"{n}^-1", q) for q, n, p in reversed(self.steps(x, b, a, depth + 1))]
            case Unary(op="+" | "*" | "?", arg=x):
                if a == b and e.op != "+":
                    return []
                path = _path(self.value(x), a, b)
                if path:
                    out: list[Step] = []
                    for p, q in zip(path, path[1:]):
                        out += self.steps(x, p, q, depth + 1)
                    return out
        return [(a, format_expr(e), b)]


def _path(rel, a: int, b: int) -> list[int] | None:
    """A shortest path a -> ... -> b of at least one edge in `rel` (deterministic)."""
    succ: dict[int, list[int]] = {}
    for x, y in sorted(rel):
        succ.setdefault(x, []).append(y)
    parent: dict[int, int] = {}
    queue = deque([a])
    while queue:
        x = queue.popleft()
        for y in succ.get(x, ()):
            if y == b:
                path = [b, x]
                while path[-1] != a:
                    path.append(parent[path[-1]])
                return path[::-1]
            if y not in parent:
                parent[y] = x
                queue.append(y)
    return None


def violation_path(model: Model, check: Check, value, base: dict, env: dict, n_events: int,
                   options=frozenset()) -> list[Step]:
    """The steps that show `check` failing: a cycle (acyclic, irreflexive) or a path (empty).
    `value` is the check's (kind, concrete value) from concrete_evaluation; [] if it holds."""
    kind, v = value
    if kind != "rel" or not v:
        return []
    w = _Walker(model, base, env, n_events, options)
    if check.kind == "acyclic":
        cyc = find_cycle(v)
        if not cyc:
            return []
        out: list[Step] = []
        for p, q in zip(cyc, cyc[1:] + cyc[:1]):
            out += w.steps(check.expr, p, q)
        return out
    if check.kind == "irreflexive":
        loops = sorted(x for x, y in v if x == y)
        return w.steps(check.expr, loops[0], loops[0]) if loops else []
    a, b = min(v)
    return w.steps(check.expr, a, b)


def note(check: Check) -> str:
    """What a path alone does not say: for `empty X \\ Y`, that the edge is missing from Y."""
    if check.kind == "empty" and isinstance(check.expr, Binary) and check.expr.op == "\\":
        return f"and not in {format_expr(check.expr.right)}"
    return ""


def show(steps: list[Step]) -> str:
    """`e7 -fr-> e2 -cause-> e7`."""
    if not steps:
        return ""
    out = f"e{steps[0][0]}"
    for _, name, b in steps:
        out += f" -{name}-> e{b}"
    return out
