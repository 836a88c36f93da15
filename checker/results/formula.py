r"""A compact formula (herd condition syntax) for a set of outcomes, via sympy's SOPform with the
impossible assignments (a variable with two values, or none) as don't-cares.

The formula describes exactly the set over the values each observable takes in it: every
observable is named, so a value that no outcome has is visibly absent -- a variable with one
value is a conjunct (`x=3`), and one the minimised formula does not constrain is listed with its
values (`(P0:r0=0 \/ P0:r0=1)`). "true" only for an empty projection.

sympy takes ~0.3 s to import, more than the rest of `ptxmc outcomes` on a small test, so the
common small cases do without it: every combination of values occurring leaves the variables
unconstrained, and a set over two varying variables, one of them two-valued and the other with
at most four values (two registers, typically), gets an exact minimum cover computed here, which
on those shapes is SOPform's answer itself (tests/test_formula.py compares them on every such set)."""
from __future__ import annotations

from itertools import combinations as subsets, product

from ..ast import value_text
from .result import Outcome

MAX_ATOMS = 7   # SOPform with don't-cares is exponential in the atoms: ~2 s at 8


def compact(outcomes: list[Outcome]) -> str:
    if not outcomes:
        return "false"
    keys = [k for k, _ in outcomes[0]]
    domains = {k: sorted({dict(o)[k] for o in outcomes}) for k in keys}
    fixed = [f"{k}={value_text(domains[k][0])}" for k in keys if len(domains[k]) == 1]
    varying = [k for k in keys if len(domains[k]) > 1]
    if not varying:
        return " /\\ ".join(fixed) or "true"
    core, mentioned = _core(outcomes, keys, domains)
    free = [_alts(k, domains[k]) for k in varying if k not in mentioned]
    parts = fixed + free + ([] if core == "true" else [core if " \\/ " not in core or len(fixed + free) == 0
                                                       else f"({core})"])
    return " /\\ ".join(parts)


def _alts(k: str, values) -> str:
    return "(" + " \\/ ".join(f"{k}={value_text(v)}" for v in values) + ")"


def _core(outcomes: list[Outcome], keys: list[str], domains: dict) -> tuple[str, set[str]]:
    """The formula over the variables with several values, and the variables it mentions."""
    atoms = [(k, v) for k in keys for v in domains[k] if len(domains[k]) > 1]
    combinations = 1
    for k in keys:
        combinations *= len(domains[k])
    if len(set(outcomes)) == combinations:     # every combination occurs: no constraint (and no sympy)
        return "true", set()
    varying = sorted(len(domains[k]) for k in keys if len(domains[k]) > 1)
    if len(varying) == 2 and varying[0] == 2 and varying[1] <= 4:
        return _minimum_cover(outcomes, atoms, domains), {k for k, _ in atoms}
    if len(atoms) > MAX_ATOMS:
        return _merged(outcomes, keys, domains)
    from sympy import Symbol
    from sympy.logic import SOPform

    syms = [Symbol(f"a{i}") for i in range(len(atoms))]
    index = {a: i for i, a in enumerate(atoms)}
    minterms = []
    for o in outcomes:
        bits = [0] * len(atoms)
        for k, v in o:
            if (k, v) in index:
                bits[index[(k, v)]] = 1
        minterms.append(bits)
    valid = set()
    for combo in product(*(domains[k] for k in keys if len(domains[k]) > 1)):
        bits = [0] * len(atoms)
        for k, v in zip([k for k in keys if len(domains[k]) > 1], combo):
            bits[index[(k, v)]] = 1
        valid.add(tuple(bits))
    dontcares = [list(b) for b in product((0, 1), repeat=len(atoms)) if b not in valid]
    expr = SOPform(syms, minterms, dontcares)
    mentioned = {atoms[syms.index(sym)][0] for sym in getattr(expr, "free_symbols", ())}
    return _show(expr, atoms, syms, domains), mentioned


def _show(expr, atoms, syms, domains) -> str:
    from sympy import And, Not, Or

    name = {s: f"{k}={value_text(v)}" for s, (k, v) in zip(syms, atoms)}
    # ~(k=v) over a two-valued k reads better as k=other.
    negated = {s: f"{k}={value_text([d for d in domains[k] if d != v][0])}" if len(domains[k]) == 2
               else f"~{k}={value_text(v)}"
               for s, (k, v) in zip(syms, atoms)}

    def go(e, top=False) -> str:
        if e is True or str(e) == "True":
            return "true"
        if e in name:
            return name[e]
        if isinstance(e, Not) and e.args[0] in negated:
            return negated[e.args[0]]
        if isinstance(e, Not):
            return "~" + go(e.args[0])
        if isinstance(e, And):
            s = " /\\ ".join(sorted(go(a) for a in e.args))
            return s if top else f"({s})"
        if isinstance(e, Or):
            return " \\/ ".join(sorted(go(a) for a in e.args))
        return str(e)

    return go(expr, top=not isinstance(expr, Or)) if not isinstance(expr, Or) else go(expr)


