"""Shared fixtures: the bundled suites, loaded once per session."""
from __future__ import annotations

import pytest

from checker import LITMUS_DIR


def bundled_items():
    from checker.front.litmus import load_paths

    return load_paths([str(LITMUS_DIR)])


def bundled_tests():
    from checker.errors import LitmusError

    return [t for t in bundled_items() if not isinstance(t, LitmusError)]


def straight_line_tests():
    """The bundled tests one event structure describes (no control flow, no hang question, barriers
    that meet in exactly one way): a performance filter for tests that lower or enumerate each
    test by hand; every command and API call answers the others too (checker.verdict.open)."""
    from checker.unfold.variants import needs_variants

    return [t for t in bundled_tests() if not needs_variants(t)]


def test_id(t) -> str:
    return t.name


@pytest.fixture(scope="session")
def ptx_model():
    from checker.resources import resolve_model

    return resolve_model("ptx")
