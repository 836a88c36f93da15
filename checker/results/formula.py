"""A compact formula (herd condition syntax) for a set of outcomes, via sympy's SOPform with the
impossible assignments (a variable with two values, or none) as don't-cares."""
from __future__ import annotations

from itertools import product

from .result import Outcome

MAX_ATOMS = 7   # SOPform with don't-cares is exponential in the atoms: ~2 s at 8


def compact(outcomes: list[Outcome]) -> str:
    if not outcomes:
        return "false"
    keys = [k for k, _ in outcomes[0]]
    domains = {k: sorted({dict(o)[k] for o in outcomes}) for k in keys}
    atoms = [(k, v) for k in keys for v in domains[k] if len(domains[k]) > 1]
    if not atoms:
        return "true"
    combinations = 1
    for k in keys:
        combinations *= len(domains[k])
    if len(set(outcomes)) == combinations:     # every combination occurs: no constraint (and no sympy)
        return "true"
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
    return _show(expr, atoms, syms, domains)


def _show(expr, atoms, syms, domains) -> str:
    from sympy import And, Not, Or

    name = {s: f"{k}={v}" for s, (k, v) in zip(syms, atoms)}
    # ~(k=v) over a two-valued k reads better as k=other.
    negated = {s: f"{k}={[d for d in domains[k] if d != v][0]}" if len(domains[k]) == 2 else f"~{k}={v}"
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
            alts = [f"{k}={v}" for v in sorted(vals)]
            parts.append(alts[0] if len(alts) == 1 else "(" + " \\/ ".join(alts) + ")")
        return " /\\ ".join(parts) if parts else "true"

    terms = sorted(term(c) for c in cubes)
    if len(terms) == 1:
        return terms[0]
    return " \\/ ".join(t if " /\\ " not in t else f"({t})" for t in terms)
