"""Hardware harness, without a toolchain or a GPU: layout, outcome space, code generation, the
unsupported list, device configurations."""
from __future__ import annotations

import re

import pytest

from checker.errors import HarnessError
from checker.harness.codegen import generate, target_for, unsupported
from checker.harness.controls import build_test, controls, is_control
from checker.harness.devices import DeviceConfig, device_names, load_device
from checker.harness.layout import make_layout
from checker.harness.space import Var, eval_cond, outcome_space

MP = build_test(
    "MP+rel+acq",
    {"P0": ("gpu0.cta0", ["st.weak.global [x], 1", "st.release.gpu.global [flag], 1"]),
     "P1": ("gpu0.cta1", ["ld.acquire.gpu.global r0, [flag]", "ld.weak.global r1, [x]"])},
    forbidden=["P1:r0=1 /\\ P1:r1=0"], allowed=["P1:r0=0 /\\ P1:r1=0"])

SAMEWARP = build_test(
    "samewarp+bar",
    {"P0": ("gpu0.cta0", ["st.weak.shared [s], 1", "bar.sync 0"]),
     "P1": ("gpu0.cta0", ["bar.sync 0", "ld.weak.shared r0, [s]"])},
    memory={"s": {"space": "shared", "owner": "gpu0.cta0"}}, forbidden=["P1:r0=0"])

CLUSTER = build_test(
    "cluster+await",
    {"P0": ("gpu0.cluster0.cta0", ["st.weak.shared::cluster [s], 1", "fence.acq_rel.cluster",
                                    "st.relaxed.cluster.global [f], 1"]),
     "P1": ("gpu0.cluster0.cta1", ["ld.acquire.cluster.global r0, [f] == 1", "ld.weak.shared r1, [s]"])},
    memory={"s": {"space": "shared", "owner": "gpu0.cluster0.cta1"}}, forbidden=["P1:r1=0"])


def marked_lines(source: str) -> list[str]:
    return [l for l in source.splitlines() if "// @ptxmc " in l]


# -- layout ------------------------------------------------------------------------------------

def test_layout_separate_ctas_pack_32_instances_per_warp():
    lay = make_layout(MP)
    assert (lay.cluster, lay.clustered, lay.units, lay.warps, lay.per_warp) == (1, False, 2, 1, 32)
    assert [(s.thread, s.role_cta, s.warp, s.lane) for s in lay.slots] == [("P0", 0, 0, 0), ("P1", 1, 0, 0)]


def test_layout_same_warp_shares_lanes():
    lay = make_layout(SAMEWARP)
    assert lay.per_warp == 16 and lay.threads_in(0, 0) == 2
    assert [s.lane for s in lay.slots] == [0, 1]


def test_layout_clusters():
    lay = make_layout(CLUSTER)
    assert (lay.cluster, lay.clustered, lay.units) == (2, True, 1)
    assert [lay.rank(s.role_cta) for s in lay.slots] == [0, 1]


# -- outcome space -------------------------------------------------------------------------------

def test_outcome_space_and_decoding_round_trip():
    space = outcome_space(MP)
    assert space.vars == (Var("r0", "P1"), Var("r1", "P1"))
    assert space.domains == ((0, 1), (0, 1))
    assert space.size == 4
    for k in range(space.size):
        outcome = space.decode(k)
        assert space.index(tuple(v for _, v in outcome)) == k
    assert space.decode(2) == (("P1:r0", 1), ("P1:r1", 0))    # last variable varies fastest
    assert space.index((5, 0)) is None                        # outside: the `other` bucket
    with pytest.raises(HarnessError):
        space.decode(4)


def test_value_analysis_follows_dependencies_and_rmw_chains():
    t = build_test(
        "deps", {"P0": ("gpu0.cta0", ["ld.relaxed.gpu.global r0, [x]", "add r1, r0, 10", "st.relaxed.gpu.global [y], r1"]),
                 "P1": ("gpu0.cta1", ["atom.global.add r0, [x], 2", "atom.global.add r1, [x], 3", "ld.global r2, [y]"])},
        allowed=["P0:r0=5 /\\ P1:r2=15 /\\ x=5"])
    space = outcome_space(t)
    dom = dict(zip(space.names, space.domains))
    # x: 0, 0+2, 0+3, (0+2)+3 -- each atom adds once (no 2+2, 5+3...); coherence is not
    # modelled, so 0+3 stays in: the domain over-approximates, never misses a value.
    assert dom["P0:r0"] == (0, 2, 3, 5)
    assert dom["x"] == (0, 2, 3, 5)
    assert dom["P1:r2"] == (0, 10, 12, 13, 15)


