"""paths.split leaves out the paths with more than one failed iteration of waits on quiet mbarriers
that the undefined-behaviour question of a hang-question test never combines
(checker.verdict.union._ub_variants, docs/model.md#a18, "Failed iterations of an mbarrier wait"),
so that they do not count against the paths limit: the paths it keeps with at most one are exactly
those the unfiltered split gives (after the cut await is cut after one failed iteration), on every
liveness test and on a thread of nine waits (a CUTLASS producer's shape) whose unfiltered paths
are over the limit."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from checker import limits
from checker.errors import LimitExceeded
from checker.front.litmus import load_file, load_text
from checker.unfold.variants import thread_paths
from checker.verdict.check import check_test
from checker.verdict.quiet import quiet_mbarriers
from checker.verdict.union import _cut_once, _quiet_rounds
from tests.unfold.test_ub_variants import MODEL

ROOT = Path(__file__).resolve().parents[2]
LIVENESS = sorted((ROOT / "litmus" / "liveness").glob("*.yaml"))


def _kept(t, lim, quiet):
    """Per thread: the codes of the paths with at most one failed quiet iteration (each cut after
    one failed iteration where it is cut in a quiet wait), and how many paths split made."""
    per = thread_paths(t, lim, True, frozenset(), spin_once=False, quiet=quiet)
    q = quiet_mbarriers(t)
    return [{_cut_once(p, q).code for p in ps if _quiet_rounds(_cut_once(p, q), q) <= 1} for ps in per], \
        [len(ps) for ps in per]


def _tests():
    for f in LIVENESS:
        for t in load_file(f):
            if not isinstance(t, Exception) and quiet_mbarriers(t):
                yield pytest.param(t, id=t.name)


@pytest.mark.parametrize("t", list(_tests()))
@pytest.mark.parametrize("unroll", [2, 3])
def test_the_filter_keeps_every_path_the_question_combines(t, unroll):
    lim = limits.current().override([f"unroll={unroll}"])
    t = replace(t, unroll=None)
    quiet = quiet_mbarriers(t)
    want, total = _kept(t, lim, frozenset())
    got, made = _kept(t, lim, quiet)
    assert got == want
    assert all(m <= n for m, n in zip(made, total))


NINE = """
- name: NineWaits
  doc: "P0 waits on nine mbarriers in turn, P1 arrives on each: at unroll 2 P0 has 2^10 - 1 paths with its
    awaits unrolled, of which 55 have at most one failed iteration outside the wait it is cut in (91 made)."
  source: "PTX ISA 9.4, mbarrier.try_wait, mbarrier.arrive"
  arch: sm_90
  memory:
MEMORY
  threads:
    P0:
      at: gpu0.cta0.warp0
      code:
WAITS
    P1:
      at: gpu0.cta0.warp1
      code:
ARRIVES
  expect:
    undefined: false
    hang: forbidden
"""


def _nine():
    text = NINE.replace("MEMORY", "\n".join(f"    m{k}: {{space: shared, owner: gpu0.cta0, mbarrier: {{count: 1}}}}"
                                           for k in range(9)))
    text = text.replace("WAITS", "\n".join(f"        - mbarrier.try_wait.parity.shared::cta.b64 p{k}, [m{k}], 0 == 1"
                                          for k in range(9)))
    text = text.replace("ARRIVES", "\n".join(f"        - mbarrier.arrive.shared::cta.b64 _, [m{k}]" for k in range(9)))
    (t,) = load_text(text, "nine.yaml")
    return t


def test_a_thread_over_the_limit_unfiltered_is_under_it_filtered():
    t = _nine()
    assert len(quiet_mbarriers(t)) == 9
    with pytest.raises(LimitExceeded):
        thread_paths(t, limits.current().override(["paths=256"]), True, frozenset(), spin_once=False)
    lim = limits.current().override(["paths=1024"])
    want, total = _kept(t, lim, frozenset())
    got, made = _kept(t, limits.current().override(["paths=256"]), quiet_mbarriers(t))
    assert total[0] == 1023 and made[0] == 91 and len(got[0]) == 55
    assert got == want


def test_the_hang_question_answers_under_the_default_limit():
    """Before the filter, the undefined-behaviour question refused P0's 1023 paths."""
    r = check_test(_nine(), MODEL)
    assert r.status == "pass", r.message
