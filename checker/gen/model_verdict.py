"""The model's verdict on a generated test's cycle condition (for --expect-from-model): the only
place the generator calls the checker. A verdict is allowed, forbidden or undefined; a test the
checker cannot decide (unknown) or reject (error) gets no expectation and is reported."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..resources import resolve_model
from ..verdict.check import check_test
from ..errors import LitmusError
from ..front.litmus import load_text

VERDICTS = ("allowed", "forbidden", "undefined")


@dataclass(frozen=True)
class Verdict:
    kind: str              # allowed | forbidden | undefined | unknown | error
    message: str = ""


class Judge:
    """A model loaded once, judging test after test."""

    def __init__(self, model: str | None, options: tuple[str, ...] = (), timeout: float | None = None):
        self.model = resolve_model(model)
        self.model_name = Path(self.model.path).stem
        self.options = frozenset(options)
        self.timeout = timeout

    def __call__(self, body: str, condition: str, path: str = "<generated>") -> Verdict:
        text = body + f"  expect:\n    allowed: ['{condition}']\n"
        item = load_text(text, path)[0]
        if isinstance(item, LitmusError):
            return Verdict("error", str(item))
        r = check_test(item, self.model, self.model_name, self.options, timeout=self.timeout)
        if r.undefined:
            return Verdict("undefined")
        if r.status in ("unknown", "error"):
            return Verdict(r.status, r.message)
        c = r.conditions[0]
        if not c.sane:
            return Verdict("error", "no execution satisfies the cycle condition even without axioms")
        return Verdict("allowed" if c.allowed else "forbidden")


_judge: Judge | None = None


def init_worker(model: str | None, options: tuple[str, ...], timeout: float | None) -> None:
    global _judge
    _judge = Judge(model, options, timeout)


def judge_in_worker(item: tuple[str, str]) -> Verdict:
    assert _judge is not None
    return _judge(*item)
