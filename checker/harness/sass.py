"""Machine-code check: every fence and barrier (CTA, cluster, warp, mbarrier, async-group
commit/wait) and every memory access of the test must survive into SASS, per target.

The program is compiled to a cubin with line info; nvdisasm maps each SASS instruction to its
source line, and every test instruction sits on a line of its own (codegen marks it), so the SASS
of each fence is known exactly. FENCE_SASS gives, per PTX fence kind, the SASS opcodes it must
produce; the table was read off nvcc 13.0 output for sm_90a and sm_100a (see tests). A few forms
legitimately produce no instruction (`bar.warp.sync` of a converged warp, an acquire-only
`sync_restrict` fence): they are listed with an empty pattern and reported as such.

Accesses (`expected_access`): ptxas optimises inline PTX as PTX, so it may merge two loads of one
address, forward a store to a load, delete an overwritten store or an unused load. Each such loss
makes an allowed outcome unobservable (a certain "gap"). The generator prevents it (a per-access
zero offset ptxas cannot see, every register kept live); this check proves it: every access must
have a memory opcode of its kind on its line, and a strong (relaxed/acquire/release/volatile)
global or generic ld/st must carry `.STRONG.` with a scope at least as wide as the PTX scope.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..ast import Instr, LitmusTest
from ..errors import HarnessError
from .codegen import Program
from .toolchain import Toolchain, find_toolchain

_SCOPE_SASS = {"cta": "CTA", "cluster": "GPU", "gpu": "GPU", "sys": "SYS"}


def expected_sass(i: Instr, target: str = "sm_90a") -> tuple[str, str] | None:
    """(regex over SASS opcodes, description) that instruction `i` must produce on `target`; an
    empty regex means no machine code is required; None: not a fence or barrier."""
    q = set(i.qualifiers)
    scope = i.pick(("cta", "cluster", "gpu", "sys"), "sys")
    if i.op == "membar" and "proxy" in q:          # membar.proxy is fence.proxy's synonym
        return expected_sass(Instr("fence", i.qualifiers, i.operands, i.text), target)
    if i.op == "membar":
        s = {"cta": "CTA", "gl": "GPU", "sys": "SYS"}.get(i.pick(("cta", "gl", "sys")), "SYS")
        return rf"^MEMBAR\.SC\.{s}$", f"MEMBAR.SC.{s}"
    if i.op == "fence":
        if "proxy" in q:
            if "alias" in q:
                return r"^MEMBAR\.SC\.(GPU|SYS)$", "MEMBAR.SC.GPU"
            if "async" in q:
                if "global" in q:
                    return r"^FENCE\.VIEW\.ASYNC\.G$", "FENCE.VIEW.ASYNC.G"
                return r"^FENCE\.VIEW\.ASYNC\.S$", "FENCE.VIEW.ASYNC.S"
            if "tensormap::generic" in q:
                if "acquire" in q:
                    return r"^UTMACCTL\.IV$", "UTMACCTL.IV"
                return r"^MEMBAR\.ALL\.(GPU|SYS)$", "MEMBAR.ALL.GPU"
            if any(x.startswith("async::generic") for x in q):
                if any(x.endswith("::read") for x in q):
                    return "", "no instruction (a ::read release: nothing to order on this target)"
                if "release" in q:
                    return r"^FENCE\.VIEW\.ASYNC\.S$", "FENCE.VIEW.ASYNC.S"
                return "", "no instruction (acquire side)"
            return None
        if "mbarrier_init" in q:
            return "", "no instruction (ordered by the mbarrier's own SYNCS operations)"
        if any(x.startswith("sync_restrict") for x in q):
            if "release" in q:
                return r"^MEMBAR\.ALL\.CTA$", "MEMBAR.ALL.CTA"
            return "", "no instruction (acquire side of a restricted fence)"
        sem = i.pick(("sc", "acq_rel", "acquire", "release"), "acq_rel")
        s = _SCOPE_SASS[scope]
        if sem == "sc":
            return rf"^MEMBAR\.SC\.{s}$", f"MEMBAR.SC.{s}"
        if sem == "acquire":
            if scope == "cta":
                return "", "no instruction (acquire at CTA scope)"
            return r"^(CCTL\.IVALL|MEMBAR\..*)$", "CCTL.IVALL"
        return rf"^MEMBAR\.ALL\.{s}$", f"MEMBAR.ALL.{s}"
    if i.op in ("bar", "barrier"):
        if "warp" in q:
            return "", "no instruction when the warp is converged (WARPSYNC otherwise)"
        if "cluster" in q:
            if "arrive" in q:
                return r"^UCGABAR_ARV$", "UCGABAR_ARV"
            if "wait" in q:
                return r"^UCGABAR_WAIT$", "UCGABAR_WAIT"
            return None
        if "arrive" in q:
            return r"^BAR\.ARV$", "BAR.ARV"
        if "red" in q:
            return r"^BAR\.RED", "BAR.RED"
        return r"^BAR\.SYNC", "BAR.SYNC"
    if i.op == "tensormap" and i.qualifiers[:1] == ("cp_fenceproxy",):
        return r"^ATOMG\.E\.EXCH\.STRONG", "ATOMG.E.EXCH.STRONG (the map copied by strong exchanges)"
    if i.op == "cp" and ("wait_group" in q or "wait_all" in q):
        return r"^DEPBAR", "DEPBAR"
    if i.op == "cp" and "commit_group" in q:
        return (r"^UTMACMDFLUSH$", "UTMACMDFLUSH") if "bulk" in q else (r"^LDGDEPBAR$", "LDGDEPBAR")
    if i.op == "cp" and "mbarrier" in q and "arrive" in q:
        return r"^ARRIVES\.LDGSTSBAR", "ARRIVES.LDGSTSBAR"
    if i.op == "mbarrier":
        kind = i.qualifiers[0] if i.qualifiers else ""
        if kind == "init":
            if _arch(target) >= 100:      # nvcc 13 for sm_100a: a plain 64-bit shared store
                return r"^(SYNCS\.EXCH|STS\.64)", "SYNCS.EXCH.64 or STS.64"
            return r"^SYNCS\.EXCH", "SYNCS.EXCH.64"
        if kind in ("arrive", "arrive_drop", "expect_tx", "complete_tx"):
            return r"^SYNCS\.ARRIVE", "SYNCS.ARRIVE.TRANS64"
        if kind in ("try_wait", "test_wait"):
            return r"^SYNCS\.PHASECHK", "SYNCS.PHASECHK.TRANS64"
    return None


def _arch(target: str) -> int:
    m = re.fullmatch(r"sm_(\d+)[af]?", target or "")
    return int(m.group(1)) if m else 0


_LOADS, _STORES = r"^(LD|LDG|LDS)\b", r"^(ST|STG|STS)\b"
_ATOMICS = r"^(ATOM|ATOMG|ATOMS|RED|REDG|REDS)\b"
_STRONG_RANK = {"SM": 0, "GPU": 1, "SYS": 2}
_PTX_RANK = {"cta": 0, "cluster": 1, "gpu": 1, "sys": 2}


def expected_access(i: Instr, target: str = "sm_90a") -> tuple[str, str, int | None] | None:
    """(regex over SASS opcodes, description, minimum STRONG scope rank or None) of a memory access
    of the test; None: not a memory access (fences, barriers and mbarrier operations are
    expected_sass's)."""
    q = set(i.qualifiers)
    if i.op == "ld":
        strong = None
        if q & {"relaxed", "acquire", "volatile"}:
            strong = _PTX_RANK.get(i.pick(("cta", "cluster", "gpu", "sys"), "sys"), 2)
        return _LOADS, "a load (LD/LDG/LDS)", strong
    if i.op == "st" and "async" in q:
        return r"^STAS\b", "STAS", None
    if i.op == "red" and "async" in q:
        return r"^(REDAS|STAS|ATOMS|REDS|RED)\b", "REDAS", None
    if i.op == "st" and "bulk" not in q:
        strong = None
        if q & {"relaxed", "release", "volatile"}:
            strong = _PTX_RANK.get(i.pick(("cta", "cluster", "gpu", "sys"), "sys"), 2)
        return _STORES, "a store (ST/STG/STS)", strong
    if i.op in ("atom", "red"):
        return _ATOMICS, "an atomic (ATOM*/RED*)", None
    if i.op == "cp":
        if q & {"commit_group", "wait_group", "wait_all"} or ("mbarrier" in q and "arrive" in q):
            return None
        if "tensor" in q:
            return r"^UTMA(LDG|STG|REDG|PF)\b", "UTMALDG/UTMASTG", None
        if "bulk" in q:
            return r"^(UBLKCP|UBLKRED|UBLKPF|UTMAPF)\b", "UBLKCP/UBLKRED", None
        if "async" in q:
            return r"^LDGSTS\b", "LDGSTS", None
    if i.op == "tensormap" and i.qualifiers[:1] == ("replace",):
        return r"^(ST|STG|STS)\b", "a store of the map field", None
    if i.op == "wgmma" and i.qualifiers[:1] == ("mma_async",):      # its shared-memory operand reads
        return r"^HGMMA\b", "HGMMA", None
    if i.op == "tcgen05" and i.qualifiers[:1] in (("ld",), ("st",)):   # Tensor Memory accesses
        return (r"^LDTM\b", "LDTM", None) if i.qualifiers[0] == "ld" else (r"^STTM\b", "STTM", None)
    return None


def _strong_ok(found: list[str], pattern: str, rank: int | None) -> bool:
    """Some access opcode matching `pattern`, and (for a strong global/generic access) strong
    at a scope of at least `rank`. Shared-memory opcodes carry no scope: always coherent."""
    hits = [f for f in found if re.search(pattern, f)]
    if not hits:
        return False
    if rank is None:
        return True
    for f in hits:
        if f.startswith(("LDS", "STS")):
            return True
        m = re.search(r"\.STRONG\.(SM|GPU|SYS)\b", f)
        if m and _STRONG_RANK[m.group(1)] >= rank:
            return True
    return False


@dataclass(frozen=True)
class FenceCheck:
    thread: str
    index: int
    text: str
    expected: str          # description
    found: tuple[str, ...]  # SASS opcodes at the instruction's line
    ok: bool
    kind: str = "fence"     # 'fence' (fences, barriers, mbarrier, groups) | 'access' (memory accesses)

    def __str__(self) -> str:
        mark = "ok" if self.ok else "MISSING"
        return f"{mark:7} {self.thread}:{self.index} '{self.text}' -> {' ; '.join(self.found) or '(none)'} (expected {self.expected})"


def disassemble(cubin: str | Path, toolchain: Toolchain | None = None) -> str:
    tc = toolchain or find_toolchain()
    nvdisasm = tc.require("nvdisasm")
    try:
        proc = subprocess.run([nvdisasm, "-g", "-c", str(cubin)], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as e:
        raise HarnessError(f"cannot run nvdisasm on {cubin}: {e}")
    if proc.returncode != 0:
        raise HarnessError(f"nvdisasm failed on {cubin}:\n{proc.stderr.strip()}")
    return proc.stdout


_LINE = re.compile(r'//## File "(.*)", line (\d+)')
_INSTR = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;?\s*$")
_FUNC = re.compile(r"^\s*\.text\.(\S+):")


def sass_by_line(disasm: str, function: str = "litmus_kernel", label: str | None = None) -> dict[int, list[str]]:
    """Source line -> SASS instructions (opcode and operands) of the named kernel; with `label`,
    only lines of that source file (a program inside a batch)."""
    out: dict[int, list[str]] = {}
    line = None
    inside = False
    for text in disasm.splitlines():
        m = _FUNC.match(text)
        if m:
            inside = function in m.group(1)
            line = None
            continue
        if not inside:
            continue
        m = _LINE.search(text)
        if m:
            ok = label is None or m.group(1) == label or m.group(1).endswith("/" + label)
            line = int(m.group(2)) if ok else None
            continue
        m = _INSTR.match(text)
        if m and line is not None:
            out.setdefault(line, []).append(m.group(1).rstrip(" ;"))
    return out


def kernel_opcodes(disasm: str, label: str | None = None) -> list[str]:
    """The opcodes of the program's litmus kernel, whatever file its line info names; with `label`
    ('005-NAME.cu': the program inside a batch), only the kernel of that program's namespace
    (mangled `8ptxmc_t513litmus_kernel...`)."""
    m = re.match(r"(\d+)-", label or "")
    ns = f"ptxmc_t{int(m.group(1))}" if m else None
    want = f"{len(ns)}{ns}13litmus_kernel" if ns else "litmus_kernel"
    out, inside = [], False
    for text in disasm.splitlines():
        f = _FUNC.match(text)
        if f:
            inside = want in f.group(1)
            continue
        i = _INSTR.match(text)
        if inside and i:
            out.append(opcode(i.group(1)))
    return out


def opcode(sass: str) -> str:
    """'@!P0 MEMBAR.SC.GPU ;' -> 'MEMBAR.SC.GPU'."""
    parts = sass.split()
    if parts and parts[0].startswith("@"):
        parts = parts[1:]
    return parts[0].rstrip(";") if parts else ""


def check_fences(test: LitmusTest, program: Program, disasm: str, label: str | None = None) -> list[FenceCheck]:
    """One FenceCheck per fence/barrier and per memory access of the test (`label`: its file name
    inside a batch), against the expectations for the program's target."""
    from .flow import reachable
    lines = program.instr_lines()
    by_line = sass_by_line(disasm, label=label)
    out = []
    for t in test.threads:
        live = reachable(test, t) if t.branches else None
        for idx, i in enumerate(t.code):
            if live is not None and idx not in live and (expected_sass(i, program.target) is not None
                                                         or expected_access(i, program.target) is not None):
                # a path the thread's own registers rule out (a %tid dispatch): ptxas deletes it,
                # as the model never runs it
                out.append(FenceCheck(t.name, idx, i.text, "nothing: unreachable (guards decided by registers)",
                                      (), True, kind="access" if expected_access(i, program.target) else "fence"))
                continue
            n = lines.get((t.name, idx))
            found = tuple(opcode(s) for s in by_line.get(n, [])) if n else ()
            exp = expected_sass(i, program.target)
            if exp is not None:
                pattern, desc = exp
                ok = (not pattern) or any(re.search(pattern, f) for f in found)
                out.append(FenceCheck(t.name, idx, i.text, desc, found, ok))
            acc = expected_access(i, program.target)
            if acc is not None and i.op == "wgmma":
                # ptxas attributes an HGMMA to the line of a later instruction of the thread, or
                # even to another file (the __syncwarp intrinsic's header): count the HGMMAs of the
                # program's kernel (the harness emits none of its own) against the test's
                # wgmma.mma_async
                hits = [f for f in kernel_opcodes(disasm, label) if re.search(acc[0], f)]
                need = sum(1 for th in test.threads for j in th.code
                           if j.op == "wgmma" and j.qualifiers[:1] == ("mma_async",))
                out.append(FenceCheck(t.name, idx, i.text, f"{need} HGMMA in the program", tuple(hits),
                                      len(hits) >= need, kind="access"))
                continue
            if acc is not None:
                pattern, desc, rank = acc
                full = tuple(_full(s) for s in by_line.get(n, [])) if n else ()
                if rank is not None:
                    desc += f" (.STRONG.{['SM', 'GPU', 'SYS'][rank]} or wider)"
                out.append(FenceCheck(t.name, idx, i.text, desc, found, _strong_ok(list(full), pattern, rank),
                                      kind="access"))
    return out


def _full(sass: str) -> str:
    """The opcode with its operands, without a predicate: 'LDG.E.STRONG.GPU R9, desc[...]'."""
    parts = sass.split(None, 1)
    return parts[1] if parts and parts[0].startswith("@") and len(parts) > 1 else sass


def check_built(tests: list[LitmusTest], built: list, toolchain: Toolchain | None = None,
                jobs: int = 2) -> list[list[FenceCheck] | HarnessError]:
    """check_fences for the results of build.build_cubins (each cubin disassembled once, `jobs`
    nvdisasm processes at a time)."""
    from concurrent.futures import ThreadPoolExecutor
    cubins = list(dict.fromkeys(b.cubin for b in built if not isinstance(b, HarnessError)))
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        text = dict(zip(cubins, ex.map(lambda c: disassemble(c, toolchain), cubins)))
    return [b if isinstance(b, HarnessError) else check_fences(t, b.program, text[b.cubin], b.label)
            for t, b in zip(tests, built)]
