"""Registers that stand where ptxmc needs a number (checker.unfold.constants): read as the constant
they hold on every control path of the thread (its placement fixes %tid, %cluster_ctarank, ...),
refused with file:line and the reason where they hold none; lines no path runs dropped where they
hold registers; mul.wide, mul.hi and cvt."""
from __future__ import annotations

from pathlib import Path

import pytest

from checker.ast import Addr, Imm
from checker.errors import LitmusError
from checker.front.litmus import load_paths, load_text
from checker.isa import registry
from checker.resources import resolve_model
from checker.verdict.check import check_test

SUITE = Path(__file__).parents[2] / "litmus" / "real-ptx" / "nvcc-registers.yaml"
PTX = resolve_model("ptx")


def _suite() -> dict:
    return {t.name: t for t in load_paths([SUITE])}


def _code(test, thread):
    return next(t for t in test.threads if t.name == thread).code


def test_registers_become_the_numbers_they_hold():
    tests = _suite()
    bar = next(i for i in _code(tests["RP-named-barrier-in-registers"], "P1") if i.op == "bar")
    assert bar.operands == (Imm(1), Imm(64)) and bar.text == "bar.sync %r4, %r5"
    bulk = next(i for i in _code(tests["RP-bulk-size-in-register"], "P0") if i.op == "cp")
    assert bulk.operands[2] == Imm(16)
    tma = next(i for i in _code(tests["RP-tensor-coordinates-in-registers"], "P0") if i.op == "cp")
    assert tma.operands[1] == Addr("tmap", 0, (Imm(0), Imm(0)))
    # the same code in both CTAs of the cluster: each maps to the other's rank, and stores there
    mapa = tests["RP-mapa-rank-from-cluster-ctarank"]
    assert [next(i for i in _code(mapa, p) if i.op == "st").operands[0] for p in ("P0", "P1")] == \
        [Addr("buf1"), Addr("buf")]
    # out + 4 * %tid.x: lane 1 stores at byte 4
    index = tests["RP-mul-wide-thread-index"]
    assert [next(i for i in _code(index, p) if i.op == "st").operands[0] for p in ("L0", "L1")] == \
        [Addr("out", 0), Addr("out", 4)]


@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_the_suite_means_what_the_numbers_mean(engine):
    tests = _suite()
    assert len(tests) == 5
    assert {n: check_test(t, PTX, engine=engine).status for n, t in tests.items()} == dict.fromkeys(tests, "pass")


BASE = """
name: T
memory:
  x: 0
  g: {{size: 16}}
  s: {{space: shared, owner: gpu0.cta0, size: 16}}
  mb: {{space: shared, owner: gpu0.cta0, mbarrier: {{count: 1}}}}
  out: {{size: 64}}
threads:
  P0:
    at: gpu0.cta0.warp1
    ptx: |
      .reg .pred %p<3>;
      .reg .b32 %r<9>;
      .reg .b64 %rd<9>;
      {code}
"""
COPY = "cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [s], [g], %r8, [mb];"


def _load(code: str):
    [t] = load_text(BASE.format(code=code.replace("\n", "\n      ")), "t.yaml")
    return t


