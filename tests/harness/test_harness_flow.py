"""Control flow in generated programs (issue 16 item 5): labels, bra, @p/@!p and setp become C
labels, gotos and guards with one label per litmus thread; every backward branch is bounded by a
spin counter, and a loop that does not exit within SPIN_CAP spins is recorded as its own outcome,
`hang`, which `hw compare` relates to the model's hang verdict. Barriers that can never complete
(the GPU would hang, not a loop) are refused. No GPU: the fake device drives the run path; the
real toolchain compiles the programs where it is installed."""
from __future__ import annotations

import re

import pytest

from checker import LITMUS_DIR
from checker.cli import main
from checker.errors import HarnessError, LitmusError
from checker.front.litmus import load_paths, load_text
from checker.harness import histogram
from checker.harness.codegen import Program, generate, unsupported
from checker.harness.compare import compare_one
from checker.harness.space import outcome_space
from checker.harness.static_check import check_program, spin_problems
from checker.harness.toolchain import missing_reason

LIVENESS = LITMUS_DIR / "liveness"


def _suite():
    return {t.name: t for t in load_paths([str(LIVENESS)]) if not isinstance(t, LitmusError)}


def _one(yaml: str):
    [t] = load_text(yaml)
    assert not isinstance(t, LitmusError), t
    return t


def _case(src: str, tid: int) -> str:
    start = src.index(f"case {tid}: {{")
    return src[start:src.index("break;", start)]


POLL = _suite()["Poll+rel.gpu+acq.gpu"]


def test_a_spin_loop_becomes_a_bounded_goto_and_a_hang_is_its_own_outcome():
    src = generate(POLL).source
    p1 = _case(src, 1)
    assert "L1_SPIN: ;" in p1
    assert re.search(r"if \(R_p\) \{ if \(spin_give_up\(\+\+spins_, spin0_\)\) \{ hung_ = 1; goto END_1; \} goto L1_SPIN; \}", p1)
    assert p1.index("L1_SPIN: ;") < p1.index("goto L1_SPIN;") < p1.index("END_1: ;")
    assert "setp.ne.s32 P, %1, %2; selp.u32 %0, 1, 0, P;" in p1
    assert "if (hung_) atomicOr(&p.status[inst], 8u);" in p1
    # the device counts a hang apart from every outcome and prints it
    assert "else if (p.status[inst] & 8) { bucket = BUCKET_HANG; }" in src
    assert 'printf("hang %llu\\n", hist[BUCKET_HANG]);' in src
    # P0 has no loop: no spin counter
    assert "spins_" not in _case(src, 0)
    assert check_program(generate(POLL)) == []


def test_labels_are_unique_per_inlined_thread():
    t = _suite()["TicketLock+acquire"]          # both threads use the label SPIN
    src = generate(t).source
    assert src.count("L0_SPIN: ;") == 1 and src.count("L1_SPIN: ;") == 1
    assert "goto L0_SPIN;" in _case(src, 0) and "goto L1_SPIN;" in _case(src, 1)
    assert "L1_SPIN" not in _case(src, 0)


def test_guards_forward_branches_and_labels_at_the_end():
    t = _one("""
name: Flow+forward
source: "PTX ISA 9.4, bra; setp"
threads:
  P0:
    at: gpu0.cta0
    code:
      - ld.relaxed.gpu.global r0, [x]
      - setp.eq.s32 p, r0, 0
      - "@p bra DONE"
      - st.relaxed.gpu.global [y], 1
      - "@!p st.relaxed.gpu.global [y], 2"
      - DONE:
  P1:
    at: gpu0.cta1
    code:
      - st.relaxed.gpu.global [x], 1
expect: {allowed: ['y=0', 'y=2']}
""")
    src = generate(t).source
    p0 = _case(src, 0)
    assert "if (R_p) { goto L0_DONE; }" in p0 and "spins_" not in p0        # forward: no bound needed
    assert re.search(r'if \(!R_p\) \{ asm volatile\("st\.relaxed\.gpu\.global\.b32 .*// @ptxmc P0:4', p0)
    assert "L0_DONE: ;   // DONE: (end)" in p0
    assert generate(t).space.domains[0] == (0, 1, 2)        # y: skipped, 1 or 2
    assert check_program(generate(t)) == []


