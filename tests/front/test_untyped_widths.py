"""Untyped values read as a type (docs/model.md#a16): an untyped ld or st of a sized location has
the location's size, and an untyped value that setp, selp, atom or red reads must fit the type,
as an immediate must. ptxmc used to count an untyped value as fitting any type: `ld r5, [y]` of a
4-byte y holding 65537 and `setp.eq.u16 p, r5, 1` compared 65537 with 1 (PTX has no such
16-bit value), and an untyped `st [y], r5` of 65537 left 65537 in a 2-byte y, which a `.u16` load
then returned."""
from __future__ import annotations

import pytest

from checker.front.litmus import load_text
from checker.verdict.check import check_test

TEXT = """
name: U
source: "PTX ISA 9.4, setp; Operand Type Information (an operand fits its instruction type); docs/model.md#a16"
memory: {{y: {{size: {size}, init: {init}}}}}
threads:
  P0:
    at: gpu0.cta0
    code:
      - {first}
      - {second}
      - selp.u32 r1, 1, 0, p
expect: {{allowed: ["P0:r1=1"]}}
"""


def judge(size, init, first, second, ptx_model, engine="auto"):
    [t] = load_text(TEXT.format(size=size, init=init, first=first, second=second), "u.yaml")
    return check_test(t, ptx_model, "ptx", frozenset(), engine, 120)


@pytest.mark.parametrize("size, init, first, second, why", [
    # the known gap: 65537 is 1 only as 16 bits; ptxmc compared the 32-bit value
    (4, 65537, "ld r5, [y]", "setp.eq.u16 p, r5, 1", "r5 holds an untyped value that may not fit 16 bits"),
    (8, 4294967297, "ld r5, [y]", "setp.eq.u32 p, r5, 1", "may not fit 32 bits (it lies between 0 and 18446744073709551615"),
    # a typed value through untyped arithmetic: exact, so no longer 16 bits
    (4, 65537, "ld.u32 r0, [y]\n      - add r5, r0, 0", "setp.eq.u16 p, r5, 1", "may not fit 16 bits"),
    # a .s16 load (-10, held sign-extended to 32 bits) through an untyped add: setp.lt.s16 said 'not below 0'
    (2, 65526, "ld.s16 r0, [y]\n      - add r5, r0, 0", "setp.lt.s16 p, r5, 0", "may not fit 16 bits"),
    # an exact -1 is no .u32 value: setp.gt.u32 said -1 is not above 5
    (4, 0, "mov r0, 0\n      - sub r5, r0, 1", "setp.gt.u32 p, r5, 5", "(it lies between -1 and -1"),
    (4, 65537, "ld r5, [y]", "selp.b16 r6, r5, 0, 1\n      - setp.eq.u16 p, r6, 1", "r5 holds an untyped value"),
    (8, 4294967297, "ld r5, [y]", "atom.global.exch.b32 r6, [z], r5\n      - setp.eq.u32 p, 1, 1",
     "r5 holds an untyped value that may not fit 32 bits"),
])
def test_an_untyped_value_that_may_not_fit_the_type_is_refused(size, init, first, second, why, ptx_model):
    r = judge(size, init, first, second, ptx_model)
    line = 10 + first.count("\n")
    assert r.status == "error" and r.message.startswith(f"u.yaml:{line}: '") and why in r.message, (r.status, r.message)


@pytest.mark.parametrize("engine", ["z3", "brute"])
@pytest.mark.parametrize("size, init, first, second, status", [
    (2, 65535, "ld r5, [y]", "setp.eq.u32 p, r5, 65535", "pass"),      # a 2-byte value fits 32 bits
    (2, 65535, "ld r5, [y]", "setp.eq.u16 p, r5, 65535", "pass"),
    (4, 65537, "ld r5, [y]", "setp.eq.u32 p, r5, 65537", "pass"),
    (4, 65537, "ld r5, [y]", "setp.eq.u64 p, r5, 65537", "pass"),
    (4, 65537, "ld r0, [y]\n      - and r5, r0, 65535", "setp.eq.u16 p, r5, 1", "pass"),   # masked: fits
    (4, 0, "ld r0, [y]\n      - sub r5, r0, 1", "setp.lt.s32 p, r5, 0", "pass"),     # a signed compare of -1
])
def test_an_untyped_value_that_fits_is_compared(size, init, first, second, status, engine, ptx_model):
    assert judge(size, init, first, second, ptx_model, engine).status == status


def test_an_unsized_location_holds_an_abstract_integer(ptx_model):
    """Without a size, a location's values have no width (A16): the comparison stands."""
    text = TEXT.replace("memory: {{y: {{size: {size}, init: {init}}}}}", "memory: {{y: {init}}}")
    [t] = load_text(text.format(init=65537, first="ld r5, [y]", second="setp.ne.u16 p, r5, 1"), "u.yaml")
    r = check_test(t, ptx_model, "ptx", frozenset(), "auto", 120)
    assert r.status == "pass", r.message


