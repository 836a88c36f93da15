"""`ptxmc audit`: TileLang's InjectFenceProxy rule and the corrected rule, judged with the model on
the compiler-shaped kernels of litmus/audit (real lowering, real Z3, real repair and prune)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from checker.audit.judge import judge_applied
from checker.audit.policy import FENCE, apply_policy, strip
from checker.audit.run import audit_paths, audit_test
from checker.cli import main
from checker.front.litmus import load_paths, load_text
from checker.resources import resolve_model

# The repair and prune searches' budget (seconds) is a safety net here, never what ends a search
# (on a loaded machine the default 60 s could end one with nothing found).
SAFETY = 1800.0

ROOT = Path(__file__).resolve().parents[2]
FAMILY = ROOT / "litmus" / "audit" / "kernels.yaml"
ANY_CTA = "proxy-fence-any-cta"
CTA_FENCE = "fence.proxy.async.shared::cta"


@pytest.fixture(scope="module")
def model():
    return resolve_model(None)


@pytest.fixture(scope="module")
def family():
    return {t.name: t for t in load_paths([FAMILY])}


def code(applied, thread: str) -> list[str]:
    return [i.text for i in next(t for t in applied.audited.test.threads if t.name == thread).code]


# -- the policies, without the model --------------------------------------------------------

def test_strip_removes_only_async_proxy_fences(family):
    t = family["K10-dsmem-push+cluster-barrier"]
    stripped, removed = strip(t)
    assert [(th, txt) for th, _, txt in removed] == [("P0", "fence.proxy.async.shared::cta"),
                                                     ("P1", "fence.proxy.async.shared::cta")]
    assert not any("fence.proxy" in i.text for th in stripped.threads for i in th.code)
    assert sum(len(th.code) for th in stripped.threads) == sum(len(th.code) for th in t.threads) - 2


def test_documented_example_fence_between_store_and_wgmma(family):
    """The pass's own example: st.shared, then wgmma: the fence goes right before the wgmma."""
    a = apply_policy(family["K4-st.shared+wgmma"], "tilelang")
    p0 = code(a, "P0")
    k = p0.index(FENCE)
    assert p0.count(FENCE) == 1 and p0.index("st.shared [sA], 1") < k
    assert p0[k + 1].startswith("wgmma.mma_async")
    assert [i.kind for i in a.insertions] == ["fence"]


def test_tilelang_ignores_loads_and_other_threads(family):
    # the producer of the ring does only async copies and mbarrier operations, the consumer only
    # loads: the pass inserts nothing (the under-fencing the model finds below)
    assert apply_policy(family["K6-ring2+consumer-reads+tma-refill"], "tilelang").insertions == ()
    assert apply_policy(family["K3-consumer-writes+bar+producer-tma-store"], "tilelang").insertions == ()


def test_tma_store_handshake_is_added_when_missing():
    t = load_text("""
name: store-no-handshake
source: "test of the policy only"
memory:
  s: {space: shared, owner: gpu0.cta0}
threads:
  P0:
    at: gpu0.cta0
    code:
      - st.shared [s], 1
      - cp.async.bulk.global.shared::cta.bulk_group [g], [s], 16
""")[0]
    a = apply_policy(t, "tilelang")
    assert code(a, "P0") == ["st.shared [s], 1", FENCE, "cp.async.bulk.global.shared::cta.bulk_group [g], [s], 16",
                             "cp.async.bulk.commit_group", "cp.async.bulk.wait_group.read 0"]


@pytest.mark.parametrize("k", ["v4", "v2b64", "stmatrix"])
def test_tilelang_counts_vector_stores_and_stmatrix(model, family, k):
    """TileLang's pass counts every shared BufferStore (any width) and stmatrix as generic traffic
    (inject_fence_proxy.cc: the BufferStore visitor, IsKnownGeneric): it fences the epilogue
    itself, so the audit finds nothing (it reported under-fencing against TileLang)."""
    t = family[f"K11-{k}-stores+tma-store"]
    a = apply_policy(t, "tilelang")
    p0 = code(a, "P0")
    assert p0[p0.index(FENCE) + 1].startswith("cp.async.bulk.global") and p0.count(FENCE) == 1
    for opts in (frozenset(), frozenset({ANY_CTA})):
        j = judge_applied(a, model, opts, budget=SAFETY)
        assert j.status == "ok", (j.status, j.message, j.findings)


