"""No silent wrong answers (issue 14): each PTX feature a kernel engineer writes is either
modelled exactly or refused with a file:line error. One section per item of the issue; every
test here failed (or answered wrongly) before the feature it covers."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from checker.errors import LitmusError
from checker.front.litmus import load_text
from checker.resources import resolve_model
from checker.verdict.check import check_test

MODEL = resolve_model(None)


def _test(text: str):
    [t] = load_text(textwrap.dedent(text), "t.yaml")
    if isinstance(t, LitmusError):
        raise t
    return t


def _judge(text: str, engine: str = "z3"):
    return check_test(_test(text), MODEL, engine=engine)


def _both(text: str):
    """The result under Z3 and under brute force, which must agree."""
    z, b = _judge(text, "z3"), _judge(text, "brute")
    assert (z.status, z.undefined and [u.flag for u in z.undefined], z.outcomes) == \
        (b.status, b.undefined and [u.flag for u in b.undefined], b.outcomes), (z.message, b.message)
    assert z.status in ("pass", "run"), z.message
    return z


def _error(text: str) -> str:
    try:
        t = _test(text)
        r = check_test(t, MODEL)
    except LitmusError as e:
        return str(e)
    assert r.status == "error", (r.status, r.message)
    return r.message


ONE_THREAD = """
name: t
source: test
{memory}
threads:
  P0:
    at: gpu0.cta0
    code:
{code}
{expect}
"""


def _one(code: list[str], memory: str = "", expect: str = "") -> str:
    return ONE_THREAD.format(memory=memory, code="\n".join(f"      - {json.dumps(c)}" for c in code), expect=expect)


# -- 1. predicates ------------------------------------------------------------------------------

@pytest.mark.parametrize("guard,x", [("@p", 1), ("@!p", 0)])
def test_a_guarded_instruction_runs_exactly_when_its_predicate_holds(guard, x):
    # (guarded instructions were refused until control flow was modelled: docs/model.md#a18)
    r = _both(_one(["mov.pred p, 1", f"{guard} st.global [x], 1", "st.global [y], 1"]))
    assert [dict(o)["x"] if "x" in dict(o) else 0 for o in r.outcomes] == [x]


def test_a_guard_on_a_predicate_never_set_is_refused_with_its_line():
    msg = _error(_one(["@r0 st.global [x], 1"]))
    assert msg.startswith("t.yaml:9:") and "guard" in msg and "never set" in msg


# -- 2. addresses: offsets, sizes, register-held addresses, vectors, tensor boxes ------------------

MP_OFFSETS = """
name: t
source: test
memory:
  s: {space: shared, owner: gpu0.cta0, size: 32}
threads:
  P0:
    at: gpu0.cta0
    code:
      - st.shared.b32 [s+16], 1
      - st.shared.b32 [s], 2
expect:
  allowed: ['s=0x0000000100000000000000000000000000000002']