@pytest.mark.parametrize("name, reason", [
    ("BarDivergent+racy-guard", "a barrier never completes (barrier 1 generation 1 never completes: it needs 2 "
                                "threads' arrivals, 1 arrive (P1)"),
    ("BarCount+count3", "barrier 1 generation 1 never completes: it needs 3 threads' arrivals, 2 arrive (P0+P1"),
    ("BarProducerConsumer+consumer-counts-3", "the GPU would wait forever"),
    ("ClusterBar+missing-arrive", "barrier.cluster.wait without a preceding arrive of its own"),
])
def test_what_would_hang_the_gpu_is_refused(name, reason):
    assert reason in unsupported(_suite()[name])


def test_fixed_barrier_versions_stay_expressible():
    suite = _suite()
    for name in ("BarCount+count2", "BarProducerConsumer+counts-match", "ClusterBar+fixed"):
        assert unsupported(suite[name]) is None, name


CROSSED = """
name: Bar+crossed
source: "PTX ISA 9.4, bar/barrier"
threads:
  P0:
    at: gpu0.cta0
    code: ["bar.sync 1, 2", "bar.sync 2, 2"]
  P1:
    at: gpu0.cta0.warp1
    code: ["bar.sync 2, 2", "bar.sync 1, 2"]
expect: {hang: allowed}
"""


def test_barriers_waiting_for_each_other_are_refused():
    why = unsupported(_one(CROSSED))
    assert "barrier 1 generation 1 never completes" in why and "barrier 2 generation 1 never completes" in why
    assert "; P0 (line " in why and "; P1 (line " in why
    fine = _one(CROSSED.replace('["bar.sync 2, 2", "bar.sync 1, 2"]', '["bar.sync 1, 2", "bar.sync 2, 2"]'))
    assert unsupported(fine) is None


def test_barrier_generations_decided_at_run_time_run_when_every_order_completes():
    """Four threads pairing up on one barrier complete in every grouping: expressible (the GPU
    picks the grouping; the model's verdicts are the union). A producer that can arrive twice
    before the consumer leaves a generation incomplete in some order: refused."""
    suite = {t.name: t for t in load_paths(["litmus/liveness/quorums.yaml"])}
    assert unsupported(suite["BarQuorum+4threads+one-barrier"]) is None
    assert "the GPU would wait forever" in unsupported(suite["BarArrive+producer-runs-ahead+one-barrier"])
    assert unsupported(suite["BarArrive+producer-runs-ahead+empty-barrier"]) is None


def _loop(body: str, extra: str = "") -> str:
    return f"""
name: Flow+loop
source: "PTX ISA 9.4, bra"
threads:
  P0:
    at: gpu0.cta0
    code:
      - L:
{body}
      - ld.relaxed.gpu.global r0, [x]
      - setp.eq.s32 p, r0, 0
      - "@p bra L"
{extra}
  P1:
    at: gpu0.cta1
    code:
      - st.relaxed.gpu.global [x], 1
"""


@pytest.mark.parametrize("body, extra, reason", [
    ("      - bar.sync 1", "", "bar in a loop"),
    ("", "      - bar.sync 1", "bar after a spin loop is not generated"),
    ("      - ld.relaxed.gpu.global r3, [x] == 1", "", "an await (== v) in a loop"),
    ("      - cp.async.commit_group", "", "cp in a loop"),
])
def test_control_flow_the_harness_cannot_account_for_is_refused(body, extra, reason):
    assert reason in unsupported(_one(_loop(body, extra)))


def test_a_spin_loop_with_back_off_is_generated():
    t = _one(_loop("      - nanosleep.u32 32", ""))
    assert unsupported(t) is None
    assert '"nanosleep.u32 %0;"' in _case(generate(t).source, 0)


