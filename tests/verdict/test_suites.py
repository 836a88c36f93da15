"""Every bundled litmus test meets its expectations under the default model (Z3 engine), and
every bundled file loads without errors."""
from __future__ import annotations

import pytest

from checker.verdict.check import check_test
from checker.errors import LitmusError

from ..conftest import bundled_items, bundled_tests

TESTS = bundled_tests()


def test_bundled_files_have_no_malformed_tests():
    bad = [str(i) for i in bundled_items() if isinstance(i, LitmusError)]
    assert bad == []


def test_every_bundled_test_has_a_source_and_expectations():
    missing = [t.name for t in TESTS if not t.source.strip()]
    assert missing == []
    unjudged = [t.name for t in TESTS if not t.expectations and t.expect_undefined is None and t.expect_hang is None]
    assert unjudged == []


@pytest.mark.parametrize("test", TESTS, ids=[t.name for t in TESTS])
def test_expectations_met(test, ptx_model):
    r = check_test(test, ptx_model)
    assert r.status == "pass", f"{r.status}: {r.message} " + "; ".join(
        f"expected {c.expected}, model {c.allowed}: {c.text}" for c in r.conditions if c.met is False)