def test_await_restricts_the_register():
    dom = dict(zip(outcome_space(CLUSTER).names, outcome_space(CLUSTER).domains))
    assert dom == {"P1:r1": (0, 1)}
    t = build_test("aw", {"P0": ("gpu0.cta0", ["st.relaxed.gpu.global [f], 2"]),
                          "P1": ("gpu0.cta1", ["ld.acquire.gpu.global r0, [f] == 2"])}, allowed=["P1:r0=2"])
    assert outcome_space(t).domains == ((2,),)


def test_eval_cond_wraps_like_32_bit_registers():
    t = build_test("n", {"P0": ("gpu0.cta0", ["mov r0, 1"])}, allowed=["P0:r0=-1", "P0:r0=1 /\\ ~(x=1)"])
    neg, conj = (e.cond for e in t.expectations)
    assert eval_cond(neg, {"P0:r0": 2**32 - 1})
    assert eval_cond(conj, {"P0:r0": 1}) and not eval_cond(conj, {"P0:r0": 1, "x": 1})


def test_eval_cond_compares_two_observables():
    """Issue 34 item 4: `P0:r0=P1:r0` and `P0:r0=x` in the harness's space and evaluation."""
    t = build_test("two", {"P0": ("gpu0.cta0", ["ld.global r0, [x]"]), "P1": ("gpu0.cta1", ["ld.global r0, [x]"])},
                   allowed=["P0:r0=P1:r0", "P0:r0!=x"])
    same, differ = (e.cond for e in t.expectations)
    assert outcome_space(t).names == ("P0:r0", "P1:r0", "x")
    assert eval_cond(same, {"P0:r0": 1, "P1:r0": 1}) and not eval_cond(same, {"P0:r0": 1})
    assert eval_cond(same, {"P0:r0": 2**32 - 1, "P1:r0": -1})
    assert eval_cond(differ, {"P0:r0": 1}) and not eval_cond(differ, {"P0:r0": 1, "x": 1})


def test_no_expectation_observes_every_register_and_location():
    t = build_test("free", {"P0": ("gpu0.cta0", ["ld.global r0, [x]", "st.global [y], 1"])},
                   memory={"x": {"init": 3}, "y": {}})
    assert outcome_space(t).names == ("P0:r0", "x", "y")


# -- code generation -------------------------------------------------------------------------

def test_generate_mp_has_one_marked_line_per_instruction():
    prog = generate(MP)
    assert prog.target == "sm_90a"
    lines = marked_lines(prog.source)
    assert len(lines) == 4
    assert 'st.release.gpu.global.b32 [%0], %1;' in lines[1]
    assert 'ld.weak.global.b32 %0, [%1];' in lines[3]
    assert prog.instr_lines()[("P1", 1)] == prog.source.splitlines().index(lines[3]) + 1
    assert "__cluster_dims__" not in prog.source
    assert "$" not in re.sub(r"//.*", "", prog.source)       # every template field filled


def test_generate_is_deterministic():
    assert generate(MP).source == generate(MP).source


def test_clusters_awaits_and_remote_shared_memory():
    src = generate(CLUSTER).source
    assert "__cluster_dims__(2, 1, 1)" in src
    assert "to_cluster((smem + (0 * PER_WARP + slot) * SLOT_WORDS), 1u)" in src   # owner has rank 1
    assert re.search(r"for \(unsigned n_ = 0;; n_\+\+\) \{   // await r0 == 1", src)
    assert "if (spin_give_up(n_, since_)) { timed_out = 1; break; }" in src   # polls and %globaltimer (B4)
    assert "barrier.cluster.arrive.release; barrier.cluster.wait.acquire;" in src


