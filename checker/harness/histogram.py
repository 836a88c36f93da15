"""Hardware histograms: what one run of one test observed, with everything needed to reproduce
it (device, driver, CUDA version, target, configuration, seed) and to refuse it later when it no
longer belongs to the test (the test's fingerprint). JSON on disk (one histogram, a list, or
JSON lines appended per test: histograms.jsonl); `parse_output` reads the block a generated
program prints, decoding bucket indices through the outcome space and checking that the counts
add up to the instances run.

A histogram whose `simulated` field is set came from the fake device (checker.harness.fakegpu):
it is never an observation, and compare/import say so on every line."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import HarnessError
from .space import Outcome, OutcomeSpace

FORMAT = "ptxmc-histogram"
VERSION = 1
MAX_COUNT = 2**63 - 1          # counts are 64-bit counters on the device


def count_of(v, what: str) -> int:
    """A count read from a file: a non-negative integer below 2**63 (D10: a negative, fractional,
    string or boolean count is refused, never taken as given)."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise HarnessError(f"{what} is {v!r}: a count must be a non-negative integer")
    if not 0 <= v <= MAX_COUNT:
        raise HarnessError(f"{what} is {v if abs(v) < 10**30 else '(a ' + str(len(str(abs(v)))) + '-digit number)'}: "
                           f"a count must be between 0 and 2**63-1")
    return v


