"""`ptxmc extract`: the PTX-module front end, role discovery, the skeleton, its checks and
mutants, on real compiler output (examples/kernels/, committed PTX; no compiler needed)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from checker.api import run
from checker.cli import main
from checker.errors import LitmusError
from checker.extract.api import extract_file
from checker.extract.bearing import reason
from checker.extract.module import load
from checker.extract.render import mutants, yaml_text

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "examples" / "kernels"
TMA = KERNELS / "cuda" / "tma_ws_pipeline.sm90a.ptx"
CLUSTER = KERNELS / "cuda" / "cluster_dsmem.sm90a.ptx"
GLUON = KERNELS / "triton" / "gluon_ws_matmul.sm90a.ptx"
GLUON_BW = KERNELS / "triton" / "gluon_bw_ws_matmul.sm100a.ptx"
ATTN = KERNELS / "triton" / "triton_attn_fwd_ws.sm100a.ptx"
CUTLASS = KERNELS / "cutlass" / "cutlass_sm90_ws_cooperative.sm90a.ptx"
# Kernels whose as-compiled skeleton has undefined behaviour under ptxmc's model, with the
# flags; docs/extract.md#findings says why (each is a decision of docs/model.md).
FINDINGS = {"gluon_bw_ws_matmul.sm100a.ptx": {"InFlight", "MixedSizeRace"},
            "tilelang_ws_gemm.sm90a.ptx": {"MixedSizeRace"}}       # tests/extract/test_extract_corpus.py
# too large for the default check today (docs/extract.md#status-and-limits): their own tests below
TOO_LARGE = {"triton_attn_fwd_ws.sm100a.ptx", "cutlass_sm90_ws_cooperative.sm90a.ptx"}


def test_module_reads_a_whole_ptx_file():
    mod = load(TMA.read_text(), str(TMA))
    assert (mod.version, mod.target) == ("9.5", "sm_90a")
    [k] = mod.kernels()
    assert k.name == "tma_ws_pipeline" and k.block() == (256, 1, 1)
    assert [p[0] for p in k.params] == [f"tma_ws_pipeline_param_{i}" for i in range(3)]
    assert {"_ZZ15tma_ws_pipelineE4tile", "_ZZ15tma_ws_pipelineE4full"} <= set(k.symbols)
    # the two inline-asm blocks each declare P_OUT: renamed per scope, never merged
    regs = {o.name for s in k.body if s.instr for o in s.instr.operands if getattr(o, "name", "").startswith("P_OUT")}
    assert len(regs) >= 3


def test_scoped_register_without_percent_in_an_address():
    """CUTLASS declares `.reg .b32 remAddr32;` in an inline-asm scope and writes `[remAddr32]`:
    a register (renamed per scope), not a variable."""
    text = """.version 8.0
.target sm_90a
.visible .entry k()
.reqntid 32
{
  .reg .b32 %r<3>;
  { .reg .b32 remAddr32;
  mapa.shared::cluster.u32 remAddr32, %r1, %r2;
  mbarrier.arrive.shared::cluster.b64 _, [remAddr32]; }
  ret;
}
"""
    [k] = load(text).kernels()
    addr = k.body[1].instr.operands[1]
    assert (addr.base, addr.register) == ("remAddr32@1", True)


def test_scoped_labels_do_not_clash():
    text = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k()
.reqntid 32
{
  .shared .align 8 .b8 mb[8];
  { .reg .pred P1;
  W: mbarrier.try_wait.parity.shared::cta.b64 P1, [mb], 0;
  @!P1 bra W; }
  { .reg .pred P1;
  W: mbarrier.try_wait.parity.shared::cta.b64 P1, [mb], 1;
  @!P1 bra W; }
  ret;
}
"""
    [k] = load(text).kernels()
    assert sorted(k.labels) == ["W@1", "W@2"]


@pytest.mark.parametrize("text, message", [
    ("hello world\n", "not a PTX"),
    ("\x00\x01binary", "not a PTX"),
    (".version 8.0\n.target sm_90a\n.visible .entry k()\n.reqntid 32\n{\n  frobnicate.sync %r1;\n  ret;\n}\n",
     "no model"),
    (".version 8.0\n.target sm_90a\n.visible .entry k(.param .u64 k_param_0)\n.reqntid 32\n{\n"
     "  .reg .b64 %rd<3>;\n  .reg .b32 %r<3>;\n  ld.param.u64 %rd1, [k_param_0];\n  ld.global.u32 %r1, [%rd1];\n"
     "  mbarrier.arrive.shared.b64 %rd2, [%r1];\n  ret;\n}\n", "cannot be traced"),
    (".version 8.0\n.target sm_90a\n.visible .entry k(.param .u32 k_param_0)\n.reqntid 32\n{\n"
     "  .shared .align 8 .b8 mb[8];\n  .reg .b32 %r<3>;\n  .reg .pred %p<2>;\n  .reg .b64 %rd<2>;\n"
     "  ld.param.u32 %r1, [k_param_0];\n  setp.eq.s32 %p1, %r1, 7;\n  @%p1 mbarrier.arrive.shared.b64 %rd1, [mb];\n"
     "  ret;\n}\n", "predicate the thread cannot evaluate"),
    # a real instruction with no model in the extractor: refused, never dropped
    (".version 8.0\n.target sm_90a\n.visible .entry k()\n.reqntid 32\n{\n  .shared .align 8 .b8 w[8];\n"
     "  .reg .b32 %r<3>;\n  atom.shared.add.u32 %r1, [w], 1;\n  ret;\n}\n", "no model in ptxmc extract"),
    # st.async completes on an mbarrier: taking it for a plain store would drop that arrival
    (".version 8.0\n.target sm_90a\n.visible .entry k()\n.reqntid 32\n{\n  .shared .align 8 .b8 mb[8];\n"
     "  .shared .align 8 .b8 w[8];\n  st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [w], 5, [mb];\n"
     "  ret;\n}\n", "'st.async' (completes on an mbarrier) is not modelled"),
])
def test_bad_input_names_the_line(tmp_path, text, message):
    f = tmp_path / "bad.ptx"
    f.write_bytes(text.encode("latin-1"))
    with pytest.raises(LitmusError) as e:
        extract_file(str(f))
    assert message in str(e.value)
    if "not a PTX" in message:
        assert "bad.ptx:1" in str(e.value)            # the file's first line: no .version
    else:
        assert re.search(r"bad\.ptx:\d+", str(e.value)) and e.value.where.line > 1


def test_nvcc_negative_offsets_and_parameter_byte_counts(tmp_path):
    """nvcc prints `[%rd2+-16]`; CUTLASS keeps the expect_tx byte count in its Params: the
    skeleton's own count (one box per copy that follows) replaces it."""
    text = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .align 64 .b8 k_param_0[128], .param .u32 k_param_1)
