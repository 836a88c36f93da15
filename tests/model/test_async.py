"""Asynchronous completion in the model (issue 4): the pairing of the real-world patterns (every
fixed form forbidden or defined, its buggy twin allowed or undefined), undefined behaviour
reported with the two conflicting operations and never as an outcome verdict, the A2 rows that
strict-cta flips, the mbarrier state arithmetic, the lowering of the asynchronous instructions,
and their syntax errors."""
from __future__ import annotations

import re
from dataclasses import replace

import pytest

from checker import LITMUS_DIR
from checker.ast import LitmusTest
from checker.verdict.check import check_test
from checker.errors import LitmusError
from checker.front.litmus import load_file, load_paths, load_text
from checker.isa.registry import lower
from checker.isa.mbarrier import expected_of, mb_update, pending_of, phase_of, tx_of
from checker.isa.mbarrier import pack as encode
from checker.isa.registry import parse_instr
from checker.model.values import Const, evaluate

PATTERNS = LITMUS_DIR / "patterns"
ASYNC = LITMUS_DIR / "async"


def _items(folder):
    return load_paths([str(folder)])


def _tests(folder) -> list[LitmusTest]:
    return [t for t in _items(folder) if isinstance(t, LitmusTest)]


def _one(text: str) -> LitmusTest:
    items = load_text(text)
    assert len(items) == 1 and not isinstance(items[0], LitmusError), items
    return items[0]


# -- the patterns: every fixed form and its buggy twin ------------------------------------------

def _pairs():
    tests = {t.name: t for t in _tests(PATTERNS)}
    out = []
    for name, t in sorted(tests.items()):
        m = re.fullmatch(r"(P\d+-[a-z0-9]+)-fixed", name)
        if m:
            out.append((t, tests.get(m.group(1) + "-buggy")))
    return out


def test_every_pattern_test_is_buggy_or_fixed_and_paired():
    names = [t.name for t in _tests(PATTERNS)]
    assert names and all(re.fullmatch(r"P\d+-[a-z0-9]+-(buggy|fixed)", n) for n in names), names
    fixed = {n[:-len("-fixed")] for n in names if n.endswith("-fixed")}
    buggy = {n[:-len("-buggy")] for n in names if n.endswith("-buggy")}
    assert fixed == buggy
    assert len(fixed) >= 24


def test_every_pattern_file_loads():
    for f in sorted(PATTERNS.glob("*.yaml")):
        assert [i for i in load_file(f) if isinstance(i, LitmusError)] == [], f.name


@pytest.mark.parametrize("fixed, buggy", _pairs(), ids=[f.name for f, _ in _pairs()])
def test_fixed_pattern_is_forbidden_or_defined_and_its_twin_allowed_or_undefined(fixed, buggy, ptx_model):
    assert buggy is not None, f"{fixed.name} has no -buggy twin"
    assert fixed.expect_undefined is not True
    bad = [e for e in fixed.expectations if e.kind == "forbidden"]
    assert bad, f"{fixed.name} forbids nothing"
    rf = check_test(fixed, ptx_model)
    assert rf.status == "pass" and not rf.undefined, (fixed.name, rf.message)
    assert all(c.allowed is False for c in rf.conditions if c.expected == "forbidden")
    # the buggy twin: undefined, or one of the fixed form's forbidden outcomes allowed
    rb = check_test(replace(buggy, expectations=(), expect_undefined=None), ptx_model)
    if rb.undefined:
        assert buggy.expect_undefined is True, f"{buggy.name} is undefined: {rb.message}"
        return
    assert buggy.expect_undefined is not True
    allowed = [e.text for e in bad
               if check_test(replace(buggy, expectations=(replace(e, kind="allowed"),), expect_undefined=None),
                             ptx_model).status == "pass"]
    assert allowed, f"{buggy.name}: none of the fixed form's forbidden outcomes is allowed"
    assert any(e.kind == "allowed" and e.text in allowed for e in buggy.expectations), buggy.name


# -- undefined behaviour ------------------------------------------------------------------------

def _undefined_tests():
    return [t for t in _tests(ASYNC) + _tests(PATTERNS) if t.expect_undefined]


@pytest.mark.parametrize("test", _undefined_tests(), ids=lambda t: t.name)
def test_undefined_behaviour_names_two_operations_and_no_outcomes(test, ptx_model):
    r = check_test(test, ptx_model)
    assert r.status == "pass" and r.undefined, r.message
    assert r.outcomes == () and r.conditions == ()          # never an outcome verdict
    for u in r.undefined:
        one = ("MbarrierRange", "MbarrierSkippedPhase", "MbarrierStaleToken")
        assert u.flag in ("InFlight", "CpAsyncGroupOverlap", "MbarrierUninitialised", "MbarrierReinit", *one)
        # the value-dependent ones are one operation: the one whose resulting state leaves a range,
        # the arrive-on of a phase not yet observed, the wait on a stale token
        assert len(u.events) == (1 if u.flag in one else 2), u
        assert u.why.startswith(f"{u.flag} between ") and all(e in u.why for e in u.events)


# which two operations conflict, and why
UB_PAIRS = {
    "UB+readdst+nowait": ("InFlight", "async write s", "ld.shared r0, [s]"),
    "UB+writesrc+nosync": ("InFlight", "async read s", "st.shared [s], 2"),
    "BulkStore+nowait+reuse": ("InFlight", "async read s", "st.shared [s], 2"),
    "BulkStore+wait.read0+load": ("InFlight", "async write g", "ld.global r0, [g]"),
    "CpAsync+nowait": ("InFlight", "async write s", "ld.shared r0, [s]"),
    "CpAsync+order+overwrite-inflight": ("InFlight", "async read g", "st.global [g], 2"),
    "UB+tensormap-modify-inflight+nosync": ("InFlight", "tensormap read tmap", "tensormap.replace"),
    "P7-relaxedwait-buggy": ("InFlight", "async write s", "ld.shared r0, [s]"),
    "UB+two-cp.async-one-group+same-dst": ("CpAsyncGroupOverlap", "cp.async.ca.shared.global [s], [g1]",
                                            "cp.async.ca.shared.global [s], [g2]"),
    "UB+uninit-mbarrier+arrive": ("MbarrierUninitialised", "init mb=0", "mbarrier.arrive"),
    "UB+uninit-mbarrier+bulk-complete_tx": ("MbarrierUninitialised", "init mb=0", "complete-tx 16 on mb"),
    "P9-init-buggy": ("MbarrierUninitialised", "mbarrier.init.shared::cta.b64 [mb], 1", "mbarrier.arrive.expect_tx"),
    "P10-init-buggy": ("MbarrierUninitialised", "mbarrier.init.shared::cta.b64 [mb1], 1", "complete-tx 16 on mb1"),
    "MbarrierLife+arrive-after-inval": ("MbarrierUninitialised", "mbarrier.inval", "mbarrier.arrive"),
    "MbarrierLife+reinit-live": ("MbarrierReinit", "mbarrier.init", "mbarrier.init"),
}


