"""Proxies in the model (issue 3): fence-minimality of the tensor-map life cycle and async-fence
suites (every fence of a forbidden test is needed), explanations that name the axiom and the
fence, the strict-cta option, ISCA'22 notes, the lowering of proxy and bulk-copy instructions,
and the async-completion trap (completion does not order the issuing thread's earlier
instructions)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from checker import LITMUS_DIR
from checker.ast import Instr, LitmusTest
from checker.cat.concrete import ConcreteAlgebra
from checker.cat.interp import evaluate
from checker.verdict.check import check_test
from checker.errors import LitmusError
from checker.front.litmus import load_file, load_text
from checker.model import relations
from checker.isa.registry import lower
from checker.isa.registry import parse_instr

PROXY = LITMUS_DIR / "proxy"
# Every forbidden test in these files is fence-minimal (issue 3, "Done when").
MINIMAL_FILES = ("tensormap-lifecycle.yaml", "async-fences.yaml")


def _tests(name: str) -> list[LitmusTest]:
    items = load_file(PROXY / name)
    assert not [i for i in items if isinstance(i, LitmusError)]
    return items


def _forbidden_tests():
    return [t for f in MINIMAL_FILES for t in _tests(f)
            if any(e.kind == "forbidden" for e in t.expectations)]


def _is_fence(i: Instr) -> bool:
    return i.op in ("fence", "membar") or (i.op == "tensormap" and i.qualifiers[0] == "cp_fenceproxy")


def _without(test: LitmusTest, ti: int, k: int) -> LitmusTest:
    """The test with instruction k of thread ti removed -- or, for tensormap.cp_fenceproxy (a
    fused copy and proxy release fence), with its fence removed: the plain generic copy."""
    th = test.threads[ti]
    ins = th.code[k]
    names = frozenset(m.name for m in test.memory)
    repl: tuple[Instr, ...] = ()
    if ins.op == "tensormap":
        dst, src = ins.operands[0].base, ins.operands[1].base
        repl = (parse_instr(f"ld.shared::cta rmut, [{src}]", ins.where, names),
                parse_instr(f"st.global [{dst}], rmut", ins.where, names))
    code = th.code[:k] + repl + th.code[k + 1:]
    threads = test.threads[:ti] + (replace(th, code=code),) + test.threads[ti + 1:]
    return replace(test, threads=threads, expectations=tuple(
        replace(e, kind="allowed") for e in test.expectations if e.kind == "forbidden"))


def _mutants(test: LitmusTest):
    for ti, th in enumerate(test.threads):
        for k, ins in enumerate(th.code):
            if _is_fence(ins):
                yield f"{th.name}: {ins.text}", _without(test, ti, k)


@pytest.mark.parametrize("test", _forbidden_tests(), ids=lambda t: t.name)
def test_removing_any_fence_allows_the_forbidden_outcome(test, ptx_model):
    mutants = list(_mutants(test))
    assert mutants, f"{test.name}: a forbidden test of a fence-minimal suite has no fence"
    assert check_test(test, ptx_model).status == "pass"
    for what, mutant in mutants:
        r = check_test(mutant, ptx_model)
        # without the fence the outcome is allowed -- or the program is undefined (issue 4: an
        # access it no longer orders is in flight with an asynchronous copy), which shows the
        # fence is needed too
        assert r.status == "pass" or r.undefined, (
            f"{test.name}: without {what} the outcome stays forbidden: "
            + "; ".join(c.text for c in r.conditions if c.met is False))


def test_the_minimal_suites_cover_the_life_cycle_and_async_fences():
    names = [t.name for t in _forbidden_tests()]
    for prefix in ("TM-LC+cp_fenceproxy", "TM-LC+replace.global", "P14", "TileLang-store", "I15",
                   "async-acquire-uni", "P1-fence-before-barrier", "P6", "P5"):
        assert any(n.startswith(prefix) for n in names), prefix


# -- explanations --------------------------------------------------------------------------------

@pytest.mark.parametrize("spec, cond, fence, case", [
    ("async-fences.yaml::TileLang-store+fence.proxy.async", "g=0", "fence.proxy.async", "destination side"),
    ("tensormap-lifecycle.yaml::TM-LC+replace.global+release+acquire", "d=10",
     "fence.proxy.tensormap::generic.acquire.gpu", "destination side"),
    ("CoWR-proxies.yaml::CoWR+async+gen+wait0", "P0:r0=0", "completion + implicit proxy fence", "source side"),
    ("aliases.yaml::D7-CoWR-aliases+fence.proxy.alias", "T1:r1=0", "fence.proxy.alias", "alias proxy fence"),
])
def test_check_names_the_axiom_and_the_fence(spec, cond, fence, case, capsys):
    from checker.cli import main

    assert main(["check", str(PROXY / spec), cond]) == 0
    out = capsys.readouterr().out
    assert "Forbidden" in out and "violates Causality" in out
    assert "fences on the causality path" in out and fence in out
    assert case in out


def test_check_names_the_fence_the_outcome_needs(capsys):
    from checker.cli import main

    main(["check", str(PROXY / "tensormap-lifecycle.yaml") + "::TM-LC+cp_fenceproxy+otherCTA+release+acquire",
          "d=10"])
    out = capsys.readouterr().out
    need = out.split("Synchronization it needs")[1].split("A candidate")[0]
    assert "tensormap.cp_fenceproxy" in need and "fence.proxy.tensormap::generic.acquire.gpu" in need


# -- model option strict-cta (A2) ----------------------------------------------------------------

STRICT_FLIPS = {
    "A2-remote-write+fence-in-destination-CTA": ("forbidden", "allowed"),
    "A2-remote-write+fence-in-issuer-CTA": ("allowed", "forbidden"),
    "A2-remote-write+uni-release-in-destination-CTA": ("forbidden", "allowed"),
    "A10-read-release-not-cumulative+shared_cta-release": ("forbidden", "allowed"),
    "I15-read-release+read-release+acquire": ("forbidden", "forbidden"),
}


@pytest.mark.parametrize("name", sorted(STRICT_FLIPS))
def test_strict_cta_changes_the_performing_cta(name, ptx_model):
    test = next(t for t in _tests("async-fences.yaml") if t.name == name)
    cond = next(e for e in test.expectations if e.text in ("s0=1", "s0=5", "P0:r0=1")).cond
    bare = replace(test, expectations=())
    for options, want in zip((frozenset(), frozenset({"strict-cta"})), STRICT_FLIPS[name]):
        probe = replace(bare, expectations=(replace(test.expectations[0], kind=want, cond=cond),))
        r = check_test(probe, ptx_model, options=options)
        assert r.status == "pass", (name, sorted(options), want)


# -- ISCA'22 hypothetical proxies are marked -----------------------------------------------------

def test_isca22_proxies_carry_a_note(ptx_model):
    tests = {t.name: t for t in _tests("CoWR-proxies.yaml")}
    r = check_test(tests["CoWR+gen+texture+fence.proxy.texture"], ptx_model)
    assert r.status == "pass"
    assert len(r.notes) == 1 and "ISCA'22 hypothetical" in r.notes[0]
    assert "texture: fence.proxy.texture, tld" in r.notes[0]
    r = check_test(tests["CoWR+gen+async+fence.proxy.async"], ptx_model)
    assert r.notes == ()


def test_every_test_using_a_hypothetical_proxy_is_noted(ptx_model):
    for f in sorted(PROXY.glob("*.yaml")):
        for t in load_file(f):
            uses = any(i.op in ("tld", "suld", "sust", "ldc") or
                       (i.op == "fence" and {"texture", "surface", "constant"} & set(i.qualifiers))
                       for th in t.threads for i in th.code)
            assert bool(lower(t).notes) == uses, t.name


# -- lowering ------------------------------------------------------------------------------------

def _one(text: str) -> LitmusTest:
    items = load_text(text)
    assert len(items) == 1 and not isinstance(items[0], LitmusError), items
    return items[0]


BULK = """
name: t
memory:
  s: {space: shared, owner: gpu0.cta0, init: 1}