"""


def test_stores_at_different_offsets_do_not_overwrite_each_other():
    r = _both(MP_OFFSETS.replace("0x0000000100000000000000000000000000000002", str((1 << 128) | 2)))
    assert [dict(o)["s"] for o in r.outcomes] == [(1 << 128) | 2]


def test_a_b64_store_overlaps_two_b32_loads_and_a_race_between_them_is_undefined():
    r = _both("""
        name: t
        source: test
        threads:
          P0:
            at: gpu0.cta0
            code:
              - st.global.b64 [x], 0x200000001
          P1:
            at: gpu0.cta1
            code:
              - ld.global.b32 r0, [x]
              - ld.global.b32 r1, [x+4]
        expect:
          undefined: true
        """)
    assert [u.flag for u in r.undefined] == ["MixedSizeRace"]


def test_ordered_mixed_size_accesses_see_the_right_bytes():
    r = _both(_one(["st.global.b64 [x], 0x200000001", "ld.global.b32 r0, [x]", "ld.global.b32 r1, [x+4]",
                    "ld.global.u16 r2, [x+4]", "st.global.b8 [x+1], 0xff", "ld.global.b64 r3, [x]"],
                   expect="expect:\n  allowed: ['P0:r0=1 /\\ P0:r1=2 /\\ P0:r2=2 /\\ P0:r3=0x20000ff01']"))
    assert len(r.outcomes) == 1


def test_a_vector_store_is_seen_element_by_element():
    r = _both("""
        name: t
        source: test
        memory:
          x: {size: 8}
        threads:
          P0:
            at: gpu0.cta0
            code:
              - st.relaxed.gpu.global.v2.b32 [x], {1, 2}
          P1:
            at: gpu0.cta1
            code:
              - ld.relaxed.gpu.global.b32 r0, [x+4]
              - ld.relaxed.gpu.global.b32 r1, [x]
        expect:
          allowed: ['P1:r0=2 /\\ P1:r1=0']
        """)
    assert {(dict(o)["P1:r0"], dict(o)["P1:r1"]) for o in r.outcomes} == {(0, 0), (0, 1), (2, 0), (2, 1)}


@pytest.mark.parametrize("make_address", [
    ["mov.u64 rd, s", "add.u64 rd, rd, 16"],
    ["cvta.shared.u64 rd, s", "cvta.to.shared.u64 rd, rd", "add.u64 rd, rd, 8", "add.u64 rd, rd, 8"],
])
def test_a_register_held_address_reaches_its_location_and_offset(make_address):
    r = _both(_one([*make_address, "st.shared.b32 [rd], 7", "ld.shared.b32 r0, [s+16]", "ld.shared.b32 r1, [s]"],
                   memory="memory:\n  s: {space: shared, owner: gpu0.cta0}"))
    assert [dict(o) for o in r.outcomes] == [{"P0:r0": 7, "P0:r1": 0, "s": 7 << 128}]


def test_mapa_reaches_the_peer_ctas_location():
    r = _both("""
        name: t
        source: test
        memory:
          s0: {space: shared, owner: gpu0.cluster0.cta0}
          s1: {space: shared, owner: gpu0.cluster0.cta1, offset_of: s0}
        threads:
          P0:
            at: gpu0.cluster0.cta0
            code:
              - mapa.shared::cluster.u32 rr, s0, 1
              - st.shared::cluster.b32 [rr], 5
        locations: [s0, s1]
        """)
    assert [dict(o) for o in r.outcomes] == [{"s0": 0, "s1": 5}]


def test_an_address_that_cannot_be_traced_is_refused():
    msg = _error(_one(["ld.global.u64 rd, [p]", "st.global.b32 [rd], 1"]))
    assert "holds no address ptxmc can follow" in msg


def test_tensor_coordinates_select_boxes():
    """Two TMA loads of different boxes of one buffer land different bytes; before, the
    coordinates were dropped and both copied the same cell."""
    _both("""
        name: t
        source: test
        memory:
          g: {size: 128, init: 0x2000000000000000000000000000000000000000000000000000000000000001}
          tmap: {tensormap: {0: g}, box: 16, strides: [16]}
          s: {space: shared, owner: gpu0.cta0, size: 256}
          mb: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
        threads:
          P0:
            at: gpu0.cta0
            code:
              - mbarrier.arrive.expect_tx.shared::cta.b64 _, [mb], 32
              - cp.async.bulk.tensor.1d.shared::cta.global.tile.mbarrier::complete_tx::bytes [s], [tmap, {0}], [mb]
              - cp.async.bulk.tensor.1d.shared::cta.global.tile.mbarrier::complete_tx::bytes [s+128], [tmap, {1}], [mb]
              - mbarrier.try_wait.parity.shared::cta.b64 p, [mb], 0 == 1
              - ld.shared.b8 r0, [s]
              - ld.shared.b8 r1, [s+143]
        expect:
          forbidden: ['P0:r0=0', 'P0:r1=0']
        """)


def test_nonzero_coordinates_without_a_box_are_refused():
    msg = _error("""
        name: t
        source: test
        memory:
          g: 0
          tmap: {tensormap: {0: g}}
          s: {space: shared, owner: gpu0.cta0}
          mb: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
        threads:
          P0:
            at: gpu0.cta0
            code:
              - cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes [s], [tmap, {64, 0}], [mb]
        """)
    assert "declares none" in msg


# -- 3. byte counts --------------------------------------------------------------------------

REAL_COUNT = """
name: t
source: test
memory:
  g: {init: 1}
  s: {space: shared, owner: gpu0.cta0}
  mb: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
