"""Fence-insertion policies: TileLang's InjectFenceProxy as documented, and the corrected rule.

Both take a litmus test with its async proxy fences already removed (`strip`) and return the
insertions they make, as checker.repair edits on that stripped test. A point p of a thread is
before its instruction p (p = len(code): at the end). Tests are straight-line today, so a
thread's instructions are its execution order and no control-flow join arises (docs/audit.md).

`tilelang` (the pass's rule as its source has it, TileLang src/transform/inject_fence_proxy.cc,
per thread): a state in {none, generic, async} starts at none; each instruction is classified by
TILELANG_CLASSES below (docs/audit.md#the-pass-as-audited lists the table): a generic one sets the
state to generic; an async one gets `fence.proxy.async` right before it when the state is
generic, and sets the state to async; the inserted fence resets the state; everything else
leaves it alone. A TMA store (shared -> global, bulk-group completion, reductions included) not
immediately followed by its handshake `cp.async.bulk.commit_group; cp.async.bulk.wait_group`
(tma_store_arrive / tma_store_wait) gets `cp.async.bulk.commit_group; cp.async.bulk.wait_group.read
0` right after it.

`corrected` (docs/audit.md#the-corrected-rule): the same scan, with three changes. (1) Pending
generic traffic is a set of (read|write, location) from the event structure (generic-proxy
accesses, and those of the texture/surface/constant proxies), and an async-proxy
operation (any instruction with an async-proxy access, tcgen05 included) needs a fence only if it
conflicts with it: it accesses a location with a pending generic write, or writes one with a
pending generic read. (2) An incoming synchronization (bar.sync/barrier, bar.warp.sync,
barrier.cluster.wait, an mbarrier wait, a load or atomic that may read another thread's write)
imports the generic traffic the partner threads have pending at their matching release points
(their barrier, arrive or write), to a fixpoint. (3) The fence goes right before the async
operation in the issuing thread (before the `tcgen05.fence::after_thread_sync` that orders a
tcgen05 operation after the thread's earlier instructions), unless the conflicting access is performed by another CTA (a
remote or multicast destination, docs/model.md#a2): then it goes in the partner thread of that
CTA, right before its release point (the writer-side fence)."""
from __future__ import annotations

from dataclasses import dataclass

from ..ast import Instr, LitmusTest
from .. import limits
from ..errors import CheckerError
from ..isa.registry import lower
from ..unfold.variants import combos, one_variant, single
from ..repair.edits import PHASES, Delete, Edit, Edited, Insert, apply, instr

FENCE = "fence.proxy.async"
COMMIT = "cp.async.bulk.commit_group"
WAIT = "cp.async.bulk.wait_group.read 0"
POLICIES = ("tilelang", "corrected")


@dataclass(frozen=True)
class Insertion:
    thread: str
    point: int                      # in the stripped test's code
    texts: tuple[str, ...]          # the instructions inserted
    kind: str                       # fence | handshake
    why: str


@dataclass(frozen=True)
class Applied:
    """A policy applied to a test: what was removed, what was inserted, and the result."""

    policy: str
    test: LitmusTest                        # the original
    removed: tuple[tuple[str, int, str], ...]   # (thread, original index, text) of stripped fences
    stripped: LitmusTest
    insertions: tuple[Insertion, ...]
    edits: tuple[Edit, ...]                 # on `stripped`
    audited: Edited                         # stripped + insertions (provenance: ('e', key, k) inserted)

    @property
    def fences(self) -> tuple[tuple[str, int], ...]:
        """(thread, index in the audited test) of every fence the policy inserted."""
        keys = {e.key for e in self.edits if e.cost_key == FENCE}
        return tuple((th, k) for th, prov in self.audited.provenance.items()
                     for k, p in enumerate(prov) if p[0] == "e" and p[1] in keys)

    @property
    def changed(self) -> bool:
        return bool(self.removed or self.insertions)


def is_async_proxy_fence(ins: Instr) -> bool:
    """A bi-directional async proxy fence: what the pass inserts, so what the audit removes. The
    uni-directional `fence.proxy.async::generic.{release,acquire}.sync_restrict` forms stay: they
    are release/acquire fences too, synchronization a proxy fence cannot replace."""
    return ins.family in ("fence.proxy", "membar.proxy") and ins.quals.get("kind") == "async"


def strip(test: LitmusTest) -> tuple[LitmusTest, tuple]:
    """`test` without its async proxy fences (the pass decides alone), and what was removed."""
    removed = tuple((th.name, k, ins.text) for th in test.threads for k, ins in enumerate(th.code)
                    if is_async_proxy_fence(ins))
    if not removed:
        return test, ()
    e = Edit("strip", "prune", ("strip",), None, 0, tuple(Delete(t, k) for t, k, _ in removed))
    return apply(test, (e,)).test, removed