threads:
  P0:
    at: gpu0.cta0
    code:
      - st.global [x], 1
      - cp.async.bulk.global.shared::cta.bulk_group [g], [s], 16
      - cp.async.bulk.commit_group
      - cp.async.bulk.wait_group${read} 0
      - ld.global r0, [g]
"""


@pytest.mark.parametrize("read", ["", ".read"])
def test_bulk_copy_events(read):
    es = lower(_one(BULK.replace("${read}", read)))
    ev = {e.label.split("[")[-1].rstrip("]") if "[" in e.label else e.label: e.eid for e in es.events}
    issue, rd, wr = ev["issue"], ev["async read s"], ev["async write g"]
    wait = next(e.eid for e in es.events if e.kind == "C")
    po = es.relations["po"]
    assert not any(rd in p or wr in p for p in po), "async operations are not in program order"
    assert {(issue, rd), (issue, wr), (rd, wr)} <= es.relations["aso"]
    assert {"ASYNC", "WEAK"} <= es.events[rd].tags and "GEN" not in es.events[rd].tags
    done = {rd} if read else {rd, wr}
    assert {a for a, b in es.relations["acomp"] if b == wait} == done
    assert {b for a, b in es.relations["pfcover"] if a == wait} == done
    assert {"PF_ASYNC", "PF_TMAP"} <= es.events[wait].tags


def test_tensor_copy_reads_the_map_and_every_buffer():
    es = lower(_one("""
