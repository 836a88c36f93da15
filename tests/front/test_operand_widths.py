"""setp, selp, atom and red take source registers of their type's size (PTX ISA, Operand Type
Information and Fundamental Types: compatible types have the same size; Restricted Use of Sub-Word
Sizes: only ld, st and cvt take wider registers). A register of another size is refused with file:line and
the text, whether the thread declares it (.reg) or ptxmc gave it its width (a typed load narrower
than 32 bits fills a 32-bit register, docs/model.md#a16); ptxmc used to compare the register's
whole value, which is no value of the type. A declared 16-bit register compares as 16 bits."""
from __future__ import annotations

import pytest

from checker.errors import LitmusError
from checker.front.litmus import load_text
from checker.verdict.check import check_test

DECLARED = """
name: A
source: "PTX ISA 9.4, setp; Operand Type Information; Restricted Use of Sub-Word Sizes"
memory: {{x: {{size: 2, init: 65526}}, y: 65537}}
threads:
  P0:
    at: gpu0.cta0
    ptx: |
      .reg .pred %p<3>;
      .reg .b16 %rs<9>;
      .reg .b32 %r<9>;
      .reg .b64 %rd<9>;
      {code}
      selp.u32 %r1, 1, 0, %p1;
      ret;
expect: {{allowed: ["P0:r1=1"]}}
"""


@pytest.mark.parametrize("code, why", [
    ("ld.global.u32 %r2, [y];\nsetp.eq.u16 %p1, %r2, 1;", "%r2 is a 32-bit register, and .u16 takes 16-bit registers"),
    ("ld.global.u32 %r2, [y];\nsetp.eq.s64 %p1, 1, %r2;", "%r2 is a 32-bit register, and .s64 takes 64-bit registers"),
    ("ld.global.u16 %rs2, [x];\nsetp.lt.u32 %p1, %rs2, 0;", "%rs2 is a 16-bit register, and .u32 takes 32-bit"),
    ("ld.global.u32 %r2, [y];\nsetp.ne.u32 %p1, %r2, 0;\nselp.b16 %rs3, %r2, 1, %p1;",
     "%r2 is a 32-bit register, and .b16 takes 16-bit registers"),
    ("mov.u64 %rd2, 4294967297;\natom.global.add.u32 %r2, [y], %rd2;",
     "%rd2 is a 64-bit register, and .u32 takes 32-bit registers"),
    ("mov.u32 %r2, 1;\nred.global.add.u64 [y], %r2;", "%r2 is a 32-bit register, and .u64 takes 64-bit registers"),
])
def test_a_declared_register_of_another_size_is_refused(code, why):
    [r] = load_text(DECLARED.format(code=code.replace("\n", "\n      ")), "t.yaml")
    assert isinstance(r, LitmusError), r
    last = code.splitlines()[-1].rstrip(";")
    assert r.where.path == "t.yaml" and r.where.line == 12 + len(code.splitlines()) and last in r.where.text, r.where
    assert why in r.message and "only to ld, st and cvt" in r.message, r.message


def test_a_declared_16_bit_register_compares_as_16_bits(ptx_model):
    """ld.s16 of 0xfff6 (-10) into a .b16 register: ptxmc keeps it sign-extended to 32 bits, and
    setp.lt.s16 read that as 0xfffefff6 - 65536... (not below 0): a wrong Forbidden for -10 < 0."""
    [t] = load_text(DECLARED.format(code="ld.global.s16 %rs2, [x];\n      setp.lt.s16 %p1, %rs2, 0;"), "t.yaml")
    r = check_test(t, ptx_model, "ptx", frozenset(), "auto", 120)
    assert r.status == "pass", (r.status, r.message, r.conditions)


UNDECLARED = """
name: U
source: "PTX ISA 9.4, setp; Operand Type Information; Restricted Use of Sub-Word Sizes"
memory: {{x: {{size: 2, init: 65526}}, y: 65537}}
threads:
  P0:
    at: gpu0.cta0
    code:
      - {load}
      - {setp}
      - selp.u32 r1, 1, 0, p
expect: {{allowed: ["P0:r1=1"]}}
"""


