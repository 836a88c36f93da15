"""Find the CUDA toolchain: nvcc (with ptxas), cuobjdump and nvdisasm.

Looked for, in order: $PTXMC_CUDA_HOME/bin, PATH, /usr/local/cuda/bin, then the bin folders of
the pip wheels of the `hw` extra (nvidia-cuda-nvcc, nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm,
which install under site-packages/nvidia/cu13/bin, or nvidia/cuda_nvcc/bin for CUDA 12). Each
tool is found on its own, so a system nvcc and wheel disassemblers mix fine.
"""
from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..errors import HarnessError

_WHEEL_BIN_DIRS = ("nvidia/cu13/bin", "nvidia/cu12/bin", "nvidia/cuda_nvcc/bin",
                   "nvidia/cuda_cuobjdump/bin", "nvidia/cuda_nvdisasm/bin")


@dataclass(frozen=True)
class Toolchain:
    """Paths of the tools (None when not found) and nvcc's release, e.g. '13.0'."""

    nvcc: str | None
    cuobjdump: str | None
    nvdisasm: str | None
    version: str | None

    def require(self, tool: str) -> str:
        path = getattr(self, tool)
        if path is None:
            raise HarnessError(
                f"{tool} not found (looked in $PTXMC_CUDA_HOME, PATH, /usr/local/cuda/bin and the "
                f"nvidia-* pip wheels); install the toolchain with: pip install 'ptxmc[hw]'")
        return path


def _site_dirs() -> list[Path]:
    dirs = []
    for getter in (site.getsitepackages, lambda: [site.getusersitepackages()]):
        try:
            dirs += [Path(d) for d in getter()]
        except Exception:        # some virtualenvs lack one of the two
            pass
    dirs += [Path(p) for p in sys.path if p.endswith("site-packages")]
    seen, out = set(), []
    for d in dirs:
        if d not in seen:
            seen.add(d)
            out.append(d)
    return out


def search_dirs() -> list[Path]:
    """Where tools are looked for, in order (PATH is searched between the first two)."""
    dirs = []
    home = os.environ.get("PTXMC_CUDA_HOME")
    if home:
        dirs.append(Path(home) / "bin")
    dirs.append(Path("/usr/local/cuda/bin"))
    for sp in _site_dirs():
        dirs += [sp / sub for sub in _WHEEL_BIN_DIRS]
    return dirs


def _find(tool: str) -> str | None:
    dirs = search_dirs()
    home = os.environ.get("PTXMC_CUDA_HOME")
    if home and (dirs[0] / tool).is_file():
        return str(dirs[0] / tool)
    on_path = shutil.which(tool)
    if on_path:
        return on_path
    for d in dirs:
        p = d / tool
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return None


def _nvcc_version(nvcc: str) -> str | None:
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else None


@lru_cache(maxsize=None)
def find_toolchain() -> Toolchain:
    """The CUDA tools of this machine (cached; tools not found are None)."""
    nvcc = _find("nvcc")
    return Toolchain(nvcc=nvcc, cuobjdump=_find("cuobjdump"), nvdisasm=_find("nvdisasm"),
                     version=_nvcc_version(nvcc) if nvcc else None)


def missing_reason(*tools: str) -> str | None:
    """Why tests needing `tools` cannot run here (None when all are present): for pytest.skip."""
    tc = find_toolchain()
    missing = [t for t in tools if getattr(tc, t) is None]
    if not missing:
        return None
    return (f"CUDA toolchain incomplete: {', '.join(missing)} not found "
            f"(pip install 'ptxmc[hw]' provides nvcc, cuobjdump and nvdisasm)")
