"""A batch of comparisons on an executor: each test's TestDiff, in input order; a malformed test
is "not compared"; a worker crash or a timeout costs only its test."""
from __future__ import annotations

from dataclasses import replace

from ..errors import LitmusError
from .diff import TestDiff, diff_one

# A comparison checks the test twice and may look for witnesses: its hard bound is this many
# times a single check's.
HARD_FACTOR = 3


def diff_tests(items, left, right, engine: str, lim, jobs: int, executor) -> list[TestDiff]:
    """TestDiff per item; RunInterrupted (carrying the finished TestDiffs) on Ctrl-C."""
    from .. import pool
    from ..batch import RunInterrupted, result_of
    from ..executors.executor import run_jobs

    out: list[TestDiff | None] = [None] * len(items)
    todo = [i for i, it in enumerate(items) if not isinstance(it, LitmusError)]
    for i, it in enumerate(items):
        if isinstance(it, LitmusError):
            path = it.where.path if it.where else "?"
            out[i] = TestDiff(f"{path}:{it.where.line if it.where else '?'}", path, None, "error", "error",
                              message=f"malformed: {it}")

    def done(k: int, outcome) -> None:
        i = todo[k]
        with pool.sigint_deferred():
            if isinstance(outcome, pool.Value):
                out[i] = outcome.value
            else:                         # a crash, a timeout, an error: the batch's wording
                r = result_of(items[i], outcome, replace(lim, timeout=lim.timeout * HARD_FACTOR), engine, left.name)
                out[i] = TestDiff(r.name, r.path, r.matrix_row, r.status, r.status, message=r.message)

    jobs_ = [(items[i], left, right, engine, lim) for i in todo]
    hard = lim.hard_timeout()
    try:
        run_jobs(diff_one, jobs_, jobs, hard * HARD_FACTOR if hard else None, done, executor)
    except KeyboardInterrupt as e:
        raise RunInterrupted([x for x in out if x is not None], len(items), pool.signum_of(e)) from None
    return [x for x in out if x is not None]