@pytest.mark.parametrize("name", sorted(UB_PAIRS))
def test_undefined_behaviour_reports_the_conflicting_pair(name, ptx_model):
    test = next(t for t in _tests(ASYNC) + _tests(PATTERNS) if t.name == name)
    flag, first, second = UB_PAIRS[name]
    r = check_test(test, ptx_model)
    (u,) = [u for u in r.undefined if u.flag == flag]
    assert first in u.events[0] and second in u.events[1], u.events


def test_an_undefined_program_with_expectations_fails_without_verdicts(ptx_model):
    test = next(t for t in _tests(ASYNC) if t.name == "CpAsync+nowait")
    probe = replace(test, expect_undefined=None, expectations=load_text("""
name: q
memory: {g: 1, s: {space: shared, owner: gpu0.cluster0.cta0}}
threads:
  P0:
    at: gpu0.cluster0.cta0
    code:
      - ld.shared r0, [s]
expect: {allowed: ['P0:r0=0']}
""")[0].expectations)
    r = check_test(probe, ptx_model)
    assert r.status == "fail" and r.conditions == () and "undefined behaviour: InFlight" in r.message


# -- A2 and strict-cta ------------------------------------------------------------------------

STRICT = {   # test, condition: (default verdict, strict-cta verdict); "undefined" for UB
    ("BulkLoad+remote+wait.cta", "P1:r0=0"): ("forbidden", "undefined"),
    ("StAsync+expect_tx+wait.cta", "P1:r0=0"): ("forbidden", "undefined"),
    ("BulkLoad+remote-WAR+fence-in-destination-cta", "P0:r0=2"): ("forbidden", "allowed"),
    ("BulkLoad+remote-WAR+fence-in-issuer-cta", "P0:r0=2"): ("allowed", "forbidden"),
    ("ClusterBar+I15+acquire-fence-only", "P0:r0=2"): ("allowed", "forbidden"),
    ("ClusterBar+I15+release-fence-only", "P0:r0=2"): ("forbidden", "allowed"),
    ("P11-remoteempty-fixed", "P0:r0=2"): ("forbidden", "allowed"),
    ("P11-proxyfence-fixed", "P0:r0=2"): ("forbidden", "allowed"),
    ("Multicast+bulk+wait.cta", "P1:r0=0"): ("forbidden", "undefined"),
    ("Multicast+tensor+wait.cta", "P1:r0=0"): ("forbidden", "undefined"),
    ("Multicast+remote-WAR+fence-in-destination-cta", "P1:r0=2"): ("forbidden", "allowed"),
    ("Multicast+remote-WAR+fence-in-issuer-cta", "P1:r0=2"): ("allowed", "forbidden"),
    ("Multicast+tcgen05.commit+multicast+wait.cta", "tD=2"): ("forbidden", "undefined"),
}


@pytest.mark.parametrize("name, cond", sorted(STRICT), ids=[n for n, _ in sorted(STRICT)])
def test_strict_cta_flips_the_a2_rows(name, cond, ptx_model):
    test = next(t for t in _tests(ASYNC) + _tests(PATTERNS) if t.name == name)
    exp = next(e for e in test.expectations if e.text == cond)
    for options, want in zip((frozenset(), frozenset({"strict-cta"})), STRICT[(name, cond)]):
        if want == "undefined":
            probe = replace(test, expectations=(), expect_undefined=True)
        else:
            probe = replace(test, expectations=(replace(exp, kind=want),), expect_undefined=None)
        r = check_test(probe, ptx_model, options=options)
        assert r.status == "pass", (name, sorted(options), want, r.message)


# -- the mbarrier state -------------------------------------------------------------------------

def _val(e) -> int:
    return evaluate(e, lambda r: 0)


def _step(v: int, **kw) -> int:
    """The state after one update; the update must be defined."""
    new, bad = mb_update(Const(v), **kw)
    assert _val(bad) == 0
    return _val(new)


def _undefined(v: int, **kw) -> bool:
    return _val(mb_update(Const(v), **kw)[1]) == 1


def _fields(v: int) -> tuple[int, int, int]:
    return _val(phase_of(Const(v))), _val(pending_of(Const(v))), _val(tx_of(Const(v)))


def test_mbarrier_phases_count_arrivals_and_bytes():
    s = _val(encode(0, 2, 2))
    assert _fields(s) == (0, 2, 0)
    s = _step(s, arrive=Const(1), expect=Const(16))      # arrive.expect_tx 16
    assert _fields(s) == (0, 1, 16)
    s = _step(s, arrive=Const(1))                          # last arrival, 16 bytes due
    assert _fields(s) == (0, 0, 16)
    s = _step(s, complete=Const(16))                       # complete-tx: phase done
    assert _fields(s) == (1, 2, 0)


def test_complete_tx_before_expect_tx_goes_negative_and_arrive_drop_lowers_the_count():
    s = _step(_val(encode(0, 1, 1)), complete=Const(16))
    assert _fields(s) == (0, 1, -16)
    s = _step(s, arrive=Const(1), expect=Const(16))
    assert _fields(s) == (1, 1, 0)
    s = _step(_val(encode(3, 2, 2)), arrive=Const(1), drop=Const(1))
    assert _fields(s) == (3, 1, 0) and _val(expected_of(Const(s))) == 1     # expected count now 1
    s = _step(s, arrive=Const(1))
    assert _fields(s) == (4, 1, 0)