STORE = """
name: S
source: "PTX ISA 9.4, st (a wider register stores its low bits); docs/model.md#a16"
memory: {{y: {{size: 2}}}}
threads:
  P0:
    at: gpu0.cta0
    code: [{src}, 'st [y], r5', 'ld.u16 r6, [y]', 'ld r7, [y]']
expect: {{allowed: ["P0:r6=1 /\\\\ P0:r7=1 /\\\\ y=1"]}}
"""


@pytest.mark.parametrize("engine", ["z3", "brute"])
@pytest.mark.parametrize("src", ["'mov r5, 65537'", "'mov r4, 65536', 'add r5, r4, 1'"])
def test_an_untyped_store_to_a_sized_location_stores_its_low_bits(src, engine, ptx_model):
    """ptxmc stored 65537 in the 2 bytes of y, and the .u16 load returned 65537."""
    [t] = load_text(STORE.format(src=src), "s.yaml")
    r = check_test(t, ptx_model, "ptx", frozenset(), engine, 120)
    assert (r.status, r.outcomes) == ("pass", ((("P0:r6", 1), ("P0:r7", 1), ("y", 1)),)), (r.status, r.message)


def test_an_untyped_store_of_an_immediate_must_fit_the_location(ptx_model):
    text = STORE.format(src="'mov r5, 1'").replace("'st [y], r5'", "'st [y], 65537'")
    [t] = load_text(text, "s.yaml")
    r = check_test(t, ptx_model, "ptx", frozenset(), "auto", 120)
    assert r.status == "error" and r.message.startswith("s.yaml:8: 'st [y], 65537': the value 65537 does not fit "
                                                        "in the 2 bytes of 'y'"), r.message


DECLARED = """
name: D
source: "PTX ISA 9.4, setp; docs/model.md#a16"
memory: {y: {size: 4, init: 65537}}
threads:
  P0:
    at: gpu0.cta0
    ptx: |
      .reg .pred %p<3>;
      .reg .b16 %rs<9>;
      .reg .b32 %r<9>;
      ld.global %rs1, [y];
      setp.eq.u16 %p1, %rs1, 1;
      selp.u32 %r1, 1, 0, %p1;
      ret;
"""


def test_a_declared_16_bit_register_an_untyped_load_filled_is_refused(ptx_model):
    """A .b16 register held the 32-bit 65537 and setp.eq.u16 compared it whole."""
    [t] = load_text(DECLARED, "d.yaml")
    r = check_test(t, ptx_model, "ptx", frozenset(), "auto", 120)
    assert r.status == "error" and "d.yaml:13: 'setp.eq.u16 %p1, %rs1, 1': %rs1 holds an untyped value" in r.message, \
        r.message


NEGATIVE = """
name: N
source: "docs/model.md#a16 (a negative number is its two's complement in the observable's width)"
memory: {{x: {{size: 4}}}}
threads:
  P0:
    at: gpu0.cta0
    code: ['st [x], -1']
  P1:
    at: gpu0.cta1
    code: ['ld r0, [x] == {v}', 'ld r1, [x]']
expect: {{allowed: ["P1:r1=-1 /\\\\ x=-1 /\\\\ P1:r0=4294967295"]}}
"""


@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_an_untyped_load_of_a_sized_location_is_observed_at_its_size(engine, ptx_model):
    """An untyped st of -1 to a 4-byte x stores 0xffffffff; P1:r1=-1 and x=-1 name that pattern
    (x's did before, the register's compared the exact -1)."""
    [t] = load_text(NEGATIVE.format(v=4294967295), "n.yaml")
    r = check_test(t, ptx_model, "ptx", frozenset(), engine, 120)
    assert r.status == "pass", (r.status, r.message)


@pytest.mark.parametrize("hang", [False, True])
def test_a_negative_await_of_an_untyped_load_of_a_sized_location_is_refused(hang, ptx_model):
    """The await compares the exact value, which a 4-byte location no longer holds negative: the
    hang question's loop would spin forever (a wrong hang), the outcomes would have none."""
    text = NEGATIVE.format(v=-1)
    if hang:
        text = text.replace('expect: {allowed: [', 'expect: {hang: forbidden, allowed: [')
    [t] = load_text(text, "n.yaml")
    r = check_test(t, ptx_model, "ptx", frozenset(), "auto", 120)
    assert r.status == "error" and r.message.startswith("n.yaml:11: 'ld r0, [x] == -1': the awaited value -1 is "
                                                        "negative"), (r.status, r.message)
