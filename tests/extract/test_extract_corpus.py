"""`ptxmc extract` on the kernels of examples/kernels/ built with CUTLASS, the CuTe DSL and
TileLang (committed PTX: no compiler needed). test_extract.py checks every committed file at
default options; this file pins what each of these kernels shows."""
from __future__ import annotations

import re
from pathlib import Path

from checker.api import run
from checker.extract.api import extract_file

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "examples" / "kernels"
TILELANG = KERNELS / "tilelang" / "tilelang_ws_gemm.sm90a.ptx"


def _events():
    from checker import limits
    return limits.current().override(["events=1000", "instructions=256"])


def _with_line_after(text: str, role: str, after: str, line: str) -> str:
    """The skeleton with `line` inserted in `role`'s program after each line containing `after`."""
    out, cur = [], None
    for ln in text.splitlines():
        m = re.match(r"    (\w+):$", ln)
        cur = m.group(1) if m else cur
        out.append(ln)
        if cur == role and after in ln:
            out.append("        " + line)
    return "\n".join(out) + "\n"


def test_tilelang_generic_tile_writes_need_a_proxy_fence(tmp_path):
    """TileLang 0.1.15, hand-written warp specialization (tilelang/ws_gemm.py): the producer
    warpgroup writes the A and B tiles with generic `st.shared.v4`, the consumer reads them with
    wgmma (async proxy) after an mbarrier wait, and no `fence.proxy.async` lies between them
    (InjectFenceProxy inserted none: tilelang_ws_gemm.tir_before_InjectFenceProxy.txt). The
    skeleton reports the mixed-proxy race, naming the producer's store and the consumer's wgmma."""
    [x] = extract_file(str(TILELANG), out_dir=str(tmp_path))
    sk = x.skeleton
    assert [(r.name, r.size) for r in sk.roles] == [("w0_3", 128), ("w4_7", 128)]
    text = Path(x.path).read_text()
    # the tiles are cut where the consumer's wgmma groups start: A and B of each of the 2 stages
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {d0}, [buf_dyn_shmem0], [buf_dyn_shmem2]" in text
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {d0}, [buf_dyn_shmem1], [buf_dyn_shmem3]" in text
    assert "fence.proxy.async" not in text
    rep = x.check(jobs=0)
    assert not rep.ok
    [res] = run([x.path], jobs=0, limits=_events())
    assert {u.flag for u in res.undefined} == {"MixedSizeRace"}
    assert "w4_7: st.shared::cta.b32 [buf_dyn_shmem0]" in rep.text and "w0_3: wgmma.mma_async" in rep.text
    src = TILELANG.read_text().splitlines()
    named = [int(n) for n in re.findall(r"L(\d+)", rep.text.split("PTX lines named:")[1])]
    assert {src[n - 1].split()[0] for n in named} == {"st.shared.v4.u32", "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"}


def test_tilelang_repair_is_one_proxy_fence_on_either_side(tmp_path):
    """The repair: `fence.proxy.async` after the producer's tile stores (before its arrive), or
    after the consumer's wait (before its wgmma). Either makes the skeleton pass; without it,
    it fails (the test above)."""
    [x] = extract_file(str(TILELANG), out_dir=str(tmp_path), iterations=2)
    text = Path(x.path).read_text()
    fence = "fence.proxy.async.shared::cta"
    producer = _with_line_after(text, "w4_7", "st.shared::cta.b32 [buf_dyn_shmem2]", fence)
    producer = _with_line_after(producer, "w4_7", "st.shared::cta.b32 [buf_dyn_shmem3]", fence)
    consumer = _with_line_after(text, "w0_3", "mbarrier.try_wait.parity.shared::cta.b64 p", fence)
    for name, fixed in (("producer", producer), ("consumer", consumer)):
        assert fixed.count(fence) >= 3, name
        path = tmp_path / f"{name}.yaml"
        path.write_text(fixed)
        [res] = run([str(path)], jobs=0, limits=_events())
        # "pass": the skeleton's one expectation, `undefined: false`, holds (docs/cli.md)
        assert res.status == "pass" and not res.undefined, (name, res.message, [u.flag for u in res.undefined])


