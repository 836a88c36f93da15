"""Why a mutant of a skeleton is not load-bearing within its unrolled window.

A mutant (checker.extract.render.mutants) changes one synchronization operation. It is
*load-bearing* when it changes a verdict of the skeleton's own question: undefined behaviour
appears, an outcome the skeleton forbids becomes allowed, or an await can no longer be passed
(a hang). The check of `ptxmc extract --mutants` decides the first two with the model, and a hang
where every execution blocks, which is the hang a dropped or short mbarrier arrival causes: an
mbarrier phase that lacks an arrival never completes, in any execution, so every execution that
waits for it blocks.

A mutant the check does not catch is labelled *not load-bearing* only with a reason read off the
skeleton itself (`reason`): the phase an arrival completes is awaited by no role within the
window; the pieces a proxy fence orders get no later asynchronous copy within the window; nothing
follows the cluster barrier a release serves; nothing but waits follows a wait; a wait orders no
two accesses to one piece (`_orders_no_data`). A mutant not caught and without such a reason is
UNEXPLAINED: the report says so, never drops it (tests/extract/test_extract.py requires none).
"""
from __future__ import annotations

import re

from .skeleton import Skeleton

ARRIVALS = ("mb_arrive", "tc_commit")
_NAME = re.compile(r"\[(\w+)")


def _names(text: str) -> list[str]:
    return _NAME.findall(text)


def reason(sk: Skeleton, role: str, index: int) -> str | None:
    """Why changing line `index` of role `role` changes no verdict within the window, or None."""
    r = next(x for x in sk.roles if x.name == role)
    ln = r.lines[index]
    if ln.kind in ARRIVALS or ln.kind == "mb_expect_tx":
        return _unawaited_phase(sk, r, index)
    if ln.kind == "fence" and ".proxy" in ln.text:
        return _no_later_copy(sk, r, index)
    if ln.kind == "cluster_barrier":
        return _nothing_after_cluster_barrier(sk, r, index)
    if ln.kind == "mb_wait" and all(x.kind == "mb_wait" for x in r.lines[index + 1:]):
        return "nothing follows this wait in its role but other waits: it orders nothing"
    if ln.kind == "mb_wait":
        return _orders_no_data(sk, r, index)
    return None


def _unawaited_phase(sk: Skeleton, r, index: int) -> str | None:
    ln = r.lines[index]
    [mb] = _names(ln.text)[-1:] or [None]
    if mb is None:
        return None
    kinds = ARRIVALS if ln.kind in ARRIVALS else ("mb_expect_tx",)
    mine = [i for i, x in enumerate(r.lines) if x.kind in kinds and _names(x.text)[-1:] == [mb]]
    awaited = max((_awaited(r2, mb) for r2 in sk.roles), default=0)
    total = sum(_weight(x) for r2 in sk.roles for x in r2.lines if x.kind in ARRIVALS and _names(x.text)[-1:] == [mb])
    count = _init_count(sk, mb)
    if not count or not total:
        return None
    if ln.kind in ARRIVALS and any(_drops(x) for r2 in sk.roles for x in r2.lines
                                   if x.kind in ARRIVALS and _names(x.text)[-1:] == [mb]):
        phase = _phase_with_drops(sk, r, index, mb, count)
        if phase is None:
            return None
    elif not total // count:
        return None
    elif ln.kind in ARRIVALS:
        phases = total // count
        # each phase takes the same share of this role's arrivals (its arrival count per phase)
        weights = [_weight(r.lines[i]) for i in mine]
        if sum(weights) % phases:
            return None
        phase = sum(weights[:mine.index(index)]) // (sum(weights) // phases)
    else:
        phase = mine.index(index)
    if phase < awaited:
        return None
    return (f"it completes phase {phase} of {mb}, which no role waits for within the {sk.iterations}-iteration "
            f"window (the waits cover phase{'s 0..' + str(awaited - 1) if awaited > 1 else ' 0' if awaited else 's: none'};"
            " unroll more to see it matter)")


def _drops(ln) -> bool:
    return ln.kind == "mb_arrive" and ln.text.startswith("mbarrier.arrive_drop")