@pytest.mark.parametrize("code, line, why", [
    (f"ld.global.u32 %r8, [x];\n{COPY}", 17,
     "operand 3 ('r8') must be an integer, or a register that holds one on every control path to this line: "
     "'ld.global.u32 %r8, [x]' (line 16) reads it from memory"),
    # a lowering folds r2 & 0 to 0, but the value still comes from a read
    (f"ld.global.u32 %r2, [x];\nand.b32 %r8, %r2, 0;\n{COPY}", 18, "'ld.global.u32 %r2, [x]' (line 16) reads it from memory"),
    (f"ld.global.u32 %r1, [x];\nsetp.eq.u32 %p1, %r1, 0;\nmov.u32 %r8, 16;\n@%p1 mov.u32 %r8, 8;\n{COPY}", 20,
     "r8 holds different values (8, 16) on the control paths that reach line 20"),
    (f"ld.global.u32 %r1, [x];\nsetp.eq.u32 %p1, %r1, 0;\n@%p1 mov.u32 %r8, 8;\n{COPY}", 19,
     "r8 is set on some control paths to line 19 and not on others"),
    (COPY, 16, "no control path to this line sets r8"),
    (f"mov.u32 %r1, %ntid.x;\nadd.u32 %r8, %r1, 0;\n{COPY}", 18, "reads %ntid.x, which holds a value the test does not"),
    # a register that changes on each turn of a loop holds no one constant there
    ("mov.u32 %r4, 0;\nL: bar.sync %r4;\nadd.u32 %r4, %r4, 1;\nsetp.lt.u32 %p1, %r4, 2;\n@%p1 bra L;", 17,
     "r4 holds different values (0, 1) on the control paths that reach line 17"),
    ("ld.global.u32 %r6, [x];\ncp.async.bulk.tensor.1d.shared::cta.global.tile.mbarrier::complete_tx::bytes "
     "[s], [g, {%r6}], [mb];", 17, "a tensor coordinate ('r6') must be an integer, or a register that holds one"),
    ("ld.global.u64 %rd6, [x];\nmov.u64 %rd1, out;\nadd.s64 %rd7, %rd1, %rd6;\nst.global.u32 [%rd7], 1;", 18,
     "address arithmetic other than adding or subtracting a constant is not modelled ('ld.global.u64 %rd6, [x]' "
     "(line 16) reads it from memory)"),
])
def test_a_register_without_a_constant_is_refused_with_why(code, line, why):
    r = _load(code)
    assert isinstance(r, LitmusError), r
    assert r.where.path == "t.yaml" and r.where.line == line, str(r)
    assert why in r.message, r.message


def test_lines_no_path_runs_are_dropped_where_they_hold_registers():
    # lane 0 of warp 1 (tid 32) branches past another role's code: its registers hold nothing
    t = _load("mov.u32 %r1, %tid.x;\nsetp.ge.u32 %p1, %r1, 32;\n@%p1 bra DONE;\nbar.sync %r4, 32;\nDONE:\nret;")
    assert not isinstance(t, LitmusError), t
    assert [i.op for i in t.threads[0].code] == ["mov", "setp", "bra", "bra"]
    assert dict(t.threads[0].labels)["DONE"] == 3
    assert check_test(t, PTX).status == "run"
    # the same for an address another role computes (nvcc's out + 4 * tid of the thread that stores)
    t = _load("ld.global.u64 %rd6, [x];\nmov.u32 %r1, %tid.x;\nsetp.ne.u32 %p1, %r1, 0;\n@%p1 bra DONE;\n"
              "mov.u64 %rd1, out;\nadd.s64 %rd7, %rd1, %rd6;\nst.global.u32 [%rd7], 1;\nDONE:\nret;")
    assert not isinstance(t, LitmusError), t
    assert [i.op for i in t.threads[0].code] == ["ld", "mov", "setp", "bra", "bra"]
    # a line a path runs is never dropped: there the refusal stands
    r = _load("ld.global.u64 %rd6, [x];\nmov.u32 %r1, %tid.x;\nsetp.eq.u32 %p1, %r1, 0;\n@%p1 bra DONE;\n"
              "mov.u64 %rd1, out;\nadd.s64 %rd7, %rd1, %rd6;\nst.global.u32 [%rd7], 1;\nDONE:\nret;")
    assert isinstance(r, LitmusError) and r.where.line == 21 and "reads it from memory" in r.message, r


