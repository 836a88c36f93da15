"""Can every hardware barrier of a test complete? A CTA barrier (`bar`/`barrier` .sync/.arrive)
or cluster barrier (`barrier.cluster.arrive`/`.wait`) that never completes cannot be bounded the
way a spin loop is (checker.harness.flow): the waiting warps would hold the GPU forever. Such a
test is a hang the model reports (`expect: {hang: allowed}`), and the harness refuses to generate
it, naming the barrier, rather than leave a stuck GPU.

CTA barriers are simulated per CTA in litmus threads (each thread's barrier instructions in
program order; `bar.arrive` passes at once, `bar.sync` waits for the generation it arrived in).
A barrier id whose uses give different counts, or whose arrivals are not a whole number of
generations, or that more threads use than its count (which threads form a generation is then
decided at run time), is refused: the harness proves completion only where it does not depend on
the order of arrival. Cluster barriers must come in arrive/wait pairs (the padding that
checker.harness.codegen adds for threads with fewer pairs relies on it): a wait without its own
arrive never completes.

Pure: reads the test, emits nothing.
"""
from __future__ import annotations

from ..ast import Imm, Instr, LitmusTest


def _cta_barrier(i: Instr) -> bool:
    return i.op in ("bar", "barrier") and not i.has("cluster") and not i.has("warp")


def problems(test: LitmusTest) -> list[str]:
    """Why some hardware barrier of the test may never complete (empty: every one completes)."""
    return _cta_problems(test) + _cluster_problems(test)


def _cta_problems(test: LitmusTest) -> list[str]:
    out = []
    by_cta: dict[tuple, list] = {}
    for t in test.threads:
        by_cta.setdefault(t.position.cta_key(), []).append(t)
    unit = max(1, test.threads_per_litmus_thread)
    for key, threads in by_cta.items():
        ops = {}
        for t in threads:
            seq = []
            for k, i in enumerate(t.code):
                if not _cta_barrier(i) or i.pick(("red",)) or not i.operands or not isinstance(i.operands[0], Imm):
                    continue          # bar.red and register ids: the emitter refuses them itself
                count = i.operands[1].value // unit if len(i.operands) > 1 and isinstance(i.operands[1], Imm) \
                    else len(threads)
                seq.append((i.operands[0].value, count, i.pick(("sync", "arrive"), "sync") == "arrive",
                            f"{t.name}:{k} '{i.text}'"))
            if seq:
                ops[t.name] = seq
        if not ops:
            continue
        counts: dict[int, set] = {}
        users: dict[int, set] = {}
        uses: dict[int, int] = {}
        for name, seq in ops.items():
            for bid, c, _, _ in seq:
                counts.setdefault(bid, set()).add(c)
                users.setdefault(bid, set()).add(name)
                uses[bid] = uses.get(bid, 0) + 1
        bad = False
        for bid in sorted(counts):
            c = counts[bid]
            if len(c) > 1:
                out.append(f"barrier {bid} is used with different thread counts {sorted(c)}")
                bad = True
            elif len(users[bid]) > next(iter(c)):
                out.append(f"barrier {bid} (count {next(iter(c)) * unit}) is used by {len(users[bid])} threads: which "
                           f"of them complete a generation together is decided at run time, so the harness cannot "
                           f"prove that every one completes")
                bad = True
            elif uses[bid] % next(iter(c)):
                out.append(f"barrier {bid}: {uses[bid]} arrivals are not a whole number of generations of "
                           f"{next(iter(c)) * unit} threads")
                bad = True
        if bad:
            continue
        stuck = _simulate(ops)
        if stuck:
            out.append("CTA barriers that never complete (" + "; ".join(stuck) + ")")
    return [f"{p}: the GPU would wait forever (a hang the harness cannot bound; ask the model: "
            f"`ptxmc check FILE::NAME hang`)" for p in out]


def _simulate(ops: dict[str, list]) -> list[str]:
    """Run the barrier instructions of one CTA; the instructions some thread is left waiting at."""
    pos = {n: 0 for n in ops}
    arrived = {n: False for n in ops}            # arrived at its current (sync) barrier, waiting
    pending: dict[int, list[str]] = {}           # barrier id -> threads arrived in this generation
    progress = True
    while progress:
        progress = False
        for n, seq in ops.items():
            if pos[n] >= len(seq) or arrived[n]:
                continue
            bid, count, arrive_only, _ = seq[pos[n]]
            pending.setdefault(bid, []).append(n)
            progress = True
            if arrive_only:
                pos[n] += 1
            else:
                arrived[n] = True
            if len(pending[bid]) == count:           # the generation completes
                for m in pending.pop(bid):
                    if arrived[m] and ops[m][pos[m]][0] == bid:
                        arrived[m] = False
                        pos[m] += 1
    return [seq[pos[n]][3] for n, seq in ops.items() if pos[n] < len(seq)]


def _cluster_problems(test: LitmusTest) -> list[str]:
    out = []
    for t in test.threads:
        seq = [(k, i) for k, i in enumerate(t.code) if i.op == "barrier" and i.has("cluster")]
        expect = "arrive"
        for k, i in seq:
            kind = "arrive" if i.has("arrive") else "wait"
            if kind != expect:
                out.append(f"{t.name}:{k} '{i.text}': barrier.cluster.{kind} without a "
                           f"{'wait after its arrive' if kind == 'arrive' else 'preceding arrive of its own'}: "
                           f"the harness needs arrive/wait pairs (a wait without its arrive never completes; "
                           f"the GPU would wait forever)")
                break
            expect = "wait" if kind == "arrive" else "arrive"
        else:
            if expect == "wait":
                out.append(f"{t.name}: barrier.cluster.arrive without a later wait: the harness pads with "
                           f"arrive/wait pairs and needs them whole")
    return out