threads:
  P0:
    at: gpu0.cta0
    code:
      - mbarrier.arrive.expect_tx.shared::cta.b64 _, [mb], 16384
      - cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [s], [g], 16384, [mb]
      - mbarrier.try_wait.parity.shared::cta.b64 p, [mb], 0 == 1
      - ld.shared.b32 r0, [s]
expect:
  forbidden: ['P0:r0=0']
  allowed: ['P0:r0=1']
"""


def test_a_16k_copy_completes_an_expect_tx_of_16k():
    _both(REAL_COUNT)


def test_a_byte_count_that_does_not_match_never_completes():
    r = _judge(REAL_COUNT.replace("_, [mb], 16384", "_, [mb], 16400"))
    # the wait never returns: a hang, never "Forbidden" for every condition (docs/model.md#a18)
    assert r.status == "fail" and "every execution blocks" in r.message


@pytest.mark.parametrize("code", [
    # the tx-count leaves -(2^20-1): it used to borrow from the pending count and "complete"
    ["mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [mb], 1048575",
     "mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [mb], 1048575",
     "mbarrier.try_wait.parity.shared::cta.b64 p, [mb], 0 == 1"],
    ["mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [mb], 1048575",
     "mbarrier.arrive.expect_tx.shared::cta.b64 _, [mb], 16"],
    ["mbarrier.arrive.shared::cta.b64 _, [mb], 2"],                  # more arrivals than pending
    ["ld.global.u32 r5, [cnt]", "mbarrier.arrive.shared::cta.b64 _, [mb], r5"],   # a register count
])
def test_mbarrier_arithmetic_out_of_range_is_undefined(code):
    r = _both(_one(code, memory="memory:\n  cnt: 2000000\n  mb: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}",
                   expect="expect:\n  undefined: true"))
    assert [u.flag for u in r.undefined] == ["MbarrierRange"]


UB_AFTER_ASYNC_ARRIVE = """
name: t
source: test
arch: sm_100a
memory:
  mbA: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
  mbB: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
  mbC: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
threads:
  P0:
    at: gpu0.cta0
    code:
      - mbarrier.try_wait.parity.shared::cta.b64 p, [mbA], 0 == 1
      - COMMIT
  P1:
    at: gpu0.cta0.warp1
    code:
      - mbarrier.try_wait.parity.shared::cta.b64 q, [mbB], 0 == 1
      - mbarrier.arrive.shared::cta.b64 _, [mbC], 2
expect:
  undefined: false
