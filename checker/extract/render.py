"""A Skeleton -> litmus-test YAML text (docs/format.md), the role table, and mutants.

Each thread is a `ptx: |` block in which every instruction ends with `// L<n>: <PTX text>`, the
line of the `.ptx` file it came from; a finding's witness names those instructions, so it maps
back to the kernel. Mutants (`--mutants`) are copies of the skeleton with one synchronization
operation changed: a proxy fence dropped, a wait's parity flipped, an expect_tx shortened by one
box, an arrive dropped. Each keeps the as-compiled expectations, so a mutant that fails them is
*caught*: the operation it changed is load-bearing.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..limits import Limits
from ..repair.candidates import ROLE_WARPS
from .skeleton import BOX, Skeleton


@dataclass(frozen=True)
class Mutant:
    name: str
    what: str                          # one line: the change and its PTX line
    role: str
    index: int                         # the line's index in the role
    replacement: str | None            # None: the line is dropped


def _q(s: str) -> str:
    return json.dumps(s, ensure_ascii=True)


def short_name(kernel: str) -> str:
    """The kernel's name for file and test names: a mangled C++ name (CUTLASS's runs to 1,500
    characters) is cut to 48 and told apart from others by a hash of the whole."""
    if len(kernel) <= 64:
        return kernel
    import hashlib
    return f"{kernel[:48]}-{hashlib.sha1(kernel.encode()).hexdigest()[:8]}"


def test_name(sk: Skeleton, suffix: str = "") -> str:
    return re.sub(r"[^\w+.-]", "_", f"X-{short_name(sk.kernel)}{suffix}")


def yaml_text(sk: Skeleton, mutants: list[Mutant] = (), hang: bool = False) -> str:
    body = [""] + _test(sk, "", "", None, hang)
    for m in mutants:
        body.append("")
        body += _test(sk, "-" + m.name, f"Mutant: {m.what}", m, hang)
    body_text = "\n".join(body) + "\n"
    flags = "--limit events=1000 --limit instructions=256"
    text = _header(sk, flags) + body_text
    size = len(text.encode())
    if size > Limits().yaml_bytes:      # a big kernel's mutants: the size `ptxmc run` must allow
        text = _header(sk, f"{flags} --limit yaml_bytes={-(-(size + 100) // 1_000_000) * 1_000_000}") + body_text
    return text


def _header(sk: Skeleton, flags: str) -> str:
    out = [f"# ptxmc extract: synchronization skeleton of kernel {sk.kernel} in {sk.path}",
           f"# target {sk.target}; block {sk.block[0]}x{sk.block[1]}x{sk.block[2]}; "
           f"{sk.cluster} CTA(s) per cluster; loops unrolled {sk.iterations} times.",
           "# Every instruction ends with the PTX line it came from. Regenerate instead of editing.",
           f"# Check: ptxmc run THIS_FILE {flags} (a real kernel's skeleton has "
           "more events and instructions than the default limits)."]
    out += [f"# {n}" for n in dict.fromkeys(sk.notes)]
    out.append(ROLE_WARPS + " ".join(f"{r.name}={','.join(map(str, r.warps))}" for r in sk.roles))
    return "\n".join(out) + "\n"



def _test(sk: Skeleton, suffix: str, doc: str, m: Mutant | None, hang: bool) -> list[str]:
    doc = doc or (f"The synchronization of kernel {sk.kernel} as compiled: one litmus thread per role, "
                  f"loops unrolled {sk.iterations} times, data path dropped.")
    out = [f"- name: {test_name(sk, suffix)}",
           f"  doc: {_q(doc)}",
           f"  source: {_q(f'ptxmc extract of {sk.path} (kernel {sk.kernel}); PTX ISA 9.4 for each instruction')}",
           f"  arch: {sk.target.split(',')[0].strip() or 'sm_90'}",
           "  memory:"]
    for name, decl in sk.memory.items():
        out.append(f"    {name}: {_flow(decl)}")
    out.append("  threads:")
    for r in sk.roles:
        pos = f"gpu0.cluster0.cta{r.rank}" if sk.cluster > 1 else "gpu0.cta0"
        out.append(f"    {r.name}:")
        out.append(f"      at: {pos}.warp{r.warps[0]}")
        out.append("      ptx: |")
        for i, ln in enumerate(r.lines):
            text = ln.text
            if m is not None and m.role == r.name and m.index == i:
                if m.replacement is None:
                    out.append(f"        // (mutant: dropped) L{ln.src_line}: {_clip(ln.src_text)}")
                    continue
                text = m.replacement
            out.append(f"        {text:<72} // L{ln.src_line}: {_clip(ln.src_text)}")
    exp = ["undefined: false"] + (["hang: forbidden"] if hang else [])
    if sk.checks:
        exp.append("forbidden: [" + ", ".join(_q(c) for c in sk.checks) + "]")
    out.append("  expect: {" + ", ".join(exp) + "}")
    return out


def _clip(s: str) -> str:
    s = " ".join(s.split())
    return s if len(s) <= 110 else s[:107] + "..."


def _flow(d) -> str:
    if isinstance(d, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in d.items()) + "}"
    if isinstance(d, list):
        return "[" + ", ".join(_flow(v) for v in d) + "]"
    if isinstance(d, str):
        return d
    if isinstance(d, int) and d >= 1 << 64:
        return hex(d)           # a buffer of boxes: one value per 16 bytes, readable in hex
    return str(d)


def mutants(sk: Skeleton) -> list[Mutant]:
    out: list[Mutant] = []
    for r in sk.roles:
        seen: dict[int, int] = {}
        for i, ln in enumerate(r.lines):
            # named by the PTX line and its occurrence in the role (the unrolled iteration)
            seen[ln.src_line] = seen.get(ln.src_line, 0) + 1
            tag = f"L{ln.src_line}"
            i_name = seen[ln.src_line]
            if ln.kind == "fence" and ".proxy" in ln.text:
                out.append(Mutant(f"{r.name}-{tag}-{i_name}-no-proxy-fence", f"drop '{ln.text}' ({r.name}, PTX line {ln.src_line})",
                                  r.name, i, None))
            elif ln.kind == "mb_wait":
                p = ln.mutable["parity"]
                new = re.sub(r", (\d) == 1$", f", {1 - p} == 1", ln.text)
                out.append(Mutant(f"{r.name}-{tag}-{i_name}-flip-parity", f"wait for parity {1 - p} instead of {p} "
                                  f"({r.name}, PTX line {ln.src_line})", r.name, i, new))
            elif ln.kind in ("mb_arrive", "mb_expect_tx") and "tx" in ln.mutable:
                tx = ln.mutable["tx"]
                new = re.sub(rf"\b{tx}\b", str(tx - BOX), ln.text, count=1)
                out.append(Mutant(f"{r.name}-{tag}-{i_name}-short-tx", f"expect_tx {tx - BOX} instead of {tx} bytes "
                                  f"({r.name}, PTX line {ln.src_line})", r.name, i, new))
            if ln.kind == "cluster_barrier" and "arrive" in ln.text and "relaxed" not in ln.text:
                out.append(Mutant(f"{r.name}-{tag}-{i_name}-relaxed-arrive", f"'{ln.text}' made .relaxed (no release) "
                                  f"({r.name}, PTX line {ln.src_line})", r.name, i,
                                  ln.text.replace("arrive", "arrive.relaxed", 1)))
            if ln.kind == "tc_commit":
                out.append(Mutant(f"{r.name}-{tag}-{i_name}-no-commit", f"drop '{ln.text}' ({r.name}, PTX line "
                                  f"{ln.src_line})", r.name, i, None))
            if ln.kind == "mb_arrive":
                out.append(Mutant(f"{r.name}-{tag}-{i_name}-no-arrive", f"drop the arrive '{ln.text}' "
                                  f"({r.name}, PTX line {ln.src_line})", r.name, i, None))
    return out


def role_table(sk: Skeleton) -> str:
    rows = [f"kernel {sk.kernel}: block {sk.block[0]}x{sk.block[1]}x{sk.block[2]}, {sk.cluster} CTA(s) per cluster, "
            f"{len(sk.roles)} role(s), loops unrolled {sk.iterations} times",
            f"{'role':<16} {'threads':>7}  {'warps':<10} {'setmaxnreg':<22} waits on / signals"]
    for r in sk.roles:
        waits = sorted({_name(sk, e.get('mb')) for e in r.trace.events if e.kind == "mb_wait"})
        sigs = sorted({_name(sk, e.get('mb')) for e in r.trace.events if e.kind in ("mb_arrive", "tma_load", "tc_commit")})
        bars = sorted({str(e.get('id')) for e in r.trace.events if e.kind == "barrier"})
        reg = ", ".join(t.split()[0].split(".")[1] + " " + t.split()[-1] for _, t in r.trace.maxnreg) or "-"
        ws = f"{r.warps[0]}-{r.warps[-1]}" if len(r.warps) > 1 else str(r.warps[0])
        what = []
        if waits:
            what.append("waits " + ",".join(waits))
        if sigs:
            what.append("signals " + ",".join(sigs))
        if bars:
            what.append("bar " + ",".join(bars))
        rows.append(f"{r.name:<16} {r.size:>7}  {ws:<10} {reg:<22} {'; '.join(what) or '-'}")
        for line, a in r.trace.assumptions:
            rows.append(f"{'':<16} assumed at L{line}: {a}")
        seen = set(r.trace.assumptions)
        for tids, assumptions in r.folded:       # what the threads folded into it decided otherwise
            who = f"thread {tids[0]}" if len(tids) == 1 else f"{len(tids)} threads {tids[0]}..{tids[-1]}"
            for x in assumptions:
                if x not in seen:
                    seen.add(x)
                    rows.append(f"{'':<16} assumed at L{x[0]} ({who}, folded in): {x[1]}")
        for what_, n in sorted(r.trace.dropped.items()):
            rows.append(f"{'':<16} dropped: {n} x {what_}")
    return "\n".join(rows)


def _name(sk: Skeleton, loc) -> str:
    cands = [(reg[2], nm) for reg, nm in sk.regions.items()
             if reg[0] == loc.rank and reg[1] == loc.symbol and reg[2] <= loc.offset]
    return max(cands)[1] if cands else "?"