def test_loop_carried_values_are_refused_when_they_do_not_settle():
    # r1 counts the iterations: no bound, so no finite outcome space
    t = _one(_loop("      - add.s32 r1, r1, 1", "") + "expect: {allowed: ['P0:r1=1']}\n")
    with pytest.raises(HarnessError, match="do not settle|more than 64 possible values"):
        outcome_space(t)
    assert "outcome space" in unsupported(t)


def test_loop_values_reach_their_fixpoint():
    # r1 takes the value of r2 from the previous iteration: {0, 1} after two rounds
    t = _one(_loop("      - mov.b32 r1, r2\n      - ld.relaxed.gpu.global r2, [x]", "")
             + "expect: {allowed: ['P0:r1=1']}\n")
    assert outcome_space(t).domains == ((0, 1),)


def test_every_model_allowed_outcome_of_the_liveness_suite_has_a_bucket():
    from checker.resources import resolve_model
    from checker.verdict.check import check_test
    model = resolve_model(None)
    checked = 0
    for t in _suite().values():
        if unsupported(t) or not t.branches:
            continue
        space = generate(t).space
        res = check_test(t, model)
        for o in res.outcomes:
            vals = dict(o)
            assert space.index(tuple(vals.get(v, 0) for v in space.names)) is not None, (t.name, o)
        checked += 1
    assert checked >= 30


def test_static_check_catches_an_unbounded_spin_and_a_barrier_after_a_loop():
    prog = generate(POLL)
    bad = prog.source.replace("if (spin_give_up(++spins_, spin0_)) { hung_ = 1; goto END_1; } goto L1_SPIN;", "goto L1_SPIN;")
    probs = spin_problems(Program(prog.test, bad, prog.target, prog.space, prog.layout, prog.config, prog.notes))
    assert any("the backward goto L1_SPIN is not bounded by SPIN_CAP" in p for p in probs)
    line = '            asm volatile("bar.sync 1, 64;" :  :  : "memory");  // @ptxmc P1:9 bar.sync 1\n'
    at = prog.source.index("            END_1: ;")
    bad = prog.source[:at] + line + prog.source[at:]
    probs = spin_problems(Program(prog.test, bad, prog.target, prog.space, prog.layout, prog.config, prog.notes))
    assert probs == ["P1:9: a barrier or mbarrier arrival after a spin loop that may give up: the threads or the "
                     "epilogue waiting for it could wait forever"]


# -- results: the hang count ------------------------------------------------------------------

def _block(hang: int, buckets=((1, 10),), instances=None) -> str:
    total = sum(c for _, c in buckets) + hang
    lines = ["ptxmc-hw 1", "test T", f"instances {instances if instances is not None else total}"]
    lines += [f"bucket {k} {c}" for k, c in buckets]
    lines += ["other 0", "timeout 0", "epilogue 0", "unsynced 0", f"hang {hang}", "end"]
    return "\n".join(lines)


def test_hang_count_is_read_kept_and_merged():
    space = generate(POLL).space
    h = histogram.parse_output(_block(5), space)
    assert h.hang == 5 and h.total == 15 and h.valid == 10
    with pytest.raises(HarnessError, match=r"\+ hang 5\)"):
        histogram.parse_output(_block(5, instances=10), space)
    again = histogram.Histogram.from_json(h.to_json())
    assert again.hang == 5
    from checker.harness.compare import merge
    assert merge(h, again).hang == 10
    # the litmus7 log carries it both ways
    from checker.harness import litmus7
    h = histogram.make(POLL.name, h.vars, h.counts, hang=5)
    text = litmus7.log([h], {POLL.name: POLL})
    assert "Other 0, Timeout 0, Epilogue 0, Hang 5" in text
    assert litmus7.parse_log(text, {POLL.name: POLL})[0].hang == 5
    # an older block without a hang line reads 0
    assert histogram.parse_output(_block(0).replace("hang 0\n", ""), space).hang == 0


