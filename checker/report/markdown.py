"""The report as Markdown: the same content as the HTML page without the pictures (the witness
and candidate executions are in report.json, and as DOT with `ptxmc check --dot`)."""
from __future__ import annotations

import html
import re

from ..results.result import outcome_text
from ..textsafe import printable
from .html import HW_WORD, STATUS_WORD, verdict_badge
from .jsondoc import summary


def _c(s) -> str:
    """Inline code, safe in a table cell (a code span shows HTML as text; its fence is longer
    than any run of backticks inside)."""
    s = printable(str(s).replace("\n", " ")).replace("|", "\\|")
    fence = "`" * (max((len(r) for r in re.findall("`+", s)), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def _t(s) -> str:
    """Plain text, safe in a table cell and as Markdown: HTML escaped (a name or doc holding
    <script> stays text in any renderer), control characters shown as escapes."""
    return html.escape(printable(str(s).replace("\n", " ")), quote=False).replace("|", "\\|")


def render(report) -> str:
    s = summary(report)
    out = [f"# {_t(report.title)}", "",
           f"Model {_c(report.model)} (hash {_c(report.model_hash)}), options: {', '.join(report.options) or 'none'}, "
           f"engine {report.engine}. Inputs: " + ", ".join(_c(p) for p in report.inputs) + "."]
    if report.interrupted:
        out += ["", f"**Interrupted: {report.interrupted[0]} of {report.interrupted[1]} tests run.** "
                    "The report is complete for the tests it holds."]
    if report.hw_files:
        out.append("Hardware histograms: " + ", ".join(_c(p) for p in report.hw_files) + ".")
    out += ["", "## Summary", "", "| | count |", "| --- | ---: |", f"| tests | {s['tests']} |"]
    out += [f"| {STATUS_WORD[k]} ({k}) | {s['status'][k]} |" for k in
            ("pass", "fail", "error", "unknown", "undefined", "run") if s["status"].get(k)]
    out += [f"| conditions {k} | {v} |" for k, v in s["conditions"].items() if v]
    out += [f"| expectations met | {s['expectations']['met']} |",
            f"| expectations not met | {s['expectations']['unmet']} |"]
    if s["hardware"]:
        out += [f"| hardware: {HW_WORD.get(k, k)} | {v} |" for k, v in sorted(s["hardware"].items())]
    out += ["", "## Tests", "", "| test | file | status | conditions | hardware |", "| --- | --- | --- | --- | --- |"]
    for t in report.tests:
        r = t.result
        conds = "; ".join(f"{verdict_badge(c)[0]} {_c(c.text)}" for c in r.conditions)
        if r.undefined:
            conds = "Undefined" + (f"; {conds}" if conds else "")
        cmp_ = report.comparison(r.name)
        hw = HW_WORD.get(cmp_.verdict, cmp_.verdict) if cmp_ is not None else ""
        out.append(f"| {_t(r.name)} | {_c(r.path)} | {STATUS_WORD.get(r.status, r.status)} | {conds} | {hw} |")
    out += ["", "## Details"]
    for t in report.tests:
        out += [""] + _test(t, report.comparison(t.result.name))
    return "\n".join(out).rstrip() + "\n"


def _test(t, comparison) -> list[str]:
    r = t.result
    out = [f"### {_t(r.name)}", "", f"{STATUS_WORD.get(r.status, r.status)} ({r.status}) · {_c(r.path)}"
           + (f" · hash {_c(t.hash)}" if t.hash else "")]
    if r.message:
        out += ["", _t(r.message)]
    for u in r.undefined:
        out += ["", f"Undefined: {_t(u.why)}"]
    if r.outcomes and not r.undefined:
        out += ["", f"States {len(r.outcomes)}: " + ", ".join(_c(outcome_text(o)) for o in r.outcomes)]
        if t.formula:
            out.append(f"Formula: {_c(t.formula)}")
    if r.conditions:
        out += ["", "| expected | condition | model | | Positive/Negative | Observation |",
                "| --- | --- | --- | --- | --- | --- |"]
        for c in r.conditions:
            ok = "" if c.met is None else ("Ok" if c.met else "No")
            obs = "Never" if c.positive == 0 else ("Always" if c.negative == 0 else "Sometimes")
            out.append(f"| {c.expected or 'query'} | {_c(c.text)} | {verdict_badge(c)[0]} | {ok} | "
                       f"{c.positive}/{c.negative} | {obs} |")
    for f in t.forbidden:
        out += ["", f"Why {_c(f.condition)} is forbidden:"]
        if not f.sane:
            out.append("- no well-formed execution satisfies it, even without axioms")
            continue
        if f.blame:
            out.append("- ruled out by: " + " or ".join(" + ".join(f"**{a}**" for a in s) for s in f.blame))
        out += [f"- violates **{v.axiom}** ({v.kind}, {v.where}): {_c(v.text)}" for v in f.violations]
        out += [f"- needs: {_c(e.mutation.describe())} {_MAKES[e.verdict]}" for e in f.needed]
        if f.effects and not f.needed:
            out.append("- no single fence or release/acquire annotation is needed")
    a = getattr(t, "advice", None)
    if a is not None:
        out += ["", f"{a.title}: {_t(a.summary)}"] + [f"- {_c(x)}" for x in a.lines]
    if comparison is not None:
        c = comparison
        out += ["", f"Hardware: **{HW_WORD.get(c.verdict, c.verdict)}**, {c.n} instances"]
        out += [f"- forbidden but observed {n}x: {_c(outcome_text(o))}" for o, n in c.violations]
        out += [f"- allowed, observed {n}x: {_c(outcome_text(o))}" for o, n in c.witnessed]
        out += [f"- allowed but never observed: {_c(outcome_text(o))}" for o in c.gaps]
    if t.note:
        out += ["", _t(t.note)]
    return out


# What a needed mutation does (checker.verdict.mutate.NEEDED), after "needs: `removing ...`".
_MAKES = {"allowed": "makes it allowed", "undefined": "makes the program undefined",
          "hang": "leaves no execution that terminates (a hang)"}
