"""Which files a suite folder holds: every *.yaml / *.yml (or other `suffixes`: the importers'
sources) regular file below it (links to files
followed, links to folders not, so a link loop cannot trap the walk), hidden entries skipped,
sorted by path. The walk keeps its own stack, so a folder of any depth is walked without
exhausting Python's (Path.rglob and os.walk recurse once per level before Python 3.12)."""
from __future__ import annotations

import os
from pathlib import Path

SUFFIXES = (".yaml", ".yml")


def suite_files(folder: str | Path, suffixes: tuple[str, ...] = SUFFIXES) -> list[Path]:
    root = Path(folder)
    found: list[Path] = []
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            if e.name.startswith("."):
                continue
            try:
                if e.is_dir(follow_symlinks=False):
                    stack.append(Path(e.path))
                elif e.name.endswith(suffixes) and e.is_file():
                    found.append(Path(e.path))
            except OSError:
                continue
    return sorted(found, key=lambda f: f.as_posix())
