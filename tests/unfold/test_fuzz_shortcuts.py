"""The hang question's shortcuts against their references on generated tests
(tests/unfold/fuzz_shortcuts.py): for a fixed seed's few cases -- 2-3 threads of one CTA, 1-2
mbarriers, arrivals, bulk copies' transactions, try_wait.parity awaits with right and wrong
parities, data accesses, an inval at the end -- the refuter (checker/verdict/stops.py) keeps the
reference's hang answer and the undefined-behaviour search (quiet mbarriers, the extension lemma)
the reference's flags, and each shortcut did something on some case (the comparison is not
vacuous). A longer campaign: `python -m tests.unfold.fuzz_shortcuts SEED N`."""
from __future__ import annotations

import random

from tests.unfold.fuzz_shortcuts import compare, generate
from tests.unfold.test_ub_variants import MODEL

SEED, CASES = 31, 24


def test_generated_tests_get_the_reference_s_answers():
    rng = random.Random(SEED)
    stats: dict = {}
    bad = []
    for k in range(CASES):
        text = generate(rng, f"Fuzz{SEED}x{k}")
        for b in compare(text, MODEL, "z3", stats):
            bad.append(f"{b}\n{text}")
    assert not bad, "\n".join(bad)
    # each shortcut took effect on some case (the lemma on one with undefined behaviour), and the
    # cases have hangs and undefined behaviour (a failed iteration before the init among it)
    assert all(stats.get(k, 0) > 0 for k in ("refuted", "lemma", "lemma+undefined", "quiet", "hang", "undefined",
                                             "MbarrierUninitialised")), stats
