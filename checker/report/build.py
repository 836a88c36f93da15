"""Build a conformance report: check and explain every test (in worker processes when asked),
cross the model with hardware histograms when given, render the four formats, and write the
report folder atomically (a temporary folder beside it, renamed into place: after a crash or
Ctrl-C there is either the old report or the new one, never half of one).

Tests run in checker.pool's workers, as in `ptxmc run`: a worker that crashes or passes the hard
time bound costs only its own test (an error / unknown row), and Ctrl-C stops the workers and
returns the report of the tests finished so far, marked interrupted."""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import limits, pool
from ..errors import LitmusError
from ..resources import ROOT, model_name, resolve_model
from ..results.result import Result
from .analyze import MAX_WITNESSES, TestReport, analyze, model_hash

FILES = ("index.html", "report.md", "report.json", "junit.xml")


@dataclass(frozen=True)
class Report:
    model: str                          # model name (axioms/NAME.cat) or path as given
    model_hash: str
    options: tuple[str, ...]
    inputs: tuple[str, ...]
    layout: str                         # auto | builtin | graphviz, as asked
    tests: tuple[TestReport, ...]
    hardware: tuple = ()                # checker.harness.compare.Comparison, one per tested histogram
    hw_files: tuple[str, ...] = ()
    timing: bool = False
    interrupted: tuple[int, int] | None = None      # (tests run, tests in the input) after Ctrl-C
    stopped_by: int = 2                             # the signal that interrupted it (SIGINT, SIGTERM, SIGHUP)
    engine: str = "z3"
    title: str = "ptxmc conformance report"
    extra: dict = field(default_factory=dict, compare=False)

    def comparison(self, name: str):
        return next((c for c in self.hardware if c.test == name), None)


def rel(path: str | os.PathLike) -> str:
    """A path as the report shows it: relative to the repository (or the current folder) when
    inside it, so the bytes of a report do not depend on where the checkout lives."""
    p = Path(path)
    if str(p).startswith("<"):
        return str(path)
    ap = p.resolve() if p.exists() else p.absolute()
    for base in (ROOT, Path.cwd()):
        try:
            return ap.relative_to(base.resolve()).as_posix()
        except ValueError:
            continue
    return p.as_posix()


def _portable(t: TestReport) -> TestReport:
    """Messages and notes without the checkout's absolute path (the report's bytes must not depend
    on where the repository lives)."""
    r = t.result
    root = f"{ROOT.as_posix()}/"
    cwd = f"{Path.cwd().as_posix()}/"

    def clean(s: str) -> str:
        return s.replace(root, "").replace(cwd, "")

    return replace(t, result=replace(r, message=clean(r.message), notes=tuple(clean(n) for n in r.notes),
                                     undefined=tuple(replace(u, why=clean(u.why)) for u in r.undefined)),
                   note=clean(t.note))


def _error_report(e: LitmusError) -> TestReport:
    w = e.where
    path = rel(w.path) if w else "?"
    name = f"{Path(w.path).name}:{w.line}" if w else "?"
    return TestReport(Result(name=name, path=path, status="error", message=str(e)), "", "", (), None, (), 0, ())


def _failed_report(test, outcome, lim, engine: str, model_name: str) -> TestReport:
    """The row of a test whose worker did not return a report (error, bug, crash, time bound)."""
    from ..batch import result_of

    return TestReport(result_of(test, outcome, lim, engine, model_name), "", "", (), None, (), 0, ())


def _job(args) -> TestReport:
    test, model_spec, options, lim, engine, layout, max_witnesses, blame, fix = args
    limits.set_current(lim)
    pool.inject_fault(test.name)
    model = resolve_model(model_spec)
    return analyze(test, model, model_name(model), frozenset(options), lim.timeout, layout, max_witnesses,
                   blame, path=rel(test.path), engine=engine, fix=fix)


