"""A side of a comparison: a model (its text, so that a remote worker needs no shared file) and
its options. Workers parse each model text once (cached by its hash)."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from ..executors.shipped import model_of  # noqa: F401 - a side's model, parsed from its text once per worker


@dataclass(frozen=True)
class Side:
    label: str                  # how the user named it: "ptx", "sc", "my.cat", "ptx +strict-cta"
    path: str                   # the model file (includes resolve relative to it)
    text: str                   # the model's text
    options: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The model name results carry (the file's stem), as `ptxmc run` gives it."""
        return Path(self.path).stem

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


def side_of(spec: str | None, options) -> Side:
    """The side for `--model spec` with these options (the model read and checked here, once)."""
    from ..resources import model_path, resolve_model

    path = model_path(spec)
    resolve_model(spec)                               # a malformed model fails here, before the work
    label = spec or "ptx"
    opts = tuple(options)
    if opts:
        label += " " + " ".join(f"+{o}" for o in opts)
    return Side(label, str(path), path.read_text(encoding="utf-8"), opts)

