"""Cross hardware histograms with the model (research note 1.7):

    model forbids, hardware observed      -> violation  (model too strong, or a HW/compiler/harness bug)
    model allows, hardware never observed -> gap        (coverage gap: N instances, 95% bound ~3/N)
    otherwise                             -> ok
    `other` bucket not 0                  -> harness-error (garbage or a harness bug)
    positive control seen / not seen      -> control-seen / control-unseen

Pure: the model side is a mapping test name -> {outcome: 'allowed' | 'forbidden'}, where an
outcome is ((var, value), ...). `complete=True` (the default) means the model listed every
allowed outcome, so an outcome it does not list is forbidden. `verdicts_from_result` adapts the
checker's Result.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ..ast import LitmusTest
from ..errors import HarnessError
from .controls import is_control
from .histogram import Histogram
from .space import Outcome, eval_cond

CLASSES = ("ok", "gap", "violation", "harness-error", "control-seen", "control-unseen", "no-data")


@dataclass(frozen=True)
class ExpectationCheck:
    kind: str            # 'allowed' | 'forbidden'
    text: str
    observed: int        # instances whose outcome satisfies the condition
    status: str          # 'ok' | 'gap' | 'violation'


@dataclass(frozen=True)
class Comparison:
    test: str
    verdict: str                                  # one of CLASSES
    n: int                                        # instances with an outcome in the space
    bound: float | None                           # 95% upper bound on an unseen outcome's probability
    violations: tuple[tuple[Outcome, int], ...]   # observed but forbidden
    gaps: tuple[Outcome, ...]                     # allowed but never observed
    witnessed: tuple[tuple[Outcome, int], ...]    # allowed and observed
    expectations: tuple[ExpectationCheck, ...]
    other: int
    timeout: int
    control: bool = False

    def summary(self) -> str:
        parts = [f"{self.test}: {self.verdict.upper()}", f"N={self.n}"]
        if self.violations:
            parts.append(f"{len(self.violations)} forbidden outcome(s) observed")
        if self.gaps:
            parts.append(f"{len(self.gaps)} allowed outcome(s) unseen (each < {self.bound:.2g} at 95%)")
        if self.other:
            parts.append(f"other={self.other}")
        if self.timeout:
            parts.append(f"timeout={self.timeout}")
        return ", ".join(parts)


def rule_of_three(n: int) -> float | None:
    """95% upper bound on the per-instance probability of an event seen 0 times in n trials."""
    return 3.0 / n if n > 0 else None


def _project(outcome: Outcome, names) -> Outcome:
    d = dict(outcome)
    return tuple((n, d[n]) for n in names)


def _norm(o: Outcome) -> Outcome:
    return tuple((k, v % 2**32) for k, v in o)


def compare_one(hist: Histogram, verdicts: Mapping[Outcome, str] | None, test: LitmusTest | None = None,
                complete: bool = True, control: bool | None = None) -> Comparison:
    """Compare one histogram with the model's verdicts for its test (and its expectations)."""
    if control is None:
        control = bool(test is not None and is_control(test))
    n = hist.valid
    names = hist.vars
    allowed_seen, violations, gaps = [], [], []
    if verdicts:
        mvars = tuple(k for k, _ in next(iter(verdicts)))
        common = tuple(v for v in names if v in mvars)
        if not common and names:
            raise HarnessError(f"{hist.test}: the histogram observes {list(names)}, the model {list(mvars)}: nothing in common")
        model: dict[Outcome, str] = {}
        for o, v in verdicts.items():
            if v not in ("allowed", "forbidden"):
                raise HarnessError(f"{hist.test}: model verdict {v!r} (expected 'allowed' or 'forbidden')")
            key = _norm(_project(o, common))
            model[key] = "allowed" if v == "allowed" or model.get(key) == "allowed" else "forbidden"
        seen: dict[Outcome, int] = {}
        for o, c in hist.counts:
            key = _norm(_project(o, common))
            seen[key] = seen.get(key, 0) + c
        for key, c in sorted(seen.items()):
            v = model.get(key, "forbidden" if complete else None)
            if v == "forbidden":
                violations.append((key, c))
            elif v == "allowed":
                allowed_seen.append((key, c))
        gaps = sorted(k for k, v in model.items() if v == "allowed" and k not in seen)
    exps = []
    if test is not None:
        for e in test.expectations:
            hits = sum(c for o, c in hist.counts if eval_cond(e.cond, dict(o)))
            if e.kind == "forbidden":
                status = "violation" if hits else "ok"
            else:
                status = "ok" if hits else "gap"
            exps.append(ExpectationCheck(e.kind, e.text, hits, status))
    if control:
        seen_ctrl = any(x.status == "ok" for x in exps if x.kind == "allowed")
        verdict = "control-seen" if seen_ctrl else "control-unseen"
        violations = [] if not verdicts else violations
    elif hist.other:
        verdict = "harness-error"
    elif n == 0:
        verdict = "no-data"
    elif violations or any(x.status == "violation" for x in exps):
        verdict = "violation"
    elif gaps or any(x.status == "gap" for x in exps):
        verdict = "gap"
    else:
        verdict = "ok"
    if hist.other and control:
        verdict = "harness-error"
    return Comparison(hist.test, verdict, n, rule_of_three(n), tuple(violations), tuple(gaps),
                      tuple(allowed_seen), tuple(exps), hist.other, hist.timeout, control)


