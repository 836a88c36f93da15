"""Printers for results: text (one line per test), herd (herd7's block per test), JSON (stable
schema, documented in README) and JUnit XML. Pure: Result(s) in, str out, deterministic apart
from timing fields (which `timing=False` leaves out)."""
from __future__ import annotations

import re

from ..ast import value_text
from ..textsafe import printable
from .result import Result, outcome_text

JSON_SCHEMA_VERSION = 1


def _p(s: str) -> str:
    """Text from the input as a terminal may show it (checker.textsafe)."""
    return printable(s)


def _indented(s: str, indent: str = "          ", more: str | None = None) -> str:
    """A message, control characters escaped, its first line indented by `indent` and the others
    by `more` (default the same): a line of it cannot pass for a line of its own (a forged PASS)."""
    return indent + printable(s, newlines=True).replace("\n", "\n" + (indent if more is None else more))


def text(results: list[Result], timing: bool = True) -> str:
    lines = []
    for r in results:
        t = f"  {r.time * 1000:.0f}ms" if timing else ""
        lines.append(f"{r.status.upper():9} {_p(r.name)}  ({_p(r.path)}){t}")
        if r.message:
            lines.append(_indented(r.message))
        for c in r.conditions:
            if c.met is False:
                lines.append(_indented(f"expected {c.expected}, model says {c.verdict}: {c.text}"))
        for note in r.notes:
            lines.append(_indented(f"note: {note}"))
    lines.append(summary(results))
    return "\n".join(lines) + "\n"


def summary(results: list[Result]) -> str:
    counts = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    order = ["pass", "fail", "error", "unknown", "undefined", "run"]
    parts = [f"{counts[k]} {k}" for k in order if counts.get(k)]
    return f"ptxmc: {len(results)} tests: " + (", ".join(parts) if parts else "none")


def herd(results: list[Result], timing: bool = True) -> str:
    out = []
    for r in results:
        name = _p(r.name)
        if r.status == "error":
            out.append(f"Test {name} Error\n{_indented(r.message, '', '  ')}\n")
            continue
        if r.undefined:
            out.append(f"Test {name} Undefined\n" + "\n".join(_indented(u.why, '', '  ') for u in r.undefined) + "\n")
            continue
        kind = "Allowed"
        if r.conditions and r.conditions[0].expected == "forbidden":
            kind = "Forbidden"
        states = f"States {len(r.outcomes)}" + ("" if r.complete else " (incomplete: the outcome cap)")
        block = [f"Test {name} {kind}", states]
        block += [outcome_text(o) for o in r.outcomes]
        for c in r.conditions:
            ok = "Ok" if c.met else ("Unknown" if c.allowed is None else "No")
            block.append(ok)
            block.append("Witnesses")
            block.append(f"Positive: {c.positive} Negative: {c.negative}")
            quant = "~exists" if c.expected == "forbidden" else "exists"
            if c.allowed is None:     # never present an unknown as validated (or as forbidden)
                validated = "unknown"
            else:
                validated = "validated" if (c.allowed if quant == "exists" else not c.allowed) else "NOT validated"
            block.append(f"Condition {quant} ({c.text}) is {validated}")
            obs = "Never" if c.positive == 0 else ("Always" if c.negative == 0 else "Sometimes")
            if not r.complete and c.allowed is not None:    # counts over a partial list: no Always
                obs = "Sometimes" if c.allowed else "Never"
            block.append(f"Observation {name} {obs} {c.positive} {c.negative}")
        if r.status == "unknown":
            block.append(f"Unknown: {_p(r.message)}")
        if timing:
            block.append(f"Time {name} {r.time:.3f}")
        out.append("\n".join(block) + "\n")
    return "\n".join(out)


def result_dict(r: Result, timing: bool = True) -> dict:
    d = {
        "name": r.name,
        "path": r.path,
        "status": r.status,
        "message": r.message,
        "model": r.model,
        "engine": r.engine,
        "source": r.source,
        "matrix_row": dict(r.matrix_row) if r.matrix_row else None,
        "observe": list(r.observe),
        # a value past 64 bits is a hexadecimal string (JSON readers lose such integers)
        "outcomes": [{k: v if -(1 << 64) < v < (1 << 64) else value_text(v) for k, v in o} for o in r.outcomes],
        "complete": r.complete,
        "conditions": [
            {"text": c.text, "expected": c.expected, "model": c.verdict.lower(),
             "met": c.met, "positive": c.positive, "negative": c.negative, "sane": c.sane,
             "blame": [list(b) for b in c.blame]}
            for c in r.conditions
        ],
        "undefined": [{"flag": u.flag, "events": list(u.events), "why": u.why} for u in r.undefined],
        "expect_undefined": r.expect_undefined,
        "notes": list(r.notes),
    }
    if timing:
        d["time"] = round(r.time, 6)
    return d