name: t
memory:
  tm: {tensormap: {0: gA, 1: gB}, init: 1}
  gA: 0
  gB: 0
  d: {space: shared, owner: gpu0.cta0}
  mb: {space: shared, owner: gpu0.cta0}
threads:
  P0:
    at: gpu0.cta0
    code:
      - cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes [d], [tm, {0, 0}], [mb]
"""))
    tm = [e for e in es.events if "TMAP" in e.tags]
    assert len(tm) == 1 and tm[0].loc == "tm" and tm[0].kind == "R"
    assert sorted(e.loc for e in es.events if "ASYNC" in e.tags and e.kind == "R") == ["gA", "gB"]
    (w,) = [e for e in es.events if "ASYNC" in e.tags and e.kind == "W"]
    assert all((r.eid, w.eid) in es.relations["aso"] for r in es.events
               if r.kind == "R" and r.thread and "MB" not in r.tags)


def test_remote_async_write_is_performed_by_the_owner_cta():
    es = lower(_one("""
name: t
memory:
  s1: {space: shared, owner: gpu0.cluster0.cta1}
  mb: {space: shared, owner: gpu0.cluster0.cta1}
threads:
  P0:
    at: gpu0.cluster0.cta0
    code:
      - fence.proxy.async
      - cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [s1], [g], 16, [mb]
  P1:
    at: gpu0.cluster0.cta1
    code:
      - fence.proxy.async
"""))
    f0, f1 = (e.eid for e in es.events if e.kind == "F")
    (w,) = [e.eid for e in es.events if "ASYNC" in e.tags and e.kind == "W"]
    (r,) = [e.eid for e in es.events if "ASYNC" in e.tags and e.kind == "R"]
    assert (f1, w) in es.relations["pscta"] and (f0, w) not in es.relations["pscta"]     # A2
    assert (f0, w) in es.relations["scta"] and (f0, r) in es.relations["pscta"]          # strict-cta view


@pytest.mark.parametrize("fence, space, covered", [
    ("fence.proxy.async", "global", True),
    ("fence.proxy.async.global", "global", True),
    ("fence.proxy.async.global", "shared", False),
    ("fence.proxy.async.shared::cta", "shared", True),
    ("fence.proxy.async.shared::cta", "global", False),
    ("fence.proxy.async.shared::cluster", "shared", True),
    ("fence.proxy.alias", "global", False),
])
def test_proxy_fence_restrictions(fence, space, covered):
    loc = "s" if space == "shared" else "g"
    es = lower(_one(f"""
name: t
memory:
  s: {{space: shared, owner: gpu0.cta0}}
threads:
  P0:
    at: gpu0.cta0
    code:
      - {fence}
      - ld.weak.{'shared::cta' if space == 'shared' else 'global'} r0, [{loc}]
