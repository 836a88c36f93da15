"""The Z3 engine's outcome enumeration strategies (engines/smt.py) give the outcome set that one
query and one model per outcome gives: symmetries of event structures (checker/model/symmetry.py),
found where they exist and refused where the shape matches but the structure differs, with one
query per orbit; and the search of the product of the observables' values for many outcomes."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from checker.engines import smt
from checker.engines.brute import BruteEngine
from checker.engines.smt import Z3Engine
from checker.front.litmus import load_text
from checker.isa.registry import lower
from checker.model.symmetry import observable_symmetries

from ..conftest import straight_line_tests

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from families import co, iriw, mp, sb  # noqa: E402


def _es(text):
    (t,) = load_text(text, "t.yaml")
    return lower(t)


def _observe(es):
    return es.observables


NEVER = 10 ** 9


def _outcomes(es, model, symmetry_after, product_after=NEVER, max_outcomes=None):
    old = smt.SYMMETRY_AFTER, smt.PRODUCT_AFTER
    smt.SYMMETRY_AFTER, smt.PRODUCT_AFTER = symmetry_after, product_after
    try:
        got, complete = Z3Engine(es, model, max_outcomes=max_outcomes).outcomes(_observe(es))
    finally:
        smt.SYMMETRY_AFTER, smt.PRODUCT_AFTER = old
    assert complete or max_outcomes is not None
    return got if max_outcomes is None else (got, complete)


def test_iriw_readers_of_one_order_are_interchangeable():
    es = _es(iriw(4))
    obs = _observe(es)
    sym = observable_symmetries(es, obs)
    assert sym is not None
    i = {k: n for n, k in enumerate(obs)}
    names = tuple(range(len(obs)))              # each observable's own position as its "value"
    images = {tuple(obs[k] for k in img) for img in sym.orbit(names, 100)}
    swap02 = tuple(obs[i[k.replace("R0", "R#").replace("R2", "R0").replace("R#", "R2")]] for k in obs)
    assert swap02 in images and tuple(obs) in images
    assert len(images) == 4                     # (R0 R2) x (R1 R3)


def test_sb_ring_is_symmetric_under_rotation():
    es = _es(sb(5))
    sym = observable_symmetries(es, _observe(es))
    assert sym is not None and len(sym.orbit(tuple(range(len(_observe(es)))), 100)) == 5


def test_mp_chain_has_no_symmetry():
    es = _es(mp(6))
    assert observable_symmetries(es, _observe(es)) is None


def _in_thread(text, thread, old, new):
    """`text` with `old` replaced by `new` in the code of `thread` only."""
    head, _, rest = text.partition(f"  {thread}:\n")
    body, sep, tail = rest.partition("\n  R") if thread != "R6" else (rest, "", "")
    return head + f"  {thread}:\n" + body.replace(old, new, 1) + sep + tail


@pytest.mark.parametrize("what, change, group", [
    ("a reader placed with a writer", lambda t: t.replace("gpu0.cta4", "gpu0.cta0"), 2),
    ("one writer writes another value", lambda t: t.replace("[y], 1", "[y], 2"), 4),
    ("a weaker fence in one reader", lambda t: _in_thread(t, "R2", "fence.sc.gpu", "fence.acq_rel.gpu"), 2),
    ("a reader that reads x twice", lambda t: _in_thread(t, "R2", "r1, [y]", "r1, [x]"), 2),
])
def test_a_shape_that_matches_but_a_structure_that_does_not(what, change, group, ptx_model):
    text = change(iriw(4))
    assert text != iriw(4)
    es = _es(text)
    sym = observable_symmetries(es, _observe(es))
    full = _outcomes(es, ptx_model, NEVER)
    assert _outcomes(es, ptx_model, 0) == full, what
    group_size = len(sym.orbit(tuple(range(len(_observe(es)))), 100))
    assert group_size == group, what         # (R0 R2) is gone where R2 differs; (R1 R3) stays
    for o in full:                            # and what is left maps allowed outcomes to allowed ones
        keys, vals = zip(*o)
        assert all(tuple(zip(keys, img)) in full for img in sym.orbit(vals, 10 ** 6))


def test_orbit_enumeration_matches_brute_force(ptx_model):
    for text in (sb(4), iriw(3)):
        es = _es(text)
        expected, _ = BruteEngine(es, ptx_model, limit=10 ** 7).outcomes(_observe(es))
        assert _outcomes(es, ptx_model, 0) == expected


@pytest.mark.parametrize("n", [6, 7])
def test_large_orbits_lose_nothing(n, ptx_model):
    for text in (sb(n), iriw(n - 2)):
        es = _es(text)
        assert _outcomes(es, ptx_model, 0) == _outcomes(es, ptx_model, NEVER)


def test_a_small_symmetric_test_asks_one_query_per_orbit_by_default(ptx_model):
    """SB n = 4 (15 outcomes, orbits of the ring's rotation): at the default settings the
    enumeration looks for symmetry early enough that it asks fewer queries than there are
    outcomes (it asked one per outcome, and one more, when symmetry waited for 32 outcomes)."""
    es = _es(sb(4))
    engine = Z3Engine(es, ptx_model)
    asked = []
    check = engine._check_array
    engine._check_array = lambda arr, n: asked.append(n) or check(arr, n)
    got, complete = engine.outcomes(_observe(es))
    assert complete and len(got) == 15
    assert got == BruteEngine(es, ptx_model, limit=10 ** 7).outcomes(_observe(es))[0]
    assert len(asked) < len(got)


TESTS = straight_line_tests()


@pytest.mark.parametrize("test", TESTS, ids=[t.name for t in TESTS])
def test_every_bundled_test_enumerates_the_same_with_symmetry(test, ptx_model):
    es = lower(test)
    assert _outcomes(es, ptx_model, 0) == _outcomes(es, ptx_model, NEVER)


@pytest.mark.parametrize("test", TESTS, ids=[t.name for t in TESTS])
def test_every_bundled_test_enumerates_the_same_by_product_search(test, ptx_model):
    es = lower(test)
    assert _outcomes(es, ptx_model, NEVER, product_after=0) == _outcomes(es, ptx_model, NEVER)


@pytest.mark.parametrize("after", [0, 1, 5])
def test_product_search_of_sparse_and_dense_sets_matches_brute_force(after, ptx_model):
    # co: the observer's two reads range over n + 1 values each, and most pairs are forbidden
    # (coherence); mp: every combination but one is allowed
    for text in (co(3), mp(5), sb(4)):
        es = _es(text)
        expected, _ = BruteEngine(es, ptx_model, limit=10 ** 7).outcomes(_observe(es))
        assert _outcomes(es, ptx_model, NEVER, product_after=after) == expected


def test_product_search_stops_at_the_cap(ptx_model):
    es = _es(mp(8))
    full = _outcomes(es, ptx_model, NEVER)
    got, complete = _outcomes(es, ptx_model, NEVER, product_after=3, max_outcomes=100)
    assert not complete and len(got) == 100 and got <= full
