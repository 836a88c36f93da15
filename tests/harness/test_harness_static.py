"""Static checks of generated programs (checker.harness.static_check), no toolchain or GPU: every
epilogue wait can complete, every shared-memory operand is aligned for its instruction; over every
program of the bundled suites, and on hand-made regressions of the defects they catch."""
from __future__ import annotations

import re

import pytest

from checker import LITMUS_DIR
from checker.errors import HarnessError, LitmusError
from checker.harness.codegen import Program, generate, unsupported
from checker.harness.controls import build_test, controls
from checker.harness.mbarriers import accounts
from checker.harness.static_check import alignment_problems, check_program, statements, wait_problems

S = {"space": "shared", "owner": "gpu0.cta0"}

# A declared mbarrier (count 1) that only a tensor copy completes on: nobody arrives, nobody
# expects bytes (the shape of TM-LC+*, I1/I2, CoWR+gen+tensormap+* ...).
TMA_UNARRIVED = build_test(
    "tma-unarrived", {
        "P0": ("gpu0.cta0", ["st.global [gB], 2", "tensormap.replace.tile.global_address.global.b1024.b64 [tm], 1",
                             "fence.proxy.tensormap::generic.release.gpu", "fence.proxy.tensormap::generic.acquire.gpu [tm], 128",
                             "cp.async.bulk.tensor.1d.shared::cta.global.tile.mbarrier::complete_tx::bytes [d], [tm, {0}], [mb]"])},
    memory={"tm": {"tensormap": {0: "gA", 1: "gB"}}, "gA": {"init": 1}, "gB": {}, "d": S,
            "mb": {**S, "mbarrier": {"count": 1}}},
    allowed=["d=2"])


def _bundled():
    from checker.front.litmus import load_paths
    return [t for t in load_paths([str(LITMUS_DIR)]) if not isinstance(t, LitmusError)] + controls()


def _with_source(p: Program, source: str) -> Program:
    return Program(p.test, source, p.target, p.space, p.layout, p.config, p.notes)


def test_every_bundled_program_passes_the_static_check():
    checked, problems = 0, []
    for t in _bundled():
        if unsupported(t, cuda="13.0"):
            continue
        problems += check_program(generate(t))
        checked += 1
    assert checked >= 590
    assert not problems, "\n".join(problems)


def test_epilogue_makes_up_arrivals_and_bytes_the_test_never_provides():
    src = generate(TMA_UNARRIVED).source
    epi = src[src.index("// Epilogue"):src.index("__global__ void init_kernel")]
    assert 'mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" :: "r"(a_), "r"(16u)' in epi
    assert 'mbarrier.arrive.release.cta.shared::cta.b64 _, [%0], %1;" :: "r"(a_), "r"(1u)' in epi
    # the make-up comes after every test thread of the cluster is done (a barrier before it)
    assert epi.index("barrier.sync %0;") < epi.index("mbarrier.arrive.release.cta")
    assert wait_problems(generate(TMA_UNARRIVED)) == []


def test_static_check_catches_an_epilogue_wait_that_cannot_complete():
    p = generate(TMA_UNARRIVED)
    broken = "\n".join(l for l in p.source.splitlines() if not l.rstrip().endswith(("// arrive", "// expect")))
    found = wait_problems(_with_source(p, broken))
    assert any("needs 1 arrivals, the program makes 0" in f and "can never complete" in f for f in found), found
    assert any("0 transaction bytes expected, 16 delivered" in f for f in found), found
    no_wait = re.sub(r"    if \(role >= 0 && role_cta == \d+ && threadIdx.x < PER_WARP\) \{   // mb:.*?\n    \}\n?", "",
                     p.source, flags=re.S)
    assert any("never waits for it" in f for f in wait_problems(_with_source(p, no_wait)))


def test_tensor_copy_cells_are_128_byte_aligned_and_the_check_sees_16():
    p = generate(TMA_UNARRIVED)
    assert "#define SMEM_ALIGN 128" in p.source and "#define SLOT_WORDS 32" in p.source
    assert alignment_problems(p) == []
    old = p.source.replace("#define SLOT_WORDS 32", "#define SLOT_WORDS 4").replace("#define SMEM_ALIGN 128",
                                                                                      "#define SMEM_ALIGN 16")
    found = alignment_problems(_with_source(p, old))
    assert found and all("16-byte aligned, the instruction needs 128" in f for f in found), found
    plain = generate(controls()[0])          # a bulk copy, no tensor copy: 16-byte slots suffice
    assert "#define SMEM_ALIGN 16" in plain.source and alignment_problems(plain) == []


def test_phase_that_can_complete_before_the_data_lands_is_refused():
    t = build_test("no-expect", {"P0": ("gpu0.cta0", [
        "mbarrier.arrive.shared::cta.b64 _, [mb]",
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [s], [g], 16, [mb]"])},
        memory={"s": S, "mb": {**S, "mbarrier": {"count": 1}}}, allowed=["s=0"])
    why = unsupported(t)
    assert why and "phase 0 can complete before the data lands or never" in why
    two = build_test("two-phases", {"P0": ("gpu0.cta0", [
        "mbarrier.arrive.expect_tx.shared::cta.b64 _, [mb], 16", "mbarrier.arrive.shared::cta.b64 _, [mb]",
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [s], [g], 16, [mb]"])},
        memory={"s": S, "mb": {**S, "mbarrier": {"count": 1}}}, allowed=["s=0"])
    assert "more than one phase" in unsupported(two)
    with pytest.raises(HarnessError, match="not expressible"):
        generate(two)


def test_accounts_count_every_arrival_form():
    t = build_test("acc", {"P0": ("gpu0.cta0", [
        "mbarrier.arrive.shared::cta.b64 _, [mb], 2", "mbarrier.arrive.expect_tx.shared::cta.b64 _, [mb], 4",
        "cp.async.ca.shared.global [s], [g], 4", "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [mb]",
        "cp.async.mbarrier.arrive.shared::cta.b64 [mb]", "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [mb], 4",
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [s2], [g], 4, [mb]"])},
        memory={"s": S, "s2": S, "mb": {**S, "mbarrier": {"count": 5}}})
    acc, problems = accounts(t, cell_bytes=16, tx_factor=4, harness_expect={})
    mb = acc["mb"]
    assert (mb.count, mb.arrivals, mb.expected, mb.completed, mb.waited) == (5, 4, 32, 16, True)
    assert (mb.makeup, mb.makeup_expect, mb.makeup_complete) == (1, 0, 16) and problems == []


def test_statements_read_operands_back():
    p = generate(TMA_UNARRIVED)
    (cp,) = [s for s in statements(p.source) if s.ptx.startswith("cp.async.bulk.tensor")]
    assert (cp.thread, cp.index) == ("P0", 4)
    assert "(A_d_cta + p.zero[" in cp.ptx and "(A_mb_cta + p.zero[" in cp.ptx