def _phase_with_drops(sk: Skeleton, r, index: int, mb: str, count: int) -> int | None:
    """The phase of `mb` that arrival `index` of role `r` falls in, when some role leaves the
    mbarrier with `arrive_drop` (an arrive-on that also lowers the expected count of the later
    phases by its count: PTX ISA, mbarrier.arrive_drop). Read as: a role that drops arrives with
    the drop's count in each phase, the drop its last arrival (k arrivals: phases 0..k-1); every
    other role arrives the same share in each of the P phases, which the expected counts left
    after the drops fill. Any other shape: None (no reason is claimed). Dividing every arrival by
    the initial count, as without drops, miscounted: the phases after a drop need fewer arrivals."""
    own: dict[str, list] = {}
    for r2 in sk.roles:
        xs = [(i, x) for i, x in enumerate(r2.lines) if x.kind in ARRIVALS and _names(x.text)[-1:] == [mb]]
        if xs:
            own[r2.name] = xs
    dropped = 0
    rest = 0
    for name, xs in own.items():
        drops = [k for k, (_, x) in enumerate(xs) if _drops(x)]
        if not drops:
            rest += sum(_weight(x) for _, x in xs)
            continue
        c = _weight(xs[drops[0]][1])
        if drops != [len(xs) - 1] or any(_weight(x) != c for _, x in xs):
            return None
        dropped += c
    if count - dropped <= 0 or not rest:
        return None
    phases = rest // (count - dropped)
    if not phases or any(len(ys) > phases for ys in own.values() if _drops(ys[-1][1])):
        return None
    xs = own[r.name]
    k = next(k for k, (i, _) in enumerate(xs) if i == index)
    if _drops(xs[-1][1]):
        return k
    weights = [_weight(x) for _, x in xs]
    if sum(weights) % phases:
        return None
    return sum(weights[:k]) // (sum(weights) // phases)


def _weight(ln) -> int:
    """The arrival count of an arrive line (its last operand after the mbarrier, after the
    expect_tx bytes when it has them; 1 when absent) or of a tcgen05.commit (1)."""
    if ln.kind != "mb_arrive":
        return 1
    nums = [int(x) for x in re.findall(r"\d+", ln.text.rsplit("]", 1)[1])]
    if "tx" in ln.mutable:
        nums = nums[1:]
    return nums[0] if nums else 1


def _awaited(r, mb: str) -> int:
    """How many phases of `mb` the role's waits need completed: its waits go through the phases
    in order; a wait for the parity of the phase before the next (a producer's first wait on an
    empty barrier, parity 1) waits for nothing new."""
    nxt = 0
    need = 0
    for x in r.lines:
        if x.kind == "mb_wait" and _names(x.text) == [mb]:
            parity = int(re.search(r", (\d) == 1$", x.text).group(1))
            if parity == nxt % 2:
                nxt += 1
            need = max(need, nxt)
    return need


def _init_count(sk: Skeleton, mb: str) -> int | None:
    for r in sk.roles:
        for x in r.lines:
            if x.kind == "mb_init" and _names(x.text) == [mb]:
                return int(x.text.rsplit(",", 1)[1])
    return None


ASYNC = ("tma_load", "tma_store", "wgmma_mma", "tc_mma")


def _no_later_copy(sk: Skeleton, r, index: int) -> str | None:
    """A proxy fence orders this role's earlier generic accesses before later asynchronous-proxy
    accesses to the same pieces. It changes nothing when every piece it orders was only read
    generically and gets no asynchronous copy after the reads the fence follows."""
    start = max((i for i, x in enumerate(r.lines[:index]) if x.kind == "fence" and ".proxy" in x.text), default=-1)
    generic = [x for x in r.lines[start + 1:index] if x.kind == "smem"]
    if not generic:
        return "no generic access of this role comes between it and the role's previous proxy fence"
    pieces = []
    for x in generic:
        if x.text.startswith("st"):
            return None                 # a generic write: an asynchronous read of it may need the fence
        pieces += [p for p in _names(x.text) if p not in pieces]
    for p in pieces:
        copies = sum(1 for r2 in sk.roles for x in r2.lines if x.kind == "tma_load" and _names(x.text)[:1] == [p])
        async_reads = sum(1 for r2 in sk.roles for x in r2.lines
                          if x.kind in ("tma_store", "wgmma_mma", "tc_mma") and p in _names(x.text))
        reads = sum(1 for x in r.lines[:index] if x.kind == "smem" and _names(x.text) == [p])
        if async_reads or reads < copies:
            return None
    return (f"the piece{'s' if len(pieces) > 1 else ''} it orders ({', '.join(pieces)}) get no asynchronous copy "
            f"after this read within the {sk.iterations}-iteration window (unroll more to see it matter)")


def _nothing_after_cluster_barrier(sk: Skeleton, r, index: int) -> str | None:
    """A barrier.cluster.arrive's release orders the role's accesses before what every role does
    after the matching barrier.cluster.wait; when no role accesses memory after it, nothing does."""
    k = sum(1 for x in r.lines[:index] if x.kind == "cluster_barrier" and "arrive" in x.text)
    for r2 in sk.roles:
        waits = [i for i, x in enumerate(r2.lines) if x.kind == "cluster_barrier" and "wait" in x.text]
        if len(waits) <= k:
            return None
        if any(x.kind not in ("cluster_barrier", "barrier") for x in r2.lines[waits[k] + 1:]):
            return None
    return ("no role accesses memory after the cluster barrier it releases, and no role accesses another CTA's "
            "shared memory before it (the exit checks of distributed shared memory read after it)")


