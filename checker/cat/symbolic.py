"""The symbolic algebra: cat operators over edge tables of Z3 Boolean terms.

A set is a dict event -> term, a relation a dict (a, b) -> term, where a term is Python True or a
z3 BoolRef; a missing key means the edge cannot exist. Constants fold as they go, so only edges
that may exist get terms ("variables only for edges that may exist"). Every operator is exact:
the terms define the relation for every assignment of the dynamic base relations.
"""
from __future__ import annotations

import ctypes
from collections import defaultdict
from typing import Callable, Iterable

import z3

from .. import limits

TRUE = True


# Term constructors for Boolean terms already known to be z3 Booleans (of their own context). They
# call the C API directly: z3.And/Or/Not re-check the sort of every argument, which made them
# about 8x slower (bench/RESULTS.md), and the encoding builds tens of thousands of terms.
def mk_and(terms) -> z3.BoolRef:
    return _mk_n(_C_AND, z3.Z3_mk_and, terms)


def mk_or(terms) -> z3.BoolRef:
    return _mk_n(_C_OR, z3.Z3_mk_or, terms)


def mk_not(t: z3.BoolRef) -> z3.BoolRef:
    ctx = t.ctx
    return _made(ctx, _C_NOT(ctx.ctx, t.ast), z3.Z3_mk_not, t.ast)


def mk_implies(a: z3.BoolRef, b: z3.BoolRef) -> z3.BoolRef:
    ctx = a.ctx
    return _made(ctx, _C_IMPLIES(ctx.ctx, a.ast, b.ast), z3.Z3_mk_implies, a.ast, b.ast)


def mk_exactly_one(terms) -> z3.BoolRef:
    """The pseudo-Boolean constraint "exactly one of `terms` holds" (z3.PbEq([(t, 1), ...], 1),
    whose argument checks cost ~0.1 ms a call)."""
    terms = list(terms)
    ctx = terms[0].ctx
    args = (z3.Ast * len(terms))(*(t.ast for t in terms))
    ones = (ctypes.c_int * len(terms))(*([1] * len(terms)))
    return _made(ctx, _C_PBEQ(ctx.ctx, len(terms), args, ones, 1), z3.Z3_mk_pbeq, len(terms), args, ones, 1)


def _mk_lt(a: z3.ArithRef, b: z3.ArithRef) -> z3.BoolRef:
    ctx = a.ctx
    return _made(ctx, _C_LT(ctx.ctx, a.ast, b.ast), z3.Z3_mk_lt, a.ast, b.ast)


def _mk_n(raw, checked, terms) -> z3.BoolRef:
    terms = list(terms)
    ctx = terms[0].ctx
    args = (z3.Ast * len(terms))(*(t.ast for t in terms))
    return _made(ctx, raw(ctx.ctx, len(terms), args), checked, len(terms), args)


def _made(ctx: z3.Context, ast, checked, *args) -> "_Term":
    """The term `ast` that a raw C entry point returned; if it returned none (Z3 refused its
    arguments), the checked entry point called again raises Z3's error, as z3py would."""
    if not ast:
        checked(ctx.ctx, *args)
        raise z3.Z3Exception("Z3 made no term")
    return _Term(ast, ctx)


def _raw(name: str):
    """The C entry point behind z3core's wrapper `name` (which also reads the error code after
    every call); the wrapper itself where z3core is laid out otherwise."""
    fn = getattr(z3.z3core, name)
    try:
        return fn.__defaults__[0].f
    except (TypeError, IndexError, AttributeError):
        return fn


_C_AND, _C_OR, _C_INC, _C_DEC = (_raw(n) for n in ("Z3_mk_and", "Z3_mk_or", "Z3_inc_ref", "Z3_dec_ref"))
_C_NOT, _C_IMPLIES, _C_LT, _C_PBEQ = (_raw(n) for n in ("Z3_mk_not", "Z3_mk_implies", "Z3_mk_lt", "Z3_mk_pbeq"))


class _Term(z3.BoolRef):
    """A z3.BoolRef made by this module: its reference taken when it is made and dropped when it
    is freed as z3py does, through Z3's C entry points (z3py reads the error code after each
    call and looks the context up again: ~40% of what a term costs in Python, and the encoding
    of SB n = 6 makes ~1,300 of them; bench/RESULTS.md). The same calls in the same order: the
    same terms, with the same AST ids."""

    __slots__ = ()

    def __init__(self, ast, ctx: z3.Context):
        self.ast = ast
        self.ctx = ctx
        _C_INC(ctx.ctx, ast)

    def __del__(self):
        c = self.ctx.ctx
        if c is not None and self.ast is not None and _C_DEC is not None:
            _C_DEC(c, self.ast)
            self.ast = None