"""))
    f = next(e.eid for e in es.events if e.kind == "F")
    r = next(e.eid for e in es.events if e.kind == "R" and e.thread)
    assert ((f, r) in es.relations["pfcover"]) == covered


@pytest.mark.parametrize("code, msg", [
    ("ld.global r0, [tx]", "texture view"),
    ("tld r0, [x]", "is not a texture view"),
    ("sust [tx], 1", "is the texture view of 'x'"),
    ("cp.async.bulk.tensor.1d.shared::cta.global.tile.mbarrier::complete_tx::bytes [d], [x, {0}], [mb]",
     "is not a tensor map"),
    ("cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [x], [d], 16, [mb]", "must be shared memory"),
    ("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [d], [d2], 16, [mb]",
     "strictly remote"),
    ("fence.proxy.tensormap::generic.acquire.gpu [d], 128", "must be global memory"),
    ("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [d], [d2], 128",
     "copies from .shared::cta to .global"),
])
def test_lowering_errors(code, msg):
    t = _one(f"""
name: t
memory:
  x: 0
  tx: {{texture_of: x}}
  d: {{space: shared, owner: gpu0.cta0}}
  d2: {{space: shared, owner: gpu0.cta0}}
  mb: {{space: shared, owner: gpu0.cta0}}
threads:
  P0:
    at: gpu0.cta0
    code:
      - {code}
""")
    with pytest.raises(LitmusError, match=msg):
        lower(t)


@pytest.mark.parametrize("dst", ["shared::cta", "shared::cluster"])
def test_tensor_copy_destination_space(dst):
    text = f"""
name: t
memory:
  tm: {{tensormap: {{0: g}}, init: 0}}
  g: 1
  s1: {{space: shared, owner: gpu0.cluster0.cta1}}
  mb: {{space: shared, owner: gpu0.cluster0.cta1}}
threads:
  P0:
    at: gpu0.cluster0.cta0
    code:
      - cp.async.bulk.tensor.1d.{dst}.global.tile.mbarrier::complete_tx::bytes [s1], [tm, {{0}}], [mb]
"""
    if dst == "shared::cta":
        (err,) = load_text(text)
        assert isinstance(err, LitmusError) and "access it with .shared::cluster" in str(err)
    else:
        es = lower(_one(text))
        (w,) = [e.eid for e in es.events if "ASYNC" in e.tags and e.kind == "W"]
        issue = next(e.eid for e in es.events if e.kind == "I")
        assert (issue, w) not in es.relations["pscta"]      # A2: performed by CTA 1


@pytest.mark.parametrize("text, msg", [
    ("fence.proxy.alias.release.gpu", "fence.proxy.alias is bi-directional"),
    ("fence.proxy.tensormap::generic.acquire.gpu [x], 64", "must be 128"),
    ("fence.proxy.tensormap::generic.release", "needs .release or .acquire and a scope"),
    ("fence.proxy.async::generic.release.sync_restrict::shared::cluster.cluster", "fence.proxy.async::generic takes"),
    ("fence.proxy.async.shared", "write .shared::cta or .shared::cluster"),
    ("cp.async.bulk.global.shared::cta.bulk_group [g], [s], 10", "multiple of 16"),
    ("cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes.multicast::cluster [s], [g], 16, [mb], 3",
     "goes with the .shared::cluster.global direction only"),
    ("cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [tm, {0}, 1], [s]", "malformed address"),
    ("cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes [s], [tm, {0}], [mb]",
     "takes 2 coordinates"),
    ("tensormap.replace.tile.global_address.global.b1024.b32 [tm], 1", "takes .b64"),
    ("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [g], [s], 64",
     "must be 128"),
])
def test_proxy_syntax_errors(text, msg):
    with pytest.raises(LitmusError, match=msg):
        parse_instr(text)


# -- the async-completion trap -------------------------------------------------------------------

def test_completion_does_not_order_the_issuers_earlier_instructions(ptx_model):
    """PTX ISA 8.9.1.1: the complete-tx of a bulk copy "is ordered only with respect to the memory
    operations performed by the same asynchronous instruction, and in particular it does not
    transitively establish ordering with respect to prior instructions from the issuing thread".
    On a structure where X precedes the issue, the copy's write A is completed by an event C of
    another thread (as an mbarrier complete-tx will be), bc holds X->A and A->C but not X->C."""
    es = lower(_one("""
name: t
memory:
  s: {space: shared, owner: gpu0.cta0}
