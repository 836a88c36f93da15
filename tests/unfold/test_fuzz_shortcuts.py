"""The hang question's shortcuts against their references on generated tests
(tests/unfold/fuzz_shortcuts.py): for a fixed seed's few cases -- balanced mbarrier phases, a
member of value-dependent undefined behaviour that may free an await (tests/unfold/test_stops.py's
FreeingRange drawn at random), mixed mbarrier operations, a Tensor Memory allocation around an
await -- the refuter (checker/verdict/stops.py) keeps the reference's hang answer and the
undefined-behaviour search (quiet mbarriers, the extension lemma) the reference's flags, and each
shortcut did something on some case (the comparison is not vacuous).

What the seed's cases catch, by mutation (bench/fuzz_mutants.py, a mutant drops one condition;
bench/RESULTS.md, "Issue 35: the fuzzer exercises the extension lemma's conditions"): the lemma
applied whatever its conditions (8 of the 32 cases), without condition (6), "no hang" (2: a
mixed-size race only in stopping variants), without condition (7) (4: a wait freed by an
over-arrival or a skipped phase, its MixedSizeRace lost; MB_RANGE's check alone 1, MB_SKIP's 3),
and a refuter that refutes every stopping combination (5). Seed 31's 24 cases, before, caught
none of the lemma's mutants.
A longer campaign: `python -m tests.unfold.fuzz_shortcuts SEED N [z3|brute]`."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.unfold.fuzz_shortcuts import compare, generate, hang_answer
from tests.unfold.test_ub_variants import MODEL

SEED, CASES = 80, 32


def test_generated_tests_get_the_reference_s_answers():
    rng = random.Random(SEED)
    stats: dict = {}
    bad = []
    for k in range(CASES):
        text = generate(rng, f"Fuzz{SEED}x{k}")
        for b in compare(text, MODEL, "z3", stats):
            bad.append(f"{b}\n{text}")
    assert not bad, "\n".join(bad)
    # each shortcut took effect on some case, the cases have hangs and undefined behaviour (a
    # mixed-size race among it), and the lemma was refused on some for its
    # conditions (1), (6), (7) and (8) (docs/model.md#a18)
    missing = [k for k in ("refuted", "lemma", "quiet", "hang", "undefined", "MixedSizeRace",
                           "why(1)", "why(6)", "why(7)", "why(8)") if not stats.get(k)]
    assert not missing, (missing, stats)


FOUND = Path(__file__).resolve().parents[2] / "litmus" / "liveness" / "fuzz-found.yaml"


@pytest.mark.parametrize("engine", ["z3", "brute"])
def test_a_declared_mbarrier_starts_initialised_whichever_thread_is_first(engine):
    """litmus/liveness/fuzz-found.yaml (found by the generator): the first thread does no mbarrier
    operation, so its lowering alone has the declared mbarrier as plain 0; the refuter took its
    start state from there, folded states that all pass the wait, and refuted the combination that
    hangs: 'no hang', where the reference finds P1's."""
    from checker.front.litmus import load_file
    from checker.verdict.check import check_test

    (t,) = load_file(str(FOUND))
    got, want = hang_answer(t, MODEL, engine, True), hang_answer(t, MODEL, engine, False)
    assert got == want
    assert [h[0] for h in got[0]] == ["P1"]
    assert check_test(t, MODEL).status == "pass"