@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_cvt_between_integer_widths(engine):
    # x = 0x80000001: zero- and sign-extended, truncated; a shared address widened stays an address
    code = ("ld.global.u32 %r1, [x];\ncvt.u64.u32 %rd1, %r1;\ncvt.s64.s32 %rd2, %r1;\ncvt.u16.u32 %r2, %r1;\n"
            "cvt.s32.s16 %r3, %r1;\nmov.u32 %r4, s;\ncvt.u64.u32 %rd3, %r4;\ncvta.shared.u64 %rd4, %rd3;\n"
            "st.u32 [%rd4], 7;")
    expect = ("expect:\n  allowed: ['P0:rd1=2147483649 /\\ P0:rd2=18446744071562067969 /\\ P0:r2=1 /\\ "
              "P0:r3=1 /\\ s=7']\n")
    [t] = load_text(BASE.replace("  x: 0", "  x: 0x80000001").format(code=code.replace("\n", "\n      ")) + expect,
                    "t.yaml")
    assert not isinstance(t, LitmusError), t
    assert [i.operands[0] for i in t.threads[0].code if i.op == "st"] == [Addr("s")]
    assert check_test(t, PTX, engine=engine).status == "pass"


@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_cvt_to_a_narrower_signed_type_sign_extends_the_register(engine):
    # PTX ISA, "Operand Size Exceeding Instruction-Type Size": the .b32 destination of a .s8/.s16
    # result is sign-extended (x = 0x80FF: .s8 -1, .s16 -32513); .u8 zero-extends. The constant
    # path (mov 255) folds to the same value: the store goes to y, not x (it once kept 0xFF, >= 0)
    code = ("ld.global.u32 %r1, [x];\ncvt.s8.s32 %r2, %r1;\ncvt.s16.s32 %r3, %r1;\ncvt.u8.s32 %r4, %r1;\n"
            "mov.u32 %r5, 255;\ncvt.s8.s32 %r6, %r5;\nsetp.lt.s32 %p1, %r6, 0;\n@%p1 st.global.u32 [out], 1;\n"
            "@!%p1 st.global.u32 [out+4], 1;")
    expect = ("expect:\n  allowed: ['P0:r2=4294967295 /\\ P0:r3=4294934783 /\\ P0:r4=255 /\\ out=1']\n")
    [t] = load_text(BASE.replace("  x: 0", "  x: 0x80FF").format(code=code.replace("\n", "\n      ")) + expect,
                    "t.yaml")
    assert not isinstance(t, LitmusError), t
    assert check_test(t, PTX, engine=engine).status == "pass"


@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_mul_wide_and_hi_on_read_values(engine):
    # x = 0xFFFFFFFF: as .u32 4294967295, as .s32 -1
    code = ("ld.global.u32 %r1, [x];\nmul.wide.u32 %rd1, %r1, %r1;\nmul.wide.s32 %rd2, %r1, 3;\n"
            "mul.hi.u32 %r3, %r1, %r1;\nmul.hi.s32 %r4, %r1, %r1;\nmul.hi.s32 %r5, %r1, 7;")
    expect = ("expect:\n  allowed: ['P0:rd1=18446744065119617025 /\\ P0:rd2=18446744073709551613 /\\ "
              "P0:r3=4294967294 /\\ P0:r4=0 /\\ P0:r5=4294967295']\n")
    [t] = load_text(BASE.replace("  x: 0", "  x: 0xFFFFFFFF").format(code=code.replace("\n", "\n      ")) + expect,
                    "t.yaml")
    assert check_test(t, PTX, engine=engine).status == "pass"


@pytest.mark.parametrize("text, message", [
    ("cvt.f32.s32 r0, r1", "cvt to or from a floating-point type is not modelled (ptxmc converts integers)"),
    ("cvt.rn.s32.f32 r0, r1", "cvt's rounding, saturation and .ftz modifiers are not modelled (ptxmc converts "
                              "integers: cvt.dtype.atype d, a)"),
    ("cvt r0, r1", "cvt needs two integer types, the destination's then the source's (cvt.u64.u32 d, a)"),
    ("mul.wide.u64 r0, r1, 2", "mul.wide takes .u16, .u32, .s16 or .s32 (its result is twice as wide)"),
    ("mul.hi.f32 r0, r1, 2", "mul.hi needs an integer type (.u16, .u32, .u64, .s16, .s32, .s64)"),
    ("mul.hi.u64 r0, r1, 2", "mul.hi of 64-bit values is not modelled (its 128-bit product leaves ptxmc's 64-bit "
                             "values)"),
])
def test_mul_and_cvt_forms_refused(text, message):
    with pytest.raises(LitmusError) as e:
        registry.parse_instr(text)
    assert e.value.message == message