def _hist(test, hang: int, counts=()):
    from checker.harness.space import fingerprint, observed_vars
    return histogram.make(test.name, [str(v) for v in observed_vars(test)], counts, hang=hang,
                          fingerprint=fingerprint(test))


def test_compare_relates_hangs_to_the_model():
    never = _suite()["Spin+never-written"]           # expect: {hang: allowed}; every instance hangs
    c = compare_one(_hist(never, 100), None, never, hang=True)
    assert c.verdict == "ok" and c.n == 0 and c.hang == 100
    assert [(e.text, e.observed, e.status) for e in c.expectations] == [("hang", 100, "ok")]
    assert "hang=100 (model: may hang)" in c.summary()
    # the same histogram without a hang verdict or expectation says nothing: no data
    plain = _suite()["Poll+rel.gpu+rlx.gpu"]
    assert compare_one(_hist(plain, 100), None, None).verdict == "no-data"
    # a hang the model forbids: a few are tolerated (a late writer), many fail the run
    ok = (("P1:r1", 1),)
    few = compare_one(_hist(POLL, 5, [(ok, 95)]), {ok: "allowed", (("P1:r1", 0),): "forbidden"}, POLL, hang=False)
    assert few.verdict == "ok" and [e.status for e in few.expectations if e.text == "hang"] == ["hangs"]
    many = compare_one(_hist(POLL, 50, [(ok, 50)]), {ok: "allowed"}, POLL, hang=False)
    assert many.verdict == "hangs"
    # a hang the model allows but never seen: a coverage gap, not a failure
    gap = compare_one(_hist(never, 0, [((), 10)]), None, never, hang=True)
    assert gap.verdict == "gap"


def test_simulated_run_reports_hangs(tmp_path, capsys):
    names = ["Poll+rel.gpu+acq.gpu", "Spin+never-written", "Spin+fixed"]
    args = ["hw", "run", str(LIVENESS), "-o", str(tmp_path / "o"), "--fake-device", "hang:Poll+rel.gpu+acq.gpu"]
    for n in names:
        args += ["--name", n]
    assert main(args) == 1
    text = (tmp_path / "o" / "compare.txt").read_text()
    assert "Poll+rel.gpu+acq.gpu: HANGS" in text and "hang=1024 (model: never hangs)" in text
    assert "Spin+never-written: OK, N=0" in text and "hang=4096 (model: may hang)" in text
    assert "allowed hang: observed 4096" in text
    assert "Spin+fixed: OK" in text


needs_sass = pytest.mark.skipif(missing_reason("nvcc", "nvdisasm") is not None,
                                reason=str(missing_reason("nvcc", "nvdisasm")))


@needs_sass
def test_loops_and_guards_compile_and_keep_their_accesses(tmp_path):
    from checker.harness.build import build
    from checker.harness.sass import check_fences, disassemble
    suite = _suite()
    for name in ("TicketLock+acquire", "GuardedRelease+y1", "MbParity+parity0"):
        t = suite[name]
        prog = generate(t)
        res = build(prog, tmp_path / name, "cubin")
        checks = check_fences(t, prog, disassemble(res.output))
        assert checks and all(c.ok for c in checks), "\n".join(map(str, checks))
    res = build(generate(suite["Spin+both+fixed"]), tmp_path / "exe", "exe")     # host code too
    assert res.output.stat().st_size > 0


# -- not and selp (issue 34) ----------------------------------------------------------------------

NOT_SELP = ("LoopShapeMbarrier+not-pred+exits", "LoopShapeMbarrier+not-pred+hangs",
            "LoopShapeMbarrier+cuda-ptx-selp+exits", "LoopShapeMbarrier+cuda-ptx-selp+hangs")


