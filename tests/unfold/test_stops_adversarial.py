"""Adversarial review of the hang question's refuter of combinations with no execution
(checker/verdict/stops.py `_unreachable`, after 3e62ef2; docs/model.md#a18, "Combinations with no
execution" and "Which members may free a gate"): each case puts one premise of its two newer rules
under strain, and each combination it refutes has no execution in the reference, whose hang answer
it keeps on Z3 and brute force.

- A later gate reads at or after a state its thread's earlier gate passed at (`_since`): only on
  the same mbarrier (LaterWaitOtherMbarrier), only in the same thread (LaterWaitOtherThread), and
  at or after such a state, not at one (LaterWaitPastEarlier); an asynchronous arrive-on
  (cp.async.mbarrier.arrive) with .relaxed waits is a strong RMW like an arrive (LaterWaitCpAsync).
- A member of undefined behaviour may fire where its expression is non-zero on some state of its
  mbarrier's fold, not only the first (MemberPastTheFirstState).

The tests were seen to fail with each premise dropped (a refuted combination with an execution;
the hang answer changes too, but for LaterWaitOtherMbarrier): `_since` keyed by thread alone
(LaterWaitOtherMbarrier), by mbarrier alone (LaterWaitOtherThread), `_fold(since=...)` keeping
the states a gate passes at rather than those at or after one (LaterWaitPastEarlier), and
`_may_fire` evaluating a member on its mbarrier's first state alone (MemberPastTheFirstState)."""
from __future__ import annotations

import pytest

from checker.errors import LitmusError
from checker.front.litmus import load_text
from tests.unfold.test_stops import _hangs, _unreachable_combos

CASES = """
- name: LaterWaitOtherMbarrier
  doc: "P1 waits for m's phase 0, which P0's arrive completes, then for parity 1 of n, which n's first state passes (nobody arrives on n): a later gate reads at or after the state an earlier one passed at only on the same mbarrier, so the second wait passes. P2 spins on k."
  arch: sm_90
  memory:
    m: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    n: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    k: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
  threads:
    P0:
      at: gpu0.cta0.warp0
      code:
        - mbarrier.arrive.release.cta.shared::cta.b64 _, [m]
    P1:
      at: gpu0.cta0.warp1
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [m], 0 == 1
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 q, [n], 1 == 1
    P2:
      at: gpu0.cta0.warp2
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [k], 0 == 1
  expect:
    hang: allowed

- name: LaterWaitOtherThread
  doc: "P0 arrives on m; P1 waits for m's phase 0, P2 for parity 1 of m, which m's first state passes: a gate reads at or after the state an earlier one passed at only in the earlier one's thread, so P2's wait may read m before P0's arrive and pass. P3 spins on k."
  arch: sm_90
  memory:
    m: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    k: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
  threads:
    P0:
      at: gpu0.cta0.warp0
      code:
        - mbarrier.arrive.release.cta.shared::cta.b64 _, [m]
    P1:
      at: gpu0.cta0.warp1
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [m], 0 == 1
    P2:
      at: gpu0.cta0.warp2
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 q, [m], 1 == 1
    P3:
      at: gpu0.cta0.warp3
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [k], 0 == 1
  expect:
    hang: allowed

- name: LaterWaitPastEarlier
  doc: "P1 waits for parity 1 of m, which m's first state passes, then for m's phase 0, which P0's arrive completes and which that first state does not pass: the later gate reads at or after a state the earlier passed at, not at such a state, so both pass. P2 spins on k."
  arch: sm_90
  memory:
    m: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    k: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
  threads:
    P0:
      at: gpu0.cta0.warp0
      code:
        - mbarrier.arrive.release.cta.shared::cta.b64 _, [m]
    P1:
      at: gpu0.cta0.warp1
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [m], 1 == 1
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 q, [m], 0 == 1
    P2:
      at: gpu0.cta0.warp2
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [k], 0 == 1
  expect:
    hang: allowed

- name: MemberPastTheFirstState
  doc: "P0 arrives twice on the one-arrival a, on which nobody waits: its second arrive reads a state of phase 1, no state a wait saw (MbarrierSkippedPhase), and frees P1's wait on x, on which nobody arrives; at a's first state it would not. P2 spins on k."
  arch: sm_90
  memory:
    a: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    x: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    k: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
  threads:
    P0:
      at: gpu0.cta0.warp0
      code:
        - mbarrier.arrive.release.cta.shared::cta.b64 _, [a]
        - mbarrier.arrive.release.cta.shared::cta.b64 _, [a]
    P1:
      at: gpu0.cta0.warp1
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [x], 0 == 1
    P2:
      at: gpu0.cta0.warp2
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [k], 0 == 1
  expect:
    undefined: true
    hang: allowed

- name: LaterWaitCpAsync
  doc: "LaterWaitAfterEarlier (test_stops.py) with cp.async.mbarrier.arrive.noinc's asynchronous arrive-on and .relaxed waits: the arrive-on is a strong generic RMW of m like an arrive, so P1's second wait, for parity 1, reads at or after the state its first passed at and never passes (SCPerLocation). P2 spins on k."
  arch: sm_90
  memory:
    m: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
    k: {space: shared, owner: gpu0.cta0, mbarrier: {count: 1}}
  threads:
    P0:
      at: gpu0.cta0.warp0
      code:
        - cp.async.mbarrier.arrive.noinc.shared::cta.b64 [m]
    P1:
      at: gpu0.cta0.warp1
      code:
        - mbarrier.try_wait.parity.relaxed.cta.shared::cta.b64 p, [m], 0 == 1
        - mbarrier.try_wait.parity.relaxed.cta.shared::cta.b64 q, [m], 1 == 1
    P2:
      at: gpu0.cta0.warp2
      code:
        - mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [k], 0 == 1
  expect:
    hang: allowed
"""


def _cases():
    return [t for t in load_text(CASES, "stops-adversarial.yaml") if not isinstance(t, LitmusError)]


def test_each_refuted_combination_has_no_execution():
    """(combinations refuted as having no execution, of them those with one in the reference)"""
    got = {t.name: _unreachable_combos(t) for t in _cases()}
    assert got == {"LaterWaitOtherMbarrier": (2, 0), "LaterWaitOtherThread": (3, 0),
                   "LaterWaitPastEarlier": (2, 0), "MemberPastTheFirstState": (0, 0),
                   "LaterWaitCpAsync": (3, 0)}


@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_the_refuter_keeps_the_reference_answer(engine):
    for t in _cases():
        assert _hangs(t, engine, True) == _hangs(t, engine, False), t.name