"""


@pytest.mark.parametrize("commit", ["tcgen05.commit.cta_group::1.mbarrier::arrive::one.b64 [mbB]",
                                    "mbarrier.arrive.shared::cta.b64 _, [mbB]"])
@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_an_out_of_range_arrive_does_not_free_a_wait_it_needs(commit, engine):
    """P1's out-of-range arrive happens only after P1's wait on mbB, whose arrive comes after
    P0's wait on mbA, which nothing completes: every execution blocks, and there is no undefined
    behaviour. The UB's causal past (EventStructure._ub_past) used to follow program order and
    reads-from only, so through tcgen05.commit's asynchronous arrive-on (not in program order,
    after its issue: aso) P0's wait was outside it, the UB "freed" that wait, and MbarrierRange
    was reported (the Triton attention skeleton's MbarrierRange was this: docs/extract.md)."""
    r = _judge(UB_AFTER_ASYNC_ARRIVE.replace("COMMIT", commit), engine)
    assert not r.undefined and "every execution blocks" in r.message, r.message


# -- 4. values have the width of their access --------------------------------------------------

@pytest.mark.parametrize("value", ["0xFFFFFFFF", "-1", "4294967295"])
def test_the_same_bits_spelled_three_ways_give_one_outcome(value):
    r = _both(_one([f"st.shared.b32 [s], {value}", "ld.shared.s32 r0, [s]", "ld.shared.u32 r1, [s]"],
                   memory="memory:\n  s: {space: shared, owner: gpu0.cta0}",
                   expect="expect:\n  allowed: ['P0:r0=-1 /\\ P0:r1=4294967295 /\\ s=0xffffffff']"))
    assert [dict(o) for o in r.outcomes] == [{"P0:r0": 0xFFFFFFFF, "P0:r1": 0xFFFFFFFF, "s": 0xFFFFFFFF}]


def test_typed_arithmetic_wraps_and_narrow_loads_extend_by_type():
    _both(_one(["mov.u32 r0, 0xffffffff", "add.u32 r0, r0, 1", "st.global.b8 [x], 0x80",
                "ld.global.s8 r1, [x]", "ld.global.u8 r2, [x]", "add.u16 r3, 65535, 2"],
               expect="expect:\n  allowed: ['P0:r0=0 /\\ P0:r1=-128 /\\ P0:r2=128 /\\ P0:r3=1']"))


@pytest.mark.parametrize("load", [False, True])
def test_a_negative_immediate_of_a_64_bit_add_wraps_to_the_exact_value(load):
    # add.u64 %rd2, %rd1, -1 with %rd1 = 5 was UNKNOWN ("leaves the 64-bit range"): the
    # immediate, 2**64 - 1 as an unsigned pattern, made the exact sum 2**64 + 4 before the wrap
    first = ["ld.global.u64 rd1, [y]"] if load else ["mov.u64 rd1, 5"]
    r = _both(_one(first + ["add.u64 rd2, rd1, -1", "sub.u64 rd3, rd1, -1", "add.s64 rd4, rd1, -6",
                            "add.u64 rd5, rd1, 0xFFFFFFFFFFFFFFFF", "add.u32 r6, 5, -1"],
                   memory="memory:\n  y: {space: global, size: 8, init: 5}",
                   expect="expect:\n  allowed: ['P0:rd2=4 /\\ P0:rd3=6 /\\ P0:rd4=-1 /\\ P0:rd5=4 /\\ P0:r6=4']"))
    assert [dict(o)["P0:rd2"] for o in r.outcomes] == [4]
    assert [dict(o)["P0:rd4"] for o in r.outcomes] == [2**64 - 1]


def test_floating_point_immediates_are_bit_patterns():
    _both(_one(["mov.f32 f0, 1.5", "st.global.f32 [x], f0", "ld.global.b32 r0, [x]", "mov.f64 d0, 0d3FF8000000000000"],
               expect="expect:\n  allowed: ['P0:f0=1.5 /\\ P0:r0=0x3fc00000 /\\ P0:d0=1.5']"))


@pytest.mark.parametrize("code, msg", [
    (["st.global.u8 [x], 300"], "the value 300 does not fit in 8 bits"),
    (["add.f32 f0, f0, 1.0"], "floating-point arithmetic is not modelled"),
    (["mov.u32 r0, 1.5"], "needs a .f32 or .f64 instruction"),
])
def test_values_that_do_not_fit_or_arithmetic_not_modelled_are_refused(code, msg):
    assert msg in _error(_one(code))


# -- 5. condition typos ----------------------------------------------------------------------

MP = """
name: t
source: test
threads:
  P0:
    at: gpu0.cta0
    code:
      - st.weak.global [x], 1
      - st.release.gpu.global [flag], 1
  P1:
    at: gpu0.cta1
    code:
      - ld.acquire.gpu.global r0, [flag]
      - ld.weak.global r1, [x]
expect:
  forbidden: ['{cond}']
"""


@pytest.mark.parametrize("cond, hint", [
    ("P1:R0=1 /\\ P1:r1=0", "did you mean P1:r0"),
    ("P1:r9=1", "P1:r9"),
    ("r0=1", "did you mean P1:r0"),
])
def test_a_typo_in_a_condition_is_an_error_not_an_answer(cond, hint):
    msg = _error(MP.replace("{cond}", cond))
    assert hint in msg and msg.startswith("t.yaml:")


# -- 6. determinism ---------------------------------------------------------------------------

def _run_json(*args: str) -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "checker", "run", "--no-timing", "--format", "json", *args],
                         capture_output=True, text=True, timeout=900)
    assert out.returncode in (0, 1), out.stderr
    return sorted(json.loads(out.stdout)["results"], key=lambda r: (r["path"], r["name"]))


