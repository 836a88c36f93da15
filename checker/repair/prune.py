"""`ptxmc fix --prune`: the synchronization a test that meets its expectations can do without,
proven least.

The converse problem is solved as a repair problem. Every prunable piece of synchronization of
the test is taken down to its bottom: fences of every kind are removed, accesses weakened to
.weak (ld, st) or .relaxed at .cta (atom, red, mbarrier operations), barrier.cluster.arrive to
.relaxed. On that program, the candidate edits are the restorations: each piece back at its
original strength or any weaker one (a memory fence at a weaker semantics or a narrower scope;
an access likewise; other fences as written), priced by the cost table. The least-cost
repair (checker.repair.fix, same searches, same proof) is the least synchronization, among
weakenings of the test's own, that still meets the expectations. What it does not restore, or
restores weaker, is reported: removable, or weakenable to the restored form.

In a skeleton of `ptxmc extract` the occurrences of one PTX line are restored together (_groups):
they are one instruction of the kernel.

Not pruned: barriers (removing one means removing it in every thread of its instance),
completion waits, and instructions that are not synchronization. Each reported pruning is
applied to the original test and re-checked from scratch, like a repair.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace

from ..ast import Instr, LitmusTest
from ..errors import LitmusError
from ..verdict.check import check_test
from ..verdict.open import open_session
from ..verdict.union import UnionSession
from . import costs as costs_mod
from .candidates import ACCESS_RANK, ACCESS_SEMS, FENCE_RANK, MB_SCOPES, SCOPE_RANK, SCOPES, Facts, _with_sem_scope
from .edits import Delete, Edit, Insert, Replace, apply, instr
from .fix import FixResult, Repair, _failure_text, fix, target_test
from .target import Target, judge

# fences that are kept or removed as written (no weaker form is tried)
WHOLE = ("fence.proxy", "membar.proxy", "fence.mbarrier_init", "tcgen05.fence::before_thread_sync",
         "tcgen05.fence::after_thread_sync", "wgmma.fence")


@dataclass(frozen=True)
class Piece:
    thread: str
    index: int                  # in the original test
    instr: Instr
    bottom: Instr | None        # None: removed
    alternatives: tuple         # (Instr, rank, cost): the restorations, weakest first


def price(i: Instr, cm: costs_mod.CostModel) -> int:
    """What an existing synchronization instruction costs (for the savings a pruning reports)."""
    f, q = i.family, i.quals
    if f == "fence":
        if q.get("restrict"):
            return cm[f"fence.{q['sem']}.{q['restrict']}.cluster"]
        return cm.fence(q["sem"], q["scope"])
    if f == "fence.mbarrier_init":
        return cm["fence.mbarrier_init.release.cluster"]
    if f == "membar":
        return cm.fence("sc", {"cta": "cta", "gl": "gpu", "sys": "sys"}[q["level"]])
    if f in ACCESS_SEMS:
        sem = q.get("sem") or ACCESS_SEMS[f][1]
        if sem == "volatile":           # relaxed at .sys by definition (checker.isa.core); never pruned
            return cm.access("relaxed", "sys")
        scope = q.get("scope") or (("cta" if f.startswith("mbarrier") else "gpu") if sem != "weak" else None)
        return cm.access(sem, scope)
    if f == "barrier.cluster":
        return cm["barrier.cluster.arrive.release"] if q.get("sem") != "relaxed" else 0
    if f in ("fence.proxy", "membar.proxy"):
        kind = q["kind"]
        if kind == "async" and q.get("space"):
            return cm[f"fence.proxy.async.{q['space']}"]
        if kind == "tensormap::generic":
            return cm[f"fence.proxy.tensormap::generic.{q['sem']}.{q['scope']}"]
        key = f"fence.proxy.async::generic.{q.get('sem')}.{q.get('restrict')}.cluster"
        if kind == "async::generic" and key in cm.table:
            return cm[key]
        return cm["fence.proxy.alias" if kind == "alias" else "fence.proxy.async"]
    if f == "wgmma.fence":
        return cm["wgmma.fence"]
    if f in cm.table:
        return cm[f]
    return 1


def pieces(test: LitmusTest, facts: Facts, cm: costs_mod.CostModel) -> list[Piece]:
    out = []
    for th in test.threads:
        reps = facts.scope_reps(th)
        for idx, ins in enumerate(th.code):
            f, q = ins.family, ins.quals
            own = price(ins, cm)
            if f == "fence" and not q.get("restrict") or f == "membar":
                sem0 = q["sem"] if f == "fence" else "sc"
                scope0 = q["scope"] if f == "fence" else {"cta": "cta", "gl": "gpu", "sys": "sys"}[q["level"]]
                alts = []
                for sem, r in FENCE_RANK.items():
                    for scope in sorted(set(reps) | {scope0}, key=SCOPE_RANK.get):
                        if SCOPE_RANK[scope] > SCOPE_RANK[scope0] or not all(a <= b for a, b in zip(r, FENCE_RANK[sem0])):
                            continue
                        text = ins.text if (f == "fence" and (sem, scope) == (sem0, scope0)) else f"fence.{sem}.{scope}"
                        alts.append((text, r + (SCOPE_RANK[scope],), cm.fence(sem, scope) if text != ins.text else own))
                out.append(_piece(test, th, idx, ins, None, alts))
            elif f == "fence" or f in WHOLE or any(f.startswith(w) for w in WHOLE):
                out.append(_piece(test, th, idx, ins, None, [(ins.text, (), own)]))
            elif f in ACCESS_SEMS and not q.get("mmio") and q.get("sem") != "volatile":
                sems, default = ACCESS_SEMS[f]
                mb = f.startswith("mbarrier")
                sem0 = q.get("sem") or default
                if sem0 == "weak":
                    continue
                scope0 = q.get("scope") or ("cta" if mb else "gpu")
                rank0 = ACCESS_RANK[sem0] + (SCOPE_RANK[scope0],)
                bottom_sem = "weak" if f in ("ld", "st") else "relaxed"
                cands = [(s, sc) for s in sems for sc in sorted(set(reps) | {scope0}, key=SCOPE_RANK.get)
                         if not mb or sc in MB_SCOPES]
                alts = []
                for sem, scope in cands:
                    rank = ACCESS_RANK[sem] + (SCOPE_RANK[scope],)
                    if not all(a <= b for a, b in zip(rank, rank0)):
                        continue
                    if (sem, scope) == (bottom_sem, "cta") and bottom_sem == "relaxed":
                        continue
                    alts.append((_access_text(ins, sem, scope, sem0, scope0), rank, cm.access(sem, scope)))
                if bottom_sem == "weak":
                    bottom = _access_text(ins, "weak", None, sem0, scope0)
                else:
                    bottom = _access_text(ins, "relaxed", "cta", sem0, scope0)
                if bottom == ins.text:
                    continue
                out.append(_piece(test, th, idx, ins, bottom, alts))
            elif f == "barrier.cluster" and q.get("mode") == "arrive" and q.get("sem") != "relaxed":
                quals = tuple(x for x in ins.qualifiers if x != "release")
                bottom = ".".join((ins.op,) + quals[:2] + ("relaxed",) + quals[2:])
                out.append(_piece(test, th, idx, ins, bottom, [(ins.text, (1,), own)]))
    return [p for p in out if p is not None]


class _UnionFacts:
    """What `pieces` needs to know of a test asked over its variants (checker.verdict.union): a
    scope is kept where, in some complete variant, it includes more than the next narrower one."""

    def __init__(self, test: LitmusTest, asked: UnionSession, options: frozenset):
        self.per = [Facts(c.test, s.es, options) for c, s in zip(asked.combos, asked.sessions) if not c.cut]

    def scope_reps(self, thread) -> list[str]:
        reps = {r for f in self.per for r in f.scope_reps(thread)}
        return [s for s in SCOPES if s in reps] or list(SCOPES)


def _access_text(ins: Instr, sem: str, scope: str | None, sem0: str, scope0: str) -> str:
    if (sem, scope) == (sem0, scope0):
        return ins.text
    from ..isa.syntax import render_instr
    if sem == "weak":
        fam_parts = len(ins.family.split(".")) - 1
        quals = tuple(q for k, q in enumerate(ins.qualifiers)
                      if k < fam_parts or q not in ("relaxed", "acquire", "release", "acq_rel", *SCOPES))
        return render_instr(ins, quals)
    return render_instr(ins, _with_sem_scope(ins, sem, scope))


def _piece(test, th, idx, ins, bottom_text, alts) -> Piece | None:
    line = ins.where.line if ins.where else None
    try:
        bottom = instr(bottom_text, test, line) if bottom_text else None
        built = tuple((replace(instr(t, test, line), where=ins.where), r, c) for t, r, c in alts)
    except LitmusError:
        return None
    return Piece(th.name, idx, ins, bottom, built)


def _groups(test: LitmusTest, ps: list[Piece]) -> list[list[Piece]]:
    """The pieces restored together: in a skeleton of `ptxmc extract`, whose instructions end with
    the PTX line they came from (`// L111: fence.proxy.async.shared::cta`), the occurrences of one
    PTX line (its loop's unrolled iterations, the roles that run it) are one instruction of the
    kernel, which a pruning keeps or weakens as a whole; every other piece is a group of its own."""
    from .output import _comment, source_lines
    lines = source_lines(test.path)
    groups: dict[tuple, list[Piece]] = {}
    for p in ps:
        line = p.instr.where.line if p.instr.where else None
        m = re.match(r"(L\d+):", _comment(lines, line, p.instr.text) or "")
        key = (m.group(1), p.instr.family, p.bottom is None) if m else (p.thread, p.index)
        groups.setdefault(key, []).append(p)
    return list(groups.values())


def _bottom(test: LitmusTest, ps: list[Piece]) -> tuple[LitmusTest, dict]:
    """The test with every piece at its bottom, and for each piece where it now lies: (thread,
    point, ordinal) for a removed one, (thread, index) for a weakened one."""
    changes = []
    for p in ps:
        changes.append(Delete(p.thread, p.index) if p.bottom is None else Replace(p.thread, p.index, p.bottom))
    edited = apply(test, [Edit("bottom", "prune", (), None, 0, tuple(changes))])
    place = {}
    for th in test.threads:
        prov = edited.provenance[th.name]
        kept = [k[1] for k in prov]
        for p in ps:
            if p.thread != th.name:
                continue
            if p.bottom is None:
                point = sum(1 for i in kept if i < p.index)
                ordinal = sum(1 for q in ps if q.thread == th.name and q.bottom is None and q.index < p.index
                              and sum(1 for i in kept if i < q.index) == point)
                place[(p.thread, p.index)] = ("insert", point, ordinal)
            else:
                place[(p.thread, p.index)] = ("replace", kept.index(p.index))
    return edited.test, place


@dataclass(frozen=True)
class Pruning:
    """One least-synchronization form of the test: what to remove and what to weaken."""

    removed: tuple[Piece, ...]
    weakened: tuple[tuple[Piece, Instr], ...]
    saved: int
    edits: tuple[Edit, ...]         # on the original test (Delete / Replace)
    test: LitmusTest                # the pruned test, the target as its expectations


def prune(test: LitmusTest, target: Target, model, options=frozenset(), engine: str = "z3", lim=None,
          method: str = "cegis", max_repairs: int = 8, cm: costs_mod.CostModel = costs_mod.DEFAULT,
          budget: float = 120.0, only=None) -> FixResult:
    """A FixResult whose `repairs` are Prunings rendered as repairs of the original test (edits
    Delete / Replace); status 'pruned' (something can go), 'met' (everything is needed),
    'unmet' (the test fails its expectations: nothing to prune), or as fix's. `only(thread,
    index)`, if given, limits the pruning to those instructions (the rest stays as written;
    `ptxmc audit` prunes only the fences a policy inserted)."""
    start = time.perf_counter()
    base = open_session(test, model, frozenset(options), engine, lim, hang=target.hang is not None)
    failure = judge(base, target)
    if failure is not None and failure.undecided:
        # (an Unknown expectation is not met, nor unmet: nothing can be pruned that can be judged)
        return FixResult(test, target, "unknown", failure=_failure_text(failure),
                         notes=("whether the test meets its expectations is Unknown: nothing to prune",),
                         seconds=time.perf_counter() - start)
    if failure is not None:
        return FixResult(test, target, "unmet", notes=("the test does not meet its expectations: "
                                                       "nothing to prune (ptxmc fix repairs it)",),
                         seconds=time.perf_counter() - start)
    facts = _UnionFacts(test, base, frozenset(options)) if isinstance(base, UnionSession) else \
        Facts(test, base.es, frozenset(options))
    ps = pieces(test, facts, cm)
    if only is not None:
        ps = [p for p in ps if only(p.thread, p.index)]
    if not ps:
        return FixResult(test, target, "met", proven=True, notes=("no prunable synchronization",),
                         seconds=time.perf_counter() - start)
    bottom, place = _bottom(test, ps)
    cands = []
    restores: dict[str, list[tuple[Piece, Instr]]] = {}     # a restoration's key -> what it restores
    for group in _groups(test, ps):
        first = group[0]
        ranks = [r for _, r, _ in first.alternatives
                 if all(any(r2 == r for _, r2, _ in p.alternatives) for p in group[1:])]
        for rank in ranks:
            changes, made, cost = [], [], 0
            for p in group:
                ins, _, c = next(a for a in p.alternatives if a[1] == rank)
                where = place[(p.thread, p.index)]
                changes.append(Insert(p.thread, where[1], where[2], (ins,)) if where[0] == "insert"
                               else Replace(p.thread, where[1], ins))
                made.append((p, ins))
                cost += max(1, c)
            key = f"{first.thread}#{first.index}:{made[0][1].text}"
            restores[key] = made
            cands.append(Edit(key, "restore", ("piece",) + tuple(x for p in group for x in (p.thread, p.index)),
                              rank, cost, tuple(changes), "restore"))
    res = fix(bottom, target, model, options, engine, lim, method, max_repairs, cm, budget, explain=False,
              cands=tuple(cands))
    total = sum(price(p.instr, cm) for p in ps)
    if res.status == "met":           # nothing at all is needed
        restorations = [()]
    elif res.status == "repaired":
        restorations = [r.edits for r in res.repairs]
    else:
        # (what fix says of the program with every piece at its bottom, not of the test itself)
        failure = f"with every prunable piece removed or weakened: {res.failure}" if res.failure else ""
        return replace(res, test=test, status=res.status, failure=failure, seconds=time.perf_counter() - start)
    repairs = []
    for rest in restorations:
        chosen = {(p.thread, p.index): ins for e in rest for p, ins in restores[e.key]}
        removed, weakened, changes = [], [], []
        for p in ps:
            new = chosen.get((p.thread, p.index))
            if new is None:
                if p.bottom is None:
                    removed.append(p)
                    changes.append(Delete(p.thread, p.index))
                else:
                    weakened.append((p, p.bottom))
                    changes.append(Replace(p.thread, p.index, p.bottom))
            elif new.text != p.instr.text:
                weakened.append((p, new))
                changes.append(Replace(p.thread, p.index, replace(new, where=p.instr.where)))
        kept_cost = sum(e.cost for e in rest)
        edits = tuple(Edit(f"prune:{type(c).__name__}:{c.thread}#{c.index}", "prune", ("prune", c.thread, c.index),
                           None, 0, (c,), "prune") for c in changes)
        pruned = target_test(apply(test, edits).test, target)
        if edits and not check_test(pruned, model, None, options, engine).ok:
            continue        # (a bug of the search; the re-check keeps it out)
        repairs.append(Repair(edits, total - kept_cost, pruned, ()))
    status = "pruned" if any(r.edits for r in repairs) else "met"
    notes = res.notes + ((f"{len(ps)} prunable pieces of synchronization; a pruning's cost is what it saves",)
                         if status == "pruned" else ("every piece of synchronization is needed",))
    return FixResult(test, target, status, tuple(r for r in repairs if r.edits), proven=res.proven or res.status == "met",
                     method=method, candidates=len(cands), stats=res.stats, seconds=time.perf_counter() - start,
                     notes=notes)
