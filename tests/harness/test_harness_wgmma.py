"""wgmma in generated programs (issue 21 item 6): the litmus thread stands for a warpgroup (four
aligned warps, every lane plays it, its leader performs its memory writes), shared-memory operands
become matrix descriptors, the accumulator the f32 fragment, and values cross into f16/f32 bit
patterns (checker.harness.numformat) so the device compares what the model computes. The real
toolchain compiles them for sm_90a and the SASS check counts the HGMMAs where it is installed."""
from __future__ import annotations

import re

import pytest

from checker import LITMUS_DIR
from checker.cli import main
from checker.errors import HarnessError, LitmusError
from checker.front.litmus import load_paths, load_text
from checker.harness.codegen import Program, generate, unsupported
from checker.harness.devices import load_device
from checker.harness.numformat import encode
from checker.harness.toolchain import missing_reason


def _wgmma_tests():
    return {t.name: t for t in load_paths([str(LITMUS_DIR)]) if not isinstance(t, LitmusError)
            and any(i.op == "wgmma" for th in t.threads for i in th.code)}


def _one(yaml: str):
    [t] = load_text(yaml)
    assert not isinstance(t, LitmusError), t
    return t


def _table(src: str, name: str) -> list[int]:
    m = re.search(rf"{name}\[[^\]]*\] = \{{([^}}]*)\}}", src)
    return [int(x.strip().rstrip("u")) for x in m.group(1).split(",")]


def test_every_bundled_wgmma_test_is_generated():
    tests = _wgmma_tests()
    assert len(tests) >= 28
    assert {n: unsupported(t) for n, t in tests.items() if unsupported(t)} == {}


def test_a_warpgroup_thread_runs_the_mma_on_descriptors_and_its_fragment():
    t = _wgmma_tests()["I17+valid"]          # sA=2, sB=3; out = d0 = 6
    prog = generate(t)
    src = prog.source
    assert "#define WARPGROUPS 1" in src and "#define PER_WARP 1" in src and "#define WARPS 4" in src
    # every lane of warps 0-3 plays P0 (thread 0), one instance per warp
    assert _table(src, "k_table")[:4] == [32, 32, 32, 32]
    assert set(_table(src, "who_table")[:128]) == {0}
    case = src[src.index("case 0: {"):src.index("break;", src.index("case 0: {"))]
    assert "start_barrier(p, inst, wg_lead_);" in case and "threadIdx.x % 128 == 0" in case
    mma = next(line for line in case.splitlines() if "wgmma.mma_async" in line)
    assert "{%0, %1, %2, %3}, %8, %9, P, 1, 1, 0, 0;" in mma
    assert '"l"(wg_desc((A_sA_cta + p.zero[' in mma and '"l"(wg_desc((A_sB_cta + p.zero[' in mma
    assert mma.count('"+f"(') == 8                       # the whole fragment pinned
    store = next(line for line in case.splitlines() if "@ptxmc P0:4" in line)
    assert store.lstrip().startswith("if (wg_lead_) { asm volatile(\"st.shared.b32")
    assert "if (wg_lead_) p.obs[inst * N_OBS + 0] = (unsigned)R_d0;" in case
    # the matrices hold f16 2.0 and 3.0 in element [0][0]; the device compares f32 6.0
    assert _table(src, "shared_init")[:2] == [0x4000, 0x4200]
    assert 0x40C00000 in _table(src, "domain_values")
    assert "#define SLOT_WORDS 512" in src and "#define SMEM_ALIGN 128" in src
    assert any("ptxas may serialize the wgmma" in n for n in prog.notes)


def test_stores_into_matrix_cells_are_reencoded():
    t = _wgmma_tests()["WG-completion-fence+wait"]      # st.shared [sA], 2 after the MMA
    src = generate(t).source
    line = next(line for line in src.splitlines() if "@ptxmc P0:4" in line)
    assert f'"r"({0x4000}u)' in line                    # f16 2.0, not the integer 2


def test_number_formats():
    assert encode(None, -1) == 0xFFFFFFFF
    assert encode("f16", 1) == 0x3C00 and encode("f16", -2) == 0xC000 and encode("f16", 2049) is None
    assert encode("f32", 6) == 0x40C00000 and encode("f32", 1 << 25) is None


BASE = """
name: WG+edit
source: "PTX ISA 9.4, wgmma.mma_async"
arch: sm_90a
memory:
  sA: {space: shared, owner: gpu0.cta0, init: 2}
  sB: {space: shared, owner: gpu0.cta0, init: 3}
threads:
  P0:
    at: gpu0.cta0
    code:
      - wgmma.fence.sync.aligned
      - wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {d0}, [sA], [sB], p, 1, 1, 0, 0
      - wgmma.commit_group.sync.aligned
      - wgmma.wait_group.sync.aligned 0
      - EXTRA
  P1:
    at: AT
    code:
      - P1CODE
"""


