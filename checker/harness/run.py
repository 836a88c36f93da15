"""Run a built program on a GPU with a time budget and read its histogram back. Needs a GPU:
`gpu_available()` says whether this machine has one (nvidia-smi, then the driver library);
without one, `run` raises HarnessError and tests skip. PTXMC_GPU=0 forces "no GPU"; PTXMC_GPU=1
reports one even when neither nvidia-smi nor libcuda finds it (its architecture then unknown)."""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..errors import HarnessError
from .codegen import Program
from .histogram import Histogram, parse_output


@dataclass(frozen=True)
class Gpu:
    name: str
    compute_capability: str     # '9.0'
    driver: str


@lru_cache(maxsize=None)
def gpus() -> tuple[Gpu, ...]:
    """The GPUs this machine has (empty without a driver or a device)."""
    force = os.environ.get("PTXMC_GPU")
    if force == "0":
        return ()
    found = _detect()
    if not found and force == "1":          # forced on: trust the user (e.g. a container without nvidia-smi)
        return (Gpu("GPU forced by PTXMC_GPU=1", "", ""),)
    return found


def _detect() -> tuple[Gpu, ...]:
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30)
            if out.returncode == 0:
                rows = [[x.strip() for x in l.split(",")] for l in out.stdout.splitlines() if l.strip()]
                return tuple(Gpu(r[0], r[1] if len(r) > 1 else "", r[2] if len(r) > 2 else "") for r in rows)
        except (OSError, subprocess.SubprocessError):
            pass
    try:                                       # no nvidia-smi: ask the driver directly
        cuda = ctypes.CDLL("libcuda.so.1")
        n = ctypes.c_int(0)
        if cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(n)) == 0 and n.value > 0:
            out = []
            for k in range(n.value):
                dev, major, minor = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(0)
                cc = ""
                if (cuda.cuDeviceGet(ctypes.byref(dev), k) == 0
                        and cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, dev) == 0     # ..._COMPUTE_CAPABILITY_MAJOR
                        and cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev) == 0):   # ..._MINOR
                    cc = f"{major.value}.{minor.value}"
                out.append(Gpu(f"cuda device {k}", cc, ""))
            return tuple(out)
    except OSError:
        pass
    return ()


def gpu_available() -> bool:
    return bool(gpus())


def no_gpu_reason() -> str | None:
    return None if gpu_available() else "no GPU on this machine (nvidia-smi and libcuda found none)"


def run(program: Program, executable: str | Path, seed: int = 1, time_s: float | None = None,
        iterations: int | None = None, timeout: float | None = None) -> Histogram:
    """Run a built program; its histogram (HarnessError if there is no GPU or the run fails)."""
    reason = no_gpu_reason()
    if reason:
        raise HarnessError(f"{program.test}: cannot run: {reason}")
    budget = program.config.time_budget_s if time_s is None else time_s
    cmd = [str(Path(executable).resolve()), "--seed", str(seed), "--time", repr(float(budget))]
    if iterations is not None:
        cmd += ["--iterations", str(iterations)]
    limit = timeout if timeout is not None else 60 + 3 * budget
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        raise HarnessError(f"{program.test}: the run did not end within {limit:.0f} s (a hang despite bounded spins?)")
    except OSError as e:
        raise HarnessError(f"{program.test}: cannot start {executable}: {e.strerror}")
    if proc.returncode != 0:
        msg = (proc.stdout + proc.stderr).strip().splitlines()
        raise HarnessError(f"{program.test}: the run failed (exit {proc.returncode}): {' / '.join(msg[-5:])}")
    return parse_output(proc.stdout, program.space, program.target, program.config.to_dict())
