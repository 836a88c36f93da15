"""Before building anything: do the GPUs, the target and the toolchain fit together? (review D6)

* The target follows from the device: an 'a' target runs only on its own architecture (sm_90a
  binaries do not load on a B200, sm_100a ones not on an H100), and the harness needs sm_90+.
* The device configuration is picked from the detected GPU when none is given (h100 for cc 9.x,
  b200 for cc 10.0); a configuration whose target does not fit the GPU is refused.
* A CUDA 13 toolchain links a runtime that needs an R580+ driver (CUDA 12: R525+), else every
  program exits with "CUDA driver version is insufficient" after the whole suite was built.
* All devices of one run must be of one architecture (one build serves them all).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import HarnessError

# Minimum Linux driver per CUDA major release (CUDA release notes, "CUDA Toolkit and Minimum
# Required Driver Version for CUDA Minor Version Compatibility").
MIN_DRIVER = {12: (525, 60), 13: (580, 0)}
CONFIG_FOR_CC = {"9.0": "h100", "10.0": "b200"}


@dataclass(frozen=True)
class Plan:
    devices: tuple[str, ...]      # CUDA_VISIBLE_DEVICES value per worker ('' = the default device)
    target: str
    config: str                   # device configuration name or path
    notes: tuple[str, ...]


def target_for_cc(cc: str) -> str | None:
    """'9.0' -> 'sm_90a', '10.0' -> 'sm_100a'; None below sm_90 or unreadable."""
    m = re.fullmatch(r"(\d+)\.(\d+)", cc.strip())
    if not m:
        return None
    n = int(m.group(1)) * 10 + int(m.group(2))
    return f"sm_{n}a" if n >= 90 else None


def _driver(version: str) -> tuple[int, int] | None:
    m = re.match(r"(\d+)\.(\d+)", version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def plan(gpus, wanted: str | None, config: str | None, config_target: str | None, cuda: str | None) -> Plan:
    """Which devices to use, the target and configuration; HarnessError saying what does not fit.
    `gpus`: checker.harness.run.Gpu list; `wanted`: '--devices 0,1' (None: device 0);
    `config_target`: the target of the configuration given with --device (None: none given)."""
    if not gpus:
        raise HarnessError("no GPU on this machine (nvidia-smi and libcuda found none)")
    idx = [0] if wanted is None else []
    if wanted is not None:
        for part in wanted.split(","):
            if not part.strip().isdigit():
                raise HarnessError(f"--devices {wanted!r}: expected GPU indices like 0,1")
            idx.append(int(part))
    if len(set(idx)) != len(idx):
        raise HarnessError(f"--devices {wanted!r}: a GPU is named twice")
    for i in idx:
        if i >= len(gpus):
            raise HarnessError(f"--devices: GPU {i} does not exist (this machine has {len(gpus)})")
    chosen = [gpus[i] for i in idx]
    ccs = {g.compute_capability for g in chosen}
    notes = []
    if len(ccs) > 1:
        raise HarnessError("--devices: GPUs of different architectures (" + ", ".join(
            f"{i}: {g.name} cc {g.compute_capability}" for i, g in zip(idx, chosen)) + "); run them separately")
    cc = ccs.pop()
    target = target_for_cc(cc) if cc else None
    if cc and target is None:
        raise HarnessError(f"{chosen[0].name} (cc {cc}): the harness needs sm_90 or newer (mbarrier, "
                           f"bulk copies, clusters)")
    if target is None:
        notes.append("compute capability unknown (no nvidia-smi): trusting the configuration's target")
        target = config_target or "sm_90a"
    if config_target is not None and config_target != target:
        raise HarnessError(f"the configuration targets {config_target} but {chosen[0].name} is cc {cc} "
                           f"({target}): its binaries would not load; use --device "
                           f"{CONFIG_FOR_CC.get(cc, 'FILE.toml with target = ' + repr(target))}")
    if config is None:
        config = CONFIG_FOR_CC.get(cc)
        if config is None:
            raise HarnessError(f"no bundled configuration for {chosen[0].name} (cc {cc}): pass --device FILE.toml "
                               f"with target = \"{target}\"")
        notes.append(f"configuration '{config}' picked for {chosen[0].name} (cc {cc})")
    major = int(cuda.split(".")[0]) if cuda and cuda.split(".")[0].isdigit() else None
    need = MIN_DRIVER.get(major) if major else None
    for g in chosen:
        have = _driver(g.driver)
        if need and have and have < need:
            raise HarnessError(f"{g.name}: driver {g.driver} is older than CUDA {cuda} needs ({need[0]}.{need[1]:02d}+): "
                               f"every program would fail with 'driver version is insufficient'; install a CUDA 12 "
                               f"toolchain (PTXMC_CUDA_HOME) or a newer driver")
        if need and have is None:
            notes.append(f"{g.name}: driver version unknown, not checked against CUDA {cuda}")
    devices = tuple(str(i) for i in idx) if wanted is not None else ("",)
    return Plan(devices, target, config, tuple(notes))