def test_not_and_selp_in_a_spin_loop_are_generated_on_the_0_1_registers():
    """not.pred flips the 0/1 register that holds the predicate (xor 1); selp turns it back into a
    predicate for the real selp; both may sit in a loop (register arithmetic). They were refused
    ("no harness emitter for 'not' yet", and as instructions the harness accounts for)."""
    suite = _suite()
    for name in NOT_SELP:
        assert not unsupported(suite[name]), name
        assert check_program(generate(suite[name])) == [], name
    src = _case(generate(suite["LoopShapeMbarrier+not-pred+exits"]).source, 1)
    assert '"xor.b32 %0, %1, 1;" : "=r"(R_q) : "r"(R_p)' in src
    src = _case(generate(suite["LoopShapeMbarrier+cuda-ptx-selp+exits"]).source, 1)
    assert '"{ .reg .pred P; setp.ne.u32 P, %3, 0; selp.b32 %0, %1, %2, P; }" : "=r"(R_w) : "r"(1u), "r"(0u), ' \
           '"r"(R_p)' in src


def test_not_and_selp_values_reach_the_outcome_space():
    """The device buckets what not/selp compute: not.b32 complements, not.pred flips, selp picks."""
    t = _one("""
name: ns
source: t
threads:
  P0:
    at: gpu0.cta0
    code:
      - ld.relaxed.gpu.global.u32 r0, [x]
      - setp.eq.u32 p, r0, 1
      - not.pred q, p
      - selp.u32 r1, 7, 9, q
      - not.b32 r2, r0
expect: {allowed: ['P0:r1=9 /\\ P0:r2=4294967294']}
memory: {x: 1}
""")
    space = outcome_space(t)
    got = dict(zip(space.names, space.domains))
    assert set(got["P0:r1"]) == {7, 9}
    assert 0xFFFFFFFE in got["P0:r2"] and all(v >= 0xFFFFFFFE for v in got["P0:r2"])


@pytest.mark.skipif(missing_reason("nvcc") is not None, reason=str(missing_reason("nvcc")))
def test_not_and_selp_programs_compile(tmp_path):
    from checker.harness.build import build_cubins
    suite = _suite()
    progs = [generate(suite[n]) for n in NOT_SELP]
    progs.append(generate(_one("""
name: wide
source: t
threads:
  P0:
    at: gpu0.cta0
    code:
      - ld.relaxed.gpu.global.u64 r0, [x]
      - setp.eq.u64 p, r0, 1
      - selp.b64 r1, r0, 5, p
      - not.b64 r2, r1
      - not.b16 r3, 1
      - selp.u32 r4, 1, 2, p
expect: {allowed: ['P0:r4=1']}
""")))
    assert not [b for b in build_cubins(progs, tmp_path, jobs=1) if isinstance(b, HarnessError)]


MUL_HALVES = """
name: mulhalves
source: t
memory: {x: 3}
threads:
  P0:
    at: gpu0.cta0
    ptx: |
      .reg .b32 %r<4>;
      .reg .b64 %rd<4>;
      ld.relaxed.gpu.global.u32 %r1, [x];
      mul.wide.u32 %rd1, %r1, 4;
      mul.wide.s32 %rd2, %r1, -5;
      mul.hi.u32 %r2, %r1, 0x80000000;
expect: {allowed: ['P0:rd1=12 /\\ P0:r2=1']}
"""


def test_mul_wide_and_hi_are_generated_with_the_models_values():
    """mul.wide writes a 64-bit register from 32-bit operands; the outcome space buckets the
    model's values (checker.isa.core.mul_half). They were refused when the test was loaded."""
    t = _one(MUL_HALVES)
    assert not unsupported(t)
    src = generate(t).source
    assert '"mul.wide.u32 %0, %1, %2;" : "=l"(R_rd1) : "r"(R_r1), "r"(4u)' in src
    assert '"mul.hi.u32 %0, %1, %2;" : "=r"(R_r2) : "r"(R_r1), "r"(2147483648u)' in src
    space = outcome_space(t)
    got = dict(zip(space.names, space.domains))
    assert got == {"P0:rd1": (12,), "P0:r2": (1,)}
    assert '"mul.wide.s32 %0, %1, %2;" : "=l"(R_rd2) : "r"(R_r1), "r"(4294967291u)' in src