def test_tilelang_classes_follow_the_pass_source():
    """tcgen05.mma and the TMA-store handshake (tma_store_arrive / tma_store_wait) are async
    intrinsics of the pass, ld.shared and global stores are nothing: a generic store before a
    handshake the program wrote gets the fence, and a handshake with only its arrive gets both."""
    t = load_text("""
name: classes
source: "test of the policy only"
memory:
  s: {space: shared, owner: gpu0.cta0}
  x: {space: shared, owner: gpu0.cta0}
threads:
  P0:
    at: gpu0.cta0
    code:
      - cp.async.bulk.global.shared::cta.bulk_group [g], [s], 16
      - cp.async.bulk.commit_group
      - st.shared [x], 1
      - cp.async.bulk.wait_group.read 0
      - ld.shared r0, [x]
      - st.global [g2], 1
      - cp.async.bulk.global.shared::cta.bulk_group [g], [s], 16
      - cp.async.bulk.commit_group
""")[0]
    store, commit, wait = ("cp.async.bulk.global.shared::cta.bulk_group [g], [s], 16", "cp.async.bulk.commit_group",
                           "cp.async.bulk.wait_group.read 0")
    assert code(apply_policy(t, "tilelang"), "P0") == [
        store, commit, wait, commit, "st.shared [x], 1", FENCE, wait, "ld.shared r0, [x]", "st.global [g2], 1",
        store, commit, wait, commit]
    from checker.audit.policy import TILELANG_CLASSES, tilelang_class
    from checker.isa.registry import parse_instr
    assert tilelang_class(parse_instr("tcgen05.mma.cta_group::1.kind::f16 [tD], [sA], [sB], idesc, q"), False) == "async"
    assert tilelang_class(parse_instr("ldmatrix.sync.aligned.m8n8.x1.shared::cta.b16 r0, [s]"), False) == "generic"
    assert tilelang_class(parse_instr("cp.async.commit_group"), False) == "none"
    assert {c for c, *_ in TILELANG_CLASSES} == {"async", "generic"}


def test_corrected_imports_through_sync_and_fences_writer_side_for_remote_writes(family):
    a = apply_policy(family["K3-consumer-writes+bar+producer-tma-store"], "corrected")
    assert code(a, "P1")[:3] == ["bar.sync 0", FENCE, "cp.async.bulk.global.shared::cta.bulk_group [g0], [s0], 16"]
    a = apply_policy(family["K10-dsmem-push+cluster-barrier"], "corrected")
    p0, p1 = code(a, "P0"), code(a, "P1")
    assert p0[p0.index(FENCE) + 1] == "barrier.cluster.arrive"      # before the writer's release
    assert p1[p1.index(FENCE) + 1].startswith("cp.async.bulk.shared::cluster")
    # a store to memory the async operation does not touch needs no fence
    assert apply_policy(family["K5-tma-load+st-other+wgmma"], "corrected").insertions == ()


# -- judged by the model --------------------------------------------------------------------

def test_documented_example_is_right_and_needed(model, family):
    for opts in (frozenset(), frozenset({ANY_CTA})):
        j = judge_applied(apply_policy(family["K4-st.shared+wgmma"], "tilelang"), model, opts, budget=SAFETY)
        assert j.status == "ok", (j.status, j.message, j.findings)


def test_under_fencing_producer_that_writes_nothing(model, family):
    ta = audit_test(family["K3-consumer-writes+bar+producer-tma-store"], "tilelang", model, budget=SAFETY)
    for reading, j in ta.by_reading:
        assert j.status == "findings", (reading, j.status, j.message)
        (f,) = j.findings
        assert f.kind == "under" and "g0=0" in f.what and f.recheck == "confirmed"
        assert "g0=0" in f.detail
        # the writer's fence before the barrier; the issuer's after it costs the same, and comes
        # later in fix's order (docs/fix.md#which-least-repairs-are-reported: P0 before P1)
        assert f.repair == ("fence.proxy.async.shared::cta (P0, before line 91 'bar.sync 0')",), f.repair
    assert not ta.dependent(f.key)


