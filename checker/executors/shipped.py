"""Models that travel to workers as text, so that a remote worker needs no shared file: the
file's path (its name, and where `include`s resolve) and its text; parsed once per worker
process (cached by the text's hash)."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..resources import model_path


@dataclass(frozen=True)
class ModelText:
    path: str
    text: str


def model_text(spec: str | None) -> ModelText:
    """The model `--model spec` names, as text."""
    p = model_path(spec)
    return ModelText(str(p), p.read_text(encoding="utf-8"))


_models: dict[tuple[str, str], object] = {}


def model_of(m) -> object:
    """The parsed model of anything with `.path` and `.text` (a ModelText, a compare Side)."""
    from ..cat.interp import parse_model

    key = (m.path, hashlib.sha256(m.text.encode()).hexdigest())
    model = _models.get(key)
    if model is None:
        model = _models[key] = parse_model(m.text, m.path)
    return model
