"""Demand-driven symbolic evaluation: build a term only for the entries a check can need.

The symbolic algebra (checker.cat.symbolic) already leaves out the entries that cannot exist (the
may-sets of Dat3M's relation analysis). What it still builds is every possible entry of every
`let`, whether any check reads it or not: for a skeleton of a real kernel (~450 events) the
cumulative relations of ptx.cat (base causality, the execution-ordering order of tcgen05) have
~10^5 possible entries each, and their compositions cost minutes of term building, while the
checks read a few thousand of them (the pairs on one location, the events of one instruction
kind). This is Dat3M's second analysis, the *active sets*, done on the cat text's operators:

1. **Bounds.** The residual model is evaluated over checker.cat.bounds: for every node, the
   entries its symbolic value has (may) and those that are the constant True (must), on bitsets.
2. **Demand.** From the checks back to the base, every node gets the set of its entries that
   its consumers read: a flag, `acyclic` or `empty` check reads every entry of its value (a flag's
   relation is also reported edge by edge); `irreflexive` the diagonal. A consumer's demand
   passes to its operands by the operator's definition alone: for `a ; b`, entry (x, m) of a and
   (m, y) of b for each demanded (x, y) and each m that both may relate; for `r+`, the edges of r
   that lie on a possible path between the two ends of a demanded pair; for `a & b`, the demanded
   entries both may have; and so on, for every operator. A `let`'s demand is the union of its
   uses'.
3. **Evaluation.** The model is evaluated symbolically as before, each operator computing only
   its node's demanded entries: a node nobody reads is not evaluated at all.

Why it is exact: every operator's entry at a key is a function of its operands' entries at the
keys the demand rule names, so by induction from the operands each demanded entry gets the very
term the full evaluation gives it (the same disjuncts in the same order: a restricted operator
visits its operands' entries in their order, and the order of a value's entries is the full
value's order with some left out), and each check reads only demanded entries: its constraint
is the same term. tests/cat/test_demand.py compares every check's constraint, and every flag's
value, with the full evaluation's on the bundled suites' tests.

A model with `let rec` is evaluated in full (the symbolic fixpoint's rounds are its own).
Nothing here knows a name of ptx.cat: the analysis reads the operators only.
"""
from __future__ import annotations

from typing import Mapping

from .ast import Binary, Check, IfOption, Let, Unary, Var
from .bounds import BoundsAlgebra, bits, closure, from_symbolic, popcount, transpose
from .interp import REL, SET, Evaluation, Model, _Evaluator, check_base, evaluate as evaluate_full
from .symbolic import TRUE, SymbolicAlgebra


def evaluate(model: Model, base: Mapping[str, tuple[str, dict]], algebra: SymbolicAlgebra,
             options: frozenset[str] = frozenset()) -> Evaluation:
    """checker.cat.interp.evaluate over the symbolic algebra, each check's constraint and each
    flag's value the same, every let-bound value holding only the entries the checks read."""
    if any(isinstance(st, Let) and st.rec for st in model.statements):
        return evaluate_full(model, base, algebra, options)
    check_base(model, {name: kind for name, (kind, _) in base.items()})
    n = len(algebra.events)
    if algebra.events != tuple(range(n)):
        return evaluate_full(model, base, algebra, options)
    bounds = {name: (kind, from_symbolic(v, n, kind == REL, TRUE)) for name, (kind, v) in base.items()}
    rec = _Recorder(BoundsAlgebra(n), frozenset(options), skip_absorbed=model.checked)
    rec.run(model.statements, bounds)
    demands = _Demands(rec, n)
    demands.propagate_model(model.statements)
    ev = _Restricted(algebra, frozenset(options), skip_absorbed=model.checked)
    ev.demands, ev.nodes = demands.node, rec.nodes
    return ev.run(model.statements, base)


class _Info:
    """What the bounds pass learnt of one node: its kind and bound; for a `+`/`*` node, the
    rows its restricted closure needs (checker.cat.symbolic.SymbolicAlgebra.plus_within)."""

    __slots__ = ("node", "kind", "bound", "closure")

    def __init__(self, node, kind, bound):
        self.node, self.kind, self.bound = node, kind, bound
        self.closure = None