def test_over_fencing_store_to_other_memory(model, family):
    j = judge_applied(apply_policy(family["K9-cp.async-prefetch+bulk-store-other"], "tilelang"), model, budget=SAFETY)
    (f,) = j.findings
    assert f.kind == "over" and f.recheck == "confirmed"
    assert [(t, txt) for t, _, txt in f.fences] == [("P0", FENCE)]


def test_reading_dependent_under_fencing(model, family):
    """The pass's fence is in the issuer's CTA; the remote write is performed by the other CTA."""
    ta = audit_test(family["K10-dsmem-push+cluster-barrier"], "tilelang", model, budget=SAFETY)
    by = dict(ta.by_reading)
    (f,) = by["default"].findings
    assert f.kind == "under" and "s1=5" in f.what and f.recheck == "confirmed"
    assert by[ANY_CTA].status == "ok"
    assert ta.dependent(f.key)


def test_corrected_policy_has_no_under_and_no_over_fencing_on_the_family(model):
    audit = audit_paths([str(FAMILY)], "corrected", None, readings=("default",), jobs=2, budget=SAFETY)
    assert len(audit.tests) == 13
    for ta in audit.tests:
        (_, j), = ta.by_reading
        assert not ta.error and j.status in ("ok", "unchanged"), (ta.name, j.status, j.message, j.findings)


