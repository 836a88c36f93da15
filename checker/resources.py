"""Where the bundled models (axioms/*.cat) and suites (litmus/) are, and finding a model by name
or path."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AXIOMS_DIR = ROOT / "axioms"
LITMUS_DIR = ROOT / "litmus"
DEFAULT_MODEL = "ptx"


def model_path(spec: str | None) -> Path:
    """The file of a model given by name (axioms/NAME.cat) or by path."""
    from .errors import ModelError

    spec = spec or DEFAULT_MODEL
    p = Path(spec)
    if not p.suffix and not p.exists():
        p = AXIOMS_DIR / f"{spec}.cat"
    if not p.exists():
        raise ModelError(f"no model '{spec}' (looked for {p})")
    return p


def resolve_model(spec: str | None):
    """A model by name (axioms/NAME.cat) or by path, parsed (checker.cat.interp.Model)."""
    from .cat.interp import load_model

    return load_model(str(model_path(spec)))


def model_name(model) -> str:
    """The name a result gives a model: its file's stem (ptx, sc, ...)."""
    return Path(model.path).stem
