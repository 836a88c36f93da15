"""`TestIR` -> ptxmc YAML text, deterministically (the same test gives the same bytes).

The layout is the bundled suites' own: name, doc, source, arch, memory, threads (at, code),
expect. Strings are single-quoted YAML (so instruction text and herd conditions with '\\'
stay readable); a string with a line break or a non-printable character is double-quoted.
Notes about the conversion are written as comments at the top of the file.
"""
from __future__ import annotations

import json
import re

from .controlflow import to_code
from .model import Code, TestIR

FORMAT_TITLES = {
    "herd": "herd litmus format",
    "dat3m": "Dat3M PTX litmus format",
    "mixedproxy": "NVlabs/mixedproxy .test format",
}


def quote(s: str) -> str:
    if "\n" in s or not s.isprintable():
        return json.dumps(s, ensure_ascii=False)
    return "'" + s.replace("'", "''") + "'"


_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "y", "n"}


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_value(x)}" for k, x in v.items()) + "}"
    s = str(v)
    return s if _PLAIN.fullmatch(s) and s.lower() not in _YAML_WORDS else quote(s)


def stated(t: TestIR) -> bool:
    return bool(t.allowed or t.forbidden)


def doc_of(t: TestIR) -> str:
    parts = [t.doc.strip()] if t.doc.strip() else []
    for cond in t.unstated:
        parts.append(f"The file asks whether '{cond}' can happen and states no verdict: "
                     f"ptxmc check <this file>::{t.name} '{cond}' answers it.")
    return "\n".join(parts)


def source_of(t: TestIR) -> str:
    claim = ("the expectations are the source file's claim, not derived from the PTX specification"
             if stated(t) else "the file states no expectation")
    cites = f"; the file cites: {t.cites}" if t.cites else ""
    return f"Imported from {t.path} ({FORMAT_TITLES[t.fmt]}) by ptxmc import; {claim}{cites}"


def to_yaml(t: TestIR) -> str:
    """The YAML text of one test (Unconvertible if a thread has control flow)."""
    return to_yaml_mapped(t)[0]


def to_yaml_mapped(t: TestIR) -> tuple[str, dict[int, Code]]:
    """The YAML text, and for each YAML line holding an instruction the `Code` it came from (so
    that an error of ptxmc's loader can name the source line)."""
    out = [f"# Imported by 'ptxmc import --from {t.fmt}' from {t.path}."]
    out += [f"# note: {' '.join(n.split())}" for n in t.notes]
    out.append(f"name: {quote(t.name)}")
    doc = doc_of(t)
    if doc:
        out.append(f"doc: {quote(doc)}")
    out.append(f"source: {quote(source_of(t))}")
    if t.arch:
        out.append(f"arch: {quote(t.arch)}")
    if t.memory:
        out.append("memory:")
        out += [f"  {name}: {_value(v)}" for name, v in t.memory]
    out.append("threads:")
    where: dict[int, Code] = {}
    for th in t.threads:
        code = to_code(th.body, t.path)
        out += [f"  {th.name}:", f"    at: {th.at}"]
        if code:
            out.append("    code:")
            for c in code:
                out.append(f"      - {quote(c.text)}")
                where[len(out)] = c
        else:
            out.append("    code: []")
    if stated(t):
        out.append("expect:")
        for key, conds in (("allowed", t.allowed), ("forbidden", t.forbidden)):
            if conds:
                out.append(f"  {key}:")
                out += [f"    - {quote(c)}" for c in conds]
    return "\n".join(out) + "\n", where
