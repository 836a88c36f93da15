"""Compile a generated program with nvcc for its target: a runnable executable, or a cubin (with
line info, for the SASS check). A compiler error becomes a HarnessError carrying nvcc's message."""
from __future__ import annotations

import re
import subprocess
import time
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
    """A file name for a test name (matrix names contain '+', '.', '$'...)."""
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", name).strip(".") or "test"


def nvcc_command(nvcc: str, source: Path, output: Path, target: str, kind: str) -> list[str]:
    if kind not in ("exe", "cubin"):
        raise HarnessError(f"unknown build kind '{kind}' (exe or cubin)")
    cmd = [nvcc, *NVCC_FLAGS, f"-arch={target}", "-o", str(output), str(source)]
    if kind == "cubin":
        cmd[1:1] = ["-cubin", "-lineinfo"]
    return cmd


def write_source(program: Program, outdir: Path) -> Path:
    outdir.mkdir(parents=True, exist_ok=True)
    src = outdir / f"{safe_name(program.test)}.cu"
    src.write_text(program.source)
    return src


def build(program: Program, outdir: str | Path, kind: str = "exe", toolchain: Toolchain | None = None,
          timeout: float = 600) -> BuildResult:
    """Write `program` into `outdir` and compile it; HarnessError with nvcc's message on failure."""
    tc = toolchain or find_toolchain()
    nvcc = tc.require("nvcc")
    outdir = Path(outdir)
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
