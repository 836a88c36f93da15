"""A checked cat model compiled to one Python function: the checks' values (or the let-bound
names' values) over a base, computed as the interpreter (checker.cat.interp) computes them,
without walking the syntax tree; for brute force's consistency test, the axioms cheapest first
and a return at the first that fails.

Brute force evaluates the residual model on every candidate execution, and every engine a test's
static part once over concrete sets (checker.cat.stage); walking the tree was most of that time
(the dispatch on node types, the kinds carried with every value, an operand's emptiness tested
on every node; bench/RESULTS.md). Kinds are known when the model is compiled
(the glossary's, the base's, and those the interpreter infers for `let rec`), and so are the
options' branches and the checks' labels: what is left is the algebra's operations, in the
interpreter's order, on local variables. Operators with an absorbing operand evaluate the other
only when the first is not empty, with the name first, as the interpreter does for a checked
model; only checked models are compiled, since an operand left unevaluated can then hide no
error. The generated text is built from the model's structure alone: names become variables
`v0, v1, ...` and every string of the model reaches it as a constant of its namespace.
"""
from __future__ import annotations

import marshal
import re
from dataclasses import dataclass
from functools import partial
from typing import Callable, Mapping

from .ast import Binary, Check, Expr, IfOption, Let, Unary, Universe, Var, Zero
from .interp import REL, SET, Model, _ABSORBING, _Evaluator, _KindsOnly, check_base, check_label, unique_label

Compiled = Callable[[Mapping[str, tuple[str, object]]], tuple]   # base -> ((check, constraint), ...)

_UNARY = {"^-1": "inverse", "+": "plus", "*": "star", "?": "opt"}
_BOOLEAN = {"|": "union", "&": "inter", "\\": "diff"}
_TESTS = {"acyclic": "acyclic", "irreflexive": "irreflexive", "empty": "is_empty"}


def compile_checks(model: Model, base_kinds: Mapping[str, str], algebra, options=frozenset()) -> Compiled | None:
    """`fn(base)` -> ((check, constraint), ...) for every check in order, equal to
    `evaluate(model, base, algebra, options).checks` for every `base` with these names and kinds;
    None where the model is not checked (the interpreter must report its errors) or the algebra
    names its values (`bind`: the symbolic one)."""
    return _compiled(model, base_kinds, algebra, options, "checks")


def compile_consistent(model: Model, base_kinds: Mapping[str, str], algebra, options=frozenset()) -> Compiled | None:
    """`fn(base)` -> what compile_checks' function gives, or None as soon as an axiom (a check
    that is no flag) fails, without evaluating the rest of the model: brute force needs the flags
    of consistent candidates only, and most candidates fail an early axiom. None as for
    compile_checks."""
    return _compiled(model, base_kinds, algebra, options, "consistent")


def compile_env(model: Model, base_kinds: Mapping[str, str], algebra, options=frozenset()) -> Callable | None:
    """`fn(base)` -> {name: (kind, value)} of every let-bound name, equal to
    `evaluate(model, base, algebra, options).env` (the static part of a staged model); None as
    for compile_checks."""
    return _compiled(model, base_kinds, algebra, options, "env")


def _compiled(model: Model, base_kinds, algebra, options, mode: str) -> Callable | None:
    if not model.checked or hasattr(algebra, "bind"):
        return None
    # (compiling costs ~5 ms: the residual of most tests is the same model over the same names)
    key = (id(model), frozenset(base_kinds.items()), frozenset(options), mode)
    hit = _cache.get(key)
    if hit is None or hit[0] is not model:
        check_base(model, base_kinds)       # (a hit was checked with these kinds)
        if len(_cache) > 64:
            _cache.clear()
        hit = _cache[key] = (model, _function(model, base_kinds, frozenset(options), mode))
    return None if hit[1] is None else partial(hit[1], algebra)


def _function(model: Model, base_kinds, options: frozenset, mode: str) -> Callable | None:
    """The compiled function, its code read back from the model cache if it is there."""
    from . import cache

    parts = (tuple(sorted(base_kinds.items())), tuple(sorted(options)), mode)
    kept = cache.load_code(model, *parts)
    if kept is not None:
        try:
            code, consts = marshal.loads(kept[0]), kept[1]
            return _define(code, {name: model.statements[v] if how == "statement" else v
                                  for name, (how, v) in consts.items()})
        except Exception:       # noqa: BLE001 - an entry from other code: compile again
            pass
    try:
        code, consts = _Compiler(model, base_kinds, options).code(mode)
    except (RecursionError, SyntaxError, MemoryError):
        return None      # nesting past what Python compiles (100 indented blocks): interpreted
    index = {id(st): i for i, st in enumerate(model.statements)}
    # (constants are strings, None, or the model's own Check statements)
    spec = {name: ("statement", index[id(v)]) if id(v) in index else ("value", v) for name, v in consts.items()}
    cache.store_code(model, (marshal.dumps(code), spec), *parts)
    return _define(code, consts)