def test_a_state_out_of_range_is_undefined_and_never_carries():
    """PTX's ranges (tx-count +-(2^20-1), pending 0..2^20-1): leaving one is undefined, and a
    state at the edge of a range still decodes exactly (no carry into the next field)."""
    limit = (1 << 20) - 1
    s = _step(_val(encode(0, 1, 1)), complete=Const(limit))
    assert _fields(s) == (0, 1, -limit)
    assert _undefined(s, complete=Const(1))                                   # tx below -(2^20-1)
    s = _step(_val(encode(0, 2, 2)), expect=Const(limit))
    assert _fields(s) == (0, 2, limit)
    assert _undefined(s, expect=Const(1))                                     # tx above 2^20-1
    assert _undefined(_val(encode(0, 1, 1)), arrive=Const(2))                 # more arrivals than pending
    assert not _undefined(_val(encode(0, 2, 2)), arrive=Const(2))
    s = _val(encode(0, limit, limit))
    assert _fields(s) == (0, limit, 0) and _val(expected_of(Const(s))) == limit
    assert _undefined(s, arrive=Const(-1))                                    # pending above 2^20-1
    r = Const(200000)
    assert _undefined(s, arrive=Const(1), operands=((Const(0), 1, limit),))   # a register count of 0
    assert not _undefined(s, arrive=r, operands=((r, 1, limit),))


def test_an_operation_on_no_mbarrier_leaves_none_and_flags_nothing_more():
    new, bad = mb_update(Const(0), arrive=Const(5), complete=Const(7))
    assert _val(new) == 0 and _val(bad) == 0


# -- lowering ------------------------------------------------------------------------------------

BULK_LOAD = """
name: t
memory:
  g: 1
  s: {space: shared, owner: gpu0.cluster0.cta1}
  mb: {space: shared, owner: gpu0.cluster0.cta1, mbarrier: {count: 1}}
threads:
  P0:
    at: gpu0.cluster0.cta0
    code:
      - st.global [x], 1
      - cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [s], [g], 16, [mb]
"""


def test_complete_tx_is_an_async_rmw_releasing_its_own_instruction_only():
    es = lower(_one(BULK_LOAD))
    ev = {e.label.split("[")[-1].rstrip("]"): e.eid for e in es.events if "[" in e.label}
    issue, rd, wr = ev["issue"], ev["async read g"], ev["async write s"]
    ctr = [e.eid for e in es.events if "ACOMPL" in e.tags]
    ct_r, ct_w = sorted(ctr)
    assert (ct_r, ct_w) in es.relations["rmw"]
    assert {(issue, ct_r), (issue, ct_w)} <= es.relations["aso"]
    assert {(rd, ct_w), (wr, ct_w)} <= es.relations["acomp"]
    assert not any(ct_w in p for p in es.relations["po"])
    assert {"REL", "CLUSTER", "MB", "GEN", "PF_ASYNC"} <= es.events[ct_w].tags
    assert {b for a, b in es.relations["pfcover"] if a == ct_w} == {rd, wr}
    # A2: the complete-tx on CTA 1's mbarrier is performed by CTA 1, like the write into s
    assert (ct_w, wr) in es.relations["pscta"] and (issue, ct_w) not in es.relations["pscta"]
    init = es.names["mb"]
    assert {"MB", "MB_INIT"} <= next(e for e in es.events if e.thread is None and e.loc == init).tags


def test_mbarrier_wait_awaits_its_computed_result():
    es = lower(_one("""
name: t
memory:
  mb: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
threads:
  P0:
    at: gpu0.cta0
    code:
      - mbarrier.arrive.shared::cta.b64 t, [mb]
      - mbarrier.try_wait.parity.relaxed.cta.shared::cta.b64 p, [mb], 0 == 1
      - mbarrier.test_wait.shared::cta.b64 q, [mb], t == 1
"""))
    (wait1, wait2) = [e for e in es.events if e.kind == "R" and "MB" in e.tags and (e.eid, e.eid + 1) not in es.relations["rmw"]]
    assert "RLX" in wait1.tags and "ACQ" not in wait1.tags and "ACQ" in wait2.tags
    assert es.awaits == () and len(es.guards) == 2 and {v for _, v in es.guards} == {1}


def test_cluster_barrier_matches_instances_per_cluster():
    es = lower(_one("""
name: t
threads:
  P0:
    at: gpu0.cluster0.cta0
    code: [barrier.cluster.arrive.relaxed.aligned, barrier.cluster.wait.aligned, barrier.cluster.arrive, barrier.cluster.wait]
  P1:
    at: gpu0.cluster0.cta1
    code: [barrier.cluster.arrive, barrier.cluster.wait, barrier.cluster.arrive, barrier.cluster.wait]
"""))
    arr = {(e.thread, k): e.eid for k, e in enumerate(x for x in es.events if "CLU_ARRIVE" in x.tags)}
    wts = [e.eid for e in es.events if "CLU_WAIT" in e.tags]
    assert len(es.relations["clusterbar"]) == 4
    assert all(es.events[a].thread != es.events[w].thread for a, w in es.relations["clusterbar"])
    assert "RLX" in es.events[min(arr.values())].tags and wts


@pytest.mark.parametrize("code, msg", [
    # (arrive, wait, arrive while P1 arrives and waits once is fine: P1 exits, docs/model.md#a19)
    (["barrier.cluster.arrive", "barrier.cluster.arrive"], "arrive twice without a barrier.cluster.wait"),
    (["barrier.cluster.wait"], "without an earlier barrier.cluster.arrive"),
    (["mbarrier.try_wait.parity.shared::cta.b64 p, [mb], 0"], "spin-wait"),
    (["cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [s1], [s], 16, [mb]"], "strictly remote"),
])
def test_lowering_errors(code, msg):
    t = _one(f"""
name: t
memory:
  s: {{space: shared, owner: gpu0.cluster0.cta0}}
  s1: {{space: shared, owner: gpu0.cluster0.cta0}}
  mb: {{space: shared, owner: gpu0.cluster0.cta0}}
threads:
  P0:
    at: gpu0.cluster0.cta0
    code: {code!r}
  P1:
    at: gpu0.cluster0.cta1
    code:
      - barrier.cluster.arrive
      - barrier.cluster.wait
""".replace("'", '"'))
    with pytest.raises(LitmusError, match=msg):
        lower(t)


