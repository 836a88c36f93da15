"""What `ptxmc fix` prints: each repair with its cost, its edits (where, what, the edge each one
supplies), the unified diff of the YAML, and the re-check of the patched file; as text or JSON.
`verify` loads the patched YAML text back and judges the fixed test from scratch, so what is
printed is what was checked."""
from __future__ import annotations

import json
from dataclasses import dataclass

from ..front.litmus import load_text
from ..verdict.check import check_test
from .edits import Delete, Edit, Insert, Replace
from .fix import FixResult, Repair, target_test
from .yamlpatch import Patched, diff, patch


@dataclass(frozen=True)
class Shown:
    repair: Repair
    patched: Patched | None
    diff: str
    recheck: str            # pass | fail: ... | not re-checked: ...


def verify(result: FixResult, original: str | None, model, options=frozenset(), engine: str = "z3") -> list[Shown]:
    """Each repair with its patched file, re-checked from the patched text."""
    out = []
    for rep in result.repairs:
        if original is None:
            out.append(Shown(rep, None, "", "not re-checked from YAML: the test has no file"))
            continue
        what = "pruned" if result.status == "pruned" else "fixed"
        why = f"{what} by ptxmc fix{' --prune' if what == 'pruned' else ''}: " + "; ".join(
            f"{_verb(e)} {e.text}".strip() for e in rep.edits)
        p = patch(original, result.test, rep.edits, rep.test, why)
        loaded = [t for t in load_text(p.text, result.test.path) if getattr(t, "name", None) == p.name]
        if len(loaded) != 1:
            out.append(Shown(rep, p, diff(original, p.text, result.test.path), "fail: the patched file does not load"))
            continue
        r = check_test(target_test(loaded[0], result.target), model, None, options, engine)
        status = "pass" if r.ok else f"fail: {r.status} {r.message}".strip()     # ok: pass, or run (no UB alone)
        out.append(Shown(rep, p, diff(original, p.text, result.test.path), status))
    return out


def where(test, e: Edit) -> list[dict]:
    """Where each change of an edit goes, as the user's file numbers it."""
    threads = {t.name: t for t in test.threads}
    out = []
    for c in e.changes:
        th = threads[c.thread]
        if isinstance(c, (Replace, Delete)):
            ins = th.code[c.index]
            out.append({"thread": c.thread, "line": ins.where.line if ins.where else None,
                        "at": "replaces" if isinstance(c, Replace) else "removes", "instruction": ins.text})
        elif c.point < len(th.code):
            ins = th.code[c.point]
            out.append({"thread": c.thread, "line": ins.where.line if ins.where else None, "at": "before",
                        "instruction": ins.text})
        else:
            ins = th.code[-1] if th.code else None
            out.append({"thread": c.thread, "line": ins.where.line if ins and ins.where else None, "at": "after",
                        "instruction": ins.text if ins else ""})
    return out


def _place(p: dict) -> str:
    line = f"line {p['line']} " if p["line"] else ""
    if p["at"] in ("replaces", "removes"):
        return f"{p['thread']}, {line}'{p['instruction']}'"
    return f"{p['thread']}, {p['at']} {line}'{p['instruction']}'".replace("  ", " ")


def _verb(e: Edit) -> str:
    if e.kind == "prune":
        return "remove" if isinstance(e.changes[0], Delete) else "weaken to"
    return {"strengthen": "strengthen to", "tighten": "tighten to", "barrier": "insert barrier",
            "restore": "keep"}.get(e.kind, "insert")


def _target(result: FixResult) -> str:
    t = result.target
    parts = []
    if t.forbidden:
        parts.append("forbidden " + ", ".join(e.text for e in t.forbidden))
    if t.allowed:
        parts.append("allowed " + ", ".join(e.text for e in t.allowed))
    parts.append("no undefined behaviour" if t.defined else "undefined behaviour expected")
    if t.hang is not None:
        parts.append("a hang allowed" if t.hang else "no hang")
    return "; ".join(parts)