def to_json(results: list[Result], timing: bool = True) -> str:
    """The JSON document: the text json.dumps(doc, indent=2, sort_keys=True) gives, made one result
    at a time, so a campaign of 10^5 results never holds all their dictionaries at once."""
    import json         # (here: `check` and `outcomes` import this module, and never write JSON)

    if not results:
        return json.dumps({"results": [], "schema": JSON_SCHEMA_VERSION, "tool": "ptxmc"},
                          indent=2, sort_keys=True) + "\n"
    parts = ["    " + json.dumps(result_dict(r, timing), indent=2, sort_keys=True).replace("\n", "\n    ")
             for r in results]
    tail = json.dumps({"schema": JSON_SCHEMA_VERSION, "tool": "ptxmc"}, indent=2, sort_keys=True)[1:]
    return '{\n  "results": [\n' + ",\n".join(parts) + "\n  ]," + tail + "\n"


# Characters XML 1.0 does not allow at all (control characters, lone surrogates, U+FFFE/U+FFFF):
# a test name or message holding one would make the whole JUnit file unreadable (found by fuzzing).
# (It and xml.sax take ~15 ms to compile and import: only JUnit output needs them.)
_NOT_XML = "[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"


def escape(text: str) -> str:
    from xml.sax.saxutils import escape

    return escape(re.sub(_NOT_XML, "\ufffd", text))


def quoteattr(text: str) -> str:
    from xml.sax.saxutils import quoteattr

    return quoteattr(re.sub(_NOT_XML, "\ufffd", text))


def junit(results: list[Result], timing: bool = True) -> str:
    fails = sum(r.status in ("fail", "undefined") for r in results)
    errors = sum(r.status in ("error", "unknown") for r in results)
    total_time = sum(r.time for r in results) if timing else 0.0
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<testsuites name="ptxmc" tests="{len(results)}" failures="{fails}" errors="{errors}" '
             f'time="{total_time:.3f}">',
             f'  <testsuite name="ptxmc" tests="{len(results)}" failures="{fails}" errors="{errors}" '
             f'skipped="0" time="{total_time:.3f}">']
    for r in results:
        t = f"{r.time:.3f}" if timing else "0.000"
        lines.append(f'    <testcase classname={quoteattr(r.path)} name={quoteattr(r.name)} time="{t}">')
        detail = r.message or "; ".join(
            f"expected {c.expected}, model says {c.verdict}: {c.text}" for c in r.conditions if c.met is False)
        if r.status in ("fail", "undefined"):
            lines.append(f"      <failure message={quoteattr(detail or r.status)}>{escape(detail)}</failure>")
        elif r.status in ("error", "unknown"):
            lines.append(f"      <error message={quoteattr(detail or r.status)} type={quoteattr(r.status)}>"
                         f"{escape(detail)}</error>")
        lines.append("    </testcase>")
    lines += ["  </testsuite>", "</testsuites>"]
    return "\n".join(lines) + "\n"


FORMATS = {"text": text, "herd": herd, "json": to_json, "junit": junit}


def mark_partial(fmt: str, text: str, run: int, total: int) -> str:
    """Output of an interrupted run, marked as such: complete for the tests it holds."""
    note = f"interrupted: {run} of {total} tests run"
    if fmt == "json":
        import json

        doc = json.loads(text)
        doc["interrupted"] = {"run": run, "total": total}
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"
    if fmt == "junit":
        prop = (f'    <properties>\n      <property name="ptxmc.interrupted" value="{run} of {total} tests run"/>'
                f"\n    </properties>")
        lines = text.split("\n")
        at = next((k for k, line in enumerate(lines) if line.lstrip().startswith("<testsuite ")), None)
        if at is not None:
            lines.insert(at + 1, prop)
        return "\n".join(lines) + f"<!-- ptxmc: {note} -->\n"
    if fmt == "herd":
        return text + f"\nInterrupted: {run} of {total} tests run\n"
    return text + f"ptxmc: {note}\n"