threads:
  P0:
    at: gpu0.cta0
    code:
      - st.global [x], 1
      - cp.async.bulk.global.shared::cta.bulk_group [g], [s], 16
  P1:
    at: gpu0.cta1
    code:
      - fence.sc.gpu
"""))
    x = next(e.eid for e in es.events if e.thread == "P0" and e.kind == "W" and "GEN" in e.tags)
    a = next(e.eid for e in es.events if "ASYNC" in e.tags and e.kind == "W")
    c = next(e.eid for e in es.events if e.thread == "P1")
    rels = dict(es.relations)
    rels["acomp"] = frozenset({(a, c)})
    es = replace(es, relations=rels)
    base = es.base()
    base["rf"] = ("rel", frozenset((0, r) for r in es.reads if es.events[r].loc == es.events[0].loc) |
                  frozenset((w, r) for r in es.reads for w in es.rf_may[r][:1]))
    base["co"] = ("rel", frozenset())
    base["fsc"] = ("rel", frozenset())
    for name in relations.VALUE_SETS:                # no value-dependent undefined behaviour
        base[name] = ("set", frozenset())
    env = evaluate(ptx_model, base, ConcreteAlgebra(range(len(es.events)))).env
    bc = env["bc"][1]
    assert (x, a) in bc and (a, c) in bc
    assert (x, c) not in bc


# -- option proxy-fence-any-cta: the other reading of the placement rule ---------------------------

def test_proxy_fence_any_cta_only_strengthens_and_drops_the_placement_rule(ptx_model):
    """Under the option a written proxy fence orders the accesses it covers in any CTA: verdicts can
    only go from allowed to forbidden, and the writer-CTA fence of a remote write now orders it
    before the owning CTA's async access (A2-remote-write+fence-in-issuer-CTA)."""
    from checker.front.litmus import load_paths

    tests = [t for t in load_paths([str(LITMUS_DIR)]) if not isinstance(t, LitmusError) and t.expectations]
    flipped = []
    for t in tests:
        a = check_test(t, ptx_model)
        b = check_test(t, ptx_model, options=frozenset({"proxy-fence-any-cta"}))
        for ca, cb in zip(a.conditions, b.conditions):
            assert not (ca.allowed is False and cb.allowed), (t.name, ca.text)
            if ca.allowed and cb.allowed is False:
                flipped.append(t.name)
        if b.undefined and not a.undefined:
            pytest.fail(f"{t.name}: the option made the program undefined")
    assert "A2-remote-write+fence-in-issuer-CTA" in flipped
    assert "MP+gen-async+otherCTA+writer-fence" in flipped


# -- option tensormap-pair (A12): a release and an acquire tensormap proxy fence ------------------

# test -> (verdict of its stale-map condition by default, under tensormap-pair)
PAIR_FLIPS = {
    "litmus/proxy/tensormap.yaml::I1-tensormap-fence-example+release+acquire": ("d=10", "forbidden", "forbidden"),
    "litmus/proxy/tensormap.yaml::I1-tensormap-fence-example+acquire-only": ("d=10", "forbidden", "allowed"),
    "litmus/proxy/tensormap.yaml::I1-tensormap-fence-example+release-only": ("d=10", "forbidden", "allowed"),
    "litmus/proxy/tensormap.yaml::I2-cp_fenceproxy-example+example": ("d=10", "forbidden", "forbidden"),
    "litmus/proxy/tensormap-lifecycle.yaml::TM-LC+replace.global+plain-release+acquire": ("d=10", "forbidden", "allowed"),
    "litmus/real-ptx/kernels.yaml::RP-kernel-tensormap-acquire": ("d=10", "forbidden", "forbidden"),
    "litmus/proxy/tensormap-lifecycle.yaml::TM-LC+cp_fenceproxy+sameCTA+plain-acquire": ("d=10", "forbidden", "allowed"),
    "litmus/proxy/tensormap-lifecycle.yaml::P14-host-written-map+acquire.sys": ("d=10", "forbidden", "forbidden"),
    "litmus/patterns/P14-tmap-acquire.yaml::P14-tmapacquire-fixed": ("P1:r1=1", "forbidden", "allowed"),
    # the pair synchronizes at a scope that holds both threads (the guide: "at the right scope")
    "litmus/proxy/tensormap.yaml::TM-pair-scope+gpu+gpu": ("d=10", "forbidden", "forbidden"),
    "litmus/proxy/tensormap.yaml::TM-pair-scope+cta+cta": ("d=10", "forbidden", "allowed"),
    "litmus/proxy/tensormap.yaml::TM-pair-scope+gpu+cta": ("d=10", "forbidden", "allowed"),
    "litmus/proxy/tensormap.yaml::TM-pair-scope+cta+gpu": ("d=10", "forbidden", "allowed"),
    "litmus/proxy/tensormap.yaml::TM-pair-kernel-scope+gpu": ("d=10", "forbidden", "forbidden"),
    "litmus/proxy/tensormap.yaml::TM-pair-kernel-scope+cta": ("d=10", "forbidden", "allowed"),
}