def _value_of(v, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not -(2**63) <= v < 2**64:
        raise HarnessError(f"{what} is {str(v)[:40]!r}: a value must be an integer of at most 64 bits")
    return v


@dataclass(frozen=True)
class Histogram:
    test: str
    vars: tuple[str, ...]
    counts: tuple[tuple[Outcome, int], ...]      # observed outcomes (count > 0), sorted
    other: int = 0                               # outside the outcome space: must stay 0
    timeout: int = 0                             # an await gave up
    epilogue: int = 0                            # the epilogue's wait for async copies gave up
    unsynced: int = 0                            # (informative) the start barrier gave up
    hang: int = 0                                # a spin loop did not exit within SPIN_CAP spins
    device: str = ""
    compute_capability: str = ""
    driver: str = ""
    cuda: str = ""                               # runtime version
    target: str = ""
    config: dict = field(default_factory=dict, compare=False, hash=False)
    seed: int = 0
    iterations: int = 0
    time_s: float = 0.0
    fingerprint: str = ""                        # checker.harness.space.fingerprint(test) at run time
    sms: int = 0
    nvcc: str = ""
    device_index: str = ""                       # CUDA_VISIBLE_DEVICES the run used ('' = default)
    simulated: bool = False                      # from the fake device: never an observation

    @property
    def total(self) -> int:
        """Instances run (N), timeouts and other included."""
        return sum(c for _, c in self.counts) + self.other + self.timeout + self.epilogue + self.hang

    def key(self) -> tuple:
        """What must agree for two runs to be added up: device, target, configuration, toolchain."""
        return (self.device, self.compute_capability, self.target, self.config.get("name", ""),
                json.dumps(self.config, sort_keys=True), self.cuda, self.simulated)

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
            "other": self.other, "timeout": self.timeout, "epilogue": self.epilogue, "unsynced": self.unsynced,
            "hang": self.hang,
            "fingerprint": self.fingerprint, "sms": self.sms, "nvcc": self.nvcc, "device_index": self.device_index,
            "simulated": self.simulated, "device": self.device,
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
            if not isinstance(data.get("test"), str) or not data["test"]:
                raise HarnessError(f"{where}: the test name is {data.get('test')!r}, not a name")
            if not isinstance(data["vars"], list) or not all(isinstance(v, str) for v in data["vars"]):
                raise HarnessError(f"{where}: 'vars' must be a list of variable names")
            names = tuple(data["vars"])
            counts = []
            for k, row in enumerate(data["counts"]):
                o = row["outcome"]
                if not isinstance(o, dict) or set(o) != set(names):
                    raise HarnessError(f"{where}: an outcome names {sorted(o)}, expected {list(names)}")
                counts.append((tuple((n, _value_of(o[n], f"{where}: counts[{k}] {n}")) for n in names),
                               count_of(row["count"], f"{where}: counts[{k}].count")))

            def n(key):
                return count_of(data.get(key, 0), f"{where}: '{key}'")
            time_s = data.get("time_s", 0.0)
            if isinstance(time_s, bool) or not isinstance(time_s, (int, float)) or not 0 <= time_s < 1e9:
                raise HarnessError(f"{where}: 'time_s' is {time_s!r}: seconds must be a finite number >= 0")
            h = Histogram(
                test=data["test"], vars=names, counts=_normal(counts), other=n("other"),
                timeout=n("timeout"), device=str(data.get("device", "")),
                compute_capability=str(data.get("compute_capability", "")), driver=str(data.get("driver", "")),
                cuda=str(data.get("cuda", "")), target=str(data.get("target", "")),
                config=dict(data.get("config", {})), seed=n("seed"),
                iterations=n("iterations"), time_s=float(time_s),
                epilogue=n("epilogue"), unsynced=n("unsynced"), hang=n("hang"),
                fingerprint=str(data.get("fingerprint", "")), sms=n("sms"),
                nvcc=str(data.get("nvcc", "")), device_index=str(data.get("device_index", "")),
                simulated=data.get("simulated", False) is True)
            if "instances" in data and count_of(data["instances"], f"{where}: 'instances'") != h.total:
                raise HarnessError(f"{where}: 'instances' is {data['instances']}, the counts add up to {h.total}")
            return h
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


def parse_output(text: str, space: OutcomeSpace, target: str = "", config: dict | None = None,
                 **extra) -> Histogram:
    """Read the 'ptxmc-hw 1' block a generated program printed; HarnessError for a malformed or
    truncated block, or counts that do not add up to the instances the program says it ran.
    `extra`: further Histogram fields (fingerprint, nvcc, device_index, simulated)."""
    from .bundle_run import parse_block           # the one reader of the block, the bundle's run.py's too
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    if "ptxmc-hw 1" not in lines:
        errs = [l for l in lines if l.startswith("error")]
        raise HarnessError("the program printed no result block" + (f": {errs[0]}" if errs else ""))
    try:
        meta, buckets = parse_block(lines[lines.index("ptxmc-hw 1"):])
    except ValueError as e:
        raise HarnessError(str(e).replace("the result block", "the program's result block"))
    counts = [(space.decode(b), c) for b, c in buckets]
    try:
        h = make(meta.get("test", ""), space.names, counts, other=int(meta.get("other", 0)),
                 timeout=int(meta.get("timeout", 0)), epilogue=int(meta.get("epilogue", 0)),
                 unsynced=int(meta.get("unsynced", 0)), hang=int(meta.get("hang", 0)),
                 device=meta.get("device", ""),
                 compute_capability=meta.get("cc", ""), driver=meta.get("driver", ""),
                 cuda=meta.get("runtime", ""), target=target, config=dict(config or {}),
                 seed=int(meta.get("seed", 0)), iterations=int(meta.get("iterations", 0)),
                 time_s=float(meta.get("time", 0.0)), sms=int(meta.get("sms", 0) or 0), **extra)
        instances = int(meta["instances"]) if "instances" in meta else None
    except (ValueError, TypeError) as e:
        raise HarnessError(f"malformed result block: {e}")
    if instances is not None and instances != h.total:
        raise HarnessError(f"{h.test}: the counts add up to {h.total} instances, the program ran {instances} "
                           f"(buckets {h.valid} + other {h.other} + timeout {h.timeout} + epilogue {h.epilogue} + hang {h.hang})")
    return h


def append_jsonl(h: Histogram, path: str | Path) -> None:
    """Append one histogram as a line of `path` (histograms.jsonl), flushed at once, so a run
    that is killed keeps every test it finished."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(h.to_json(), sort_keys=True) + "\n")
        f.flush()


def save(hists: list[Histogram], path: str | Path, policy=None) -> None:
    """Write one histogram (an object) or several (a list) as JSON (checker.outsafe.write_file)."""
    from ..outsafe import Policy, write_file
    data = hists[0].to_json() if len(hists) == 1 else [h.to_json() for h in hists]
    write_file(path, json.dumps(data, indent=1, sort_keys=True) + "\n", policy or Policy())


def load(path: str | Path, allow_simulated: bool = False) -> list[Histogram]:
    """Histograms from a JSON file (an object or a list of objects) or a .jsonl file (one per
    line). Simulated histograms (the fake device) are refused unless `allow_simulated`: they are
    never observations, and a report must not take them for some."""
    hists = _load(path)
    if not allow_simulated:
        fake = [h.test for h in hists if h.simulated]
        if fake:
            raise HarnessError(f"{path}: SIMULATED histograms (the fake device) of {', '.join(fake[:3])}"
                               f"{' ...' if len(fake) > 3 else ''}: not observations of a GPU")
    return hists


def _json(text: str):
    """json.loads, with every way it can fail a ValueError (D13: nesting too deep for the parser,
    an integer of more digits than Python converts, NaN and Infinity, which JSON does not have)."""
    def no_constant(name):
        raise ValueError(f"{name} is not a JSON number")
    try:
        return json.loads(text, parse_constant=no_constant)
    except RecursionError:
        raise ValueError("nested too deeply")


def _load(path: str | Path) -> list[Histogram]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise HarnessError(f"{p}: cannot read: {e.strerror}")
    except UnicodeDecodeError as e:
        raise HarnessError(f"{p}: not UTF-8 text (byte {e.start}): not a histogram file")
    if p.suffix == ".jsonl":
        out = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                data = _json(line)
            except ValueError as e:
                if n == len(text.splitlines()) and not text.endswith("\n"):   # killed while writing it
                    break
                raise HarnessError(f"{p}:{n}: not JSON: {e}")
            if not isinstance(data, dict):
                raise HarnessError(f"{p}:{n}: not a histogram (a JSON {type(data).__name__})")
            out.append(Histogram.from_json(data, f"{p}:{n}"))
        return out
    try:
        data = _json(text)
    except ValueError as e:
        raise HarnessError(f"{p}: not JSON: {e}")
    if isinstance(data, list) and not all(isinstance(d, dict) for d in data) or not isinstance(data, (list, dict)):
        raise HarnessError(f"{p}: not a histogram or a list of histograms")
    items = data if isinstance(data, list) else [data]
    return [Histogram.from_json(d, f"{p}[{k}]" if isinstance(data, list) else str(p)) for k, d in enumerate(items)]
