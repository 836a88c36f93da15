"""The cat interpreter: loads a model and evaluates it over any checker.cat.algebra.Algebra.

Every value carries its kind, 'set' or 'rel'; a kind error or an unknown name is a ModelError at
the offending text. A model with a glossary is checked once when it is loaded (names and kinds of
every branch, against the glossary), so a broken model fails before any engine runs.
"""
from __future__ import annotations

import os
from collections import ChainMap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from ..errors import InternalError, ModelError
from .algebra import Algebra, Constraint, Value
from .ast import Binary, Check, Expr, IfOption, Let, Statement, Unary, Universe, Var, Zero

if TYPE_CHECKING:
    from .parse import Program      # parse (and lark) are imported only when a model is parsed

__all__ = ["Check", "Model", "Evaluation", "load_model", "parse_model", "evaluate", "SET", "REL"]

SET, REL = "set", "rel"
_ARTICLE = {SET: "a set", REL: "a relation"}
_CHECKS_ON_RELATIONS = ("acyclic", "irreflexive")
_ABSORBING = (";", "&", "*", "\\")    # operators whose result is empty with an empty operand (see absorbing)


@dataclass(frozen=True)
class Model:
    """A parsed model: its statements (includes spliced in), checks, glossary and the options it reads."""

    path: str
    checks: tuple[Check, ...]
    statements: tuple[Statement, ...]
    glossary: Mapping[str, tuple[str, str]] = field(hash=False)
    options_used: frozenset[str]
    title: str | None = None
    sources: tuple[str, ...] = ()  # real paths of the file and its includes
    # Names and kinds checked in every branch when loaded (a model with a glossary): evaluating
    # it can raise no ModelError, so an operand that cannot change a value may be left unevaluated.
    checked: bool = False

    @property
    def flag_names(self) -> tuple[str, ...]:
        """The undefined-behaviour flags in the order the model states them: reports list the
        flags that fire in this order, so a model puts a flag that explains others first."""
        return tuple(dict.fromkeys(c.name for c in self.checks if c.flag))


@dataclass(frozen=True)
class Evaluation:
    """Every let-bound name's (kind, value), and each check with its constraint (`~` applied)."""

    env: Mapping[str, tuple[str, Value]] = field(hash=False)
    checks: tuple[tuple[Check, Constraint], ...]
    check_values: tuple[tuple[str, Value], ...] = ()   # (kind, value) of each check's expression


def parse_model(text: str, path: str = "<string>") -> Model:
    """A model from text; `include` paths are relative to the directory of `path`."""
    from .parse import parse_program

    return _model(parse_program(text, path), path)


_cache: dict[tuple[str, str], tuple[tuple, Model]] = {}


def load_model(path: str | os.PathLike, persist: bool = False) -> Model:
    """A model from a file, cached until the file or one of its includes changes. With `persist`
    the parsed model is also kept on disk for the next process (checker.cat.cache)."""
    path = str(path)
    key = (os.path.abspath(path), path)
    hit = _cache.get(key)
    if hit is not None and _stamps(hit[1].sources) == hit[0]:
        return hit[1]
    if persist:
        from . import cache

        model = cache.load(path)
        if model is not None:
            _cache[key] = (_stamps(model.sources), model)
            return model
        before = cache.digest(path)
    from .parse import read_program

    program = read_program(path)
    model = _model(program, path)
    _cache[key] = (_stamps(program.sources), model)
    if persist:
        cache.store(path, model, before)
    return model


def _stamps(sources: tuple[str, ...]) -> tuple:
    out = []
    for src in sources:
        try:
            st = os.stat(src)
        except OSError:
            return ()
        out.append((src, st.st_mtime_ns, st.st_size))
    return tuple(out)


def _model(program: Program, path: str) -> Model:
    glossary = {g.name: (g.kind, g.description) for g in program.glossary}
    model = Model(
        path=path,
        checks=tuple(s for s in program.statements if isinstance(s, Check)),
        statements=program.statements,
        glossary=glossary,
        options_used=frozenset(_options(program.statements)),
        title=program.title,
        sources=program.sources,
        checked=bool(glossary),     # (the check below raises otherwise)
    )
    if glossary:
        base = {name: (kind, None) for name, (kind, _) in glossary.items()}
        _Evaluator(_KindsOnly(), frozenset(), both_branches=True).run(model.statements, base)
    return model