@pytest.mark.parametrize("text, msg", [
    ("cp.async.ca.shared.global [s], [g], 3", "cp-size is 4, 8 or 16"),
    ("cp.async.cg.shared.global [s], [g], 8", "cp.async.cg copies 16 bytes"),
    ("cp.async.ca.shared.global [s], [g], 4, 8", "src-size must be at most cp-size"),
    ("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [s], [g], 16, [mb], 0",
     "ctaMask is a 16-bit mask naming at least one CTA of the cluster, not 0"),
    ("cp.async.bulk.global.shared::cta.bulk_group.cp_mask [g], [s], 16, 255", "byte-masked writes are not modelled"),
    ("mbarrier.arrive.shared::cluster.b64 st, [mb]", "returns no state: write _"),
    ("mbarrier.try_wait.parity.release.shared::cta.b64 p, [mb], 0", "waits are .acquire or .relaxed"),
    ("mbarrier.expect_tx.release.cta.shared::cta.b64 [mb], 16", "is .relaxed only"),
    ("barrier.cluster.wait.release", "barrier.cluster.wait takes no .release"),
    ("fence.acquire.sync_restrict::shared::cta.cluster", "fence.release.sync_restrict::shared::cta.cluster"),
    ("st.async.shared::cluster.b32 [s], 1", "without an mbarrier is the .release.gpu"),
    ("red.async.shared::cluster.mbarrier::complete_tx::bytes.add.u32 [s], 1, [mb]", "needs .relaxed.cluster"),
    ("cp.reduce.async.bulk.global.shared::cta.bulk_group.and.u32 [g], [s], 16", "takes .b32 or .b64"),
    ("cp.async.bulk.tensor.2d.shared::cta.global.tile::gather4.mbarrier::complete_tx::bytes [s], [t, {0, 1}], [mb]",
     "a column and four rows"),
])
def test_async_syntax_errors(text, msg):
    with pytest.raises(LitmusError, match=re.escape(msg)):
        parse_instr(text)


# -- .multicast::cluster (offset_of cells, ctaMask) ---------------------------------------------

MULTICAST = """
name: t
memory:
  g: 1
  tmap: {{tensormap: {{0: g}}, init: 0}}
  s0: {{space: shared, owner: gpu0.cluster0.cta0}}
  s1: {{space: shared, owner: gpu0.cluster0.cta1, offset_of: s0}}
  mb0: {{space: shared, owner: gpu0.cluster0.cta0, mbarrier: {{count: 1}}}}
  mb1: {{space: shared, owner: gpu0.cluster0.cta1, mbarrier: {{count: 1}}, offset_of: mb0}}
  tD: {{space: tensor, owner: gpu0.cluster0.cta0}}
threads:
  P0:
    at: gpu0.cluster0.cta0
    code:
      - {code}
  P1:
    at: gpu0.cluster0.cta1
    code:
      - ld.shared r0, [s1]
"""
MC_BULK = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [s0], [g], 16, [mb0], {}"
MC_TENSOR = ("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
             "[s0], [tmap, {{0}}], [mb0], {}")
MC_COMMIT = "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [mb0], {}"


def _multicast(code: str, mask="0b11"):
    es = lower(_one(MULTICAST.format(code=code.format(mask))))
    loc = {name: es.names[name] for name in ("s0", "s1", "mb0", "mb1")}
    mine = [e for e in es.events if e.thread == "P0"]
    writes = {n: [e.eid for e in mine if e.kind == "W" and e.loc == loc[n]] for n in loc}
    return es, mine, writes


def test_multicast_bulk_copy_writes_and_signals_each_destination_cta():
    es, mine, w = _multicast(MC_BULK)
    issue = next(e.eid for e in mine if e.kind == "I")
    (rd,) = [e.eid for e in mine if e.kind == "R" and "ASRC" in e.tags]        # the source is read once
    (w0,), (w1,), (c0,), (c1,) = w["s0"], w["s1"], w["mb0"], w["mb1"]
    assert {"ASYNC", "WEAK", "ADST"} <= es.events[w0].tags and {"ASYNC", "WEAK", "ADST"} <= es.events[w1].tags
    assert {(issue, rd), (rd, w0), (rd, w1), (issue, c0), (issue, c1)} <= es.relations["aso"]
    # each complete-tx (16 bytes, on its own CTA's mbarrier) completes the read and its own write only
    assert {a for a, b in es.relations["acomp"] if b == c0} == {rd, w0}
    assert {a for a, b in es.relations["acomp"] if b == c1} == {rd, w1}
    for c, wr in ((c0, w0), (c1, w1)):
        assert {"ACOMPL", "REL", "CLUSTER", "PF_ASYNC"} <= es.events[c].tags
        assert {b for a, b in es.relations["pfcover"] if a == c} == {rd, wr}
    # A2: CTA 1's write and complete-tx are performed by CTA 1, CTA 0's by the issuer's CTA 0
    pscta = es.relations["pscta"]
    assert {(w1, c1), (issue, w0), (issue, c0)} <= pscta
    assert not {(issue, w1), (issue, c1), (w0, w1)} & pscta


def test_multicast_mask_names_the_destination_ctas():
    es, _, w = _multicast(MC_BULK, "0b10")
    assert (len(w["s0"]), len(w["s1"]), len(w["mb0"]), len(w["mb1"])) == (0, 1, 0, 1)
    es, _, w = _multicast(MC_BULK, "1")
    assert (len(w["s0"]), len(w["s1"]), len(w["mb0"]), len(w["mb1"])) == (1, 0, 1, 0)


