"""The value a generic read must see when one role writes a piece with several values and
publishes each through an mbarrier it alone arrives on (skeleton._expected_store): the role's last
store before the arrive that completes the phase the reader waited for. Such reads used to be
unchecked (only a piece one value is written to had a check), so a producer that stores the next
value after its arrive, which a consumer may read too early, passed."""
from __future__ import annotations

import pytest

from checker.extract.api import extract_file

# thread 0 stores data and arrives on `full`, twice (waiting on `empty` between); thread 32 waits
# for each phase of `full`, reads data and arrives on `empty`
TWO_ROUNDS = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k()
.reqntid 64
{
  .shared .align 8 .b8 full[8];
  .shared .align 8 .b8 empty[8];
  .shared .align 16 .b8 data[16];
  .reg .b32 %r<10>;
  .reg .pred %p<10>;
  .reg .b64 %rd<4>;
  mov.u32 %r1, %tid.x;
  setp.ne.s32 %p1, %r1, 0;
  @%p1 bra INITED;
  mbarrier.init.shared::cta.b64 [full], 1;
  mbarrier.init.shared::cta.b64 [empty], 1;
  fence.mbarrier_init.release.cluster;
INITED:
  bar.sync 0;
  setp.eq.s32 %p2, %r1, 32;
  @%p2 bra CONSUMER;
  @%p1 bra DONE;
  st.shared.u32 [data], 10;
  mbarrier.arrive.shared::cta.b64 %rd1, [full];
E: mbarrier.try_wait.parity.shared::cta.b64 %p3, [empty], 0;
  @!%p3 bra E;
ROUND1
  bra.uni DONE;
CONSUMER:
F0: mbarrier.try_wait.parity.shared::cta.b64 %p4, [full], 0;
  @!%p4 bra F0;
  ld.shared.u32 %r2, [data];
  mbarrier.arrive.shared::cta.b64 %rd2, [empty];
F1: mbarrier.try_wait.parity.shared::cta.b64 %p5, [full], 1;
  @!%p5 bra F1;
  ld.shared.u32 %r3, [data];
DONE:
  ret;
}
"""
STORE = "  st.shared.u32 [data], 11;\n"
ARRIVE = "  mbarrier.arrive.shared::cta.b64 %rd3, [full];\n"


@pytest.mark.parametrize("round1, ok", [(STORE + ARRIVE, True), (ARRIVE + STORE, False)],
                         ids=["stored-before-the-arrive", "stored-after-the-arrive"])
def test_a_value_published_through_an_mbarrier_is_the_one_stored_before_the_arrive(tmp_path, round1, ok):
    f = tmp_path / "k.ptx"
    f.write_text(TWO_ROUNDS.replace("ROUND1\n", round1))
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    rep = x.check(jobs=0)
    if ok:
        assert rep.ok, rep.text
        assert {"t32:r1!=10", "t32:r3!=11"} <= set(x.skeleton.checks), x.skeleton.checks
    else:       # the second read may see 11, stored after the arrive it waited for, or 10
        assert not rep.ok and "t32:r3=10" in rep.text, rep.text


# warp 0 publishes data to warp 1 through named barrier 1 (bar.arrive / bar.sync, 64 threads)
NAMED = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k()
.reqntid 64
{
  .shared .align 8 .b8 mb[8];
  .shared .align 16 .b8 data[16];
  .reg .b32 %r<10>;
  .reg .pred %p<10>;
  .reg .b64 %rd<4>;
  mov.u32 %r1, %tid.x;
  setp.ne.s32 %p1, %r1, 32;
  @%p1 bra INITED;
  mbarrier.init.shared::cta.b64 [mb], 32;
  fence.mbarrier_init.release.cluster;
INITED:
  bar.sync 0;
  setp.ge.u32 %p2, %r1, 32;
  @%p2 bra CONSUMER;
PRODUCER
  bra.uni DONE;
CONSUMER:
WAIT  bar.sync 1, 64;
  ld.shared.u32 %r2, [data];
DONE:
  ret;
}
"""
ST10, ST11 = "  st.shared.u32 [data], 10;\n", "  st.shared.u32 [data], 11;\n"
BAR_ARRIVE = "  bar.arrive 1, 64;\n"
MB_ARRIVE = "  mbarrier.arrive.shared::cta.b64 %rd1, [mb];\n"
MB_WAIT = "W: mbarrier.try_wait.parity.shared::cta.b64 %p3, [mb], 0;\n  @!%p3 bra W;\n"


@pytest.mark.parametrize("producer, wait, check, ok", [
    (ST10 + ST11 + BAR_ARRIVE, "", "r0!=11", True),
    (ST10 + BAR_ARRIVE + ST11, "", "r0!=10", False),
    # the second value is published through the mbarrier the consumer waits on before the
    # barrier: the one meant is not the value before the bar.arrive (a check for 10 would report
    # this correct kernel)
    (ST10 + BAR_ARRIVE + ST11 + MB_ARRIVE, MB_WAIT, None, True),
], ids=["stored-before-bar.arrive", "stored-after-bar.arrive", "published-otherwise"])
def test_a_value_published_through_a_named_barrier_is_the_one_stored_before_the_arrival(
        tmp_path, producer, wait, check, ok):
    f = tmp_path / "k.ptx"
    f.write_text(NAMED.replace("PRODUCER\n", producer).replace("WAIT", wait))
    [x] = extract_file(str(f), out_dir=str(tmp_path / "out"))
    rep = x.check(jobs=0)
    assert rep.ok == ok, rep.text
    # the readers: thread 32 (it initialises mb) and lanes 1-31 of warp 1
    checks = [c for c in x.skeleton.checks if c.startswith(("t32:", "w1_31t:"))]
    if check:
        assert checks == [f"t32:{check}", f"w1_31t:{check}"], x.skeleton.checks
    else:
        assert not any(c.endswith("!=10") for c in checks), x.skeleton.checks
