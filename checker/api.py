r"""The Python API: load litmus tests, ask whether an outcome is allowed and why, list every
allowed outcome, judge whole suites - the answers `ptxmc` prints, as Python objects (the user
documentation, with more examples, is docs/api.md).

    >>> import checker
    >>> test = checker.load_test("litmus/core/MP.yaml::MP+rel.gpu+acq.gpu+sameCluster")
    >>> checker.check(test, "P1:r0=1 /\\ P1:r1=0").status
    'forbidden'

Arguments shared by the functions:

- `test`: a LitmusTest (from `load`), or a spec: `FILE::NAME`, or `FILE` when it holds one test.
  A relative path into the bundled suites (`litmus/...`) is found from any folder.
- `condition`: a herd condition (`P1:r0=1 /\ x=2`, `~`, `\/`, `!=`) or a parsed Cond.
- `model`: a model name (`ptx`, the default, or `sc`), the path of a .cat file, or a parsed
  checker.cat.interp.Model. `options`: model options (`strict-cta`, ...; docs/model.md).
- `engine`: `auto` (default: brute force for a test with at most 1,024 candidate executions, Z3
  otherwise), `z3`, or `brute` (the brute-force enumerator that cross-checks Z3).
- `limits`: a checker.limits.Limits (default: the limits in force, checker.limits.current()),
  e.g. `checker.limits.DEFAULT.override(["timeout=5"])`.

Errors are CheckerErrors (checker.errors): LitmusError for a malformed test (it names the file,
the line and the text), ModelError for a bad model, SolverUnknown when Z3 cannot decide within
the limits and LimitExceeded for a test past a limit - never a wrong verdict. `outcomes` and
`run` return Results instead (status `error` / `unknown`), as `ptxmc run` reports them.

Everything runs in this process except `run` with `jobs >= 1`, which uses worker processes
(checker.pool): a worker that crashes costs only its test, and a test past the hard time bound
is stopped and reported UNKNOWN.
"""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Literal, Sequence, Union, overload

from . import limits as _limits
from .ast import Cond, LitmusTest
from .errors import CheckerError, LitmusError, SourceLoc
from .resources import LITMUS_DIR, bundled

if TYPE_CHECKING:
    from .cat.interp import Model
    from .results.result import Result
    from .verdict.explain import Explanation
    from .verdict.session import Session
    from .verdict.union import UnionSession

__all__ = ["load", "load_test", "check", "explain", "outcomes", "run", "session"]

TestSpec = Union[LitmusTest, str, "os.PathLike[str]"]
ModelSpec = Union[str, "os.PathLike[str]", "Model", None]


def load(source: str | os.PathLike[str]) -> list[LitmusTest]:
    r"""The tests of a YAML file, of a folder (recursively), of `FILE::NAME` (that one test), or
    of YAML text (a string with a line break in it). A malformed test raises its LitmusError:
    to judge a suite that has some, use `run`, which reports each as an error Result.

    >>> [t.name for t in load("litmus/core/CoWW.yaml")][:2]
    ['CoWW+weak', 'CoWW+relaxed']
    >>> [t] = load('''
    ... name: SB
    ... source: "PTX ISA 9.4, Memory Consistency Model > Axioms"
    ... threads:
    ...   P0: {at: gpu0.cta0, code: ["st.relaxed.gpu.global [x], 1", "ld.relaxed.gpu.global r0, [y]"]}
    ...   P1: {at: gpu0.cta1, code: ["st.relaxed.gpu.global [y], 1", "ld.relaxed.gpu.global r0, [x]"]}
    ... ''')
    >>> [th.name for th in t.threads], t.path
    (['P0', 'P1'], '<string>')
    """
    from .front.litmus import load_file, load_paths, load_text

    _path_or_text(source, "source")
    if isinstance(source, str) and "\n" in source:
        items = load_text(source, "<string>")
    else:
        path, sep, name = os.fspath(source).partition("::")
        if sep:
            return [load_test(os.fspath(source))]
        found = bundled(path)
        if not os.path.exists(found):
            raise LitmusError(f"no such file or folder: {path}")
        items = load_paths([found]) if os.path.isdir(found) else load_file(found)
    for it in items:
        if isinstance(it, LitmusError):
            raise it
    return list(items)


