"""Real PTX (issue 15): nvcc's syntax, the ptx: block, special registers, the new families, kernels
and PDL; every refusal names file:line; the real-ptx suite passes on Z3 and on brute force."""
from __future__ import annotations

from pathlib import Path

import pytest

from checker.errors import LitmusError
from checker.front.litmus import load_text, load_paths
from checker.resources import resolve_model
from checker.verdict.check import check_test

SUITE = Path(__file__).parents[2] / "litmus" / "real-ptx"
PTX = resolve_model("ptx")


def _one(text: str):
    [t] = load_text(text, "t.yaml")
    return t


def _status(t, engine="z3"):
    return check_test(t, PTX, engine=engine).status


@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_suite_passes_on_both_engines(engine):
    tests = load_paths([SUITE])
    assert len(tests) >= 30
    assert not [t for t in tests if isinstance(t, LitmusError)]
    assert {t.name: _status(t, engine) for t in tests} == {t.name: "pass" for t in tests}


MP = """
name: T
memory: {{x: 0, flag: 0}}
{kernels}
threads:
  P0:
    at: gpu0.cta0
    ptx: |
      .reg .b32 %r<2>;
      {p0}
  P1:
    at: gpu0.cta1
    ptx: |
      .reg .b32 %r<3>;
      {p1}
expect:
  {expect}
"""


def _mp(p0, p1, expect, kernels=""):
    return _one(MP.format(p0=p0, p1=p1, expect=expect, kernels=kernels))


def test_ptx_block_is_statements_with_their_lines():
    t = _mp("st.global.b32 [x], 1; // data\n      { st.release.gpu.global.b32 [flag], 1; }",
            "ld.acquire.gpu.global.b32 %r1, [flag]; ld.global.b32 %r2, [x];",
            "forbidden: ['P1:r1=1 /\\ P1:r2=0']")
    assert [i.text for i in t.threads[0].code] == ["st.global.b32 [x], 1", "st.release.gpu.global.b32 [flag], 1"]
    assert [i.where.line for i in t.threads[0].code] == [10, 11]
    assert [i.where.line for i in t.threads[1].code] == [16, 16]
    assert _status(t) == "pass"
    weak = _mp("st.global.b32 [x], 1;\n      st.global.b32 [flag], 1;",
               "ld.global.b32 %r1, [flag];\n      ld.global.b32 %r2, [x];", "forbidden: ['P1:r1=1 /\\ P1:r2=0']")
    assert _status(weak) == "fail"


@pytest.mark.parametrize("p0, line, message", [
    ("ld.global.b32 %r7, [x];", 10, "register %r7 is not declared"),
    (".reg .q8 %q;", 10, "'.q8' is not a register type"),
    ("mov.u32 %tid.x, 1;", 10, "%tid.x is a special register: it is read-only"),
    (".shared .b8 buf[16];", 10, "'.shared' declares buf in gpu0.cta0's shared memory: declare it under memory:"),
    (".pragma \"nounroll\";", 10, "directive '.pragma' is not accepted"),
    ("mov.u32 %r1, %ntid.x;\n      st.global.b32 [x], %r1;", 10, "holds a value the test does not determine"),
    ("elect.sync %r1|%r0, 0x2;", 10, "is not in membermask"),
    ("setmaxnreg.inc.sync.aligned.u32 20;", 10, "a multiple of 8 from 24 to 256, not 20"),
    ("setmaxnreg.dec.sync.aligned.u32 100;", 10, "a multiple of 8 from 24 to 256, not 100"),
    ("setmaxnreg.inc.sync.aligned.u32 %r1;", 10, "must be an integer"),
    ("activemask.b32 %r1;\n      st.global.b32 [x], %r1;", 11, "which lanes of the warp are active"),
    ("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%r1}, [s];", 10, ".trans is not modelled"),
    ("mbarrier.arrive.release.cluster.shared::cluster.multicast::cluster.b64 _, [s], 3;", 10,
     "no .multicast::cluster form"),
    ("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.cta_group::2 "
     "[s], [x, {0}], [s];", 10, ".cta_group::2 (CTA pairs) is not modelled yet"),
])
def test_refusals_name_file_and_line(p0, line, message):
    text = MP.format(p0=p0, p1="ld.global.b32 %r1, [x];", expect="allowed: []", kernels="")
    text = text.replace("memory: {x: 0, flag: 0}", "memory: {x: 0, flag: 0, s: {space: shared, owner: gpu0.cta0}}")
    [r] = load_text(text, "t.yaml")
    if isinstance(r, LitmusError):
        assert r.where.path == "t.yaml" and r.where.line == line, str(r)
        assert message in r.message
    else:
        res = check_test(r, PTX)
        assert res.status == "error" and f"t.yaml:{line}:" in res.message and message in res.message, res.message


