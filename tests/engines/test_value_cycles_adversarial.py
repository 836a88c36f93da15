"""Brute force's fixed points of value cycles (checker.engines.fixpoint) against Z3, on shapes
the first comparison (test_value_cycles.py) does not draw: byte, signed 32-bit and 64-bit loads,
an exchange, subtraction and negative addends in signed types, a 64-bit add stored in 32 bits, a
narrowing cvt, signed 16-bit stores; and conditions with negative constants, all-ones values of
several widths, a value just past a byte, and two observables compared. Where brute force
decides sanity it is Z3's (both `sane` and whether a witness exists without axioms); where it
cannot solve a shape it says so."""
from __future__ import annotations

import itertools

from tests.engines.test_value_cycles import cycle_text, sanity_agrees

READS = ["ld.global.u8 {r}, [{loc}]", "ld.global.s32 {r}, [{loc}]", "atom.global.exch.b32 {r}, [{loc}], 7",
         "ld.global.u64 {r}, [{loc}]", "ld.global.s16 {r}, [{loc}]"]
WRITES = ["st.global.u8 [{loc}], {r}",
          "sub.s32 {t}, {r}, 1\n      - st.global.s32 [{loc}], {t}",
          "add.s32 {t}, {r}, -256\n      - st.global.u8 [{loc}], {t}",
          "add.u64 {t}, {r}, 1\n      - st.global.u32 [{loc}], {t}",
          "cvt.u16.u32 {t}, {r}\n      - st.global.u32 [{loc}], {t}",
          "st.global.u64 [{loc}], {r}",
          "st.global.s16 [{loc}], {r}"]
CONDS = [r"P0:r0=-1", r"P0:r0=65535 /\ P1:r1=-1", r"x=255", r"P0:r0=-2 /\ ~(y=65534)", r"x=-1 \/ y=4294967295",
         r"P0:r0=P1:r1 /\ ~(P0:r0=0)", r"P0:r0=256", r"~(P0:r0=0) /\ ~(P0:r0=1)", r"P0:r0=7 /\ P1:r1=6"]


def test_brute_force_sanity_on_signed_and_sized_cycles_is_z3s_or_refused(ptx_model):
    decided, refused = sanity_agrees((cycle_text(*x, conds=CONDS) for x in itertools.product(READS, WRITES, READS[:3], WRITES[:4])),
                                     ptx_model)
    assert decided[True] >= 10 and decided[False] >= 50 and refused >= 10, (decided, refused)