def t_or(terms: Iterable) -> object | None:
    out = []
    for t in terms:
        if t is None:
            continue
        if t is TRUE:
            return TRUE
        out.append(t)
    if not out:
        return None
    if len(out) == 1:
        return out[0]
    return mk_or(out)


def t_and(a, b):
    if a is None or b is None:
        return None
    if a is TRUE:
        return b
    if b is TRUE:
        return a
    return mk_and((a, b))


def t_not(a):
    if a is None:
        return TRUE
    if a is TRUE:
        return None
    return mk_not(a)


def as_bool(t, ctx: z3.Context) -> z3.BoolRef:
    if t is None:
        return z3.BoolVal(False, ctx)
    if t is TRUE:
        return z3.BoolVal(True, ctx)
    return t


def _put(d: dict, k, t) -> None:
    if t is not None:
        d[k] = t


class SymbolicAlgebra:
    """Implements checker.cat.algebra.Algebra over edge tables. Collects the definitions of the
    fresh variables it introduces in `self.definitions` (to be asserted with the encoding).

    With `name_lets`, every let-bound entry gets a named variable (`ms|3|5`, defined equal to its
    term). Off by default: Z3 terms are hash-consed, so a let-bound term is shared wherever it is
    used without a name, and the named variables only made the solver slower (measured in
    bench/RESULTS.md: fewer variables make model extraction 2-5x cheaper during enumeration)."""

    def __init__(self, universe: Iterable[int], ctx: z3.Context, name_lets: bool = False):
        self.events = tuple(sorted(universe))
        self.ctx = ctx
        self.name_lets = name_lets
        self.definitions: list = []
        self._labels: dict[str, int] = defaultdict(int)
        self._clocked: dict[int, tuple] = {}    # id of an acyclic constraint -> (it, relation)

    # constants
    def empty_set(self):
        return {}

    def universe(self):
        return {e: TRUE for e in self.events}

    def empty_rel(self):
        return {}

    def identity(self):
        return {(e, e): TRUE for e in self.events}

    # boolean operators (sets and relations alike)
    def union(self, a, b):
        out = dict(a)
        for k, t in b.items():
            out[k] = t_or((out.get(k), t))
        return out

    def inter(self, a, b, swap: bool | None = None):
        # (iterates the smaller operand; `swap`: the decision taken for the full values, when
        # a and b hold only some of their entries: checker.cat.demand)
        if len(b) < len(a) if swap is None else swap:
            a, b = b, a
        out = {}
        for k, t in a.items():
            if k in b:
                _put(out, k, t_and(t, b[k]))
        return out

    def diff(self, a, b):
        out = {}
        for k, t in a.items():
            _put(out, k, t_and(t, t_not(b.get(k))) if k in b else t)
        return out

    def set_complement(self, s):
        out = {}
        for e in self.events:
            _put(out, e, t_not(s.get(e)))
        return out

    def rel_complement(self, r):
        out = {}
        for a in self.events:
            for b in self.events:
                _put(out, (a, b), t_not(r.get((a, b))))
        return out

    # Operators restricted to the entries a consumer reads (checker.cat.demand): `want` is a
    # bitset of events, or a list of them (row a: the b of the pairs (a, b)). Each entry they
    # compute is the term the full operator gives it, built from the operands' entries in the
    # same order; the events are range(n).
    def set_complement_within(self, s, want: int):
        out = {}
        for e in self.events:
            if want >> e & 1:
                _put(out, e, t_not(s.get(e)))
        return out

    def rel_complement_within(self, r, want: list[int]):
        out = {}
        for a in self.events:
            row = want[a]
            if row:
                for b in self.events:
                    if row >> b & 1:
                        _put(out, (a, b), t_not(r.get((a, b))))
        return out

    def compose_within(self, a, b, want: list[int]):
        if not a or not b:
            return {}
        limits.check_deadline()
        ends = 0
        for row in want:
            ends |= row
        by_first = defaultdict(list)
        for (m, y), t in b.items():
            if ends >> y & 1:
                by_first[m].append((y, t))
        acc = defaultdict(list)
        for (x, m), t1 in a.items():
            row = want[x]
            if not row:
                continue
            for y, t2 in by_first.get(m, ()):
                if row >> y & 1:
                    acc[(x, y)].append(t_and(t1, t2))
        out = {}
        for k, ts in acc.items():
            _put(out, k, t_or(ts))
        return out

    def plus_within(self, r, ends: list[int], reach: list[int], want: list[int] | None = None):
        """plus(r)'s entries (i, j) with ends[i] & reach[j]: the pairs on a path from the start to
        the end of a demanded pair (ends[i]: the ends of the demanded pairs whose start reaches i;
        reach: r's possible reflexive-transitive closure). Warshall's terms for such a pair are
        built from such pairs alone, so they are the full closure's.

        With `want` (the demanded pairs, rows of bits), only the entries in `want` are returned,
        and an entry is no longer updated once nothing will read it: Warshall's step k reads the
        entries (i, k) and (k, j), so after the steps of both i and j an entry is read only as
        the result, and one outside `want` not even then (about half the updates of the
        attention skeleton's closure). Every entry that is read gets the same term as before."""
        # The terms are Z3's own ASTs, built through its C entry points (t_or((old, t_and(ti, tj)))
        # case by case, the same terms in the same order): the closure of a real kernel's skeleton
        # builds ~10^6 of them, and a z3.BoolRef per term (with its checked calls and reference
        # counting) was most of the encoding. Each built term is referenced until the entries
        # returned are z3.BoolRefs again (those the caller drops were freed by it before).
        succ: dict[int, dict[int, object]] = defaultdict(dict)
        pred: dict[int, dict[int, object]] = defaultdict(dict)
        for (a, b), t in r.items():
            if ends[a] & reach[b]:
                t = t if t is TRUE else t.as_ast()
                succ[a][b] = t
                pred[b][a] = t
        nodes = sorted(set(succ) & set(pred))
        later = 0           # the nodes whose step is still to come (want: else every one)
        for k in nodes:
            later |= 1 << k
        if want is None:
            want = [-1] * (max(len(ends), max(nodes, default=0) + 1))
        c = self.ctx.ref()
        mk_and, mk_or, inc = _C_AND, _C_OR, _C_INC
        pair = (z3.Ast * 2)()
        made: list = []
        try:
            for n, k in enumerate(nodes):
                if not n & 0x3F:
                    limits.check_deadline()
                later &= ~(1 << k)
                ins = list(pred[k].items())
                outs = list(succ[k].items())
                for i, ti in ins:
                    row, wanted = succ[i], ends[i]
                    read = -1 if later >> i & 1 else later | want[i]      # the j whose (i, j) is read
                    for j, tj in outs:
                        if wanted & reach[j] and read >> j & 1:
                            old = row.get(j)
                            if old is TRUE:     # (t_or's answer: no conjunction to build)
                                continue
                            if ti is TRUE:
                                t = tj
                            elif tj is TRUE:
                                t = ti
                            else:
                                pair[0], pair[1] = ti, tj
                                t = mk_and(c, 2, pair)
                                inc(c, t)
                                made.append(t)
                            if old is not None and t is not TRUE:
                                pair[0], pair[1] = old, t
                                t = mk_or(c, 2, pair)
                                inc(c, t)
                                made.append(t)
                            row[j] = t
                            pred[j][i] = t
            ctx = self.ctx
            return {(a, b): (t if t is TRUE else _Term(t, ctx)) for a in sorted(succ) for b, t in succ[a].items()
                    if want[a] >> b & 1}
        finally:
            dec = _C_DEC
            for t in made:
                dec(c, t)

    # relations
    def compose(self, a, b):
        if not a or not b:      # (most compositions of a test: its events use few of the model's relations)
            return {}
        limits.check_deadline()     # (up to n^3 terms: the test's time bounds them)
        by_first = defaultdict(list)
        for (m, y), t in b.items():
            by_first[m].append((y, t))
        acc = defaultdict(list)
        for (x, m), t1 in a.items():
            for y, t2 in by_first.get(m, ()):
                acc[(x, y)].append(t_and(t1, t2))
        out = {}
        for k, ts in acc.items():
            _put(out, k, t_or(ts))
        return out

    def inverse(self, r):
        return {(b, a): t for (a, b), t in r.items()}

    def plus(self, r):
        # Warshall's algorithm, run on terms: exact for every assignment. It is plus_within with
        # nothing left out (every pair on every path, every entry wanted): the same terms in the
        # same order as t_or((succ[i].get(j), t_and(ti, tj))) step by step, built through Z3's
        # C entry points (a z3.BoolRef per intermediate term was ~a third of a small test's
        # encoding: SB n = 6). Rows in event order.
        if not r:
            return {}
        every = [-1] * (max(max(a, b) for a, b in r) + 1)
        return self.plus_within(r, every, every)

    def star(self, r):
        return self.union(self.plus(r), self.identity())

    def opt(self, r):
        return self.union(r, self.identity())

    def ident(self, s):
        return {(e, e): t for e, t in s.items()}

    def product(self, s, t):
        out = {}
        for a, ta in s.items():
            for b, tb in t.items():
                _put(out, (a, b), t_and(ta, tb))
        return out

    def domain(self, r):
        acc = defaultdict(list)
        for (a, _), t in r.items():
            acc[a].append(t)
        return {a: t_or(ts) for a, ts in acc.items()}

    def range(self, r):
        acc = defaultdict(list)
        for (_, b), t in r.items():
            acc[b].append(t)
        return {b: t_or(ts) for b, ts in acc.items()}

    # naming
    def fresh_label(self, label: str) -> str:
        self._labels[label] += 1
        n = self._labels[label]
        return label if n == 1 else f"{label}#{n}"

    def bind(self, value, label: str, deep: bool = False):
        """Name every non-constant entry with a fresh variable `label|a|b` (defined equal to it),
        if the algebra names lets or the value is deep (checker.cat.interp.deep_bindings)."""
        if not (self.name_lets or deep):
            return value
        label = self.fresh_label(label)
        out = {}
        for k, t in value.items():
            if t is TRUE:
                out[k] = t
                continue
            key = "|".join(map(str, k)) if isinstance(k, tuple) else str(k)
            v = z3.Bool(f"{label}|{key}", self.ctx)
            self.definitions.append(v == t)
            out[k] = v
        return out

    def fix(self, step: Callable[[tuple], tuple], start: tuple, label: str) -> tuple:
        # Kleene iteration. For a fixed assignment each round adds an edge or stops, so after
        # (number of possible edges + 1) rounds the terms define the least fixpoint.
        cur = tuple(self.bind(v, f"{label}@0") for v in start)
        bound = 1
        for rnd in range(1, 10_000):
            nxt = step(cur)
            keys_same = all(set(a) == set(b) for a, b in zip(cur, nxt))
            if keys_same and all(all(_same(a[k], b[k]) for k in a) for a, b in zip(cur, nxt)):
                return nxt
            cur = tuple(self.bind(v, f"{label}@{rnd}") for v in nxt)
            bound = max(bound, sum(len(v) for v in cur) + 1)
            if rnd > bound:
                return cur
        raise RuntimeError("fixpoint did not converge")

    # checks
    def acyclic(self, r, label: str):
        label = self.fresh_label(label)
        cons = []
        clk = {}
        for (a, b), t in r.items():
            if a == b:
                cons.append(t_not(t))
                continue
            for e in (a, b):
                if e not in clk:
                    clk[e] = z3.Int(f"clk|{label}|{e}", self.ctx)
            lt = _mk_lt(clk[a], clk[b])
            cons.append(lt if t is TRUE else mk_implies(t, lt))
        c = _conj(cons, self.ctx)
        if clk and not z3.is_false(c):
            self._clocked[c.get_id()] = (c, r)
        return c

    def irreflexive(self, r, label: str):
        return _conj([t_not(t) for (a, b), t in r.items() if a == b], self.ctx)

    def is_empty(self, v, label: str):
        return _conj([t_not(t) for t in v.values()], self.ctx)

    def negate(self, c):
        # The clocks of an acyclic constraint are existential: Not(it) would claim "no clock
        # assignment orders these edges" only under a quantifier. A cycle is stated directly:
        # some event reaches itself in the closure.
        hit = self._clocked.get(c.get_id())
        if hit is not None and hit[0].eq(c):
            closure = self.plus(hit[1])
            return _disj([t for (a, b), t in closure.items() if a == b], self.ctx)
        return mk_not(c)


def _same(a, b) -> bool:
    if a is TRUE or b is TRUE:
        return a is b
    return a.eq(b)


def _disj(terms: list, ctx: z3.Context) -> z3.BoolRef:
    return as_bool(t_or(terms), ctx)


def _conj(cons: list, ctx: z3.Context) -> z3.BoolRef:
    if any(c is None for c in cons):
        return z3.BoolVal(False, ctx)
    rest = [c for c in cons if c is not TRUE]
    if not rest:
        return z3.BoolVal(True, ctx)
    return mk_and(rest) if len(rest) > 1 else rest[0]