# -- the pass's intrinsic classes (syntactic, as the pass sees them) ---------------------------
# TileLang src/transform/inject_fence_proxy.cc: ClassifyCallProxyEvent (IsAsyncIntrinsic,
# IsKnownGeneric, CallMayWriteSharedMemory, IsNonProxyIntrinsic) and the BufferStore visitor, by
# the PTX instruction each TileLang intrinsic or statement emits. (class, PTX, TileLang, test on
# the instruction and whether it writes shared memory through the generic proxy); first match
# wins, and what matches nothing has no effect on the state.

def _bulk(f: str) -> bool:
    return f.startswith("cp.async.bulk") and ".prefetch" not in f


TILELANG_CLASSES = (
    ("async", "wgmma.mma_async", "ptx_wgmma_ss, ptx_wgmma_rs, tl_gemm, tl_gemm_sp",
     lambda f, w: f.startswith("wgmma.mma_async")),
    ("async", "tcgen05.mma", "ptx_tcgen05_mma_ss, ptx_tcgen05_mma_ts",
     lambda f, w: f.startswith("tcgen05.mma")),
    ("async", "cp.async.bulk.commit_group", "tma_store_arrive",
     lambda f, w: f == "cp.async.bulk.commit_group"),
    ("async", "cp.async.bulk.wait_group{.read}", "tma_store_wait",
     lambda f, w: f == "cp.async.bulk.wait_group"),
    ("async", "cp.async.bulk{.tensor} copies (TMA loads and stores, multicast)",
     "tma_load, tma_load_im2col, tma_store, builtin ptx_cp_async_bulk", lambda f, w: _bulk(f)),
    ("async", "cp.reduce.async.bulk{.tensor}", "tma_store with its reduce flag (tl::tma_store_add)",
     lambda f, w: f.startswith("cp.reduce.async.bulk")),
    ("generic", "st, st.v2, st.v4 to shared memory (any width)", "BufferStore to a shared buffer",
     lambda f, w: f == "st" and w),
    ("generic", "atom, red on shared memory", "opaque calls writing shared memory (tvm_access_ptr "
     "with a write mask, address_of a shared BufferLoad)", lambda f, w: f in ("atom", "red") and w),
    ("generic", "ldmatrix", "ptx_ldmatrix", lambda f, w: f == "ldmatrix"),
    ("generic", "stmatrix", "ptx_stmatrix", lambda f, w: f == "stmatrix"),
    ("generic", "cp.async (not bulk)", "ptx_cp_async (tl and builtin)", lambda f, w: f == "cp.async"),
)
"""Not listed (no effect): loads (BufferLoad), barriers (tvm_storage_sync), mbarrier operations,
cp.async.mbarrier.arrive, cp.async.commit_group / wait_group (IsNonProxyIntrinsic), wgmma.fence /
commit_group / wait_group (warpgroup_*), memory fences, uni-directional async proxy fences,
st.async, red.async, tcgen05 instructions other than mma, prefetches."""


def tilelang_class(ins: Instr, writes_shared: bool) -> str:
    """async | generic | none, for the TileLang pass."""
    for cls, _, _, test in TILELANG_CLASSES:
        if test(ins.family, writes_shared):
            return cls
    return "none"


def is_async_intrinsic(ins: Instr) -> bool:
    return tilelang_class(ins, False) == "async"


def is_tma_store(ins: Instr) -> bool:
    f = ins.family
    return (_bulk(f) or f.startswith("cp.reduce.async.bulk")) and ".global.shared::cta" in "." + f + "."


def _root(loc: str) -> str:
    """The declared location of an atom (checker.model.memory.atom_name: `name[a:b]`)."""
    return loc.split("[", 1)[0]


def _accesses_of(test: LitmusTest) -> dict:
    """`_accesses` of the test's instructions: of its one event structure, or, for a test with
    several straight-line variants (control paths, barrier schedules: checker.unfold.variants),
    the union over its variants, each variant's instruction counted at the instruction of the test
    it comes from (its source place), so that the rule applies per instruction as a compiler pass
    does, and every path is judged afterwards."""
    one = one_variant(test)
    if one is not None and not test.expect_hang:
        return _accesses(lower(one))
    index = {t.name: {id(i.where): k for k, i in enumerate(t.code) if i.where is not None} for t in test.threads}
    out: dict = {}
    for c in combos(test, limits.current()):
        try:
            es = lower(single(c.test))
        except CheckerError:
            continue                    # a variant stuck at a barrier: its lowered prefix is another variant's
        code = {t.name: t.code for t in c.test.threads}
        for (th, k), kinds in _accesses(es).items():
            w = code[th][k].where
            k0 = None if w is None else index[th].get(id(w))
            if k0 is None:
                continue
            mine = out.setdefault((th, k0), {name: set() for name in kinds})
            for name, items in kinds.items():
                mine.setdefault(name, set()).update(items)
    return out


def _accesses(es) -> dict:
    """(thread, index) -> {'gen': {(r|w, loc)}, 'async': {(r|w, loc)}, 'mb': {loc}}."""
    out: dict = {}
    for e in es.events:
        if e.thread is None or e.kind not in ("R", "W") or e.loc is None or "INIT" in e.tags:
            continue
        d = out.setdefault((e.thread, e.index), {"gen": set(), "async": set(), "mb": set()})
        rw = "w" if e.kind == "W" else "r"
        if "MB" in e.tags:
            d["mb"].add(e.loc)
        elif "ASYNC" in e.tags:
            d["async"].add((rw, e.loc))
        elif "GEN" in e.tags or e.tags & {"SUR", "TEX", "CON"}:     # generic, or an ISCA'22 proxy
            d["gen"].add((rw, e.loc))
    return out


def _shared_store(acc: dict, th: str, k: int, test: LitmusTest) -> bool:
    d = acc.get((th, k))
    return bool(d) and any(rw == "w" and _space(test, loc) == "shared" for rw, loc in d["gen"])


def _space(test: LitmusTest, loc: str) -> str:
    m = test.mem(_root(loc))
    return m.space if m is not None else "global"


def _handshake(th, k: int, exact: bool = True) -> Insertion | None:
    """The handshake after a TMA store. `exact` (the pass): tma_store_arrive; tma_store_wait
    right after the store unless the two statements after it are exactly those (even when only
    the arrive is there); otherwise (the corrected rule) only what is missing."""
    code = th.code
    nxt = code[k + 1].family if k + 1 < len(code) else ""
    nxt2 = code[k + 2].family if k + 2 < len(code) else ""
    if nxt == COMMIT and nxt2 == "cp.async.bulk.wait_group":
        return None
    texts, point = (COMMIT, WAIT), k + 1
    if nxt == COMMIT and not exact:
        texts, point = (WAIT,), k + 2
    return Insertion(th.name, point, texts, "handshake",
                     f"TMA store '{code[k].text}': tma_store_arrive/tma_store_wait added")


def tilelang(test: LitmusTest) -> list[Insertion]:
    """The InjectFenceProxy rule, per thread, on a stripped test."""
    acc = _accesses_of(test)
    out = []
    for th in test.threads:
        state, since = "none", None
        for k, ins in enumerate(th.code):
            cls = tilelang_class(ins, _shared_store(acc, th.name, k, test))
            if cls == "async":
                if state == "generic":
                    out.append(Insertion(th.name, k, (FENCE,), "fence",
                                         f"state may be generic (since '{since.text}') before async '{ins.text}'"))
                state = "async"
                if is_tma_store(ins):
                    h = _handshake(th, k)
                    if h:
                        out.append(h)
            elif cls == "generic":
                state, since = "generic", ins
    return out


# -- the corrected rule ----------------------------------------------------------------------

def _is(ins: Instr, *words: str) -> bool:
    return any(w in ins.qualifiers for w in words)


def _partners(test: LitmusTest, acc: dict, th, k: int) -> list[tuple[str, int]]:
    """The release points of other threads an incoming synchronization at (th, k) may import from."""
    ins, f, out = th.code[k], th.code[k].family, []
    pos = th.position
    for u in test.threads:
        if u.name == th.name:
            continue
        for j, v in enumerate(u.code):
            g = v.family
            if f in ("bar", "barrier") and not _is(ins, "arrive"):
                same = g in ("bar", "barrier") and u.position.cta_key() == pos.cta_key() and \
                    (v.operands[:1] == ins.operands[:1])
            elif f == "bar.warp":
                same = g == "bar.warp" and u.position == pos
            elif f == "barrier.cluster" and _is(ins, "wait"):
                same = g == "barrier.cluster" and _is(v, "arrive") and u.position.cluster_key() == pos.cluster_key()
            elif f in ("mbarrier.try_wait", "mbarrier.test_wait"):
                mbs = acc.get((th.name, k), {}).get("mb", set())
                same = (g.startswith("mbarrier.arrive") or g in ("cp.async.mbarrier.arrive", "tcgen05.commit")) and \
                    bool(acc.get((u.name, j), {}).get("mb", set()) & mbs)
            else:
                reads = {loc for rw, loc in acc.get((th.name, k), {}).get("gen", ()) if rw == "r"}
                same = bool(reads) and any(rw == "w" and loc in reads
                                           for rw, loc in acc.get((u.name, j), {}).get("gen", ()))
            if same:
                out.append((u.name, j))
    return out


def corrected(test: LitmusTest) -> list[Insertion]:
    """The corrected rule (module docstring) on a stripped test."""
    acc = _accesses_of(test)
    partners = {(th.name, k): _partners(test, acc, th, k) for th in test.threads for k in range(len(th.code))}
    threads = {th.name: th for th in test.threads}
    writer_side: set = set()            # (thread, point) of writer-side fences
    while True:
        pending_at: dict = {}
        for _ in range(4 * len(test.threads) + 4):
            issuer, requests, new_at = [], set(), {}
            for th in test.threads:
                pend: set = set()
                for k, ins in enumerate(th.code):
                    if (th.name, k) in writer_side:
                        pend = set()
                    for (u, j) in partners[(th.name, k)]:
                        pend |= {(rw, loc, (u, j)) for rw, loc, _ in pending_at.get((u, j), ())}
                    new_at[(th.name, k)] = frozenset(pend)
                    d = acc.get((th.name, k), {"gen": set(), "async": set()})
                    if d["async"]:
                        locs = {loc for _, loc in d["async"]}
                        wlocs = {loc for rw, loc in d["async"] if rw == "w"}
                        need = [p for p in pend if (p[0] == "w" and p[1] in locs) or (p[0] == "r" and p[1] in wlocs)]
                        if need:
                            remote = [p for p in need if _performer(test, p[1], th) != th.position.cta_key()]
                            hops = {p[2] for p in remote if p[2] is not None and
                                    threads[p[2][0]].position.cta_key() == _performer(test, p[1], th)}
                            if hops:
                                requests |= hops
                            if len(hops) < len(remote) or len(remote) < len(need):
                                at = k              # before the tcgen05 ordering fence that orders the MMA
                                while at > 0 and th.code[at - 1].family == "tcgen05.fence::after_thread_sync":
                                    at -= 1
                                issuer.append(Insertion(th.name, at, (FENCE,), "fence",
                                                        _why(need, ins, "issuer")))
                                pend = set()
                    pend |= {(rw, loc, None) for rw, loc in d["gen"]}
                    new_at[(th.name, k)] = new_at[(th.name, k)]
            if new_at == pending_at:
                break
            pending_at = new_at
        if requests <= writer_side:
            break
        writer_side |= requests
    out = [Insertion(t, p, (FENCE,), "fence", "writer-side fence before the release that a remote async access "
                                                 "synchronizes with") for t, p in sorted(writer_side)]
    out += issuer
    for th in test.threads:
        for k, ins in enumerate(th.code):
            if is_tma_store(ins):
                h = _handshake(th, k, exact=False)
                if h:
                    out.append(h)
    return out


def _performer(test: LitmusTest, loc: str, th) -> tuple:
    """The CTA that performs an async access of `loc` (docs/model.md#a2): a shared location's
    owner, else the issuing thread's CTA."""
    m = test.mem(_root(loc))
    if m is not None and m.space == "shared" and m.owner is not None:
        return m.owner.cta_key()
    return th.position.cta_key()


def _why(need, ins: Instr, side: str) -> str:
    what = ", ".join(sorted({f"generic {'write' if rw == 'w' else 'read'} of {loc}" for rw, loc, _ in need}))
    return f"{what} pending before async '{ins.text}'"


RULES = {"tilelang": tilelang, "corrected": corrected}


def apply_policy(test: LitmusTest, policy: str) -> Applied:
    """Strip the test's async proxy fences, run the policy, and build the audited test."""
    stripped, removed = strip(test)
    ins = RULES[policy](stripped)
    edits = []
    for n, x in enumerate(ins):
        instrs = tuple(instr(t, stripped) for t in x.texts)
        phase = PHASES["proxy_pre"] if x.kind == "fence" else PHASES["wait"]
        edits.append(Edit(f"{policy}:{n:03d}", "insert", ("audit", x.thread, x.point, x.kind), None,
                          0, (Insert(x.thread, x.point, phase, instrs),),
                          FENCE if x.kind == "fence" else "handshake"))
    return Applied(policy, test, removed, stripped, tuple(ins), tuple(edits), apply(stripped, edits))