.reqntid 32
{
  .shared .align 128 .b8 tile[1024];
  .shared .align 8 .b8 mb[8];
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  .reg .pred %p<3>;
  mov.b64 %rd1, k_param_0;
  add.s64 %rd2, %rd1, 16;
  ld.param.u32 %r1, [%rd2+-16];
  ld.param.u32 %r2, [k_param_1];
  mov.u32 %r3, %tid.x;
  setp.ne.s32 %p1, %r3, 0;
  @%p1 bra DONE;
  mbarrier.init.shared::cta.b64 [mb], 1;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [mb], %r2;
  cvta.param.u64 %rd3, %rd1;
  mov.u32 %r4, 0;
  cp.async.bulk.tensor.1d.shared::cta.global.mbarrier::complete_tx::bytes [tile], [%rd3, {%r4}], [mb];
  W: mbarrier.try_wait.parity.shared::cta.b64 %p2, [mb], 0;
  @!%p2 bra W;
  ld.shared.u32 %r5, [tile];
DONE:
  ret;
}
"""
    f = tmp_path / "k.ptx"
    f.write_text(text)
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    body = Path(x.path).read_text()
    assert "mbarrier.arrive.expect_tx.shared::cta.b64 _, [mb0], 16" in body
    assert "expect_tx a parameter's bytes taken to cover the 1 tensor copy" in body
    assert x.skeleton.checks == ["t0:r1!=1"]
    assert x.check(jobs=0).ok


def test_unknown_kernel_lists_the_kernels(capsys):
    assert main(["extract", str(TMA), "--kernel", "nope", "-o", "/nonexistent-never-written"]) == 1
    err = capsys.readouterr().err
    assert "no kernel 'nope'" in err and "tma_ws_pipeline (line 18)" in err


def test_roles_objects_and_scaled_counts(tmp_path):
    [x] = extract_file(str(TMA), out_dir=str(tmp_path))
    sk = x.skeleton
    # thread 0 (init + producer) and the other 127 threads of warps 0-3 (their bar.sync) are one
    # role: the bar.sync is performed by all 128, the producer's operations by one thread
    assert [(r.name, r.size) for r in sk.roles] == [("w0_3", 128), ("w4_7", 128)]
    producer = sk.roles[0]
    assert [n for e, n in zip(producer.trace.events, producer.mult) if e.kind == "barrier"] == [128]
    assert {n for e, n in zip(producer.trace.events, producer.mult) if e.kind == "mb_arrive"} == {1}
    assert sk.iterations == 3                      # 2 stages + 1: the ring wraps
    text = Path(x.path).read_text()
    # the consumer warpgroup's 128 arrivals are one litmus arrival: mbarrier count 128 -> 1
    assert "mbarrier.init.shared::cta.b64 [empty0], 1" in text
    # the spin loop became one await with the parity evaluated per iteration
    consumer = next(r for r in sk.roles if r.name == "w4_7")
    waits = [ln.text for ln in consumer.lines if ln.kind == "mb_wait"]
    assert [w.split("[")[1] for w in waits] == ["full0], 0 == 1", "full1], 0 == 1", "full0], 1 == 1"]
    # every instruction line names its PTX line, and that line holds the instruction's opcode
    src = TMA.read_text().splitlines()
    for r in sk.roles:
        for ln in r.lines:
            assert src[ln.src_line - 1].strip().split()[0].split(".")[0] in ln.text or ln.kind == "barrier"
    body = [l for l in text.splitlines() if l.startswith("        ")]
    assert body and all(re.search(r"// L\d+: ", l) for l in body)
    assert sk.checks == ["w4_7:r1!=1", "w4_7:r3!=2", "w4_7:r5!=3"]


def test_copies_through_one_tensor_map_share_one_litmus_map_and_buffer(tmp_path):
    """The three loads of the TMA pipeline go through one PTX tensor map: one litmus map and one
    global buffer, each copy its own 16-byte box at coordinates {k, 0} holding its own value (copy
    k: k + 1), so the consumer's data checks are those of a map and a buffer per copy (they were
    three maps and three buffers, six of the 64 locations a test may have)."""
    [x] = extract_file(str(TMA), out_dir=str(tmp_path))
    sk = x.skeleton
    assert [k for k in sk.memory if k.startswith(("tmap", "gbuf"))] == ["gbuf1", "tmap1"]
    assert sk.memory["gbuf1"] == {"size": 48, "init": 1 | 2 << 128 | 3 << 256}
    assert sk.memory["tmap1"]["box"] == 16 and sk.memory["tmap1"]["strides"] == [16, 16]
    text = Path(x.path).read_text()
    assert [m for m in re.findall(r"\[tmap1, \{(\d), 0\}\]", text)] == ["0", "1", "2"]
    assert "init: 0x3" + "0" * 31 + "2" + "0" * 31 + "1}" in text      # one value per box, in hex
    assert sk.checks == ["w4_7:r1!=1", "w4_7:r3!=2", "w4_7:r5!=3"]
    assert x.check(jobs=0).ok


def test_gluon_warp_specialize_state_machine(tmp_path):
    """The worker warps of Gluon's warp_specialize read their partition from a state word the
    default partition stores before `barrier.sync 1`: warp 6 loads, warps 4, 5, 7 idle."""
    [x] = extract_file(str(GLUON), out_dir=str(tmp_path))
    sk = x.skeleton
    assert [(r.name, r.size) for r in sk.roles] == [("w0_3", 128), ("w4_7_96t", 96), ("w6", 32)]
    loader = sk.roles[2]
    assert sum(e.kind == "tma_load" for e in loader.trace.events) == 6          # 2 tiles x 3 iterations
    assert {w for _, w in loader.trace.maxnreg} >= {"setmaxnreg.dec.sync.aligned.u32 24"}
    consumer = sk.roles[0]
    mma = [ln.text for ln in consumer.lines if ln.kind == "wgmma_mma"]
    # descriptors decoded back to the stage's tiles; 4 k-steps of one stage are one wgmma
    assert [m.split("{d0}, ")[1].split(", pz")[0] for m in mma] == [
        "[global_smem0], [global_smem2]", "[global_smem1], [global_smem3]", "[global_smem0], [global_smem2]"]
    assert "mbarrier.arrive.expect_tx.shared::cta.b64 _, [global_smem_mb0], 32" in Path(x.path).read_text()
    assert sk.checks == ["gout1!=119"]                # the TMA store must carry the epilogue's data


def test_gluon_mutants(tmp_path):
    """The epilogue's proxy fence is load-bearing (the stmatrix and the TMA store race without
    it); the consumer's last release of stage 0 is not, within three iterations (its phase is
    awaited by no one). All 16 were judged by hand: 14 caught, 2 explained."""
    [x] = extract_file(str(GLUON), out_dir=str(tmp_path))
    ms = {m.name: m for m in mutants(x.skeleton)}
    x.mutants = [ms["w0_3-L247-1-no-proxy-fence"], ms["w0_3-L202-3-no-arrive"]]
    Path(x.path).write_text(yaml_text(x.skeleton, x.mutants))
    rep = x.check(jobs=0)
    assert rep.ok, rep.text
    assert rep.mutants_caught == ["w0_3-L247-1-no-proxy-fence"]
    assert "PTX lines L237, L254" in rep.text      # the stmatrix and the TMA store that race
    assert list(rep.not_bearing) == ["w0_3-L202-3-no-arrive"]
    assert "phase 1 of global_smem_mb2, which no role waits for" in rep.not_bearing["w0_3-L202-3-no-arrive"]


@pytest.mark.parametrize("ptx, caught, not_bearing", [
    (TMA, 14, {
        # the last iterations' releases and fences: nothing in the 3-iteration window refills
        # their stage, or waits for the phase the arrive completes
        "w4_7-L111-2-no-proxy-fence": "piece it orders (tile1) get no asynchronous copy",
        "w4_7-L111-3-no-proxy-fence": "piece it orders (tile0) get no asynchronous copy",
        "w4_7-L117-2-no-arrive": "phase 0 of empty1, which no role waits for",
        "w4_7-L117-3-no-arrive": "phase 1 of empty0, which no role waits for"}),
    # the second cluster barrier keeps each CTA running while its neighbour reads its shared
    # memory: made .relaxed, the exit check (skeleton._exit_shadows) catches it
    (CLUSTER, 4, {}),
], ids=["tma_ws_pipeline", "cluster_dsmem"])
def test_every_mutant_is_caught_or_explained_as_not_load_bearing(tmp_path, ptx, caught, not_bearing):
    """Every mutant of the skeleton's synchronization is either caught (it changes a verdict:
    undefined behaviour, a forbidden outcome allowed, every execution blocked) or labelled not
    load-bearing with a reason read off the skeleton (checker.extract.bearing); none is left
    unexplained, and no caught mutant is ever explained away (the reasons are sound here)."""
    [x] = extract_file(str(ptx), out_dir=str(tmp_path), mutants=True)
    rep = x.check(jobs=0)
    assert rep.ok, rep.text
    assert not rep.unexplained and not rep.unknown, rep.text
    assert len(rep.mutants_caught) == caught, rep.text
    assert rep.not_bearing.keys() == not_bearing.keys(), rep.text
    for n, why in not_bearing.items():
        assert why in rep.not_bearing[n]
    by = {m.name: m for m in x.mutants}
    assert all(reason(x.skeleton, by[n].role, by[n].index) is None for n in rep.mutants_caught)
    assert f"{caught} of {len(x.mutants)} caught (load-bearing), {len(not_bearing)} not load-bearing" in rep.text


def test_mutants_with_hang_ask_the_hang_question_of_the_mutants_the_run_without_it_does_not_catch(tmp_path, monkeypatch):
    """With --hang, each mutant is asked first without it (what that run finds stands), and only the
    ones it does not catch are asked the hang question: on tma_ws_pipeline the same 14 caught and 4
    not load-bearing as without --hang, the hang question asked of those 4 alone (a mutant that
    breaks a synchronization leaves the conditions that make it fast: CUTLASS's ran to the timeout,
    54 of 65 UNKNOWN)."""
    from checker.extract import api
    asked = []

    def recorded(sk, ms=(), hang=False):
        asked.append((len(ms), hang))
        return yaml_text(sk, ms, hang)
    monkeypatch.setattr(api, "yaml_text", recorded)
    [x] = extract_file(str(TMA), out_dir=str(tmp_path), mutants=True, hang=True)
    rep = x.check(jobs=0)
    assert rep.ok and not rep.unexplained and not rep.unknown, rep.text
    assert len(rep.mutants_caught) == 14 and len(rep.not_bearing) == 4, rep.text
    assert (18, False) in asked and (4, True) in asked and (18, True) not in asked[1:], asked


HANDSHAKE = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k()
.reqntid 64
{
  .shared .align 8 .b8 mb[8];
  .reg .b32 %r<4>;
  .reg .pred %p<4>;
  .reg .b64 %rd<2>;
  mov.u32 %r1, %tid.x;
  setp.ne.s32 %p1, %r1, 0;
  @%p1 bra B;
  mbarrier.init.shared::cta.b64 [mb], 1;
B:
  bar.sync 0;
  @%p1 bra C;
  mbarrier.arrive.shared::cta.b64 %rd1, [mb];
C:
  setp.ne.s32 %p2, %r1, 32;
  @%p2 bra D;
W: mbarrier.try_wait.parity.shared::cta.b64 %p3, [mb], 0;
  @!%p3 bra W;
D:
  ret;
}
"""


