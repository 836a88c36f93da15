"""What `ptxmc fix` prints: each repair with its cost, its edits (where, what, the edge each one
supplies), the unified diff of the YAML, and the re-check of the patched file; as text or JSON.
`verify` loads the patched YAML text back and judges the fixed test from scratch, so what is
printed is what was checked."""
from __future__ import annotations

import json
from dataclasses import dataclass, replace

from ..ast import LitmusTest
from ..front.litmus import load_text
from ..verdict.check import check_test
from .edits import Delete, Edit, Insert, Replace
from .fix import FixResult, Repair, target_test
from .yamlpatch import Patched, Unpatchable, diff, patch, respelled


@dataclass(frozen=True)
class Shown:
    repair: Repair
    patched: Patched | None
    diff: str
    recheck: str            # pass | fail: ... | not re-checked: ...
    unwritten: str = ""     # pass without `patched`: why the repair cannot be written into the file


def verify(result: FixResult, original: str | None, model, options=frozenset(), engine: str = "z3") -> list[Shown]:
    """Each repair with its patched file, re-checked from the patched text: the text is loaded
    back, its fixed test must be the repaired test (every instruction, location, key; names,
    docs and the spelling of instructions aside), every other test of the file must load as
    before, and the fixed test must meet the target."""
    out = []
    before = None
    for rep in result.repairs:
        if original is None:
            out.append(Shown(rep, None, "", "not re-checked from YAML: the test has no file"))
            continue
        what = "pruned" if result.status == "pruned" else "fixed"
        why = f"{what} by ptxmc fix{' --prune' if what == 'pruned' else ''}: " + _edits_text(result.test, rep)
        try:
            p = patch(original, result.test, rep.edits, rep.test, why)
        except Unpatchable as e:
            r = check_test(rep.test, model, None, options, engine)
            out.append(Shown(rep, None, "", _status(r), f"the file's text cannot take it ({e})"))
            continue
        if before is None:
            before = load_text(original, result.test.path)
        d = diff(original, p.text, result.test.path)
        loaded = load_text(p.text, result.test.path)
        bad = _compare(before, loaded, result, rep, p)
        if bad:
            out.append(Shown(rep, p, d, f"fail: the patched file {bad}"))
            continue
        fixed = next(t for t in loaded if isinstance(t, LitmusTest) and t.name == p.name)
        r = check_test(target_test(fixed, result.target), model, None, options, engine)
        out.append(Shown(rep, p, d, _status(r)))
    return out


def _status(r) -> str:
    return "pass" if r.ok else f"fail: {r.status} {r.message}".strip()     # ok: pass, or run (no UB alone)


def _compare(before: list, after: list, result: FixResult, rep: Repair, p: Patched) -> str:
    """What is wrong with the patched file's tests ('': nothing): see `verify`."""
    errors = [e for e in after if not isinstance(e, LitmusTest)]
    if len(errors) != sum(not isinstance(e, LitmusTest) for e in before):
        first = next((e for e in errors if str(e) not in {str(x) for x in before}), errors[0] if errors else None)
        return f"does not load: {first}" if first is not None else "loads an error fewer than the original"
    tests = {t.name: t for t in after if isinstance(t, LitmusTest)}
    for t in before:
        if not isinstance(t, LitmusTest) or (t.name == p.name and not p.standalone):
            continue
        if tests.pop(t.name, None) != t:
            return f"changes the test {t.name}, which the repair does not touch"
    fixed = tests.pop(p.name, None)
    if fixed is None or tests:
        return f"does not hold the fixed test {p.name} alone besides the file's tests"
    if _expects(fixed) != _expects(result.test):
        return "changes the test's expectations"
    if _norm(target_test(fixed, result.target)) != _norm(rep.test):
        return "does not hold the repaired test (it differs from the edited one)"
    return ""


def _expects(t: LitmusTest):
    return sorted((e.kind, e.text, repr(e.cond)) for e in t.expectations), t.expect_undefined, t.expect_hang