def test_multicast_tensor_load_reads_the_map_and_buffer_once():
    es, mine, w = _multicast(MC_TENSOR, "0x3")
    reads = [e for e in mine if e.kind == "R" and "ASRC" in e.tags]
    assert sorted("TMAP" in e.tags for e in reads) == [False, True]
    (w0,), (w1,), (c0,), (c1,) = w["s0"], w["s1"], w["mb0"], w["mb1"]
    srcs = {e.eid for e in reads}
    assert {a for a, b in es.relations["acomp"] if b == c0} == srcs | {w0}
    assert {a for a, b in es.relations["acomp"] if b == c1} == srcs | {w1}
    assert (w1, c1) in es.relations["pscta"] and (w0, w1) not in es.relations["pscta"]


def test_multicast_tcgen05_commit_arrives_on_each_cta():
    code = "tcgen05.mma.cta_group::1.kind::f16 [tD], [s0], [s0], idesc, q\n      - " + MC_COMMIT
    es, mine, w = _multicast(code)
    issue = next(e.eid for e in mine if e.kind == "I" and "TC_SYNC" in e.tags)
    mma = {e.eid for e in mine if e.kind in ("R", "W") and e.loc not in (es.names["mb0"], es.names["mb1"])}
    (a0,), (a1,) = w["mb0"], w["mb1"]
    for a in (a0, a1):
        assert {"ACOMPL", "REL", "CLUSTER", "MB"} <= es.events[a].tags
        assert (issue, a) in es.relations["aso"] and not any(a in p for p in es.relations["po"])
        assert {x for x, y in es.relations["acomp"] if y == a} == mma
    assert (a1, es.events.index(next(e for e in es.events if e.thread == "P1"))) in es.relations["pscta"]
    assert (issue, a1) not in es.relations["pscta"] and (issue, a0) in es.relations["pscta"]


_MC_MEM = """  s0: {space: shared, owner: gpu0.cluster0.cta0}
  s1: {space: shared, owner: gpu0.cluster0.cta1, offset_of: s0}
  mb0: {space: shared, owner: gpu0.cluster0.cta0, mbarrier: {count: 1}}"""


@pytest.mark.parametrize("extra, msg", [
    ("  s2: {space: shared, owner: gpu0.cluster0.cta2, offset_of: s1}",
     "<string>:7: 's1': 's1' is itself offset_of 's0': name the first cell (offset_of: s0)"),
    ("  s2: {space: shared, owner: gpu0.cluster0.cta2, offset_of: s2}",
     "<string>:7: 's2': s2 -> s2 is a cycle of offset_of"),
    ("  s3: {space: shared, owner: gpu0.cluster0.cta2, offset_of: s4}\n"
     "  s4: {space: shared, owner: gpu0.cluster0.cta3, offset_of: s3}",
     "<string>:7: 's4': s3 -> s4 -> s3 is a cycle of offset_of"),
    ("  s2: {space: shared, owner: gpu0.cluster0.cta2, offset_of: g}\n  g: 0",
     "<string>:7: 'g': offset_of 'g': 'g' is global memory, but 's2' is shared memory (offset_of names a "
     "shared cell of another CTA)"),
    ("  g2: {offset_of: s0}",
     "<string>:7: 'offset_of': offset_of is for shared memory (the same CTA-relative offset in another CTA): "
     "'g2' is global memory"),
    ("  s2: {space: shared, owner: gpu0.cluster0.cta0, offset_of: s0}",
     "<string>:7: 's0': offset_of 's0': 's2' and 's0' are both shared memory of gpu0.cluster0.cta0: offset_of "
     "names the same offset in another CTA"),
    ("  s2: {space: shared, owner: gpu0.cluster0.cta1, offset_of: s0}",
     "<string>:7: 's0': 's1' and 's2' are both at the offset of 's0' in gpu0.cluster0.cta1: one cell per CTA"),
])
def test_offset_of_errors(extra, msg):
    (err,) = load_text(f"""
name: t
memory:
{_MC_MEM}
{extra}
threads:
  P0:
    at: gpu0.cluster0.cta0
    code: ["ld.shared r0, [s0]"]
""")
    assert isinstance(err, LitmusError) and str(err) == msg, str(err)


@pytest.mark.parametrize("at, mask, msg", [
    ("gpu0.cluster0.cta0", "0b111", "ctaMask 0b111 names gpu0.cluster0.cta2 (bit 2), which is not a CTA of this "
                                    "test's cluster (its CTAs: cta0, cta1)"),
    ("gpu0.cluster0.cta0", "0x8000", "ctaMask 0b1000000000000000 names gpu0.cluster0.cta15 (bit 15), which is "
                                     "not a CTA of this test's cluster (its CTAs: cta0, cta1)"),
    ("gpu0.cluster0.cta0", "3", "ctaMask 0b11 names gpu0.cluster0.cta1 (bit 1), which has no cell at the offset "
                                "of 'mb0': declare one, e.g. NAME: {space: shared, owner: gpu0.cluster0.cta1, "
                                "offset_of: mb0}"),
])
def test_multicast_mask_errors(at, mask, msg):
    t = _one(f"""
name: t
memory:
{_MC_MEM}
threads:
  P0:
    at: {at}
    code: ["{MC_BULK.format(mask)}"]
""")
    with pytest.raises(LitmusError) as e:
        lower(t)
    assert str(e.value) == f"<string>:10: '{MC_BULK.format(mask)}': {msg}"


def test_multicast_mask_without_clusters_names_only_the_executing_cta():
    t = _one(f"""
name: t
memory:
  s0: {{space: shared, owner: gpu0.cta0}}
  mb0: {{space: shared, owner: gpu0.cta0, mbarrier: {{count: 1}}}}
threads:
  P0:
    at: gpu0.cta0
    code: ["{MC_BULK.format(1)}"]
""")
    assert len([e for e in lower(t).events if e.kind == "W" and "ADST" in e.tags]) == 1
    with pytest.raises(LitmusError, match=re.escape(
            "ctaMask 0b10 names CTA 1 of the cluster, but in a launch without clusters every CTA is a cluster "
            "of one: only bit 0 (the executing CTA) names a CTA")):
        lower(replace(t, threads=(replace(t.threads[0], code=(parse_instr(MC_BULK.format(2)),)),)))


