"""Auditing suites: every test of every path, one policy, under each reading of the model.

A reading is a set of model options: the base options (`--option`) alone ('default'), and the
base options plus each alternative (by default `proxy-fence-any-cta`, docs/model.md#a1). A
finding that appears under some readings and not others depends on the reading, and says so.
A malformed test is reported as an error and the audit goes on.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import batch, limits, pool

from ..ast import LitmusTest
from ..errors import CheckerError, LitmusError
from ..front.litmus import load_paths
from ..resources import resolve_model
from .judge import Judged, judge_applied
from .policy import apply_policy

from . import DEFAULT_READINGS
PER_WORKER = 4          # tests a worker audits before it is replaced (bounds its memory)


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
    """The suite a test's file belongs to: its folder (relative to the working directory where it
    lies below it), so that `litmus/` gives one row per bundled suite."""
    folder = Path(path).resolve().parent
    try:
        return str(folder.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(folder)


def audit_paths(paths: list[str], policy: str, model_spec: str | None = None, options=(), readings=DEFAULT_READINGS,
                engine: str = "z3", budget: float = 60.0, progress=None, jobs: int = 1) -> Audit:
    """Audit every test of `paths`. Each test is audited in a fresh worker process (checker.pool;
    `jobs` at a time): a Session's Z3 state is not all given back to the allocator, and a whole
    suite in one process would grow by tens of megabytes per test; a worker audits PER_WORKER
    tests. A test the policy leaves unchanged is settled here. jobs=0 audits in this process."""
    start = time.perf_counter()
    lim = limits.current()
    resolve_model(model_spec)                       # fail early, once, on a bad model
    out = Audit(policy, tuple(readings), tuple(sorted(options)))
    items = load_paths(paths)
    results: list = [None] * len(items)
    todo = []
    for i, item in enumerate(items):
        if isinstance(item, LitmusError):
            where = item.where.path if getattr(item, "where", None) else "?"
            results[i] = TestAudit("?", where, suite_of(where, paths) if where != "?" else "?", error=str(item))
            continue
        try:
            applied = apply_policy(item, policy)
        except CheckerError:
            applied = None                          # the worker reports it
        if applied is not None and not applied.changed:  # nothing to judge: no worker needed
            results[i] = audit_test(item, policy, None, options, readings, engine, budget,
                                    suite_of(item.path, paths))
            if progress:
                progress(results[i])
        else:
            todo.append(i)
    jobs_ = [(items[i], policy, model_spec, tuple(options), tuple(readings), engine, budget,
              suite_of(items[i].path, paths), lim) for i in todo]
    # a hard bound per test: each reading may take a judgement, a repair or prune search and a re-check
    hard = len(readings) * (4 * lim.timeout + 2 * budget) + 30

    def done(k: int, outcome) -> None:
        t = items[todo[k]]
        if isinstance(outcome, pool.Value):
            ta = outcome.value
        elif isinstance(outcome, pool.Raised):
            ta = TestAudit(t.name, t.path, jobs_[k][7], error=str(outcome.error))
        elif isinstance(outcome, pool.Bug):
            ta = TestAudit(t.name, t.path, jobs_[k][7], error=f"internal error: {outcome.text} (a bug in ptxmc)")
        elif isinstance(outcome, pool.Crashed):
            ta = TestAudit(t.name, t.path, jobs_[k][7], error=f"worker crashed ({outcome.describe()})")
        else:
            ta = TestAudit(t.name, t.path, jobs_[k][7], error=f"timeout: no answer within {hard:g} s")
        results[todo[k]] = ta
        if progress:
            progress(ta)

    if jobs >= 1 and not os.environ.get("PTXMC_DEBUG"):
        step = jobs * PER_WORKER
        for c in range(0, len(jobs_), step):        # a fresh pool per chunk: fresh processes
            chunk = jobs_[c:c + step]
            pool.run_pool(_audit_job, chunk, len(chunk), hard, lambda k, o, c=c: done(c + k, o))
    else:
        for k, job in enumerate(jobs_):
            done(k, batch.in_process(_audit_job, job))
    out.tests = [r for r in results if r is not None]
    out.seconds = time.perf_counter() - start
    return out


def _audit_job(job) -> "TestAudit":
    test, policy, model_spec, options, readings, engine, budget, suite, lim = job
    limits.set_current(lim)
    return audit_test(test, policy, resolve_model(model_spec), options, readings, engine, budget, suite)


def audit_test(test: LitmusTest, policy: str, model, options=(), readings=DEFAULT_READINGS, engine: str = "z3",
               budget: float = 60.0, suite: str = "") -> TestAudit:
    try:
        applied = apply_policy(test, policy)
    except CheckerError as e:
        return TestAudit(test.name, test.path, suite, error=f"the policy's output does not validate: {e}")
    res = tuple((r, judge_applied(applied, model, reading_options(options, r), engine, budget)) for r in readings)
    return TestAudit(test.name, test.path, suite, res)