def _define(code, consts: dict) -> Callable:
    namespace = dict(consts)
    exec(code, namespace)     # noqa: S102 - our own text
    return namespace["run"]


_cache: dict[tuple, tuple[Model, Callable | None]] = {}
_VARIABLE = re.compile(r"\bv(\d+)\b")


@dataclass(frozen=True)
class _Unit:
    """One statement's part of the generated text: its lines [first, end), the variables it
    defines, and for an axiom, the variable holding its (check, holds) pair."""
    first: int
    end: int
    variables: range
    axiom: str | None


class _Compiler:
    def __init__(self, model: Model, base_kinds: Mapping[str, str], options: frozenset):
        self.model, self.options = model, options
        self.consts: dict[str, object] = {}
        self.lines: list[str] = []
        self.indent = 1
        self.fresh = 0
        self.labels: set[str] = set()
        # name -> (kind, variable); base names are read from the base when first used
        self.scope: dict[str, tuple[str, str]] = {}
        self.base_kinds = dict(base_kinds)
        self.prologue: list[str] = []
        self.defined: dict[str, tuple[str, str]] = {}    # let-bound name -> its last (kind, variable)
        self.from_base: set[int] = set()        # the variables the prologue reads from the base

    def code(self, mode: str) -> tuple[object, dict[str, object]]:
        """The code defining `run`, the function of `mode`: "checks", "consistent" (None at the
        first failing axiom) or "env" (the let-bound names); and the constants it reads."""
        if "id" not in self.base_kinds:        # (the interpreter's env: id, then the base over it)
            self.scope["id"] = (REL, self.const(None, "alg.identity()"))
        out = []
        units: list[_Unit] = []
        for st in self.model.statements:
            first, fresh = len(self.lines), self.fresh
            if isinstance(st, Let):
                self.let(st)
            else:
                out.append(self.check(st))
            units.append(_Unit(first, len(self.lines), range(fresh + 1, self.fresh + 1),
                               out[-1] if isinstance(st, Check) and not st.flag else None))
        if mode == "consistent":
            self.lines = self.axioms_first(units)
        if mode == "env":
            self.emit(f"return {{{''.join(f'{self.const(n)}: ({k!r}, {v}), ' for n, (k, v) in self.defined.items())}}}")
        else:
            self.emit(f"return ({''.join(f'{o}, ' for o in out)})")
        text = "def run(alg, base):\n" + "".join(f"    {p}\n" for p in self.prologue) + "\n".join(self.lines) + "\n"
        return compile(text, f"<cat {self.model.path}>", "exec"), self.consts

    def axioms_first(self, units: list["_Unit"]) -> list[str]:
        """The statements' lines reordered for "consistent": the axioms one after the other,
        cheapest first (the fewest lines of statements not yet emitted that it needs), each
        preceded by what it needs and followed by a return of None if it fails; then the rest in
        the model's order. Most candidates fail an axiom that needs little (NoThinAir or
        SCPerLocation fail for 79 % of the bundled suites' inconsistent candidates, Coherence
        needs `cause` and most of the model). A statement reads only variables defined before
        it, each defined once, so the values are the model's whatever the order."""
        defined_by = {v: i for i, u in enumerate(units) for v in u.variables if v not in self.from_base}
        needs = []
        for i, u in enumerate(units):
            read = {int(n) for line in self.lines[u.first:u.end] for n in _VARIABLE.findall(line)}
            needs.append({defined_by[v] for v in read if v in defined_by} - {i})
        emitted: set[int] = set()

        def closure(i: int) -> set[int]:
            todo, seen = [i], set()
            while todo:
                j = todo.pop()
                if j not in seen and j not in emitted:
                    seen.add(j)
                    todo.extend(needs[j])
            return seen

        lines: list[str] = []

        def emit(group) -> None:
            for j in sorted(group):
                lines.extend(self.lines[units[j].first:units[j].end])
                emitted.add(j)

        axioms = [i for i, u in enumerate(units) if u.axiom is not None]
        while axioms:
            cost = {i: sum(units[j].end - units[j].first for j in closure(i)) for i in axioms}
            i = min(axioms, key=lambda a: (cost[a], a))
            axioms.remove(i)
            emit(closure(i))
            lines += [f"    if not {units[i].axiom}[1]:", "        return None"]
        emit(set(range(len(units))) - emitted)
        return lines

    # -- text
    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def var(self) -> str:
        self.fresh += 1
        return f"v{self.fresh}"

    def const(self, value, expr: str | None = None) -> str:
        """A constant of the namespace (`expr`: computed once, in the prologue)."""
        name = f"k{len(self.consts)}"
        self.consts[name] = value
        if expr is not None:
            self.prologue.append(f"{name} = {expr}")
        return name

    def label(self, base: str) -> str:
        return unique_label(self.labels, base)     # (as _Evaluator.label: the same labels in the same order)

    # -- statements
    def let(self, st: Let) -> None:
        if not st.rec:
            bound = {b.name: self.expr(b.expr) for b in st.bindings}
            self.scope.update(bound)
            self.defined.update(bound)
            return
        names = [b.name for b in st.bindings]
        env = {n: (k, None) for n, (k, _) in self.scope.items()}
        env.update({n: (k, None) for n, k in self.base_kinds.items() if n not in self.scope})
        kinds = _Evaluator(_KindsOnly(), self.options).rec_kinds(st, env)
        label = self.const(self.label(",".join(names)))
        step, cur = self.var(), self.var()
        inner = [self.var() for _ in names]
        self.emit(f"def {step}({cur}):")
        self.indent += 1
        self.emit(f"{''.join(f'{v}, ' for v in inner)}= {cur}")
        outer = dict(self.scope)
        self.scope.update({n: (k, v) for n, k, v in zip(names, kinds, inner)})
        results = [self.expr(b.expr)[1] for b in st.bindings]
        self.emit(f"return ({''.join(f'{r}, ' for r in results)})")
        self.indent -= 1
        self.scope = outer
        start = "".join(f"alg.{'empty_set' if k == SET else 'empty_rel'}(), " for k in kinds)
        done = [self.var() for _ in names]
        self.emit(f"{''.join(f'{v}, ' for v in done)}= alg.fix({step}, ({start}), {label})")
        bound = {n: (k, v) for n, k, v in zip(names, kinds, done)}
        self.scope.update(bound)
        self.defined.update(bound)

    def check(self, c: Check) -> str:
        _, value = self.expr(c.expr)
        label = self.const(self.label(check_label(c)))
        out = self.var()
        test = f"alg.{_TESTS[c.kind]}({value}, {label})"
        self.emit(f"{out} = ({self.const(c)}, {f'alg.negate({test})' if c.negated else test})")
        return out

    # -- expressions: (kind, the variable holding the value)
    def expr(self, e: Expr) -> tuple[str, str]:
        if isinstance(e, Var):
            return self.lookup(e.name)
        if isinstance(e, Zero):
            return REL, self.const(None, "alg.empty_rel()")
        if isinstance(e, Universe):
            return SET, self.const(None, "alg.universe()")
        if isinstance(e, IfOption):
            return self.expr(e.then if e.option in self.options else e.orelse)
        if isinstance(e, Binary):
            if e.op in _ABSORBING:
                return self.absorbing(e)
            (ka, a), (kb, b) = self.expr(e.left), self.expr(e.right)
            return self.binary(e.op, ka, a, kb, b)
        if isinstance(e, Unary):
            return self.unary(e)
        raise TypeError(e)

    def lookup(self, name: str) -> tuple[str, str]:
        hit = self.scope.get(name)
        if hit is None:
            kind = self.base_kinds[name]        # (a checked model names nothing else)
            v = self.var()
            self.from_base.add(int(v[1:]))
            self.prologue.append(f"{v} = base[{self.const(name)}][1]")
            hit = self.scope[name] = (kind, v)
        return hit

    def absorbing(self, e: Binary) -> tuple[str, str]:
        # (as _Evaluator.absorbing: a bare name first, except for a difference)
        first, second = e.left, e.right
        if e.op != "\\" and isinstance(second, Var) and not isinstance(first, Var):
            first, second = second, first
        k1, v1 = self.expr(first)
        out = self.var()
        empty = "alg.empty_rel()" if e.op in (";", "*") or k1 == REL else "alg.empty_set()"
        self.emit(f"if {v1} is not None and not {v1}:")
        self.emit(f"    {out} = {empty}")
        self.emit("else:")
        self.indent += 1
        k2, v2 = self.expr(second)
        if first is e.left:
            kind, value = self.binary(e.op, k1, v1, k2, v2)
        else:
            kind, value = self.binary(e.op, k2, v2, k1, v1)
        self.emit(f"{out} = {value}")
        self.indent -= 1
        return kind, out

    def binary(self, op: str, ka: str, a: str, kb: str, b: str) -> tuple[str, str]:
        out = self.var()
        if op in _BOOLEAN:
            self.emit(f"{out} = alg.{_BOOLEAN[op]}({a}, {b})")
            return ka or kb, out
        self.emit(f"{out} = alg.{'compose' if op == ';' else 'product'}({a}, {b})")
        return REL, out

    def unary(self, e: Unary) -> tuple[str, str]:
        k, v = self.expr(e.arg)
        out = self.var()
        op = e.op
        if op == "~":
            self.emit(f"{out} = alg.{'set_complement' if k == SET else 'rel_complement'}({v})")
            return k, out
        if op == "[]":
            self.emit(f"{out} = alg.ident({v})")
            return REL, out
        if op in ("domain", "range"):
            self.emit(f"{out} = alg.{op}({v})")
            return SET, out
        self.emit(f"{out} = alg.{_UNARY[op]}({v})")
        return REL, out
