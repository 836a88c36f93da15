"""The exact reductions of an extracted skeleton (checker.extract.reduce, docs/extract.md "What is
abstracted, and why"): each fires where it should, and the verdicts of every skeleton it changes
-- the corpus kernels checkable at default options and small hand-written kernels -- are the same
with and without it (the skeleton's own question: status, undefined-behaviour flags, each
condition; and the same mutants)."""
from __future__ import annotations

from pathlib import Path

import pytest

from checker.api import run
from checker.extract import skeleton
from checker.extract.api import extract_file
from checker.extract.render import mutants

from .test_extract import CUTLASS, KERNELS, _cutlass, _events

INIT_FENCE = "fence.mbarrier_init"


def _fences(sk) -> dict[str, list[int]]:
    return {r.name: [ln.src_line for ln in r.lines if ln.text.startswith(INIT_FENCE)] for r in sk.roles}


def test_cutlass_skeleton_is_reduced(monkeypatch):
    """CUTLASS's skeleton: the three fence.mbarrier_init of the warps that initialise nothing are
    gone, the producer keeps only the last of its three (L355: only inits between them), and the
    mbarrier it initialises at L342 for later tiles (no instruction of a one-tile skeleton uses it)
    is gone with its location; the notes say so; the mutants are the same ones."""
    sk = _cutlass(1)
    assert _fences(sk) == {"w0_3_96t": [355], "w2": [], "w4_7": [], "w8_11": []}
    assert not any(ln.src_line == 342 for r in sk.roles for ln in r.lines)
    assert "ZN7cutlass4smemE_mb12" not in sk.memory and len(sk.memory) == 33
    assert any("(init L342) not emitted" in n for n in sk.notes)
    assert any(n.startswith("w2: fence.mbarrier_init at L202, L314, L355 not emitted") for n in sk.notes)
    assert any(n.startswith("w0_3_96t: fence.mbarrier_init at L202, L314 not emitted") for n in sk.notes)
    monkeypatch.setattr(skeleton, "reduce", lambda sk: None)
    full = _cutlass(1)
    assert sum(len(r.lines) for r in full.roles) - sum(len(r.lines) for r in sk.roles) == 12
    assert [m.name for m in mutants(full)] == [m.name for m in mutants(sk)] and len(mutants(sk)) > 50


def _verdict(result) -> tuple:
    return (result.status, sorted(u.flag for u in result.undefined),
            [(c.text, c.allowed) for c in result.conditions])


def _both(ptx: Path, tmp_path, monkeypatch) -> tuple:
    """The skeleton of `ptx` with and without the reductions: their texts and verdicts."""
    [x] = extract_file(str(ptx), out_dir=str(tmp_path / "reduced"))
    with monkeypatch.context() as m:
        m.setattr(skeleton, "reduce", lambda sk: None)
        [y] = extract_file(str(ptx), out_dir=str(tmp_path / "full"))
    [a] = run([x.path], jobs=0, limits=_events())
    [b] = run([y.path], jobs=0, limits=_events())
    return (Path(x.path).read_text(), Path(y.path).read_text()), (_verdict(a), _verdict(b)), x.skeleton


@pytest.mark.parametrize("name", ["cutedsl/cutedsl_hopper_dense_gemm.sm90a.ptx",
                                  "tilelang/tilelang_ws_gemm.sm90a.ptx"])
def test_corpus_verdicts_are_the_same_with_and_without(name, tmp_path, monkeypatch):
    """The corpus kernels the reduction changes that are checked at default options (CuTe DSL: a
    warp that passes the producer's fence.mbarrier_init; TileLang: the consumer warpgroup's):
    the same verdict -- CuTe DSL passes, TileLang's missing proxy fence is still reported."""
    (reduced, full), (a, b), sk = _both(KERNELS / name, tmp_path, monkeypatch)
    assert reduced != full and full.count(INIT_FENCE) > reduced.count(INIT_FENCE)
    assert a == b and a[0] in ("pass", "fail")


TWO_ROLES = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k()
.reqntid 64
{
  .shared .align 8 .b8 mb[16];
  .shared .align 16 .b8 tile[16];
  .reg .b32 %r<4>;
  .reg .pred %p<4>;
  .reg .b64 %rd<2>;
  mov.u32 %r1, %tid.x;
  setp.ne.s32 %p1, %r1, 0;
  @%p1 bra B;
  mbarrier.init.shared::cta.b64 [mb], 1;
  fence.mbarrier_init.release.cluster;
  mbarrier.init.shared::cta.b64 [mb+8], 1;
B:
  fence.mbarrier_init.release.cluster;
  bar.sync 0;
  @%p1 bra C;
  st.shared.u32 [tile], 5;
  mbarrier.arrive.shared::cta.b64 %rd1, [mb];
C:
  setp.ne.s32 %p2, %r1, 32;
  @%p2 bra D;
W: mbarrier.try_wait.parity.shared::cta.b64 %p3, [mb], 0;
  @!%p3 bra W;
  ld.shared.u32 %r2, [tile];
D:
  ret;
}
"""


VARIANTS = {
    "as-is": (TWO_ROLES, "pass", 1),
    # the arrive (.release by default) publishes the init to the waiter
    "no-barrier": (TWO_ROLES.replace("  bar.sync 0;\n", ""), "pass", 1),
    # a .relaxed arrive publishes the init only through the fence.mbarrier_init kept before it,
    # and not the word (the restricted fence orders the inits only): a data failure, defined
    "relaxed": (TWO_ROLES.replace("  bar.sync 0;\n", "").replace("arrive.shared", "arrive.relaxed.cluster.shared"),
                "fail", 1),
    # without any fence nothing orders the init before the wait
    "relaxed-no-fence": (TWO_ROLES.replace("  bar.sync 0;\n", "").replace("arrive.shared", "arrive.relaxed.cluster.shared")
                         .replace("  fence.mbarrier_init.release.cluster;\n", ""), "fail", 0),
    # every execution blocks at the wait
    "no-arrive": (TWO_ROLES.replace("  mbarrier.arrive.shared::cta.b64 %rd1, [mb];\n", ""), "fail", 1),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_hand_written_verdicts_are_the_same_with_and_without(variant, tmp_path, monkeypatch):
    """Thread 0 initialises two mbarriers with a fence.mbarrier_init between them and after them,
    publishes a word and arrives; every thread passes the last fence, thread 32 waits and reads
    the word. Reduced: the waiter's fence (it initialises nothing), thread 0's first fence (only
    an init before the next one), and the second mbarrier (only its init names it). The verdict
    is the same with and without, in every variant: the fence that is kept is the one a
    `.relaxed` arrive needs to publish the init (without any fence: MbarrierUninitialised)."""
    text, status, kept = VARIANTS[variant]
    f = tmp_path / "k.ptx"
    f.write_text(text)
    (reduced, full), (a, b), sk = _both(f, tmp_path, monkeypatch)
    assert reduced != full and "mb1" in full and "mb1" not in reduced.split("\n- name:")[1]
    assert sum(len(v) for v in _fences(sk).values()) == kept
    assert a == b and a[0] == status
    assert a[1] == (["MbarrierUninitialised"] if variant == "relaxed-no-fence" else [])
