"""The compiled code of the methods that `dataclasses` writes for ptxmc's own dataclasses, kept
on disk between processes (checker.errors installs it, before the first of them is made).

Python writes a dataclass's methods (__init__, __repr__, __eq__, __hash__ and, frozen,
__setattr__ and __delattr__) as source text and compiles each: in 3.11 ~0.4 ms a class, and the
~70 classes a one-shot `ptxmc check` imports spend ~30 ms of its ~150 ms of CPU compiling
(bench/RESULTS.md). The dataclasses module compiles with the built-in `exec`; `install` gives it
an `exec` of its own, which, for a class of a checker module (the globals dataclasses passes are
the class's module's), runs the code compiled from the same text: read from the cache, or
compiled as the built-in exec compiles it (file name "<string>", no compiler flags: dataclasses
itself has none to pass on) and added to it. The text is the key, so a class whose fields,
defaults or options change writes another text and never meets older code. Any other class,
and any source exec is given that is not a checker class's, goes to the built-in exec.

The cache is one marshal file per interpreter (its cache tag and exact version, marshal's version, the -O level)
in ptxmc's cache folder (checker.cachedir; `PTXMC_CACHE_DIR=off` turns it off), read once, and
used only while the folder is the user's and closed to others (it holds code). Each text's code
is marshalled apart and loaded when a class asks for it, so a check does not pay for the
classes of other commands. What a process compiled is written back as it ends: at exit, or by
checker.cli before a one-shot command ends with os._exit (`save`).
"""
# No `from __future__ import annotations` here: the built-in exec compiles a text with the
# compiler flags of the function that calls it, and _exec calls it for every other dataclass,
# whose methods' annotations must stay what dataclasses makes them (objects, not strings).

import builtins
import marshal
import os
import sys

FORMAT = 2                          # (1: the code objects themselves, all loaded at once)
# Past this many entries (texts of older code) a save keeps only what this process used.
MAX_ENTRIES = 4096

_codes: dict[str, bytes] | None = None  # text -> its code, marshalled (read once; each loaded when asked for)
_used: set[str] = set()             # texts this process asked for
_added = False                      # some text was compiled here: save() writes
compiled = 0                        # how many texts this process compiled (the rest came from the cache)


def install() -> None:
    """Make the dataclasses module compile checker classes' methods through the cache."""
    import dataclasses

    if getattr(dataclasses, "exec", None) is not _exec:
        dataclasses.exec = _exec
        import atexit

        atexit.register(save)


def _exec(source, globals=None, locals=None, /):
    if type(source) is str and type(globals) is dict and str(globals.get("__name__", "")).startswith("checker."):
        return builtins.exec(_code(source), globals, locals)
    return builtins.exec(source, globals, locals)


def _code(source: str):
    global _codes, _added, compiled
    if _codes is None:
        _codes = _read()
    _used.add(source)
    kept = _codes.get(source)
    if kept is not None:
        try:
            code = marshal.loads(kept)
            if type(code) is type(_code.__code__):
                return code
        except (EOFError, ValueError, TypeError):
            pass
    code = compile(source, "<string>", "exec", dont_inherit=True)
    _codes[source] = marshal.dumps(code)
    _added = True
    compiled += 1
    return code


def _path():
    from .cachedir import folder

    d = folder()
    # (hexversion tells pre-releases apart, whose bytecode changes under one cache tag)
    tag = f"{sys.implementation.cache_tag}-{sys.hexversion:x}-m{marshal.version}-O{sys.flags.optimize}"
    return None if d is None else d / f"dataclasses-{FORMAT}-{tag}.marshal"


def _read() -> dict:
    from .cachedir import private

    path = _path()
    if path is None or not private(path.parent):
        return {}
    try:
        with open(path, "rb") as f:
            codes = marshal.loads(f.read())         # (marshal.load reads a file in small pieces: 10x slower)
    except Exception:           # noqa: BLE001 - missing, truncated, another format: compile
        return {}
    if type(codes) is not dict or not all(type(k) is str and type(v) is bytes for k, v in codes.items()):
        return {}
    return codes


def save() -> None:
    """Write the cache back if this process compiled something (atomically; errors ignored)."""
    global _added
    if not _added or _codes is None:
        return
    _added = False
    from .cachedir import private

    path = _path()
    if path is None:
        return
    keep = _codes if len(_codes) <= MAX_ENTRIES else {k: v for k, v in _codes.items() if k in _used}
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not private(path.parent):
            return
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(marshal.dumps(keep))
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    except (OSError, ValueError):
        pass
