"""Polarity of a model's checks: can growing some base sets and relations only make the model
reject more (and flag less)? A static analysis of the cat text, for `ptxmc fix`'s monotonicity
(checker.repair.problem).

Every check is read through its `let`s (options resolved) with a sign per occurrence: +1 where
growing the name can only make an axiom reject more or a flag fire less (the check's
expression, unless negated, is monotone in it), -1 under a complement or on the right of `\\`.
`monotone_failures(model, effects)` lists why a change described by `Effects` might do the
opposite:
- a name that grows (on existing events or pairs) occurs with sign -1;
- a set an event leaves (a move: the event is re-tagged, e.g. from CTA to GPU scope) occurs with
  sign +1, unless the event stays in that position's value anyway: the set is a direct member of
  a union that also holds a set the event moves to, or sits in an intersection with a set of
  unchanged base sets (e.g. `M & ACQ`) that does not contain the event;
- a relation that loses pairs occurs with sign +1;
- a composition, closure, domain or range with sign -1 that can reach an inserted event (both of
  its sides mention a name that relates inserted events): a path through a new event can grow it
  on old pairs.
Not analysed (a limit, as before this analysis existed): a flag whose witness is an inserted
event itself (an inserted mbarrier wait on an object no init reaches), since the flag reads the
new event, not a change to existing ones.
Two readings keep it precise where the models need it: a name empty in the test (`Effects.empty`)
is the empty relation, and where A is a union of guarded forms of one relation S ([X]; S, S; [Y]),
`A \\ ([Z]; S)` only narrows the guards, so it stays positive in S.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from .ast import Binary, Check, IfOption, Let, Unary, Universe, Var, Zero
from .interp import Model


@dataclass(frozen=True)
class Effects:
    """What a change does to the base names of one test (names of the glossary)."""

    grows: Mapping[str, frozenset[int] | None] = field(default_factory=dict)
    # name -> the existing events a set gains (None: a relation, which gains pairs)
    moves: Mapping[str, frozenset[tuple[int, frozenset[str]]]] = field(default_factory=dict)
    # set -> (event that leaves it, the sets that event joins), one per edited program
    shrinks: frozenset[str] = frozenset()                   # relations that lose pairs
    touch: frozenset[str] = frozenset()                     # names that hold an inserted event
    empty: frozenset[str] = frozenset()                     # names empty in the test
    sets: Mapping[str, frozenset[int]] = field(default_factory=dict)   # the test's base sets


@dataclass
class _Def:
    expr: object
    env: dict
    rec: bool = False


def monotone_failures(model: Model, effects: Effects, options=frozenset()) -> tuple[str, ...]:
    """Why the change described by `effects` might make `model` reject less or flag more
    (empty: it cannot)."""
    return _Analysis(model, effects, frozenset(options)).run()


class _Analysis:
    def __init__(self, model: Model, fx: Effects, options: frozenset):
        self.model, self.fx, self.options = model, fx, options
        self.reasons: dict[str, None] = {}
        self._zero: dict[int, bool] = {}
        self._names: dict[int, frozenset] = {}
        self._seen: set = set()
        self.where = ""
        self.trail: list[str] = []

    def run(self) -> tuple[str, ...]:
        env: dict = {}
        for st in self.model.statements:
            if isinstance(st, Let):
                new = dict(env)
                for b in st.bindings:
                    new[b.name] = _Def(b.expr, new if st.rec else env, st.rec)
                env = new
            elif isinstance(st, Check):
                self.where = f"{'flag ' if st.flag else ''}{st.name} ({_loc(st.where)})"
                self.walk(st.expr, env, -1 if st.negated else 1, frozenset())
        return tuple(self.reasons)

    def say(self, text: str) -> None:
        via = f" (through {' > '.join(self.trail)})" if self.trail else ""
        self.reasons.setdefault(f"{self.where}{via}: {text}", None)

    # -- facts about subexpressions --------------------------------------------------------------
    def zero(self, e, env) -> bool:
        key = (id(e), id(env))
        if key in self._zero:
            return self._zero[key]
        self._zero[key] = False             # a recursive name is not assumed empty
        match e:
            case Zero():
                z = True
            case Var(name=n):
                d = env.get(n)
                z = self.zero(d.expr, d.env) if d is not None else n in self.fx.empty
            case Unary(op=op, arg=a):
                z = op not in ("~", "*", "?") and self.zero(a, env)
            case Binary(op="|", left=a, right=b):
                z = self.zero(a, env) and self.zero(b, env)
            case Binary(op="\\", left=a):
                z = self.zero(a, env)
            case Binary(left=a, right=b):
                z = self.zero(a, env) or self.zero(b, env)
            case IfOption(option=o, then=t, orelse=f):
                z = self.zero(t if o in self.options else f, env)
            case _:
                z = False
        self._zero[key] = z
        return z

    def names(self, e, env) -> frozenset:
        """The base names an expression reads (through its lets)."""
        key = (id(e), id(env))
        if key in self._names:
            return self._names[key]
        self._names[key] = frozenset()
        out: set = set()
        match e:
            case Var(name=n):
                d = env.get(n)
                out = set(self.names(d.expr, d.env)) if d is not None else {n}
            case Unary(arg=a):
                out = set(self.names(a, env))
            case Binary(left=a, right=b):
                out = set(self.names(a, env)) | self.names(b, env)
            case IfOption(option=o, then=t, orelse=f):
                out = set(self.names(t if o in self.options else f, env))
        self._names[key] = frozenset(out)
        return self._names[key]

    def reaches_new(self, e, env) -> bool:
        return bool(self.names(e, env) & self.fx.touch)

    # -- the walk --------------------------------------------------------------------------------
    def walk(self, e, env, sign: int, kept: frozenset) -> None:
        """`kept`: moved sets whose leaving events keep their place in the enclosing value, and
        (as '+NAME') grown sets whose new members cannot enter it."""
        if self.zero(e, env):
            return
        key = (id(e), id(env), sign, kept)
        if key in self._seen:
            return
        self._seen.add(key)
        match e:
            case Var(name=n):
                d = env.get(n)
                if d is not None:
                    self.trail.append(n)
                    self.walk(d.expr, d.env, sign, kept)
                    self.trail.pop()
                else:
                    self.base(n, sign, kept)
            case Zero() | Universe():
                pass
            case Unary(op="~", arg=a):
                self.walk(a, env, -sign, kept)
            case Unary(op=op, arg=a):
                if sign < 0 and op in ("+", "*", "domain", "range") and self.reaches_new(a, env):
                    self.say(f"'{op}' under a complement or '\\' can grow through an inserted event")
                self.walk(a, env, sign, kept)
            case IfOption(option=o, then=t, orelse=f):
                self.walk(t if o in self.options else f, env, sign, kept)
            case Binary(op="\\", left=a, right=b):
                self.difference(a, b, env, sign, kept)
            case Binary(op="|"):
                leaves = _chain(e, "|")
                direct = {x.name for x in leaves if isinstance(x, Var) and x.name not in env}
                k = kept | {s for s, left in self.fx.moves.items()
                            if s in direct and all(to & direct for _, to in left)}
                for x in leaves:
                    self.walk(x, env, sign, k if isinstance(x, Var) and x.name in direct else kept)
            case Binary(op="&"):
                leaves = _chain(e, "&")
                k = kept
                for x in leaves:
                    members = self.set_value(x, env)
                    if members is not None:
                        k |= {s for s, left in self.fx.moves.items() if not any(e in members for e, _ in left)}
                        k |= {"+" + s for s, evs in self.fx.grows.items() if evs is not None and not (members & evs)}
                for x in leaves:
                    self.walk(x, env, sign, k)
            case Binary(op=";", left=a, right=b):
                if sign < 0 and _relational(a) and _relational(b) and self.reaches_new(a, env) \
                        and self.reaches_new(b, env):
                    self.say("a composition under a complement or '\\' can grow through an inserted event")
                self.walk(a, env, sign, kept)
                self.walk(b, env, sign, kept)
            case Binary(left=a, right=b):
                self.walk(a, env, sign, kept)
                self.walk(b, env, sign, kept)

    def set_value(self, e, env) -> frozenset | None:
        """The members of a set expression built from base sets no edit changes (None: not such)."""
        match e:
            case Var(name=n) if n in env:
                d = env[n]
                return None if d.rec else self.set_value(d.expr, d.env)
            case Var(name=n):
                return self.fx.sets.get(n) if not self.changes(n) else None
            case Binary(op=op, left=a, right=b) if op in ("|", "&", "\\"):
                x, y = self.set_value(a, env), self.set_value(b, env)
                if x is None or y is None:
                    return None
                return x | y if op == "|" else x & y if op == "&" else x - y
            case IfOption(option=o, then=t, orelse=f):
                return self.set_value(t if o in self.options else f, env)
        return None

    def changes(self, n: str) -> bool:
        return n in self.fx.grows or n in self.fx.moves or n in self.fx.shrinks

    def base(self, n: str, sign: int, kept: frozenset) -> None:
        if n in self.fx.grows and sign < 0 and "+" + n not in kept:
            self.say(f"'{n}' grows where that makes an axiom reject less or a flag fire more")
        if n in self.fx.moves and sign > 0 and n not in kept:
            to = sorted(set().union(*(t for _, t in self.fx.moves[n])))
            self.say(f"'{n}' loses events (they move to {', '.join(to) or 'no set'}) "
                     "where it counts positively")
        if n in self.fx.shrinks and sign > 0:
            self.say(f"'{n}' loses pairs where it counts positively")

    def difference(self, a, b, env, sign: int, kept: frozenset) -> None:
        """A \\ B. Where A is a union of guarded forms of one relation S ([X]; S, S; [Y], S),
        the parts of B that are guarded forms of S too only narrow the guards:
        ([X]; S) \\ ([Z]; S) is [X \\ Z]; S, positive in S."""
        self.walk(a, env, sign, kept)
        cores = {_core(p, penv) for p, penv in self.parts(a, env)}
        core = next(iter(cores)) if len(cores) == 1 else None
        for part, penv in self.parts(b, env):
            if self.zero(part, penv):
                continue
            guards = _guards(part)
            if core is not None and guards is not None and _core(part, penv) == core:
                for g in guards[1]:
                    self.walk(g, penv, -sign, kept)
            else:
                self.walk(part, penv, -sign, kept)

    def parts(self, e, env) -> list:
        """The members of a union, through let-bound names and options, each with its scope."""
        out = []
        for x in _chain(self.chosen(e), "|"):
            x = self.chosen(x)
            if isinstance(x, Binary) and x.op == "|":
                out += self.parts(x, env)
                continue
            d = env.get(x.name) if isinstance(x, Var) else None
            body = None if d is None else self.chosen(d.expr)
            if d is not None and not d.rec and (len(_chain(body, "|")) > 1 or _guards(body) is not None):
                out += self.parts(body, d.env)
            else:
                out.append((x, env))
        return out

    def chosen(self, e):
        """`e` with its options decided (the branch the analysed option set takes)."""
        while isinstance(e, IfOption):
            e = e.then if e.option in self.options else e.orelse
        return e


def _guards(part):
    """[X]; S; [Y] -> (S, (X, Y)), with either guard optional; None without a guard."""
    rest, guards = _chain(part, ";"), []
    if len(rest) > 1 and isinstance(rest[0], Unary) and rest[0].op == "[]":
        guards.append(rest.pop(0).arg)
    if len(rest) > 1 and isinstance(rest[-1], Unary) and rest[-1].op == "[]":
        guards.append(rest.pop().arg)
    if not guards or len(rest) != 1:
        return None
    return rest[0], tuple(guards)


def _core(part, env):
    """The relation a guarded form restricts, with its binding (so two scopes compare)."""
    g = _guards(part)
    s = part if g is None else g[0]
    return (s, id(env.get(s.name)) if isinstance(s, Var) else id(env))


def _chain(e, op: str) -> list:
    if isinstance(e, Binary) and e.op == op:
        return _chain(e.left, op) + _chain(e.right, op)
    return [e]


def _relational(e) -> bool:
    """Not a set lifted to the identity ([X]), through which no path passes."""
    return not (isinstance(e, Unary) and e.op == "[]")


def _loc(where) -> str:
    return f"line {where.line}" if where is not None and getattr(where, "line", None) else "?"
