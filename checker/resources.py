"""Where the bundled models (axioms/*.cat) and suites (litmus/) are, finding a model by name or
path, and a model's hash. The one module that locates bundled files.

Two layouts hold them:

- installed from a wheel (`pip install .`, or from an index): they ship inside the package, as
  `checker/axioms/` and `checker/litmus/` (setup.py copies them there at build time), and are
  found with importlib.resources;
- a checkout (also `pip install -e .`): the repository's top-level `axioms/` and `litmus/`,
  beside `checker/`.

ROOT is the folder that holds both - the package folder once installed, the repository in a
checkout - so a bundled file has the same relative name in both (`axioms/ptx.cat`,
`litmus/core/MP.yaml`): explanations and reports show paths relative to ROOT, and a relative
path that names a bundled file (`ptxmc check litmus/core/MP.yaml::NAME`) is found from any
folder (`bundled`).
"""
from __future__ import annotations

import os
from pathlib import Path

DEFAULT_MODEL = "ptx"
BUNDLED = ("axioms", "litmus")      # the folders of bundled files, under ROOT


def _package_dir() -> Path:
    here = Path(__file__)
    if here.is_file():      # an ordinary folder (importlib.resources would say the same, in ~3 ms)
        return here.resolve().parent
    try:
        from importlib.resources import files

        found = files(__package__)
        if isinstance(found, Path):
            return found.resolve()
    except (ImportError, TypeError, ValueError):   # a loader without resources: use the file
        pass
    return Path(__file__).resolve().parent


def _root(package: Path) -> Path:
    """The package folder when the bundled files are inside it (installed), else its parent (a checkout)."""
    return package if (package / "axioms").is_dir() else package.parent


PACKAGE_DIR = _package_dir()
ROOT = _root(PACKAGE_DIR)
AXIOMS_DIR = ROOT / "axioms"
LITMUS_DIR = ROOT / "litmus"


def bundled(path: str | os.PathLike[str]) -> str:
    """A file or folder a user named: as given when it exists; otherwise, for a relative path
    into the bundled files (`litmus/...`, `axioms/...`), the bundled one if there is such a file;
    otherwise as given (the caller reports that it does not exist)."""
    p = os.fspath(path)
    if os.path.exists(p) or os.path.isabs(p):
        return p
    parts = Path(p).parts
    if not parts or parts[0] not in BUNDLED:
        return p
    inside = ROOT / p
    return str(inside) if inside.exists() else p


def model_path(spec: str | None) -> Path:
    """The file of a model given by name (axioms/NAME.cat) or by path."""
    from .errors import ModelError

    spec = spec or DEFAULT_MODEL
    p = Path(bundled(spec))
    if not p.suffix and not p.exists():
        p = AXIOMS_DIR / f"{spec}.cat"
    if not p.exists():
        raise ModelError(f"no model '{spec}' (looked for {p})")
    return p


def resolve_model(spec: str | None):
    """A model by name (axioms/NAME.cat) or by path, parsed (checker.cat.interp.Model). A bundled
    model is kept parsed on disk between processes (checker.cat.cache); other files are parsed
    in every process that uses them."""
    from .cat.interp import load_model

    path = model_path(spec)
    return load_model(str(path), persist=_is_bundled_model(path))


def _is_bundled_model(path: Path) -> bool:
    try:
        return path.resolve().parent == AXIOMS_DIR.resolve()
    except OSError:
        return False


def model_name(model) -> str:
    """The name a result gives a model: its file's stem (ptx, sc, ...)."""
    return Path(model.path).stem


def model_hash(model) -> str:
    """The first 16 hex digits of the SHA-256 of a model's files (the file, then its includes):
    what reports and `ptxmc --version` print to say which model text gave a verdict."""
    import hashlib

    h = hashlib.sha256()
    for src in model.sources or (model.path,):
        with open(src, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def shown(path: str) -> str:
    """A path as ptxmc prints it: relative to the working folder when it lies below it (as the
    user would type it from there), else as it is."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel
