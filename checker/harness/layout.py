"""Thread placement: how the test's positions (gpu / cluster / CTA / warp) become hardware CTAs,
warps and lanes, with many instances of the test per launch.

One *group* runs the test's CTAs once per instance slot: it is `units` hardware clusters of
`cluster` CTAs each (without clusters, one CTA per unit). In a hardware warp that holds k litmus
threads, lane l (after a per-launch lane permutation) plays thread l % k of instance slot l // k;
every warp of the program holds `per_warp` = 32 // K instance slots, K the largest k. A launch runs
`testing_groups` groups plus stress units, in an order shuffled on the host.

A litmus thread that runs warpgroup instructions (wgmma) stands for a whole warpgroup: it takes
the four warps from its warp on (which must start a warpgroup: warp 0, 4, ...), every lane of them
plays it, and the program then holds one instance per warp (`per_warp` 1, no warp rotation). A
thread that runs warp-collective tcgen05 instructions takes its whole warp the same way, and a
test with Tensor Memory places test warp w at hardware warp 4w (`stride` 4), so every warp
reaches the same quarter of Tensor Memory (checker.harness.tmem).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ast import LitmusTest, Position

MAX_CLUSTER = 8          # portable cluster size
MAX_WARPS = 32           # 1024 threads per CTA


@dataclass(frozen=True)
class Slot:
    """Where litmus thread `thread` (index `tid`) runs: group CTA `role_cta`, warp, lane index."""

    tid: int
    thread: str
    role_cta: int
    warp: int
    lane: int            # index among the litmus threads of that warp (0..k-1)


@dataclass(frozen=True)
class Layout:
    cluster: int                              # hardware cluster size; 1 and not clustered = plain launch
    clustered: bool
    units: int                                # hardware clusters (or CTAs) per group
    warps: int                                # warps per CTA
    per_warp: int                             # instance slots per warp
    slots: tuple[Slot, ...]                   # one per litmus thread, in test order
    cta_of: tuple[tuple[tuple, int], ...]     # test CTA key -> role CTA
    k: tuple[tuple[tuple[int, int], int], ...]  # (role CTA, warp) -> litmus threads in that warp
    warpgroups: frozenset[int] = frozenset()  # litmus threads (tid) that stand for a warpgroup
    whole_warps: frozenset[int] = frozenset() # litmus threads (tid) that take their whole warp

    @property
    def ctas_per_group(self) -> int:
        return self.units * self.cluster

    def role_cta(self, pos: Position) -> int:
        return dict(self.cta_of)[pos.cta_key()]

    def rank(self, role_cta: int) -> int:
        """Rank within its hardware cluster."""
        return role_cta % self.cluster

    def unit(self, role_cta: int) -> int:
        return role_cta // self.cluster

    def threads_in(self, role_cta: int, warp: int) -> int:
        return dict(self.k).get((role_cta, warp), 0)

    def warps_of(self, role_cta: int) -> list[int]:
        return sorted(w for (c, w), n in self.k if c == role_cta and n)


def layout_problems(test: LitmusTest, warpgroups: frozenset[int] = frozenset(), stride: int = 1) -> list[str]:
    """Why the test's positions cannot be laid out (empty: they can); `warpgroups`: the threads
    (tid) that stand for a warpgroup."""
    problems = []
    for tid in sorted(warpgroups):
        t = test.threads[tid]
        if t.position.warp % 4:
            problems.append(f"{t.name} runs warpgroup instructions but is at warp {t.position.warp}: a "
                            f"warpgroup starts at warp 0, 4, 8, ...")
        clash = [u.name for u in test.threads if u is not t and u.position.cta_key() == t.position.cta_key()
                 and t.position.warp <= u.position.warp < t.position.warp + 4]
        if clash:
            problems.append(f"{t.name} stands for the warpgroup of warps {t.position.warp}-{t.position.warp + 3}, "
                            f"where {', '.join(clash)} also run: put them in another warpgroup")
    gpus = sorted({t.position.gpu for t in test.threads})
    if len(gpus) > 1:
        problems.append(f"threads on {len(gpus)} GPUs: multi-GPU tests are not expressible yet")
    if any(t.position.warp >= MAX_WARPS for t in test.threads):
        problems.append(f"warp index >= {MAX_WARPS}: a CTA has at most {MAX_WARPS} warps")
    elif any(t.position.warp * stride >= MAX_WARPS for t in test.threads):
        problems.append(f"warp index >= {MAX_WARPS // stride}: Tensor Memory tests place warp w at hardware warp "
                        f"{stride}w, and a CTA has at most {MAX_WARPS} warps")
    sizes = {}
    for key in _cta_keys(test):
        if key[1] is not None:
            sizes.setdefault((key[0], key[1]), set()).add(key[2])
    if sizes and max(len(v) for v in sizes.values()) > MAX_CLUSTER:
        problems.append(f"a cluster of more than {MAX_CLUSTER} CTAs (the portable maximum)")
    per_warp = {}
    for t in test.threads:
        per_warp[(t.position.cta_key(), t.position.warp)] = per_warp.get((t.position.cta_key(), t.position.warp), 0) + 1
    if per_warp and max(per_warp.values()) > 32:
        problems.append("more than 32 threads in one warp")
    return problems


def _cta_keys(test: LitmusTest) -> list[tuple]:
    keys = {t.position.cta_key() for t in test.threads}
    for m in test.memory:
        if m.space == "shared" and m.owner is not None:
            keys.add(m.owner.cta_key())
    return sorted(keys, key=lambda k: (k[0], -1 if k[1] is None else k[1], k[2]))


def make_layout(test: LitmusTest, warpgroups: frozenset[int] = frozenset(), whole_warps: frozenset[int] = frozenset(),
                stride: int = 1) -> Layout:
    """The placement of `test` (call layout_problems first): `warpgroups` and `whole_warps`, the
    threads (tid) that take four warps or one warp; `stride`, hardware warps per test warp."""
    keys = _cta_keys(test)
    clustered = any(k[1] is not None for k in keys)
    if clustered:
        clusters = sorted({(k[0], k[1]) for k in keys})
        members = {c: sorted(k for k in keys if (k[0], k[1]) == c) for c in clusters}
        size = max(len(v) for v in members.values())
        cta_of = {k: u * size + members[c].index(k) for u, c in enumerate(clusters) for k in members[c]}
        units = len(clusters)
    else:
        size, units = 1, len(keys)
        cta_of = {k: i for i, k in enumerate(keys)}
    counts: dict[tuple[int, int], int] = {}
    slots = []
    for tid, t in enumerate(test.threads):
        key = (cta_of[t.position.cta_key()], t.position.warp * stride)
        lane = counts.get(key, 0)
        counts[key] = lane + 1
        slots.append(Slot(tid, t.name, key[0], key[1], lane))
    kmax = max(counts.values(), default=1)
    warps = max((t.position.warp * stride + (4 if tid in warpgroups else 1) for tid, t in enumerate(test.threads)),
                default=1)
    whole = warpgroups | whole_warps
    for tid in warpgroups:            # its three other warps: every lane plays it too
        s = slots[tid]
        for w in range(s.warp + 1, s.warp + 4):
            counts[(s.role_cta, w)] = 1
    return Layout(cluster=size, clustered=clustered, units=units, warps=warps,
                  per_warp=1 if whole else 32 // kmax,
                  slots=tuple(slots), cta_of=tuple(sorted(cta_of.items(), key=lambda kv: kv[1])),
                  k=tuple(sorted(counts.items())), warpgroups=frozenset(warpgroups), whole_warps=frozenset(whole_warps))
