"""litmus7-format log of hardware histograms (herdtools7's `litmus` skeleton), so logs read and
diff like litmus7's. One block per test and expectation (a litmus7 test has one condition):

    Test NAME Allowed                      exists -> Allowed, ~exists -> Forbidden
    Histogram (N states)
    96    *>P0:r0=0; P1:r0=0;              '*' marks rows satisfying the condition body
    Ok                                     exists: some row satisfies it; ~exists: none does
    Witnesses
    Positive: 96, Negative: 999904         ~exists swaps the two counts, as litmus7 does
    Condition exists (P0:r0=0 /\\ P1:r0=0) is validated
    Observation NAME Sometimes 96 999904   Never / Sometimes / Always
    Time NAME 0.11

followed by ptxmc's own lines (device, target, instances, rate, seed, other, timeout). A test
with several expectations gets blocks named NAME, NAME#2, ...
"""
from __future__ import annotations

from ..ast import Expectation
from .histogram import Histogram
from .space import eval_cond


def _row(outcome) -> str:
    return "".join(f"{k}={v}; " for k, v in outcome).rstrip()


def block(hist: Histogram, exp: Expectation | None, name: str | None = None) -> str:
    name = name or hist.test
    rows = hist.counts
    body = (lambda o: eval_cond(exp.cond, dict(o))) if exp is not None else (lambda o: False)
    p_true = sum(c for o, c in rows if body(o))
    p_false = hist.valid - p_true
    kind = "Allowed" if exp is None or exp.kind == "allowed" else "Forbidden"
    out = [f"Test {name} {kind}", f"Histogram ({len(rows)} states)"]
    for o, c in rows:
        out.append(f"{c:<6}{'*' if body(o) else ':'}>{_row(o)}")
    if exp is not None:
        exists = exp.kind == "allowed"
        cond = p_true > 0 if exists else p_true == 0
        out.append("Ok" if cond else "No")
        out.append("")
        out.append("Witnesses")
        pos, neg = (p_true, p_false) if exists else (p_false, p_true)
        out.append(f"Positive: {pos}, Negative: {neg}")
        out.append(f"Condition {'' if exists else '~'}exists ({exp.text}) is {'' if cond else 'NOT '}validated")
    obs = "Never" if p_true == 0 else ("Always" if p_false == 0 else "Sometimes")
    out.append(f"Observation {name} {obs} {p_true} {p_false}")
    out.append(f"Time {name} {hist.time_s:.2f}")
    rate = hist.total / hist.time_s if hist.time_s > 0 else 0.0
    out.append(f"Device {hist.device or '?'} (sm {hist.compute_capability or '?'}), target {hist.target or '?'}, "
               f"driver {hist.driver or '?'}, CUDA runtime {hist.cuda or '?'}")
    out.append(f"Instances {hist.total} in {hist.iterations} launches ({rate:.0f}/s), seed {hist.seed}, "
               f"config {hist.config.get('name', '?')}")
    out.append(f"Other {hist.other}, Timeout {hist.timeout}")
    return "\n".join(out)


def log(hists: list[Histogram], tests: dict | None = None) -> str:
    """The whole log: blocks separated by blank lines, in histogram order."""
    tests = tests or {}
    blocks = []
    for h in hists:
        t = tests.get(h.test)
        exps = list(t.expectations) if t is not None else []
        if not exps:
            blocks.append(block(h, None))
        for k, e in enumerate(exps):
            blocks.append(block(h, e, h.test if k == 0 else f"{h.test}#{k + 1}"))
    return "\n\n".join(blocks) + "\n"