def build(paths, model_spec=None, options=(), timeout: float = 60.0, jobs: int = 1, layout: str = "auto",
          hw_files=(), max_witnesses: int = MAX_WITNESSES, blame: bool = True, timing: bool = False,
          on_result=None, fix: bool = False, *, lim=None, engine: str = "z3") -> Report:
    """Check, explain and compare: everything a report shows, as data (`lim`: the limits of
    the run, default the current ones with `timeout`; jobs 0 runs the tests in this process)."""
    from ..front.litmus import load_paths

    lim = replace(lim or limits.current(), timeout=timeout)
    model = resolve_model(model_spec)
    items = load_paths(paths)
    out: list[TestReport | None] = [None] * len(items)
    todo = []
    for i, it in enumerate(items):
        if isinstance(it, LitmusError):
            out[i] = _error_report(it)
        else:
            todo.append((i, (it, model_spec, tuple(sorted(options)), lim, engine, layout, max_witnesses, blame, fix)))
    interrupted, stopped_by = None, 2
    try:
        _run(todo, jobs, lim, out, on_result)
    except KeyboardInterrupt as e:
        interrupted = (sum(1 for t in out if t is not None), len(items))
        stopped_by = pool.signum_of(e)
    tests = [_portable(t) for t in out if t is not None]
    seen: dict[str, int] = {}
    for k, t in enumerate(tests):          # several errors at one line (matrix rows): unique names
        n = seen[t.result.name] = seen.get(t.result.name, 0) + 1
        if n > 1:
            tests[k] = replace(t, result=replace(t.result, name=f"{t.result.name}#{n}"))
    if not timing:
        tests = [replace(t, result=replace(t.result, time=0.0)) for t in tests]
    order = {p: k for k, p in enumerate(sorted({t.result.path for t in tests}))}
    tests.sort(key=lambda t: order[t.result.path])          # by file; load order within a file
    hardware = _compare(tests, items, hw_files) if hw_files else ()
    return Report(model=model_spec or "ptx", model_hash=model_hash(model), options=tuple(sorted(options)),
                  inputs=tuple(rel(p) for p in paths), layout=layout, tests=tuple(tests),
                  hardware=hardware, hw_files=tuple(rel(h) for h in hw_files), timing=timing,
                  interrupted=interrupted, stopped_by=stopped_by, engine=engine)


def _run(todo, jobs: int, lim, out: list, on_result) -> None:
    """Fill `out[i]` for every (i, job) of todo: in worker processes (jobs >= 1), or in this
    process (jobs 0, or PTXMC_DEBUG so that a bug shows its traceback). KeyboardInterrupt
    propagates, with `out` holding every report finished before it."""
    from ..batch import in_process

    def done(k: int, outcome) -> None:
        i, job = todo[k]
        rep = outcome.value if isinstance(outcome, pool.Value) else \
            _failed_report(job[0], outcome, lim, job[4], Path(str(job[1] or "ptx")).stem)
        with pool.sigint_deferred():
            out[i] = rep
            if on_result:
                on_result(rep)

    jobs_ = [j for _, j in todo]
    if os.environ.get("PTXMC_DEBUG") or jobs == 0:
        for k, job in enumerate(jobs_):
            done(k, in_process(_job, job))
        return
    pool.run_pool(_job, jobs_, min(max(1, jobs), len(jobs_)), lim.hard_timeout(), done)


def _compare(tests, items, hw_files) -> tuple:
    from ..harness.compare import compare, hang_from_result, verdicts_from_result
    from ..harness.litmus7 import load_any

    by_name = {it.name: it for it in items if not isinstance(it, LitmusError)}
    hists = [h for f in hw_files for h in load_any(f, by_name)]      # JSON, JSONL or a litmus7 log (review C8)
    model = {t.result.name: verdicts_from_result(t.result) for t in tests
             if t.result.status not in ("error", "unknown") and not t.result.undefined and t.result.outcomes}
    complete = all(t.result.complete for t in tests)
    hangs = {t.result.name: hang_from_result(t.result) for t in tests}
    comps = compare(hists, model, by_name, complete, hangs=hangs)
    return tuple(sorted(comps, key=lambda c: c.test))


def render(report: Report) -> dict[str, str]:
    """Every file of the report folder: name -> text."""
    from . import html, jsondoc, junit, markdown

    return {"index.html": html.render(report), "report.md": markdown.render(report),
            "report.json": jsondoc.render(report), "junit.xml": junit.render(report)}


def write_tree(out: str | os.PathLike, files: dict[str, str | bytes], policy=None) -> Path:
    """Write `files` (relative name -> text or bytes) as the report folder `out`, atomically and
    only over an earlier report (checker.outsafe.write_tree)."""
    from .. import outsafe

    return outsafe.write_tree(out, files, policy or outsafe.Policy())