@pytest.mark.parametrize("load, setp, why, fixed_status", [
    # (65537 is 1 only as 16 bits)
    ("ld.global.u32 r0, [y]", "setp.eq.u16 p, r0, 1", "r0 holds a 32-bit value, and .u16 takes 16-bit registers", "fail"),
    ("ld.global.u32 r0, [y]", "setp.ne.u64 p, r0, 1", "r0 holds a 32-bit value, and .u64 takes 64-bit registers", "pass"),
    ("mov.u64 r0, 65537", "setp.eq.u32 p, r0, 65537", "r0 holds a 64-bit value, and .u32 takes 32-bit", "pass"),
])
def test_an_undeclared_register_holding_a_value_of_another_size_is_refused(load, setp, why, fixed_status, ptx_model):
    [t] = load_text(UNDECLARED.format(load=load, setp=setp), "u.yaml")
    r = check_test(t, ptx_model, "ptx", frozenset(), "auto", 120)
    assert r.status == "error" and r.message.startswith(f"u.yaml:10: '{setp}': {why}"), r.message
    # the hint names the comparison at the register's width
    have = why.split("-bit")[0].split()[-1]
    fixed = setp.replace(setp.split()[0], setp.split()[0][:-2] + have)
    assert f"use {fixed.split()[0]}" in r.message
    [t] = load_text(UNDECLARED.format(load=load, setp=fixed), "u.yaml")
    assert check_test(t, ptx_model, "ptx", frozenset(), "auto", 120).status == fixed_status


@pytest.mark.parametrize("load, setp", [
    ("ld.global r0, [y]", "setp.eq.s64 p, r0, 65537"),         # untyped: an exact integer (ptxmc convert's form)
    ("ld.global.u16 r0, [x]", "setp.eq.u32 p, r0, 65526"),
    ("mov.u32 r0, %tid.x", "setp.eq.u32 p, r0, 0"),
    # a .s16 load's register may be 16 bits (ld.s16 %rs) or 32 (ld.s16 %r, sign-extended): -10
    # either way; ptxmc read the 32-bit pattern as .s16 (0xfffffff6 is not below 0: a wrong Forbidden)
    ("ld.global.s16 r0, [x]", "setp.lt.s16 p, r0, 0"),
    ("ld.global.s16 r0, [x]", "setp.lt.s32 p, r0, 0"),
    ("ld.global.s16 r0, [x]", "setp.eq.b16 p, r0, 65526"),
    ("ld.global.u32 r5, [y]\n      - cvt.s16.u32 r0, r5", "setp.eq.s16 p, r0, 1"),
])
def test_registers_of_the_right_size_or_untyped_are_compared(load, setp, ptx_model):
    [t] = load_text(UNDECLARED.format(load=load, setp=setp), "u.yaml")
    assert check_test(t, ptx_model, "ptx", frozenset(), "auto", 120).status == "pass"


@pytest.mark.parametrize("code, line, why", [
    # a 64-bit value compared by a 32-bit cas: ptxmc compared all 64 bits (never equal to x's 32)
    ("mov.u64 r0, 4294967297\n      - atom.global.cas.b32 r1, [y], r0, 7", 10,
     "r0 holds a 64-bit value, and .b32 takes 32-bit registers"),
    ("ld.global.u32 r0, [y]\n      - atom.global.add.u64 r1, [w], r0", 10, "r0 holds a 32-bit value, and .u64 takes 64-bit"),
])
def test_read_modify_write_operands_of_another_size_are_refused(code, line, why, ptx_model):
    text = UNDECLARED.replace("      - {load}\n      - {setp}\n      - selp.u32 r1, 1, 0, p\n", "      - {code}\n")
    [t] = load_text(text.format(code=code), "u.yaml")
    r = check_test(t, ptx_model, "ptx", frozenset(), "auto", 120)
    assert r.status == "error" and r.message.startswith(f"u.yaml:{line}: ") and why in r.message, r.message


def test_selp_takes_a_16_bit_register_as_its_16_bits(ptx_model):
    """selp.b16 of a .s16 load's register (-10, kept as 0xfffffff6): its 16 bits, 0xfff6, as a
    16-bit register holds them (ptxmc selected all 32 into a 16-bit result: P0:r1=-10 was 65526
    against 4294967286, a wrong Forbidden)."""
    text = UNDECLARED.replace("      - {load}\n      - {setp}\n      - selp.u32 r1, 1, 0, p\n",
                              "      - ld.global.s16 r0, [x]\n      - selp.b16 r1, r0, 0, 1\n")
    text = text.replace('expect: {{allowed: ["P0:r1=1"]}}', 'expect: {{allowed: ["P0:r1=-10", "P0:r1=65526"]}}')
    [t] = load_text(text.format(), "u.yaml")
    r = check_test(t, ptx_model, "ptx", frozenset(), "auto", 120)
    assert r.status == "pass", (r.status, r.message)
