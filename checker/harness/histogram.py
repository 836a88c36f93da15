"""Hardware histograms: what one run of one test observed, with everything needed to reproduce
it (device, driver, CUDA version, target, configuration, seed). JSON on disk; `parse_output`
reads the block a generated program prints, decoding bucket indices through the outcome space."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import HarnessError
from .space import Outcome, OutcomeSpace

FORMAT = "ptxmc-histogram"
VERSION = 1


@dataclass(frozen=True)
class Histogram:
    test: str
    vars: tuple[str, ...]
    counts: tuple[tuple[Outcome, int], ...]      # observed outcomes (count > 0), sorted
    other: int = 0                               # outside the outcome space: must stay 0
    timeout: int = 0                             # an await or the epilogue gave up
    device: str = ""
    compute_capability: str = ""
    driver: str = ""
    cuda: str = ""                               # runtime version
    target: str = ""
    config: dict = field(default_factory=dict, compare=False, hash=False)
    seed: int = 0
    iterations: int = 0
    time_s: float = 0.0

    @property
    def total(self) -> int:
        """Instances run (N), timeouts and other included."""
        return sum(c for _, c in self.counts) + self.other + self.timeout

    @property
    def valid(self) -> int:
        """Instances that produced an outcome in the space."""
        return sum(c for _, c in self.counts)

    def count(self, outcome: Outcome) -> int:
        return dict(self.counts).get(tuple(outcome), 0)

    def to_json(self) -> dict:
        return {
            "format": FORMAT, "version": VERSION, "test": self.test, "vars": list(self.vars),
            "counts": [{"outcome": {k: v for k, v in o}, "count": c} for o, c in self.counts],
            "other": self.other, "timeout": self.timeout, "device": self.device,
            "compute_capability": self.compute_capability, "driver": self.driver, "cuda": self.cuda,
            "target": self.target, "config": self.config, "seed": self.seed,
            "iterations": self.iterations, "instances": self.total, "time_s": self.time_s,
        }

    @staticmethod
    def from_json(data: dict, where: str = "<json>") -> "Histogram":
        try:
            if data.get("format") != FORMAT:
                raise HarnessError(f"{where}: not a ptxmc histogram (format is {data.get('format')!r})")
            if data.get("version") != VERSION:
                raise HarnessError(f"{where}: histogram version {data.get('version')} (this ptxmc reads {VERSION})")
            names = tuple(data["vars"])
            counts = []
            for row in data["counts"]:
                o = row["outcome"]
                if set(o) != set(names):
                    raise HarnessError(f"{where}: an outcome names {sorted(o)}, expected {list(names)}")
                counts.append((tuple((n, int(o[n])) for n in names), int(row["count"])))
            return Histogram(
                test=str(data["test"]), vars=names, counts=_normal(counts), other=int(data.get("other", 0)),
                timeout=int(data.get("timeout", 0)), device=str(data.get("device", "")),
                compute_capability=str(data.get("compute_capability", "")), driver=str(data.get("driver", "")),
                cuda=str(data.get("cuda", "")), target=str(data.get("target", "")),
                config=dict(data.get("config", {})), seed=int(data.get("seed", 0)),
                iterations=int(data.get("iterations", 0)), time_s=float(data.get("time_s", 0.0)))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise HarnessError(f"{where}: malformed histogram ({type(e).__name__}: {e})")


def _normal(counts) -> tuple[tuple[Outcome, int], ...]:
    merged: dict[Outcome, int] = {}
    for o, c in counts:
        if c < 0:
            raise HarnessError(f"negative count {c} for {o}")
        if c:
            merged[tuple(o)] = merged.get(tuple(o), 0) + c
    return tuple(sorted(merged.items()))


def make(test: str, space_names, counts, **meta) -> Histogram:
    """A histogram from (outcome, count) pairs (merged, zero counts dropped, sorted)."""
    return Histogram(test=test, vars=tuple(space_names), counts=_normal(counts), **meta)


def parse_output(text: str, space: OutcomeSpace, target: str = "", config: dict | None = None) -> Histogram:
    """Read the 'ptxmc-hw 1' block a generated program printed."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    if "ptxmc-hw 1" not in lines:
        errs = [l for l in lines if l.startswith("error")]
        raise HarnessError("the program printed no result block" + (f": {errs[0]}" if errs else ""))
    meta: dict[str, str] = {}
    counts = []
    done = False
    for l in lines[lines.index("ptxmc-hw 1") + 1:]:
        key, _, rest = l.partition(" ")
        if key == "end":
            done = True
            break
        if key == "bucket":
            idx, c = rest.split()
            counts.append((space.decode(int(idx)), int(c)))
        else:
            meta[key] = rest
    if not done:
        raise HarnessError("the program's result block is truncated (no 'end' line)")
    try:
        return make(meta.get("test", ""), space.names, counts, other=int(meta.get("other", 0)),
                    timeout=int(meta.get("timeout", 0)), device=meta.get("device", ""),
                    compute_capability=meta.get("cc", ""), driver=meta.get("driver", ""),
                    cuda=meta.get("runtime", ""), target=target, config=dict(config or {}),
                    seed=int(meta.get("seed", 0)), iterations=int(meta.get("iterations", 0)),
                    time_s=float(meta.get("time", 0.0)))
    except ValueError as e:
        raise HarnessError(f"malformed result block: {e}")


def save(hists: list[Histogram], path: str | Path) -> None:
    """Write one histogram (an object) or several (a list) as JSON."""
    data = hists[0].to_json() if len(hists) == 1 else [h.to_json() for h in hists]
    Path(path).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def load(path: str | Path) -> list[Histogram]:
    """Histograms from a JSON file (an object or a list of objects)."""
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except OSError as e:
        raise HarnessError(f"{p}: cannot read: {e.strerror}")
    except json.JSONDecodeError as e:
        raise HarnessError(f"{p}: not JSON: {e}")
    items = data if isinstance(data, list) else [data]
    return [Histogram.from_json(d, f"{p}[{k}]" if isinstance(data, list) else str(p)) for k, d in enumerate(items)]