def load_test(spec: TestSpec) -> LitmusTest:
    """The one test `FILE::NAME` names, or the only test of FILE (a LitmusTest is returned as it
    is). LitmusError if there is no such test, if FILE holds several and no NAME is given, or if
    the test is malformed.

    >>> load_test("litmus/core/SB.yaml::SB+fence.sc.gpu+sameCluster").name
    'SB+fence.sc.gpu+sameCluster'
    """
    if isinstance(spec, LitmusTest):
        return spec
    from .front.litmus import load_file

    _path_or_text(spec, "test")
    path, _, name = os.fspath(spec).partition("::")
    path = bundled(path) if path else path
    if not path or not Path(path).exists():
        raise LitmusError(f"no such file: {os.fspath(spec).partition('::')[0]}")
    items = load_file(path, name or None)      # with a name, only the entries that can be it
    errors = [it for it in items if isinstance(it, LitmusError)]
    tests = [t for t in items if not isinstance(t, LitmusError)]
    if name:
        named = [t for t in tests if t.name == name]
        if named:
            return named[0]
        mine = _errors_of(path, name, errors)
        if mine:
            raise mine[0]
        if not errors:          # the name matched no entry: load the rest to say what is there
            everything = load_file(path)
            errors = [it for it in everything if isinstance(it, LitmusError)]
            tests = [t for t in everything if not isinstance(t, LitmusError)]
        if errors and not tests:
            raise errors[0]                         # the whole file is unreadable
        also = f" ({len(errors)} malformed test(s) in the file: `ptxmc run {path}` lists them)" if errors else ""
        raise LitmusError(f"no test named '{name}' in {path}{also}")
    if errors:
        raise errors[0]
    if len(tests) != 1:
        names = ", ".join(t.name for t in tests)
        raise LitmusError(f"{path} holds {len(tests)} tests ({names}): name one as {path}::NAME")
    return tests[0]


def _errors_of(path: str, name: str, errors: list) -> list:
    """The errors located inside the YAML item whose `name:` is `name` (a matrix test's name
    template, ${...} standing for anything, counts too), or that name it as a duplicate."""
    import re

    from .front import yamlsafe

    try:
        text = Path(path).read_text(encoding="utf-8")
        root = yamlsafe.compose(text, path)
    except (OSError, UnicodeError, CheckerError, RecursionError):
        return []
    if root is None:
        return []
    items = root.value if root.tag.endswith(":seq") else [root]
    spans = []
    for it in items:
        if not it.tag.endswith(":map"):
            continue
        raw = next((v.value for k, v in it.value if getattr(k, "value", None) == "name"
                    and isinstance(v.value, str)), None)
        if raw is None:
            continue
        pattern = ".*".join(re.escape(part) for part in re.split(r"\$\{[^{}]*\}", raw.strip()))
        if re.fullmatch(pattern, name):
            spans.append((it.start_mark.line + 1, it.end_mark.line + 1))
    return [e for e in errors if e.where is not None and any(a <= e.where.line <= b for a, b in spans)]


def session(test: TestSpec, *, model: ModelSpec = None, options: Iterable[str] = (), engine: str = "auto",
            limits: _limits.Limits | None = None, hang: bool = False) -> Session | UnionSession:
    """The session of a test (checker.verdict.open.open_session): one test under one model that
    answers every question about it -- a checker.verdict.session.Session (one straight-line
    variant, lowered and encoded once) or a checker.verdict.union.UnionSession (over the test's
    variants: control paths, barrier schedules), with the same questions and answer types.
    `check`, `explain` and `outcomes` each make one; make your own to ask several questions of
    one test. `hang`: the liveness question is asked too. Its limits are `limits`."""
    from .verdict.open import open_session

    lim = _limits_of(limits)
    with _limits.use(lim):
        m = _model(model)
        return open_session(load_test(test), m, _options(m, options), _engine(engine), lim, hang=hang)


