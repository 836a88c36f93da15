"""What a model's text says about its own definitions, for explanations that quote the model
instead of restating it: the members of a definition that is a union of names (`let ppbc =
ppbc_generic | ppbc_sameproxy | ...`) and the one-line comment on a definition's line, its caption
(`let ppbc_generic = ...   (* same address, generic proxy *)`).
"""
from __future__ import annotations

import re
from functools import lru_cache

from .ast import Binary, Let, Var
from .interp import Model
from .source import _blank_comments


def binding(model: Model, name: str):
    """The last `let` binding of `name` in the model, or None."""
    found = None
    for st in model.statements:
        if isinstance(st, Let):
            for b in st.bindings:
                if b.name == name:
                    found = b
    return found


def members(model: Model, name: str) -> tuple[str, ...]:
    """The names a definition is the union of, in the model's order (empty: not such a union)."""
    b = binding(model, name)
    if b is None:
        return ()
    out, stack = [], [b.expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Binary) and e.op == "|":
            stack += (e.right, e.left)
        elif isinstance(e, Var):
            out.append(e.name)
        else:
            return ()
    return tuple(out)


def caption(model: Model, name: str) -> str:
    """The comment on the line that defines `name`, or an indented one that opens the next line
    ('' if none)."""
    b = binding(model, name)
    if b is None or b.loc is None or not b.loc.path:
        return ""
    return _captions(b.loc.path).get(b.loc.line, "")


@lru_cache(maxsize=16)
def _captions(path: str) -> dict[int, str]:
    """Line of a `let` -> the text of the comment after it on that line, or of an indented comment
    that opens the next line."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return {}
    _, spans = _blank_comments(text, path)
    out: dict[int, str] = {}
    for start, end in spans:
        line_start = text.rfind("\n", 0, start) + 1
        before, line = text[line_start:start], text.count("\n", 0, start) + 1
        if not re.match(r"\s*let\b", before):
            prev_start = text.rfind("\n", 0, max(line_start - 1, 0)) + 1
            if not (before and before.isspace() and line_start and text.startswith("let", prev_start)):
                continue
            line -= 1
        out.setdefault(line, " ".join(text[start + 2:end - 2].split()))
    return out