@pytest.mark.parametrize("extra, at, p1, reason", [
    ("add.f32 r2, d0, 1", "gpu0.cta0.warp4", "mov.b32 r1, 0", "add of the f32 accumulator d0 is not generated"),
    ("mov.b32 r2, 0", "gpu0.cta0.warp4", "ld.shared r1, [sB]", "ld of the f16 cell sB"),
    ("st.shared [sA], r9", "gpu0.cta0.warp4", "mov.b32 r1, 0", "a register stored into the f16 cell sA"),
    ("mov.b32 r2, 0", "gpu0.cta0.warp2", "mov.b32 r1, 0", "P0 stands for the warpgroup of warps 0-3, where P1 also run"),
    ("bar.sync 1", "gpu0.cta0.warp4", "bar.sync 1", "a barrier in a warpgroup thread is not generated"),
])
def test_what_has_no_faithful_encoding_is_refused(extra, at, p1, reason):
    t = _one(BASE.replace("EXTRA", extra).replace("AT", at).replace("P1CODE", p1))
    assert reason in (unsupported(t) or "")
    fine = _one(BASE.replace("EXTRA", "mov.b32 r2, 0").replace("AT", "gpu0.cta0.warp4").replace("P1CODE", "mov.b32 r1, 0"))
    assert unsupported(fine) is None


def test_wgmma_is_refused_on_sm_100a():
    t = _wgmma_tests()["I17+valid"]
    why = unsupported(t, load_device("b200"))
    assert "wgmma exists only on sm_90a; this device's target is sm_100a" in why


def test_every_model_allowed_outcome_of_a_wgmma_test_has_a_bucket():
    from checker.resources import resolve_model
    from checker.verdict.check import check_test
    model = resolve_model(None)
    checked = 0
    for t in _wgmma_tests().values():
        space = generate(t).space
        res = check_test(t, model)
        for o in res.outcomes:
            assert space.index(tuple(dict(o).get(v, 0) for v in space.names)) is not None, (t.name, o)
        checked += bool(res.outcomes)
    assert checked >= 18


def test_simulated_run_of_wgmma_tests(tmp_path):
    names = ["WG-operand+membar", "WG-producer-consumer+fence-after-wait", "I17+valid"]
    args = ["hw", "run", str(LITMUS_DIR / "tensorcore"), "-o", str(tmp_path / "o"), "--fake-device", "seed:2"]
    for n in names:
        args += ["--name", n]
    assert main(args) == 0
    text = (tmp_path / "o" / "compare.txt").read_text()
    assert "other=" not in text and "VIOLATION" not in text
    assert "WG-producer-consumer+fence-after-wait: OK" in text


needs_sass = pytest.mark.skipif(missing_reason("nvcc", "nvdisasm") is not None,
                                reason=str(missing_reason("nvcc", "nvdisasm")))


@needs_sass
def test_wgmma_programs_compile_and_the_sass_check_counts_their_mmas(tmp_path):
    from checker.harness.build import build
    from checker.harness.sass import check_fences, disassemble
    t = _wgmma_tests()["I17-accumulate+same-shape"]          # two MMAs into d0
    prog = generate(t)
    res = build(prog, tmp_path / "ok", "cubin")
    checks = [c for c in check_fences(t, prog, disassemble(res.output)) if c.text.startswith("wgmma.mma_async")]
    assert len(checks) == 2 and all(c.ok for c in checks), "\n".join(map(str, checks))
    # one MMA lost (its asm statement dropped): the count no longer adds up
    lines = prog.source.splitlines()
    k = next(n for n, line in enumerate(lines) if "@ptxmc P0:3" in line)
    lines[k] = "            // (dropped)  // @ptxmc P0:3 dropped"
    lost = Program(prog.test, "\n".join(lines) + "\n", prog.target, prog.space, prog.layout, prog.config, prog.notes)
    res = build(lost, tmp_path / "lost", "cubin")
    checks = [c for c in check_fences(t, lost, disassemble(res.output)) if c.text.startswith("wgmma.mma_async")]
    assert checks and not any(c.ok for c in checks)
    exe = build(generate(_wgmma_tests()["WG-producer-consumer+fence-after-wait"]), tmp_path / "exe", "exe")
    assert exe.output.stat().st_size > 0