def test_mutants_of_a_skeleton_without_data_checks_are_judged(tmp_path):
    """A skeleton with no data check is judged 'run' (no condition, no undefined behaviour), not
    'pass': its mutants are still run and each reported (they were silently left out)."""
    f = tmp_path / "k.ptx"
    f.write_text(HANDSHAKE)
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"), mutants=True)
    assert not x.skeleton.checks
    rep = x.check(jobs=0)
    assert rep.ok, rep.text
    assert rep.mutants_caught == ["w0_1_63t-L18-1-no-arrive"]                # the waiter blocks
    assert list(rep.not_bearing) == ["t32-L22-1-flip-parity"]           # its wait orders nothing
    assert not rep.unexplained and not rep.unknown


def test_cluster_kernel(tmp_path):
    [x] = extract_file(str(CLUSTER), out_dir=str(tmp_path))
    sk = x.skeleton
    assert sk.cluster == 2 and {r.rank for r in sk.roles} == {0, 1}
    text = Path(x.path).read_text()
    assert "ld.shared::cluster.b32 r0, [word0_c1]" in text      # mapa's register rank evaluated
    assert [(r.name, r.size) for r in sk.roles] == [("w0_1_c0", 64), ("w0_1_c1", 64)]


def test_hang_check_of_the_cluster_kernel(tmp_path, capsys):
    """--hang adds `hang: forbidden`: the two cluster barriers of both CTAs complete."""
    assert main(["extract", str(CLUSTER), "-o", str(tmp_path), "--hang"]) == 0
    assert "hang: forbidden" in (tmp_path / "cluster_dsmem.yaml").read_text()
    out = capsys.readouterr().out
    assert "no hang)" in out and "not asked" not in out


def test_an_unanswered_hang_question_still_answers_the_rest(tmp_path, capsys):
    """--hang refused (here by the paths limit) made the whole check UNKNOWN, hiding that the
    skeleton's undefined-behaviour and data checks hold: they are asked without it and said so,
    and the exit status stays that of the unanswered question."""
    assert main(["extract", str(TMA), "-o", str(tmp_path), "--hang", "--limit", "paths=4"]) != 0
    out = capsys.readouterr().out
    # (the paths limit is met by the undefined-behaviour search's paths of one thread since the
    # refuter drops the stopping combinations that went past it before, e72a5a2)
    assert "X-tma_ws_pipeline: UNKNOWN" in out and "control paths" in out and "paths=N" in out
    assert "  without --hang: X-tma_ws_pipeline: PASS (no undefined behaviour" in out
    assert "hang: forbidden" in (tmp_path / "tma_ws_pipeline.yaml").read_text()


def test_an_unanswered_hang_question_leaves_a_finding_the_verdict(tmp_path, capsys):
    """A finding of the run without --hang is an execution of the kernel, so it stands whatever
    the unanswered hang question would say: the verdict is FAIL with it, not UNKNOWN with the
    finding below (the attention kernel's --hang was UNKNOWN above its undefined behaviour)."""
    tilelang = KERNELS / "tilelang" / "tilelang_ws_gemm.sm90a.ptx"
    assert main(["extract", str(tilelang), "-o", str(tmp_path), "--hang", "--limit", "paths=4"]) != 0
    out = capsys.readouterr().out.splitlines()
    i = next(k for k, line in enumerate(out) if line.startswith("X-kernel_kernel: "))
    assert out[i] == "X-kernel_kernel: FAIL", out[i:]
    assert sum("MixedSizeRace between" in line for line in out[i:]) == 1, out[i:]    # said once
    assert any(line.startswith("  the hang question (--hang) has no answer (too large: ")
               and line.endswith("a hang included") for line in out[i:]), out[i:]
    assert not any("UNKNOWN" in line for line in out[i:])


