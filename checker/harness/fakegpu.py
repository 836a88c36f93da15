"""A fake GPU for testing the harness's plumbing end to end without a GPU: `ptxmc hw run
--fake-device SPEC` goes through the real suite runner, output parsing, histograms.jsonl, the
litmus7 log and the comparison with the model, with a backend that prints what a generated
program would print.

Everything it produces is SIMULATED: the histograms carry `simulated: true`, the device is named
"ptxmc fake device", compare and the litmus7 log say SIMULATED on every table and line, and
`histogram.load` refuses such files for reports. It is never an observation of any GPU.

Outcomes are sampled from the model's allowed outcomes for the test (each mapped to its bucket
through the program's outcome space; one the space lacks lands in `other`, a harness bug the
comparison then reports). SPEC injects faults, comma-separated KIND:TEST (TEST a test name, or
* for every test):

    timeout:T    every instance of T times out (no valid instance: 'no-data')
    malformed:T  T's output has a malformed bucket line (the test fails, the suite goes on)
    forbidden:T  some instances of T show an outcome the model forbids ('violation')
    hang:T       a quarter of T's instances hang (a spin loop gives up: 'hangs' unless the model
                 allows a hang)
    crash:T      T's program exits with an error
    seed:N       the sampling seed (default 1)
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from ..ast import LitmusTest
from ..errors import HarnessError
from .build import write_source
from .codegen import Program

KINDS = ("timeout", "malformed", "forbidden", "crash", "hang", "seed")
DEVICE_NAME = "ptxmc fake device"


def parse_spec(spec: str) -> dict[str, set[str] | int]:
    out: dict = {k: set() for k in KINDS if k != "seed"}
    out["seed"] = 1
    for part in filter(None, (p.strip() for p in (spec or "").split(","))):
        kind, _, arg = part.partition(":")
        if kind not in KINDS or not arg:
            raise HarnessError(f"--fake-device {spec!r}: expected KIND:TEST with KIND one of {', '.join(KINDS)}")
        if kind == "seed":
            if not arg.isdigit():
                raise HarnessError(f"--fake-device: seed:{arg} is not a number")
            out["seed"] = int(arg)
        else:
            out[kind].add(arg)
    return out


@dataclass
class FakeBackend:
    """`allowed`: test name -> the model's allowed outcomes (((var, value), ...), ...); a test the
    model has no list for (undefined, unknown) gets outcomes sampled from its whole space.
    `hangs`: test name -> the model's hang verdict; where a hang is allowed, a quarter of the
    instances hang (all of them when the model lists no finishing outcome)."""

    allowed: dict[str, list]
    spec: dict = field(default_factory=lambda: parse_spec(""))
    hangs: dict = field(default_factory=dict)
    instances: int = 4096
    simulated: bool = True

    def _hit(self, kind: str, name: str) -> bool:
        names = self.spec.get(kind, set())
        return name in names or "*" in names

    def prepare(self, program: Program, outdir: Path) -> Path:
        return write_source(program, outdir)      # no compiler: the source is the 'executable'

    def execute(self, test: LitmusTest, program: Program, exe: Path, device: str, seed: int,
                time_s: float | None, iterations: int | None) -> str:
        name = test.name
        if self._hit("crash", name):
            raise HarnessError(f"{name}: the run failed (exit 3): error fake.cu:1 simulated crash")
        rng = random.Random(f"{self.spec['seed']}:{seed}:{name}")
        space = program.space
        counts: dict[int, int] = {}
        other = timeout = hang = 0
        if self._hit("timeout", name):
            timeout = self.instances
        else:
            pool = self.allowed.get(name)
            if self.hangs.get(name) and not pool:       # the model: every execution hangs
                hang = self.instances
            elif self._hit("hang", name) or self.hangs.get(name):
                hang = self.instances // 4
            if pool is None:
                pool = [space.decode(k) for k in range(space.size)]
            for _ in range(self.instances - hang):
                o = dict(rng.choice(pool)) if pool else {}
                idx = space.index(space.values_of(o))
                if idx is None:
                    other += 1
                else:
                    counts[idx] = counts.get(idx, 0) + 1
            if self._hit("forbidden", name):
                allowed = {space.index(space.values_of(o)) for o in (self.allowed.get(name) or [])}
                bad = [k for k in range(space.size) if k not in allowed]
                if not bad:
                    raise HarnessError(f"--fake-device forbidden:{name}: the model allows every outcome of its space")
                counts[bad[0]] = counts.get(bad[0], 0) + 7
        total = sum(counts.values()) + other + timeout + hang
        cc = {"sm_90a": "9.0", "sm_100a": "10.0"}.get(program.target, "0.0")
        lines = ["ptxmc-hw 1", f"test {name}", f"device {DEVICE_NAME}", f"cc {cc}", "sms 0", "driver 0",
                 "runtime 0", f"seed {seed}", "iterations 1", f"instances {total}", "testing_ctas 0", "time 0.010"]
        lines += [f"bucket {k} {c}" for k, c in sorted(counts.items())]
        if self._hit("malformed", name):
            lines.append("bucket 3")
        lines += [f"other {other}", f"timeout {timeout}", "epilogue 0", "unsynced 0", f"hang {hang}", "end"]
        return "fake chatter before the block\n" + "\n".join(lines) + "\n"
