"""`ptxmc export --to herd`: ptxmc tests -> herd-layout PTX litmus files (one per test), for the
generic subset; every other test is reported with the reason.

The generic subset: ld, st, atom, red, fence (not the restricted forms), membar, bar/barrier
sync and arrive, and the register instructions (mov, add, sub, mul, and, or, xor); global memory
only (no shared or tensor memory, aliases, views, mbarriers or tensor maps); no awaits (`== v`:
herd's `filter` is not the same, it adds no dependencies), no guards, no `undefined:`
expectation, and at least one expectation.

What is written (`ptxmc import --from herd` reads it back; Dat3M reads files that use only its
placement form and the instructions its grammar has):

    PTX NAME
    "the doc, on one line"
    (* ptxmc: source: the test's source *)
    (* ptxmc: arch: sm_90 *)
    (* ptxmc: forbidden: C *)          one comment per expectation, exactly
    (* ptxmc: allowed: C *)
    { x=0; y=0; }                      every location and its initial value
     P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ; threads renamed P0, P1, ... in order; `cluster K` is added
                                       when the test names clusters, `warp W` when two threads
                                       share a CTA or a warp is not 0 (ptxmc's extensions)
     st.weak [x], 1 | ld.weak r0, [y] ;
    ~exists (F1 \\/ F2)                  herd's condition: the forbidden outcomes, or else
                                       `exists (A1)` for the first allowed one

herd and Dat3M read only the condition line; the comments keep every expectation for ptxmc.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..ast import And, Cond, Eq, EqRef, LitmusTest, Not, Or, RegRef
from ..front.conditions import show
from ..errors import CheckerError, LitmusError, SourceLoc
from .model import Skipped
from ..textsafe import printable

GENERIC = ("ld", "st", "atom", "red", "fence", "membar", "bar", "barrier", "mov", "add", "sub", "mul", "and",
           "or", "xor")
REPORT = "export-report.txt"
_SPECIAL = {"alias_of": "an alias (alias_of)", "view": "a view (texture_of, surface_of, constant_of)",
            "mbarrier": "an mbarrier", "tensormap": "a tensor map", "offset_of": "a cell at the offset of another"}


@dataclass(frozen=True)
class Exported:
    name: str
    path: str          # the test's file
    out: str           # the litmus file, relative to the output folder
    text: str


@dataclass(frozen=True)
class ExportRun:
    exported: tuple[Exported, ...]
    skipped: tuple[Skipped, ...]

    def report(self) -> str:
        lines = [f"ptxmc export --to herd: {len(self.exported)} test{'s' if len(self.exported) != 1 else ''} "
                 f"written, {len(self.skipped)} not in the generic subset or malformed", ""]
        if self.exported:
            lines.append("written:")
            lines += [printable(f"  {e.name} ({e.path}) -> {e.out}") for e in self.exported]
            lines.append("")
        if self.skipped:
            lines.append("not written (the reason):")
            lines += [f"  {s.line()}" for s in self.skipped]
            lines.append("")
        return "\n".join(lines)


def outside_subset(test: LitmusTest) -> CheckerError | None:
    """Why the test is outside the generic subset (an error at the offending place), or None."""
    def no(msg, where):
        return LitmusError(msg, where or test.where)

    if test.expect_undefined is not None:
        return no("an 'undefined:' expectation: a herd file states outcome conditions only", test.where)
    if not test.expectations:
        return no("no expectation: a herd file needs a condition", test.where)
    for m in test.memory:
        special = [k for k in ("alias_of", "view", "mbarrier", "tensormap", "offset_of") if getattr(m, k)]
        if m.space != "global" or special:
            what = f"{m.space} memory" if m.space != "global" else _SPECIAL[special[0]]
            return no(f"'{m.name}' is {what}: the generic subset has plain global locations only", m.where)
    if len(test.kernels) > 1:
        return no("several kernels (kernels:): a herd file is one launch", test.where)
    for t in test.threads:
        for i in t.code:
            if any(str(getattr(o, "name", "")).startswith("%") for o in i.operands):
                return no("a special register: its value comes from the test's positions", i.where)
            if i.family in ("ld", "st") and any(i.quals.get(g) for g in
                                                ("cop", "l1_evict", "l2_evict", "cache_hint", "prefetch_size", "nc")):
                return no("a cache hint or ld.global.nc", i.where)
            if i.await_value is not None:
                return no("an await (== v): herd's filter is not the same (it adds no dependencies)", i.where)
            if i.predicate:
                return no("a guarded instruction", i.where)
            key, q = i.family, i.quals          # validated when the test was loaded
            if key not in GENERIC:
                return no(f"{key} is outside the generic subset (ld, st, atom, red, fence, membar, bar, "
                          "register instructions)", i.where)
            if key == "fence" and q.get("restrict"):
                return no("a restricted fence (shared memory only)", i.where)
            if key in ("bar", "barrier") and q.get("mode") == "red":
                return no("bar.red (its result is not modelled)", i.where)
            if q.get("space") not in (None, "global"):
                return no(f".{q['space']} accesses", i.where)
    return None


def to_herd(test: LitmusTest) -> str:
    """The herd-layout text of a test in the generic subset."""
    from ..isa.syntax import render

    names = {t.name: f"P{k}" for k, t in enumerate(test.threads)}
    clusters = any(t.position.cluster is not None for t in test.threads)
    ctas = [t.position.cta_key() for t in test.threads]
    warps = len(set(ctas)) < len(ctas) or any(t.position.warp for t in test.threads)
    out = [f"PTX {test.name}"]
    if test.doc.strip():
        out.append('"' + " ".join(test.doc.split()).replace('"', "'").replace("(*", "( *") + '"')
    if test.source:
        out.append(_comment(f"source: {test.source}"))
    if test.arch:
        out.append(_comment(f"arch: {test.arch}"))
    renamed = {e: _rename(e.cond, names) for e in test.expectations}
    for e in test.expectations:
        out.append(_comment(f"{e.kind}: {show(renamed[e])}"))
    if any(n != names[n] for n in names):
        out.append(_comment("threads: " + ", ".join(f"{n} is {p}" for n, p in names.items() if n != p)))
    out.append("{")
    out += [f"{m.name}={m.init};" for m in test.memory]
    out.append("}")
    header = []
    for t in test.threads:
        p = t.position
        place = f"cta {p.cta}" + (f",cluster {p.cluster}" if clusters else "") + f",gpu {p.gpu}" + \
            (f",warp {p.warp}" if warps else "")
        header.append(f"{names[t.name]}@{place}")
    code = [[_instruction(i, render) for i in t.code] for t in test.threads]
    depth = max((len(c) for c in code), default=0)
    rows = [header] + [[c[k] if k < len(c) else "" for c in code] for k in range(depth)]
    widths = [max(len(r[j]) for r in rows) for j in range(len(header))]
    out += [" " + " | ".join(cell.ljust(w) for cell, w in zip(r, widths)) + " ;" for r in rows]
    forbidden = [renamed[e] for e in test.expectations if e.kind == "forbidden"]
    allowed = [renamed[e] for e in test.expectations if e.kind == "allowed"]
    if forbidden:
        cond = forbidden[0] if len(forbidden) == 1 else Or(tuple(forbidden))
        out.append(f"~exists ({show(cond)})")
    else:
        out.append(f"exists ({show(allowed[0])})")
    return "\n".join(out) + "\n"


def _instruction(i, render) -> str:
    """PTX text from the parsed instruction (the YAML's own spelling, comments and `;` dropped)."""
    ops = ", ".join(render(o) for o in i.operands)
    return ".".join((i.op,) + i.qualifiers) + (" " + ops if ops else "")


def _comment(text: str) -> str:
    return "(* ptxmc: " + " ".join(text.split()).replace("*)", "* )").replace("(*", "( *") + " *)"


def _rename(c: Cond, names: dict[str, str]) -> Cond:
    def ref(r):
        return RegRef(names[r.thread], r.reg) if isinstance(r, RegRef) else r
    if isinstance(c, Eq):
        return Eq(ref(c.lhs), c.value)
    if isinstance(c, EqRef):
        return EqRef(ref(c.lhs), ref(c.rhs))
    if isinstance(c, Not):
        return Not(_rename(c.arg, names))
    if isinstance(c, (And, Or)):
        return type(c)(tuple(_rename(a, names) for a in c.args))
    return c


def export_paths(paths) -> ExportRun:
    """Export every test under `paths` in the generic subset (nothing is written)."""
    from ..front.litmus import load_paths

    exported, skipped, taken = [], [], set()
    for item in load_paths(paths):
        if isinstance(item, LitmusError):
            where = item.where or SourceLoc("?", 0)
            skipped.append(Skipped(where.path, "", item))
            continue
        why = outside_subset(item)
        if why is not None:
            skipped.append(Skipped(item.path, item.name, why))
            continue
        # never a hidden file (`..`, `.x`): import skips those, and `ls` hides them
        stem = re.sub(r"[^\w.+=-]", "_", item.name).lstrip(".") or "test"
        out, n = f"{stem}.litmus", 2
        while out.lower() in taken:
            out, n = f"{stem}-{n}.litmus", n + 1
        taken.add(out.lower())
        exported.append(Exported(item.name, item.path, out, to_herd(item)))
    return ExportRun(tuple(exported), tuple(skipped))


def write(run: ExportRun, out_dir) -> str:
    from pathlib import Path

    from .driver import write_atomic

    out = Path(out_dir)
    for e in run.exported:
        write_atomic(out / e.out, e.text)
    write_atomic(out / REPORT, run.report())
    return str(out / REPORT)