def _norm(t: LitmusTest) -> LitmusTest:
    """A test without what a copy or a patch may change: names, doc, where it is, the spelling of
    its instructions (a register operand stays a register in the text)."""
    return replace(t, name="", doc="", path="", matrix_row=None,
                   threads=tuple(replace(th, code=tuple(replace(i, text="") for i in th.code)) for th in t.threads))


def where(test, e: Edit, lines: list[str] | None = None) -> list[dict]:
    """Where each change of an edit goes, as the user's file numbers it. With the file's `lines`,
    each place also carries the `//` comment that ends the neighbouring instruction's line, as
    written: a skeleton of `ptxmc extract` names there the PTX line the instruction came from
    (`// L199: mbarrier.arrive...`), so a repair reads back onto the compiler's PTX."""
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
        out[-1]["comment"] = _comment(lines, out[-1]["line"], out[-1]["instruction"])
    return out


def _comment(lines: list[str] | None, line: int | None, instruction: str) -> str | None:
    """The `//` comment after `instruction` on the file's line `line`, if any."""
    if not lines or not line or not 0 < line <= len(lines):
        return None
    text = lines[line - 1]
    k = text.find(instruction) if instruction else -1
    if k < 0 or "//" not in text[k + len(instruction):]:
        return None
    return text[k + len(instruction):].split("//", 1)[1].strip() or None