def check(test: TestSpec, condition: str | Cond, *, model: ModelSpec = None, options: Iterable[str] = (),
          engine: str = "auto", limits: _limits.Limits | None = None) -> Explanation:
    r"""Is an outcome allowed, and why? A checker.verdict.explain.Explanation:

    - `status`: `allowed` (`execution` is a witness), `forbidden` (`blame`: every minimal set of
      axioms that rules it out; `violations`: what each violated axiom shows on `execution`, a
      candidate execution with the outcome; `needed`: the synchronization whose removal alone
      would allow it), `impossible` (no execution satisfies it even without axioms: a wrong
      value or register), or `undefined` (the program has undefined behaviour: `flag`).

    `condition` may also be `hang`, the liveness question of `ptxmc check FILE::NAME hang` (may
    some fair execution never terminate?): `allowed` (`hangs`: each blocked thread, `execution`:
    a witness), `forbidden`, `unknown` (`why`) or `undefined`; `cond` is then None.

    >>> x = check("litmus/core/MP.yaml::MP+rel.gpu+acq.gpu+sameCluster", "P1:r0=1 /\\ P1:r1=0")
    >>> x.status, x.blame
    ('forbidden', (('Causality',),))
    >>> [e.mutation.describe() for e in x.needed][0]
    'weakening st.release.gpu.global [flag], 1 to st.relaxed.gpu.global [flag], 1 (P0, line 27)'
    >>> check("litmus/core/MP.yaml::MP+rel.gpu+acq.gpu+sameCluster", "P1:r0=1 /\\ P1:r1=1").status
    'allowed'
    """
    from .verdict.explain import explain as _explain, explain_hang

    lim = _limits_of(limits)
    hang = _is_hang(condition)
    with _limits.use(lim):
        cond = None if hang else _cond(condition)
        with _limits.memory_as_unknown():
            s = session(test, model=model, options=options, engine=engine, limits=lim, hang=hang)
            return explain_hang(s) if hang else _explain(s, cond)


@overload
def explain(test: TestSpec, condition: str | Cond, *, model: ModelSpec = ..., options: Iterable[str] = ...,
            engine: str = ..., limits: _limits.Limits | None = ..., dot: Literal[False] = ...) -> str: ...


@overload
def explain(test: TestSpec, condition: str | Cond, *, model: ModelSpec = ..., options: Iterable[str] = ...,
            engine: str = ..., limits: _limits.Limits | None = ...,
            dot: Literal[True]) -> tuple[str, str | None]: ...


def explain(test, condition, *, model=None, options=(), engine="auto", limits=None, dot=False):
    r"""What `ptxmc check` prints: the verdict, the axioms, the synchronization needed, and the
    execution. With `dot=True`, also the execution as a Graphviz DOT graph (None when there is
    none): `(text, dot)`.

    >>> print(explain("litmus/core/SB.yaml::SB+fence.sc.gpu+sameCluster", "P0:r0=0 /\\ P1:r0=0").splitlines()[2])
    Forbidden
    """
    from .verdict.explain import explain_text, hang_text

    lim = _limits_of(limits)
    hang = _is_hang(condition)
    with _limits.use(lim):
        cond = None if hang else _cond(condition)
        with _limits.memory_as_unknown():
            s = session(test, model=model, options=options, engine=engine, limits=lim, hang=hang)
            _, text, graph = hang_text(s) if hang else explain_text(s, cond)
    return (text, graph) if dot else text


def outcomes(test: TestSpec, *, model: ModelSpec = None, options: Iterable[str] = (), engine: str = "auto",
             limits: _limits.Limits | None = None) -> Result:
    """Every allowed outcome of a test, its expectations ignored: the checker.results.result.Result
    `ptxmc outcomes` prints and `--format json` serializes. `outcomes` holds each outcome as a
    tuple of (name, value) pairs over `observe`; `complete` is False if the enumeration stopped at
    the outcome cap or a loop the bound cut lost executions (a `loop bound reached` note says
    which); `undefined` lists the undefined behaviour the program has, if any.
    `status` is `run`, `undefined`, `error` or `unknown` (then `message` says why), or `fail` when
    no execution terminates (a hang: `message` and a `hang: ...` note name the blocked instruction).

    >>> r = outcomes("litmus/core/SB.yaml::SB+fence.sc.gpu+sameCluster")
    >>> r.status, len(r.outcomes), r.complete
    ('run', 3, True)
    >>> from checker.results.result import outcome_text
    >>> [outcome_text(o) for o in r.outcomes]
    ['P0:r0=0; P1:r0=1; x=1; y=1;', 'P0:r0=1; P1:r0=0; x=1; y=1;', 'P0:r0=1; P1:r0=1; x=1; y=1;']
    """
    from .model.observables import refs
    from .resources import model_name
    from .verdict.check import check_test

    lim = _limits_of(limits)
    with _limits.use(lim):
        m = _model(model)
        opts, eng = _options(m, options), _engine(engine)
        t = load_test(test)
        # what `run` shows of `t` (the names its conditions and `locations:` mention), and the
        # default observables too where `t` names no `locations:` (docs/cli.md#ptxmc-outcomes)
        shown = tuple(dict.fromkeys(t.locations + tuple(r for e in t.expectations for r in refs(e.cond))))
        bare = replace(t, expectations=(), expect_undefined=None, locations=shown,
                       observe_defaults=not t.locations)
        return check_test(bare, m, model_name(m), opts, eng, lim.timeout)


