"""Pure encoding of an event structure and a cat model into Z3 terms (no solver calls).

`encode(es, model, options) -> Encoding`: well-formedness (rf functional and value-consistent,
co/fsc strict partial orders with the initial writes first, final-value choice, awaits) kept
apart from the model's checks, grouped by axiom name; flags (undefined behaviour) separately;
and the observable terms (registers and final memory) that outcome enumeration projects onto.
Variable names are deterministic: `rf|w|r`, `co|a|b`, `val|r`, `fin|loc|w`.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations
from math import inf
from typing import Mapping

import z3

from .. import limits
from ..model import prune, relations
from ..cat import demand
from ..cat.concrete import ConcreteAlgebra
from ..cat.interp import Model, evaluate
from ..cat.stage import stage, static_values
from ..model.events import EventStructure
from ..cat.symbolic import TRUE, SymbolicAlgebra, mk_and, mk_exactly_one, mk_implies, mk_not, mk_or
from ..model.values import Bin, Const, Ite, int_val, reads_of, to_z3
from ..watchdog import z3_context
from .digits import Digits
from .fields import Fields, equalities
from .ranges import Ranges


@dataclass(frozen=True)
class Encoding:
    wellformed: tuple                       # z3 constraints
    axioms: Mapping[str, z3.BoolRef]        # axiom name -> "the axiom holds"
    flags: Mapping[str, tuple]              # flag name -> ("it fires" term, its check, {edge: term} of its relation)
    observables: Mapping[str, z3.ArithRef]  # "P1:r0" / "x" -> value term
    env: Mapping[str, tuple]                # every let-bound name -> (kind, symbolic value: the entries the checks read)
    rf: Mapping[tuple[int, int], object]
    orders: Mapping[str, Mapping[tuple[int, int], object]]
    values: Mapping[int, z3.ArithRef]       # read -> value term


def encode(es: EventStructure, model: Model, options: frozenset[str] = frozenset(),
           ctx: z3.Context | None = None) -> Encoding:
    """The encoding of `es` under `model` in the Z3 context `ctx` (a new one if None)."""
    ctx = ctx or z3_context()
    wf: list = []
    read_val = {r: z3.Int(f"val|{r}", ctx) for r in es.reads}
    may = prune.rf_may(es)
    # Every read's value range (it holds in every well-formed execution: engines/ranges.py).
    ranges = Ranges(may, es.write_value)
    # Slices of read values (mbarrier fields, bytes) and bitwise operators as digit variables:
    # exact, and linear. Wrap-arounds of bounded values as case splits on the quotient.
    digits = Digits(_expressions(es))
    wf += digits.constraints(read_val.__getitem__, ctx)
    digit_term = digits.hook(ctx)
    # `hook` reaches `term` and itself through this table, emptied at the end: a closure cycle
    # would keep the test's Z3 context alive until a full garbage collection (~17 MiB per
    # mbarrier test).
    late = {}
    # The reads under a case split or a bitwise operator: their ranges are stated below (for the
    # latter they bound the top digit: or-chains on one location were UNKNOWN without).
    split: set[int] = {r for o in digits.operands for r in reads_of(o)}

    # Value expressions are DAGs (an mbarrier state is built from the previous one): each node's
    # term is built once (memo by identity; `late["open"]` is the node whose default encoding is
    # being built, which the hook must leave to to_z3).
    late["memo"], late["open"] = {}, []

    def hook(e):
        hit = late["memo"].get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        t = digit_term(e)
        if t is None:
            t = _bounded_division(e, ranges, late["term"], ctx, split)
        if t is None and isinstance(e, (Bin, Ite)) and not (late["open"] and late["open"][-1] is e):
            late["open"].append(e)
            try:
                t = to_z3(e, read_val.__getitem__, ctx, late["hook"])
            finally:
                late["open"].pop()
        if t is not None:
            late["memo"][id(e)] = (e, t)
        return t

    def term(expr):
        return to_z3(expr, read_val.__getitem__, ctx, hook)

    late["term"], late["hook"] = term, hook
    wf += digits.aux_constraints(term)

    # rf: every read reads exactly one write of its location, and returns its value. Where the
    # read's value is decomposed into digits and the write's value has a layout at the same cut
    # points (an mbarrier state, bytes), the field-wise equalities it implies are added too
    # (engines/fields.py: exact and redundant; no packed 2^61 coefficients for the solver).
    rf: dict[tuple[int, int], object] = {}
    fields = Fields(digits) if len(es.events) >= FIELDWISE_EVENTS else None

    def reads_from(r, w, lit=None):
        wf.append(read_val[r] == term(es.write_value[w]) if lit is None else
                  mk_implies(lit, read_val[r] == term(es.write_value[w])))
        parts = None if fields is None else equalities(fields, r, es.write_value[w], term, ctx)
        if parts is not None:
            guard = ([] if lit is None else [lit]) + parts[0]
            wf.append(mk_implies(mk_and(guard), mk_and(parts[1])) if guard else mk_and(parts[1]))

    for r, ws in sorted(may.items()):
        if not ws:
            wf.append(z3.BoolVal(False, ctx))   # an await no write can satisfy
            continue
        if len(ws) == 1:
            rf[(ws[0], r)] = TRUE
            reads_from(r, ws[0])
            continue
        vs = [z3.Bool(f"rf|{w}|{r}", ctx) for w in ws]
        wf.append(mk_exactly_one(vs))
        for w, v in zip(ws, vs):
            rf[(w, r)] = v
            reads_from(r, w, v)

    # orders (co, fsc): strict partial orders per class; `first` events precede the rest.
    orders: dict[str, dict] = {}
    for o in es.orders:
        rel: dict[tuple[int, int], object] = {}
        for cls in o.classes:
            for a, b in permutations(cls, 2):
                if a in o.first:
                    rel[(a, b)] = TRUE
                elif b not in o.first:
                    rel[(a, b)] = z3.Bool(f"{o.name}|{a}|{b}", ctx)
            free = [e for e in cls if e not in o.first]
            for a, b in permutations(free, 2):
                if a < b:
                    wf.append(mk_not(mk_and((rel[(a, b)], rel[(b, a)]))))
            for k, (a, b, c) in enumerate(permutations(free, 3)):
                if not k & 0x3FFF:      # (k^3 terms for a class of k writes: the test's time bounds them)
                    limits.check_deadline()
                wf.append(mk_implies(mk_and((rel[(a, b)], rel[(b, c)])), rel[(a, c)]))
        orders[o.name] = rel

    # final memory: some coherence-maximal write of each location.
    observables: dict[str, z3.ArithRef] = {}
    co = orders.get("co", {})
    for loc, ws in sorted(es.final_writes.items()):
        if len(ws) == 1:
            observables[loc] = term(es.write_value[ws[0]])
            continue
        fins = [z3.Bool(f"fin|{loc}|{w}", ctx) for w in ws]
        wf.append(mk_exactly_one(fins))
        value = term(es.write_value[ws[-1]])
        for w, f in zip(ws, fins):
            for w2 in ws:
                t = co.get((w, w2))
                if t is TRUE:
                    wf.append(mk_not(f))
                elif t is not None:
                    wf.append(mk_implies(f, mk_not(t)))
        for w, f in reversed(list(zip(ws[:-1], fins[:-1]))):
            value = z3.If(f, term(es.write_value[w]), value, ctx)
        observables[loc] = value
    for root, parts in sorted(es.compose.items()):       # a location cut into atoms (A15)
        observables[root] = z3.Sum([observables.pop(atom) * int_val(1 << (8 * pos), ctx) for atom, pos in parts])
    for (th, reg), expr in sorted(es.registers.items()):
        observables[f"{th}:{reg}"] = term(expr)

    # An execution with value-dependent undefined behaviour (an mbarrier state out of range) may
    # do anything after it: an await need not hold where the UB frees it (EventStructure.freeing, A7).
    waits = [((r,), read_val[r] == v) for r, v in es.awaits]
    waits += [(reads_of(expr), term(expr) == v) for expr, v in es.guards]
    for reads, c in waits:
        free = [term(x) != 0 for _, x in es.freeing(reads)]
        wf.append(mk_or([c, *free]) if free else c)

    # the model
    # The static part of the model (no rf/co/fsc in it) is evaluated once over concrete sets;
    # only the residual is evaluated over symbolic edge tables.
    alg = SymbolicAlgebra(range(len(es.events)), ctx)
    static_base = es.base()
    dynamic = {"rf", *orders, *relations.VALUE_SETS}
    staged = stage(model, set(static_base) | dynamic, dynamic)
    static = static_values(staged, static_base, ConcreteAlgebra(range(len(es.events))), options)
    base: dict[str, tuple[str, object]] = {}
    for name, (kind, value) in {**static_base, **static}.items():
        base[name] = (kind, dict.fromkeys(value, TRUE))
    base["rf"] = ("rel", rf)
    for name in relations.VALUE_SETS:
        base[name] = ("set", {e: term(x) != 0 for e, x in es.value_sets.get(name, ())})
    for name, rel in orders.items():
        base[name] = ("rel", rel)
    # Only the entries some check reads get a term (checker.cat.demand: the same constraints);
    # below DEMAND_EVENTS events its analysis costs more than the terms it saves.
    if len(es.events) >= DEMAND_EVENTS:
        ev = demand.evaluate(staged.residual, base, alg, options)
    else:
        ev = evaluate(staged.residual, base, alg, options)
    axioms: dict[str, list] = {}
    flags: dict[str, tuple] = {}
    for (check, constraint), (_, value) in zip(ev.checks, ev.check_values):
        if check.flag:
            flags[check.name] = (constraint, check, value)
        else:
            axioms.setdefault(check.name, []).append(constraint)
    wf.extend(alg.definitions)
    late.clear()
    # A case split equals the remainder only inside the ranges: state them (they hold in every
    # well-formed execution, so no model is lost). Only for these reads: on every read, the
    # redundant bounds slow the enumeration by 15-35% (sb, mp, iriw).
    # (First: the solver's first decisions follow the order; an 8-RMW or-chain needs them early.)
    bounds = []
    for r in sorted(split):
        lo, hi = ranges.reads.get(r, (-inf, inf))
        if r in read_val and -WIDE < lo:
            bounds.append(read_val[r] >= int_val(lo, ctx))
        if r in read_val and hi < WIDE:
            bounds.append(read_val[r] <= int_val(hi, ctx))
    wf[:0] = bounds
    return Encoding(
        wellformed=tuple(wf),
        axioms={n: mk_and(cs) if len(cs) > 1 else cs[0] for n, cs in axioms.items()},
        flags=flags,
        observables=observables,
        env={**{n: base[n] for n in static if not n.startswith("%")}, **ev.env},
        rf=rf,
        orders=orders,
        values=read_val,
    )


# From this many events on, the model is evaluated on demand (checker.cat.demand): the suites'
# tests of 0-31 events encode ~15% slower with the analysis, one of 32-47 ~15% faster, an
# extracted skeleton of ~450 events 3x faster (bench/RESULTS.md).
DEMAND_EVENTS = 32

# From this many events on, the rf edges of decomposed reads get their field-wise equalities
# (engines/fields.py; exact either way): measured on the suites' small mbarrier tests they cost
# more than they save, on the ring family and the extracted skeletons they save 2-5x (bench/RESULTS.md).
FIELDWISE_EVENTS = 32

# Bounds and radixes past 64 bits (bulk-copy values are up to 65536-bit numbers) are left out:
# their numerals cost Z3 more than the bounds save (the async suite: +15% CPU, +120 MiB).
WIDE = 1 << 65
# A wrap-around whose quotient takes at most this many values is a case split, not a remainder.
MAX_QUOTIENTS = 4


def _bounded_division(e, ranges: Ranges, term, ctx, split: set):
    """`x mod 2^k` / `x div 2^k` (low, shr, mod, div by a constant) of a bounded x whose quotient
    takes few values, as a case split on the quotient (x - q * 2^k and q): equal to the remainder
    and the quotient wherever x lies in its range, which the read bounds guarantee (the reads of
    x are added to `split`: their bounds are stated). None to leave the term to the default
    encoding."""
    if not isinstance(e, Bin) or e.op not in ("low", "shr", "mod", "div") or not isinstance(e.b, Const):
        return None
    if e.op in ("low", "shr"):
        if not 0 <= e.b.value < 65:
            return None
        radix = 1 << e.b.value
    else:
        radix = e.b.value
    if not 0 < radix < WIDE:
        return None
    qs = ranges.quotients(e.a, radix, MAX_QUOTIENTS)
    if qs is None:
        return None
    split.update(reads_of(e.a))
    x = term(e.a)
    remainder = e.op in ("low", "mod")
    out = None
    for q in qs:
        t = (x - int_val(q * radix, ctx) if q else x) if remainder else int_val(q, ctx)
        out = t if out is None else z3.If(x >= int_val(q * radix, ctx), t, out, ctx)
    return out


def _expressions(es: EventStructure) -> list:
    """Every value expression the encoding turns into terms."""
    out = list(es.write_value.values()) + list(es.registers.values()) + [x for x, _ in es.guards]
    for name in relations.VALUE_SETS:
        out += [x for _, x in es.value_sets.get(name, ())]
    return out

