"""Compile generated programs with nvcc for their target: a runnable executable, or a cubin (with
line info, for the SASS check). A compiler error becomes a HarnessError carrying nvcc's message.

`build_cubins` compiles many programs for the SASS check in batches: one translation unit holds
several programs, each in its own namespace behind `#line 1 "LABEL"` (so line info still points
into that program), with the host `main` left out. nvcc's start-up dominates a small build, so a
batch of 12 costs about what 2 single builds do. A batch that fails is rebuilt one program at a
time, so each error is reported against its own test."""
from __future__ import annotations

import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..errors import HarnessError
from .codegen import Program
from .toolchain import Toolchain, find_toolchain

NVCC_FLAGS = ("-O3", "-std=c++17", "-diag-suppress", "177,186,550")


@dataclass(frozen=True)
class BuildResult:
    source: Path
    output: Path
    kind: str            # 'exe' | 'cubin'
    target: str
    seconds: float
    log: str             # nvcc's warnings, if any


def safe_name(name: str) -> str:
    """A file name for a test name, distinct for distinct names (checker.outsafe.safe_filename:
    `X/Y` and `X_Y` get different files)."""
    from ..outsafe import safe_filename
    return safe_filename(name)


def nvcc_command(nvcc: str, source: Path, output: Path, target: str, kind: str) -> list[str]:
    if kind not in ("exe", "cubin"):
        raise HarnessError(f"unknown build kind '{kind}' (exe or cubin)")
    # One real target, no embedded PTX: `-arch=sm_90a` alone also embeds compute_90 PTX, which
    # fails on arch-specific instructions (tensormap.replace, wgmma, tcgen05).
    virtual = "compute_" + target[len("sm_"):] if target.startswith("sm_") else target
    cmd = [nvcc, *NVCC_FLAGS, f"-gencode=arch={virtual},code={target}", "-o", str(output), str(source)]
    if kind == "cubin":
        cmd[1:1] = ["-cubin", "-lineinfo"]
    return cmd


def write_source(program: Program, outdir: Path) -> Path:
    from ..outsafe import write_file
    src = outdir / f"{safe_name(program.test)}.cu"
    write_file(src, program.source)
    return src


def build(program: Program, outdir: str | Path, kind: str = "exe", toolchain: Toolchain | None = None,
          timeout: float = 600) -> BuildResult:
    """Write `program` into `outdir` and compile it; HarnessError with nvcc's message on failure."""
    tc = toolchain or find_toolchain()
    nvcc = tc.require("nvcc")
    outdir = Path(outdir).resolve()      # nvcc runs in outdir: a relative path would be read from there (D11)
    src = write_source(program, outdir)
    out = src.with_suffix(".cubin" if kind == "cubin" else "")
    if out == src:
        out = src.with_suffix(".bin")
    cmd = nvcc_command(nvcc, src, out, program.target, kind)
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=outdir)
    except subprocess.TimeoutExpired:
        raise HarnessError(f"{program.test}: nvcc did not finish within {timeout:.0f} s ({src})")
    except OSError as e:
        raise HarnessError(f"{program.test}: cannot run nvcc ({nvcc}): {e.strerror}")
    seconds = time.monotonic() - start
    log = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        raise HarnessError(f"{program.test}: nvcc failed for {program.target} ({src}):\n{_errors(log)}")
    return BuildResult(src, out, kind, program.target, seconds, log)


def _errors(log: str, limit: int = 40) -> str:
    """nvcc/ptxas output, error lines first, trimmed."""
    lines = log.splitlines()
    errs = [l for l in lines if "error" in l.lower()]
    rest = [l for l in lines if l not in errs]
    return "\n".join((errs + rest)[:limit])


@dataclass(frozen=True)
class Built:
    """One program inside a cubin: `label` is the file name its line info carries."""

    program: Program
    cubin: Path
    label: str
    seconds: float


def batch_source(programs: list[Program]) -> tuple[str, list[str]]:
    """One translation unit holding every program (device code only) and their labels."""
    head = "#define PTXMC_NO_MAIN\n#include <cstdio>\n#include <cstdlib>\n#include <cstring>\n" \
           "#include <ctime>\n#include <cuda_runtime.h>\n"
    parts, labels = [head], []
    for k, p in enumerate(programs):
        label = f"{k:03d}-{safe_name(p.test)}.cu"
        labels.append(label)
        macros = dict.fromkeys(re.findall(r"^#define (\w+)", p.source, re.M))
        macros.pop("PTXMC_NO_MAIN", None)
        parts.append(f'namespace ptxmc_t{k} {{\n#line 1 "{label}"\n{p.source}\n}}\n')
        parts.append("".join(f"#undef {m}\n" for m in macros))
    return "".join(parts), labels


def _compile_batch(nvcc: str, programs: list[Program], outdir: Path, name: str, timeout: float) -> list[Built]:
    src = outdir / f"{name}.cu"
    text, labels = batch_source(programs)
    src.write_text(text)
    out = src.with_suffix(".cubin")
    start = time.monotonic()
    try:
        proc = subprocess.run(nvcc_command(nvcc, src, out, programs[0].target, "cubin"), capture_output=True,
                              text=True, timeout=timeout, cwd=outdir)
    except subprocess.TimeoutExpired:
        raise HarnessError(f"nvcc did not finish within {timeout:.0f} s ({src})")
    if proc.returncode != 0:
        raise HarnessError(_errors((proc.stdout + proc.stderr).strip()))
    per = (time.monotonic() - start) / len(programs)
    return [Built(p, out, label, per) for p, label in zip(programs, labels)]


def build_cubins(programs: list[Program], outdir: str | Path, jobs: int = 2, batch: int = 12,
                 toolchain: Toolchain | None = None, timeout: float = 600) -> list[Built | HarnessError]:
    """Cubins with line info for many programs (same order; a HarnessError for each that fails)."""
    tc = toolchain or find_toolchain()
    nvcc = tc.require("nvcc")
    outdir = Path(outdir).resolve()      # nvcc runs in outdir (see build)
    outdir.mkdir(parents=True, exist_ok=True)
    by_target: dict[str, list[int]] = {}
    for k, p in enumerate(programs):
        by_target.setdefault(p.target, []).append(k)
    chunks = [idx[i:i + batch] for idx in by_target.values() for i in range(0, len(idx), batch)]
    results: list = [None] * len(programs)

    def one_chunk(n_chunk):
        n, chunk = n_chunk
        try:
            built = _compile_batch(nvcc, [programs[k] for k in chunk], outdir, f"batch{n:04d}", timeout)
            return list(zip(chunk, built))
        except HarnessError:
            out = []
            for k in chunk:        # find the culprit(s), each with its own message
                try:
                    res = build(programs[k], outdir / "single", "cubin", tc, timeout)
                    out.append((k, Built(programs[k], res.output, res.source.name, res.seconds)))
                except HarnessError as e:
                    out.append((k, e))
            return out

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        for pairs in ex.map(one_chunk, enumerate(chunks)):
            for k, r in pairs:
                results[k] = r
    return results
