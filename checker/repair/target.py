"""What a repair must achieve (`Target`), and judging one edited program against it.

A target lists the conditions that must be forbidden, the ones that must stay allowed, and
whether the program must be free of undefined behaviour. From a test: its `forbidden:` and
`allowed:` expectations, and no undefined behaviour unless it expects some. From a condition
given on the command line: that condition forbidden, the test's forbidden conditions too, its
allowed conditions that stay possible (an allowed condition that no well-formed execution of the
test satisfies without also satisfying the new condition is dropped, with a note), and no
undefined behaviour.

`judge` answers for one Session: None when the target is met, else a `Failure`:
- 'under': an allowed execution the target rules out (a forbidden condition's witness, or an
  execution on which an undefined-behaviour flag fires): more synchronization is needed;
- 'over': an allowed condition became impossible, or no execution is left at all (an inserted
  wait that never returns; not a failure when the test expects `hang: allowed`): less
  synchronization is needed.

A Session does not search for hangs (checker.verdict.union does): `judge` ignores a test's
`hang:` expectation beyond the no-execution case, which makes it weaker than the target, never
stronger, so a search that finds no repair under it has proven that none exists. What it
cannot see, checker.repair.fix confirms with the path-by-path judge: the original program's
"nothing to fix" and every repair's re-check.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..ast import And, Cond, Expectation, LitmusTest, Not
from ..engines.base import Execution
from ..verdict.session import Session
from ..verdict.union import UnionSession


@dataclass(frozen=True)
class Target:
    forbidden: tuple[Expectation, ...]
    allowed: tuple[Expectation, ...]
    defined: bool = True                    # no undefined-behaviour flag may fire
    notes: tuple[str, ...] = ()
    hang: bool | None = None                # the test's `hang:` expectation (True: allowed)

    def expectations(self) -> tuple[Expectation, ...]:
        return self.forbidden + self.allowed


@dataclass(frozen=True)
class Failure:
    kind: str                               # under | over
    what: str                               # the condition's text, the flag's name, or 'deadlock'
    execution: Execution | None = None      # under: the execution to block
    cond: Cond | None = None                # the condition (under: forbidden; over: allowed)
    flag: str | None = None                 # under: the flag that fires
    undecided: bool = False                 # no witness found, but the bound or the hang search left it Unknown


def from_test(test: LitmusTest) -> Target:
    """The test's own expectations as a target."""
    return Target(tuple(e for e in test.expectations if e.kind == "forbidden"),
                  tuple(e for e in test.expectations if e.kind == "allowed"),
                  test.expect_undefined is not True, hang=test.expect_hang)


def with_condition(s: Session | UnionSession, cond: Cond, text: str) -> Target:
    """`cond` forbidden, with the test's other expectations (see the module docstring); `s` is
    the original test's Session (for the well-formedness query)."""
    test = s.test
    forbidden = tuple(e for e in test.expectations if e.kind == "forbidden") + \
        (Expectation("forbidden", cond, text),)
    allowed, notes = [], []
    for e in test.expectations:
        if e.kind != "allowed":
            continue
        if e.cond == cond:
            notes.append(f"allowed: '{e.text}' is the condition to forbid: dropped")
            continue
        other = And((e.cond, Not(cond)))
        if not (s.verdict(other).sane if isinstance(s, UnionSession) else
                s.engine.satisfiable(other, axioms=()) is not None):
            notes.append(f"allowed: '{e.text}' is dropped: every execution satisfying it satisfies '{text}'")
            continue
        allowed.append(e)
    return Target(forbidden, tuple(allowed), True, tuple(notes), test.expect_hang)


def target_test(test: LitmusTest, target: Target) -> LitmusTest:
    """`test` with the target as its expectations (what a candidate set and a re-check judge)."""
    return replace(test, expectations=target.expectations(),
                   expect_undefined=False if target.defined else test.expect_undefined, expect_hang=target.hang)


def met(s: Session, target: Target) -> bool:
    return judge(s, target) is None


def judge(s: Session | UnionSession, target: Target) -> Failure | None:
    """None if `s`'s program meets the target, else the first failure found (flags, then the
    forbidden conditions, then the allowed ones). SolverUnknown propagates."""
    if isinstance(s, UnionSession):
        return _judge_union(s, target)
    eng = s.engine
    if target.defined:
        for name in eng.flag_names:
            ex = eng.flag_witness(name)
            if ex is not None:
                return Failure("under", name, ex, flag=name)
    for e in target.forbidden:
        ex = eng.satisfiable(e.cond)
        if ex is not None:
            return Failure("under", e.text, ex, cond=e.cond)
    for e in target.allowed:
        if eng.satisfiable(e.cond) is None:
            return Failure("over", e.text, cond=e.cond)
    if not target.allowed and target.hang is not True and eng.satisfiable(None) is None:
        return Failure("over", "deadlock")      # (with `hang: allowed`, blocking for ever is expected)
    return None


def unknown_why(s: Session | UnionSession, f: Failure) -> str:
    """Why an `undecided` failure `f` of `s` is Unknown, for a message."""
    if f.what == "hang" and f.cond is None:
        return s.hang_unknown_why()
    if f.cond is None:                  # "no undefined behaviour" (_judge_union)
        return (f"no undefined behaviour within the loop bound, but the bound cut executions off "
                f"({s.undefined_cut[0]}): raise --unroll")
    return s.unknown_why(f.cond)


def _judge_union(s: UnionSession, target: Target) -> Failure | None:
    """`judge` for a test asked over its variants: the same failures, in the same order, and the
    hang question (`hang: forbidden` fails on any fair hang the session finds, and, `undecided`,
    where the search could not judge every loop and found none); a condition the loop bound leaves
    Unknown fails `undecided` too (an Unknown is no "forbidden", nor "allowed"), and so does "no
    undefined behaviour" where no flag fires within the bound but a loop it cut is not a pure spin
    (UnionSession.undefined_cut: what runs after it lies past the bound)."""
    if target.defined:
        found = s.undefined_witness()
        if found is not None:
            flag, w = found
            return Failure("under", flag, w.execution, flag=flag)
    for e in target.forbidden:
        w = s.witnessed(e.cond)
        if w is not None:
            return Failure("under", e.text, w.execution, cond=e.cond)
        if s.verdict(e.cond).allowed is None:   # (the bound cut executions that may satisfy it)
            return Failure("under", e.text, cond=e.cond, undecided=True)
    if target.hang is False:
        found, complete = s.hangs()
        if found or not complete:       # (an undecided hang question is no "no hang")
            return Failure("under", "hang", undecided=not found)
    for e in target.allowed:
        allowed = s.verdict(e.cond).allowed
        if not allowed:
            return Failure("over", e.text, cond=e.cond, undecided=allowed is None)
    if not target.allowed and target.hang is not True and s.never_terminates():
        return Failure("over", "deadlock")
    if target.defined and s.undefined_cut:
        # no flag within the bound, but a loop the bound cut may reach one past it: "no undefined
        # behaviour" is Unknown there (docs/model.md#a18, "Undefined behaviour and the bound")
        return Failure("under", "undefined behaviour", undecided=True)
    return None