def run(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None, *, jobs: int = 1,
        model: str | os.PathLike[str] | None = None, options: Iterable[str] = (), engine: str = "auto",
        limits: _limits.Limits | None = None, on_result: Callable[[Result], None] | None = None) -> list[Result]:
    """Judge the expectations of every test of some files and folders (default: the bundled
    suites), as `ptxmc run` does: one checker.results.result.Result per test, in input order,
    with `status` pass / fail / error (a malformed test: its message says where) / unknown /
    undefined / run (no expectations); `ok` is True when the expectations are met.

    `jobs` worker processes (0: in this process); `on_result(result)` is called as each test
    finishes. `checker.results.output.FORMATS[fmt](results)` renders them as `ptxmc run --format
    fmt` would (text, herd, json, junit). `model` is a name or a path (workers load it).

    >>> results = run("litmus/core/CoWW.yaml", jobs=0)
    >>> all(r.status == "pass" for r in results), len(results) > 1
    (True, True)
    """
    from .batch import run_tests
    from .front.litmus import load_paths

    if paths is None:
        paths = [LITMUS_DIR]
    elif isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 0:
        raise CheckerError(f"jobs={jobs!r}: must be 0 (in this process) or a positive integer")
    spec = None if model is None else os.fspath(model)
    lim = _limits_of(limits)
    with _limits.use(lim):
        opts, eng = tuple(sorted(_options(_model(spec), options))), _engine(engine)
        items = load_paths([bundled(os.fspath(p)) for p in paths])
        return run_tests(items, spec, opts, eng, jobs=jobs, lim=lim, on_result=on_result)


# -- helpers -----------------------------------------------------------------------------------

def _model(model: ModelSpec) -> Model:
    from .cat.interp import Model
    from .resources import resolve_model

    if isinstance(model, Model):
        return model
    return resolve_model(None if model is None else os.fspath(model))


def _path_or_text(x, what: str) -> None:
    """A path (str or os.PathLike giving a str) or YAML text: anything else is a CheckerError
    (bytes would fail deep inside with Python's own, inverted, message)."""
    if isinstance(x, str) or (isinstance(x, os.PathLike) and isinstance(os.fspath(x), str)):
        return
    raise CheckerError(f"{what}={x!r:.60}: give a path or YAML text as a str (decode bytes first)")


def _options(model: Model, options) -> frozenset:
    """The model options, checked as `--option` is (checker.cliargs.check_options): a list of
    names the model reads. A bare string would be read as its characters, a typo would silently
    check the default model."""
    from .cliargs import check_options

    if isinstance(options, (str, bytes)) or not isinstance(options, Iterable):
        raise CheckerError(f"options={options!r}: give a list of option names, e.g. options=['strict-cta']")
    options = list(options)
    for o in options:
        if not isinstance(o, str):
            raise CheckerError(f"options: {o!r} is not an option name (a string)")
    check_options(model, options)
    return frozenset(options)


def _engine(engine) -> str:
    from .engines.registry import ENGINES

    if engine not in ENGINES:
        raise CheckerError(f"engine={engine!r}: no such engine (engines: {', '.join(ENGINES)})")
    return engine


def _limits_of(limits) -> _limits.Limits:
    if limits is None:
        return _limits.current()
    if not isinstance(limits, _limits.Limits):
        raise CheckerError(f"limits={limits!r:.60}: give a checker.limits.Limits, e.g. "
                           "checker.limits.DEFAULT.override(['timeout=5'])")
    return limits


def _is_hang(condition) -> bool:
    """Is `condition` the hang question (`ptxmc check FILE::NAME hang`) rather than a condition?"""
    return isinstance(condition, str) and condition.strip() == "hang"


def _cond(condition: str | Cond) -> Cond:
    if isinstance(condition, Cond):
        return condition
    if not isinstance(condition, str):
        raise CheckerError(f"condition={condition!r:.60}: give a herd condition (a string such as "
                           "'P1:r0=1 /\\ P1:r1=0') or a parsed Cond")
    from .front.conditions import parse_cond

    return parse_cond(condition, SourceLoc("<condition>", 1, condition))
