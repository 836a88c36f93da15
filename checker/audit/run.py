"""Auditing suites: every test of every path, one policy, under each reading of the model.

A reading is a set of model options: the base options (`--option`) alone ('default'), and the
base options plus each alternative (by default `proxy-fence-any-cta`, docs/model.md#a1). A
finding that appears under some readings and not others depends on the reading, and says so.
A malformed test is reported as an error and the audit goes on.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from ..ast import LitmusTest
from ..errors import CheckerError, LitmusError
from ..front.litmus import load_paths
from .judge import Judged, judge_applied
from .policy import apply_policy

DEFAULT_READINGS = ("default", "proxy-fence-any-cta")


@dataclass(frozen=True)
class TestAudit:
    name: str
    path: str
    suite: str
    by_reading: tuple[tuple[str, Judged], ...] = ()     # (reading name, result)
    error: str = ""

    def findings(self) -> list[tuple[str, object]]:
        """(reading, finding) for every finding under every reading."""
        return [(r, f) for r, j in self.by_reading for f in j.findings]

    def dependent(self, key: tuple) -> bool:
        """Is a finding with this key present under some readings only?"""
        judged = [j for _, j in self.by_reading if j.status in ("ok", "findings")]
        have = [any(f.key == key for f in j.findings) for j in judged]
        return any(have) and not all(have)


@dataclass
class Audit:
    policy: str
    readings: tuple[str, ...]
    options: tuple[str, ...]
    tests: list[TestAudit] = field(default_factory=list)
    seconds: float = 0.0


def reading_options(base, reading: str) -> frozenset:
    return frozenset(base) | (frozenset() if reading == "default" else {reading})


def suite_of(path: str, roots: list[str]) -> str:
    """The argument a test's file was found under (a folder or a file), as given."""
    p = Path(path).resolve()
    for r in roots:
        rp = Path(r).resolve()
        if p == rp or rp in p.parents:
            return r
    return str(Path(path).parent)


def audit_paths(paths: list[str], policy: str, model, options=(), readings=DEFAULT_READINGS, engine: str = "z3",
                budget: float = 60.0, progress=None) -> Audit:
    start = time.perf_counter()
    out = Audit(policy, tuple(readings), tuple(sorted(options)))
    for item in load_paths(paths):
        if isinstance(item, LitmusError):
            where = item.where.path if getattr(item, "where", None) else "?"
            out.tests.append(TestAudit("?", where, suite_of(where, paths) if where != "?" else "?", error=str(item)))
            continue
        out.tests.append(audit_test(item, policy, model, options, readings, engine, budget, suite_of(item.path, paths)))
        if progress:
            progress(out.tests[-1])
    out.seconds = time.perf_counter() - start
    return out


def audit_test(test: LitmusTest, policy: str, model, options=(), readings=DEFAULT_READINGS, engine: str = "z3",
               budget: float = 60.0, suite: str = "") -> TestAudit:
    try:
        applied = apply_policy(test, policy)
    except CheckerError as e:
        return TestAudit(test.name, test.path, suite, error=f"the policy's output does not validate: {e}")
    res = tuple((r, judge_applied(applied, model, reading_options(options, r), engine, budget)) for r in readings)
    return TestAudit(test.name, test.path, suite, res)