def test_a_pass_without_hang_says_what_it_did_not_ask(tmp_path, capsys):
    """Without --hang a wait is the read that ends its loop: the PASS names what that leaves out
    (hangs, and undefined behaviour needing a wait's earlier reads), not a bare "no undefined
    behaviour" for the kernel."""
    assert main(["extract", str(CLUSTER), "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    i = next(k for k, line in enumerate(out) if "X-cluster_dsmem: PASS" in line)
    assert out[i + 1].strip().startswith("not asked: hangs, and undefined behaviour that needs a wait's earlier reads")


def test_output_folder_of_someone_else_is_refused(tmp_path, capsys):
    (tmp_path / "mine.txt").write_text("keep")
    assert main(["extract", str(CLUSTER), "-o", str(tmp_path), "--no-check"]) == 2
    assert "--force" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt"]


def test_cli_writes_and_checks(tmp_path, capsys):
    assert main(["extract", str(CLUSTER), "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "kernel cluster_dsmem" in out and "X-cluster_dsmem: PASS" in out
    assert (tmp_path / "cluster_dsmem.yaml").exists()


@pytest.mark.parametrize("ptx", sorted(p for p in KERNELS.rglob("*.ptx") if p.name not in TOO_LARGE), ids=lambda p: p.name)
def test_corpus_extracts_and_checks(tmp_path, ptx):
    assert ptx.stat().st_size < 300_000
    for x in extract_file(str(ptx), out_dir=str(tmp_path)):
        rep = x.check(jobs=0)
        if ptx.name not in FINDINGS:
            assert rep.ok, rep.text
            continue
        assert not rep.ok
        [result] = run([x.path], jobs=0, limits=_events())
        assert {u.flag for u in result.undefined} == FINDINGS[ptx.name], rep.text


def _events():
    from checker import limits
    return limits.current().override(["events=1000"])


MIXED_COUNTS = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k10(
	.param .u64 k10_param_0
)
.maxntid 256, 1, 1
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<18>;
	.reg .b64 	%rd<5>;
	.shared .align 4 .b8 _ZZ3k10E4data[1024];
	ld.param.u64 	%rd2, [k10_param_0];
	cvta.to.global.u64 	%rd3, %rd2;
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd4, %r1, 4;
	add.s64 	%rd1, %rd3, %rd4;
	ld.global.u32 	%r2, [%rd1+4096];
	shl.b32 	%r3, %r1, 2;
	mov.u32 	%r4, _ZZ3k10E4data;
	add.s32 	%r5, %r4, %r3;
	st.shared.u32 	[%r5], %r2;
	FIRST
	setp.lt.u32 	%p1, %r1, 128;
	@%p1 bra 	$L__BB0_1;
	bra.uni 	$L__BB0_2;
$L__BB0_1:
	bar.sync 1, 128;
	add.s32 	%r7, %r3, 4;
	and.b32  	%r8, %r7, 508;
	add.s32 	%r10, %r4, %r8;
	ld.shared.u32 	%r11, [%r10];
	st.global.u32 	[%rd1], %r11;
$L__BB0_2:
	SECOND
	add.s32 	%r13, %r3, 4;
	and.b32  	%r14, %r13, 1020;
	add.s32 	%r16, %r4, %r14;
	ld.shared.u32 	%r17, [%r16];
	st.global.u32 	[%rd1+1024], %r17;
	ret;
}
"""


def test_one_barrier_with_two_counts_whose_uses_may_meet_fails(tmp_path, capsys):
    """Warps 0-3 at `bar.sync 1, 128` while warps 4-7 may already be at `bar.sync 1, 256`: the
    hardware barrier counts warps 4-7's arrivals towards the first use. It was a PASS (one litmus
    barrier per count, their separation only assumed in a header note); now a shadow word checks
    it, and the check fails with the PTX lines. With the CTA-wide use first (every thread of the
    narrow one takes part in it before) nothing can meet, no check is added, and it passes."""
    f = tmp_path / "k10.ptx"
    f.write_text(MIXED_COUNTS.replace("FIRST", "").replace("SECOND", "bar.sync 1, 256;"))
    assert main(["extract", str(f), "-o", str(tmp_path / "o")]) != 0
    out = capsys.readouterr().out
    assert "X-k10: FAIL" in out and "expected forbidden: w4_7:r0=0, but it is allowed" in out, out
    assert "w4_7's read at PTX L35 (just before its arrival at barrier 1 with 256 threads) may come while w0_3's " \
           "barrier 1 with 128 threads at PTX L28 is in progress" in out, out
    g = tmp_path / "ok.ptx"
    g.write_text(MIXED_COUNTS.replace("FIRST", "bar.sync 1, 256;").replace("SECOND", ""))
    assert main(["extract", str(g), "-o", str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    assert "X-k10: PASS" in out and "bar1_" not in (tmp_path / "p" / "k10.yaml").read_text()


def test_allocation_by_two_warps_is_refused_not_folded(tmp_path):
    """docs/model.md#t6: one warp performs every tcgen05.alloc and dealloc of a CTA. The Gluon
    Blackwell GEMM allocates in warp 0 (%p1 = tid < 32); with tid < 64 warps 0 and 1 both
    allocate and deallocate, and the merged role w0_3 would show one alloc at warp 0: refused at
    the alloc's line instead (before, the skeleton showed one warp's allocation and no rule broken)."""
    src = GLUON_BW.read_text()
    f = tmp_path / "k.ptx"
    f.write_text(src.replace("setp.lt.u32 \t%p1, %r1, 32;", "setp.lt.u32 \t%p1, %r1, 64;"))
    assert f.read_text() != src
    line = next(i for i, ln in enumerate(src.splitlines(), 1) if "tcgen05.alloc" in ln)
    with pytest.raises(LitmusError, match="by warps 0, 1 of one CTA") as e:
        extract_file(str(f), out_dir=str(tmp_path / "out"), iterations=2)
    assert f"k.ptx:{line}:" in str(e.value)


def test_gluon_blackwell_findings_are_the_two_missing_fences(tmp_path):
    """tcgen05: TMEM allocation traced through the shared slot, descriptors decoded, commits as
    arrivals. The as-compiled skeleton has UB under ptxmc's model for exactly two reasons: no
    tcgen05.fence::after_thread_sync between the mbarrier wait and tcgen05.mma (T3), and no
    fence.proxy.async between the generic read of the TMEM address slot and the TMA copy that
    later overwrites those bytes (A1). With both added the skeleton passes, with two iterations
    and with three (the stage reuse: it used to report MbarrierRange, an out-of-range arrive
    "freeing" the very wait it needed, through the asynchronous arrive-on of tcgen05.commit)."""
    [x] = extract_file(str(GLUON_BW), out_dir=str(tmp_path), iterations=2)
    sk = x.skeleton
    assert [(r.name, r.size) for r in sk.roles] == [("w0_3", 128), ("w4_5", 64), ("w6", 32), ("w7", 32)]
    text = Path(x.path).read_text()
    assert "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [global_smem0], 64" in text
    assert "tcgen05.mma.cta_group::1.kind::f16 [tmem], [global_smem0], [global_smem2], idesc, pz" in text
    assert "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [global_smem_mb2]" in text
    assert [r.status for r in run([_with_both_fences(text, tmp_path / "fixed.yaml")], jobs=0,
                                  limits=_events())] == ["pass"]
    [as_compiled] = run([x.path], jobs=0, limits=_events())
    assert {u.flag for u in as_compiled.undefined} == {"InFlight", "MixedSizeRace"}
    [x3] = extract_file(str(GLUON_BW), out_dir=str(tmp_path / "three"), iterations=3)
    fixed3 = _with_both_fences(Path(x3.path).read_text(), tmp_path / "fixed3.yaml")
    assert [r.status for r in run([fixed3], jobs=0, limits=_events())] == ["pass"]


def _with_both_fences(text: str, path: Path) -> str:
    """The Gluon Blackwell skeleton `text` with the two fences its findings miss, written to `path`."""
    fixed = []
    role = None
    for line in text.splitlines():
        m = re.match(r"    (\w+):$", line)
        role = m.group(1) if m else role
        fixed.append(line)
        if role == "w6" and "mbarrier.try_wait" in line:
            fixed.append("        tcgen05.fence::after_thread_sync")
        if "ld.shared::cta.b32 r0, [global_smem0]" in line:
            fixed.append("        fence.proxy.async.shared::cta")
    path.write_text("\n".join(fixed) + "\n")
    return str(path)


REUSE = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k()
.reqntid 64
{
  .shared .align 16 .b8 buf[64];
  .reg .b32 %r<8>;
  .reg .pred %p<4>;
  .reg .b64 %rd<2>;
  mov.u32 %r1, %tid.x;
  setp.ne.s32 %p1, %r1, 0;
  @%p1 bra SKIP;
  mbarrier.init.shared::cta.b64 [buf], 1;
  mbarrier.arrive.shared::cta.b64 %rd1, [buf];
W: mbarrier.try_wait.parity.shared::cta.b64 %p2, [buf], 0;
  @!%p2 bra W;
  mbarrier.inval.shared::cta.b64 [buf];
SKIP:
  bar.sync 0;
  setp.ne.s32 %p3, %r1, 32;
  @%p3 bra DONE;
  st.shared.u32 [buf], 7;
  ld.shared.u32 %r2, [buf];
DONE:
  ret;
}
"""


@pytest.mark.parametrize("barrier", [True, False])
def test_mbarrier_bytes_reused_as_data_are_a_location_per_lifetime(tmp_path, barrier):
    """An mbarrier invalidated and its bytes then used as data (Triton's attention does it with
    the Q barrier): the data after the inval is a location of its own, and a shadow word checks
    that the lifetimes are ordered: with the bar.sync between the inval and the store the
    skeleton passes; without it the store may run while the mbarrier is live, and the check
    says so (never one merged location, never a silently hidden race)."""
    f = tmp_path / "k.ptx"
    f.write_text(REUSE if barrier else REUSE.replace("  bar.sync 0;\n", ""))
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"), mutants=True)
    text = Path(x.path).read_text()
    assert "mbarrier.inval.shared::cta.b64 [buf0]" in text
    assert "st.shared::cta.b32 [buf0_life], 2" in text           # the inval's shadow write
    data = "buf_post0" if barrier else "buf_pre0"                 # no barrier: placed before the init
    assert f"st.shared::cta.b32 [{data}], 7" in text
    rep = x.check(jobs=0)
    assert rep.ok == barrier, rep.text
    if not barrier:
        assert "t32:r1=1" in rep.text and "expected forbidden" in rep.text
        # its mutants keep the expectations the skeleton already fails: not judged
        assert f"mutants: {len(x.mutants)} not judged" in rep.text and not rep.mutants_caught
    else:
        assert rep.mutants_caught and not rep.unexplained and not rep.unknown, rep.text


# thread 32 stores buf and copies it out with a TMA store; thread 0, after a bar.sync, makes buf an
# mbarrier (init, arrive, wait, inval). WAIT: what thread 32 does before the bar.sync
STORE_THEN_MBARRIER = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .align 64 .b8 k_param_0[128])
.reqntid 64
{
  .shared .align 128 .b8 buf[64];
  .reg .b32 %r<8>;
  .reg .pred %p<4>;
  .reg .b64 %rd<4>;
  mov.u32 %r1, %tid.x;
  setp.ne.s32 %p3, %r1, 32;
  @%p3 bra PRE;
  st.shared.u32 [buf], 7;
  fence.proxy.async.shared::cta;
  mov.b64 %rd1, k_param_0;
  cvta.param.u64 %rd3, %rd1;
  mov.u32 %r4, 0;
  cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%rd3, {%r4}], [buf];
  cp.async.bulk.commit_group;