def test_results_do_not_depend_on_order_or_jobs(tmp_path):
    from checker.resources import LITMUS_DIR

    files = sorted(str(p) for p in (LITMUS_DIR / "core").glob("*.yaml"))[:6]
    one = _run_json("--jobs", "1", *files)
    assert one == _run_json("--jobs", "2", *reversed(files))


# -- 7. output that says what it means ---------------------------------------------------------

def _cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "checker", *args], capture_output=True, text=True,
                          timeout=300, input=stdin)


def test_check_expect_sets_the_exit_code(tmp_path):
    f = tmp_path / "mp.yaml"
    f.write_text(MP.replace("{cond}", "P1:r0=1 /\\ P1:r1=0"))
    assert _cli("check", str(f), "P1:r0=1 /\\ P1:r1=0", "--expect", "forbidden").returncode == 0
    assert _cli("check", str(f), "P1:r0=1 /\\ P1:r1=0", "--expect", "allowed").returncode == 1
    bad = _cli("check", str(f), "P1:R0=1", "--expect", "allowed")
    assert bad.returncode == 4 and "did you mean" in bad.stderr


def test_the_formula_names_forbidden_values(tmp_path):
    f = tmp_path / "mp.yaml"
    f.write_text(MP.replace("{cond}", "P1:r0=1 /\\ P1:r1=0"))
    out = _cli("outcomes", str(f)).stdout
    formula = next(line for line in out.splitlines() if line.startswith("Formula"))
    assert formula != "Formula true" and "P1:r1" in formula


def test_locations_and_filter_choose_what_is_shown():
    r = _judge(MP.replace("expect:\n  forbidden: ['{cond}']\n", "locations: [P1:r1]\nfilter: 'P1:r0=1'\n"))
    assert [dict(o) for o in r.outcomes] == [{"P1:r1": 1}]


# -- 8. barrier counts say what they count ----------------------------------------------------------

BAR = """
name: t
source: test
{per}
threads:
  P0:
    at: gpu0.cta0.warp0
    code:
      - st.global.b32 [x], 1
      - bar.sync 1, 256
  P1:
    at: gpu0.cta0.warp4
    code:
      - bar.sync 1, 256
      - ld.global.b32 r0, [x]
expect:
  forbidden: ['P1:r0=0']
"""


def test_real_barrier_counts_with_threads_per_litmus_thread():
    _both(BAR.format(per="threads_per_litmus_thread: 128"))


def test_a_real_barrier_count_without_the_convention_is_a_hang_naming_it():
    """Counts are in PTX threads: 256 with two litmus threads standing for one thread each never
    completes, a hang (not "Forbidden"), and the message names the convention."""
    r = check_test(_test(BAR.format(per="")), MODEL)
    assert r.status == "fail" and all(c.allowed is None for c in r.conditions), r.message
    assert "threads_per_litmus_thread" in r.message and "never completes" in r.message
    assert r.message.startswith("no execution terminates")