def test_special_registers_follow_positions():
    t = _one("""
name: S
threads:
  A: {at: gpu0.cluster2.cta3.warp1, code: ["mov.u32 r0, %cluster_ctarank", "mov.u32 r1, %clusterid.x", "mov.u32 r2, %tid.x"]}
  B: {at: gpu0.cluster2.cta3.warp1, code: ["mov.u32 r0, %laneid"]}
expect: {allowed: ["A:r0=3 /\\\\ A:r1=2 /\\\\ A:r2=32 /\\\\ B:r0=1"]}
""")
    assert _status(t) == "pass"


def test_nc_load_of_data_written_in_the_same_kernel_is_refused():
    t = _mp("st.global.b32 [x], 1;", "ld.global.nc.b32 %r1, [x];", "allowed: []")
    res = check_test(t, PTX)
    assert res.status == "error" and "non-coherent" in res.message and "t.yaml:15:" in res.message, res.message
    later = _mp("st.global.b32 [x], 1;", "ld.global.nc.b32 %r1, [x];", "forbidden: ['P1:r1=0']",
                "kernels: [{threads: [P0]}, {threads: [P1]}]")
    assert _status(later) == "pass"


@pytest.mark.parametrize("launch, p1, stale", [
    ("stream", "ld.global.b32 %r1, [x];", "forbidden"),
    ("pdl", "ld.global.b32 %r1, [x];", "allowed"),
    ("pdl", "griddepcontrol.wait;\n      ld.global.b32 %r1, [x];", "forbidden"),
    ("pdl", "ld.global.b32 %r1, [x];\n      griddepcontrol.wait;", "allowed"),
])
def test_kernel_boundary_and_pdl(launch, p1, stale):
    t = _mp("st.global.b32 [x], 1;\n      griddepcontrol.launch_dependents;", p1, f"{stale}: ['P1:r1=0']",
            f"kernels: [{{threads: [P0]}}, {{launch: {launch}, threads: [P1]}}]")
    assert _status(t) == "pass"
    assert _status(t, "brute") == "pass"


def test_kernel_boundary_is_proxy_preserving_and_needs_no_fence():
    """API synchronization (issue 32 item 1): a TMA load in a later kernel reads what an earlier
    kernel stored with a generic st, with no proxy fence: `fix` has nothing to repair (it used to
    propose fence.proxy.async.global), and a PDL wait covers the primary's TMA store that only a
    .read wait_group followed (item 2)."""
    from checker.repair.fix import fix
    from checker.repair.target import from_test
    tests = {t.name: t for t in load_paths([SUITE])}
    t = tests["RP-kernel-proxy-generic-to-tma-load"]
    res = fix(t, from_test(t), PTX)
    assert res.status == "met" and not res.repairs, (res.status, res.repairs)
    pdl = check_test(tests["RP-pdl-async-after-wait"], PTX)
    assert pdl.status == "pass" and not pdl.undefined, pdl.message


@pytest.mark.parametrize("kernels, message", [
    ("kernels: [{threads: [P0]}]", "thread 'P1' is in no kernel"),
    ("kernels: [{threads: [P0, P1]}, {threads: [P1]}]", "already in kernel"),
    ("kernels: [{launch: pdl, threads: [P0, P1]}]", "the first kernel has no primary"),
])
def test_malformed_kernels(kernels, message):
    [r] = load_text(MP.format(p0="st.global.b32 [x], 1;", p1="ld.global.b32 %r1, [x];", expect="allowed: []",
                              kernels=kernels), "t.yaml")
    assert isinstance(r, LitmusError) and message in r.message and r.where.path == "t.yaml"