# A register that holds an address is followed along the control paths (checker.isa.address), not
# down the text: each of these stores x on some path, and once read linearly stored y (or x+4) on
# every path, a wrong Forbidden for x=1.
ADDR = """
name: A
source: review
memory: {{x: {{size: 8}}, y: 0, f: 0}}
threads:
  P0:
    at: gpu0.cta0.warp0
    ptx: |
      .reg .pred %p<3>;
      .reg .b32 %r<9>;
      .reg .b64 %rd<9>;
      {code}
      ret;
expect: {{allowed: ["x=1"]}}
"""


@pytest.mark.parametrize("code, line, why", [
    ("ld.global.u32 %r1, [f];\nsetp.eq.u32 %p1, %r1, 0;\nmov.u64 %rd1, x;\n@%p1 bra L2;\nmov.u64 %rd1, y;\nL2:\n"
     "st.global.u32 [%rd1], 1;", 18, "register rd1 holds different addresses (x, y) on the control paths to this line"),
    ("ld.global.u32 %r1, [f];\nsetp.eq.u32 %p1, %r1, 1;\nmov.u64 %rd1, x;\n@%p1 mov.u64 %rd1, y;\n"
     "st.global.u32 [%rd1], 1;", 16, "register rd1 holds different addresses (x, y) on the control paths to this line"),
    ("mov.u64 %rd1, x;\nmov.u32 %r4, 0;\nL:\nst.global.u32 [%rd1], 1;\nadd.s64 %rd1, %rd1, 4;\nadd.u32 %r4, %r4, 1;\n"
     "setp.lt.u32 %p1, %r4, 2;\n@%p1 bra L;", 15, "register rd1 holds different addresses (x, x+4) on the control paths"),
])
def test_an_address_that_differs_between_control_paths_is_refused(code, line, why):
    [r] = load_text(ADDR.format(code=code.replace("\n", "\n      ")), "t.yaml")
    assert isinstance(r, LitmusError), [i.operands for i in r.threads[0].code]
    assert r.where.line == line and why in r.message, str(r)


def test_an_address_the_same_on_every_path_is_followed():
    # both sides of the branch leave rd1 at x+4; a constant guard (%tid.x) takes one side only
    code = ("ld.global.u32 %r1, [f];\nsetp.eq.u32 %p1, %r1, 0;\nmov.u64 %rd1, x;\nadd.s64 %rd1, %rd1, 4;\n"
            "@%p1 bra L2;\nmov.u64 %rd2, x;\nadd.s64 %rd1, %rd2, 4;\nL2:\nmov.u32 %r2, %tid.x;\n"
            "setp.ne.u32 %p2, %r2, 0;\nmov.u64 %rd3, x;\n@%p2 mov.u64 %rd3, y;\nst.global.u32 [%rd1], 1;\n"
            "st.global.u32 [%rd3], 1;")
    [t] = load_text(ADDR.format(code=code.replace("\n", "\n      ")), "t.yaml")
    assert not isinstance(t, LitmusError), t
    assert [i.operands[0] for i in t.threads[0].code if i.op == "st"] == [Addr("x", 4), Addr("x")]


@pytest.mark.parametrize("code, line, why", [
    ("ld.global.s32 %rd1, [x];", 12, "the .s32 value goes to %rd1, a 64-bit register"),
    ("ld.global.u32 %r1, [x];\ncvt.s16.s32 %rd1, %r1;", 13, "the .s16 value goes to %rd1, a 64-bit register"),
])
def test_a_signed_value_into_a_64_bit_register_is_refused(code, line, why):
    # PTX sign-extends it to the register's 64 bits; ptxmc's 32-bit value read as u64 was another
    # number (0xffffffff for 0xffffffffffffffff: a wrong Forbidden)
    [r] = load_text(ADDR.format(code=code.replace("\n", "\n      ")), "t.yaml")
    assert isinstance(r, LitmusError), r
    assert r.where.line == line and why in r.message, str(r)
