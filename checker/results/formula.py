r"""A compact formula (herd condition syntax) for a set of outcomes: SOPform's sum of products
(sympy's, carried out here: see sop_form) with the impossible assignments (a variable with two
values, or none) as don't-cares.

The formula describes exactly the set over the values each observable takes in it: every
observable is named, so a value that no outcome has is visibly absent -- a variable with one
value is a conjunct (`x=3`), and one the minimised formula does not constrain is listed with its
values (`(P0:r0=0 \/ P0:r0=1)`). "true" only for an empty projection.

sympy itself is not imported: it takes ~0.3 s to import, more than the rest of `ptxmc outcomes`
on a small test (tests/report/test_formula.py compares the two on random sets)."""
from __future__ import annotations

from itertools import product

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
    if len(set(outcomes)) == combinations:     # every combination occurs: no constraint
        return "true", set()
    if len(atoms) > MAX_ATOMS:
        return _merged(outcomes, keys, domains)
    index = {a: i for i, a in enumerate(atoms)}
    varying = [k for k in keys if len(domains[k]) > 1]

    def bits(values) -> tuple[int, ...]:
        b = [0] * len(atoms)
        for k, v in values:
            if (k, v) in index:
                b[index[(k, v)]] = 1
        return tuple(b)

    minterms = [list(bits(o)) for o in outcomes]
    valid = {bits(zip(varying, combo)) for combo in product(*(domains[k] for k in varying))}
    dontcares = [list(b) for b in product((0, 1), repeat=len(atoms)) if b not in valid]
    cover = sop_form(minterms, dontcares)
    if any(all(x == DASH for x in c) for c in cover):
        return "true", set()
    mentioned = {atoms[i][0] for c in cover for i, x in enumerate(c) if x != DASH}
    return _text(cover, atoms, domains), mentioned


# -- SOPform ------------------------------------------------------------------------------------
# sympy.logic.SOPform (sympy 1.12-1.14, BSD licence), the same steps in the same order, so that
# the same terms come out: Quine-McCluskey pairing of minterms and don't-cares into prime
# implicants, then sympy's prime implicant table reduction (row and column dominance, and the
# prime covering most terms when neither removes anything). Terms are lists of 0 / 1 / DASH.
# tests/report/test_formula.py compares it with sympy's on random sets.

DASH = 3


def sop_form(minterms: list[list[int]], dontcares: list[list[int]]) -> list[list[int]]:
    """The terms of SOPform(variables, minterms, dontcares), in its order (empty: false)."""
    if not minterms:
        return []
    return _rem_redundancy(_simplified_pairs(minterms + dontcares), minterms)


def _simplified_pairs(terms: list[list[int]]) -> list[list[int]]:
    """Quine-McCluskey's pairing, repeated: each term with k ones is paired with every term with
    k + 1 ones that differs from it in one position, in sympy's order (by k, then by position in
    `terms`, the first term's before the second's). Such a partner has a 1 where the term has a 0
    or a DASH and equals it elsewhere, so it is looked up by its code instead of compared with
    every term with k + 1 ones (~24,000 comparisons for a 3-register MP test)."""
    if not terms:
        return []
    simplified: list[list[int]] = []
    seen: set[tuple[int, ...]] = set()
    todo: list[int | None] = list(range(len(terms)))
    by_ones: dict[int, list[int]] = {}
    by_code: dict[int, list[int]] = {}
    codes = [_code(term) for term in terms]
    for n, term in enumerate(terms):
        by_ones.setdefault(term.count(1), []).append(n)
        by_code.setdefault(codes[n], []).append(n)
    width = len(terms[0])
    for k in range(width):
        for i in by_ones.get(k, ()):
            term, code = terms[i], codes[i]
            partners = sorted((j, x) for x, t in enumerate(term) if t != 1
                              for j in by_code.get(code + ((1 - t) << (2 * x)), ()))
            for j, index in partners:
                todo[i] = todo[j] = None
                new = term[:]
                new[index] = DASH
                if tuple(new) not in seen:
                    seen.add(tuple(new))
                    simplified.append(new)
    if simplified:
        simplified = _simplified_pairs(simplified)
    simplified.extend(terms[i] for i in todo if i is not None)
    return simplified


