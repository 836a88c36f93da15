"""Batches of tests in worker processes (checker.pool): judge each test, turn what a worker
returns (a value, an error, a crash, a timeout) into a Result, stream results as they finish,
and keep what finished when the run is interrupted. Used by `ptxmc run`, `ptxmc report` and the
one-test commands (`bounded`)."""
from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Iterable, Sequence

from . import limits, outsafe, pool
from .executors.executor import LOCAL, Executor, in_process, run_jobs  # noqa: F401 - in_process: for report
from .executors.shipped import ModelText, model_of, model_text
from .errors import CheckerError, InternalError, LimitExceeded, LitmusError, SolverUnknown
from .limits import Limits
from .resources import model_name, resolve_model
from .results.result import Result, base_result


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM/SIGHUP, see pool.stop_signals) during run_tests: `results` holds the
    Result of every test that finished, in input order; `total` is the number of items in the
    batch (of a lazy one: drawn so far); `signum` the signal that stopped it."""

    def __init__(self, results: list[Result], total: int, signum: int = 2):
        super().__init__(f"interrupted: {len(results)} of {total} tests run")
        self.results, self.total, self.signum = results, total, signum


def run_one(job) -> Result:
    """Judge one test in a worker: (test, model spec, options, engine, limits) -> Result."""
    # (imported here: the parent process never judges, and the judging code is most of a run's
    # imports, which the forkserver's preload makes while the parent loads the tests)
    from .verdict.check import check_test

    test, model_spec, options, engine, lim = job
    limits.set_current(lim)
    pool.inject_fault(test.name)
    if isinstance(model_spec, ModelText):       # shipped as text (checker.executors): no shared files
        model = model_of(model_spec)
    elif pool.in_worker():
        # A worker lives for one batch, which one model judges: read once (looking the file up
        # again for every test, to see whether it changed, was 0.05 ms a test)
        model = _worker_models.get(model_spec)
        if model is None:
            model = _worker_models[model_spec] = resolve_model(model_spec)
    else:
        model = resolve_model(model_spec)
    return check_test(test, model, model_name(model), frozenset(options), engine, lim.timeout)


_worker_models: dict = {}       # model spec -> the model, in a worker process


def run_tests(items: Iterable, model_spec, options, engine, timeout=None, jobs=1, on_result=None, *,
              lim: Limits | None = None, on_done=None, executor: Executor = LOCAL) -> list[Result]:
    """Check a batch (LitmusTest or LitmusError items); return the Results in input order.

    Malformed items become error Results (too large ones: unknown). With jobs >= 1 the tests run
    in that many worker processes (checker.pool): a worker that crashes costs only the test it
    was running ("worker crashed"), a test past the hard time bound is stopped and reported
    UNKNOWN, and the rest of the batch goes on. jobs == 0 runs them in this process.
    `on_result(result)` / `on_done(index, result)` are called as each test finishes. Ctrl-C
    raises RunInterrupted, which carries the Results finished so far. `executor` (checker.executors)
    runs the jobs on Dask instead, with the same contract; the model then travels as its text.
    `items` may be lazy (an iterator): the local workers judge the first tests while the rest
    are drawn from it (checker.pool.run_pool)."""
    lim = lim or limits.current()
    if timeout is not None:
        lim = replace(lim, timeout=timeout)
    name = model_name(resolve_model(model_spec))  # fail early, once, on a bad model
    spec = model_text(model_spec) if executor.kind != "local" else model_spec
    seen: list = []                     # the items drawn so far, by index
    results: dict[int, Result] = {}
    todo: list[int] = []                # the index of each job

    def done(i: int, r: Result) -> None:
        with pool.sigint_deferred():    # a result is recorded everywhere or nowhere
            results[i] = r
            if on_done:
                on_done(i, r)
            if on_result:
                on_result(r)

    def finished(k: int, outcome) -> None:
        i = todo[k]
        done(i, result_of(seen[i], outcome, lim, engine, name))

    def jobs_of(source):
        for it in source:
            i = len(seen)
            seen.append(it)
            if isinstance(it, LitmusError):
                path = it.where.path if it.where else "?"
                status = "unknown" if isinstance(it, LimitExceeded) else "error"
                done(i, Result(name=_error_name(it), path=path, status=status, message=str(it)))
            else:
                todo.append(i)
                yield (it, spec, tuple(options), engine, lim)

    try:
        lazy = not isinstance(items, Sequence)
        run_jobs(run_one, jobs_of(items) if lazy else list(jobs_of(items)), jobs, lim.hard_timeout(), finished,
                 executor)
    except KeyboardInterrupt as e:
        raise RunInterrupted([results[i] for i in sorted(results)], len(seen), pool.signum_of(e)) from None
    return [results[i] for i in sorted(results)]


INTERNAL = "internal error: "


def result_of(test, outcome, lim: Limits, engine: str, model_name: str) -> Result:
    if isinstance(outcome, pool.Value):
        return outcome.value
    base = base_result(test, engine, model_name)
    if isinstance(outcome, pool.Raised):
        e = outcome.error
        status = "unknown" if isinstance(e, (SolverUnknown, LimitExceeded)) else "error"
        return replace(base, status=status, message=str(e))
    if isinstance(outcome, pool.Bug):
        trace = f"\n{outcome.trace}" if os.environ.get("PTXMC_DEBUG") and outcome.trace else ""
        return replace(base, message=f"{INTERNAL}{outcome.text} (a bug in ptxmc; set PTXMC_DEBUG=1 "
                                     f"for a traceback){trace}")
    if isinstance(outcome, pool.Crashed):
        return replace(base, message=f"worker crashed ({outcome.describe()}) while checking this test")
    return replace(base, status="unknown",
                   message=f"timeout: no answer within {lim.timeout:g} s; the worker was stopped after "
                           f"{outcome.seconds:g} s (raise it with {limits.flag('timeout')})")


def _error_name(e: LitmusError) -> str:
    w = e.where
    return f"{Path(w.path).name}:{w.line}" if w else "?"


class ResultStream:
    """`--results-jsonl FILE`: one JSON line per finished test, written and flushed as it
    finishes (in completion order, with its `index` in the batch), and a last line
    {"end": {"run": N, "total": M, "interrupted": bool}} once the run is over. A stream without
    that line was cut short (the process was killed)."""

    def __init__(self, path: str, timing: bool, policy: outsafe.Policy = outsafe.Policy(),
                 reused: list[tuple[int, Result, str]] | None = None):
        """`reused` (run --resume): (index, result, key) of the results an earlier run finished;
        the file is first rewritten to hold exactly those (atomically), then appended to."""
        self.path = path
        self.timing, self.count = timing, 0
        self.error: outsafe.OutputError | None = None
        if reused is not None:
            outsafe.write_file(path, "".join(self._line(i, r, k) for i, r, k in reused), policy)
            self.count = len(reused)
        self.f = outsafe.open_stream(path, policy, append=reused is not None)

    def _line(self, index: int, r: Result, key: str | None) -> str:
        from .results.output import result_dict

        extra = {"key": key} if key else {}
        return json.dumps({"index": index, **extra, **result_dict(r, self.timing)}, sort_keys=True) + "\n"

    def add(self, index: int, r: Result, key: str | None = None) -> None:
        """One finished test; `key` (checker.resume.test_key) lets a later run --resume skip it."""
        self._write(self._line(index, r, key))
        self.count += 1

    def _write(self, line: str) -> None:
        """A failed write (a full disk) stops the stream, not the run: the error is kept in
        `self.error` (the command reports it after writing its other outputs), and no later line
        is written, so the stream ends at the last whole line before the failure, or at a line
        cut short, which --resume ignores."""
        if self.error is not None:
            return
        try:
            self.f.write(line)
            self.f.flush()
        except OSError as e:
            self.error = outsafe.fail(self.path, f"{e.strerror or e}; the stream stops after {self.count} results "
                                                 "(the run went on; its other outputs are complete)")
            self.abandon()

    def close(self, interrupted: bool, total: int) -> None:
        """The last line; `total`: the number of items in the batch (those loaded, if it was
        interrupted while loading)."""
        end = {"run": self.count, "total": total, "interrupted": interrupted}
        try:
            self._write(json.dumps({"end": end}, sort_keys=True) + "\n")
        finally:
            self.abandon()

    def abandon(self) -> None:
        try:
            self.f.close()
        except OSError:             # the buffered rest could not be written either
            pass


def bounded(fn, job, lim: Limits):
    """fn(job) in a worker process, stopped at the hard time bound: its value, or its
    CheckerError; a crash, a timeout or a bug become CheckerErrors too."""
    if os.environ.get("PTXMC_DEBUG"):
        return fn(job)
    box: list = []
    pool.run_pool(fn, [job], 1, lim.hard_timeout(), lambda _i, outcome: box.append(outcome))
    out = box[0]
    if isinstance(out, pool.Value):
        return out.value
    if isinstance(out, pool.Raised):
        raise out.error
    if isinstance(out, pool.Bug):
        raise InternalError(f"{INTERNAL}{out.text} (a bug in ptxmc; set PTXMC_DEBUG=1 for a traceback)")
    if isinstance(out, pool.Crashed):
        raise InternalError(f"worker crashed ({out.describe()})")
    raise SolverUnknown(f"timeout: no answer within {lim.timeout:g} s; the worker was stopped after "
                        f"{out.seconds:g} s (raise it with {limits.flag('timeout')})")


def write_atomic(path: str, text: str, policy: outsafe.Policy = outsafe.Policy()) -> None:
    """Write via a temporary file in the same folder and rename: never a half-written file
    (checker.outsafe.write_file: regular files only, never an input)."""
    outsafe.write_file(path, text, policy)
