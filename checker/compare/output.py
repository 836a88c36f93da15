"""`ptxmc diff` output: text (the differences, then a summary line) and JSON (every test)."""
from __future__ import annotations

import json

from ..resources import shown
from ..textsafe import printable
from .diff import TestDiff
from .sides import Side


def summary(diffs: list[TestDiff], total: int) -> dict:
    d = [x for x in diffs if x.differences]
    every = [y for x in diffs for y in x.differences]
    return {"tests": total, "run": len(diffs), "differ": len(d), "differences": len(every),
            "only_left": sum(y.allowed_by == "left" for y in every),
            "only_right": sum(y.allowed_by == "right" for y in every),
            "not_compared": sum(not x.compared for x in diffs)}


def text(diffs: list[TestDiff], left: Side, right: Side, total: int, interrupted: bool = False) -> str:
    label = {"left": left.label, "right": right.label}
    lines = [f"left: {printable(left.label)} ({printable(shown(left.path))})",
             f"right: {printable(right.label)} ({printable(shown(right.path))})"]
    for x in diffs:
        where = f"{printable(x.name)}  ({printable(x.path)})"
        if x.differences:
            lines.append(f"DIFF  {where}")
            for y in x.differences:
                lines.append(f"  {y.kind} {printable(y.text.rstrip(';'))}: allowed by {printable(label[y.allowed_by])} only; "
                             f"witness under {printable(label[y.allowed_by])}:")
                lines += [printable(w) for w in y.witness.rstrip("\n").splitlines()]
        if not x.compared:
            lines.append(f"SKIP  {where}: not compared: {printable(x.message)}")
    s = summary(diffs, total)
    lines.append(f"ptxmc diff: {s['run']} of {s['tests']} tests: {s['differ']} differ "
                 f"({s['only_left']} allowed only by {printable(left.label)}, "
                 f"{s['only_right']} only by {printable(right.label)}), {s['not_compared']} not compared"
                 + (" (interrupted)" if interrupted else ""))
    return "\n".join(lines) + "\n"


def to_json(diffs: list[TestDiff], left: Side, right: Side, total: int, interrupted: bool = False) -> str:
    def side(s: Side) -> dict:
        return {"label": s.label, "model": s.name, "path": s.path, "options": list(s.options)}

    doc = {"schema": 1, "tool": "ptxmc", "kind": "diff", "left": side(left), "right": side(right),
           "summary": summary(diffs, total), "interrupted": interrupted,
           "tests": [{"name": x.name, "path": x.path,
                      "matrix_row": dict(x.matrix_row) if x.matrix_row else None,
                      "left": x.left, "right": x.right, "compared": x.compared, "message": x.message,
                      "differences": [{"kind": y.kind, "text": y.text, "allowed_by": y.allowed_by,
                                       "witness": y.witness} for y in x.differences]}
                     for x in diffs]}
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


FORMATS = {"text": text, "json": to_json}