def test_same_warp_barrier_becomes_non_aligned_with_hardware_count():
    prog = generate(SAMEWARP)
    lines = marked_lines(prog.source)
    assert 'barrier.sync 0, 32;' in lines[1] and 'barrier.sync 0, 32;' in lines[2]
    assert any("emitted as barrier.sync" in n for n in prog.notes)
    t = build_test("warps", {"P0": ("gpu0.cta0.warp0", ["bar.arrive 1, 2"]),
                             "P1": ("gpu0.cta0.warp2", ["bar.sync 1, 2"])})
    lines = marked_lines(generate(t).source)
    assert 'bar.arrive 1, 64;' in lines[0] and 'bar.sync 1, 64;' in lines[1]


def test_bulk_copy_sizes_are_scaled_to_cells():
    t = build_test(
        "bulk", {"P0": ("gpu0.cta0", ["mbarrier.arrive.expect_tx.shared::cta.b64 _, [mb], 4",
                                      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [s], [g], 4, [mb]",
                                      "mbarrier.try_wait.parity.shared::cta.b64 p, [mb], 0 == 1",
                                      "ld.weak.shared r0, [s]"])},
        memory={"g": {"init": 1}, "s": {"space": "shared", "owner": "gpu0.cta0"},
                "mb": {"space": "shared", "owner": "gpu0.cta0", "mbarrier": {"count": 1}}},
        forbidden=["P0:r0=0"])
    src = generate(t).source
    lines = marked_lines(src)
    assert "_, [%0], 16;" in lines[0] and "[%1], 16, [%2];" in lines[1]
    assert "selp.u32 %0, 1, 0, P;" in lines[2]
    assert "mbarrier.try_wait.parity.shared::cta.b64 P, [%1], 0" in src        # epilogue waits for the copy


def test_virtual_aliases_are_other_mappings_of_the_same_cell():
    t = build_test("alias", {"P0": ("gpu0.cta0", ["st.global [x], 1", "fence.proxy.alias", "ld.global r0, [y]",
                                                  "ld.global r1, [z]"])},
                   memory={"x": {}, "y": {"alias_of": "x"}, "z": {"alias_of": "y"}},
                   allowed=["P0:r0=1 /\\ P0:r1=1 /\\ y=1"])
    prog = generate(t)
    assert "#define N_MAPS 3" in prog.source and "#define N_GLOBAL 1" in prog.source
    assert "A_y_global = to_global(mapped(p, 1, gcell(p, 0, inst)));" in prog.source
    assert "A_z_global = to_global(mapped(p, 2, gcell(p, 0, inst)));" in prog.source
    assert dict(zip(prog.space.names, prog.space.domains)) == {"P0:r0": (0, 1), "P0:r1": (0, 1), "y": (0, 1)}
    assert "cuMemMap" in prog.source and "#define N_MAPS 1" in generate(MP).source


TMAP = build_test(
    "tmap", {"P0": ("gpu0.cta0", ["st.global [gB], 21",
                                  "tensormap.replace.tile.global_address.global.b1024.b64 [tmap], 1",
                                  "fence.proxy.tensormap::generic.release.gpu", "st.relaxed.gpu.global [f], 1"]),
             "P1": ("gpu0.cta1", ["ld.relaxed.gpu.global r0, [f] == 1",
                                  "fence.proxy.tensormap::generic.acquire.gpu [tmap], 128",
                                  "cp.async.bulk.tensor.1d.shared::cta.global.tile.mbarrier::complete_tx::bytes [d], [tmap, {0}], [mb]"])},
    memory={"tmap": {"tensormap": {0: "gA", 1: "gB"}}, "gA": {"init": 10}, "gB": {"init": 20},
            "d": {"space": "shared", "owner": "gpu0.cta1"}, "mb": {"space": "shared", "owner": "gpu0.cta1"}},
    forbidden=["d=10"], allowed=["d=20", "d=21"])


