"""Errors, typed by who is to blame.

Every error the user can cause carries a place (file, line, offending text) so the CLI can print
`path:line: 'text': message` and go on with the batch; InternalError is ours and exits 2.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import methodcache

methodcache.install()       # before the first dataclass, here: the methods' code is kept on disk

_MAX_SNIPPET = 200
_MAX_MESSAGE = 2000


@dataclass(frozen=True)
class SourceLoc:
    """Where a piece of input came from: file path, 1-based line, and the offending text."""

    path: str
    line: int
    text: str = ""

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


class CheckerError(Exception):
    """Base of every error ptxmc reports on purpose."""

    def __init__(self, message: str, where: SourceLoc | None = None):
        super().__init__(message)
        self.message = message
        self.where = where

    def __reduce__(self):   # keep `where` across processes (worker -> parent)
        return (type(self), (self.message, self.where))

    def __str__(self) -> str:
        message = self.message
        if len(message) > _MAX_MESSAGE:  # it may quote a megabyte of fuzzed input
            message = message[:_MAX_MESSAGE - 3] + "..."
        if self.where is None:
            return message
        text = self.where.text
        if len(text) > _MAX_SNIPPET:   # a fuzzed or generated line can be megabytes long
            text = text[:_MAX_SNIPPET - 3] + "..."
        snippet = f" '{text}'" if text else ""
        return f"{self.where}:{snippet}: {message}" if snippet else f"{self.where}: {message}"


class LitmusError(CheckerError):
    """The litmus test is malformed: YAML, PTX, positions, conditions, matrix. The user's input."""


class NeverCompletes(LitmusError):
    """A barrier that the test's threads can never complete (too few arrive, or a wait without an
    arrive): every thread waiting on it blocks. A straight-line test is reported as malformed;
    judged for control paths or a hang (checker.verdict.union), it is a hang (docs/model.md#a18)."""


class ModelError(CheckerError):
    """The cat model file is malformed or names a relation the engine does not provide."""


class SolverUnknown(CheckerError):
    """Z3 answered unknown or ran out of time/resources: the verdict is UNKNOWN, never forbidden."""


class LimitExceeded(CheckerError):
    """A test is larger than a configured limit (threads, events, candidates): reported, not solved."""


class TooLarge(LimitExceeded, LitmusError):
    """A litmus input over a configured limit (file size, nesting, threads, instructions,
    locations; see checker.limits). A LitmusError, so the loaders return it in place of the test,
    and a LimitExceeded, so the test is reported "too large" (UNKNOWN), not malformed."""


class Unsupported(CheckerError):
    """A well-formed input that this engine cannot handle (e.g. brute force on thin-air values)."""


class HarnessError(CheckerError):
    """The hardware harness could not generate, build or run a test."""


class InternalError(CheckerError):
    """A bug in ptxmc itself."""