@pytest.mark.parametrize("text, msg", [
    (MC_BULK.format("0x10000"), "ctaMask is a 16-bit mask naming at least one CTA of the cluster, not 65536"),
    (MC_BULK.format("r"), "operand 5 ('r') must be an immediate mask (0b11, 3 or 0x3): a ctaMask in a register is "
                          "not modelled"),
    (MC_BULK.format("").rstrip(", "), "missing operand ctaMask, the destination CTAs (bit N = ctaN of the cluster)"),
    ("cp.async.bulk.tensor.1d.shared::cta.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
     "[s], [t, {0}], [mb], 3", ".multicast::cluster copies global memory into several CTAs' shared memory: it goes "
                               "with the .shared::cluster.global direction only"),
    (MC_COMMIT.format("0"), "ctaMask is a 16-bit mask naming at least one CTA of the cluster, not 0"),
])
def test_multicast_syntax_errors(text, msg):
    with pytest.raises(LitmusError, match=re.escape(msg)):
        parse_instr(text)


# -- option bulk-group-only: a bulk wait does not cover copies completing through an mbarrier ------

@pytest.mark.parametrize("name", ["P16-map-reuse+wait.read0", "P16-map-reuse+wait0"])
def test_bulk_group_only_makes_mbarrier_copy_reuse_undefined(name, ptx_model):
    """The two readings of the completion-mechanism tables vs commit_group's text (axioms/ptx.cat,
    "Completion mechanisms"): by default a bulk wait completes an mbarrier copy's reads, so the map
    may be replaced after it; under bulk-group-only it does not, and the replace races the copy."""
    test = next(t for t in load_paths([str(LITMUS_DIR / "proxy")]) if getattr(t, "name", "") == name)
    assert check_test(test, ptx_model).status == "pass"
    strict = check_test(replace(test, expectations=(), expect_undefined=True), ptx_model,
                        options=frozenset({"bulk-group-only"}))
    assert strict.status == "pass" and [u.flag for u in strict.undefined] == ["InFlight"]
    es = lower(test)
    assert es.relations["mbgroup"] and es.relations["mbgroup"] <= es.relations["acomp"]


# -- clusterlaunchcontrol.try_cancel / query_cancel (PTX ISA 8.6, sm_100) -------------------------

CLC = "clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes{}.b128 [h0], [mb0]"
CLC_ALL = CLC.format(".multicast::cluster::all")
CLC_MEM = """  h0: {{space: shared, owner: gpu0.cluster0.cta0}}
  mb0: {{space: shared, owner: gpu0.cluster0.cta0, mbarrier: {{count: 1}}}}
  h1: {{space: shared, owner: gpu0.cluster0.cta1, offset_of: h0}}
{mb1}"""
MB1 = "  mb1: {space: shared, owner: gpu0.cluster0.cta1, mbarrier: {count: 1}, offset_of: mb0}"


def _clc(code: list[str], mb1: str = MB1, p1: str = "ld.shared.b128 r0, [h1]"):
    return _one(f"""
name: t
memory:
{CLC_MEM.format(mb1=mb1)}
threads:
  P0:
    at: gpu0.cluster0.cta0
    code: {code!r}
  P1:
    at: gpu0.cluster0.cta1
    code: ["{p1}"]
""".replace("'", '"'))


def _clc_events(es):
    loc = {n: es.names[n] for n in ("h0", "h1", "mb0", "mb1") if n in es.names}
    mine = [e for e in es.events if e.thread == "P0"]
    return mine, {n: [e.eid for e in mine if e.kind == "W" and e.loc == loc[n]] for n in loc}


def test_try_cancel_is_an_async_write_completed_by_its_own_complete_tx():
    es = lower(_clc([CLC.format("")]))
    mine, w = _clc_events(es)
    (issue,) = [e.eid for e in mine if e.kind == "I"]
    (wr,), (ct,) = w["h0"], w["mb0"]
    assert not w["h1"] and not w["mb1"]                              # no multicast: CTA 0 only
    assert not [e for e in mine if e.kind == "R" and "MB" not in e.tags]  # no source
    assert {"ASYNC", "WEAK", "ADST"} <= es.events[wr].tags and es.write_value[wr] == Const(1)
    assert {"ACOMPL", "REL", "CLUSTER", "MB", "PF_ASYNC"} <= es.events[ct].tags
    assert {(issue, wr), (issue, ct)} <= es.relations["aso"]
    assert {a for a, b in es.relations["acomp"] if b == ct} == {wr}
    assert {b for a, b in es.relations["pfcover"] if a == ct} == {wr}
    assert not any(wr in p or ct in p for p in es.relations["po"])   # not in program order (A8)
    ct_r = next(a for a, b in es.relations["rmw"] if b == ct)       # an RMW on the mbarrier: 16 bytes
    before = evaluate(encode(0, 1, 1, 16), lambda e: 0)
    assert evaluate(es.write_value[ct], lambda e: before if e == ct_r else 0) == evaluate(encode(0, 1, 1, 0), lambda e: 0)


def test_try_cancel_multicast_all_writes_and_signals_every_cta_of_the_cluster():
    es = lower(_clc([CLC_ALL, CLC_ALL]))
    mine, w = _clc_events(es)
    issues = sorted(e.eid for e in mine if e.kind == "I")
    assert [len(w[n]) for n in ("h0", "h1", "mb0", "mb1")] == [2, 2, 2, 2]
    # the k-th try_cancel of the test writes the response value k, in both CTAs
    assert [es.write_value[e] for e in w["h0"]] == [Const(1), Const(2)]
    assert [es.write_value[e] for e in w["h1"]] == [Const(1), Const(2)]
    (w0, _), (w1, _), (c0, _), (c1, _) = w["h0"], w["h1"], w["mb0"], w["mb1"]
    assert {(issues[0], x) for x in (w0, w1, c0, c1)} <= es.relations["aso"]
    assert {a for a, b in es.relations["acomp"] if b == c0} == {w0}
    assert {a for a, b in es.relations["acomp"] if b == c1} == {w1}
    # A2: CTA 1's write and complete-tx are performed by CTA 1, CTA 0's by the issuer's CTA 0
    pscta = es.relations["pscta"]
    assert {(w1, c1), (issues[0], w0), (issues[0], c0)} <= pscta
    assert not {(issues[0], w1), (issues[0], c1), (w0, w1)} & pscta


