"""What checking a test yields: outcomes, per-condition verdicts, undefined behaviour, status.
Plain frozen data, consumed by the text/herd/JSON/JUnit printers and the reports."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ast import LitmusTest, value_text

Outcome = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class ConditionResult:
    text: str                       # herd syntax
    expected: str | None            # 'allowed' | 'forbidden' | None (a query, not an expectation)
    allowed: bool | None            # does the model allow an execution satisfying it? None: unknown
    positive: int = 0               # allowed outcomes satisfying the condition
    negative: int = 0               # allowed outcomes not satisfying it
    sane: bool = True               # satisfiable under well-formedness alone
    blame: tuple[tuple[str, ...], ...] = ()   # minimal sets of axioms ruling it out

    @property
    def verdict(self) -> str:
        """The model's verdict as a word: Allowed, Forbidden or Unknown."""
        if self.allowed is None:
            return "Unknown"
        return "Allowed" if self.allowed else "Forbidden"

    @property
    def met(self) -> bool | None:
        if self.expected is None or self.allowed is None:
            return None
        return self.allowed == (self.expected == "allowed") and self.sane


@dataclass(frozen=True)
class UndefinedReport:
    flag: str                       # the model's flag name, e.g. "InFlight"
    events: tuple[str, ...]         # the offending operations, as "P0: st [x], 1"
    why: str


@dataclass(frozen=True)
class Result:
    name: str
    path: str
    status: str                     # pass | fail | error | unknown | undefined | run
    message: str = ""
    observe: tuple[str, ...] = ()
    outcomes: tuple[Outcome, ...] = ()
    complete: bool = True
    conditions: tuple[ConditionResult, ...] = ()
    undefined: tuple[UndefinedReport, ...] = ()
    expect_undefined: bool | None = None
    engine: str = "z3"
    model: str = "ptx"
    time: float = field(default=0.0, compare=False)
    notes: tuple[str, ...] = ()
    matrix_row: tuple[tuple[str, str], ...] | None = None
    source: str = ""

    @property
    def ok(self) -> bool:
        return self.status in ("pass", "run")


def outcome_text(o: Outcome, shown=None) -> str:
    """An outcome as herd prints it: `P1:r0=1; x=2;` (`shown(key, value)` may spell a value)."""
    return " ".join(f"{k}={value_text(v) if shown is None else shown(k, v)};" for k, v in o)


def base_result(test: LitmusTest, engine: str, model: str) -> Result:
    """The Result of a test before it is judged (status error, no message)."""
    return Result(name=test.name, path=test.path, status="error", expect_undefined=test.expect_undefined,
                  engine=engine, model=model, matrix_row=test.matrix_row, source=test.source)