@pytest.mark.skipif(missing_reason("nvcc") is not None, reason=str(missing_reason("nvcc")))
def test_mul_wide_and_hi_programs_compile(tmp_path):
    from checker.harness.build import build_cubins
    assert not [b for b in build_cubins([generate(_one(MUL_HALVES))], tmp_path, jobs=1) if isinstance(b, HarnessError)]


REGISTER_WIDTHS = """
name: widths
source: "PTX ISA 9.4, setp, add, and, mul: operands of a 16-bit type are 16-bit registers"
memory: {x: 65526, w: 5}
threads:
  P0:
    at: gpu0.cta0
    code:
      - ld.relaxed.gpu.global.u16 r0, [x]
      - setp.eq.u16 p, r0, 65526
      - setp.lt.s16 q, r0, -9
      - setp.ne.b16 s, 3, r0
      - add.u16 r1, r0, 11
      - and.b16 r2, r0, 255
      - mul.lo.u16 r3, r0, 3
      - sub.s16 r4, r0, -1
      - mov.u16 r5, r0
      - ld.relaxed.gpu.global.s16 r11, [x]
      - selp.b16 r12, r11, 7, p
      - selp.b16 r13, r11, 7, 1
      - ld.relaxed.gpu.global.u64 r6, [w]
      - add.u64 r7, r6, 1
      - and.b64 r8, r6, 4
      - mov.u64 r9, r6
      - selp.u32 r10, 1, 0, p
expect: {allowed: ['P0:r10=1 /\\ P0:r1=1 /\\ P0:r7=6 /\\ P0:r12=65526 /\\ P0:r13=65526']}
"""


def test_narrow_and_wide_typed_register_operations_are_generated_on_registers_of_their_size():
    """The harness keeps values in 32-bit registers ("r") and passed them to setp.eq.u16, add.u16
    and add.u64 as they were; ptxas refuses those ('Arguments mismatch for instruction'), so such
    tests never built. A 16-bit operation now takes each source's low 16 bits in a .b16 register
    and zero-extends its result; a 64-bit one takes 64-bit registers ("l")."""
    t = _one(REGISTER_WIDTHS)
    assert not unsupported(t)
    src = generate(t).source
    assert ('"{ .reg .b16 N0, N1, N2; .reg .pred P; cvt.u16.u32 N1, %1; cvt.u16.u32 N2, %2; '
            'setp.eq.u16 P, N1, N2; selp.u32 %0, 1, 0, P; }" : "=r"(R_p) : "r"(R_r0), "r"(65526u)') in src
    assert ('"{ .reg .b16 N0, N1, N2; cvt.u16.u32 N1, %1; cvt.u16.u32 N2, %2; add.u16 N0, N1, N2; '
            'cvt.u32.u16 %0, N0; }" : "=r"(R_r1) : "r"(R_r0), "r"(11u)') in src
    assert '"add.u64 %0, %1, 1;" : "=l"(R_r7) : "l"(R_r6)' in src
    # selp.b16 of a .s16 load's register (0xfffffff6 in it): its 16 bits, 65526, as ptxmc gives
    assert ('"{ .reg .b16 N0, N1, N2; .reg .pred P; cvt.u16.u32 N1, %1; cvt.u16.u32 N2, %2; setp.ne.u32 P, %3, 0; '
            'selp.b16 N0, N1, N2, P; cvt.u32.u16 %0, N0; }" : "=r"(R_r12) : "r"(R_r11), "r"(7u), "r"(R_p)') in src
    assert '"and.b32 %0, %1, 65535;" : "=r"(R_r13) : "r"(R_r11)' in src


@pytest.mark.skipif(missing_reason("nvcc") is not None, reason=str(missing_reason("nvcc")))
def test_narrow_and_wide_typed_register_operations_compile_with_ptxas(tmp_path):
    from checker.harness.build import build_cubins
    assert not [b for b in build_cubins([generate(_one(REGISTER_WIDTHS))], tmp_path, jobs=1)
                if isinstance(b, HarnessError)]