def test_query_cancel_decodes_the_abstract_response():
    code = ["ld.shared.b128 r, [h0]",
            "clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 p, r",
            "clusterlaunchcontrol.query_cancel.get_first_ctaid::x.b32.b128 x, r",
            "clusterlaunchcontrol.query_cancel.get_first_ctaid::z.b32.b128 z, r",
            "clusterlaunchcontrol.query_cancel.get_first_ctaid.v4.b32.b128 {a, b, c, _}, r"]
    es = lower(_clc(code))
    regs = es.registers
    for value, want in ((0, (0, 0, 0, 0, 0, 0)), (3, (1, 3, 0, 3, 0, 0))):
        got = tuple(evaluate(regs[("P0", n)], lambda e: value) for n in ("p", "x", "z", "a", "b", "c"))
        assert got == want


def test_try_cancel_strict_cta_row(ptx_model):
    """CLC+I15+no-acquire-fence: the release proxy fence in CTA 1 is enough when CTA 1 performs the
    write of h1 (A2); under strict-cta CTA 0 does, and P1 may read the next response."""
    test = next(t for t in _tests(ASYNC) if t.name == "CLC+I15+no-acquire-fence")
    exp = next(e for e in test.expectations if e.text == "P1:r0=1")
    for options, want in ((frozenset(), "forbidden"), (frozenset({"strict-cta"}), "allowed")):
        probe = replace(test, expectations=(replace(exp, kind=want),), expect_undefined=None)
        assert check_test(probe, ptx_model, options=options).status == "pass", (sorted(options), want)


@pytest.mark.parametrize("code, mb1, msg", [
    ([CLC_ALL], "", "'" + CLC_ALL + "': .multicast::cluster::all reaches every CTA of the cluster, but "
     "gpu0.cluster0.cta1 has no cell at the offset of 'mb0': declare one, e.g. NAME: {space: shared, owner: "
     "gpu0.cluster0.cta1, offset_of: mb0}"),
    (["clusterlaunchcontrol.try_cancel.async.mbarrier::complete_tx::bytes.b128 [g], [mb0]"], MB1,
     "the response 'g' must be shared memory"),
    (["clusterlaunchcontrol.try_cancel.async.mbarrier::complete_tx::bytes.b128 [h0], [g]"], MB1,
     "the mbarrier 'g' must be shared memory"),
])
def test_try_cancel_lowering_errors(code, mb1, msg):
    with pytest.raises(LitmusError) as e:
        lower(_clc(code, mb1))
    assert str(e.value).endswith(msg), str(e.value)


def test_try_cancel_operands_are_the_executing_ctas():
    items = load_text(f"""
name: t
memory:
{CLC_MEM.format(mb1=MB1)}
threads:
  P0:
    at: gpu0.cluster0.cta0
    code: ["clusterlaunchcontrol.try_cancel.async.mbarrier::complete_tx::bytes.b128 [h1], [mb0]"]
""")
    assert isinstance(items[0], LitmusError)
    assert str(items[0]).endswith(
        "'h1' is shared memory of another CTA (gpu0.cluster0.cta1): the operands of "
        "clusterlaunchcontrol.try_cancel are the executing CTA's own shared memory (.multicast::cluster::all "
        "reaches the other CTAs)"), str(items[0])


@pytest.mark.parametrize("text, msg", [
    ("clusterlaunchcontrol.try_cancel.shared::cta.mbarrier::complete_tx::bytes.b128 [h], [mb]",
     "clusterlaunchcontrol.try_cancel needs a .async qualifier (.async)"),
    ("clusterlaunchcontrol.try_cancel.async.shared::cta.b128 [h], [mb]",
     "clusterlaunchcontrol.try_cancel needs a .completion qualifier (.mbarrier::complete_tx::bytes)"),
    ("clusterlaunchcontrol.try_cancel.async.shared::cluster.mbarrier::complete_tx::bytes.b128 [h], [mb]",
     "the operands of clusterlaunchcontrol.try_cancel are in the executing CTA's shared memory: write "
     ".shared::cta or no state space (generic addressing)"),
    ("clusterlaunchcontrol.try_cancel.async.mbarrier::complete_tx::bytes.multicast::cluster.b128 [h], [mb]",
     "clusterlaunchcontrol.try_cancel multicasts with .multicast::cluster::all (every CTA of the cluster, no "
     "ctaMask)"),
    ("clusterlaunchcontrol.try_cancel.async.mbarrier::complete_tx::bytes.b64 [h], [mb]",
     "the response of clusterlaunchcontrol.try_cancel is 16 bytes: .b128"),
    ("clusterlaunchcontrol.try_cancel.async.mbarrier::complete_tx::bytes.b128 [h]",
     "missing operand mbar, the mbarrier (operands: [addr], [mbar])"),
    ("clusterlaunchcontrol.try_cancel.async.mbarrier::complete_tx::bytes.b128 [h], [mb] == 1",
     "'== 1': clusterlaunchcontrol.try_cancel returns no value to await"),
    ("clusterlaunchcontrol.query_cancel.is_canceled.b32.b128 p, r",
     "clusterlaunchcontrol.query_cancel.is_canceled is .pred.b128 (a predicate from the 16-byte response)"),
    ("clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 p, [h]", "operand 2 ('[h]') must be a register"),
    ("clusterlaunchcontrol.query_cancel.get_first_ctaid.b32.b128 x, r",
     "clusterlaunchcontrol.query_cancel.get_first_ctaid returns a .v4 vector {x, y, z, _}: write "
     ".get_first_ctaid.v4.b32.b128, or .get_first_ctaid::x (::y, ::z) for one coordinate"),
    ("clusterlaunchcontrol.query_cancel.get_first_ctaid::x.v4.b32.b128 {a, b, c, d}, r",
     "clusterlaunchcontrol.query_cancel.get_first_ctaid::x returns one coordinate: no .v4"),
    ("clusterlaunchcontrol.query_cancel.get_first_ctaid.v4.b32.b128 {a, b, c}, r",
     "clusterlaunchcontrol.query_cancel.get_first_ctaid.v4 writes a vector of four: {x, y, z, _}"),
    ("clusterlaunchcontrol.query_cancel.get_first_ctaid::y.pred.b128 p, r",
     "clusterlaunchcontrol.query_cancel.get_first_ctaid::y returns .b32 values (.get_first_ctaid::y.b32.b128)"),
    ("clusterlaunchcontrol", "clusterlaunchcontrol is .try_cancel or .query_cancel"),
])
def test_clusterlaunchcontrol_syntax_errors(text, msg):
    with pytest.raises(LitmusError) as e:
        parse_instr(text, memory=frozenset({"h", "mb"}))
    assert str(e.value) == f"<string>:1: '{text}': {msg}"


