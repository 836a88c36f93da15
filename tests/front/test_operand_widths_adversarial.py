"""16-bit registers after 920fa96 (setp, selp, atom and red read a source register as their
type's size): a .s16/.s8 load into a declared .b16 register keeps its value sign-extended in
ptxmc, and every instruction that reads such a register as 16 bits must see its 16 bits (shifts,
mul.hi, mul.wide, cvt, not, shl, and, selp, setp of every signedness), on Z3 and brute force;
a .u8 load zero-extends. And an untyped copy (`mov r6, r5`) of a register a .s16 load filled,
read by setp.s16 (it holds what its source holds)."""
from __future__ import annotations

import pytest

from checker.front.litmus import load_text
from checker.verdict.check import check_test

DECLARED = """
name: W
source: "PTX ISA 9.4, ld (a sub-word load sign- or zero-extends into a wider register); setp; selp; shr; mul; cvt"
memory: {{x: {{size: 2, init: 65526}}, y: {{size: {ys}}}}}
threads:
  P0:
    at: gpu0.cta0
    ptx: |
      .reg .pred %p<3>;
      .reg .b16 %rs<9>;
      .reg .b32 %r<9>;
      ld.global.{load} %rs1, [x];
      {code}
      ret;
expect: {{allowed: ["y={v}"]}}
"""

ST16 = "\n      st.global.u16 [y], %rs2;"
FLAG = "\n      selp.u16 %rs2, 1, 2, %p1;" + ST16

CASES = [  # (load, code, y, y's size): x holds 0xfff6 (-10 as .s16)
    ("s16", "shr.u16 %rs2, %rs1, 4;" + ST16, 4095, 2),
    ("s16", "shr.s16 %rs2, %rs1, 4;" + ST16, 65535, 2),
    ("s16", "mul.hi.u16 %rs2, %rs1, 2;" + ST16, 1, 2),
    ("s16", "mul.wide.u16 %r2, %rs1, 2;\n      st.global.u32 [y], %r2;", 131052, 4),
    ("s16", "mul.wide.s16 %r2, %rs1, 2;\n      st.global.u32 [y], %r2;", 4294967276, 4),
    ("s16", "cvt.u32.u16 %r2, %rs1;\n      st.global.u32 [y], %r2;", 65526, 4),
    ("s16", "cvt.s32.s16 %r2, %rs1;\n      st.global.u32 [y], %r2;", 4294967286, 4),
    ("s16", "not.b16 %rs2, %rs1;" + ST16, 9, 2),
    ("s16", "shl.b16 %rs2, %rs1, 1;" + ST16, 65516, 2),
    ("s16", "and.b16 %rs2, %rs1, 65280;" + ST16, 65280, 2),
    ("s16", "setp.gt.u16 %p1, %rs1, 100;" + FLAG, 1, 2),
    ("s16", "setp.lt.s16 %p1, %rs1, -9;" + FLAG, 1, 2),
    ("s16", "setp.eq.b16 %p1, %rs1, 65526;" + FLAG, 1, 2),
    ("s16", "setp.eq.s16 %p1, %rs1, -10;" + FLAG, 1, 2),
    ("s16", "mov.u16 %rs3, 65526;\n      setp.eq.u16 %p1, %rs1, %rs3;" + FLAG, 1, 2),
    ("s16", "add.u16 %rs3, %rs1, 10;\n      setp.eq.u16 %p1, %rs3, 0;" + FLAG, 1, 2),
    ("s16", "setp.ne.u16 %p1, %rs1, 0;\n      selp.b16 %rs2, %rs1, 3, %p1;" + ST16, 65526, 2),
    ("s8", "shr.u16 %rs2, %rs1, 4;" + ST16, 4095, 2),
    ("s8", "setp.lt.s16 %p1, %rs1, 0;" + FLAG, 1, 2),
    ("u8", "setp.lt.s16 %p1, %rs1, 0;" + FLAG, 2, 2),
    ("u8", "setp.eq.u16 %p1, %rs1, 246;" + FLAG, 1, 2),
]


@pytest.mark.parametrize("engine", ["z3", "brute"])
@pytest.mark.parametrize("load, code, v, ys", CASES, ids=[f"{c[0]}-{c[1].split()[0]}-{n}" for n, c in enumerate(CASES)])
def test_a_16_bit_register_is_read_as_its_16_bits(load, code, v, ys, engine, ptx_model):
    (t,) = load_text(DECLARED.format(load=load, code=code, v=v, ys=ys), "t.yaml")
    r = check_test(t, ptx_model, "ptx", frozenset(), engine, 120)
    assert (r.status, r.outcomes) == ("pass", ((("y", v),),)), (r.status, r.message, r.outcomes)


UNDECLARED = """
name: U
source: "PTX ISA 9.4, ld (.s16 sign-extends); setp (.s16 compares 16-bit signed values)"
memory: {{x: {{size: 2, init: 65526}}}}
threads:
  P0:
    at: gpu0.cta0
    code: ['ld.global.s16 r5, [x]', '{copy}', 'setp.lt.s16 p, r6, 0', 'selp.u32 r1, 1, 0, p']
expect: {{allowed: ["P0:r1=1"]}}
"""


def test_a_typed_16_bit_copy_compares_as_16_bits(ptx_model):
    (t,) = load_text(UNDECLARED.format(copy="mov.b16 r6, r5"), "t.yaml")
    r = check_test(t, ptx_model, "ptx", frozenset(), "auto", 120)
    assert (r.status, r.outcomes) == ("pass", ((("P0:r1", 1),),)), (r.status, r.message, r.outcomes)


def test_an_untyped_copy_of_a_16_bit_value_compares_as_16_bits_or_is_refused(ptx_model):
    """An untyped `mov r6, r5` holds what r5 holds: its size and the .s16 of the load that filled
    it (it compared 0xfffffff6 as an exact value: -10 < 0 came out false)."""
    (t,) = load_text(UNDECLARED.format(copy="mov r6, r5"), "t.yaml")
    r = check_test(t, ptx_model, "ptx", frozenset(), "auto", 120)
    assert (r.status, r.outcomes) == ("pass", ((("P0:r1", 1),),)) or r.status == "error" and "setp.lt.s16" in r.message, \
        (r.status, r.message, r.outcomes)