def test_cli_json(tmp_path, capsys):
    text = FAMILY.read_text()
    start = text.index("- name: K4-")
    small = tmp_path / "k4.yaml"
    small.write_text(text[start:text.index("- name: ", start + 5)])
    assert main(["audit", "tilelang-fence-proxy", str(small), "--format", "json", "--reading", "default"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (t,) = doc["tests"]
    assert t["test"] == "K4-st.shared+wgmma" and t["findings"] == []
    assert t["readings"]["default"]["status"] == "ok"
    assert [i["instructions"] for i in t["inserted"]] == [[FENCE]]
    assert doc["summary"][-1]["suite"] == "total"
    assert main(["audit", "tilelang-fence-proxy", str(small), "--reading", "no-such-option"]) == 2


def test_cli_takes_every_option_run_takes(tmp_path, capsys):
    """`rmw-rewrite-effect` (docs/model.md A18) is read by the control-flow layer, not by the cat
    model: `run` takes it, and audit refused it as "unknown model option" (as a reading and as
    --option). It is not among the default readings: it decides whether a failed CAS spins, which
    no fence the audited rule inserts can change (docs/audit.md, Use)."""
    text = FAMILY.read_text()
    start = text.index("- name: K4-")
    small = tmp_path / "k4.yaml"
    small.write_text(text[start:text.index("- name: ", start + 5)])
    for args in (["--reading", "rmw-rewrite-effect"], ["--reading", "default", "--option", "rmw-rewrite-effect"]):
        assert main(["audit", "tilelang-fence-proxy", str(small), "--format", "json", *args]) == 0, args
        doc = json.loads(capsys.readouterr().out)
        (t,) = doc["tests"]
        assert [r["status"] for r in t["readings"].values()] == ["ok"], t["readings"]


# -- the re-check judges what was audited (regressions) ---------------------------------------

WS_GEMM = """
- name: WS-st.shared+mbarrier+wgmma
  doc: >-
    The shape of TileLang's warp-specialized GEMM skeleton (examples/kernels/tilelang), one stage:
    the producer warpgroup writes 16-byte tiles with generic 4-byte stores and arrives on an
    mbarrier; the consumer waits, fences the async proxy and reads the tiles with wgmma.
  source: "PTX ISA 9.4, Async Proxy; mbarrier; wgmma.mma_async (reads shared memory through the async proxy); docs/model.md#a1"
  arch: sm_90a
  memory:
    bar: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    a: {space: shared, owner: gpu0.cta0, size: 16}
    b: {space: shared, owner: gpu0.cta0, size: 16}
    g: {size: 128, init: 1}
    tmap: {tensormap: {0: g}, box: 16, strides: [16]}
  threads:
    C:
      at: gpu0.cta0.warp0
      code:
        - mbarrier.try_wait.parity.shared::cta.b64 p0, [bar], 0 == 1
        - fence.proxy.async.shared::cta
        - wgmma.fence.sync.aligned
        - wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {d0}, [a], [b], pz, 1, 1, 0, 0
        - wgmma.commit_group.sync.aligned
        - wgmma.wait_group.sync.aligned 0
    P:
      at: gpu0.cta0.warp4
      code:
        - st.shared::cta.b32 [a], 119
        - st.shared::cta.b32 [b], 119
        - mbarrier.arrive.shared::cta.b64 _, [bar]
  expect:
    undefined: false
"""


def test_recheck_keeps_memory_sizes_and_confirms_the_mixed_size_race(model, tmp_path):
    """The TileLang skeleton's finding: with the consumer's fence stripped, the 4-byte generic
    store races with the 16-byte wgmma read (MixedSizeRace, what `ptxmc run` reports). The
    from-scratch re-check writes the audited test as YAML: it dropped `size:`, so the re-loaded
    test had 4-byte cells, no race, and the re-check said "run" (NOT confirmed)."""
    from checker.api import run
    from checker.repair.yamlpatch import render_test

    path = tmp_path / "ws.yaml"
    path.write_text(WS_GEMM)
    [t] = load_paths([str(path)])
    [back] = load_text(render_test(t, t.name), str(path))
    assert back.memory == t.memory and back.threads == t.threads
    unfenced = tmp_path / "unfenced.yaml"
    unfenced.write_text(WS_GEMM.replace("        - fence.proxy.async.shared::cta\n", ""))
    [res] = run([str(unfenced)], jobs=0)
    assert res.status == "fail" and {u.flag for u in res.undefined} == {"MixedSizeRace"}
    ta = audit_test(t, "tilelang", model, readings=("default",), budget=30.0)
    [(_, j)] = ta.by_reading
    assert j.status == "findings", (j.status, j.message)
    (f,) = j.findings
    assert f.kind == "under" and f.what == "undefined behaviour (MixedSizeRace)"
    assert f.recheck == "confirmed", f.recheck


def test_tilelang_skeleton_finding_carries_its_repair(model, tmp_path):
    """The real TileLang skeleton (`ptxmc extract` of tilelang_ws_gemm.sm90a.ptx), with the
    consumer's three fences that repair it: the pass's rule strips them and inserts nothing, and
    the finding carries the least repair -- three `fence.proxy.async.shared::cta`, one per tile
    handoff, each placed by the PTX line the skeleton names. Its repair search used to end at the
    budget with "no repair found" (checker/repair/problem.py says why)."""
    import re

    from checker.extract.api import extract_file

    [x] = extract_file(str(ROOT / "examples" / "kernels" / "tilelang" / "tilelang_ws_gemm.sm90a.ptx"),
                       out_dir=str(tmp_path / "skel"))
    lines, role = [], None
    for ln in Path(x.path).read_text().splitlines():
        m = re.match(r"    (\w+):$", ln)
        role = m.group(1) if m else role
        lines.append(ln)
        if role == "w0_3" and "mbarrier.try_wait.parity" in ln:
            lines.append("        " + CTA_FENCE)
    fenced = tmp_path / "consumer-fenced.yaml"
    fenced.write_text("\n".join(lines) + "\n")
    [t] = load_paths([str(fenced)])
    # the budget is a safety net for a loaded machine: the default (60 s) is what the answer needs
    ta = audit_test(t, "tilelang", model, readings=("default",), budget=900.0)
    [(_, j)] = ta.by_reading
    assert j.status == "findings", (j.status, j.message)
    assert len(j.applied.removed) == 3 and j.applied.insertions == ()      # "inserted: nothing"
    (f,) = j.findings
    assert f.kind == "under" and f.what == "undefined behaviour (MixedSizeRace)"
    assert f.repair_cost == 6 and len(f.repair) == 3, f.repair
    ptx = (ROOT / "examples" / "kernels" / "tilelang" / "tilelang_ws_gemm.sm90a.ptx").read_text().splitlines()
    for r in f.repair:
        assert r.startswith(CTA_FENCE + " ("), r
        m = re.search(r"// L(\d+): (\S+)", r)
        assert m, r
        assert ptx[int(m.group(1)) - 1].split()[0].rstrip(";") == m.group(2).rstrip(")"), (r, ptx[int(m.group(1)) - 1])
    assert f.recheck == "confirmed", f.recheck
