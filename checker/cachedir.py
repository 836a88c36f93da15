"""ptxmc's cache folder, shared by the caches that keep work between processes (the parsed
models and their compiled code, checker.cat.cache; the dataclasses' methods,
checker.methodcache): `$PTXMC_CACHE_DIR`, else `$XDG_CACHE_HOME/ptxmc`, else `~/.cache/ptxmc`;
the value `off` turns the caches off. They hold pickles and code: a folder that is not the
user's, or that others can write to, is not used."""
from __future__ import annotations

import os
from pathlib import Path

ENV = "PTXMC_CACHE_DIR"


def folder() -> Path | None:
    """The cache folder (not necessarily existing), or None when the cache is off."""
    spec = os.environ.get(ENV)
    if spec is not None:
        return None if spec.strip().lower() in ("", "off", "0", "none") else Path(spec)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ptxmc"


def private(d: Path) -> bool:
    """The folder is the user's and nobody else can write to it."""
    try:
        st = d.stat()
    except OSError:
        return False
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return False
    return not st.st_mode & 0o022
