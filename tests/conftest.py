"""Shared fixtures: the bundled suites, loaded once per session."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

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


@pytest.fixture
def patient():
    """Judgements under a 900 s timeout, a generous safety net: on a shared, loaded machine an
    answer must not become UNKNOWN for lack of time (use it with
    `pytestmark = pytest.mark.usefixtures("patient")`)."""
    from dataclasses import replace

    from checker import limits

    old = limits.current()
    limits.set_current(replace(old, timeout=900.0))
    yield
    limits.set_current(old)


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