def _options(statements: tuple[Statement, ...]) -> set[str]:
    found: set[str] = set()

    def walk(e: Expr) -> None:
        match e:
            case IfOption(option=o, then=t, orelse=f):
                found.add(o)
                walk(t)
                walk(f)
            case Unary(arg=a):
                walk(a)
            case Binary(left=a, right=b):
                walk(a)
                walk(b)

    for st in statements:
        for e in [b.expr for b in st.bindings] if isinstance(st, Let) else [st.expr]:
            walk(e)
    return found


def evaluate(
    model: Model,
    base: Mapping[str, tuple[str, Value]],
    algebra: Algebra,
    options: frozenset[str] = frozenset(),
    until: str | None = None,
) -> Evaluation:
    """Evaluate every `let` once and every check, over `base` (name -> (kind, value)); with
    `until`, stop once that name is bound (the checks before it evaluated, none after)."""
    check_base(model, {name: kind for name, (kind, _) in base.items()})
    return _Evaluator(algebra, frozenset(options), skip_absorbed=model.checked).run(model.statements, base, until)


# Operators a let-bound value may nest, its let-bound names expanded, before a symbolic algebra
# names it (bundled models: at most 65). A chain of lets each built on the one before (review 3's
# D20: 200 lets `r(i) = (r(i-1) ; r(i-1)) | r(i-1)`) made Z3 terms hundreds of levels deep, which
# cost Z3 a minute and 700 MB on a 2-thread test; named every DEEP levels, 1 s.
DEEP = 96
_DEEP_CACHE: dict[int, tuple[tuple, frozenset[int]]] = {}


def deep_bindings(statements: tuple[Statement, ...]) -> frozenset[int]:
    """The ids of the (non-recursive) let bindings whose value nests more than DEEP operators, the
    let-bound names it uses expanded (a named one counts as one level); static, computed once per
    model's statements."""
    hit = _DEEP_CACHE.get(id(statements))
    if hit is not None and hit[0] is statements:
        return hit[1]
    depth: dict[str, int] = {}
    deep: set[int] = set()
    for st in statements:
        if not isinstance(st, Let):
            continue
        inner = {**depth, **{b.name: 1 for b in st.bindings}} if st.rec else depth
        new = {}
        for b in st.bindings:
            d = _depth(b.expr, inner)
            if d > DEEP and not st.rec:
                deep.add(id(b))
                d = 1
            new[b.name] = d
        depth.update(new)
    found = frozenset(deep)
    _DEEP_CACHE[id(statements)] = (statements, found)
    return found


def _depth(e: Expr, names: Mapping[str, int]) -> int:
    match e:
        case Var(name=name):
            return names.get(name, 0)
        case Unary(arg=a):
            return 1 + _depth(a, names)
        case Binary(left=a, right=b):
            return 1 + max(_depth(a, names), _depth(b, names))
        case IfOption(then=t, orelse=f):
            return max(_depth(t, names), _depth(f, names))
    return 0


def unique_label(labels: set[str], base: str) -> str:
    """`base`, or `base#2`, `base#3`, ... : the first not in `labels` (added to it)."""
    name, n = base, 1
    while name in labels:
        n += 1
        name = f"{base}#{n}"
    labels.add(name)
    return name


def check_label(c: Check) -> str:
    """The base of a check's label (the names of its Z3 variables, as `clk|LABEL|e`): its name,
    `check` if it has none. Never its line: an engine's terms, and so Z3's search, must not change
    when comments move the model's lines (Z3's choices depend on its variables' names: an edit of
    comments alone once turned a 50 ms query into a timeout)."""
    return "check" if c.name.startswith("check@") else c.name


def check_base(model: Model, kinds: Mapping[str, str]) -> None:
    """The base an engine provides (name -> kind) against the model's glossary."""
    for name, (kind, _) in model.glossary.items():
        if name not in kinds:
            # the model's fault, not ours (a user's model, or a bundled one test_glossary keeps in step)
            raise ModelError(f"the engine provides no '{name}', which the glossary of {model.path} declares")
        if kinds[name] != kind:
            raise ModelError(f"the engine provides '{name}' as a {kinds[name]}; the glossary of {model.path} says {kind}")
    for name, kind in kinds.items():
        if kind not in _ARTICLE:
            raise InternalError(f"base value '{name}' has kind {kind!r}, not 'set' or 'rel'")


