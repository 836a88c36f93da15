"""Cross hardware histograms with the model (research note 1.7):

    model forbids, hardware observed      -> violation  (model too strong, or a HW/compiler/harness bug)
    model allows, hardware never observed -> gap        (coverage gap: N instances, 95% bound ~3/N)
    otherwise                             -> ok
    `other` or `epilogue` not 0           -> harness-error (garbage, a harness bug, a copy never landed)
    no valid instance                     -> no-data    (every instance timed out: the run says nothing)
    awaits gave up in more than the threshold fraction of instances -> timeouts
    spin loops gave up (a `hang`: did not exit within SPIN_CAP spins) in more than the threshold
    fraction, and the model does not say a hang is allowed -> hangs
    positive control seen / not seen      -> control-seen / control-unseen
    informational control not seen        -> control-rare (LB: rarely seen on NVIDIA GPUs; no failure)

Every class but ok, gap, control-seen and control-rare fails the run (exit_code). Histograms are merged only
when they come from the same device, target, configuration and runtime (Histogram.key); runs on
different devices give one comparison each, rendered as one table per device. A histogram is
refused when its test changed since the run (fingerprint) or it observes other variables than the
test's conditions name: reading a missing variable as 0 would give false verdicts. Histograms
from the fake device are labelled SIMULATED on every line: they are never observations.

Hangs are their own outcome: an instance whose spin loop gave up has no final values. The model's
hang verdict (`ptxmc check FILE::NAME hang`, a test's `expect: {hang: ...}`) is True (some fair
execution never terminates), False (none) or None (not asked). A hang the model allows is an
allowed outcome (seen: witnessed; unseen: a gap); one it forbids is, like a timeout, evidence
of a spin cap too small for a slow writer as much as of a liveness bug, so a few are tolerated
and more than the threshold fraction fail the run ('hangs').

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
from .controls import is_control, is_informational
from .histogram import Histogram
from .space import Outcome, eval_cond, fingerprint, observed_vars

CLASSES = ("ok", "gap", "violation", "harness-error", "no-data", "timeouts", "hangs", "control-seen",
           "control-unseen", "control-rare")
BAD = frozenset({"violation", "harness-error", "no-data", "timeouts", "hangs", "control-unseen"})
MAX_TIMEOUT_FRACTION = 0.1      # awaits may give up in a few instances (a late writer CTA); not in most


@dataclass(frozen=True)
class ExpectationCheck:
    kind: str            # 'allowed' | 'forbidden'
    text: str            # the condition, or 'hang'
    observed: int        # instances whose outcome satisfies the condition (for 'hang': that hung)
    status: str          # 'ok' | 'gap' | 'violation' | 'hangs' (a hang the test forbids was recorded)
    rate: float = 0.0    # observed per second of the run


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
    epilogue: int = 0
    device: str = ""                              # 'NAME (cc X, target, config)' of the run
    simulated: bool = False
    hang: int = 0                                 # instances whose spin loop did not exit in SPIN_CAP spins
    hang_model: bool | None = None                # the model: some fair execution hangs (None: not asked)

    def summary(self) -> str:
        parts = [f"{self.test}: {self.verdict.upper()}", f"N={self.n}"]
        if self.violations:
            parts.append(f"{len(self.violations)} forbidden outcome(s) observed")
        if self.gaps:
            bound = f"each < {self.bound:.2g} at 95%" if self.bound is not None else "no valid instance"
            parts.append(f"{len(self.gaps)} allowed outcome(s) unseen ({bound})")
        if self.other:
            parts.append(f"other={self.other}")
        if self.timeout:
            parts.append(f"timeout={self.timeout}")
        if self.epilogue:
            parts.append(f"epilogue={self.epilogue}")
        if self.hang:
            parts.append(f"hang={self.hang}" + {True: " (model: may hang)", False: " (model: never hangs)"}
                         .get(self.hang_model, ""))
        if self.simulated:
            parts.append("SIMULATED")
        return ", ".join(parts)


def rule_of_three(n: int) -> float | None:
    """95% upper bound on the per-instance probability of an event seen 0 times in n trials."""
    return 3.0 / n if n > 0 else None


def _project(outcome: Outcome, names) -> Outcome:
    d = dict(outcome)
    return tuple((n, d[n]) for n in names)


def _norm(o: Outcome) -> Outcome:
    return tuple((k, v % 2**32) for k, v in o)


def device_label(h: Histogram) -> str:
    cfg = h.config.get("name", "?") if h.config else "?"
    label = f"{h.device or '?'} (cc {h.compute_capability or '?'}, {h.target or '?'}, config {cfg})"
    return ("SIMULATED " + label) if h.simulated else label


def check_belongs(hist: Histogram, test: LitmusTest) -> None:
    """HarnessError when `hist` is not a run of `test` as it is now (stale or foreign)."""
    if hist.fingerprint and hist.fingerprint != fingerprint(test):
        raise HarnessError(f"{hist.test}: the histogram was recorded for another version of the test "
                           f"(fingerprint {hist.fingerprint}, the test now {fingerprint(test)}): re-run it")
    want = {str(v) for v in observed_vars(test)}
    if set(hist.vars) != want:
        raise HarnessError(f"{hist.test}: the histogram observes {sorted(hist.vars)}, the test's conditions name "
                           f"{sorted(want)}: a stale or foreign histogram (missing variables would read as 0)")


def compare_one(hist: Histogram, verdicts: Mapping[Outcome, str] | None, test: LitmusTest | None = None,
                complete: bool = True, control: bool | None = None,
                max_timeout_fraction: float = MAX_TIMEOUT_FRACTION, hang: bool | None = None) -> Comparison:
    """Compare one histogram with the model's verdicts for its test (and its expectations).
    `hang`: the model's hang verdict (True: some fair execution hangs; None: not asked)."""
    if control is None:
        control = bool(test is not None and is_control(test))
    if test is not None:
        check_belongs(hist, test)
    n = hist.valid
    names = hist.vars
    allowed_seen, violations, gaps = [], [], []
    if verdicts:
        mvars = tuple(k for k, _ in next(iter(verdicts)))
        common = tuple(v for v in names if v in mvars)
        if names and set(names) - set(mvars):
            raise HarnessError(f"{hist.test}: the histogram observes {list(names)}, the model {list(mvars)}: "
                               f"{sorted(set(names) - set(mvars))} unknown to the model")
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
            exps.append(ExpectationCheck(e.kind, e.text, hits, status, hits / hist.time_s if hist.time_s > 0 else 0.0))
        if test.expect_hang is not None:
            if test.expect_hang:
                status = "ok" if hist.hang else "gap"
            else:
                status = "hangs" if hist.hang else "ok"
            exps.append(ExpectationCheck("allowed" if test.expect_hang else "forbidden", "hang", hist.hang, status,
                                         hist.hang / hist.time_s if hist.time_s > 0 else 0.0))
    may_hang = hang is True or bool(test is not None and test.expect_hang and hang is not False)
    attempted = n + hist.timeout + hist.hang
    if hist.other or hist.epilogue:
        verdict = "harness-error"
    elif n == 0 and not (hist.hang and may_hang):
        verdict = "no-data"
    elif attempted and hist.timeout / attempted > max_timeout_fraction:
        verdict = "timeouts"
    elif attempted and not may_hang and hist.hang / attempted > max_timeout_fraction:
        verdict = "hangs"
    elif control:
        seen = any(x.status == "ok" for x in exps if x.kind == "allowed")
        verdict = "control-seen" if seen else "control-rare" if is_informational(hist.test) else "control-unseen"
    elif violations or any(x.status == "violation" for x in exps):
        verdict = "violation"
    elif gaps or any(x.status == "gap" for x in exps):
        verdict = "gap"
    else:
        verdict = "ok"
    if control and not verdicts:
        violations = []
    return Comparison(hist.test, verdict, n, rule_of_three(n), tuple(violations), tuple(gaps),
                      tuple(allowed_seen), tuple(exps), hist.other, hist.timeout, control, hist.epilogue,
                      device_label(hist), hist.simulated, hist.hang, hang)