def test_tensor_maps_per_instance_with_buffer_addresses():
    prog = generate(TMAP)
    src = prog.source
    assert "#define N_TMAPS 1" in src and "#define MAP_VALUES 2" in src
    assert "tmap_buffer[(N_TMAPS + N_SMAPS) * MAP_VALUES + 1] = {0, 1, 0}" in src     # value 0 -> gA, 1 -> gB
    assert "B_tmap_1 = to_global(gcell(p, 1, inst));" in src
    lines = marked_lines(src)
    assert '[%0], %1;" :  : "l"((A_tmap_global + p.zero[1])), "l"(B_tmap_1)' in lines[1]
    assert re.search(r"\[%\d, \{%\d\}\]", lines[6])                          # [map, {coord}]
    # the initial map is acquired by the harness before the test starts
    # P1 acquires the map itself: the harness acquires the initial map without a prefetch (A2)
    assert 'fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"(A_tmap_generic)' in src
    # nobody initialises mb: the harness does, expecting the copy's 16 bytes
    assert "shared_expect[SH_CELLS + 1] = {0, 0, 0, 16, 0}" in src      # (slot mb, role CTA 1)
    assert "cuTensorMapEncodeTiled" in src
    assert dict(zip(prog.space.names, prog.space.domains)) == {"d": (0, 10, 20, 21)}


def test_tensor_map_limits():
    plain = build_test("plain", {"P0": ("gpu0.cta0", ["st.global [tmap], 1"])},
                       memory={"tmap": {"tensormap": {0: "gA"}}, "gA": {}})
    assert "plain accesses to a tensor map" in unsupported(plain)
    read = build_test("read", {"P0": ("gpu0.cta0", ["tensormap.replace.tile.global_address.global.b1024.b64 [tmap], 0"])},
                      memory={"tmap": {"tensormap": {0: "gA"}}, "gA": {}}, allowed=["tmap=0"])
    assert "cannot be read back" in unsupported(read)
    shared_warp = build_test("sw", {
        "P0": ("gpu0.cta0", ["tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [tmap], [sm], 128"]),
        "P1": ("gpu0.cta0", ["ld.global r0, [gA]"])},
        memory={"tmap": {"tensormap": {0: "gA"}}, "gA": {}, "sm": {"space": "shared", "owner": "gpu0.cta0"}})
    assert "warp-collective" in unsupported(shared_warp)


def test_newer_ptx_needs_a_newer_toolchain():
    t = build_test("rd", {"P0": ("gpu0.cta0", [
        "fence.proxy.async::generic.release.sync_restrict::shared::cluster::read.cluster"])})
    assert unsupported(t) is None and unsupported(t, cuda="13.5") is None
    assert "needs CUDA >= 13.5" in unsupported(t, cuda="13.0")


def test_targets():
    cfg = load_device("b200")
    assert target_for(MP) == "sm_90a"
    assert target_for(MP, cfg) == "sm_100a"
    tc = build_test("tc", {"P0": ("gpu0.cta0", ["tcgen05.fence::before_thread_sync"])})
    assert target_for(tc) == "sm_100a"
    arch = build_test("a", {"P0": ("gpu0.cta0", ["st.global [x], 1"])}, arch="sm_100a")
    assert generate(arch, cfg).target == "sm_100a"
    assert "needs sm_100a, but the device configuration 'default' targets sm_90a" in unsupported(arch)   # B3
    for given, want in (("sm_90", "sm_90a"), ("sm_80", "sm_90a"), ("sm_100", "sm_100a")):
        t = build_test("a", {"P0": ("gpu0.cta0", ["st.global [x], 1"])}, arch=given)
        assert target_for(t) == want           # arch: is a minimum; 'a' variants from sm_90 on