def source_lines(path: str) -> list[str] | None:
    """The lines of a test's file, for the comments `where` shows (None: it cannot be read)."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().splitlines()
    except (OSError, UnicodeDecodeError, TypeError):
        return None


def place(p: dict) -> str:
    """One place of `where`, in words: 'w4_7, before line 55 'mbarrier.arrive...' // L199: ...'."""
    line = f"line {p['line']} " if p["line"] else ""
    note = f" // {p['comment']}" if p.get("comment") else ""
    if p["at"] in ("replaces", "removes"):
        return f"{p['thread']}, {line}'{p['instruction']}'{note}"
    return f"{p['thread']}, {p['at']} {line}'{p['instruction']}'{note}".replace("  ", " ")


def written(test, e: Edit) -> str:
    """An edit's new instruction as the file will spell it: a strengthened or weakened one keeps
    its operands as written (`[%r3]`, where e.text names the location the register holds)."""
    if len(e.changes) == 1 and isinstance(e.changes[0], Replace):
        c = e.changes[0]
        old = next(t for t in test.threads if t.name == c.thread).code[c.index]
        if c.instr.operands == old.operands and c.instr.predicate == old.predicate:
            return respelled(old.text, c.instr.text)
    return e.text


def _edits_text(test, rep: Repair) -> str:
    """What a repair does, in words: 'remove fence.sc.sys; strengthen to ...'."""
    threads = {t.name: t for t in test.threads}
    out = []
    for e in rep.edits:
        if e.kind == "prune" and isinstance(e.changes[0], Delete):
            c = e.changes[0]
            out.append(f"remove {threads[c.thread].code[c.index].text}")
        else:
            out.append(f"{_verb(e)} {written(test, e)}".strip())
    return "; ".join(out)


def _verb(e: Edit) -> str:
    if e.kind == "prune":
        return "remove" if isinstance(e.changes[0], Delete) else "weaken to"
    return {"strengthen": "strengthen to", "tighten": "tighten to", "barrier": "insert barrier",
            "restore": "keep"}.get(e.kind, "change to" if all(isinstance(c, Replace) for c in e.changes) else "insert")


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
    why = "some candidate sets could not be judged" if s.get("undecided") else "the search stopped at its budget"
    if result.status == "repaired":
        n = len(result.repairs)
        lead = f"{n} repair{'s' if n != 1 else ''} of least cost {result.cost}"
        if result.proven:
            return f"{lead} (proven: no cheaper repair among {result.candidates} candidate edits; {how})"
        return f"{lead} found (NOT proven minimal: {why}; {how})"
    if result.status == "none" and not result.proven:
        return f"No repair found among the {result.candidates} candidate edits (NOT proven: {why}; {how})"
    if result.status == "none":
        return (f"No repair exists among the {result.candidates} candidate edits (proven; {how}): "
                "the outcome needs a change ptxmc fix does not make (see docs/fix.md)")
    if result.status == "unknown":
        return "Unknown: ptxmc fix repairs only what it can judge, and the target is not decided (see the note)"
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
    src = source_lines(t.path) if shown else None
    for sh in shown:
        if sh.recheck != "pass" and not sh.recheck.startswith("not re-checked"):
            lines.append(f"note: a {'pruning' if pruning else 'repair'} was dropped, its re-check from the patched "
                         f"file says {sh.recheck}: " + _edits_text(t, sh.repair))
    shown = [sh for sh in shown if sh.recheck == "pass" or sh.recheck.startswith("not re-checked")]
    for k, sh in enumerate(shown, 1):
        rep = sh.repair
        lines += ["", f"Pruning {k} (saves {rep.cost}):" if pruning else f"Repair {k} (cost {rep.cost}):"]
        sup = {s.edit: s for s in rep.supplies}
        for e in rep.edits:
            places = "; ".join(place(p) for p in where(t, e, src))
            if e.kind == "prune":
                lines.append(f"  {_verb(e)}{' ' + written(t, e) if _verb(e) != 'remove' else ''}  ({places})")
            else:
                lines.append(f"  {_verb(e)} {written(t, e)}  ({places})  cost {e.cost}")
            if e.key in sup and sup[e.key].text:
                lines.append(f"      {sup[e.key].text}")
            elif e.why:
                lines.append(f"      {e.why}")
        if sh.unwritten:
            lines.append(f"  re-check of the fixed test: {sh.recheck}")
            lines.append(f"  not written as a diff: {sh.unwritten}")
        else:
            lines.append(f"  re-check of the patched file: {sh.recheck}")
        if sh.patched is not None and sh.patched.standalone:
            lines.append(f"  (written as the new test {sh.patched.name}, after the file's tests: {sh.patched.how})")
        if sh.diff:
            lines.append(sh.diff.rstrip("\n"))
    return "\n".join(lines) + "\n"


def as_json(result: FixResult, shown: list[Shown]) -> str:
    t = result.test
    dropped = [sh for sh in shown if sh.recheck != "pass" and not sh.recheck.startswith("not re-checked")]
    shown = [sh for sh in shown if sh not in dropped]
    src = source_lines(t.path) if shown else None
    doc = {
        "test": t.name, "path": t.path,
        "target": {"forbidden": [e.text for e in result.target.forbidden],
                   "allowed": [e.text for e in result.target.allowed], "defined": result.target.defined,
                   "hang": {True: "allowed", False: "forbidden"}.get(result.target.hang)},
        "status": result.status, "now": result.failure, "proven": result.proven, "cost": result.cost,
        "method": result.method, "candidates": result.candidates, "seconds": round(result.seconds, 3),
        "stats": result.stats, "notes": list(result.notes) + [
            f"dropped (re-check: {sh.recheck}): " + _edits_text(t, sh.repair) for sh in dropped],
        "repairs": [{
            "cost": sh.repair.cost,
            "edits": [{"kind": e.kind, "text": e.text, "written": written(t, e), "cost": e.cost, "cost_key": e.cost_key,
                       "places": where(t, e, src), "why": e.why or None,
                       "supplies": next(({"text": s.text, "blocks": s.blocks, "violation": s.violation,
                                          "edges": [list(x) for x in s.edges]}
                                         for s in sh.repair.supplies if s.edit == e.key), None)}
                      for e in sh.repair.edits],
            "diff": sh.diff, "recheck": sh.recheck,
            "standalone": bool(sh.patched and sh.patched.standalone),
            "written_as": sh.patched.name if sh.patched else None,
            "unwritten": sh.unwritten or None,
        } for sh in shown],
    }
    return json.dumps(doc, indent=2) + "\n"


def inserted(e: Edit) -> bool:
    return any(isinstance(c, Insert) for c in e.changes)