CUTEDSL = KERNELS / "cutedsl" / "cutedsl_hopper_dense_gemm.sm90a.ptx"


def test_cutedsl_peek_becomes_the_wait_it_skips(tmp_path):
    """CuTe DSL's mainloop peeks at the next stage's full barrier with a non-blocking
    `try_wait` (PTX line 322) and, one iteration later, skips its blocking spin loop when the
    peek succeeded. The wait belongs where the thread stops (after the producer part of the
    iteration); read at the peek, the single warpgroup would wait for a copy it has not issued
    yet, and every execution would block."""
    [x] = extract_file(str(CUTEDSL), out_dir=str(tmp_path))
    sk = x.skeleton
    assert [(r.name, r.size) for r in sk.roles] == [("w0_3_125t", 125), ("w1_3_3t", 3)]
    lines = [(ln.kind, ln.src_line) for ln in sk.roles[0].lines]
    peek = lines.index(("mb_wait", 322))
    refill = [i for i, (k, n) in enumerate(lines) if k == "tma_load" and n == 355]
    assert refill and refill[-1] < peek          # after the copy into the stage it waits for
    rep = x.check(jobs=0)
    assert rep.ok, rep.text


def test_cutedsl_load_covers_the_pieces_its_tile_spans(tmp_path):
    """With a 128x128 tile (tests/data/extract/, `build_cutedsl.py ... --tile128`) the epilogue
    reuses the A tile's bytes as four C buffers, cut by their TMA stores, and the wgmma reads A's
    second M half 8 KB into the tile: the TMA load into A writes each piece of its tile up to the
    last one a wgmma reads (each a copy of its own, all counted by expect_tx), so a wgmma read
    of the second half still meets the copy that fills it."""
    ptx = ROOT / "tests" / "data" / "extract" / "cutedsl_hopper_dense_gemm_128x128.sm90a.ptx"
    [x] = extract_file(str(ptx), out_dir=str(tmp_path))
    text = Path(x.path).read_text()
    consumer = x.skeleton.roles[0]
    copies = [ln.text for ln in consumer.lines if ln.kind == "tma_load" and ln.src_line == 136]
    pieces = [c.split("[")[1].split("]")[0] for c in copies]
    assert pieces[:3] == ["dynamic_shmem__00", "dynamic_shmem__01", "dynamic_shmem__02"]   # A, stage 0
    assert "expect_tx.shared.b64 _, [dynamic_shmem__0_mb0], 64" in text     # 3 pieces of A + B
    mma = [ln.text for ln in consumer.lines if ln.kind == "wgmma_mma"]
    assert any("[dynamic_shmem__02]" in m for m in mma)                      # the second M half


BETA = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .align 64 .b8 k_param_0[64])
.reqntid 32
{
  .shared .align 8 .b8 mb[16];
  .shared .align 128 .b8 tile[1024];
  .reg .b32 %r<10>;
  .reg .b64 %rd<6>;
  .reg .pred %p<5>;
  .reg .f32 %f<2>;
  mov.b64 %rd1, k_param_0;
  ld.param.u64 %rd2, [%rd1+8];
  setp.eq.s64 %p1, %rd2, 0;
  @%p1 bra SCALAR;
  ld.global.f32 %f1, [%rd2];
  bra.uni HAVE;
SCALAR:
  ld.param.f32 %f1, [%rd1+16];
HAVE:
  mov.u32 %r1, %tid.x;
  setp.ne.s32 %p2, %r1, 0;
  @%p2 bra DONE;
  mbarrier.init.shared::cta.b64 [mb], 1;
  mbarrier.init.shared::cta.b64 [mb+8], 1;
  setp.eq.f32 %p3, %f1, 0f00000000;
  selp.u32 %r2, 0, 1, %p3;
  shl.b32 %r3, %r2, 3;
  mov.u32 %r4, mb;
  add.s32 %r5, %r4, %r3;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r5], 16;
  cvta.param.u64 %rd3, %rd1;
  mov.u32 %r6, 0;
  cp.async.bulk.tensor.1d.shared::cta.global.mbarrier::complete_tx::bytes [tile], [%rd3, {%r6}], [%r5];
W: mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r5], 0;
  @!%p4 bra W;
  ld.shared.u32 %r7, [tile];