def test_one_gpu_per_stream():
    text = MP.format(p0="st.global.b32 [x], 1;", p1="ld.global.b32 %r1, [x];", expect="allowed: []",
                     kernels="kernels: [{threads: [P0]}, {threads: [P1]}]").replace("gpu0.cta1", "gpu1.cta1")
    [r] = load_text(text, "t.yaml")
    assert isinstance(r, LitmusError) and "one stream of one GPU" in r.message


def test_one_cta_per_kernel():
    text = MP.format(p0="st.global.b32 [x], 1;", p1="ld.global.b32 %r1, [x];", expect="allowed: []",
                     kernels="kernels: [{threads: [P0]}, {threads: [P1]}]").replace("gpu0.cta1", "gpu0.cta0")
    [r] = load_text(text, "t.yaml")
    assert isinstance(r, LitmusError) and "each kernel's threads run in their own CTAs" in r.message


def test_harness_refuses_what_it_cannot_generate():
    """Kernels and the families without an emitter are never run as something else; special
    registers (read as the model's values) and cache hints are generated (tests/harness/test_harness_special.py)."""
    from checker.harness.codegen import unsupported
    tests = {t.name: t for t in load_paths([SUITE])}
    assert "launches one kernel" in unsupported(tests["RP-kernel-boundary-MP"])
    assert "no harness emitter for 'elect'" in unsupported(tests["RP-elect-publish"])
    assert unsupported(tests["RP-special-%tid.x"]) is None and unsupported(tests["RP-hint-MP-cg"]) is None


def test_fix_and_export_keep_or_refuse_kernels():
    """A repaired test written standalone keeps its kernels; herd export refuses what herd cannot say."""
    from checker.convert.export import outside_subset
    from checker.repair.yamlpatch import render_test
    tests = {t.name: t for t in load_paths([SUITE])}
    t = tests["RP-pdl-load-after-wait"]
    [back] = load_text(render_test(t, "copy"), "copy.yaml")
    assert back.kernels == t.kernels and [k.launch for k in back.kernels] == ["stream", "pdl"]
    assert "several kernels" in outside_subset(t).message
    assert "special register" in outside_subset(tests["RP-special-%laneid"]).message
    assert "cache hint" in outside_subset(tests["RP-hint-MP-cg"]).message


@pytest.mark.parametrize("text, message", [
    ("mov.u32 r0, %tid", "read special register %tid one component at a time"),
    ("mov.u32 r0, %laneid.x", "special register %laneid has no components"),
])
def test_malformed_special_registers(text, message):
    from checker.isa.registry import parse_instr
    with pytest.raises(LitmusError) as e:
        parse_instr(text)
    assert message in e.value.message


def test_hints_and_warp_instructions_have_no_events():
    """prefetch, prefetchu, cp.async.bulk.prefetch, nanosleep, activemask, elect.sync, setmaxnreg
    and griddepcontrol.launch_dependents lower to no events at all."""
    from checker.isa.registry import lower
    t = _one("""
name: E
memory: {x: 0, tm: {tensormap: {0: x}}}
threads:
  P0:
    at: gpu0.cta0
    code: ["prefetch.global.L2 [x]", "prefetch.tensormap [tm]", "prefetchu.L1 [x]", "nanosleep.u32 7",
           "cp.async.bulk.prefetch.L2.global [x], 16", "activemask.b32 r1", "elect.sync r2|p, 0xffffffff",
           "griddepcontrol.launch_dependents", "setmaxnreg.dec.sync.aligned.u32 24",
           "setmaxnreg.inc.sync.aligned.u32 256", "ld.global.L1::evict_last.b32 r3, [x]"]
""")
    es = lower(t)
    assert [e.kind for e in es.events if e.thread == "P0"] == ["R"]


@pytest.mark.parametrize("p1_at, refused", [("gpu0.cta0.warp3", True), ("gpu0.cta0.warp4", False),
                                            ("gpu0.cta1.warp0", False)])