WAIT
PRE:
  bar.sync 0;
  setp.ne.s32 %p1, %r1, 0;
  @%p1 bra DONE;
  mbarrier.init.shared::cta.b64 [buf], 1;
  mbarrier.arrive.shared::cta.b64 %rd2, [buf];
W: mbarrier.try_wait.parity.shared::cta.b64 %p2, [buf], 0;
  @!%p2 bra W;
  mbarrier.inval.shared::cta.b64 [buf];
DONE:
  ret;
}
"""


@pytest.mark.parametrize("wait", ["  cp.async.bulk.wait_group.read 0;\n", ""], ids=["read-waited", "in-flight"])
def test_the_lifetime_shadow_of_an_asynchronous_read_follows_its_completion(tmp_path, wait):
    """The lifetime's shadow word is read after the access before the init: for a TMA store's
    source, after the wait_group that completes its read, not after its issue. Read after the
    issue, the kernel whose TMA store may still read buf while thread 0 initialises the mbarrier
    there PASSED (the data and the mbarrier are two litmus locations: only the shadow can see the
    overlap); with the read waited for, it passes, and without, it is refused at the copy's line."""
    f = tmp_path / "k.ptx"
    f.write_text(STORE_THEN_MBARRIER.replace("WAIT\n", wait))
    if not wait:
        with pytest.raises(LitmusError, match=r"k\.ptx:19: .*tma store of bytes that later become an mbarrier"):
            extract_file(str(f), out_dir=str(tmp_path / "out"))
        return
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    lines = [ln.text for r in x.skeleton.roles if r.name == "t32" for ln in r.lines]
    assert lines.index("cp.async.bulk.wait_group.read 0") < next(k for k, t in enumerate(lines) if "buf0_life" in t)
    assert x.check(jobs=0).ok


# thread 0 makes buf an mbarrier (init, arrive, wait, inval); after a bar.sync thread 32 copies a
# tile into buf with a TMA load completing on mb2 and reads it. FENCE: what thread 32 runs before
# the copy
INVAL_THEN_COPY = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .align 64 .b8 k_param_0[128])
.reqntid 64
{
  .shared .align 128 .b8 buf[64];
  .shared .align 8 .b8 mb2[8];
  .reg .b32 %r<8>;
  .reg .pred %p<6>;
  .reg .b64 %rd<4>;
  mov.u32 %r1, %tid.x;
  setp.ne.s32 %p1, %r1, 0;
  @%p1 bra SKIP;
  mbarrier.init.shared::cta.b64 [buf], 1;
  mbarrier.arrive.shared::cta.b64 %rd1, [buf];
W: mbarrier.try_wait.parity.shared::cta.b64 %p2, [buf], 0;
  @!%p2 bra W;
  mbarrier.inval.shared::cta.b64 [buf];
SKIP:
  bar.sync 0;
  setp.ne.s32 %p3, %r1, 32;
  @%p3 bra DONE;
  mbarrier.init.shared::cta.b64 [mb2], 1;
FENCE
  mov.b64 %rd2, k_param_0;
  mov.u32 %r4, 0;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd3, [mb2], 64;
  cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [buf], [%rd2, {%r4}], [mb2];
W2: mbarrier.try_wait.parity.shared::cta.b64 %p4, [mb2], 0;
  @!%p4 bra W2;
  ld.shared.u32 %r2, [buf];
DONE:
  ret;
}
"""


@pytest.mark.parametrize("fence", ["  fence.proxy.async.shared::cta;\n", ""], ids=["fenced", "unfenced"])
def test_a_copy_into_the_bytes_of_an_invalidated_mbarrier_needs_a_proxy_fence(tmp_path, fence):
    """mbarrier.inval is a generic-proxy write of the object's bytes (docs/model.md#a7-inval-proxy),
    so a TMA copy that reuses them is ordered after it only through fence.proxy.async in the copy's
    CTA. The data after the inval is a location of its own (the lifetimes), so the skeleton gives it
    the inval's write as a generic store: without the fence the copy races with it (MixedSizeRace,
    the tile being larger than the 8-byte object) and the kernel FAILS; it used to PASS, the
    shadow word checking the order of the lifetimes but not the proxy. With the fence it passes and
    dropping the fence is a caught mutant."""
    f = tmp_path / "k.ptx"
    f.write_text(INVAL_THEN_COPY.replace("FENCE\n", fence))
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"), mutants=bool(fence))
    text = Path(x.path).read_text()
    assert "st.shared::cta.b64 [buf_post0], 0" in text          # the inval's write of the reused bytes
    rep = x.check(jobs=0)
    assert rep.ok == bool(fence), rep.text
    if fence:
        assert not rep.unexplained and not rep.unknown, rep.text
        assert any("no-proxy-fence" in m for m in rep.mutants_caught), rep.text
    else:
        assert "MixedSizeRace" in rep.text and "PTX lines named: L19, L28" in rep.text, rep.text   # inval, copy


# a cluster of two CTAs: CTA 0's thread 0 arms CTA 1's mbarrier and copies a tile into CTA 1's buf
# with a TMA load that completes there; WAIT: what CTA 1's thread 0 does; END: the kernel's end
REMOTE_COPY = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .align 64 .b8 k_param_0[128])
.reqntid 32
.explicitcluster
.reqnctapercluster 2, 1, 1
{
  .shared .align 128 .b8 buf[64];
  .shared .align 8 .b8 mb[8];
  .reg .b32 %r<12>;
  .reg .pred %p<6>;
  .reg .b64 %rd<4>;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %cluster_ctarank;
  setp.ne.s32 %p1, %r1, 0;
  @%p1 bra SKIP;
  mbarrier.init.shared::cta.b64 [mb], 1;
  fence.mbarrier_init.release.cluster;
SKIP:
  barrier.cluster.arrive.relaxed.aligned;
  barrier.cluster.wait.aligned;
  @%p1 bra DONE;
  setp.ne.s32 %p2, %r2, 0;
  @%p2 bra CONSUMER;
  mov.u32 %r3, buf;
  mapa.shared::cluster.u32 %r4, %r3, 1;
  mov.u32 %r5, mb;
  mapa.shared::cluster.u32 %r6, %r5, 1;
  mov.b64 %rd2, k_param_0;
  mov.u32 %r7, 0;
  mbarrier.arrive.expect_tx.shared::cluster.b64 _, [%r6], 64;
  cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%r4], [%rd2, {%r7}], [%r6];
  bra DONE;
CONSUMER:
WAIT
DONE:
END
  ret;
}
"""
REMOTE_WAIT = """W: mbarrier.try_wait.parity.shared::cta.b64 %p4, [mb], 0;
  @!%p4 bra W;
  ld.shared.u32 %r8, [buf];
"""
CLUSTER_END = "  barrier.cluster.arrive.aligned;\n  barrier.cluster.wait.aligned;\n"


