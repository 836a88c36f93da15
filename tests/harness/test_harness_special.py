"""Real-PTX forms in generated programs: special registers read as the values the test's positions
give them (the model's, checker.isa.special; the harness places threads elsewhere), real register
names (%r1), cache operators and L1 hints emitted as written, nanosleep and prefetch; what ptxas or
the model cannot give a value for is refused with the reason."""
from __future__ import annotations

import pytest

from checker import LITMUS_DIR
from checker.errors import LitmusError
from checker.front.litmus import load_paths, load_text
from checker.harness.codegen import generate, unsupported
from checker.harness.toolchain import missing_reason


def _realptx():
    return {t.name: t for t in load_paths([str(LITMUS_DIR / "real-ptx")]) if not isinstance(t, LitmusError)}


def _line(src: str, mark: str) -> str:
    return next(line for line in src.splitlines() if f"// @ptxmc {mark} " in line)


@pytest.mark.parametrize("name, value", [
    ("RP-special-%tid.x", 64), ("RP-special-%laneid", 0), ("RP-special-%ctaid.x", 3),
    ("RP-special-cluster-%cluster_ctarank", 2), ("RP-special-cluster-%clusterid.x", 1),
])
def test_special_registers_read_the_models_value(name, value):
    prog = generate(_realptx()[name])
    assert f'asm volatile("mov.u32 %0, {value};" : "=r"(R_r1)' in _line(prog.source, "P0:0")
    assert any("read as the values the test's positions give them" in n for n in prog.notes)
    # the model's value is in the outcome space
    assert value in prog.space.domains[prog.space.names.index("x")]


def test_undetermined_special_registers_are_refused():
    [t] = load_text("""
name: Special+smid
source: "PTX ISA 9.4, Special Registers"
threads:
  P0: {at: gpu0.cta0, code: ["mov.u32 %r1, %smid;", "st.global.b32 [x], %r1;"]}
""")
    assert "special register %smid: a value the test does not determine" in unsupported(t)


def test_cache_operators_are_emitted_as_written_and_l2_evict_is_refused():
    suite = _realptx()
    src = generate(suite["RP-hint-MP-cg"]).source
    assert '"st.global.cg.b32 [%0], %1;"' in _line(src, "P0:0")
    assert '"ld.global.cg.b32 %0, [%1];"' in _line(src, "P1:1")
    assert "only on .v8.b32/.v4.b64" in unsupported(suite["RP-hint-MP-L2::evict_first"])
    assert "an L2 cache policy operand" in unsupported(suite["RP-hint-MP-L2::cache_hint"])
    src = generate(suite["RP-special-%tid.x"]).source
    assert '"nanosleep.u32 %0;" :  : "r"(1u)' in _line(src, "Q0:0")


needs_sass = pytest.mark.skipif(missing_reason("nvcc", "nvdisasm") is not None,
                                reason=str(missing_reason("nvcc", "nvdisasm")))


@needs_sass
@pytest.mark.parametrize("name", ["RP-hint-MP-lu", "RP-hint-MP-L1::evict_last", "RP-special-cluster-%cluster_ctarank"])
def test_real_ptx_programs_compile_and_keep_their_accesses(name, tmp_path):
    from checker.harness.build import build
    from checker.harness.sass import check_fences, disassemble
    t = _realptx()[name]
    prog = generate(t)
    res = build(prog, tmp_path, "cubin")
    checks = check_fences(t, prog, disassemble(res.output))
    assert checks and all(c.ok for c in checks), "\n".join(map(str, checks))
