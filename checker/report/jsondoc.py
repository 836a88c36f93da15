"""The report as JSON: `checker.results.output.result_dict` per test, extended with the explanations and
the hardware comparison. The schema is documented in reports/README.md; `format` and `version`
name it, and any incompatible change bumps `version`. Keys are sorted, lists are in report order
(tests by file, then as loaded; outcomes sorted), so the bytes are stable."""
from __future__ import annotations

import json

from ..results.output import result_dict
from .analyze import Picture, TestReport

FORMAT = "ptxmc-report"
VERSION = 1


def _outcome(o) -> dict:
    return {k: v for k, v in o}


def _graph(p: Picture | None) -> dict | None:
    """One picture as data: its edges (src, relation, dst), the highlighted ones (a violated
    axiom's cycle) apart, and the value of every access (reads differ between executions)."""
    if p is None:
        return None
    g = p.graph
    return {
        "caption": p.caption,
        "access": {f"e{n.eid}": n.access for n in g.nodes},
        "edges": [[f"e{e.src}", e.rel, f"e{e.dst}"] for e in g.edges if not e.highlight],
        "highlight": [[f"e{e.src}", e.rel, f"e{e.dst}"] for e in g.edges if e.highlight],
    }


def _events(t: TestReport) -> list[dict]:
    pics = [p for _, p in t.witnesses] + [f.picture for f in t.forbidden if f.picture] \
        + ([t.undefined] if t.undefined else []) + ([t.hang] if t.hang else [])
    nodes = {n.eid: n for p in pics for n in p.graph.nodes}
    return [{"id": f"e{n.eid}", "thread": n.thread, "kind": n.kind, "instruction": n.label,
             "scope": n.scope, "proxy": n.proxy} for _, n in sorted(nodes.items())]


def _effect(e) -> dict:
    m = e.mutation
    return {"thread": m.thread, "index": m.index, "line": m.line, "action": m.action,
            "instruction": m.original, "replacement": m.replacement, "verdict": e.verdict,
            "message": e.message, "text": m.describe()}


def test_dict(t: TestReport, timing: bool, comparison=None) -> dict:
    d = result_dict(t.result, timing)
    d.update({
        "doc": t.doc,
        "hash": t.hash,
        "code": [{"thread": th, "position": pos, "instructions": list(code)} for th, pos, code in t.code],
        "formula": t.formula,
        "events": _events(t),
        "witnesses": [{"outcome": _outcome(o), "graph": _graph(p)} for o, p in t.witnesses],
        "outcomes_without_witness": t.more_outcomes,
        "forbidden": [{
            "condition": f.condition, "expected": f.expected, "sane": f.sane,
            "blame": [list(s) for s in f.blame],
            "violations": [{"axiom": v.axiom, "kind": v.kind, "where": v.where, "text": v.text,
                            "path": [{"from": f"e{a}", "rel": r, "to": f"e{b}"} for a, r, b in v.steps]}
                           for v in f.violations],
            "needed": [_effect(e) for e in f.needed],
            "mutations": [_effect(e) for e in f.effects],
            "candidate": _graph(f.picture),
        } for f in t.forbidden],
        "undefined_witness": _graph(t.undefined),
        "hang_witness": _graph(t.hang),
        "explanation_note": t.note,
        **({"advice": {"title": t.advice.title, "summary": t.advice.summary, "lines": list(t.advice.lines)}}
           if getattr(t, "advice", None) is not None else {}),
        "hardware": comparison_dict(comparison) if comparison is not None else None,
    })
    return d


def comparison_dict(c) -> dict:
    return {
        "test": c.test, "verdict": c.verdict, "instances": c.n, "bound": c.bound,
        "violations": [{"outcome": _outcome(o), "count": n} for o, n in c.violations],
        "gaps": [_outcome(o) for o in c.gaps],
        "witnessed": [{"outcome": _outcome(o), "count": n} for o, n in c.witnessed],
        "expectations": [{"kind": e.kind, "condition": e.text, "observed": e.observed, "status": e.status}
                         for e in c.expectations],
        "other": c.other, "timeout": c.timeout, "control": c.control,
    }


def summary(report) -> dict:
    status: dict[str, int] = {}
    verdicts = {"allowed": 0, "forbidden": 0, "unknown": 0}
    met = {"met": 0, "unmet": 0, "query": 0}
    for t in report.tests:
        r = t.result
        status[r.status] = status.get(r.status, 0) + 1
        for c in r.conditions:
            verdicts["unknown" if c.allowed is None else ("allowed" if c.allowed else "forbidden")] += 1
            met["query" if c.met is None else ("met" if c.met else "unmet")] += 1
    hw: dict[str, int] = {}
    for c in report.hardware:
        hw[c.verdict] = hw.get(c.verdict, 0) + 1
    return {"tests": len(report.tests), "status": status, "conditions": verdicts, "expectations": met,
            "undefined": sum(1 for t in report.tests if t.result.undefined),
            "hardware": hw if report.hardware else None}


def render(report) -> str:
    names = {t.result.name for t in report.tests}
    doc = {
        "format": FORMAT, "version": VERSION, "tool": "ptxmc",
        "model": {"name": report.model, "hash": report.model_hash, "options": list(report.options)},
        "engine": report.engine,
        "inputs": list(report.inputs),
        "hardware_files": list(report.hw_files),
        "summary": summary(report),
        "tests": [test_dict(t, report.timing, report.comparison(t.result.name)) for t in report.tests],
        "hardware_only": [comparison_dict(c) for c in report.hardware if c.test not in names],
    }
    if report.interrupted:
        doc["interrupted"] = {"run": report.interrupted[0], "total": report.interrupted[1]}
    return dumps(doc) + "\n"


def _flat(x) -> bool:
    if isinstance(x, list):
        return all(not isinstance(v, (list, dict)) for v in x)
    if isinstance(x, dict):
        return len(x) <= 4 and all(not isinstance(v, (list, dict)) for v in x.values())
    return True


def dumps(x, level: int = 0) -> str:
    """JSON with sorted keys, one key per line, but short flat lists and small flat objects on one
    line (an edge ["e2", "rf", "e7"], an outcome {"P1:r0": 1}): compact and still diffable."""
    if _flat(x):
        return json.dumps(x, sort_keys=True, ensure_ascii=False)
    pad, inner = " " * level, " " * (level + 1)
    if isinstance(x, list):
        if all(_flat(v) and not isinstance(v, dict) for v in x) and len(x) <= 64:
            return "[" + ", ".join(dumps(v) for v in x) + "]"
        return "[\n" + ",\n".join(inner + dumps(v, level + 1) for v in x) + "\n" + pad + "]"
    items = [inner + json.dumps(k, ensure_ascii=False) + ": " + dumps(x[k], level + 1) for k in sorted(x)]
    return "{\n" + ",\n".join(items) + "\n" + pad + "}"