def merge_runs(hists: list[Histogram]) -> list[Histogram]:
    """Histograms of one test from the same device, target, configuration and runtime added up;
    runs that differ in any of those stay apart (first-seen order)."""
    merged: dict[tuple, Histogram] = {}
    for h in hists:
        k = (h.test, h.key())
        merged[k] = merge(merged[k], h) if k in merged else h
    return list(merged.values())


def compare(hists: list[Histogram], model: Mapping[str, Mapping[Outcome, str]],
            tests: Mapping[str, LitmusTest] | None = None, complete: bool = True,
            max_timeout_fraction: float = MAX_TIMEOUT_FRACTION,
            hangs: Mapping[str, bool | None] | None = None) -> list[Comparison]:
    """One Comparison per test and device, in order (runs of one test on one device merged).
    `hangs`: test name -> the model's hang verdict (see compare_one)."""
    tests, hangs = tests or {}, hangs or {}
    return [compare_one(h, model.get(h.test), tests.get(h.test), complete,
                        max_timeout_fraction=max_timeout_fraction, hang=hangs.get(h.test)) for h in merge_runs(hists)]


def merge(a: Histogram, b: Histogram) -> Histogram:
    """Two runs of one test (same variables, same device/target/config/runtime) added up."""
    from .histogram import make
    if a.vars != b.vars:
        raise HarnessError(f"{a.test}: cannot merge histograms over {list(a.vars)} and {list(b.vars)}")
    if a.key() != b.key():
        raise HarnessError(f"{a.test}: cannot merge runs of different devices, targets or configurations "
                           f"({device_label(a)} and {device_label(b)})")
    if a.fingerprint != b.fingerprint and a.fingerprint and b.fingerprint:
        raise HarnessError(f"{a.test}: cannot merge runs of two versions of the test")
    return make(a.test, a.vars, list(a.counts) + list(b.counts), other=a.other + b.other,
                timeout=a.timeout + b.timeout, epilogue=a.epilogue + b.epilogue, unsynced=a.unsynced + b.unsynced,
                hang=a.hang + b.hang,
                device=a.device, compute_capability=a.compute_capability, driver=a.driver, cuda=a.cuda,
                target=a.target, config=a.config, seed=a.seed, iterations=a.iterations + b.iterations,
                time_s=a.time_s + b.time_s, fingerprint=a.fingerprint or b.fingerprint, sms=a.sms, nvcc=a.nvcc,
                device_index=a.device_index, simulated=a.simulated)