def _merged(outcomes: list[Outcome], keys: list[str], domains: dict) -> str:
    """Greedy multi-valued cube merging (for sets too large for SOPform): two cubes that agree on
    every variable but one merge into one whose set for that variable is the union; a variable
    that takes every value of its domain is dropped. Not always minimal; always exact."""
    cubes = {tuple(frozenset((dict(o)[k],)) for k in keys) for o in outcomes}
    changed = True
    while changed:
        changed = False
        for i in range(len(keys)):
            groups: dict[tuple, set] = {}
            for c in cubes:
                groups.setdefault(c[:i] + c[i + 1:], set()).add(c[i])
            merged = {rest[:i] + (frozenset().union(*vals),) + rest[i:] for rest, vals in groups.items()}
            if len(merged) < len(cubes):
                cubes, changed = merged, True
    full = {k: frozenset(domains[k]) for k in keys}

    def term(c) -> str:
        parts = []
        for k, vals in zip(keys, c):
            if vals == full[k]:
                continue
            alts = [f"{k}={value_text(v)}" for v in sorted(vals)]
            parts.append(alts[0] if len(alts) == 1 else "(" + " \\/ ".join(alts) + ")")
        return " /\\ ".join(parts) if parts else "true"

    mentioned = {k for c in cubes for k, vals in zip(keys, c) if vals != full[k]}
    terms = sorted(term(c) for c in cubes)
    if len(terms) == 1:
        return terms[0], mentioned
    return " \\/ ".join(t if " /\\ " not in t else f"({t})" for t in terms), mentioned


def _minimum_cover(outcomes: list[Outcome], atoms: list[tuple[str, int]], domains: dict) -> str:
    """The sum of products with the fewest terms, then the fewest literals (ties: the first text),
    over the atoms `k=v`, with the impossible assignments as don't-cares: cubes are tuples of
    1 / 0 / None (the atom holds / does not / either), for at most six atoms."""
    index = {a: i for i, a in enumerate(atoms)}
    varying = list(dict.fromkeys(k for k, _ in atoms))

    def point(values: dict) -> tuple[int, ...]:
        bits = [0] * len(atoms)
        for k in varying:
            bits[index[(k, values[k])]] = 1
        return tuple(bits)

    on = {point(dict(o)) for o in outcomes}
    off = {point(dict(zip(varying, combo))) for combo in product(*(domains[k] for k in varying))} - on

    def covers(cube, p) -> bool:
        return all(c is None or c == b for c, b in zip(cube, p))

    implicants = [c for c in product((1, 0, None), repeat=len(atoms))
                  if any(covers(c, p) for p in on) and not any(covers(c, p) for p in off)]
    primes = [c for c in implicants if not any(d != c and _within(c, d) for d in implicants)]
    reach = {c: frozenset(p for p in on if covers(c, p)) for c in primes}
    for size in range(1, len(primes) + 1):
        found = [combo for combo in subsets(primes, size) if frozenset().union(*(reach[c] for c in combo)) == on]
        if found:
            return min((sum(x is not None for c in combo for x in c), _text(combo, atoms, domains))
                       for combo in found)[1]
    raise AssertionError("no cover of the outcome set")     # the outcomes themselves are one


def _within(a, b) -> bool:
    """Cube a lies inside cube b."""
    return all(y is None or x == y for x, y in zip(a, b))


def _text(cover, atoms, domains) -> str:
    """A cover as _show prints SOPform's answer: k=v, a two-valued k's other value for ~(k=v),
    literals sorted within a term, terms sorted, parenthesised when there are several."""
    def literal(i: int, holds: int) -> str:
        k, v = atoms[i]
        if holds:
            return f"{k}={value_text(v)}"
        other = [d for d in domains[k] if d != v]
        return f"{k}={value_text(other[0])}" if len(domains[k]) == 2 else f"~{k}={value_text(v)}"

    terms = [sorted(literal(i, x) for i, x in enumerate(c) if x is not None) for c in cover]
    if len(terms) == 1:
        return " /\\ ".join(terms[0]) or "true"
    return " \\/ ".join(sorted(t[0] if len(t) == 1 else "(" + " /\\ ".join(t) + ")" for t in terms))