def test_setmaxnreg_thread_stands_for_its_warpgroup(p1_at, refused):
    """Every warp of a warpgroup executes the same setmaxnreg (undefined otherwise): a litmus
    thread running it stands for its warpgroup, so another litmus thread in the same warpgroup
    (warps 0-3 of one CTA) is refused with its line, and one in the next warpgroup or CTA is not."""
    t = _one(f"""
name: W
memory: {{x: 0}}
threads:
  P0:
    at: gpu0.cta0.warp0
    ptx: |
      setmaxnreg.dec.sync.aligned.u32 40;
      st.global.b32 [x], 1;
  P1:
    at: {p1_at}
    ptx: |
      .reg .b32 %r<2>;
      ld.global.b32 %r1, [x];
expect:
  allowed: ["P1:r1=0", "P1:r1=1"]
""")
    r = check_test(t, PTX)
    if refused:
        assert r.status == "error" and "t.yaml:8:" in r.message and "P1 is in P0's warpgroup" in r.message, r.message
    else:
        assert r.status == "pass", r.message


# PTX ISA, "Statements": a { } block has its own labels and .reg declarations; nvcc prints one block
# per inlined asm statement, so two inlined waits each define LAB_WAIT and their predicate.
BLOCKS = """
name: B
source: "PTX ISA 9.4, PTX statements (scope of labels and .reg declarations in {{ }} blocks)"
memory:
  x: 0
  b1: {{space: shared, owner: gpu0.cta0, mbarrier: {{count: 1}}}}
  b2: {{space: shared, owner: gpu0.cta0, mbarrier: {{count: 1}}}}
threads:
  P0:
    at: gpu0.cta0.warp0
    code: ["mbarrier.arrive.shared::cta.b64 _, [b1]", "mbarrier.arrive.shared::cta.b64 _, [b2]"]
  P1:
    at: gpu0.cta0.warp1
    ptx: |
{body}
expect:
  {expect}
"""


def _blocks(body, expect="hang: forbidden"):
    [r] = load_text(BLOCKS.format(body="\n".join("      " + x for x in body.strip().splitlines()), expect=expect),
                    "t.yaml")
    return r


TWO_WAITS = """
{
.reg .pred P1;
LAB_WAIT:
mbarrier.try_wait.parity.shared::cta.b64 P1, [b1], 0;
@!P1 bra LAB_WAIT;
}
{
.reg .pred P1;
LAB_WAIT:
mbarrier.try_wait.parity.shared::cta.b64 P1, [b2], 0;
@!P1 bra LAB_WAIT;
}
"""


def test_labels_and_registers_are_scoped_to_their_block():
    t = _blocks(TWO_WAITS)
    assert not isinstance(t, LitmusError), t
    p1 = t.threads[1]
    assert [name for name, _ in p1.labels] == ["LAB_WAIT$1", "LAB_WAIT$2"]
    waits = [i for i in p1.code if i.op == "mbarrier"]
    bras = [i for i in p1.code if i.op == "bra"]
    assert [w.operands[0].name for w in waits] == ["P1$1", "P1$2"]
    assert [(b.predicate, b.operands[0].name) for b in bras] == [("@!P1$1", "LAB_WAIT$1"), ("@!P1$2", "LAB_WAIT$2")]
    assert _status(t) == "pass"
    # the second wait needs b2's phase: without P0's second arrive, P1 hangs in the second block
    hang = _one(BLOCKS.format(body="\n".join("      " + x for x in TWO_WAITS.strip().splitlines()),
                              expect="hang: forbidden").replace(', "mbarrier.arrive.shared::cta.b64 _, [b2]"', ""))
    assert _status(hang) == "fail"


def test_a_branch_reaches_the_label_of_an_enclosing_block_not_a_sibling():
    outer = _blocks("""
.reg .pred P1;
LAB_WAIT:
{
mbarrier.try_wait.parity.shared::cta.b64 P1, [b1], 0;
{
@!P1 bra LAB_WAIT;
}
}
""")
    assert not isinstance(outer, LitmusError), outer
    assert [name for name, _ in outer.threads[1].labels] == ["LAB_WAIT"]
    assert _status(outer) == "pass"
    sibling = _blocks("""
.reg .pred P1;
{
LAB_WAIT:
mbarrier.try_wait.parity.shared::cta.b64 P1, [b1], 0;
}
{
@!P1 bra LAB_WAIT;
}
""")
    assert isinstance(sibling, LitmusError)
    assert sibling.where.line == 21 and sibling.where.text == "@!P1 bra LAB_WAIT"
    assert "label 'LAB_WAIT' of another { } block" in sibling.message