def _code(term: list[int]) -> int:
    """The term as an integer, two bits a position (0, 1 and DASH all fit)."""
    code = 0
    for x, t in enumerate(term):
        code |= t << (2 * x)
    return code


def _rem_redundancy(primes: list[list[int]], terms: list[list[int]]) -> list[list[int]]:
    if not terms:
        return []
    nterms, nprimes = len(terms), len(primes)
    dom = [[0] * nprimes for _ in range(nterms)]
    colcount = [0] * nprimes
    rowcount = [0] * nterms
    term_codes = [_code(term) for term in terms]
    for pi, prime in enumerate(primes):
        # a prime covers a term where they agree on every position the prime is not DASH at
        code = _code(prime)
        care = _code([0 if t == DASH else 3 for t in prime])
        for ti, term_code in enumerate(term_codes):
            if not (code ^ term_code) & care:
                dom[ti][pi] = 1
                colcount[pi] += 1
                rowcount[ti] += 1
    changed = True
    while changed:
        changed = False
        for ri in range(nterms):
            if rowcount[ri]:
                row = dom[ri]
                for r2 in range(nterms):
                    if ri != r2 and rowcount[ri] and rowcount[ri] <= rowcount[r2]:
                        row2 = dom[r2]
                        if all(row2[n] >= row[n] for n in range(nprimes)):
                            rowcount[r2] = 0        # row2 dominates row: drop row2
                            changed = True
                            for pi, p in enumerate(row2):
                                if p:
                                    dom[r2][pi] = 0
                                    colcount[pi] -= 1
        colcache: dict[int, list[int]] = {}

        def column(c: int) -> list[int]:
            if c not in colcache:
                colcache[c] = [dom[i][c] for i in range(nterms)]
            return colcache[c]

        for ci in range(nprimes):
            if colcount[ci]:
                col = column(ci)
                for c2 in range(nprimes):
                    if ci != c2 and colcount[c2] and colcount[ci] >= colcount[c2]:
                        col2 = column(c2)
                        if all(col[n] >= col2[n] for n in range(nterms)):
                            colcount[c2] = 0        # col dominates col2: drop col2
                            changed = True
                            for ti, t in enumerate(col2):
                                if t and dom[ti][c2]:
                                    dom[ti][c2] = 0
                                    rowcount[ti] -= 1
        if not changed:
            # the prime implicant covering the most terms, if it covers at least two
            most, best = 0, -1
            for ci in range(nprimes):
                if colcount[ci] > most:
                    best, most = ci, colcount[ci]
            if best != -1 and most > 1:
                for pi in range(nprimes):
                    if pi != best:
                        for ti, t in enumerate(colcache[best]):
                            if t and dom[ti][pi]:
                                dom[ti][pi] = 0
                                changed = True
                                rowcount[ti] -= 1
                                colcount[pi] -= 1
    return [primes[i] for i in range(nprimes) if colcount[i]]


def _merged(outcomes: list[Outcome], keys: list[str], domains: dict) -> str:
    """Greedy multi-valued cube merging (for sets too large for SOPform): two cubes that agree on
    every variable but one merge into one whose set for that variable is the union; a variable
    that takes every value of its domain is dropped. Not always minimal; always exact."""
    cubes = {tuple(frozenset((d[k],)) for k in keys) for d in map(dict, outcomes)}
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


def _text(cover, atoms, domains) -> str:
    """SOPform's terms as text: k=v, a two-valued k's other value for ~(k=v), literals sorted
    within a term, terms sorted, parenthesised when there are several."""
    def literal(i: int, holds: int) -> str:
        k, v = atoms[i]
        if holds:
            return f"{k}={value_text(v)}"
        other = [d for d in domains[k] if d != v]
        return f"{k}={value_text(other[0])}" if len(domains[k]) == 2 else f"~{k}={value_text(v)}"

    terms = [sorted(literal(i, x) for i, x in enumerate(c) if x != DASH) for c in cover]
    if len(terms) == 1:
        return " /\\ ".join(terms[0]) or "true"
    return " \\/ ".join(sorted(t[0] if len(t) == 1 else "(" + " /\\ ".join(t) + ")" for t in terms))