UNSUPPORTED = [
    (build_test("gpus", {"P0": ("gpu0.cta0", ["st.global [x], 1"]), "P1": ("gpu1.cta0", ["ld.global r0, [x]"])}),
     "multi-GPU"),
    (build_test("tc", {"P0": ("gpu0.cta0", ["tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned"])}),
     "the harness allocates and frees the Tensor Memory"),
    (build_test("wg", {"P0": ("gpu0.cta0", ["wgmma.fence.sync.aligned",
                                            "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {d0}, {a0}, [sB], p, 1, 1, 0"])},
                memory={"sB": {"space": "shared", "owner": "gpu0.cta0"}}), "wgmma.mma_async with A from registers"),
    (build_test("tex", {"P0": ("gpu0.cta0", ["tld r0, [t]"])}), "ISCA'22"),
    (build_test("salias", {"P0": ("gpu0.cta0", ["st.shared [y], 1"])},
                memory={"x": {"space": "shared", "owner": "gpu0.cta0"}, "y": {"alias_of": "x", "space": "shared"}}),
     "cannot be mapped twice"),
    (build_test("pred", {"P0": ("gpu0.cta0", ["@p st.global [x], 1"])}), "the predicate p is never set"),
    (build_test("tensor", {"P0": ("gpu0.cta0", [
        "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [s], [g, {0}], [mb]"])},
        memory={"s": {"space": "shared", "owner": "gpu0.cta0"}, "mb": {"space": "shared", "owner": "gpu0.cta0"}}),
     "not a tensor map"),
    (build_test("tensor-mixed-rank", {"P0": ("gpu0.cta0", [
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [s], [tm, {0, 0}], [mb]",
        "cp.async.bulk.tensor.1d.global.shared::cta.tile.bulk_group [tm, {0}], [s]"])},
        memory={"tm": {"tensormap": {0: "g"}}, "g": {}, "s": {"space": "shared", "owner": "gpu0.cta0"},
                "mb": {"space": "shared", "owner": "gpu0.cta0"}}),
     "tensor copies of different ranks [1, 2]"),
    (build_test("mbuse", {"P0": ("gpu0.cta0", [
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [s], [g], 16, [mb]",
        "mbarrier.try_wait.parity.shared::cta.b64 p, [mb], 0"])},
        memory={"s": {"space": "shared", "owner": "gpu0.cta0"}, "mb": {"space": "shared", "owner": "gpu0.cta0"}}),
     "neither declared"),
    (build_test("bar15", {"P0": ("gpu0.cta0", ["bar.sync 15"])}), "reserved"),
    (build_test("uneven", {"P0": ("gpu0.cta0", ["bar.sync 0"]), "P1": ("gpu0.cta0", ["bar.sync 0"]),
                           "P2": ("gpu0.cta0.warp1", ["bar.sync 0"])}), "different numbers"),
    (build_test("farshared", {"P0": ("gpu0.cluster0.cta0", ["st.shared::cluster [s], 1"])},
                memory={"s": {"space": "shared", "owner": "gpu0.cluster1.cta0"}}), "outside this thread's cluster"),
    (build_test("ctaremote", {"P0": ("gpu0.cluster0.cta0", ["st.shared [s], 1"])},
                memory={"s": {"space": "shared", "owner": "gpu0.cluster0.cta1"}}), "use .shared::cluster"),
    (build_test("unknownop", {"P0": ("gpu0.cta0", ["activemask.b32 r5"])}), "no harness emitter"),
    (build_test("multicast-no-peer-mbarrier", {"P0": ("gpu0.cluster0.cta0", [
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [s0], [g], 16, [mb0], 3"])},
        memory={"s0": {"space": "shared", "owner": "gpu0.cluster0.cta0"},
                "s1": {"space": "shared", "owner": "gpu0.cluster0.cta1", "offset_of": "s0"},
                "mb0": {"space": "shared", "owner": "gpu0.cluster0.cta0", "mbarrier": {"count": 1}}}),
     "the ctaMask reaches cta1, where no mbarrier is declared at 'mb0''s offset"),
    (build_test("multicast-mask-outside", {"P0": ("gpu0.cluster0.cta0", [
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [s0], [g], 16, [mb0], 4"])},
        memory={"s0": {"space": "shared", "owner": "gpu0.cluster0.cta0"},
                "mb0": {"space": "shared", "owner": "gpu0.cluster0.cta0", "mbarrier": {"count": 1}},
                "mb2": {"space": "shared", "owner": "gpu0.cluster1.cta2", "offset_of": "mb0", "mbarrier": {"count": 1}}}),
     "the ctaMask reaches cta2, where no mbarrier is declared"),
    (build_test("try-cancel", {"P0": ("gpu0.cta0", [
        "clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128 [h], [mb]"])},
        memory={"h": {"space": "shared", "owner": "gpu0.cta0"},
                "mb": {"space": "shared", "owner": "gpu0.cta0", "mbarrier": {"count": 1}}}),
     "clusterlaunchcontrol.* is not expressible"),
    (build_test("bigcopy", {"P0": ("gpu0.cta0", [
        "mbarrier.arrive.expect_tx.shared::cta.b64 _, [mb], 8192",
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [s], [g], 8192, [mb]"])},
        memory={"s": {"space": "shared", "owner": "gpu0.cta0"},
                "mb": {"space": "shared", "owner": "gpu0.cta0", "mbarrier": {"count": 1}}}),
     "bulk copy size 8192: cells over 256 bytes"),
]


@pytest.mark.parametrize("test,reason", UNSUPPORTED, ids=[t.name for t, _ in UNSUPPORTED])
def test_unsupported_lists_the_reason(test, reason):
    why = unsupported(test)
    assert why is not None and reason in why, why
    with pytest.raises(HarnessError, match="not expressible on hardware"):
        generate(test)


def test_supported_tests_have_no_reason():
    for t in (MP, SAMEWARP, CLUSTER, *controls()):
        assert unsupported(t) is None, (t.name, unsupported(t))


def test_controls_are_marked():
    names = [c.name for c in controls()]
    assert len(names) == len(set(names)) >= 3
    assert all(is_control(c) for c in controls()) and not is_control(MP)


# -- device configurations --------------------------------------------------------------------

def test_bundled_device_configs_load():
    assert {"default", "h100", "b200"} <= set(device_names())
    for name in device_names():
        cfg = load_device(name)
        assert cfg.name == name and cfg.target.startswith("sm_")
    assert load_device("b200").target == "sm_100a"


def test_config_is_baked_into_the_program():
    src = generate(MP, load_device("default").replace(testing_groups=7, spin_cap=99, pattern="ld-ld")).source
    assert "#define TESTING_GROUPS 7" in src and "#define SPIN_CAP 99u" in src
    assert "#define STRESS_PATTERN 3" in src


def test_bad_device_configs(tmp_path):
    with pytest.raises(HarnessError, match="unknown device configuration"):
        load_device("no-such-gpu")
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\n[stress]\npattern = "zigzag"\n')
    with pytest.raises(HarnessError, match="stress pattern"):
        load_device(str(bad))
    bad.write_text('name = "bad"\nfrobnicate = 1\n')
    with pytest.raises(HarnessError, match="unknown key 'frobnicate'"):
        load_device(str(bad))
    bad.write_text('name = [\n')
    with pytest.raises(HarnessError, match="not valid TOML"):
        load_device(str(bad))
    with pytest.raises(HarnessError, match="barrier_pct"):
        DeviceConfig().replace(barrier_pct=101)


def test_every_bundled_test_generates_or_says_why():
    from checker import LITMUS_DIR
    from checker.errors import LitmusError
    from checker.front.litmus import load_paths
    tests = [t for t in load_paths([str(LITMUS_DIR)]) if not isinstance(t, LitmusError)]
    expressible = 0
    for t in tests:
        why = unsupported(t)
        if why is None:
            generate(t)                     # must not raise
            expressible += 1
        else:
            assert why.strip(), t.name
    assert expressible >= len(tests) // 2


def test_undefined_only_tests_observe_plain_locations_only():
    t = build_test("ub", {"P0": ("gpu0.cta0", ["tensormap.replace.tile.global_address.global.b1024.b64 [tm], 1",
                                               "ld.global r0, [y]"])},
                   memory={"tm": {"tensormap": {0: "gA", 1: "gB"}}, "gA": {}, "gB": {}, "y": {}, "z": {"alias_of": "y"},
                           "mb": {"space": "shared", "owner": "gpu0.cta0", "mbarrier": {"count": 1}}})
    assert outcome_space(t).names == ("P0:r0", "gA", "gB", "y")


# -- review defects D10, D11 --------------------------------------------------------------------

@pytest.mark.parametrize("code", [
    "atom.relaxed.gpu.global.add r0, [x], 1 == 1",
    "atom.global.exch r0, [x], 2 == 1",
])
def test_awaits_that_would_repeat_a_write_are_refused(code):
    """D10: an await is a retry loop; repeating an atom gives x=1 after two atoms (a false violation)."""
    t = build_test("aw-rmw", {"P0": ("gpu0.cta0", ["st.relaxed.gpu.global [x], 1"]),
                              "P1": ("gpu0.cta1", [code])},
                   memory={"s": {"space": "shared", "owner": "gpu0.cta1"}}, allowed=["x=2"])
    why = unsupported(t)
    assert why is not None and "only ld and mbarrier test_wait/try_wait can be awaited" in why
    ok = build_test("aw-ld", {"P0": ("gpu0.cta0", ["st.relaxed.gpu.global [x], 1"]),
                              "P1": ("gpu0.cta1", ["ld.relaxed.gpu.global r0, [x] == 1"])}, allowed=["P1:r0=1"])
    assert unsupported(ok) is None


def test_aligned_cluster_barrier_in_a_shared_warp_loses_aligned():
    """D11: barrier.cluster.arrive.aligned in two switch cases of one warp (and idle lanes padding
    with the non-aligned form) is undefined behaviour."""
    t = build_test("cb-shared-warp", {
        "P0": ("gpu0.cluster0.cta0", ["barrier.cluster.arrive.aligned", "barrier.cluster.wait.aligned"]),
        "P1": ("gpu0.cluster0.cta0", ["barrier.cluster.arrive.aligned", "barrier.cluster.wait.aligned"]),
        "P2": ("gpu0.cluster0.cta1", ["barrier.cluster.arrive.aligned", "barrier.cluster.wait.aligned"])})
    prog = generate(t)
    lines = marked_lines(prog.source)
    assert all(".aligned" not in l.split("//")[0] for l in lines), lines
    assert any("without .aligned" in n for n in prog.notes)
    whole = build_test("cb-whole-warp", {
        "P0": ("gpu0.cluster0.cta0", ["barrier.cluster.arrive.aligned", "barrier.cluster.wait.aligned"]),
        "P1": ("gpu0.cluster0.cta1", ["barrier.cluster.arrive.aligned", "barrier.cluster.wait.aligned"])})
    assert all("barrier.cluster.arrive.aligned;" in l or "barrier.cluster.wait.aligned;" in l
               for l in marked_lines(generate(whole).source))


def test_value_analysis_uses_the_models_arithmetic():
    """transfer.py had its own operator table: `and` on -3 gave -3 (Python), the model gives the
    unsigned pattern 4294967293, so atom.min then picked a different value and y=7, which the model
    allows, had no bucket (it would have been counted as 'other')."""
    t = build_test("neg", {"P0": ("gpu0.cta0", ["ld.global r0, [x]", "and r1, r0, -1", "atom.global.exch r2, [y], r1",
                                                "atom.global.min r3, [y], 7"])},
                   memory={"x": {"init": -3}, "y": {"init": 5}}, allowed=["y=7"])
    dom = dict(zip(outcome_space(t).names, outcome_space(t).domains))
    assert 7 in dom["y"]
    from checker.resources import resolve_model
    from checker.verdict.check import check_test
    res = check_test(t, resolve_model(None))
    assert all(outcome_space(t).index(tuple(dict(o)[v] for v in outcome_space(t).names)) is not None
               for o in res.outcomes)


# -- stress and co-residency (D7, D6) ---------------------------------------------------------------

def test_testing_ctas_are_a_minority_of_the_grid():
    """D7: testing CTAs were 80-94% of the grid while the configuration's comment (and the research
    it cites) wants a 15-20% minority."""
    for name in device_names():
        cfg = load_device(name)
        src = generate(MP, cfg).source
        groups = int(re.search(r"#define TESTING_GROUPS (\d+)", src).group(1))
        stress = int(re.search(r"#define STRESS_UNITS (\d+)", src).group(1))
        testing = groups * 2                       # MP: 2 CTAs per group, 1 CTA per unit
        assert testing / (testing + stress) == pytest.approx(cfg.testing_fraction, abs=0.01), name
        assert cfg.testing_fraction <= 0.2 and "#define STRESS_TEST_LINES 1" in src
    src = generate(MP, load_device().replace(stress_target="scratch", testing_fraction=0.5)).source
    assert "#define STRESS_TEST_LINES 0" in src and "#define STRESS_UNITS 256" in src


def test_program_checks_co_residency_and_the_device_architecture():
    src = generate(MP).source
    assert "cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, litmus_kernel, THREADS, 0)" in src
    assert "error not co-resident" in src and "#define TARGET_CC 90" in src
    assert "cudaOccupancyMaxActiveClusters(&clusters, litmus_kernel, &lc)" in generate(CLUSTER).source
    assert "#define TARGET_CC 100" in generate(MP, load_device("b200")).source


@pytest.mark.parametrize("change,msg", [
    (dict(testing_fraction=0), "testing_fraction"),
    (dict(stress_target="l2"), "stress_target"),
    (dict(stress_target="test-lines", stride_cells=1), "stride_cells >= 2"),
])
def test_stress_parameters_are_checked(change, msg):
    with pytest.raises(HarnessError, match=msg):
        DeviceConfig().replace(**change)


def test_values_wider_than_32_bits_are_refused():
    """D16: 64-bit registers were stored as (unsigned): the high half was lost, silently."""
    t = build_test("wide", {"P0": ("gpu0.cta0", ["st.global.b64 [x], 4294967297", "ld.global.b64 r0, [x]"])},
                   allowed=["P0:r0=4294967297"])
    assert "needs more than 32 bits" in unsupported(t)
    ok = build_test("wide-small", {"P0": ("gpu0.cta0", ["st.global.b64 [x], 5", "ld.global.b64 r0, [x]"])},
                    allowed=["P0:r0=5"])
    assert unsupported(ok) is None


MULTICAST = build_test("mc", {
    "P0": ("gpu0.cluster0.cta0", ["mbarrier.arrive.expect_tx.shared::cta.b64 _, [mb0], 16",
                                   "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                                   "[s0], [g], 16, [mb0], 0b101",
                                   "mbarrier.try_wait.parity.shared::cta.b64 p, [mb0], 0 == 1", "ld.shared r0, [s0]"]),
    "P2": ("gpu0.cluster0.cta2", ["mbarrier.try_wait.parity.shared::cta.b64 p, [mb2], 0 == 1", "ld.shared r0, [s2]"])},
    memory={"g": {"init": 7}, "s0": {"space": "shared", "owner": "gpu0.cluster0.cta0"},
            "s2": {"space": "shared", "owner": "gpu0.cluster0.cta2", "offset_of": "s0"},
            "mb0": {"space": "shared", "owner": "gpu0.cluster0.cta0", "mbarrier": {"count": 1}},
            "mb2": {"space": "shared", "owner": "gpu0.cluster0.cta2", "mbarrier": {"count": 1}, "offset_of": "mb0"}},
    allowed=["P0:r0=7 /\\ P2:r0=7 /\\ s2=7"])


def test_multicast_copies_reach_one_offset_in_each_cta_of_the_mask():
    """.multicast::cluster: offset_of locations share one shared-memory slot (the same CTA-relative
    offset in their own CTAs); the test's ctaMask (bit N = ctaN) becomes the hardware's
    (bit = %cluster_ctarank: cta0 and cta2 are ranks 0 and 1); the epilogue waits on the mbarrier
    of every CTA the copy signals, making up the arrival P2 never makes."""
    from checker.harness.static_check import check_program
    prog = generate(MULTICAST)
    src = prog.source
    assert "#define N_SHARED 2" in src and "#define CLUSTER 2" in src      # (s0, s2) and (mb0, mb2)
    (cp,) = [l for l in marked_lines(src) if "multicast::cluster" in l]
    assert '"h"((unsigned short)3)' in cp
    epi = src[src.index("// Epilogue"):]
    assert "// mb0:" in epi and "// mb2:" in epi
    assert check_program(prog) == []
    dom = dict(zip(prog.space.names, prog.space.domains))
    assert dom["s2"] == (0, 7) and dom["P2:r0"] == (0, 7)