@pytest.mark.parametrize("wait,end", [("", CLUSTER_END), (REMOTE_WAIT, ""), (REMOTE_WAIT, CLUSTER_END)],
                         ids=["unwaited", "waited", "waited-and-cluster-barrier"])
def test_a_copy_into_another_cta_is_refused_at_the_cta_exit_check(tmp_path, wait, end):
    """A CTA must not exit while another CTA's copy still writes its shared memory. The exit shadow
    word was written just after the copy's issue: the kernel in which CTA 1 never waits for the copy
    (it may land after CTA 1 exits) PASSED, since the final cluster barrier orders the issue; the
    one in which CTA 1 waits for it with no cluster barrier after FAILED, the copy's completion
    ordering nothing of the issuing thread. Which CTA thread sees a copy complete is not followed,
    so such a copy is refused at its line (all three used to give a verdict)."""
    f = tmp_path / "k.ptx"
    f.write_text(REMOTE_COPY.replace("WAIT\n", wait).replace("END\n", end))
    with pytest.raises(LitmusError, match=r"k\.ptx:33: .*asynchronous access of CTA 1's shared memory"):
        extract_file(str(f), out_dir=str(tmp_path / "out"))


# the inval runs only when a value the thread cannot know is non-zero (review finding
# extract-inval-one-path): LOAD is that value's load, from global memory or a parameter
INVAL_ONE_PATH = REUSE.replace(".entry k()", ".entry k(.param .u64 k_param_0)").replace(
    "  mbarrier.inval", "LOAD\n  setp.eq.s32 %p3, %r3, 0;\n  @%p3 bra SKIP;\n  mbarrier.inval")


@pytest.mark.parametrize("load", ["ld.param.u64 %rd2, [k_param_0];\n  ld.global.u32 %r3, [%rd2];",
                                  "ld.param.u32 %r3, [k_param_0];"])
def test_inval_on_one_side_of_an_unknown_branch_is_refused(tmp_path, load):
    """An mbarrier.inval on one side only of a branch the extractor cannot decide: after it,
    t32's store writes data; on the other side it writes a live mbarrier's bytes (UB). Assuming
    the inval's side (it once did: "synchronizes more") gave a confident PASS; an inval is not
    synchronization, so the extractor refuses, naming the branch, and a parameter's value chosen
    with --param extracts that side (the side without the inval is refused as without any inval)."""
    f = tmp_path / "k.ptx"
    text = INVAL_ONE_PATH.replace("LOAD", load)
    f.write_text(text if "global" in load else text.replace(".u64 k_param_0", ".u32 k_param_0"))
    branch = next(i for i, ln in enumerate(f.read_text().splitlines(), 1) if "@%p3 bra SKIP" in ln)
    with pytest.raises(LitmusError) as e:
        extract_file(str(f), out_dir=str(tmp_path / "out"))
    msg = str(e.value)
    assert f"k.ptx:{branch}:" in msg and "differ in an mbarrier's lifetime" in msg, msg
    assert "mbarrier.inval at L" in msg
    if "ld.global" in load:
        assert "global data" in msg and "cannot choose" in msg
        return
    assert "--param k_param_0=VALUE" in msg
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out1"), params={"k_param_0": 1})
    assert x.check(jobs=0).ok                                     # the inval's side
    with pytest.raises(LitmusError, match="these shared bytes are an mbarrier"):
        extract_file(str(f), out_dir=str(tmp_path / "out0"), params={"k_param_0": 0})