# -- the mbarrier state's ranges: values beyond them are refused, never silently wrapped ----------

@pytest.mark.parametrize("decl, code, msg", [
    ("mb: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}",
     "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [mb], 1048576",
     "'mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [mb], 1048576': tx-count 1048576: PTX allows 0 to "
     "1048575 (2^20-1)"),
    ("mb: {space: shared, owner: gpu0.cta0}", "mbarrier.init.shared::cta.b64 [mb], 1048576",
     "'mbarrier.init.shared::cta.b64 [mb], 1048576': arrival count 1048576: PTX allows 1 to 1048575 (2^20-1)"),
    ("mb: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}",
     "mbarrier.arrive.shared::cta.b64 _, [mb], 2000000",
     "'mbarrier.arrive.shared::cta.b64 _, [mb], 2000000': arrival count 2000000: PTX allows 1 to 1048575 "
     "(2^20-1)"),
])
def test_mbarrier_values_beyond_the_modelled_ranges_are_refused(decl, code, msg):
    [t] = load_text(f"name: t\nmemory:\n  {decl}\nthreads:\n  P0:\n    at: gpu0.cta0\n    code: ['{code}']\n",
                    "mb.yaml")
    with pytest.raises(LitmusError) as e:
        lower(t)
    assert str(e.value) == f"mb.yaml:7: {msg}"


def test_mbarrier_count_beyond_the_range_in_memory_is_refused():
    [err] = load_text("name: t\nmemory:\n  mb: {space: shared, owner: gpu0.cta0, mbarrier: {count: 2000000}}\n"
                      "threads:\n  P0:\n    at: gpu0.cta0\n    code: ['mbarrier.arrive.shared::cta.b64 _, [mb]']\n",
                      "mb.yaml")
    assert str(err).endswith("mbarrier count 2000000: PTX allows expected arrival counts from 1 to 1048575 (2^20-1)")


# -- phases that must be observed, state tokens that go stale (A7) -------------------------------

INC_AFTER_FIRST_PHASE = """
name: t
memory:
  mb: {{space: shared, owner: gpu0.cta0, mbarrier: {{count: 1}}}}
threads:
  P0:
    at: gpu0.cta0
    code: ["mbarrier.arrive.shared::cta.b64 _, [mb]"]
  P1:
    at: gpu0.cta0.warp1
    code: ["{inc}"]
"""


def test_an_increment_that_may_follow_the_first_phase_is_refused_with_its_line():
    """cp.async.mbarrier.arrive without .noinc raises the pending count within a phase, so the
    skipped-phase check (which orders a phase's states by their counts) would be inexact: refused
    where P0's arrival may complete phase 0 before the increment, accepted with .noinc."""
    with pytest.raises(LitmusError) as e:
        lower(_one(INC_AFTER_FIRST_PHASE.format(inc="cp.async.mbarrier.arrive.shared::cta.b64 [mb]")))
    assert str(e.value).startswith("<string>:11: 'cp.async.mbarrier.arrive.shared::cta.b64 [mb]': "
                                   "cp.async.mbarrier.arrive without .noinc raises the mbarrier's pending count")
    es = lower(_one(INC_AFTER_FIRST_PHASE.format(inc="cp.async.mbarrier.arrive.noinc.shared::cta.b64 [mb]")))
    assert len(es.value_sets["MB_SKIP"]) == 2


def test_an_increment_before_the_threads_own_arrival_is_exact():
    """The seed's example: the increment precedes the thread's own arrive in program order, so no
    arrival can complete phase 0 before it: not refused. Only the asynchronous arrive-on may come
    after a completed phase (the thread's arrive alone reaches the count); the thread's arrive
    cannot (the other arrive-on is the increment's, net zero), so it gets no term."""
    t = next(t for t in _tests(LITMUS_DIR / "async") if t.name == "CpAsync+mbarrier+arrive+test_wait-state")
    es = lower(t)
    assert ["async arrive-on" in es.events[e].label for e, _ in es.value_sets["MB_SKIP"]] == [True]


def test_a_second_initialisation_starts_a_new_lifetime_of_phases():
    """The k-th mbarrier.init of one object starts its phases at k * 2^20 (a `memory:` mbarrier's
    declaration is the 0th), so two lifetimes' states never share a phase; parities are kept."""
    from checker.isa.mbarrier import LIFETIME, describe
    t = _one("""
name: t
memory:
  mb: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
  mc: {space: shared, owner: gpu0.cta0}
threads:
  P0:
    at: gpu0.cta0
    code: ["mbarrier.inval.shared::cta.b64 [mb]", "mbarrier.init.shared::cta.b64 [mb], 2",
           "mbarrier.init.shared::cta.b64 [mc], 3"]
""")
    es = lower(t)
    inits = {es.events[e].loc: _val(es.write_value[e]) for e in es.sets["MB_INIT"] if es.events[e].thread}
    assert _val(phase_of(Const(inits["mb"]))) == LIFETIME and LIFETIME % 2 == 0
    assert _val(phase_of(Const(inits["mc"]))) == 0
    assert describe(inits["mb"]) == "phase=0 expected=2 pending=2 tx=0 after init #2"
    assert describe(inits["mc"]) == "phase=0 expected=3 pending=3 tx=0"