SIGNALS = ("mb_arrive", "mb_expect_tx", "tma_load", "tc_commit")   # what moves an mbarrier's phase (its last operand)
_PLAIN_FENCE = re.compile(r"fence\.(proxy\.|mbarrier_init)")


def _orders_no_data(sk: Skeleton, r, index: int) -> str | None:
    """A wait on mbarrier M orders what comes before M's phase moves (every role's lines up to its
    last arrive, expect_tx, copy completion or commit on M, and, through the waits and barriers among
    them, what those follow) before what comes after the wait (the role's later lines and, through
    the arrivals and barriers among them, every role's lines after the matching wait or barrier).
    Both sides are over-approximated; lines before a `bar.sync` that the waiting role also passes
    before the wait are left out, since that barrier orders them already. When no piece (a shared
    object, an mbarrier other than M, a tensor map or its global buffer, Tensor Memory) is accessed
    on both sides, the wait orders no two accesses of one piece: changing it changes no value read.
    Refused (None) where another way to order appears on either side: a cluster barrier, a strong
    generic access, a fence that is not a proxy or mbarrier_init fence."""
    ln = r.lines[index]
    [mb] = _names(ln.text)

    def occurrence(role, i):
        key = role.lines[i].text.split(None, 1)[1]
        return key, sum(1 for x in role.lines[:i] if x.kind == "barrier" and x.text.split(None, 1)[1] == key)

    def matching(role, key, k):
        same = [i for i, x in enumerate(role.lines) if x.kind == "barrier" and x.text.split(None, 1)[1] == key]
        return same[k] if k < len(same) else None

    def ordered_already(role, end):
        """The first line of `role` before `end` that a bar.sync r also passes before its wait does not order."""
        for j in range(end - 1, -1, -1):
            x = role.lines[j]
            if x.kind == "barrier" and x.text.startswith("bar.sync"):
                m = matching(r, *occurrence(role, j))
                if m is not None and m < index and r.lines[m].text.startswith("bar.sync"):
                    return j + 1
        return 0

    def pieces(lines) -> set | None:
        out = set()
        for x in lines:
            if x.kind == "cluster_barrier" or (x.kind == "fence" and not _PLAIN_FENCE.match(x.text)) \
                    or (x.kind in ("smem", "shadow") and x.text.split(".")[1] in ("relaxed", "release", "acquire")):
                return None
            names = _names(x.text)
            if x.kind in ("mb_wait", *SIGNALS) and names[-1:] == [mb]:
                names = names[:-1]          # the edge in question itself
            for n in names:
                out.add(n)
                out.update(str(v) for v in (sk.memory.get(n, {}).get("tensormap") or {}).values())
        return out

    def signals_on(m):
        return [(x, max(i for i, y in enumerate(x.lines) if y.kind in SIGNALS and _names(y.text)[-1:] == [m]))
                for x in sk.roles if any(y.kind in SIGNALS and _names(y.text)[-1:] == [m] for y in x.lines)]

    before: set = set()
    todo = [(x, end + 1) for x, end in signals_on(mb)]
    seen = set()
    while todo:
        role, end = todo.pop()
        start = ordered_already(role, end)
        if (role.name, start, end) in seen:
            continue
        seen.add((role.name, start, end))
        got = pieces(role.lines[start:end])
        if got is None:
            return None
        before |= got
        for j in range(start, end):
            x = role.lines[j]
            if x.kind == "mb_wait":
                todo += [(y, e + 1) for y, e in signals_on(_names(x.text)[0])]
            elif x.kind == "barrier":
                for y in sk.roles:
                    m = matching(y, *occurrence(role, j))
                    if m is not None and y is not role:
                        todo.append((y, m + 1))

    after: set = set()
    todo = [(r, index + 1)]
    seen = set()
    while todo:
        role, start = todo.pop()
        if (role.name, start) in seen:
            continue
        seen.add((role.name, start))
        got = pieces(role.lines[start:])
        if got is None:
            return None
        after |= got
        for j in range(start, len(role.lines)):
            x = role.lines[j]
            if x.kind in SIGNALS:
                m = _names(x.text)[-1]
                for y in sk.roles:
                    waits = [i for i, z in enumerate(y.lines) if z.kind == "mb_wait" and _names(z.text) == [m]]
                    if waits:
                        todo.append((y, waits[0]))
            elif x.kind == "barrier":
                for y in sk.roles:
                    m = matching(y, *occurrence(role, j))
                    if m is not None:
                        todo.append((y, m))
    if before & after:
        return None
    return (f"it orders no data: what comes before the arrivals on {mb} ({_few(before)}) and what comes after "
            f"this wait ({_few(after)}) share no piece, so the order between roles it gives changes no value read")


def _few(names: set) -> str:
    xs = sorted(names)
    return ", ".join(xs[:4]) + (f" and {len(xs) - 4} more" if len(xs) > 4 else "") if xs else "nothing"