def test_an_inner_declaration_shadows_the_outer_register_only_inside_its_block():
    t = _blocks("""
.reg .b32 %r<2>;
mov.u32 %r1, 1;
{
.reg .b32 %r1;
mov.u32 %r1, 2;
}
st.global.b32 [x], %r1;
""", expect="allowed: ['x=1']")
    assert not isinstance(t, LitmusError), t
    assert _status(t) == "pass"
    undeclared = _blocks("""
{
.reg .b32 %r1;
mov.u32 %r1, 2;
}
st.global.b32 [x], %r1;
""", expect="allowed: ['x=0']")
    assert isinstance(undeclared, LitmusError) and "register %r1 is not declared" in undeclared.message
    assert undeclared.where.line == 19


def test_a_thread_that_declares_r1_and_percent_r1_is_refused():
    """A '%' is part of a PTX identifier: `%r1` and `r1` are two registers, and this body stores
    1. ptxmc drops the '%', so it would read them as one register and answer x=2: refused,
    naming the second declaration (as is `r1` declared before `%r1`)."""
    body = """
.reg .b32 %r<2>;
.reg .b32 r1;
mov.u32 %r1, 1;
mov.u32 r1, 2;
st.global.b32 [x], %r1;
"""
    t = _blocks(body, expect="allowed: ['x=1']")
    assert isinstance(t, LitmusError), t
    assert "declares both %r1 and r1" in t.message and t.where.text == ".reg .b32 r1"
    swapped = _blocks(body.replace(".reg .b32 %r<2>;\n.reg .b32 r1;", ".reg .b32 r1;\n.reg .b32 %r<2>;"),
                      expect="allowed: ['x=1']")
    assert isinstance(swapped, LitmusError) and "declares both r1 and %r1" in swapped.message


def test_a_thread_that_writes_r1_and_percent_r1_is_refused():
    """The same without declarations (a litmus thread need not declare its registers): `%r1`
    and `r1` are still two registers (x=1 is the only outcome), and ptxmc, which drops the '%',
    answered x=2. Refused at the second spelling; memory names, labels and special registers
    written beside a register of the same name are no second spelling."""
    test = """
name: Spellings
source: "PTX ISA 9.4, Identifiers (the '%' is part of the name)"
arch: sm_90
memory:
  x: {space: global}
threads:
  P0:
    at: gpu0.cluster0.cta0
    code:
      - mov.u32 %r1, 1
      - mov.u32 r1, 2
      - st.relaxed.gpu.u32 [x], %r1
expect:
  allowed: ['x=1']
"""
    (e,) = load_text(test, "t.yaml")
    assert isinstance(e, LitmusError), e
    assert "writes both %r1 and r1" in e.message and e.where.line == 12
    fine = test.replace("mov.u32 %r1, 1", "mov.u32 tid, %tid.x").replace("[x], %r1", "[x], tid")
    (t,) = load_text(fine, "t.yaml")
    assert check_test(t, resolve_model("ptx")).status == "fail", t   # x=0 is the only outcome


SHIFTS = """
name: Shifts
source: "PTX ISA 9.4, Integer Arithmetic Instructions: shl, shr"
memory: {x: 0}
threads:
  P0: {at: gpu0.cta0, code: ["st.relaxed.gpu.global.s32 [x], -200"]}
  P1:
    at: gpu0.cta1.warp1
    ptx: |
      .reg .b32 %r<9>;
      .reg .b64 %rd<2>;
      mov.u32 %r1, %tid.x;
      shr.u32 %r2, %r1, 5;
      ld.relaxed.gpu.global.u32 %r3, [x];
      shr.s32 %r4, %r3, 3;
      shr.u32 %r5, %r3, 30;
      shl.b32 %r6, %r3, %r2;
      shr.u32 %r7, %r3, 32;
      shr.s32 %r8, %r3, 40;
      shl.b64 %rd1, %r2, 63;
expect:
  allowed: ['{all}']
"""