DONE:
  ret;
}
"""


def test_float_parameter_branch_and_null_pointer_field(tmp_path):
    """CUTLASS's epilogue: `beta` comes from `beta_ptr` when that field of Params is set (data),
    else from the field `beta`; whether C is loaded, and so which mbarrier the consumer waits
    on, depends on `beta == 0` (`setp.eq.f32`). The pointer field is taken as null, and beta as
    1.0 (non-zero: the side that loads C); both decisions are stated."""
    f = tmp_path / "beta.ptx"
    f.write_text(BETA)
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    body = Path(x.path).read_text()
    assert "mbarrier.arrive.expect_tx.shared::cta.b64 _, [mb1], 16" in body
    assert "parameter k_param_0@16 taken as 1.0" in body
    assert "parameter k_param_0@8 taken as 0 (a pointer field tested for null" in x.table
    assert x.check(jobs=0).ok


def test_param_option_takes_the_other_side(tmp_path, capsys):
    """`--param NAME@OFFSET=0`: beta = 0, the epilogue does not load C, the copy completes on the
    other mbarrier; the header says which value was taken. A malformed value is a usage error."""
    from checker.cli import main
    f = tmp_path / "beta.ptx"
    f.write_text(BETA)
    assert main(["extract", str(f), "-o", str(tmp_path / "out"), "--param", "k_param_0@16=0.0"]) == 0
    body = (tmp_path / "out" / "k.yaml").read_text()
    assert "mbarrier.arrive.expect_tx.shared::cta.b64 _, [mb0], 16" in body
    assert "parameter k_param_0@16 taken as 0.0" in body
    capsys.readouterr()
    assert main(["extract", str(f), "-o", str(tmp_path / "o2"), "--param", "k_param_0@16"]) != 0
    assert "--param 'k_param_0@16': write NAME=VALUE" in capsys.readouterr().err


COPIES_FIRST = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .align 64 .b8 k_param_0[64])
.reqntid 32
{
  .shared .align 8 .b8 mb[8];
  .shared .align 128 .b8 tile[1024];
  .reg .b32 %r<10>;
  .reg .b64 %rd<6>;
  .reg .pred %p<5>;
  mov.b64 %rd1, k_param_0;
  mov.u32 %r1, %tid.x;
  setp.ne.s32 %p2, %r1, 0;
  @%p2 bra DONE;
  mbarrier.init.shared::cta.b64 [mb], 1;
  cvta.param.u64 %rd3, %rd1;
  mov.u32 %r6, 0;
  cp.async.bulk.tensor.1d.shared::cta.global.mbarrier::complete_tx::bytes [tile], [%rd3, {%r6}], [mb];
  mbarrier.expect_tx.shared::cta.b64 [mb], 16;
  mbarrier.arrive.shared::cta.b64 %rd4, [mb];
W: mbarrier.try_wait.parity.shared::cta.b64 %p4, [mb], 0;
  @!%p4 bra W;
  ld.shared.u32 %r7, [tile];
DONE:
  ret;
}
"""


def test_copies_before_their_expect_tx(tmp_path):
    """CUTLASS's epilogue issues C's TMA copies, then `mbarrier.expect_tx` for their bytes, then
    arrives: the expect_tx counts the copies before it (complete_tx may come first; the phase
    still completes only after the copy's bytes). The read after the wait sees the copy."""
    f = tmp_path / "k.ptx"
    f.write_text(COPIES_FIRST)
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    body = Path(x.path).read_text()
    assert "mbarrier.expect_tx.shared::cta.b64 [mb0], 16" in body
    assert x.skeleton.checks == ["t0:r1!=1"]
    rep = x.check(jobs=0)
    assert rep.ok, rep.text
    # without the arrive's expectation the copy's bytes are not awaited: the same skeleton with
    # expect_tx 0 lets the read see the old value
    short = body.replace("mbarrier.expect_tx.shared::cta.b64 [mb0], 16", "mbarrier.expect_tx.shared::cta.b64 [mb0], 0")
    (tmp_path / "short.yaml").write_text(short)
    [res] = run([str(tmp_path / "short.yaml")], jobs=0, limits=_events())
    assert res.status in ("fail", "undefined")
