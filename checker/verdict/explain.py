"""Why a condition is allowed or forbidden, as data (`explain` -> Explanation) and as the text
`ptxmc check` prints: for an allowed outcome a witness execution; for a forbidden one every
minimal set of named axioms that rules it out, the synchronization whose removal alone would
allow it, and the path each violated axiom shows on a candidate execution."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..ast import Cond
from ..errors import SourceLoc
from ..engines.base import Execution
from ..front.conditions import show
from ..resources import ROOT, shown
from ..results import witness
from ..cat.captions import caption, members
from ..cat.violation import Step, note, show as show_steps, violation_path
from .mutate import NEEDED, THEN, Effect, verdict as mutation_verdict
from .open import mutants
from .awaits import never_ends
from .check import UB_PAST_THE_BOUND
from .session import Session, Witness
from .union import UnionSession

Asked = Session | UnionSession     # what checker.verdict.open.open_session returns


@dataclass(frozen=True)
class Violation:
    axiom: str
    kind: str                   # acyclic | irreflexive | empty
    path: str                   # the model file of the check
    line: int                   # the check's line in it
    steps: tuple[Step, ...]
    note: str = ""              # e.g. "not in co | co^-1" for `empty X \ co`

    @property
    def text(self) -> str:
        return show_steps(list(self.steps)) + (f" ({self.note})" if self.note else "")

    @property
    def where(self) -> str:
        """The check's place, the model's path relative to the repository (as reports show it)."""
        p = Path(self.path)
        try:
            return f"{p.resolve().relative_to(ROOT.resolve()).as_posix()}:{self.line}"
        except ValueError:
            return f"{p.name}:{self.line}"


@dataclass(frozen=True)
class Explanation:
    cond: Cond | None                       # None: the hang question (explain_hang)
    status: str                             # undefined | allowed | impossible | forbidden | unknown | hang
    execution: Execution | None             # the flag's witness, the allowed witness, or the candidate
    flag: str | None = None                 # undefined: the flag that fires
    blame: tuple[tuple[str, ...], ...] = ()  # every minimal set of axioms, over every variant
    violations: tuple[Violation, ...] = ()
    effects: tuple[Effect, ...] = ()
    witness: Witness | None = None          # `execution` with the variant it runs on
    blames: tuple[tuple[str, tuple[tuple[str, ...], ...]], ...] = ()   # (paths, sets) per variant
    why: str = ""                           # unknown / hang: what decided it
    hangs: tuple = ()                       # the hang question, allowed: every hang found (liveness.Hang)
    hang: object = None                     # the hang of `hangs` that `execution` draws

    @property
    def needed(self) -> tuple[Effect, ...]:
        return tuple(e for e in self.effects if e.verdict in NEEDED)

    @property
    def paths(self) -> str:
        """The control paths and barrier schedule of the variant `execution` runs on ('' for a
        test with one variant)."""
        return self.witness.paths if self.witness is not None else ""


def explain(s: Asked, cond: Cond, blame: bool = True, effects: bool = True, undefined: bool = True) -> Explanation:
    """The explanation of `cond` in session `s` (a Session or a UnionSession: checker.verdict.open).
    With `undefined`, a program with undefined behaviour is explained by its first flag's witness
    instead."""
    if undefined:
        ub = s.undefined_witness()
        if ub is not None:
            flag, w = ub
            return Explanation(cond, "undefined", w.execution, flag=flag, witness=w)
    never = never_ends(s)
    if never:
        return Explanation(cond, "hang", None, why=never)
    w = s.witnessed(cond)
    if w is not None:
        return Explanation(cond, "allowed", w.execution, witness=w)
    v = s.verdict(cond)
    if v.allowed is None:
        return Explanation(cond, "unknown", None, why=s.unknown_why(cond))
    if not v.sane:
        return Explanation(cond, "impossible", None)
    per_variant = s.blames(cond) if blame else ()
    sets = tuple(dict.fromkeys(b for _, bs in per_variant for b in bs))
    effs = tuple(Effect(m, *mutation_verdict(ms, cond)) for m, ms in mutants(s)) if effects else ()
    cand = s.candidate_of(cond, sets)
    return Explanation(cond, "forbidden", cand.execution if cand else None, blame=sets,
                       violations=violations(cand.session, cand.execution) if cand else (), effects=effs,
                       witness=cand, blames=per_variant)


def violations(s: Session, ex: Execution) -> tuple[Violation, ...]:
    """Each check of the model that fails on `ex` (flags aside), with the path it shows."""
    ev = s.evaluation(ex)
    out = []
    for (chk, ok), value in zip(ev.checks, ev.check_values):
        if ok or chk.flag:
            continue
        steps = tuple(violation_path(s.model, chk, value, ex.base(s.es), dict(ev.env), len(s.es.events), s.options))
        out.append(Violation(chk.name, chk.kind, chk.where.path, chk.where.line, steps, note(chk)))
    return tuple(out)


# -- `ptxmc check` ------------------------------------------------------------------------

def explain_text(s: Asked, cond: Cond) -> tuple[str, str, str | None]:
    """The verdict (allowed, forbidden, undefined, impossible, unknown, hang), what `ptxmc check`
    prints for `cond`, and the DOT graph of its execution (if any)."""
    x, text, dot = _explain_text(s, cond)
    return x.status, text, dot


def _explain_text(s: Asked, cond: Cond):
    where = SourceLoc("<command line>", 1, show(cond))
    s.check_condition(cond, where)
    x = explain(s, s.prepare(cond, where))
    test = s.test
    head = [f"Test {test.name}  (model {shown(s.model.path)})", f"Condition {show(cond)}"]
    head += [f"note: {n}" for n in s.notes]
    if x.status not in ("undefined", "hang") and isinstance(s, UnionSession) and s.bounded and s.undefined_cut:
        head.append("note: " + UB_PAST_THE_BOUND.format(cut=s.undefined_cut[0]))
    if x.witness is not None:
        es = x.witness.es
        env = dict(x.witness.session.evaluation(x.execution).env)
    paths = [f"  paths: {x.paths}"] if x.paths else []
    if x.status == "undefined":
        head.append(f"Undefined: the program has undefined behaviour ({x.flag}); outcomes are meaningless")
        return x, "\n".join(head + paths) + "\n" + witness.text(es, x.execution, env), None
    if x.status == "hang":
        return x, "\n".join(head + ["No verdict: no execution terminates (a hang)", f"  {x.why}"]) + "\n", None
    if x.status == "allowed":
        text = "\n".join(head + ["Allowed"] + paths + ["Witness execution:"]) + "\n" + witness.text(es, x.execution, env)
        return x, text, witness.dot(es, x.execution, env, f"{test.name}: allowed witness")
    if x.status == "unknown":
        return x, "\n".join(head + [f"Unknown: {x.why}"]) + "\n", None
    if x.status == "impossible":
        return x, "\n".join(head + ["Impossible: no well-formed execution satisfies it, even without axioms "
                                    "(check the condition's values and registers)"]) + "\n", None
    lines = head + ["Forbidden"]
    if len({bs for _, bs in x.blames}) <= 1:
        for subset in x.blame:
            lines.append("  ruled out by: " + " + ".join(subset))
    else:                           # the variants are ruled out by different axioms: each says which
        for p, bs in x.blames:
            lines.append(f"  paths {p}: ruled out by: " + (" or ".join(" + ".join(b) for b in bs) or "-"))
    lines += _needed_sync(x)
    if x.execution is None:
        return x, "\n".join(lines) + "\n", None
    lines.append("A candidate execution with this outcome, and the axioms it violates:")
    lines += paths
    full = {**x.execution.base(es), **env}
    for v in x.violations:
        lines.append(f"  violates {v.axiom} ({v.kind} at {shown(v.path)}:{v.line})" + _shape(v))
        lines += _causality_lines(v.steps, full, es, s.model)
    text = "\n".join(lines) + "\n" + witness.text(es, x.execution, env)
    positions = {th.name: th.position for th in test.threads}
    highlight = x.violations[0].steps if x.violations else ()
    return x, text, witness.dot(es, x.execution, env, f"{test.name}: forbidden candidate", positions, highlight)


def explain_hang(s: Asked) -> Explanation:
    """The hang question (may some fair execution never terminate?) in session `s`, asked with
    hang=True: `allowed` (`hangs`: each hang found; `execution`: the witness of `hang`, when one
    can be drawn), `forbidden`, `unknown` (`why`) or `undefined` (`flag`, `why`). `cond` is None.
    What `ptxmc check FILE::NAME hang`, `checker.check(test, "hang")` and `explain` answer."""
    if s.undefined:
        return Explanation(None, "undefined", None, flag=s.undefined[0].flag,
                           why="; ".join(u.why for u in s.undefined))
    hangs, complete = s.hangs()
    if not hangs:
        if not complete:
            return Explanation(None, "unknown", None, why=s.hang_unknown_why())
        return Explanation(None, "forbidden", None,
                           why="no fair execution spins forever: in every combination of paths, each loop cut by "
                               "the bound exits once it reads the latest values")
    w = s.hang_witness(hangs)
    return Explanation(None, "allowed", w[1] if w else None, hangs=hangs, hang=w[0] if w else None)


def hang_text(s: Asked) -> tuple[str, str, str | None]:
    """What `ptxmc check FILE::NAME hang` says: may some fair execution never terminate? Every
    blocked thread is named with what it waits for. (verdict word, text, DOT of the witness)"""
    test = s.test
    head = [f"Test {test.name}  (model {shown(s.model.path)})", "Condition hang"] + [f"note: {n}" for n in s.notes]
    x = explain_hang(s)
    if x.status == "undefined":
        head.append(f"Undefined: the program has undefined behaviour ({x.why})")
        return "undefined", "\n".join(head) + "\n", None
    if x.status in ("forbidden", "unknown"):
        why = x.why if x.status == "forbidden" else f"unknown: {x.why}"
        return x.status, "\n".join(head + [x.status.capitalize(), "  " + why]) + "\n", None
    lines = head + ["Allowed: some fair execution never terminates"]
    for h in x.hangs:
        lines.append(f"  {h.thread} blocks at {h.blocked}: {h.state}")
        lines.append(f"    paths: {h.combo}")
    if x.execution is None:                   # nothing to draw
        return "allowed", "\n".join(lines) + "\n", None
    h, ex = x.hang, x.execution
    env = dict(h.probe.evaluation(ex).env)
    lines.append("Witness execution (the blocked loop's last iteration):" if h.outcome else
                 "Witness execution (up to the barriers the blocked threads never leave):")
    return "allowed", "\n".join(lines) + "\n" + witness.text(h.probe.es, ex, env), \
        witness.dot(h.probe.es, ex, env, f"{test.name}: hang")


def _needed_sync(x: Explanation) -> list[str]:
    """The fences and release/acquire annotations whose removal alone would allow the outcome,
    and those after whose removal the verdict is not known (an Unknown is no "stays forbidden")."""
    open_ = [e for e in x.effects if e.verdict in ("unknown", "error")]
    lines = []
    if x.needed:
        lines = ["Synchronization it needs (each change alone makes it allowed, the program undefined, or the program hang):"] + \
                [f"  {e.mutation.describe()}" + THEN.get(e.verdict, "") for e in x.needed]
    elif x.effects and not open_:
        lines = ["No single fence or release/acquire annotation is needed: it stays forbidden without any one"]
    if open_:
        lines += ["Not decided (after each change alone the verdict is not known: "
                  + ("the loop bound cuts executions off, raise --unroll" if all(e.verdict == "unknown" and not e.message
                                                                                for e in open_) else "see each")
                  + "; it may be needed):"]
        lines += [f"  {e.mutation.describe()}" + (f" ({e.message})" if e.message else "") for e in open_]
    return lines


def _shape(v: Violation) -> str:
    """What the violated check shows, in the model's names: the cycle (acyclic, irreflexive) or
    the offending path (empty), e.g. `e7 -fr-> e2 -cause-> e7`."""
    if not v.steps:
        return ""
    what = "cycle " if v.kind in ("acyclic", "irreflexive") else ""
    return f": {what}{show_steps(list(v.steps))}" + (f" ({v.note})" if v.note else "")


def _causality_lines(steps, env, es, model) -> list[str]:
    """For each causality step of a violation: which clause of proxy-preserved base causality
    order makes it (the proxy fences, A1) and the fences that lie between its two ends in base
    causality -- the fences on the causality path. The clauses are the members of the model's
    `ppbc` union, in its order, each shown by its caption (checker.cat.captions)."""
    def rel(name):
        kind, v = env.get(name, ("", None))
        return v if kind == "rel" and v is not None else frozenset()

    bc, obs, ppbc = rel("bc"), rel("obs"), rel("ppbc")
    out = []
    for a, name, b in steps:
        if name != "cause":
            continue
        x, via = a, ""
        if (a, b) not in ppbc:
            mids = sorted(m for (p, m) in obs if p == a and (m, b) in ppbc)
            if not mids:
                continue
            x, via = mids[0], f"e{a} -obs-> e{mids[0]}, then "
        case = next((caption(model, n) or n for n in members(model, "ppbc") if (x, b) in rel(n)), None)
        fences = [e for e in es.events if e.kind in ("F", "C") and (x, e.eid) in bc and (e.eid, b) in bc]
        line = f"    e{a} -cause-> e{b}: {via}proxy-preserved base causality"
        if case:
            line += f" by {case}"
        out.append(line)
        if fences:
            out.append("      fences on the causality path: " +
                       "; ".join(f"e{e.eid} {e.thread}: {e.label}" for e in fences))
        else:
            out.append("      no fence on the causality path")
    return out

