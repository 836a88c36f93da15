"""A cache on disk of parsed models, so that a one-shot command does not parse the model again:
parsing the bundled ptx.cat (lark, then the glossary check) takes ~0.15 s; reading it back
takes ~2 ms, and lark is not even imported.

Where: `$PTXMC_CACHE_DIR`, else `$XDG_CACHE_HOME/ptxmc`, else `~/.cache/ptxmc`; the value `off`
turns the cache off. The folder must belong to the user and be writable by no one else (it
holds pickles), or it is not used. One file per model path.

An entry is used only when everything that made it is unchanged:
- the key (the entry's file name) covers ptxmc's version, Python's version, a fingerprint of the
  code that parses models and defines a parsed model (checker/cat/*.py, grammar.lark,
  checker/errors.py), the model's path as given and as an absolute path, and the limits that
  parsing checks (cat_bytes, nesting);
- the entry records the SHA-256 of every file the model read (the file and its includes), and
  each is compared with the file's bytes now.
Only models that parsed and passed their glossary check are stored; a parse error is never
cached. Anything that goes wrong reading or writing the cache is ignored: the model is parsed.

The same folder keeps the code of compiled models (checker.cat.compiled: ~30 ms to generate and
compile the three functions brute force uses, ~1 ms to read back). A model read from or stored
in the cache gets a fingerprint (its entry's key and its files' digests, those just compared);
a model derived from it (checker.cat.stage) gets one from its parent's and the derivation's
arguments; the code is keyed by the fingerprint and the compilation's arguments. A model
without a fingerprint (cache off, a model built in memory) is compiled every time.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from .. import limits
from ..cachedir import ENV, folder, private as _private     # noqa: F401 (ENV: this module's API)

# Reading needs only the C unpickler that pickle.load is, and SHA-256: without importing pickle
# (~1 ms) or hashlib, which loads OpenSSL (~2.5 ms of a ~150 ms one-shot check); the same digests.
try:
    from _pickle import load as _unpickle
except ImportError:                     # an interpreter without the C pickle
    from pickle import load as _unpickle
try:
    from _sha2 import sha256            # Python 3.12 on
except ImportError:
    try:
        from _sha256 import sha256
    except ImportError:                 # built without its own hashes: OpenSSL's
        from hashlib import sha256

FORMAT = 1
_CODE = ("cat/*.py", "cat/grammar.lark", "errors.py")


_fingerprint: str | None = None


def code_fingerprint() -> str:
    """SHA-256 of the code a pickled model depends on (read once per process)."""
    global _fingerprint
    if _fingerprint is None:
        pkg = Path(__file__).resolve().parent.parent
        h = sha256()
        for pattern in _CODE:
            for f in sorted(pkg.glob(pattern)):
                h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
        _fingerprint = h.hexdigest()
    return _fingerprint


def _key(path: str) -> str:
    from ..version import __version__

    lim = limits.current()
    parts = (FORMAT, __version__, sys.version, code_fingerprint(), path, os.path.abspath(path),
             lim.cat_bytes, lim.nesting)
    return sha256(repr(parts).encode()).hexdigest()[:32]


def _digest(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return sha256(f.read()).hexdigest()
    except OSError:
        return None


def load(path: str):
    """The cached Model of the model file `path`, or None."""
    d = folder()
    if d is None or not _private(d):
        return None
    try:
        with open(d / f"{_key(path)}.pickle", "rb") as f:
            entry = _unpickle(f)
        sources, model = entry["sources"], entry["model"]
    except Exception:                       # noqa: BLE001 - missing, truncated, from other code: parse
        return None
    if not sources or any(_digest(src) != digest for src, digest in sources):
        return None
    _mark(model, _key(path), sources)
    return model


def digest(path: str) -> str | None:
    """The SHA-256 of a file's bytes (None if it cannot be read): taken before parsing, for `store`."""
    return _digest(path)


def store(path: str, model, before: str | None) -> None:
    """Remember `model`, parsed from `path` (its `sources` are the files it read, `path` first);
    `before` is `digest(path)` from before the parse: if the file changed since, nothing is stored."""
    import pickle

    d = folder()
    if d is None:
        return
    sources = tuple((src, _digest(src)) for src in model.sources)
    if not sources or sources[0][1] != before or any(h is None for _, h in sources):
        return
    try:
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private(d):
            return
        import tempfile

        fd, tmp = tempfile.mkstemp(dir=d, prefix=".entry.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump({"sources": sources, "model": model}, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, d / f"{_key(path)}.pickle")
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except (OSError, pickle.PicklingError):
        return
    _mark(model, _key(path), sources)


# -- fingerprints of models, and compiled code ---------------------------------------------------

_fingerprints: dict[int, tuple[object, str]] = {}     # id(model) -> (model, fingerprint)


def _mark(model, *parts) -> None:
    if len(_fingerprints) > 256:
        _fingerprints.clear()
    _fingerprints[id(model)] = (model, sha256(repr(parts).encode()).hexdigest())


def fingerprint(model) -> str | None:
    """What identifies `model`'s content across processes, or None (not from the cache)."""
    hit = _fingerprints.get(id(model))
    return hit[1] if hit is not None and hit[0] is model else None


def derived(model, parent, *how) -> None:
    """`model` was computed from `parent` by a deterministic function of (parent, *how) (`how`:
    values whose repr is stable, e.g. sorted tuples of strings): it gets a fingerprint too."""
    fp = fingerprint(parent)
    if fp is not None:
        _mark(model, fp, *how)


def _code_file(fp: str, parts) -> Path | None:
    d = folder()
    if d is None:
        return None
    return d / f"{sha256(repr((FORMAT, fp, parts)).encode()).hexdigest()[:32]}.code"


def load_code(model, *parts):
    """What store_code kept for this model and these arguments, or None."""
    fp = fingerprint(model)
    f = None if fp is None else _code_file(fp, parts)
    if f is None or not _private(f.parent):
        return None
    try:
        with open(f, "rb") as fh:
            return _unpickle(fh)
    except Exception:                       # noqa: BLE001 - missing, truncated, from other code: compile
        return None


def store_code(model, value, *parts) -> None:
    """Keep `value` (picklable) for this model (one with a fingerprint) and these arguments."""
    import pickle

    fp = fingerprint(model)
    f = None if fp is None else _code_file(fp, parts)
    if f is None:
        return
    try:
        f.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private(f.parent):
            return
        import tempfile

        fd, tmp = tempfile.mkstemp(dir=f.parent, prefix=".code.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, f)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except (OSError, pickle.PicklingError, TypeError, ValueError):
        pass
