"""Combinations of the hang question that stop at the same places are one test (a thread stopped
at a barrier has the same code whatever path it would take past it): one Session answers them
all (checker.verdict.liveness._as_far_as_it_runs). The hangs found are those of a Session built
for each combination, on every liveness test, and a producer/consumer pair stopped at a named
barrier shares its Sessions."""
from __future__ import annotations

from pathlib import Path

import pytest

from checker.errors import LimitExceeded, LitmusError, NeverCompletes
from checker.front.litmus import load_file, load_text
from checker.verdict import liveness
from checker.verdict.session import Session
from checker.verdict.union import UnionSession
from checker.unfold.variants import without_barriers
from tests.unfold.test_ub_variants import MODEL

ROOT = Path(__file__).resolve().parents[2]
LIVENESS = sorted((ROOT / "litmus" / "liveness").glob("*.yaml"))


def _hangs(t):
    try:
        u = UnionSession(t, MODEL, loops=True)
        found, complete = u.hangs()
        return sorted((h.thread, h.blocked, h.state, h.combo) for h in found), complete, u
    except (LimitExceeded, LitmusError, NeverCompletes) as e:
        return type(e).__name__, None, None


def _fresh(u, c):
    """The reference: a Session of its own for each combination."""
    return Session(c.test if c.stuck else without_barriers(c.test), u.model, u.options, u.engine, u.lim)


@pytest.mark.parametrize("path", LIVENESS, ids=lambda p: p.name)
def test_shared_sessions_find_the_hangs_of_sessions_of_their_own(path, monkeypatch):
    tests = [t for t in load_file(path) if not isinstance(t, LitmusError)]
    shared = [_hangs(t)[:2] for t in tests]
    monkeypatch.setattr(liveness, "_as_far_as_it_runs", _fresh)
    assert [_hangs(t)[:2] for t in tests] == shared


PAIR = """
- name: StoppedAtBarOne
  doc: "P1 waits for P0's arrive on m, then both meet at bar 1 and P0 waits for P1's arrive on n: where P1
    spins at its wait (P0 never arrives: a hang), P0 stops at bar 1 whichever way its own wait would go."
  source: "PTX ISA 9.4, bar.sync; mbarrier.try_wait"
  arch: sm_90
  memory:
    m: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    n: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
  threads:
    P0:
      at: gpu0.cta0.warp0
      code:
        - bar.sync 1, 2
        - mbarrier.try_wait.parity.shared::cta.b64 p, [n], 0 == 1
        - mbarrier.arrive.shared::cta.b64 _, [m]
    P1:
      at: gpu0.cta0.warp1
      code:
        - mbarrier.try_wait.parity.shared::cta.b64 q, [m], 0 == 1
        - bar.sync 1, 2
        - mbarrier.arrive.shared::cta.b64 _, [n]
  expect:
    hang: allowed
"""


def test_combinations_stopped_at_one_barrier_share_a_session():
    (t,) = load_text(PAIR, "pair.yaml")
    found, complete, u = _hangs(t)
    assert found and complete
    stuck = [c for c, _ in u.blocked if c.stuck]
    assert len(stuck) > len(u._as_far) >= 1
