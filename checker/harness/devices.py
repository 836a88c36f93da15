"""Per-device harness configurations (devices/*.toml): iterations or time budget, grid, stress
and pre-stress patterns, placement. A configuration is data; codegen bakes it into the program.

Defaults follow GPU litmus-testing practice (see docs/hardware-harness.md for the references):
  * testing_fraction 0.2: a parallel testing environment (MC Mutants, ASPLOS'23) where only 15-20%
    of the dispatched CTAs run test instances and the rest stress memory; that minority was
    necessary to reproduce a weak behaviour on NVIDIA GPUs (reeselevine/nvidia-issue).
  * memory stress (Sorensen & Donaldson, PLDI'16): `pattern` st-st | st-ld | ld-st | ld-ld over
    `target_lines` lines of `line_words` words; `stress_target` test-lines puts those lines in the
    padding between the test's own cells (contention on the lines under test), scratch in a
    separate buffer.
  * location spread (GPUHarbor/cuda-litmus memStride, permuteLocation): consecutive instances of a
    location are `stride_cells` cells apart, permuted per launch and per location.
  * the grid is shrunk at run time to what the GPU can hold at once (occupancy API), so every
    instance's CTAs are co-resident; a test whose testing CTAs alone do not fit fails clearly.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path

from ..errors import HarnessError

DEVICES_DIR = Path(__file__).resolve().parent / "devices"
STRESS_PATTERNS = ("st-st", "st-ld", "ld-st", "ld-ld")
STRESS_TARGETS = ("scratch", "test-lines")


@dataclass(frozen=True)
class DeviceConfig:
    name: str = "default"
    doc: str = ""
    target: str = "sm_90a"
    time_budget_s: float = 10.0
    max_iterations: int = 100000
    spin_cap: int = 4096
    spin_time_us: float = 2000.0
    testing_groups: int = 256
    testing_fraction: float = 0.2
    shuffle_pct: int = 100
    stride_cells: int = 4
    permute_locations: bool = True
    pattern: str = "st-ld"
    stress_target: str = "test-lines"
    line_words: int = 16
    target_lines: int = 4
    iterations: int = 256
    stress_pct: int = 80
    pre_stress_iterations: int = 32
    pre_stress_pct: int = 50
    barrier_pct: int = 90

    def to_dict(self) -> dict:
        return asdict(self)

    def replace(self, **changes) -> "DeviceConfig":
        return _checked({**asdict(self), **changes}, f"device config '{self.name}'")


def _checked(values: dict, where: str) -> DeviceConfig:
    known = {f.name: f.type for f in fields(DeviceConfig)}
    for k in values:
        if k not in known:
            raise HarnessError(f"{where}: unknown key '{k}' (known: {', '.join(sorted(known))})")
    cfg = DeviceConfig(**values)
    checks = [
        (cfg.pattern in STRESS_PATTERNS, f"stress pattern must be one of {', '.join(STRESS_PATTERNS)}"),
        (cfg.time_budget_s > 0, "time_budget_s must be positive"),
        (cfg.max_iterations >= 1, "max_iterations must be at least 1"),
        (cfg.spin_cap >= 1, "spin_cap must be at least 1"),
        (0 < cfg.spin_time_us <= 10_000_000, "spin_time_us must be positive (at most 10 s)"),
        (cfg.testing_groups >= 1, "testing_groups must be at least 1"),
        (0 < cfg.testing_fraction <= 1, "testing_fraction must be in (0, 1]"),
        (cfg.stress_target in STRESS_TARGETS, f"stress_target must be one of {', '.join(STRESS_TARGETS)}"),
        (cfg.stress_target != "test-lines" or cfg.stride_cells >= 2,
         "stress_target test-lines needs stride_cells >= 2 (the stress writes the padding cells)"),
        (cfg.stride_cells >= 1, "stride_cells must be at least 1"),
        (cfg.line_words >= 1 and cfg.target_lines >= 1, "line_words and target_lines must be >= 1"),
        (cfg.target.startswith("sm_"), "target must look like sm_90a"),
    ]
    for pct in ("shuffle_pct", "stress_pct", "pre_stress_pct", "barrier_pct"):
        checks.append((0 <= getattr(cfg, pct) <= 100, f"{pct} must be between 0 and 100"))
    for ok, msg in checks:
        if not ok:
            raise HarnessError(f"{where}: {msg}")
    return cfg


def _flatten(data: dict) -> dict:
    flat = {}
    for k, v in data.items():
        if isinstance(v, dict):
            flat.update(v)
        else:
            flat[k] = v
    return flat


def device_names() -> list[str]:
    return sorted(p.stem for p in DEVICES_DIR.glob("*.toml"))


def load_device(name_or_path: str | None = None) -> DeviceConfig:
    """A bundled configuration by name ('default', 'h100', 'b200') or a .toml file path."""
    try:
        import tomllib
    except ImportError:                      # Python 3.10
        try:
            import tomli as tomllib          # type: ignore[no-redef]
        except ImportError:
            raise HarnessError("reading device configurations needs Python 3.11+ or `pip install tomli`")
    spec = name_or_path or "default"
    path = Path(spec)
    if not (spec.endswith(".toml") or path.is_file()):
        path = DEVICES_DIR / f"{spec}.toml"
        if not path.is_file():
            raise HarnessError(f"unknown device configuration '{spec}' (bundled: {', '.join(device_names())})")
    try:
        data = tomllib.loads(path.read_text())
    except OSError as e:
        raise HarnessError(f"{path}: cannot read: {e.strerror}")
    except tomllib.TOMLDecodeError as e:
        raise HarnessError(f"{path}: not valid TOML: {e}")
    return _checked(_flatten(data), str(path))
