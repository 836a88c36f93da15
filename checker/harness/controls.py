"""Positive controls: tests whose weak outcome the hardware is expected to show, so a run proves
the harness can see weak behaviour at all (MC Mutants' idea). An unseen control means "the harness
is too weak here", never silence: `hw compare` fails the run (control-unseen) and prints each
control's rate (hits per second).

Two kinds:
  * model-allowed controls (CTRL+MP/SB/LB+relaxed): message passing, store buffering and load
    buffering across CTAs with relaxed .gpu accesses and no fence. The model allows the weak
    outcome (tests check it); MP and SB weak outcomes were observed on NVIDIA GPUs by the
    published GPU litmus campaigns (ASPLOS'15 GPU concurrency study; the cuda-litmus PTE harness).
  * harness-visibility controls (CTRL+bulk-load/bulk-store/cp.async): an async copy's data read
    or overwritten without waiting (TileLang#2634's "the silicon does race when the drain is truly
    absent"). The model calls these programs undefined (a race with an in-flight copy), so they have
    no model verdict: they only show that the harness observes asynchronous effects.

They are built here from PTX text; `build_test` is also how the harness tests make hand-written
tests (undeclared locations are global, init 0, as in the YAML format).
"""
from __future__ import annotations

from ..ast import Expectation, LitmusTest, MemoryDecl, Position, Thread
from ..front.conditions import parse_cond
from ..isa.syntax import parse as parse_instr

CONTROL_MARK = "positive control"


def _position(text: str) -> Position:
    import re
    m = re.fullmatch(r"gpu(\d+)(?:\.cluster(\d+))?\.cta(\d+)(?:\.warp(\d+))?", text)
    if m is None:
        raise ValueError(f"bad position '{text}'")
    g, c, t, w = m.groups()
    return Position(int(g), None if c is None else int(c), int(t), int(w or 0))


def build_test(name: str, threads: dict[str, tuple[str, list[str]]], memory: dict | None = None,
               allowed=(), forbidden=(), doc: str = "", arch: str | None = None) -> LitmusTest:
    """A LitmusTest from PTX text: threads = {name: (position, [instruction, ...])};
    memory = {name: {space, owner, init, mbarrier}}."""
    mem = []
    for n, spec in (memory or {}).items():
        spec = dict(spec)
        owner = _position(spec.pop("owner")) if "owner" in spec else None
        mem.append(MemoryDecl(n, owner=owner, **spec))
    names = frozenset(m.name for m in mem)
    ths = tuple(Thread(t, _position(pos), tuple(parse_instr(c, memory=names) for c in code))
                for t, (pos, code) in threads.items())
    # Undeclared locations are global, initially 0 (as in the YAML format), so the model can check
    # the test too (the front end declares them the same way).
    from ..ast import Addr
    for th in ths:
        for i in th.code:
            for o in i.operands:
                if isinstance(o, Addr) and o.base not in names:
                    mem.append(MemoryDecl(o.base))
                    names = names | {o.base}
    exps = tuple(Expectation(k, parse_cond(c), c) for k, cs in (("allowed", allowed), ("forbidden", forbidden))
                 for c in cs)
    return LitmusTest(name=name, threads=ths, memory=tuple(mem), expectations=exps, doc=doc, arch=arch,
                      path="<harness>")


def is_control(test: LitmusTest) -> bool:
    return CONTROL_MARK in test.doc.lower() or test.name.startswith("CTRL+")


def controls() -> list[LitmusTest]:
    """The bundled positive controls."""
    return [
        build_test(
            "CTRL+bulk-load+no-wait",
            {"P0": ("gpu0.cta0", [
                "mbarrier.arrive.expect_tx.shared::cta.b64 _, [mb], 16",
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [s], [g], 16, [mb]",
                "ld.weak.shared r0, [s]"])},
            memory={"g": {"space": "global", "init": 1},
                    "s": {"space": "shared", "owner": "gpu0.cta0"},
                    "mb": {"space": "shared", "owner": "gpu0.cta0", "mbarrier": {"count": 1}}},
            allowed=["P0:r0=0"],
            doc="Positive control: read a bulk-copy (TMA-style) destination without waiting on the "
                "mbarrier; the old value 0 must be observable, or the harness cannot see async copies."),
        build_test(
            "CTRL+bulk-store+no-read-wait",
            {"P0": ("gpu0.cta0", [
                "st.weak.shared [s], 1",
                "fence.proxy.async.shared::cta",
                "cp.async.bulk.global.shared::cta.bulk_group [g], [s], 16",
                "cp.async.bulk.commit_group",
                "st.weak.shared [s], 2"])},
            memory={"g": {"space": "global", "init": 0},
                    "s": {"space": "shared", "owner": "gpu0.cta0"}},
            allowed=["g=2"],
            doc="Positive control: overwrite a bulk-store source without cp.async.bulk.wait_group.read; "
                "g=2 (the copy read the new value) must be observable."),
        build_test(
            "CTRL+cp.async+no-wait",
            {"P0": ("gpu0.cta0", [
                "cp.async.ca.shared.global [s], [g], 4",
                "cp.async.commit_group",
                "ld.weak.shared r0, [s]"])},
            memory={"g": {"space": "global", "init": 1},
                    "s": {"space": "shared", "owner": "gpu0.cta0"}},
            allowed=["P0:r0=0"],
            doc="Positive control: read a cp.async destination without cp.async.wait_group; the old "
                "value must be observable."),
        build_test(
            "CTRL+MP+relaxed",
            {"P0": ("gpu0.cta0", ["st.relaxed.gpu.global [x], 1", "st.relaxed.gpu.global [f], 1"]),
             "P1": ("gpu0.cta1", ["ld.relaxed.gpu.global r0, [f]", "ld.relaxed.gpu.global r1, [x]"])},
            allowed=["P1:r0=1 /\\ P1:r1=0"],
            doc="Positive control (model-allowed): message passing across CTAs without a fence; seeing "
                "the weak outcome shows the stress reaches generic-proxy reordering."),
        build_test(
            "CTRL+SB+relaxed",
            {"P0": ("gpu0.cta0", ["st.relaxed.gpu.global [x], 1", "ld.relaxed.gpu.global r0, [y]"]),
             "P1": ("gpu0.cta1", ["st.relaxed.gpu.global [y], 1", "ld.relaxed.gpu.global r1, [x]"])},
            allowed=["P0:r0=0 /\\ P1:r1=0"],
            doc="Positive control (model-allowed): store buffering across CTAs without a fence."),
        build_test(
            "CTRL+LB+relaxed",
            {"P0": ("gpu0.cta0", ["ld.relaxed.gpu.global r0, [x]", "st.relaxed.gpu.global [y], 1"]),
             "P1": ("gpu0.cta1", ["ld.relaxed.gpu.global r1, [y]", "st.relaxed.gpu.global [x], 1"])},
            allowed=["P0:r0=1 /\\ P1:r1=1"],
            doc="Positive control (model-allowed): load buffering across CTAs without a fence or "
                "dependency (rarely seen on NVIDIA hardware; unseen says the stress is too weak for it)."),
    ]


MODEL_ALLOWED = ("CTRL+MP+relaxed", "CTRL+SB+relaxed", "CTRL+LB+relaxed")
# Controls whose weak outcome published GPU litmus campaigns rarely or never saw on NVIDIA
# hardware: reported with their rate when seen, but unseen is no failure (review C6: an unseen
# LB failed every Hopper run, so the exit code no longer told good runs from bad).
INFORMATIONAL = ("CTRL+LB+relaxed",)


def is_informational(name: str) -> bool:
    return name in INFORMATIONAL