class _Recorder(_Evaluator):
    """The interpreter over bounds, recording every node it evaluates and, for every name it
    looks up, which binding (an environment entry) it found."""

    def run(self, statements, base):
        self.nodes: dict[int, _Info] = {}
        self.target: dict[int, int] = {}          # id(Var node) -> id(its environment entry)
        self.entries: dict[int, tuple] = {}       # id(entry) -> the entry (kept alive)
        self.bound_by: dict[int, list] = {}       # id(Let) -> ids of the entries it binds
        self.base_entries = base
        for entry in base.values():
            self.entries[id(entry)] = entry
        return super().run(statements, base)

    def let(self, st, env):
        bound = super().let(st, env)
        self.bound_by[id(st)] = []
        for b in st.bindings:
            entry = bound[b.name]
            self.entries[id(entry)] = entry
            self.bound_by[id(st)].append((b, id(entry)))
        return bound

    def expr(self, e, env):
        out = super().expr(e, env)
        if isinstance(e, Var):
            entry = env[e.name]
            self.target[id(e)] = id(entry)
            self.entries[id(entry)] = entry
        self.nodes[id(e)] = _Info(e, out[0], out[1])
        return out


class _Demands:
    """Demand per node (and per binding), propagated from the checks back to the base."""

    def __init__(self, rec: _Recorder, n: int):
        self.rec = rec
        self.n = n
        self.node: dict[int, object] = {}        # id(node) -> demand (int / rows)
        self.entry: dict[int, object] = {}       # id(environment entry) -> demand

    def propagate_model(self, statements) -> None:
        for st in reversed(statements):
            if isinstance(st, Check):
                info = self.rec.nodes.get(id(st.expr))
                if info is None:
                    continue
                may = info.bound.may
                if st.kind == "irreflexive" and info.kind == REL:
                    want = [row & (1 << x) for x, row in enumerate(may)]
                else:
                    want = may          # a flag, acyclic or empty check reads all of it
                self.push(st.expr, want)
            else:
                for b, entry in self.rec.bound_by.get(id(st), ()):
                    want = self.entry.get(entry)
                    if want is not None:
                        self.push(b.expr, want)

    def push(self, e, want) -> None:
        info = self.rec.nodes.get(id(e))
        if info is None:        # never evaluated (an operand next to an empty one)
            return
        want = _meet(want, info.bound.may)
        if not _any(want):
            return
        old = self.node.get(id(e))
        if old is not None:
            want = _join(old, want)
            if _equal(want, old):
                return
        self.node[id(e)] = want
        if isinstance(e, Var):
            entry = self.rec.target[id(e)]
            have = self.entry.get(entry)
            self.entry[entry] = want if have is None else _join(have, want)
        elif isinstance(e, IfOption):
            self.push(e.then, want)
            self.push(e.orelse, want)       # (only the branch evaluated was recorded)
        elif isinstance(e, Binary):
            self.binary(e, want)
        elif isinstance(e, Unary):
            self.unary(e, info, want)

    def may(self, e):
        info = self.rec.nodes.get(id(e))
        return None if info is None else info.bound.may

    def binary(self, e: Binary, want) -> None:
        op = e.op
        if op in ("|", "\\"):
            self.push(e.left, want)
            self.push(e.right, want)
        elif op == "&":
            a, b = self.may(e.left), self.may(e.right)
            if a is not None and b is not None:
                both = _meet(_meet(want, a), b)
                self.push(e.left, both)
                self.push(e.right, both)
        elif op == ";":
            a, b = self.may(e.left), self.may(e.right)
            if a is None or b is None:
                return
            wa, wb = [0] * self.n, [0] * self.n
            for x, row in enumerate(want):
                if not row:
                    continue
                for m in bits(a[x]):
                    hit = b[m] & row
                    if hit:
                        wa[x] |= 1 << m
                        wb[m] |= hit
            self.push(e.left, wa)
            self.push(e.right, wb)
        else:                   # the product of two sets
            firsts = 0
            seconds = 0
            for x, row in enumerate(want):
                if row:
                    firsts |= 1 << x
                    seconds |= row
            self.push(e.left, firsts)
            self.push(e.right, seconds)

    def unary(self, e: Unary, info: _Info, want) -> None:
        op = e.op
        if op in ("~", "?"):
            self.push(e.arg, want)
        elif op == "[]":
            self.push(e.arg, sum(1 << x for x, row in enumerate(want) if row >> x & 1))
        elif op == "^-1":
            self.push(e.arg, transpose(want))
        elif op == "domain":
            arg = self.may(e.arg)
            if arg is not None:
                self.push(e.arg, [arg[x] if want >> x & 1 else 0 for x in range(self.n)])
        elif op == "range":
            arg = self.may(e.arg)
            if arg is not None:
                self.push(e.arg, [row & want for row in arg])
        else:                   # '+' and '*': the edges on a path between a demanded pair
            arg = self.may(e.arg)
            if arg is None:
                return
            reach = closure(arg)
            reach = [row | (1 << x) for x, row in enumerate(reach)]     # reflexive
            # ends[u]: the ends y of the demanded pairs (x, y) whose start x reaches u
            ends = [0] * self.n
            for x, row in enumerate(want):
                if row:
                    for u in bits(reach[x]):
                        ends[u] |= row
            info.closure = (ends, reach)
            self.push(e.arg, [_edges_on_paths(arg[u], ends[u], reach) if ends[u] else 0
                              for u in range(self.n)])