def compare(hists: list[Histogram], model: Mapping[str, Mapping[Outcome, str]],
            tests: Mapping[str, LitmusTest] | None = None, complete: bool = True) -> list[Comparison]:
    """One Comparison per histogram, in order; histograms of one test are merged first."""
    merged: dict[str, Histogram] = {}
    for h in hists:
        merged[h.test] = merge(merged[h.test], h) if h.test in merged else h
    tests = tests or {}
    return [compare_one(h, model.get(name), tests.get(name), complete) for name, h in merged.items()]


def merge(a: Histogram, b: Histogram) -> Histogram:
    """Two runs of one test (same variables) added up; metadata of the first, times added."""
    from .histogram import make
    if a.vars != b.vars:
        raise HarnessError(f"{a.test}: cannot merge histograms over {list(a.vars)} and {list(b.vars)}")
    return make(a.test, a.vars, list(a.counts) + list(b.counts), other=a.other + b.other,
                timeout=a.timeout + b.timeout, device=a.device, compute_capability=a.compute_capability,
                driver=a.driver, cuda=a.cuda, target=a.target, config=a.config, seed=a.seed,
                iterations=a.iterations + b.iterations, time_s=a.time_s + b.time_s)


def verdicts_from_result(result) -> dict[Outcome, str]:
    """The model's allowed outcomes (checker.results.result.Result) as a verdict mapping."""
    return {tuple(o): "allowed" for o in result.outcomes}


def exit_code(comparisons: list[Comparison]) -> int:
    """1 when a forbidden outcome was observed, the harness misbehaved, or a control was not seen."""
    bad = {"violation", "harness-error", "control-unseen"}
    return 1 if any(c.verdict in bad for c in comparisons) else 0


def render(comparisons: list[Comparison]) -> str:
    """Text report: one summary line per test, details of violations and gaps, then totals."""
    out = []
    for c in comparisons:
        out.append(c.summary())
        for o, k in c.violations:
            out.append(f"    forbidden but observed {k}x: {_show(o)}")
        for o in c.gaps:
            out.append(f"    allowed but unseen in {c.n}: {_show(o)}")
        for e in c.expectations:
            out.append(f"    {e.kind} {e.text}: observed {e.observed} -> {e.status}")
    totals = {k: sum(1 for c in comparisons if c.verdict == k) for k in CLASSES}
    out.append("Summary: " + ", ".join(f"{k} {v}" for k, v in totals.items() if v))
    return "\n".join(out)


def _show(o: Outcome) -> str:
    return " /\\ ".join(f"{k}={v}" for k, v in o) or "(no variables)"