@pytest.mark.parametrize("engine", ["z3", "brute"])
@pytest.mark.parametrize("spec", sorted(PAIR_FLIPS))
def test_tensormap_pair_needs_a_release_and_an_acquire(spec, engine, ptx_model):
    """A12, option tensormap-pair: one uni-directional tensormap proxy fence no longer carries a
    generic write of the map to the tensormap proxy; a covering .release fence followed by a
    .acquire one in the reading CTA does, and so does the acquire alone after a kernel boundary
    (API synchronization). Both engines agree."""
    from checker.front.litmus import load_paths

    path, name = spec.split("::")
    [test] = [t for t in load_paths([str(LITMUS_DIR.parent / path)]) if t.name == name]
    cond_text, default, paired = PAIR_FLIPS[spec]
    cond = next(e for e in test.expectations if e.text == cond_text).cond
    for options, want in ((frozenset(), default), (frozenset({"tensormap-pair"}), paired)):
        probe = replace(test, expect_undefined=None,
                        expectations=(replace(test.expectations[0], kind=want, cond=cond, text=cond_text),))
        r = check_test(probe, ptx_model, options=options, engine=engine)
        assert r.status == "pass", (name, sorted(options), want, r.message)


def test_tensormap_pair_only_weakens(ptx_model):
    """The option removes orderings and adds none: over the proxy suites no verdict goes from
    allowed to forbidden, and some go the other way."""
    from checker.front.litmus import load_paths

    tests = [t for t in load_paths([str(PROXY)]) if not isinstance(t, LitmusError) and t.expectations]
    weakened = []
    for t in tests:
        a = check_test(t, ptx_model)
        b = check_test(t, ptx_model, options=frozenset({"tensormap-pair"}))
        for ca, cb in zip(a.conditions, b.conditions):
            assert not (ca.allowed and cb.allowed is False), (t.name, ca.text)
            if ca.allowed is False and cb.allowed:
                weakened.append(t.name)
        assert bool(a.undefined) == bool(b.undefined), t.name
    assert "I1-tensormap-fence-example+acquire-only" in weakened


@pytest.mark.parametrize("variant,default,option", [("nofence", "allowed", "forbidden"),
                                                    ("fence.proxy.async", "forbidden", "forbidden")])
def test_inval_then_copy_needs_a_proxy_fence_unless_inval_no_proxy(variant, default, option, ptx_model):
    """A7, "Reusing an mbarrier's bytes": mbarrier.inval is a generic-proxy write of the object's
    bytes, so a bulk copy into them is ordered after it only through fence.proxy.async (the inval's
    0 may be what the load reads); under --option inval-no-proxy the inval is ordered before the
    copy by base causality alone, and the fence changes nothing."""
    from checker.front.litmus import load_paths

    name = f"MbarrierLife+inval-then-copy+{variant}"
    [test] = [t for t in load_paths([str(LITMUS_DIR / "async" / "mbarrier-lifecycle.yaml")]) if t.name == name]
    cond = next(e for e in test.expectations if e.text in ("P0:r0=0",)).cond
    for options, want in ((frozenset(), default), (frozenset({"inval-no-proxy"}), option)):
        probe = replace(test, expect_undefined=None,
                        expectations=(replace(test.expectations[0], kind=want, cond=cond, text="P0:r0=0"),))
        r = check_test(probe, ptx_model, options=options)
        assert r.status == "pass", (name, sorted(options), want, r.message)
