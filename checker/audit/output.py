"""What `ptxmc audit` prints: per test, what the policy removed and inserted and each finding
(under which readings, with its witness, repair or removable fences, and its re-check); then a
summary table per suite and reading. As text, Markdown (a report section) or JSON."""
from __future__ import annotations

import json

from .run import Audit, TestAudit

COLUMNS = ("tests", "changed", "stripped", "inserted", "ok", "under", "over", "no-req", "unknown", "error")


def _place(test, thread: str, point: int) -> str:
    code = next(t.code for t in test.threads if t.name == thread)
    if point < len(code):
        ins = code[point]
        line = f"line {ins.where.line} " if ins.where and ins.where.line else ""
        return f"{thread}, before {line}'{ins.text}'"
    return f"{thread}, at the end"


def _judged(ta: TestAudit):
    return ta.by_reading[0][1] if ta.by_reading else None


def changes(ta: TestAudit) -> dict:
    j = _judged(ta)
    a = j.applied if j else None
    if a is None:
        return {"removed": [], "inserted": []}
    lines = {t.name: t.code for t in a.test.threads}
    removed = [{"thread": t, "line": (lines[t][k].where.line if lines[t][k].where else None), "instruction": txt}
               for t, k, txt in a.removed]
    inserted = [{"kind": i.kind, "instructions": list(i.texts), "where": _place(a.stripped, i.thread, i.point),
                 "why": i.why} for i in a.insertions]
    return {"removed": removed, "inserted": inserted}


def grouped(ta: TestAudit) -> list[dict]:
    """Each distinct finding with the readings it appears under."""
    out: dict = {}
    for reading, f in ta.findings():
        g = out.setdefault(f.key, {"finding": f, "readings": []})
        g["readings"].append(reading)
    return [{**g, "dependent": ta.dependent(k)} for k, g in out.items()]


def summary(audit: Audit) -> list[dict]:
    rows: dict = {}
    for ta in audit.tests:
        for reading in audit.readings:
            row = rows.setdefault((ta.suite, reading), dict.fromkeys(COLUMNS, 0))
            row["tests"] += 1
            if ta.error:
                row["error"] += 1
                continue
            j = dict(ta.by_reading)[reading]
            if j.status != "unchanged":
                row["changed"] += 1
                row["stripped"] += len(j.applied.removed)
                row["inserted"] += len(j.applied.fences)
            kinds = {f.kind for f in j.findings}
            row["under"] += "under" in kinds
            row["over"] += "over" in kinds
            row["ok"] += j.status == "ok"
            row["no-req"] += j.status == "no-requirement"
            row["unknown"] += j.status == "unknown"
            row["error"] += j.status == "error"
    out = [{"suite": s, "reading": r, **row} for (s, r), row in rows.items()]
    for r in audit.readings:
        tot = dict.fromkeys(COLUMNS, 0)
        for row in out:
            if row["reading"] == r and row["suite"] != "total":
                for c in COLUMNS:
                    tot[c] += row[c]
        out.append({"suite": "total", "reading": r, **tot})
    return out


def dependent_count(audit: Audit) -> int:
    return sum(1 for ta in audit.tests for g in grouped(ta) if g["dependent"])


def _finding_lines(g: dict, indent: str = "  ") -> list[str]:
    f = g["finding"]
    where = ", ".join(g["readings"]) + (" only: DEPENDS ON THE READING" if g["dependent"] else "")
    lines = [f"{indent}{f.kind.upper()}-FENCING [{where}]: {f.what}"]
    if f.detail:
        lines.append(f"{indent}    {f.detail}")
    if f.kind == "under":
        cost = f" (cost {f.repair_cost})" if f.repair_cost is not None else ""
        lines += [f"{indent}    repair{cost}: {r}" for r in f.repair]
    lines.append(f"{indent}    re-check from scratch: {f.recheck}")
    return lines