def _summary(result: FixResult) -> str:
    s = result.stats
    how = f"{result.method}, {s.get('sessions', 0)} Sessions, {result.seconds:.1f} s"
    if result.status == "met":
        if result.method and any("needed" in n or "prunable" in n for n in result.notes):
            return "No synchronization can be removed or weakened."
        return "Nothing to fix: the program meets the target."
    if result.status == "unmet":
        return "The test does not meet its expectations: nothing to prune (ptxmc fix repairs it)."
    if result.status == "pruned":
        n = len(result.repairs)
        proof = "proven least" if result.proven else "NOT proven least: the search stopped at its budget"
        return (f"{n} way{'s' if n != 1 else ''} to remove unneeded synchronization, saving "
                f"{result.repairs[0].cost} ({proof}; {how})")
    if result.status == "repaired":
        n = len(result.repairs)
        lead = f"{n} repair{'s' if n != 1 else ''} of least cost {result.cost}"
        if result.proven:
            return f"{lead} (proven: no cheaper repair among {result.candidates} candidate edits; {how})"
        return f"{lead} found (NOT proven minimal: the search stopped at its budget; {how})"
    if result.status == "none":
        return (f"No repair exists among the {result.candidates} candidate edits (proven; {how}): "
                "the outcome needs a change ptxmc fix does not make (see docs/fix.md)")
    if result.status == "budget":
        return f"No repair found within the budget (nothing proven; {how})"
    return "No repair could be confirmed: " + "; ".join(result.notes)


def text(result: FixResult, shown: list[Shown]) -> str:
    t = result.test
    lines = [f"Test {t.name}  ({t.path})", f"Target: {_target(result)}"]
    if result.failure:
        lines.append(f"Now: {result.failure}")
    lines += [f"note: {n}" for n in result.notes]
    lines.append(_summary(result))
    pruning = result.status == "pruned"
    for sh in shown:
        if sh.recheck != "pass" and not sh.recheck.startswith("not re-checked"):
            lines.append(f"note: a {'pruning' if pruning else 'repair'} was dropped, its re-check from the patched "
                         f"file says {sh.recheck}: " + "; ".join(e.text for e in sh.repair.edits))
    shown = [sh for sh in shown if sh.recheck == "pass" or sh.recheck.startswith("not re-checked")]
    for k, sh in enumerate(shown, 1):
        rep = sh.repair
        lines += ["", f"Pruning {k} (saves {rep.cost}):" if pruning else f"Repair {k} (cost {rep.cost}):"]
        sup = {s.edit: s for s in rep.supplies}
        for e in rep.edits:
            places = "; ".join(_place(p) for p in where(t, e))
            if e.kind == "prune":
                lines.append(f"  {_verb(e)}{' ' + e.text if _verb(e) != 'remove' else ''}  ({places})")
            else:
                lines.append(f"  {_verb(e)} {e.text}  ({places})  cost {e.cost}")
            if e.key in sup and sup[e.key].text:
                lines.append(f"      {sup[e.key].text}")
        lines.append(f"  re-check of the patched file: {sh.recheck}")
        if sh.patched is not None and sh.patched.standalone:
            lines.append(f"  (a matrix row: written as the new standalone test {sh.patched.name})")
        if sh.diff:
            lines.append(sh.diff.rstrip("\n"))
    return "\n".join(lines) + "\n"


def as_json(result: FixResult, shown: list[Shown]) -> str:
    t = result.test
    dropped = [sh for sh in shown if sh.recheck != "pass" and not sh.recheck.startswith("not re-checked")]
    shown = [sh for sh in shown if sh not in dropped]
    doc = {
        "test": t.name, "path": t.path,
        "target": {"forbidden": [e.text for e in result.target.forbidden],
                   "allowed": [e.text for e in result.target.allowed], "defined": result.target.defined,
                   "hang": {True: "allowed", False: "forbidden"}.get(result.target.hang)},
        "status": result.status, "now": result.failure, "proven": result.proven, "cost": result.cost,
        "method": result.method, "candidates": result.candidates, "seconds": round(result.seconds, 3),
        "stats": result.stats, "notes": list(result.notes) + [
            f"dropped (re-check: {sh.recheck}): " + "; ".join(e.text for e in sh.repair.edits) for sh in dropped],
        "repairs": [{
            "cost": sh.repair.cost,
            "edits": [{"kind": e.kind, "text": e.text, "cost": e.cost, "cost_key": e.cost_key,
                       "places": where(t, e),
                       "supplies": next(({"text": s.text, "blocks": s.blocks, "violation": s.violation,
                                          "edges": [list(x) for x in s.edges]}
                                         for s in sh.repair.supplies if s.edit == e.key), None)}
                      for e in sh.repair.edits],
            "diff": sh.diff, "recheck": sh.recheck,
            "standalone": bool(sh.patched and sh.patched.standalone),
        } for sh in shown],
    }
    return json.dumps(doc, indent=2) + "\n"


def inserted(e: Edit) -> bool:
    return any(isinstance(c, Insert) for c in e.changes)
