"""The candidate edits of a test: every insertion, strengthening and tightening `ptxmc fix`
may use, after pruning the ones that cannot help or that a cheaper candidate matches.

The edits (checker.repair.edits; prices in checker.repair.costs):
- insert a memory fence fence.{acquire,release,acq_rel,sc}.SCOPE at a point of a thread, or a
  restricted one (fence.release.sync_restrict::shared::cta.cluster, fence.acquire.
  sync_restrict::shared::cluster.cluster);
- insert a proxy fence: fence.proxy.async{,.global,.shared::cta,.shared::cluster},
  fence.proxy.async::generic.{release,acquire}.sync_restrict::...cluster,
  fence.proxy.alias, fence.proxy.tensormap::generic.release.SCOPE,
  fence.proxy.tensormap::generic.acquire.SCOPE [map], 128, fence.mbarrier_init.release.cluster;
- insert tcgen05.fence::before_thread_sync / ::after_thread_sync, wgmma.fence;
- insert a completion wait: cp.async.wait_all, cp.async.bulk.wait_group{.read} 0,
  wgmma.wait_group 0, tcgen05.wait::ld / ::st, mbarrier.try_wait.parity on the mbarrier an
  earlier copy of the thread completes on, where the thread does not wait on it already;
- insert a barrier: bar.sync (every thread of a CTA), bar.warp.sync (every lane of a warp),
  barrier.cluster.arrive + .wait (every thread of a cluster), one point per thread;
- strengthen an access (ld, st, atom, red, mbarrier arrive / test_wait / try_wait) to a stronger
  semantics and/or a wider scope, a memory fence to a stronger one, barrier.cluster.arrive.relaxed
  to .release; tighten a wait (cp.async.wait_group N to a smaller N or wait_all, a bulk
  wait_group to a smaller N or without .read, wgmma.wait_group N to a smaller N).

Pruning, each step sound for the least cost (it drops only edits that have no effect on any
execution, or whose effect an equally cheap or cheaper kept edit has):
1. Equivalent points: the points before and after a register operation (mov, add, ...: no
   event, no state) are one point; one representative is kept.
   The restricted fences (fence.release.sync_restrict::shared::cta.cluster, fence.acquire.
   sync_restrict::shared::cluster.cluster, and their fence.proxy.async::generic forms) follow
   the same rules, in launches with clusters.
2. Scopes: a scope matters only through the set of threads and events its instance includes
   (`incl` in axioms/ptx.cat; no other rule reads the scope tags). For each thread, scopes are
   kept from narrow to wide only while the included set grows; a wider scope with the same set
   has the same effect and costs no less (checked in checker.repair.costs.ORDERS).
3. Memory fences: an acquire fence acts only after a read of its thread (acquire patterns), a
   release fence only before a write or a cluster arrive of its thread, inserted or not
   (release patterns); fence.sc also through the Fence-SC order, so it is kept everywhere.
4. Proxy fences: only for the proxies the test uses (async accesses, tensor-map reads, aliases).
   A restricted fence.proxy.async acts only on the accesses it covers (pfcover) in the CTA that
   performs them (pfo; any CTA with --option proxy-fence-any-cta): variants covering no async
   access are dropped, and of variants covering the same accesses the cheapest is kept.
5. Instruction-specific fences and waits only where they can act: fence.mbarrier_init after an
   mbarrier.init of the thread, wgmma.fence before a wgmma.mma_async of the thread, a completion
   wait after an instruction of the thread it completes, tcgen05 fences only in tests with tcgen05
   instructions.
6. Barriers: one inserted barrier per CTA / warp / cluster, at points that keep the existing
   barrier instances matched (the k-th use of a barrier by each thread joins instance k).
The restrictions of the space itself (one edit per slot; the order of insertions at one point,
PHASES) are part of the definition of "least cost" that `ptxmc fix` proves.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import product

from ..ast import Addr, Instr, LitmusTest
from ..errors import LitmusError
from ..isa.registry import with_qualifiers
from ..model.events import EventStructure
from . import costs as costs_mod
from .edits import PHASES, Edit, Insert, Replace, instr
from .program import build

SCOPES = costs_mod.SCOPES
SCOPE_RANK = {s: i for i, s in enumerate(SCOPES)}
# (acquire, release, sc) components of a memory fence's semantics
FENCE_RANK = {"acquire": (1, 0, 0), "release": (0, 1, 0), "acq_rel": (1, 1, 0), "sc": (1, 1, 1)}
# (strong, acquire, release) components of an access's semantics
ACCESS_RANK = {"weak": (0, 0, 0), "relaxed": (1, 0, 0), "acquire": (1, 1, 0), "release": (1, 0, 1),
               "acq_rel": (1, 1, 1)}
# the semantics each family may take, and its PTX default (None: .weak without a scope)
ACCESS_SEMS = {
    "ld": (("relaxed", "acquire"), "weak"),
    "st": (("relaxed", "release"), "weak"),
    "atom": (("relaxed", "acquire", "release", "acq_rel"), "relaxed"),
    "red": (("relaxed", "release"), "relaxed"),
    "mbarrier.arrive": (("relaxed", "release"), "release"),
    "mbarrier.arrive_drop": (("relaxed", "release"), "release"),
    "mbarrier.try_wait": (("relaxed", "acquire"), "acquire"),
    "mbarrier.test_wait": (("relaxed", "acquire"), "acquire"),
}
MB_SCOPES = ("cta", "cluster")
REGISTER_OPS = frozenset({"mov", "add", "sub", "mul", "and", "or", "xor"})
# qualifier groups that stay in front of .sem/.scope when an access is rewritten
_LEADING = {"expect_tx", "kind", "parity"}
PROXY_ASYNC = ("fence.proxy.async", "fence.proxy.async.global", "fence.proxy.async.shared::cta",
               "fence.proxy.async.shared::cluster")
# coverage components of the fence.proxy.async variants (global, own CTA's shared, cluster shared)
PROXY_RANK = {"fence.proxy.async": (1, 1, 1), "fence.proxy.async.global": (1, 0, 0),
              "fence.proxy.async.shared::cta": (0, 1, 0), "fence.proxy.async.shared::cluster": (0, 1, 1)}


@dataclass
class Facts:
    """What generation needs to know about the original test."""

    test: LitmusTest
    es: EventStructure
    options: frozenset

    @cached_property
    def by_instr(self) -> dict:
        """(thread, instruction index) -> its events."""
        out: dict = {}
        for e in self.es.events:
            if e.thread is not None:
                out.setdefault((e.thread, e.index), []).append(e)
        return out

    def events(self, thread: str, index: int):
        return self.by_instr.get((thread, index), [])

    def points(self, thread) -> list[int]:
        """Representative insertion points (pruning 1)."""
        return [p for p in range(len(thread.code) + 1)
                if p == 0 or thread.code[p - 1].family not in REGISTER_OPS]

    def rep(self, thread, p: int) -> int:
        """The representative of point p."""
        reps = self.points(thread)
        return max(r for r in reps if r <= p)

    @cached_property
    def performer(self) -> dict:
        """eid -> the CTA that performs the event (A2: an asynchronous access to another CTA's
        shared memory is performed by that CTA; pscta records it)."""
        es = self.es
        pscta = es.relations.get("pscta", frozenset())
        plain = {e.eid for e in es.events if e.thread is not None and ("GEN" in e.tags or e.kind in ("F", "B"))}
        out = {}
        for e in es.events:
            if e.thread is None:
                continue
            if e.eid in plain:
                out[e.eid] = self.positions[e.thread].cta_key()
                continue
            x = next((x for x in sorted(plain) if (e.eid, x) in pscta), None)
            if x is not None:
                out[e.eid] = self.positions[es.events[x].thread].cta_key()
            else:
                decl = self.test.mem(e.loc) if e.loc else None
                own = decl.owner if decl is not None and decl.owner is not None else self.positions[e.thread]
                out[e.eid] = own.cta_key()
        return out

    @cached_property
    def positions(self) -> dict:
        return {t.name: t.position for t in self.test.threads}

    def scope_reps(self, thread) -> list[str]:
        """The scopes of `thread` whose instance includes more than the next narrower one (pruning 2)."""
        es, pos = self.es, self.positions[thread.name]
        def included(scope):
            evs = set()
            for e in es.events:
                if e.thread is None:
                    continue
                p = self.positions[e.thread]
                if scope == "cta":
                    ok = self.performer[e.eid] == pos.cta_key()
                elif scope == "cluster":
                    ok = p.cluster_key() == pos.cluster_key()
                elif scope == "gpu":
                    ok = p.gpu == pos.gpu
                else:
                    ok = True
                if ok:
                    evs.add(e.eid)
            ths = {t.name for t in self.test.threads if _same(scope, self.positions[t.name], pos)}
            return frozenset(evs), frozenset(ths)

        reps, prev = [], None
        for s in SCOPES:
            inc = included(s)
            if inc != prev:
                reps.append(s)
            prev = inc
        return reps

    @cached_property
    def has(self) -> dict:
        s = self.es.sets
        ops = {i.op + "." + ".".join(i.qualifiers[:1]) for t in self.test.threads for i in t.code}
        return {
            "async": bool(s.get("ASYNC")),
            "tmap": bool(s.get("TMAP")),
            "alias": any(m.alias_of for m in self.test.memory),
            "tcgen05": any(i.op == "tcgen05" for t in self.test.threads for i in t.code),
            "ops": ops,
        }


def _same(scope: str, p, q) -> bool:
    if scope == "cta":
        return p.cta_key() == q.cta_key()
    if scope == "cluster":
        return p.cluster_key() == q.cluster_key()
    if scope == "gpu":
        return p.gpu == q.gpu
    return True


# A skeleton of `ptxmc extract` (checker.extract.render) writes this header line: one litmus thread
# stands for every thread of its role, and `ptxmc fix` pairs threads with a `bar.warp.sync` only
# where that is one warp's (role_warps, split_warp)
ROLE_WARPS = "# warps of each role (one litmus thread stands for all its threads): "


def role_warps(test: LitmusTest) -> dict[str, tuple[int, ...]] | None:
    """In a skeleton of `ptxmc extract`, where one litmus thread stands for every thread of a role,
    the warps those threads lie in, by thread name (the header line checker.extract.render writes);
    None for any other test, whose threads are threads."""
    try:
        with open(test.path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError, TypeError):
        return None
    for line in text.splitlines():
        if line.startswith(ROLE_WARPS):
            out = {}
            for item in line[len(ROLE_WARPS):].split():
                name, _, ws = item.partition("=")
                out[name] = tuple(int(w) for w in ws.split(",") if w.isdigit())
            return out
        if not line.startswith("#"):
            return None
    return None


def split_warp(test: LitmusTest, roles: dict, pos, names) -> str | None:
    """Why a `bar.warp.sync` of the litmus threads `names` at `pos` (a warp) is no edit the kernel
    can make, or None: each stands for a role, and the barrier is one warp's only when every role
    with threads in that warp lies in it alone (a role of warps 0-1 beside thread 0 would need
    warp 1's threads ordered by warp 0's barrier: no launch does that)."""
    spread = []
    for t in test.threads:
        ws = roles.get(t.name)
        if ws is None:
            return f"thread {t.name} is not in the skeleton's role line"
        if t.position.cta_key() == pos.cta_key() and pos.warp in ws and tuple(ws) != (pos.warp,):
            spread.append(f"{t.name} (warps {', '.join(map(str, ws))})")
    if spread:
        return (f"no bar.warp.sync of {', '.join(names)} in warp {pos.warp} is offered: one litmus thread stands "
                f"for a role, and {'; '.join(spread)} lies in more warps than warp {pos.warp}, whose bar.warp.sync "
                "would not order its threads there")
    return None


def withheld_warp_barriers(test: LitmusTest) -> list[str]:
    """What split_warp withholds from the candidates of a skeleton, for `ptxmc fix` to say."""
    roles = role_warps(test)
    if roles is None:
        return []
    by_warp: dict = {}
    for t in test.threads:
        by_warp.setdefault(t.position, []).append(t.name)
    return [w for pos, names in sorted(by_warp.items(), key=lambda kv: repr(kv[0]))
            if len(names) > 1 and (w := split_warp(test, roles, pos, names))]


class _Gen:
    def __init__(self, facts: Facts, cm: costs_mod.CostModel):
        self.f, self.cm, self.test = facts, cm, facts.test
        self.out: list[Edit] = []
        self.keys: set[str] = set()
        self.fresh_regs: set[str] = set()

    def add(self, e: Edit) -> None:
        if e.key not in self.keys:
            self.keys.add(e.key)
            self.out.append(e)

    def ins(self, th, p: int, phase: str, texts, slot, rank, cost_key: str, cost: int | None = None,
            needs_barrier=None, kind="insert") -> None:
        line = _line(th, p)
        try:
            instrs = tuple(instr(t, self.test, line) for t in texts)
        except LitmusError:
            return
        key = f"{th.name}@{p}.{PHASES[phase]}:{'; '.join(texts)}"
        self.add(Edit(key, kind, slot, rank, cost if cost is not None else self.cm[cost_key],
                      (Insert(th.name, p, PHASES[phase], instrs),), cost_key, needs_barrier))

    # -- memory fences ---------------------------------------------------------------------
    def memory_fences(self, th, barrier_points) -> None:
        f = self.f
        cluster_barrier = any(th.name in ths for ths in self.cluster_threads())
        for p in f.points(th):
            reads_before = any(e.kind == "R" and "RED" not in e.tags for i in range(p) for e in f.events(th.name, i))
            writes_after = cluster_barrier or any(
                e.kind == "W" or "CLU_ARRIVE" in e.tags for i in range(p, len(th.code)) for e in f.events(th.name, i))
            sems = [s for s, ok in (("acquire", reads_before), ("release", writes_after),
                                    ("acq_rel", reads_before or writes_after), ("sc", True)) if ok]
            for phase in ("fence_pre", "fence_post"):
                nb = None
                if phase == "fence_post":
                    if (th.name, p) not in barrier_points:
                        continue
                    nb = (th.name, p)
                for sem in sems:
                    for scope in f.scope_reps(th):
                        self.ins(th, p, phase, [f"fence.{sem}.{scope}"], ("mfence", th.name, p, phase),
                                 FENCE_RANK[sem] + (SCOPE_RANK[scope],), f"fence.{sem}.{scope}", needs_barrier=nb)
                if th.position.cluster is None:
                    continue
                # the restricted fences (A10), and their async::generic proxy forms
                for sem, restrict, ok in (("release", "sync_restrict::shared::cta", writes_after),
                                          ("acquire", "sync_restrict::shared::cluster", reads_before)):
                    if not ok:
                        continue
                    rank = (1, 0) if sem == "acquire" else (0, 1)
                    key = f"fence.{sem}.{restrict}.cluster"
                    self.ins(th, p, phase, [key], ("rfence", th.name, p, phase, sem), rank, key, needs_barrier=nb)
                    if f.has["async"]:
                        key = f"fence.proxy.async::generic.{sem}.{restrict}.cluster"
                        self.ins(th, p, phase, [key], ("rpfence", th.name, p, phase, sem), rank, key,
                                 needs_barrier=nb)

    # -- proxy fences ----------------------------------------------------------------------
    def proxy_fences(self, th, barrier_points) -> None:
        f = self.f
        variants = []
        if f.has["async"]:
            variants = self.async_variants(th)
        for p in f.points(th):
            for phase in ("proxy_pre", "proxy_post"):
                nb = None
                if phase == "proxy_post":
                    if (th.name, p) not in barrier_points:
                        continue
                    nb = (th.name, p)
                for text in variants:
                    self.ins(th, p, phase, [text], ("pasync", th.name, p, phase), PROXY_RANK[text], text,
                             needs_barrier=nb)
                if f.has["alias"]:
                    self.ins(th, p, phase, ["fence.proxy.alias"], ("palias", th.name, p, phase), (), "fence.proxy.alias",
                             needs_barrier=nb)
                if f.has["tmap"]:
                    for scope in f.scope_reps(th):
                        key = f"fence.proxy.tensormap::generic.release.{scope}"
                        self.ins(th, p, phase, [key], ("ptmrel", th.name, p, phase), (SCOPE_RANK[scope],), key,
                                 needs_barrier=nb)
                    for m in self.tensormaps():
                        for scope in f.scope_reps(th):
                            key = f"fence.proxy.tensormap::generic.acquire.{scope}"
                            self.ins(th, p, phase, [f"{key} [{m}], 128"], ("ptmacq", th.name, p, phase, m),
                                     (SCOPE_RANK[scope],), key, needs_barrier=nb)

    def tensormaps(self) -> list[str]:
        es = self.f.es
        return sorted({es.events[e].vloc for e in es.sets.get("TMAP", ()) if es.events[e].vloc})

    def async_variants(self, th) -> list[str]:
        """The fence.proxy.async variants of `th` that cover some async access, the cheapest of
        each coverage (pruning 4)."""
        f = self.f
        by_cover: dict = {}
        for text in PROXY_ASYNC:
            try:
                e = Edit("probe", "insert", (), (), 0, (Insert(th.name, 0, 0, (instr(text, self.test),)),))
                prog = build(self.test, (e,))
            except LitmusError:
                continue
            es = prog.es
            fence = next(x.eid for x in es.events if x.thread == th.name and x.index == 0)
            pscta = es.relations.get("pscta", frozenset())
            any_cta = "proxy-fence-any-cta" in f.options
            cover = frozenset(prog.names[y] for (x, y) in es.relations.get("pfcover", ()) if x == fence
                              and y in es.sets.get("ASYNC", ()) and (any_cta or (fence, y) in pscta))
            if cover:
                by_cover.setdefault(cover, []).append(text)
        out = []
        for texts in by_cover.values():
            out.append(min(texts, key=lambda t: (self.cm[t], sum(PROXY_RANK[t]), t)))
        return sorted(out)

    # -- instruction-specific fences and waits ---------------------------------------------
    def specific(self, th) -> None:
        f = self.f
        code = th.code
        fam = [i.family for i in code]
        for p in f.points(th):
            before, after = fam[:p], fam[p:]
            if "mbarrier.init" in before:
                self.ins(th, p, "mbinit", ["fence.mbarrier_init.release.cluster"], ("mbinit", th.name, p), (),
                         "fence.mbarrier_init.release.cluster")
            if any(x.startswith("wgmma.mma_async") for x in after):
                self.ins(th, p, "wgmma_fence", ["wgmma.fence.sync.aligned"], ("wgf", th.name, p), (), "wgmma.fence")
            if f.has["tcgen05"]:
                self.ins(th, p, "tc_before", ["tcgen05.fence::before_thread_sync"], ("tcb", th.name, p), (),
                         "tcgen05.fence::before_thread_sync")
                self.ins(th, p, "tc_after", ["tcgen05.fence::after_thread_sync"], ("tca", th.name, p), (),
                         "tcgen05.fence::after_thread_sync")
            if "cp.async" in before:
                self.ins(th, p, "wait", ["cp.async.wait_all"], ("cpwait", th.name, p), (), "cp.async.wait_all")
            if "cp.async.bulk.commit_group" in before:
                self.ins(th, p, "wait", ["cp.async.bulk.wait_group.read 0"], ("bulkwait", th.name, p), (0,),
                         "cp.async.bulk.wait_group.read")
                self.ins(th, p, "wait", ["cp.async.bulk.wait_group 0"], ("bulkwait", th.name, p), (1,),
                         "cp.async.bulk.wait_group")
            if "wgmma.commit_group" in before:
                self.ins(th, p, "wait", ["wgmma.wait_group.sync.aligned 0"], ("wgwait", th.name, p), (),
                         "wgmma.wait_group")
            if any(x.startswith("tcgen05.ld") for x in before):
                self.ins(th, p, "wait", ["tcgen05.wait::ld.sync.aligned"], ("tcwld", th.name, p), (), "tcgen05.wait::ld")
            if any(x.startswith("tcgen05.st") for x in before):
                self.ins(th, p, "wait", ["tcgen05.wait::st.sync.aligned"], ("tcwst", th.name, p), (), "tcgen05.wait::st")
            for mb in self.own_copy_mbarriers(th, p):
                waited = sum(1 for i in code[:p] if i.family == "mbarrier.try_wait" and _addr(i) == mb)
                reg = self.fresh("fixp")
                self.ins(th, p, "wait", [f"mbarrier.try_wait.parity.shared::cta.b64 {reg}, [{mb}], {waited % 2} == 1"],
                         ("mbwait", th.name, p, mb), (), "mbarrier.try_wait")

    def own_copy_mbarriers(self, th, p: int) -> list[str]:
        """The mbarriers of th's CTA that an asynchronous copy issued by th before point p
        completes on (its last address operand, with .mbarrier::complete_tx::bytes), when th does
        not wait on that mbarrier anywhere after the copy: a wait for the phase the copy
        completes (a second wait would wait for a phase nothing completes)."""
        out = []
        for k, i in enumerate(th.code[:p]):
            if "mbarrier::complete_tx::bytes" not in i.qualifiers:
                continue
            mb = _addr(i, last=True)
            decl = self.test.mem(mb) if mb else None
            if decl is None or decl.owner is None or decl.owner.cta_key() != th.position.cta_key() or mb in out:
                continue
            if any(j.family in ("mbarrier.try_wait", "mbarrier.test_wait") and _addr(j) == mb for j in th.code[k + 1:]):
                continue
            out.append(mb)
        return out

    def fresh(self, prefix: str) -> str:
        used = {r for t in self.test.threads for i in t.code for r in _regs(i)}
        n = 0
        while f"{prefix}{n}" in used:
            n += 1
        return f"{prefix}{n}"

    # -- barriers --------------------------------------------------------------------------
    def cluster_threads(self) -> list[tuple[str, ...]]:
        groups: dict = {}
        for t in self.test.threads:
            groups.setdefault(t.position.cluster_key(), []).append(t)
        return [tuple(t.name for t in ts) for ts in groups.values()
                if len({t.position.cta_key() for t in ts}) > 1]

    def barriers(self) -> None:
        f, test = self.f, self.test
        threads = {t.name: t for t in test.threads}
        groups = []
        by_cta: dict = {}
        for t in test.threads:
            by_cta.setdefault(t.position.cta_key(), []).append(t.name)
        used_ids = {i.operands[1 if i.quals.get("mode") == "red" else 0].value
                    for t in test.threads for i in t.code if i.family in ("bar", "barrier")}
        free = next((b for b in range(16) if b not in used_ids), None)
        for cta, names in sorted(by_cta.items(), key=lambda kv: repr(kv[0])):
            if len(names) > 1 and free is not None:
                groups.append((("bar", cta), names, [f"bar.sync {free}"], "bar.sync", None))
        by_warp: dict = {}
        for t in test.threads:
            by_warp.setdefault(t.position, []).append(t.name)
        roles = role_warps(test)
        for pos, names in sorted(by_warp.items(), key=lambda kv: repr(kv[0])):
            if len(names) > 1 and not (roles is not None and split_warp(test, roles, pos, names)):
                groups.append((("warp", str(pos)), names, ["bar.warp.sync 0xffffffff"], "bar.warp.sync",
                               lambda i: i.family == "bar.warp" and getattr(i.operands[0], "value", None) == 0xFFFFFFFF))
        for names in self.cluster_threads():
            groups.append((("cluster", names), list(names),
                           ["barrier.cluster.arrive.aligned", "barrier.cluster.wait.aligned"], "barrier.cluster",
                           lambda i: i.family == "barrier.cluster"))
        self.barrier_points = set()
        for slot, names, texts, cost_key, same in groups:
            per = [f.points(threads[n]) for n in names]
            for combo in product(*per):
                if same is not None:
                    counts = {sum(1 for i in threads[n].code[:p] if same(i)) for n, p in zip(names, combo)}
                    if len(counts) > 1:
                        continue        # would re-pair the existing barrier instances
                try:
                    changes = tuple(Insert(n, p, PHASES["barrier"],
                                           tuple(instr(t, test, _line(threads[n], p)) for t in texts))
                                    for n, p in zip(names, combo))
                except LitmusError:
                    break
                key = "barrier:" + texts[0] + "@" + ",".join(f"{n}@{p}" for n, p in zip(names, combo))
                self.add(Edit(key, "barrier", slot, None, self.cm[cost_key], changes, cost_key))
                self.barrier_points.update(zip(names, combo))

    # -- strengthening and tightening ------------------------------------------------------
    def strengthen(self, th) -> None:
        for idx, ins in enumerate(th.code):
            fam = ins.family
            if fam in ACCESS_SEMS:
                self.access(th, idx, ins)
            elif fam == "fence" and not ins.quals.get("restrict"):
                self.fence(th, idx, ins)
            elif fam == "barrier.cluster" and ins.quals.get("mode") == "arrive" and ins.quals.get("sem") == "relaxed":
                new = tuple(q for q in ins.qualifiers if q != "relaxed")
                self.replace(th, idx, ins, new, ("access", th.name, idx), (1,), "barrier.cluster.arrive.release",
                             self.cm["barrier.cluster.arrive.release"], "strengthen")
            elif fam in ("cp.async.wait_group", "cp.async.bulk.wait_group", "wgmma.wait_group"):
                self.tighten(th, idx, ins)

    def access(self, th, idx: int, ins: Instr) -> None:
        q = ins.quals
        sems, default = ACCESS_SEMS[ins.family]
        if q.get("mmio") or q.get("sem") == "volatile":
            return
        sem0 = q.get("sem") or default
        mb = ins.family.startswith("mbarrier")
        scope0 = q.get("scope") or (("cta" if mb else "gpu") if sem0 != "weak" else None)
        rank0 = ACCESS_RANK[sem0] + (SCOPE_RANK[scope0] if scope0 else -1,)
        reps = [s for s in self.f.scope_reps(th) if not mb or s in MB_SCOPES]
        if mb and "cluster" not in reps and scope0 == "cta" and any(s != "cta" for s in self.f.scope_reps(th)):
            reps.append("cluster")
        scopes = sorted({s for s in reps if scope0 is None or SCOPE_RANK[s] > SCOPE_RANK[scope0]}
                        | ({scope0} if scope0 else set()), key=SCOPE_RANK.get)
        base = self.cm.access(sem0, scope0)
        for sem in sems:
            for scope in scopes:
                rank = ACCESS_RANK[sem] + (SCOPE_RANK[scope],)
                if rank == rank0 or not all(a >= b for a, b in zip(rank, rank0)):
                    continue
                new = _with_sem_scope(ins, sem, scope)
                cost = max(1, self.cm.access(sem, scope) - base)
                self.replace(th, idx, ins, new, ("access", th.name, idx), rank, f"access.{sem}.{scope}", cost, "strengthen")

    def fence(self, th, idx: int, ins: Instr) -> None:
        sem0, scope0 = ins.quals["sem"], ins.quals["scope"]
        rank0 = FENCE_RANK[sem0] + (SCOPE_RANK[scope0],)
        scopes = sorted({s for s in self.f.scope_reps(th) if SCOPE_RANK[s] > SCOPE_RANK[scope0]} | {scope0},
                        key=SCOPE_RANK.get)
        for sem in FENCE_RANK:
            for scope in scopes:
                rank = FENCE_RANK[sem] + (SCOPE_RANK[scope],)
                if rank == rank0 or not all(a >= b for a, b in zip(rank, rank0)):
                    continue
                new = _with_sem_scope(ins, sem, scope)
                cost = max(1, self.cm.fence(sem, scope) - self.cm.fence(sem0, scope0))
                self.replace(th, idx, ins, new, ("access", th.name, idx), rank, f"fence.{sem}.{scope}", cost, "strengthen")

    def tighten(self, th, idx: int, ins: Instr) -> None:
        n0 = ins.operands[0].value
        read0 = bool(ins.quals.get("read"))
        alts = []
        if ins.family == "cp.async.wait_group":
            alts = [(f"cp.async.wait_group {n}", (0, -n)) for n in range(n0)] + [("cp.async.wait_all", (1, 0))]
        elif ins.family == "wgmma.wait_group":
            alts = [(f"wgmma.wait_group.sync.aligned {n}", (-n,)) for n in range(n0)]
        else:
            for read in ((True, False) if read0 else (False,)):
                for n in range(n0 + 1):
                    if (read, n) != (read0, n0):
                        alts.append((f"cp.async.bulk.wait_group{'.read' if read else ''} {n}", (0 if read else 1, -n)))
        for text, rank in alts:
            try:
                new = instr(text, self.test, ins.where.line if ins.where else None)
            except LitmusError:
                continue
            key = f"{th.name}#{idx}:{text}"
            self.add(Edit(key, "tighten", ("wait", th.name, idx), rank, self.cm["tighten"],
                          (Replace(th.name, idx, new),), "tighten"))

    def replace(self, th, idx, ins, new, slot, rank, cost_key, cost, kind) -> None:
        try:
            if isinstance(new, tuple):
                new = with_qualifiers(ins, new)
            new = _relocated(new, ins)
        except LitmusError:
            return
        key = f"{th.name}#{idx}:{new.text}"
        self.add(Edit(key, kind, slot, rank, cost, (Replace(th.name, idx, new),), cost_key))


def _relocated(new: Instr, old: Instr) -> Instr:
    from dataclasses import replace
    return replace(new, where=old.where)


def _with_sem_scope(ins: Instr, sem: str, scope: str) -> tuple[str, ...]:
    """The qualifiers of `ins` with this semantics and scope (other qualifiers kept in order)."""
    fam_parts = len(ins.family.split(".")) - 1
    head, rest = list(ins.qualifiers[:fam_parts]), list(ins.qualifiers[fam_parts:])
    drop = {"weak", "relaxed", "acquire", "release", "acq_rel", "sc", *SCOPES}
    lead = [q for q in rest if q in _LEADING]
    tail = [q for q in rest if q not in drop and q not in _LEADING]
    return tuple(head + lead + [sem, scope] + tail)


def _line(th, p: int) -> int | None:
    near = th.code[p] if p < len(th.code) else (th.code[-1] if th.code else None)
    return near.where.line if near is not None and near.where else None


def _addr(i: Instr, last: bool = False) -> str | None:
    addrs = [o.base for o in i.operands if isinstance(o, Addr)]
    return (addrs[-1] if last else addrs[0]) if addrs else None


def _regs(i: Instr):
    from ..ast import registers
    return registers(i)


def candidates(test: LitmusTest, es: EventStructure, cm: costs_mod.CostModel, options=frozenset()) -> tuple[Edit, ...]:
    """Every candidate edit of `test` (validated instructions), pruned (see the module docstring),
    in a stable order."""
    g = _Gen(Facts(test, es, frozenset(options)), cm)
    g.barriers()
    for th in test.threads:
        g.memory_fences(th, g.barrier_points)
        g.proxy_fences(th, g.barrier_points)
        g.specific(th)
        g.strengthen(th)
    return tuple(g.out)
