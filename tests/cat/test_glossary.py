"""The glossary at the top of each bundled model and the engine's base names stay in step."""
from __future__ import annotations

import pytest

from checker import AXIOMS_DIR
from checker.model import relations
from checker.cat.interp import load_model

DEFAULT = AXIOMS_DIR / "ptx.cat"


def test_ptx_glossary_is_exactly_the_engine_registry():
    model = load_model(str(DEFAULT))
    assert {n: k for n, (k, _) in model.glossary.items()} == relations.glossary_names()


def test_every_base_name_is_described_once_in_the_model():
    # the prose lives in the cat file's glossary only: the registry holds names and kinds
    model = load_model(str(DEFAULT))
    assert all(desc.strip() for _, desc in model.glossary.values())


@pytest.mark.parametrize("path", sorted(AXIOMS_DIR.glob("*.cat")), ids=lambda p: p.name)
def test_every_bundled_model_uses_only_engine_names(path):
    model = load_model(str(path))
    names = relations.glossary_names()
    for name, (kind, _) in model.glossary.items():
        assert names.get(name) == kind, f"{path.name}: '{name}' is not a base {kind} of the engine"


def test_every_static_name_is_computed_by_the_lowering():
    from checker.ast import Instr, LitmusTest, Position, Thread
    from checker.isa.registry import lower

    t = LitmusTest("t", (Thread("P0", Position(0, None, 0), (Instr("fence", ("sc", "gpu"), (), "fence.sc.gpu"),)),))
    es = lower(t)
    provided = set(es.sets) | set(es.relations) | relations.DYNAMIC
    assert provided == set(relations.glossary_names())