def _edges_on_paths(row: int, ends: int, reach: list[int]) -> int:
    out = 0
    for v in bits(row):
        if reach[v] & ends:
            out |= 1 << v
    return out


class _Restricted(_Evaluator):
    """The interpreter over the symbolic algebra, each node computing only its demanded entries."""

    demands: dict[int, object]
    nodes: dict[int, _Info]

    def expr(self, e, env):
        if isinstance(e, Var):
            return super().expr(e, env)
        info = self.nodes.get(id(e))
        if info is None:
            return super().expr(e, env)
        if id(e) not in self.demands:       # no consumer reads it
            return info.kind, (self.alg.empty_set() if info.kind == SET else self.alg.empty_rel())
        return super().expr(e, env)

    def binary(self, e, ka, a, kb, b):
        want = self.demands.get(id(e))
        if want is None:
            return super().binary(e, ka, a, kb, b)
        alg = self.alg
        op = e.op
        if op == ";":
            return REL, alg.compose_within(a, b, want)
        if op == "*":
            return REL, _only(alg.product(a, b), want)
        a, b = _only(a, want), _only(b, want)
        if op == "|":
            return ka or kb, alg.union(a, b)
        if op == "\\":
            return ka or kb, alg.diff(a, b)
        # `&` iterates its smaller operand: which one is decided on the full values' sizes
        left, right = self.nodes[id(e.left)].bound.may, self.nodes[id(e.right)].bound.may
        return ka or kb, alg.inter(a, b, swap=popcount(right) < popcount(left))

    def unary(self, e, k, v):
        want = self.demands.get(id(e))
        if want is None:
            return super().unary(e, k, v)
        alg = self.alg
        op = e.op
        if op == "~":
            return k, (alg.set_complement_within(v, want) if k == SET else alg.rel_complement_within(v, want))
        if op == "[]":
            return REL, alg.ident(_only(v, sum(1 << x for x, row in enumerate(want) if row >> x & 1)))
        if op == "domain":
            return SET, alg.domain(_only(v, [-1 if want >> x & 1 else 0 for x in range(len(alg.events))]))
        if op == "range":
            return SET, alg.range(_only(v, [want] * len(alg.events)))
        if op == "^-1":
            return REL, alg.inverse(_only(v, transpose(want)))
        if op == "?":
            return REL, alg.union(_only(v, want), _only(alg.identity(), want))
        ends, reach = self.nodes[id(e)].closure
        closed = alg.plus_within(v, ends, reach, want)
        if op == "*":
            return REL, alg.union(closed, _only(alg.identity(), want))
        return REL, closed


def _only(value: dict, want) -> dict:
    """The entries of a symbolic value that `want` (bits, or rows of bits) names, in order."""
    if isinstance(want, int):
        return {e: t for e, t in value.items() if want >> e & 1}
    return {k: t for k, t in value.items() if want[k[0]] >> k[1] & 1}


def _meet(a, b):
    if isinstance(a, int):
        return a & b
    return [x & y for x, y in zip(a, b)]


def _join(a, b):
    if isinstance(a, int):
        return a | b
    return [x | y for x, y in zip(a, b)]


def _any(a) -> bool:
    return bool(a) if isinstance(a, int) else any(a)


def _equal(a, b) -> bool:
    return a == b
