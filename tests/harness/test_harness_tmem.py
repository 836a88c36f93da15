"""tcgen05 on Tensor Memory in generated programs (sm_100a): each testing CTA allocates 32
columns, initialises the test's cells and frees them at the end; a thread running tcgen05 takes
its whole warp and every test warp sits at a hardware warp that is a multiple of 4, so all reach
the same quarter of Tensor Memory. What needs descriptors (mma, cp) or would let the test manage
the allocation is refused with the reason. Compiled for sm_100a where the toolchain is installed."""
from __future__ import annotations

import re

import pytest

from checker import LITMUS_DIR
from checker.errors import LitmusError
from checker.front.litmus import load_paths, load_text
from checker.harness.codegen import generate, unsupported
from checker.harness.devices import load_device
from checker.harness.static_check import check_program
from checker.harness.toolchain import missing_reason

B200 = load_device("b200")      # tcgen05 programs are sm_100a: only a b200 configuration builds them (B3)


def _tc():
    return {t.name: t for t in load_paths([str(LITMUS_DIR)]) if not isinstance(t, LitmusError)
            and any(i.op == "tcgen05" for th in t.threads for i in th.code)}


def _table(src: str, name: str) -> list[int]:
    m = re.search(rf"{name}\[[^\]]*\] = \{{([^}}]*)\}}", src)
    return [int(x.strip().rstrip("u")) for x in m.group(1).split(",")]


def test_tensor_memory_tests_without_descriptors_are_generated():
    tests = _tc()
    done = [n for n, t in tests.items() if unsupported(t, B200) is None]
    assert len(done) >= 14
    assert {"P19-waitst-fixed", "I16b-st-wait-ld+wait-st", "TC-commit-fence+st+explicit-before"} <= set(done)
    for n in done:
        prog = generate(tests[n], B200)
        assert prog.target == "sm_100a" and check_program(prog) == [], n


def test_allocation_placement_and_collective_accesses():
    t = _tc()["P19-waitst-fixed"]        # P0 at warp 0 stores tD, P1 at warp 1 loads it
    src = generate(t, B200).source
    assert "#define N_TMEM 1" in src and "#define WARPGROUPS 1" in src and "#define PER_WARP 1" in src
    # test warp 1 runs at hardware warp 4: the same Tensor Memory lane quarter as warp 0
    assert _table(src, "k_table") == [32, 0, 0, 0, 32]
    assert "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 32;" in src
    assert "tcgen05.relinquish_alloc_permit" in src and "tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, 32;" in src
    assert src.index("tcgen05.alloc") < src.index("tmem_init[k]") < src.index("switch (who)") < src.index("tcgen05.dealloc")
    p1 = src[src.index("case 1: {"):src.index("default:", src.index("case 1: {"))]
    assert "const unsigned T_tD = tmem_base_ + 0u;" in p1
    assert '__syncwarp(); asm volatile("tcgen05.ld.sync.aligned.32x32b.x1.b32 {%0}, [%1];" : "=r"(R_r0) : "r"(T_tD)' in p1
    assert '"tcgen05.wait::ld.sync.aligned;" : "+r"(R_r0)' in p1
    assert "const bool wg_lead_ = threadIdx.x % 32 == 0;" in p1
    assert re.search(r"if \(wg_lead_\) \{ asm volatile\(\"st\.shared", p1)
    # the thread's accesses are complete before the epilogue frees the columns
    assert p1.index("tcgen05.wait::ld.sync.aligned; tcgen05.wait::st.sync.aligned;") > p1.index("@ptxmc P1:4")


def test_cells_start_at_their_declared_value():
    [t] = load_text("""
name: TM+init
source: "PTX ISA 9.4, tcgen05.ld"
arch: sm_100a
memory:
  tD: {space: tensor, owner: gpu0.cta0, init: 7}
threads:
  P0:
    at: gpu0.cta0
    code: ["tcgen05.ld.sync.aligned.32x32b.x1.b32 {r0}, [tD]", "tcgen05.wait::ld.sync.aligned"]
expect: {allowed: ['P0:r0=7']}
""")
    prog = generate(t, B200)
    assert _table(prog.source, "tmem_init")[0] == 7 and prog.space.domains == ((7,),)


@pytest.mark.parametrize("code, extra, reason", [
    ('"tcgen05.ld.sync.aligned.16x64b.x1.b32 {r0}, [tD]"', "", "only tcgen05.ld.sync.aligned.32x32b.x1.b32"),
    ('"tcgen05.dealloc.cta_group::1.sync.aligned.b32 [tD], 32"', "", "the harness allocates and frees"),
    ('"tcgen05.ld.sync.aligned.32x32b.x1.b32 {r0}, [tD]"', "  Q: {at: gpu0.cta0, code: [\"mov.b32 r1, 1\"]}\n",
     "takes its whole warp, which Q also use"),
])
def test_what_the_harness_cannot_run_is_refused(code, extra, reason):
    [t] = load_text(f"""
name: TM+refused
source: "PTX ISA 9.4, tcgen05"
arch: sm_100a
memory:
  tD: {{space: tensor, owner: gpu0.cta0}}
threads:
  P0: {{at: gpu0.cta0, code: [{code}]}}
{extra}""")
    assert not isinstance(t, LitmusError), t
    assert reason in (unsupported(t, B200) or "")


def test_mma_and_observed_cells_are_refused():
    tests = _tc()
    assert "tcgen05.mma needs sm_100a instruction and matrix descriptors" in unsupported(tests["P4-writerfence-fixed"], B200)
    assert "its final value is not read back" in unsupported(tests["I16-ld-registers+no-wait"], B200)


needs_sass = pytest.mark.skipif(missing_reason("nvcc", "nvdisasm") is not None,
                                reason=str(missing_reason("nvcc", "nvdisasm")))


@needs_sass
def test_tensor_memory_programs_compile_for_sm_100a_and_keep_their_accesses(tmp_path):
    from checker.harness.build import build
    from checker.harness.sass import check_fences, disassemble
    tests = _tc()
    for name in ("P19-waitst-fixed", "I16b-st-wait-ld+wait-st"):
        t = tests[name]
        prog = generate(t, B200)
        res = build(prog, tmp_path / name, "cubin")
        checks = check_fences(t, prog, disassemble(res.output))
        kinds = {c.expected for c in checks}
        assert {"LDTM", "STTM"} <= kinds and all(c.ok for c in checks), "\n".join(map(str, checks))
    exe = build(generate(tests["TC-commit-fence+st+explicit-before"], B200), tmp_path / "exe", "exe")
    assert exe.output.stat().st_size > 0