def verdicts_from_result(result) -> dict[Outcome, str]:
    """The model's allowed outcomes (checker.results.result.Result) as a verdict mapping."""
    return {tuple(o): "allowed" for o in result.outcomes}


def hang_from_result(result) -> bool | None:
    """The model's hang verdict in a Result: True (some fair execution hangs), False (none), None
    (not asked, or Unknown)."""
    for c in result.conditions:
        if c.text == "hang":
            return c.allowed
    return None


def exit_code(comparisons: list[Comparison]) -> int:
    """1 when a forbidden outcome was observed, the harness misbehaved, a test gave no data or
    timed out too often, or a control was not seen."""
    return 1 if any(c.verdict in BAD for c in comparisons) else 0


def render(comparisons: list[Comparison]) -> str:
    """Text report: per device, one summary line per test with details of violations and gaps,
    the device's totals; then the totals of all devices."""
    out = []
    devices = list(dict.fromkeys(c.device for c in comparisons))
    for dev in devices:
        group = [c for c in comparisons if c.device == dev]
        if len(devices) > 1 or dev:
            out.append(f"== Device {dev or '?'}: {len(group)} test(s)")
            if any(c.simulated for c in group):
                out.append("== SIMULATED by the fake device: these are not observations of any GPU")
        for c in group:
            out.append(c.summary())
            for o, k in c.violations:
                out.append(f"    forbidden but observed {k}x: {_show(o)}")
            for o in c.gaps:
                out.append(f"    allowed but unseen in {c.n}: {_show(o)}")
            for e in c.expectations:
                rate = f" ({e.rate:.3g}/s)" if e.observed and e.rate else ""
                out.append(f"    {e.kind} {e.text}: observed {e.observed}{rate} -> {e.status}")
        if len(devices) > 1:
            out.append(_totals(group, "Device summary"))
    out.append(_totals(comparisons, "Summary"))
    return "\n".join(out)


def _totals(comparisons: list[Comparison], title: str) -> str:
    totals = {k: sum(1 for c in comparisons if c.verdict == k) for k in CLASSES}
    return f"{title}: " + (", ".join(f"{k} {v}" for k, v in totals.items() if v) or "nothing compared")


def _show(o: Outcome) -> str:
    return " /\\ ".join(f"{k}={v}" for k, v in o) or "(no variables)"
