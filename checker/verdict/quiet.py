"""The mbarriers whose failed waits add no undefined behaviour of their own making: where the
undefined-behaviour question of a hang-question test (checker.verdict.union, _ub_variants) need
not combine the failed iterations of several awaits on them (docs/model.md#a18, "Failed
iterations of an mbarrier wait").

A failed iteration of an mbarrier wait (an awaited `== 0` wait) is no acquire and no release,
so it starts no synchronization of its own; the acquire pattern it begins with the wait that
exits (a strong read, then an acquire of the same bytes: axioms/ptx.cat) is that exiting wait's
own, because the exiting wait reads a coherence-later state, when every operation on the
mbarrier is morally strong with the wait. What makes that so is checked here, from the test's
text alone: every thread in one CTA (every scope of an mbarrier operation contains every
thread), every instruction that names the mbarrier an mbarrier operation on the whole object
(init, arrive, expect_tx, complete_tx, test_wait, try_wait) or the complete-tx of an
asynchronous operation, at most one initialisation (no inval), and no alias, view or part.
"""
from __future__ import annotations

from ..ast import Addr, LitmusTest

# the mbarrier operations a quiet mbarrier may be named by (strong RMWs, reads, one weak init)
_OPS = ("mbarrier.init", "mbarrier.arrive", "mbarrier.arrive_drop", "mbarrier.expect_tx",
        "mbarrier.complete_tx", "mbarrier.test_wait", "mbarrier.try_wait")


def quiet_mbarriers(test: LitmusTest, arrive_ons: bool = False, cache: dict | None = None,
                    inval: bool = False) -> frozenset[str]:
    """The locations of `test` on which a failed wait adds no synchronization (see the module).
    `arrive_ons`: also admit the asynchronous arrive-on of tcgen05.commit and
    cp.async.mbarrier.arrive (for the refuter of checker.verdict.stops, whose argument reads them
    as the RMWs they are; not for the failed-iteration argument). `cache`: a dict kept across calls
    on tests of the same memory, for each thread's part by its code. `inval`: also admit
    mbarrier.inval (for the refuter's members, checker.verdict.stops._may_fire, whose fold reads
    an inval as the write of state 0 it is; quiet otherwise)."""
    if len({t.position.cta_key() for t in test.threads}) != 1:
        return frozenset()
    cta = test.threads[0].position.cta_key() if test.threads else None
    bad: set[str] = set()
    inits: dict[str, int] = {}
    for m in test.memory:
        if m.alias_of or m.view or m.view_of or m.offset_of:
            bad |= {m.name, m.alias_of or m.view_of or m.offset_of or m.name}
        if m.owner is not None and m.owner.cta_key() != cta:
            bad.add(m.name)
        if m.mbarrier is not None:
            inits[m.name] = inits.get(m.name, 0) + 1
    named: set[str] = set()
    for t in test.threads:
        key = (t.code, arrive_ons, inval)
        part = cache.get(key) if cache is not None else None
        if part is None:
            part = _thread_part(t.code, arrive_ons, inval)
            if cache is not None:
                cache[key] = part
        named |= part[0]
        bad |= part[1]
        for n, k in part[2].items():
            inits[n] = inits.get(n, 0) + k
    return frozenset(n for n in named if n not in bad and inits.get(n, 0) <= 1
                     and any(m.name == n for m in test.memory))


# the asynchronous arrive-ons (count 1, an RMW of the whole object: checker.isa.mbarrier.arrive_on)
_ARRIVE_ONS = ("tcgen05.commit", "cp.async.mbarrier.arrive")


def _thread_part(code, arrive_ons: bool, inval: bool = False) -> tuple[set, set, dict]:
    """(mbarriers named, those named otherwise than quiet allows, inits per mbarrier) in `code`."""
    named: set[str] = set()
    bad: set[str] = set()
    inits: dict[str, int] = {}
    for i in code:
        addrs = [(k, a) for k, a in enumerate(i.operands) if isinstance(a, Addr)]
        for k, a in addrs:
            named.add(a.base)
            completes = "mbarrier::complete_tx" in i.text.split()[0] and k == addrs[-1][0]
            arrives = arrive_ons and i.family in _ARRIVE_ONS and k == addrs[0][0] \
                and "multicast" not in i.text.split()[0]
            if a.offset != 0 or a.register or not (i.family in _OPS or completes or arrives
                                                   or (inval and i.family == "mbarrier.inval")):
                bad.add(a.base)
            elif i.family == "mbarrier.init":
                inits[a.base] = inits.get(a.base, 0) + 1
    return named, bad, inits