@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_shifts_act_on_bit_patterns_of_their_type(engine):
    """shr.u32 of threadIdx.x (nvcc's `threadIdx.x / 32`), logical and arithmetic shifts of a
    loaded value, shifts of the width or more, shl.b64: on both engines."""
    read = ("P1:r2=1 /\\ P1:r3=4294967096 /\\ P1:r4=4294967271 /\\ P1:r5=3 /\\ P1:r6=4294966896 /\\ "
            "P1:r7=0 /\\ P1:r8=4294967295 /\\ P1:rd1=9223372036854775808")
    t = _one(SHIFTS.replace("{all}", read))
    res = check_test(t, PTX, engine=engine)
    assert res.status == "pass" and len(res.outcomes) == 2, res.outcomes      # x read as -200, or as 0
    t = _one(SHIFTS.replace("{all}", "P1:r3=0 /\\ P1:r4=0 /\\ P1:r8=0"))
    assert _status(t, engine) == "pass"


def test_a_shift_amount_that_depends_on_a_load_is_refused():
    t = _one(SHIFTS.replace("{all}", "P1:r2=1").replace("shl.b32 %r6, %r3, %r2", "shl.b32 %r6, %r2, %r3"))
    res = check_test(t, PTX)
    assert res.status == "error" and "t.yaml:17:" in res.message and "not a constant" in res.message, res.message


RET = """
name: Ret
source: "PTX ISA 9.4, Control Flow Instructions: ret, exit"
memory: {x: 0, y: 0, z: 0}
threads:
  P0:
    at: gpu0.cta0.warp1
    ptx: |
      .reg .pred P;
      .reg .b32 %r<2>;
      mov.u32 %r1, %tid.x;
      setp.eq.u32 P, %r1, 32;
      @!P ret;
      st.global.b32 [x], 1;
      exit;
      st.global.b32 [y], 1;
  P1:
    at: gpu0.cta0.warp2
    code: ["mov.u32 r1, %tid.x", "setp.eq.u32 p, r1, 32", "@p ret.uni", "st.global.b32 [z], 1", "ret"]
expect:
  allowed: ['x=1 /\\ y=0 /\\ z=1']
"""


@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_ret_and_exit_end_the_thread(engine):
    t = _one(RET)
    assert [i.text for i in t.threads[0].code][-3:] == ["st.global.b32 [x], 1", "exit", "st.global.b32 [y], 1"]
    assert t.threads[0].labels[-1] == ("$exit", len(t.threads[0].code))
    res = check_test(t, PTX, engine=engine)      # P0 runs to exit (y never written), P1 to the last ret
    assert res.status == "pass" and res.outcomes == ((("x", 1), ("y", 0), ("z", 1)),), res.outcomes


def test_a_guard_spelt_with_percent_on_ret_and_exit():
    """nvcc spells predicates %p1: `@%p1 ret` and `@!%p1 exit` end the thread as `@p1 ret` does
    (they were refused as an unknown instruction 'ret')."""
    t = _one(RET.replace(".reg .pred P;", ".reg .pred %p1;").replace("setp.eq.u32 P,", "setp.eq.u32 %p1,")
             .replace("@!P ret;", "@!%p1 ret;"))
    assert check_test(t, PTX).status == "pass"


NEG_OFFSET = """
name: T
memory: {{x: {{space: global, size: 8}}}}
threads:
  P0:
    at: gpu0.cta0
    ptx: |
      .reg .b32 %r<2>;
      .reg .b64 %rd<3>;
      mov.u64 %rd1, x;
      add.s64 %rd2, %rd1, 4;
      st.global.u32 [%rd2+-4], 7;
      st.global.u32 [{second}], 9;
      ld.global.u32 %r1, [x];
      ld.global.u32 %r0, [x+4];
expect:
  allowed: ['P0:r1=7 /\\ P0:r0=9']
  forbidden: ['P0:r1=0', 'P0:r0=0']
"""


@pytest.mark.parametrize("second", ["%rd2+-0", "%rd2"])
def test_nvcc_plus_minus_offset_resolves_like_a_minus(second):
    # nvcc writes [%rd1+-4]: refused before as a malformed address; it is [%rd1-4]
    assert _status(_one(NEG_OFFSET.format(second=second))) == "pass"
