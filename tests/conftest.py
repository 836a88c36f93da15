"""Shared fixtures: the bundled suites, loaded once per session."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from checker import LITMUS_DIR

# ptxmc's cache folder (parsed models, compiled code: checker.cachedir) is one of the test run's
# own, made here by the first process of the run (xdist's workers and every subprocess inherit the
# variable) and removed as that process ends: the tests neither read what another checkout's or
# an earlier run's code left in ~/.cache/ptxmc nor write there. A test of the cache gives its own.
# (A run killed before its end leaves its folder: one untouched for a day is removed here.)
if "PTXMC_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import time

    for _old in Path(tempfile.gettempdir()).glob("ptxmc-test-cache-*"):
        try:
            if time.time() - _old.stat().st_mtime > 86400:
                shutil.rmtree(_old, ignore_errors=True)
        except OSError:
            pass
    _cache = tempfile.mkdtemp(prefix="ptxmc-test-cache-")
    os.environ["PTXMC_CACHE_DIR"] = _cache
    atexit.register(shutil.rmtree, _cache, ignore_errors=True)

# Hypothesis's properties test the same examples on every run (derandomize), so a failure in CI
# reproduces and a landing is never refused for a rare example one run happened to draw; no
# example database is written into the checkout or replayed from an earlier run. Randomized
# exploration is tests/fuzz/campaign.py's (its own settings), or this profile's sibling:
# PTXMC_TEST_HYPOTHESIS=explore. A property's own @settings keep the values they set.
try:
    from hypothesis import settings as _hypothesis_settings
except ImportError:             # (the test extra installs it; the rest of the suite runs without)
    pass
else:
    _hypothesis_settings.register_profile("ci", derandomize=True, database=None)
    _hypothesis_settings.register_profile("explore", derandomize=False, database=None)
    _hypothesis_settings.load_profile(os.environ.get("PTXMC_TEST_HYPOTHESIS", "ci"))


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


# The wall-clock timeout of every judgement made in a test's own process (check_test, the API,
# run_tests, Extraction.check, ...): a safety net, never what decides an answer. The default
# (60 s) is a user's bound; a big check near it on an idle machine came back UNKNOWN on a loaded
# CI machine (2 cores, 2 xdist workers and their subprocesses). What bounds Z3 deterministically
# is the rlimit, unchanged. Tests of the timeout itself give their own (timeout=1e-9, --timeout).
PATIENT_TIMEOUT = 900.0


@pytest.fixture(autouse=True)
def patient():
    """Each test starts from the default limits (whatever an earlier test of this process left)
    with the PATIENT_TIMEOUT, restored after it."""
    from dataclasses import replace

    from checker import limits

    with limits.use(replace(limits.DEFAULT, timeout=PATIENT_TIMEOUT)):
        yield


@pytest.fixture
def deep_root():
    """An empty folder for trees deeper than the interpreter's recursion limit, removed at teardown.

    It is made outside pytest's temporary tree: pytest removes old sessions' folders with
    shutil.rmtree, which recurses once per level, so a 1,000-level tree that a killed run (SIGKILL,
    a crashed xdist worker) left there ended a later session with RecursionError. Teardown removes
    the tree deepest first, with a loop (no recursion)."""
    root = Path(tempfile.mkdtemp(prefix="ptxmc-deep-"))
    try:
        yield root
    finally:
        remove_tree(root)


def remove_tree(root: Path) -> None:
    """Delete `root` and everything below it without recursion: files and links as they are met,
    then the folders, deepest first."""
    folders, stack = [], [str(root)]
    while stack:
        d = stack.pop()
        folders.append(d)
        with os.scandir(d) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                else:
                    os.unlink(e.path)
    for d in reversed(folders):
        os.rmdir(d)