def test_triton_attention_extracts_with_its_reused_mbarrier(tmp_path):
    """Triton's automatic warp specialization peels its loop on N_CTX > 0 and N_CTX > 128: the
    extractor sets N_CTX so that the loop runs the unrolled number of times (else the parity at
    line 1643 is unknown). The bytes of the Q mbarrier (global_smem+0: init L86, inval L117) are
    the Tensor Memory address slot before it and the K tile and the epilogue's tile after it:
    three locations, the order of the lifetimes checked through the shadow word."""
    [x] = extract_file(str(ATTN), out_dir=str(tmp_path))
    sk = x.skeleton
    assert [(r.name, r.size) for r in sk.roles] == [("w0_3", 128), ("w4_7", 128), ("w8_9", 64), ("w10", 32),
                                                    ("w11", 32)]
    assert sk.iterations == 3
    text = Path(x.path).read_text()
    assert "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [global_smem_pre0], 512" in text
    assert "mbarrier.init.shared::cta.b64 [global_smem_mb0], 1" in text
    # the inval (L117) writes the bytes the K tile reuses (docs/model.md#a7-inval-proxy)
    assert re.search(r"mbarrier.inval.shared::cta.b64 \[global_smem_mb0\] +// L117.*\n *st.shared::cta.b64 "
                     r"\[global_smem_post0\], 0 +// L117", text)
    assert "[global_smem_post0], [tmap3, {0, 0}], [global_smem_mb7]" in text     # the K tile, L1331
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [tmap" in text and "[global_smem_post0] //" in text
    # every role reads the TMEM address before the init; the loader and the MMA warp use the
    # bytes after the inval
    assert {c for c in sk.checks if c.endswith("=1") and ":r1=" in c} == {f"{r}:r1=1" for r in
                                                                        ("w0_3", "w4_7", "w8_9", "w10", "w11")}
    assert re.search(r"w8_9:r\d+!=2", " ".join(sk.checks)) and re.search(r"w10:r\d+!=2", " ".join(sk.checks))
    # the Q tile ends where its 16384 bytes end: the softmax scratch row after it is a piece of its own
    assert "cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes [global_smem3]" in text


def _cutlass(tiles: int):
    """CUTLASS's skeleton with the parameters the search finds (K = 192: 3 k-tiles, the 2-stage
    ring wraps; beta 1.0), `tiles` trips of the persistent tile loop."""
    from checker.extract.api import skeleton_of
    mod = load(CUTLASS.read_text(), str(CUTLASS))
    [fn] = mod.kernels()
    return skeleton_of(mod, fn, tiles=tiles, params={f"{fn.name}_param_0@12": 192, f"{fn.name}_param_0@768": 1.0})


@pytest.mark.parametrize("tiles", [1, 2])
def test_persistent_tile_loop_is_taken_the_stated_number_of_trips(tiles):
    """CUTLASS's warp-specialized kernel is persistent: each role loops over tiles until an index
    passes a count the PTX does not give (`setp.le.u64 %p, [Params+872], %rd18`), around the K
    loop, which wraps the ring by itself. The tile loop runs `tiles` trips, the K loop its 3
    iterations each trip; the epilogue's load warp, whose tile loop has no K loop inside, runs
    the same number of tiles (its exit tests the same count). The tile index is `%ctaid` plus the
    grid size (`%nctaid.x * %nctaid.y * %nctaid.z`, one value for the launch) per trip: the
    producer's thread 0 closes its loop after `tiles` trips (the window), a decision on the launch
    (`count <= tiles * grid size`), and every other role's loop follows it, trip by trip. The
    header and the role table say what was bounded, and by which decision, at which PTX line.
    (Each role used to close its own window; with `%nctaid` named, a thread after thread 0
    passed thread 0's trips by its facts and then ran a window of its own, and `--tiles 2` was
    refused at L3556: the tile index outgrew the term bound.)"""
    from checker.extract.render import role_table
    sk = _cutlass(tiles)
    exits = {"w0_3_96t": 770, "w2": 3556, "w4_7": 3168, "w8_11": 3168}
    assert {r.name: r.trace.tiles for r in sk.roles} == {"w0_3_96t": {770: tiles}, "w2": {}, "w4_7": {}, "w8_11": {}}
    table = role_table(sk)
    for name, line in exits.items():
        [block] = [b for b in table.split("\n" + name + " ")[1:2]]
        block = block.split("\nw")[0]
        follows = re.findall(rf"assumed at L{line}: branch (not taken|taken) \(its condition @p\d+ follows from the "
                             r"decision at L770 by thread 0: parameter \S+ <= (.*) \(u64\) is (true|false)\)", block)
        if name != "w0_3_96t":        # trips 1..tiles-1 stay, trip `tiles` leaves (taken: to the loop's end)
            assert [(side, truth) for side, _, truth in follows] == [("not taken", "false")] * (tiles - 1) + [
                ("taken", "true")], block
            assert all("launch %nctaid.x" in term for _, term, _ in follows)
    waits = {r.name: [e.line for e in r.trace.events if e.kind == "mb_wait"] for r in sk.roles}
    assert waits["w0_3_96t"].count(696) == 3 * tiles           # the producer's K loop: 3 per tile
    assert waits["w4_7"].count(1173) + waits["w4_7"].count(1532) == 3 * tiles     # the consumers' K loop
    assert waits["w2"].count(3393) == tiles                     # the C loads of one epilogue subtile
    note = next(n for n in sk.notes if n.startswith("outer loop closed"))
    assert f"{tiles} trip{'s' if tiles > 1 else ''} at L770 (--tiles)" in note
    assert "outer loop closed after" in table and "# outer loop closed" in yaml_text(sk)


def test_cutlass_extracts_at_default_options(tmp_path):
    """The parameter search sets K so that the K loop runs stages + 1 = 3 times (not the tile loop:
    its trips are counted per tile), beta is 1.0 (C is loaded), and the tile loop runs once;
    every tensor map is one litmus map: well under the limit of 64 locations."""
    [x] = extract_file(str(CUTLASS), out_dir=str(tmp_path))
    sk = x.skeleton
    assert [(r.name, r.size) for r in sk.roles] == [("w0_3_96t", 96), ("w2", 32), ("w4_7", 128), ("w8_11", 128)]
    assert sorted(v for k, v in sk.params.items()) == [1.0, 192]
    assert sk.iterations == 3 and [tuple(r.trace.tiles.values()) for r in sk.roles] == [(1,), (), (), ()]
    assert len(sk.memory) == 33 and sorted(k for k in sk.memory if k.startswith("tmap")) == [f"tmap{i}" for i in range(1, 5)]
    assert Path(x.path).read_text() == yaml_text(_cutlass(1))


def test_loop_nests_are_read_off_back_edges():
    """Loops are back edges whose body reaches them; the inline-asm spin loops are no loops, nor is
    a branch back to the function's exit block (`$L__BB0_174: ret`, laid out before it). CUTLASS's
    producer and consumer tile loops each hold their K loop; the epilogue load warp's holds none."""
    from checker.extract.loops import nest
    mod = load(CUTLASS.read_text(), str(CUTLASS))
    [fn] = mod.kernels()
    loops = nest(fn)
    spans = sorted((fn.body[lp.head].line, fn.body[lp.tail].line, loops.encloses(lp)) for lp in loops.loops)
    assert spans == [(659, 833, True), (685, 733, False), (960, 3252, True), (1525, 1892, False),
                     (3327, 3619, False)]


def _top_tested_tile_loop() -> str:
    """The TMA pipeline kernel with each role's K loop inside a tile loop tested at its top
    (`while (tile < tiles)`, the count a parameter the PTX does not give): the exit test comes
    before the trip's work."""
    lines = TMA.read_text().split("\n")

    def at(text):
        [i] = [i for i, x in enumerate(lines) if " ".join(x.split()) == text]
        return i

    def after(text, new):
        i = at(text)
        lines[i + 1:i + 1] = new

    def put(text, new):
        i = at(text)
        lines[i:i + 1] = new

    put(".param .u32 tma_ws_pipeline_param_2", ["\t.param .u32 tma_ws_pipeline_param_2,",
                                                "\t.param .u32 tma_ws_pipeline_param_3"])
    put(".reg .pred %p<12>;", ["\t.reg .pred %p<30>;"])
    put(".reg .b32 %r<68>;", ["\t.reg .b32 %r<90>;"])
    after("ld.param.u32 %r14, [tma_ws_pipeline_param_2];", ["\tld.param.u32 %r80, [tma_ws_pipeline_param_3];"])
    for role, (k, kk, t, p, kp, kloop, done) in {
            "consumer": ("%r66", "%r69", "%r71", "%p21", "%p6", "$L__BB0_7", "$L__BB0_10"),
            "producer": ("%r67", "%r68", "%r70", "%p20", "%p11", "$L__BB0_13", "$L__BB0_16")}.items():
        start = f"mov.u32 {k}, 0;" if role == "consumer" else "cvta.param.u64 %rd9, %rd2;"
        after(start, [f"\tmov.u32 {t}, 0;", f"$TILE_{role}:", f"\tsetp.ge.s32 {p}, {t}, %r80;",
                      f"\t@{p} bra {done};", f"\tmov.u32 {kk}, 0;"])
        put(f"setp.lt.s32 {kp}, {k}, %r14;", [f"\tadd.s32 {kk}, {kk}, 1;", f"\tsetp.lt.s32 {kp}, {kk}, %r14;"])
        i = at(f"@{kp} bra {kloop};")
        lines[i + 1:i + 2] = [f"\tadd.s32 {t}, {t}, 1;", f"\tbra.uni $TILE_{role};"]
    return "\n".join(lines)


@pytest.mark.parametrize("tiles", [1, 2])
def test_tile_loop_tested_at_its_top_runs_the_stated_trips(tiles):
    """A tile loop whose exit test comes before its work: the side of the test that leaves the
    loop ran no trip. It was taken with --tiles 1 (no copy, no wait left: a skeleton that passes
    whatever the K loop does, under a header saying 1 trip), and --tiles 2 ran one trip."""
    from checker.extract.api import skeleton_of
    mod = load(_top_tested_tile_loop(), "top_tested.ptx")
    [fn] = mod.kernels()
    sk = skeleton_of(mod, fn, tiles=tiles, params={"tma_ws_pipeline_param_2": 3})
    copies = {r.name: sum(e.kind == "tma_load" for e in r.trace.events) for r in sk.roles}
    waits = {r.name: sum(e.kind == "mb_wait" for e in r.trace.events) for r in sk.roles}
    assert copies == {"w0_3": 3 * tiles, "w4_7": 0}          # K = 3 per tile
    assert waits["w4_7"] == 3 * tiles
    # thread 0's window closes its loop: a decision on the tile count, which the consumers' loop follows
    assert {r.name: set(r.trace.tiles.values()) for r in sk.roles} == {"w0_3": {tiles}, "w4_7": set()}
    from checker.extract.render import role_table
    assert re.search(r"assumed at L\d+: loop left here \(its condition @p21 follows from the decision at L\d+ by thread "
                     rf"0: parameter tma_ws_pipeline_param_3 <= {tiles} \(s32\) is true\)", role_table(sk))


@pytest.mark.parametrize("count", ["ld.param.u32 %r80, [tma_ws_pipeline_param_3];", "mov.u32 %r80, %nctaid.x;"])
@pytest.mark.parametrize("tiles", [1, 2])
def test_a_decision_that_ends_the_tile_loop_before_its_trips_is_refused(tiles, count):
    """Thread 0 (the producer) returns if `count > 1` (`@%p25 ret`: the side that goes on is taken,
    `count <= 1`), then runs its tile loop `while (tile < count)`: its second test follows from that
    decision (the loop ends after one trip), and so does the consumers'. With --tiles 2 the skeleton
    ran one trip under a header that asked for two (no launch runs two trips after `count <= 1`,
    and the header listed no closed loop): it is refused, naming the loop, the branch and the
    decision, for the count a kernel parameter or `%nctaid.x`. With --tiles 1 the one trip is the
    one asked for."""
    from checker.extract.api import skeleton_of
    text = _top_tested_tile_loop().replace("ld.param.u32 %r80, [tma_ws_pipeline_param_3];", count)
    lines = text.split("\n")
    [i] = [i for i, x in enumerate(lines) if " ".join(x.split()) == "mov.u32 %r70, 0;"]
    lines[i:i] = ["\tsetp.gt.s32 %p25, %r80, 1;", "\t@%p25 ret;"]
    mod = load("\n".join(lines), "early.ptx")
    [fn] = mod.kernels()
    test = next(s.line for s in fn.body if s.instr and s.instr.predicate == "@p20")
    if tiles == 1:
        sk = skeleton_of(mod, fn, tiles=tiles, params={"tma_ws_pipeline_param_2": 3})
        assert {r.name: sum(e.kind == "tma_load" for e in r.trace.events) for r in sk.roles} == {"w0_3": 3, "w4_7": 0}
        return
    with pytest.raises(LitmusError, match=rf"early.ptx:{test}: .*--tiles 2 asks for 2 trips of the outer loop at "
                                          r"L\d+, but this branch leaves it after 1: loop left here .*follows from the "
                                          r"decision at L\d+.*no launch runs both"):
        skeleton_of(mod, fn, tiles=tiles, params={"tma_ws_pipeline_param_2": 3})


def test_branch_inside_the_tile_loop_keeps_its_direction_on_every_trip():
    """A branch on an unknown value after the K loop that is no exit of the tile loop (both sides go
    on to the next tile) guards a proxy fence: every trip takes the side that synchronizes more.
    With --tiles 2 it flipped on the last trip (the fence ran once), said as an outer loop closed
    at the branch's line."""
    from checker.extract.api import skeleton_of
    lines = _top_tested_tile_loop().split("\n")
    [i] = [i for i, x in enumerate(lines) if " ".join(x.split()) == "add.s32 %r70, %r70, 1;"]
    lines[i:i] = ["\tld.global.u32 %r85, [%rd3];", "\tsetp.eq.s32 %p25, %r85, 7;", "\t@%p25 bra $SKIP;",
                  "\tfence.proxy.async.shared::cta;", "$SKIP:"]
    mod = load("\n".join(lines), "flip.ptx")
    [fn] = mod.kernels()
    sk = skeleton_of(mod, fn, tiles=2, params={"tma_ws_pipeline_param_2": 3})
    [producer] = [r for r in sk.roles if r.name == "w0_3"]
    fence = max(s.line for s in fn.body if s.instr and s.instr.op == "fence")      # the guarded one
    assert sum(e.line == fence for e in producer.trace.events) == 2
    assert set(producer.trace.tiles.values()) == {2} and len(producer.trace.tiles) == 1


def _hand_offs(n: int) -> str:
    """A kernel whose thread 0 stores 1 to a shared word, warps 1..n each copy the previous word to
    the next after a bar.sync, and thread 0 arrives on an mbarrier only if the last word is 1."""
    steps = "".join(f"""  setp.eq.s32 %p{w}, %r2, {w};
  and.pred %p{w}, %p{w}, %p10;
  @!%p{w} bra $S{w};
  ld.shared.u32 %r{10 + w}, [%r4+{4 * (w - 1)}];
  st.shared.u32 [%r4+{4 * w}], %r{10 + w};
$S{w}:
  bar.sync 0;
""" for w in range(1, n + 1))
    return f""".version 8.0
.target sm_90a
.address_size 64
.visible .entry chain()
.reqntid 192, 1, 1
{{
  .reg .pred %p<20>;
  .reg .b32 %r<40>;
  .reg .b64 %rd<4>;
  .shared .align 8 .b8 S[64];
  .shared .align 8 .b8 MB[8];
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  and.b32 %r3, %r1, 31;
  setp.eq.s32 %p10, %r3, 0;
  mov.u32 %r4, S;
  mov.u32 %r30, MB;
  setp.ne.s32 %p11, %r1, 0;
  @%p11 bra $INIT;
  mbarrier.init.shared.b64 [%r30], 1;
  mov.u32 %r5, 1;
  st.shared.u32 [%r4], %r5;
$INIT:
  bar.sync 0;
{steps}  ld.shared.u32 %r20, [%r4+{4 * n}];
  setp.ne.s32 %p12, %r20, 1;
  @%p12 bra $END;
  @%p11 bra $END;
  mbarrier.arrive.shared.b64 %rd1, [%r30];
$END:
  ret;
}}
"""


def test_constants_that_do_not_settle_are_refused():
    """Each round of the threads' runs carries the constants the last one stored to shared memory:
    two hand-offs settle (the last word is known: no branch on it assumed), three did not in the 4
    rounds, and the last round's load was taken as unknown, its branch assumed ('depends on
    unknown values') though the kernel gives the value. Now refused."""
    from checker.extract.api import skeleton_of
    mod = load(_hand_offs(2), "two.ptx")
    sk = skeleton_of(mod, mod.kernels()[0])
    assert not any(a for r in sk.roles for a in r.trace.assumptions)
    mod = load(_hand_offs(3), "three.ptx")
    with pytest.raises(LitmusError, match="did not settle in 4 rounds"):
        skeleton_of(mod, mod.kernels()[0])


def test_tiles_out_of_range_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["extract", str(TMA), "-o", "unused", "--tiles", "0"])
    assert e.value.code == 2 and "--tiles 0: between 1 and 8" in capsys.readouterr().err


