"""Generated scaling families: litmus tests whose size grows with one parameter n.

Each family is a function n -> YAML text (one test, real PTX syntax, with expectations), so the
tests go through the same front end as the bundled suites. `build(family, n)` loads one; a
family the model does not support yet (the TMA pipeline while issues 3/4 are open) raises
`NotSupported` with the front end's message.

    mp     n-thread message-passing chain (ISA2 for n = 3): a weak write, then a release/acquire
           chain through n-1 flags; the last thread must see the write.
    iriw   IRIW with n readers: two writers, n readers alternating the order of their two reads,
           fence.sc.gpu between the reads; the first two readers may not disagree.
    sb     store buffering around a ring of n threads with fence.sc.gpu; not all reads miss.
    lb     load buffering around a ring of n threads, acquire loads and release stores; not all
           reads see the later write.
    co     n threads each write one location (relaxed.gpu): coherence must order them all;
           an observer reads it twice (CoRR).
    tma    a k-stage TMA pipeline (producer + consumer, two smem slots reused across mbarrier
           phases, a full and an empty mbarrier per slot).
    ring   a warp-specialized ring as kernels run it, n = rounds (k-iterations): one producer warp
           loads round i's tile by TMA into stage i % stages; each consumer warp(group) waits on
           the stage's `full` barrier for the round's phase, reads the tile (ld.shared, or
           wgmma.mma_async from shared memory), and releases the stage on its `empty` barrier
           (count = consumers) unless no later round reuses it. Parameters, in the family's name
           (`ring:stages=4,consumers=2,consumer=wgmma,parity=spin`; defaults stages=3,
           consumers=2, consumer=ld, parity=assume, release=all): parity=assume writes each
           wait as `try_wait.parity p, [bar], PHASE == 1` (the executions where it succeeds);
           parity=spin as the loop nvcc prints (`L: try_wait.parity p, [bar], PHASE; @!p bra L`);
           release=all releases the stage after every round, as kernels do (CUTLASS's
           consumer_release), release=reused only where a later round refills it.
    uninit n consumers use an mbarrier after its init is published, one more without: undefined
           behaviour whose report asks the engine's flag_least (one Z3 query per earlier
           statically possible edge; bench/flags.py times it apart).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from checker.ast import LitmusTest
from checker.errors import LitmusError


class NotSupported(Exception):
    """The model cannot run this family yet; the message says why."""


def _yaml(name: str, doc: str, memory: dict[str, str] | None, threads: list[tuple[str, str, list[str]]],
          forbidden=(), allowed=()) -> str:
    out = [f"name: {name}", f"doc: {doc}", "source: bench/families.py (generated)"]
    if memory:
        out.append("memory:")
        out += [f"  {k}: {v}" for k, v in memory.items()]
    out.append("threads:")
    for tname, at, code in threads:
        out += [f"  {tname}:", f"    at: {at}", "    code:"]
        out += [f"      - {c}" for c in code]
    if forbidden or allowed:
        out.append("expect:")
        for kind, conds in (("forbidden", forbidden), ("allowed", allowed)):
            if conds:
                out.append(f"  {kind}:")
                out += [f"    - '{c}'" for c in conds]
    return "\n".join(out) + "\n"


def _and(atoms) -> str:
    return " /\\ ".join(atoms)


def mp(n: int) -> str:
    """n threads, n >= 2: P0 writes x then releases f1; Pi acquires fi, releases f(i+1); the last
    thread acquires f(n-1) and reads x."""
    assert n >= 2
    threads = [("P0", "gpu0.cta0", ["st.weak.global [x], 1", "st.release.gpu.global [f1], 1"])]
    for i in range(1, n - 1):
        threads.append((f"P{i}", f"gpu0.cta{i}", [f"ld.acquire.gpu.global r0, [f{i}]",
                                                 f"st.release.gpu.global [f{i + 1}], 1"]))
    last = f"P{n - 1}"
    threads.append((last, f"gpu0.cta{n - 1}", [f"ld.acquire.gpu.global r0, [f{n - 1}]", "ld.weak.global r1, [x]"]))
    seen = [f"P{i}:r0=1" for i in range(1, n)]
    return _yaml(f"MP-chain-{n}", f"{n}-thread release/acquire chain.", None, threads,
                 forbidden=[_and(seen + [f"{last}:r1=0"])], allowed=[_and(seen + [f"{last}:r1=1"])])


def iriw(n: int) -> str:
    """2 writers, n >= 2 readers; reader i reads x then y (i even) or y then x (i odd)."""
    assert n >= 2
    threads = [("W0", "gpu0.cta0", ["st.relaxed.gpu.global [x], 1"]),
               ("W1", "gpu0.cta1", ["st.relaxed.gpu.global [y], 1"])]
    for i in range(n):
        a, b = ("x", "y") if i % 2 == 0 else ("y", "x")
        threads.append((f"R{i}", f"gpu0.cta{i + 2}", [f"ld.relaxed.gpu.global r0, [{a}]", "fence.sc.gpu",
                                                      f"ld.relaxed.gpu.global r1, [{b}]"]))
    return _yaml(f"IRIW-{n}", f"IRIW with {n} readers and fence.sc.gpu.", None, threads,
                 forbidden=["R0:r0=1 /\\ R0:r1=0 /\\ R1:r0=1 /\\ R1:r1=0"],
                 allowed=[_and(f"R{i}:r{j}=1" for i in range(n) for j in (0, 1))])


def sb(n: int) -> str:
    """n >= 2 threads in a ring: Pi writes x_i, fence.sc.gpu, reads x_(i+1 mod n)."""
    assert n >= 2
    threads = [(f"P{i}", f"gpu0.cta{i}", [f"st.relaxed.gpu.global [x{i}], 1", "fence.sc.gpu",
                                          f"ld.relaxed.gpu.global r0, [x{(i + 1) % n}]"]) for i in range(n)]
    return _yaml(f"SB-{n}", f"Store buffering around a ring of {n} threads, fence.sc.gpu.", None, threads,
                 forbidden=[_and(f"P{i}:r0=0" for i in range(n))],
                 allowed=[_and(f"P{i}:r0=1" for i in range(n))])


def lb(n: int) -> str:
    """n >= 2 threads in a ring: Pi reads x_i (acquire) then writes x_(i+1 mod n) (release)."""
    assert n >= 2
    threads = [(f"P{i}", f"gpu0.cta{i}", [f"ld.acquire.gpu.global r0, [x{i}]",
                                          f"st.release.gpu.global [x{(i + 1) % n}], 1"]) for i in range(n)]
    return _yaml(f"LB-{n}", f"Load buffering around a ring of {n} threads, acquire/release.", None, threads,
                 forbidden=[_and(f"P{i}:r0=1" for i in range(n))],
                 allowed=[_and(f"P{i}:r0=0" for i in range(n))])


def co(n: int) -> str:
    """n >= 1 threads each write x = i+1 (relaxed.gpu, so morally strong: coherence must order
    them); an observer reads x twice and may not go back to the initial value (CoRR)."""
    assert n >= 1
    threads = [(f"P{i}", f"gpu0.cta{i}", [f"st.relaxed.gpu.global [x], {i + 1}"]) for i in range(n)]
    threads.append(("O", f"gpu0.cta{n}", ["ld.relaxed.gpu.global r0, [x]", "ld.relaxed.gpu.global r1, [x]"]))
    return _yaml(f"CoWW-{n}", f"{n} racing relaxed writes to one location and a CoRR observer.", None, threads,
                 forbidden=["O:r0!=0 /\\ O:r1=0"],
                 allowed=["O:r0=1 /\\ O:r1=" + str(min(n, 2))])


def tma(k: int) -> str:
    """A k-stage TMA pipeline, k >= 1: the producer (warp 0) loads stage i from global g_i into
    slot i%2 of shared memory with cp.async.bulk, completing on full_(i%2); the consumer (warp 1)
    waits on full_(i%2) for phase (i//2)%2 and reads the slot, then arrives on empty_(i%2) so the
    producer may refill it (the producer waits on empty before reusing a slot), after a
    fence.proxy.async that orders its read before the refill. Every stage must read its own data."""
    assert k >= 1
    slots = min(k, 2)
    memory = {}
    for i in range(k):
        memory[f"g{i}"] = str(i + 1)
    for s in range(slots):
        memory[f"s{s}"] = "{space: shared, owner: gpu0.cta0}"
        memory[f"full{s}"] = "{space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}"
        memory[f"empty{s}"] = "{space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}"
    prod, cons = [], []
    for i in range(k):
        s, phase = i % 2, (i // 2) % 2
        if i >= 2:
            prod.append(f"mbarrier.try_wait.parity.shared::cta.b64 p{i}, [empty{s}], {1 - phase} == 1")
        prod.append(f"mbarrier.arrive.expect_tx.shared::cta.b64 _, [full{s}], 16")
        prod.append(f"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [s{s}], [g{i}], 16, [full{s}]")
        cons.append(f"mbarrier.try_wait.parity.shared::cta.b64 p{i}, [full{s}], {phase} == 1")
        cons.append(f"ld.shared::cta.b32 r{i}, [s{s}]")
        if i + 2 < k:
            # The slot is refilled by the async proxy: the generic read must be ordered before
            # that write by a proxy fence before the release (the model's answer to P5, see
            # litmus/patterns/P05-war-stage-reuse.yaml; CUTLASS's consumer_release).
            cons.append("fence.proxy.async.shared::cta")
            cons.append(f"mbarrier.arrive.shared::cta.b64 _, [empty{s}]")
    good = [f"P1:r{i}={i + 1}" for i in range(k)]
    return _yaml(f"TMA-pipeline-{k}", f"{k}-stage TMA pipeline over two smem slots with mbarrier phases.",
                 memory, [("P0", "gpu0.cta0.warp0", prod), ("P1", "gpu0.cta0.warp1", cons)],
                 forbidden=[f"~({_and(good)})"], allowed=[_and(good)])


def ring(n: int, stages: int = 3, consumers: int = 2, consumer: str = "ld", parity: str = "assume",
         release: str = "all") -> str:
    """`n` rounds of a `stages`-stage ring with one producer and `consumers` consumers."""
    assert n >= 1 and stages >= 1 and consumers >= 1 and consumer in ("ld", "wgmma") and parity in ("assume", "spin")
    assert release in ("all", "reused")
    cta = "gpu0.cluster0.cta0"
    memory = {f"g{i}": str(10 + i) for i in range(n)}
    used = min(stages, n)
    for s in range(used):
        memory[f"s{s}"] = f"{{space: shared, owner: {cta}}}"
        memory[f"full{s}"] = f"{{space: shared, owner: {cta}, mbarrier: {{count: 1}}}}"
        memory[f"empty{s}"] = f"{{space: shared, owner: {cta}, mbarrier: {{count: {consumers}}}}}"
    if consumer == "wgmma":
        memory["sB"] = f"{{space: shared, owner: {cta}, init: 1}}"
    labels = iter(range(10 ** 6))

    def wait(reg: str, bar: str, phase: int) -> list[str]:
        if parity == "assume":
            return [f"mbarrier.try_wait.parity.shared::cta.b64 {reg}, [{bar}], {phase} == 1"]
        label = f"W{next(labels)}"
        return [f"{label}: mbarrier.try_wait.parity.shared::cta.b64 {reg}, [{bar}], {phase}", f"'@!{reg} bra {label}'"]

    prod = []
    for i in range(n):
        s, lap = i % stages, i // stages
        if lap:
            prod += wait(f"p{i}", f"empty{s}", (lap - 1) % 2)
        prod.append(f"mbarrier.arrive.expect_tx.shared::cta.b64 _, [full{s}], 16")
        prod.append(f"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [s{s}], [g{i}], 16, [full{s}]")
    threads = [("P0", f"{cta}.warp0", prod)]
    good = []
    for c in range(consumers):
        code = []
        for i in range(n):
            s, lap = i % stages, i // stages
            code += wait(f"q{i}", f"full{s}", lap % 2)
            if consumer == "ld":
                code.append(f"ld.shared::cta.b32 a{i}, [s{s}]")
            else:
                code += ["wgmma.fence.sync.aligned",
                         f"wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {{a{i}}}, [s{s}], [sB], p, 1, 1, 0, 0",
                         "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned 0"]
            if release == "all" or i + stages < n:
                # the generic read is ordered before the TMA refill (an async-proxy write) by a
                # proxy fence before the release (litmus/patterns/P05); wgmma's completion is one
                if consumer == "ld":
                    code.append("fence.proxy.async.shared::cta")
                code.append(f"mbarrier.arrive.shared::cta.b64 _, [empty{s}]")
        name = f"P{c + 1}"
        threads.append((name, f"{cta}.warp{4 * (c + 1)}", code))
        good += [f"{name}:a{i}={10 + i}" for i in range(n)]
    title = f"ring-{stages}x{consumers}{consumer}-{n}-{parity}-{release}"
    return _yaml(title, f"{stages}-stage ring, {consumers} {consumer} consumers, {n} rounds, parity {parity}.",
                 memory, threads, forbidden=[f"~({_and(good)})"], allowed=[_and(good)])


@dataclass(frozen=True)
class Family:
    name: str
    make: Callable[[int], str]
    sizes: tuple[int, ...]
    what: str


def uninit(n: int) -> str:
    """Undefined behaviour whose report costs a query per earlier edge: P0 initialises an mbarrier
    (for n + 1 arrivals) and publishes it (a release of f = 1), P1 acquires that and publishes it
    again (another release of f = 1); n consumers acquire f = 1 - from either writer, so which
    write they read is the execution's choice - and arrive, ordered after the init either way;
    one last thread arrives without acquiring: a use of an uninitialised mbarrier
    (MbarrierUninitialised). The report names the flag's least edge on any consistent execution
    (the engine's flag_least): with Z3, one query per statically possible edge before the
    witness's - the n consumers' arrives, each unsat."""
    assert n >= 0
    cta = "gpu0.cluster0.cta0"
    threads = [("P0", cta, [f"mbarrier.init.shared::cta.b64 [mb], {n + 1}", "st.release.gpu.global [f], 1"]),
               ("P1", f"{cta}.warp1", ["ld.acquire.gpu.global r0, [f] == 1", "st.release.gpu.global [f], 1"])]
    for i in range(2, n + 2):
        threads.append((f"P{i}", f"{cta}.warp{i}", ["ld.acquire.gpu.global r0, [f] == 1",
                                                   "mbarrier.arrive.shared::cta.b64 _, [mb]"]))
    threads.append((f"P{n + 2}", f"{cta}.warp{n + 2}", ["mbarrier.arrive.shared::cta.b64 _, [mb]"]))
    return _yaml(f"UB-uninit-{n}", f"{n} consumers use a published mbarrier; one more uses it unpublished.",
                 {"f": "0", "mb": "{space: shared, owner: " + cta + "}"}, threads)


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("mp", mp, tuple(range(2, 17)), "threads"),
    Family("iriw", iriw, tuple(range(2, 9)), "readers"),
    Family("sb", sb, tuple(range(2, 11)), "threads"),
    Family("lb", lb, tuple(range(2, 11)), "threads"),
    Family("co", co, tuple(range(1, 9)), "writers"),
    Family("tma", tma, tuple(range(1, 9)), "stages"),
    Family("ring", ring, tuple(range(1, 9)), "rounds"),
    Family("uninit", uninit, (1, 2, 3, 4, 5, 6, 8), "consumers"),
)}


def family(spec: str) -> Family:
    """A family by name, with parameters for those that take them: `ring:stages=4,consumer=wgmma`."""
    name, _, params = spec.partition(":")
    fam = FAMILIES[name]
    if not params:
        return fam
    kw = {}
    for item in params.split(","):
        k, _, v = item.partition("=")
        kw[k.strip()] = int(v) if v.strip().isdigit() else v.strip()
    return Family(spec, lambda n: fam.make(n, **kw), fam.sizes, fam.what)


def build(name: str, n: int) -> LitmusTest:
    """The family's test of size n, through the real front end (and lowering, to find out early
    whether the model supports it; a test with control flow is lowered path by path later)."""
    from checker.front.litmus import load_text
    from checker.isa.registry import lower

    from dataclasses import replace

    from checker import limits

    text = family(name).make(n)
    (item,) = load_text(text, f"<{name}-{n}>")
    try:
        if isinstance(item, LitmusError):
            raise item
        if not item.branches:
            with limits.use(replace(limits.current(), events=10 ** 6)):     # (the engines check it)
                lower(item)
    except LitmusError as e:
        raise NotSupported(f"the model does not support the {name} family yet: {e}") from None
    return item
