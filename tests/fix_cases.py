"""The cases `ptxmc fix` is judged on (tests/repair/test_fix.py, bench/fix.py): every buggy/fixed pair of
litmus/patterns and litmus/tensorcore, and every weakening mutant of a passing test of
litmus/async and litmus/tensorcore that breaks its expectations; and the price of each documented
fix (the fixed twin's difference, or undoing the mutation) under the same cost table.

A documented fix is priced edit by edit: an inserted instruction at its insertion price (a barrier
once per CTA, warp or cluster however many threads it is inserted in), an instruction rewritten
to another strength at the difference of the two strengths (a weakening costs nothing), a removed
instruction at nothing (a move is a removal and an insertion). An inserted instruction that no
edit of ptxmc fix inserts (an mbarrier.arrive, a changed address) makes the documented fix
"outside the edit vocabulary": its price is None.
"""
from __future__ import annotations

from dataclasses import dataclass

from checker import LITMUS_DIR
from checker.ast import Expectation, LitmusTest
from checker.front.conditions import parse_cond
from checker.repair.costs import DEFAULT
from checker.repair.prune import price
from checker.repair.target import Target, from_test

# buggy tests whose fixed twin's conditions do not apply to the buggy program (its documented fix
# changes more than synchronization): the target used instead, and why
TARGET_OVERRIDES = {
    "P8-stage-buggy": (("g2=2",), ("g2=1",),
                       "the fixed twin reuses the other stage (s1 instead of s2), so its condition on g1 says "
                       "nothing about the buggy program; the buggy program's own question is g2=2"),
}


@dataclass(frozen=True)
class Case:
    id: str
    test: LitmusTest            # the program to repair
    target: Target
    documented: LitmusTest      # the documented fixed program
    cost: int | None            # the documented fix's price; None: outside the edit vocabulary
    why: str = ""               # why it is outside, or what the documented fix is


def _tests(*dirs):
    from checker.front.litmus import load_paths
    return [t for t in load_paths([str(LITMUS_DIR / d) for d in dirs]) if isinstance(t, LitmusTest)]


def _target(test: LitmusTest, forbidden, allowed) -> Target:
    def exp(kind, text):
        return Expectation(kind, parse_cond(text), text)
    return Target(tuple(exp("forbidden", c) for c in forbidden), tuple(exp("allowed", c) for c in allowed), True)


def insertion_price(i, cm=DEFAULT) -> int | None:
    f = i.family
    if f in ("bar", "barrier"):
        return cm["bar.sync"]
    if f == "bar.warp":
        return cm["bar.warp.sync"]
    if f == "barrier.cluster":
        return cm["barrier.cluster"]
    if f in ("cp.async.wait_group", "cp.async.wait_all"):
        return cm["cp.async.wait_all"]
    if f == "cp.async.bulk.wait_group":
        return cm["cp.async.bulk.wait_group.read" if i.quals.get("read") else "cp.async.bulk.wait_group"]
    if f in ("wgmma.wait_group", "tcgen05.wait::ld", "tcgen05.wait::st", "mbarrier.try_wait"):
        return cm[f]
    if f in ("fence", "membar", "fence.proxy", "membar.proxy", "fence.mbarrier_init", "wgmma.fence") \
            or f.startswith("tcgen05.fence"):
        return price(i, cm)
    return None


def documented_price(buggy: LitmusTest, fixed: LitmusTest, cm=DEFAULT) -> tuple[int | None, str]:
    """(price of turning `buggy` into `fixed`, what it does); None when outside the vocabulary."""
    if [t.name for t in buggy.threads] != [t.name for t in fixed.threads] or \
            [t.position for t in buggy.threads] != [t.position for t in fixed.threads]:
        return None, "the threads differ"
    total, what, barriers = 0, [], set()
    for tb, tf in zip(buggy.threads, fixed.threads):
        kept_old, kept_new = _align(tb.code, tf.code, cm)
        old = [i for k, i in enumerate(tb.code) if k not in kept_old]
        new = [i for k, i in enumerate(tf.code) if k not in kept_new]
        for n in list(new):             # a rewrite of one instruction: same family and operands
            o = next((o for o in old if o.family == n.family and o.operands == n.operands and o.text != n.text), None)
            if o is not None:
                old.remove(o)
                new.remove(n)
                total += max(0, price(n, cm) - price(o, cm))
                what.append(f"{tb.name}: {o.text} -> {n.text}")
        for n in new:
            p = insertion_price(n, cm)
            if p is None:
                return None, f"inserts {n.text} ({tb.name}), which no edit of ptxmc fix inserts"
            if n.family in ("bar", "barrier", "bar.warp", "barrier.cluster"):
                group = (n.family, tb.position.cluster_key() if n.family == "barrier.cluster"
                         else tb.position if n.family == "bar.warp" else tb.position.cta_key())
                if group in barriers:
                    continue
                barriers.add(group)
            total += p
            what.append(f"{tb.name}: + {n.text}")
    return total, "; ".join(what)


def _align(a, b, cm) -> tuple[set, set]:
    """The instructions of `a` and `b` matched as unchanged: an alignment (in order) that leaves
    the cheapest insertions unmatched (a moved fence is priced as the fence, not as whatever it
    moved across)."""
    def weight(i):
        p = insertion_price(i, cm)
        return 10**6 if p is None else p + 1
    n, m = len(a), len(b)
    dp = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            best = max(dp[i + 1][j], dp[i][j + 1])
            if a[i].text == b[j].text:
                best = max(best, weight(b[j]) + dp[i + 1][j + 1])
            dp[i][j] = best
    ka, kb, i, j = set(), set(), 0, 0
    while i < n and j < m:
        if a[i].text == b[j].text and dp[i][j] == weight(b[j]) + dp[i + 1][j + 1]:
            ka.add(i)
            kb.add(j)
            i, j = i + 1, j + 1
        elif dp[i][j] == dp[i + 1][j]:
            i += 1
        else:
            j += 1
    return ka, kb


def pattern_cases() -> list[Case]:
    tests = {t.name: t for t in _tests("patterns", "tensorcore")}
    out = []
    for name, buggy in sorted(tests.items()):
        if not name.endswith("-buggy") or name[:-6] + "-fixed" not in tests:
            continue
        fixed = tests[name[:-6] + "-fixed"]
        target = from_test(fixed)
        why = ""
        if name in TARGET_OVERRIDES:
            forb, allo, why = TARGET_OVERRIDES[name]
            target = _target(buggy, forb, allo)
        cost, what = documented_price(buggy, fixed)
        out.append(Case(name, buggy, target, fixed, cost, why or what))
    return out


def mutant_cases(names=None) -> list[Case]:
    """The mutants (of the tests named in `names`, or of every test)."""
    from checker.resources import resolve_model
    from checker.verdict.check import check_test
    from checker.verdict.mutate import mutations

    model = resolve_model("ptx")
    out = []
    for t in _tests("async", "tensorcore"):
        if names is not None and t.name not in names:
            continue
        if check_test(t, model).status != "pass":
            continue
        for m, mt in mutations(t):
            if check_test(mt, model).status != "fail":
                continue
            cost, what = documented_price(mt, t)
            out.append(Case(f"{t.name} | {m.describe()}", mt, from_test(t), t, cost, what))
    return out