def test_mutants_in_a_file_larger_than_the_size_limit_are_judged(tmp_path):
    """A big kernel's skeleton with its mutants passes the default size of a litmus file
    (CUTLASS's: 2 MB): every mutant was NO RESULT, the file being refused as too large. The check
    allows the file it wrote, and the header names the flag `ptxmc run` needs."""
    f = tmp_path / "k.ptx"
    f.write_text(HANDSHAKE)
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"), mutants=True)
    from checker import limits
    size = Path(x.path).stat().st_size
    rep = x.check(jobs=0, lim=limits.current().override([f"yaml_bytes={size // 2}"]))
    assert rep.mutants_caught == ["w0_1_63t-L18-1-no-arrive"] and not rep.unknown, rep.text


def test_the_header_of_a_file_past_the_size_limit_names_the_flag(tmp_path, monkeypatch):
    """`ptxmc run` of such a file needs --limit yaml_bytes: the header's Check line says so."""
    from checker.extract import render
    f = tmp_path / "k.ptx"
    f.write_text(HANDSHAKE)
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"), mutants=True)
    assert "yaml_bytes" not in yaml_text(x.skeleton, x.mutants)
    small = render.Limits(yaml_bytes=1000)
    monkeypatch.setattr(render, "Limits", lambda: small)
    text = yaml_text(x.skeleton, x.mutants)
    flag = re.search(r"--limit yaml_bytes=(\d+)", text.splitlines()[3])
    assert flag and int(flag.group(1)) >= len(text.encode()), text.splitlines()[3]