def text(audit: Audit, verbose: bool = False) -> str:
    lines = [f"Audit of policy '{audit.policy}' (readings: {', '.join(audit.readings)}"
             + (f"; options {', '.join(audit.options)}" if audit.options else "") + ")", ""]
    for ta in audit.tests:
        gs = grouped(ta)
        odd = [(r, j) for r, j in ta.by_reading if j.status in ("unknown", "error")]
        if not (gs or odd or ta.error or verbose):
            continue
        lines.append(f"{ta.name}  ({ta.path})")
        if ta.error:
            lines += [f"  ERROR: {ta.error}", ""]
            continue
        ch = changes(ta)
        if ch["removed"]:
            lines.append("  removed: " + "; ".join(f"{r['thread']} line {r['line']} '{r['instruction']}'"
                                                   for r in ch["removed"]))
        for i in ch["inserted"]:
            lines.append(f"  inserted {'; '.join(i['instructions'])}  ({i['where']})")
        if not ch["inserted"]:
            lines.append("  inserted: nothing")
        for r, j in odd:
            lines.append(f"  {j.status.upper()} [{r}]: {j.message}")
        for g in gs:
            lines += _finding_lines(g)
        if not gs and not odd:
            lines.append("  " + ", ".join(f"{r}: {j.status}" for r, j in ta.by_reading))
        lines.append("")
    lines += table(audit)
    lines.append("")
    lines.append(f"{dependent_count(audit)} finding(s) depend on the reading; {audit.seconds:.1f} s")
    return "\n".join(lines) + "\n"


def table(audit: Audit, markdown: bool = False) -> list[str]:
    rows = summary(audit)
    head = ("suite", "reading") + COLUMNS
    cells = [[str(r[c]) for c in head] for r in rows]
    if markdown:
        return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(c) + " |" for c in cells]
    widths = [max(len(h), *(len(c[k]) for c in cells)) for k, h in enumerate(head)]
    fmt = lambda row: "  ".join(v.ljust(w) if k < 2 else v.rjust(w) for k, (v, w) in enumerate(zip(row, widths)))
    return ["Summary", fmt(head)] + [fmt(c) for c in cells]


def markdown(audit: Audit) -> str:
    lines = [f"## Audit: policy `{audit.policy}`", "",
             f"Readings: {', '.join(audit.readings)}. Columns: tests; changed (the policy removed or inserted "
             "something); stripped / inserted fences; tests with under- / over-fencing findings; no-req (the test "
             "expects undefined behaviour and forbids nothing).", ""]
    lines += table(audit, markdown=True)
    lines.append("")
    for ta in audit.tests:
        gs = grouped(ta)
        if not gs and not ta.error:
            continue
        lines.append(f"### {ta.name}")
        lines.append("")
        if ta.error:
            lines += [f"Error: {ta.error}", ""]
            continue
        for i in changes(ta)["inserted"]:
            lines.append(f"- inserted `{'; '.join(i['instructions'])}` ({i['where']})")
        for g in gs:
            lines += ["- " + _finding_lines(g, "")[0]] + ["  " + x.strip() for x in _finding_lines(g, "")[1:]]
        lines.append("")
    return "\n".join(lines) + "\n"


def as_json(audit: Audit) -> str:
    tests = []
    for ta in audit.tests:
        d = {"test": ta.name, "path": ta.path, "suite": ta.suite}
        if ta.error:
            d["error"] = ta.error
        else:
            d.update(changes(ta))
            d["readings"] = {r: {"status": j.status, "message": j.message, "seconds": round(j.seconds, 3)}
                             for r, j in ta.by_reading}
            d["findings"] = [{
                "kind": g["finding"].kind, "what": g["finding"].what, "detail": g["finding"].detail,
                "readings": g["readings"], "depends_on_reading": g["dependent"],
                "repair": list(g["finding"].repair), "repair_cost": g["finding"].repair_cost,
                "removable": [{"thread": t, "index": k, "instruction": x} for t, k, x in g["finding"].fences],
                "recheck": g["finding"].recheck} for g in grouped(ta)]
        tests.append(d)
    doc = {"policy": audit.policy, "readings": list(audit.readings), "options": list(audit.options),
           "seconds": round(audit.seconds, 3), "summary": summary(audit),
           "dependent_findings": dependent_count(audit), "tests": tests}
    return json.dumps(doc, indent=2) + "\n"