def evaluate_expr(expr: Expr, env: Mapping[str, tuple[str, Value]], algebra: Algebra,
                  options: frozenset[str] = frozenset()) -> tuple[str, Value]:
    """(kind, value) of one expression over `env` (base names plus an Evaluation's env):
    explanations use it to decompose a violated check into its parts."""
    ev = _Evaluator(algebra, frozenset(options))
    return ev.expr(expr, {"id": (REL, algebra.identity()), **env})


class _KindsOnly:
    """An algebra with no values: evaluating over it checks names and kinds only."""

    def fix(self, step, start, label):
        step(start)
        return start

    def __getattr__(self, name: str):
        return lambda *args: None


class _Evaluator:
    """One evaluation: walks the statements in order, binding names in an environment."""

    def __init__(self, algebra: Algebra, options: frozenset[str], both_branches: bool = False,
                 skip_absorbed: bool = False):
        self.alg = algebra
        self.options = options
        self.both_branches = both_branches
        self.skip_absorbed = skip_absorbed
        self.labels: set[str] = set()

    def run(self, statements: tuple[Statement, ...], base: Mapping[str, tuple[str, Value]],
            until: str | None = None) -> Evaluation:
        self.deep = deep_bindings(statements)
        env: dict[str, tuple[str | None, Value]] = {"id": (REL, self.alg.identity()), **base}
        defined: dict[str, tuple[str, Value]] = {}
        checks, values = [], []
        for st in statements:
            if isinstance(st, Let):
                bound = self.let(st, env)
                env.update(bound)
                defined.update(bound)
                if until in bound:
                    break
            else:
                constraint, value = self.check(st, env)
                checks.append((st, constraint))
                values.append(value)
        return Evaluation(defined, tuple(checks), tuple(values))

    def label(self, base: str) -> str:
        return unique_label(self.labels, base)

    def let(self, st: Let, env: Mapping) -> dict[str, tuple[str, Value]]:
        if not st.rec:
            bound = {b.name: self.expr(b.expr, env) for b in st.bindings}
            bind = getattr(self.alg, "bind", None)
            if bind is None:
                return bound
            # A symbolic algebra names each let-bound value (shared subterms, deterministic names)
            # if it names lets, and always a deep one (deep_bindings).
            deep = {b.name for b in st.bindings if id(b) in getattr(self, "deep", ())}
            return {n: (k, bind(v, self.label(n), n in deep)) for n, (k, v) in bound.items()}
        names = [b.name for b in st.bindings]
        kinds = self.rec_kinds(st, env)

        def step(values: tuple) -> tuple:
            local = ChainMap(dict(zip(names, zip(kinds, values))), env)
            return tuple(self.expr(b.expr, local)[1] for b in st.bindings)

        start = tuple(self.alg.empty_set() if k == SET else self.alg.empty_rel() for k in kinds)
        values = self.alg.fix(step, start, self.label(",".join(names)))
        return dict(zip(names, zip(kinds, values)))

    def rec_kinds(self, st: Let, env: Mapping) -> list[str]:
        """Kinds of a `let rec` group: inferred from the bodies, unknown ones defaulting to 'rel'."""
        names = [b.name for b in st.bindings]
        kinds: list[str | None] = [None] * len(names)
        infer = _Evaluator(_KindsOnly(), self.options, self.both_branches)
        for _ in range(len(names) + 1):
            local = ChainMap(dict(zip(names, zip(kinds, [None] * len(names)))), env)
            found = [infer.expr(b.expr, local)[0] for b in st.bindings]
            if found == kinds:
                break
            kinds = found
        return [k or REL for k in kinds]

    def check(self, c: Check, env: Mapping) -> Constraint:
        kind, value = self.expr(c.expr, env)
        if c.kind in _CHECKS_ON_RELATIONS and kind == SET:
            raise ModelError(f"{c.kind} needs a relation, not a set", c.where)
        label = self.label(check_label(c))
        test = {"acyclic": self.alg.acyclic, "irreflexive": self.alg.irreflexive, "empty": self.alg.is_empty}[c.kind]
        constraint = test(value, label)
        return (self.alg.negate(constraint) if c.negated else constraint), (kind, value)

    def expr(self, e: Expr, env: Mapping) -> tuple[str | None, Any]:
        alg = self.alg
        match e:
            case Var(name=name):
                if name not in env:
                    raise ModelError(f"unknown name '{name}'", e.loc)
                return env[name]
            case Zero():
                return REL, alg.empty_rel()
            case Universe():
                return SET, alg.universe()
            case IfOption():
                return self.if_option(e, env)
            case Binary():
                if self.skip_absorbed and e.op in _ABSORBING:
                    return self.absorbing(e, env)
                (ka, a), (kb, b) = self.expr(e.left, env), self.expr(e.right, env)
                return self.binary(e, ka, a, kb, b)
            case Unary():
                k, v = self.expr(e.arg, env)
                return self.unary(e, k, v)
        raise InternalError(f"not a cat expression: {e!r}")

    def absorbing(self, e: Binary, env: Mapping) -> tuple[str | None, Any]:
        """A composition, intersection or product, empty when either operand is (a difference:
        when its left one is), with the other operand left unevaluated then: most of a test's
        relations are empty (its events use few of the model's instructions; bench/RESULTS.md).
        The operand that is a bare name goes first (a lookup). Only for checked models: a
        skipped operand can hide no error."""
        first, second = e.left, e.right
        if e.op != "\\" and isinstance(second, Var) and not isinstance(first, Var):
            first, second = second, first
        k1, v1 = self.expr(first, env)
        if v1 is not None and not v1:
            if e.op in (";", "*"):
                return REL, self.alg.empty_rel()
            return k1, (self.alg.empty_rel() if k1 == REL else self.alg.empty_set())
        k2, v2 = self.expr(second, env)
        if first is e.left:
            return self.binary(e, k1, v1, k2, v2)
        return self.binary(e, k2, v2, k1, v1)

    def if_option(self, e: IfOption, env: Mapping) -> tuple[str | None, Any]:
        chosen = e.then if e.option in self.options else e.orelse
        if not self.both_branches:
            return self.expr(chosen, env)
        kt, vt = self.expr(e.then, env)
        kf, vf = self.expr(e.orelse, env)
        if kt and kf and kt != kf:
            raise ModelError(f"the branches of if have different kinds: {_ARTICLE[kt]} and {_ARTICLE[kf]}", e.loc)
        return kt or kf, (vt if chosen is e.then else vf)

    def binary(self, e: Binary, ka, a, kb, b) -> tuple[str | None, Any]:
        alg = self.alg
        if e.op in ("|", "&", "\\"):
            if ka and kb and ka != kb:
                raise ModelError(f"'{e.op}' needs two sets or two relations, got {_ARTICLE[ka]} and {_ARTICLE[kb]}", e.loc)
            combine = {"|": alg.union, "&": alg.inter, "\\": alg.diff}[e.op]
            return ka or kb, combine(a, b)
        if e.op == ";":
            for side, k in (("left", ka), ("right", kb)):
                if k == SET:
                    raise ModelError(f"';' composes relations, but its {side} operand is a set", e.loc)
            return REL, alg.compose(a, b)
        for side, k in (("left", ka), ("right", kb)):
            if k == REL:
                raise ModelError(f"'*' between two operands is the product of two sets, but its {side} operand is a relation", e.loc)
        return REL, alg.product(a, b)

    def unary(self, e: Unary, k, v) -> tuple[str | None, Any]:
        alg = self.alg
        op = e.op
        if op == "~":
            if k is None:
                return None, None
            return k, alg.set_complement(v) if k == SET else alg.rel_complement(v)
        if op == "[]":
            if k == REL:
                raise ModelError("[...] takes a set, not a relation", e.loc)
            return REL, alg.ident(v)
        if k == SET:
            what = f"{op}(...)" if op in ("domain", "range") else f"postfix '{op}'"
            raise ModelError(f"{what} takes a relation, not a set", e.loc)
        if op in ("domain", "range"):
            return SET, (alg.domain if op == "domain" else alg.range)(v)
        apply = {"^-1": alg.inverse, "+": alg.plus, "*": alg.star, "?": alg.opt}[op]
        return REL, apply(v)
