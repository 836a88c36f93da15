"""Can every hardware barrier of a test complete? A CTA barrier (`bar`/`barrier` .sync/.arrive),
warp barrier or cluster barrier (`barrier.cluster.arrive`/`.wait`) that never completes cannot be
bounded the way a spin loop is (checker.harness.flow): the waiting warps would hold the GPU
forever. Such a test is a hang the model reports (`expect: {hang: allowed}`), and the harness
refuses to generate it, naming the barrier, rather than leave a stuck GPU.

Which arrivals form each generation is the model's own question (checker.isa.barriers,
docs/model.md#a19): every control path and every order of arrival is tried, and the test is
refused if any of them leaves a thread waiting, or leaves arrivals in a generation that never
completes (the harness runs many instances one after another on the same hardware barriers, so
a leftover arrival would count towards the next instance's generation). Cluster barriers must
also come in arrive/wait pairs (the padding that checker.harness.codegen adds for threads with
fewer pairs relies on it).

Pure: reads the test, emits nothing.
"""
from __future__ import annotations

from .. import limits
from ..ast import LitmusTest
from ..errors import LimitExceeded, LitmusError, NeverCompletes
from ..isa import barriers as generations


def problems(test: LitmusTest) -> list[str]:
    """Why some hardware barrier of the test may never complete (empty: every one completes)."""
    return _schedule_problems(test) + _cluster_problems(test)


def _schedule_problems(test: LitmusTest) -> list[str]:
    from ..unfold.variants import combos

    if not any(i.family in generations.FAMILIES for t in test.threads for i in t.code):
        return []
    out: list[str] = []
    try:
        for c in combos(test, limits.current()):
            if c.schedule is None:                    # a static reason no order can help (the model says it)
                generations.schedules(c.test)
                continue
            if c.schedule.blocked:
                out.append(f"a barrier never completes ({c.schedule.why})")
            elif c.schedule.leftover:
                u = c.schedule.leftover[0]
                out.append(f"{u.thread}:{u.index} '{u.instr.text}': {generations.name(u.key)} is left with arrivals "
                           "of a generation that never completes, which the next instance would inherit")
    except NeverCompletes as e:
        out.append(str(e))
    except (LitmusError, LimitExceeded) as e:         # malformed, or too many ways: not provably safe
        return [f"the barriers cannot be checked: {e}"]
    return [f"{p}: the GPU would wait forever (a hang the harness cannot bound; ask the model: "
            f"`ptxmc check FILE::NAME hang`)" for p in dict.fromkeys(out)]


def _cluster_problems(test: LitmusTest) -> list[str]:
    out = []
    for t in test.threads:
        seq = [(k, i) for k, i in enumerate(t.code) if i.op == "barrier" and i.has("cluster")]
        expect = "arrive"
        for k, i in seq:
            kind = "arrive" if i.has("arrive") else "wait"
            if kind != expect:
                out.append(f"{t.name}:{k} '{i.text}': barrier.cluster.{kind} without a "
                           f"{'wait after its arrive' if kind == 'arrive' else 'preceding arrive of its own'}: "
                           f"the harness needs arrive/wait pairs (a wait without its arrive never completes; "
                           f"the GPU would wait forever)")
                break
            expect = "wait" if kind == "arrive" else "arrive"
        else:
            if expect == "wait":
                out.append(f"{t.name}: barrier.cluster.arrive without a later wait: the harness pads with "
                           f"arrive/wait pairs and needs them whole")
    return out
