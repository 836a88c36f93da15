"""Errors, typed by who is to blame.

Every error the user can cause carries a place (file, line, offending text) so the CLI can print
`path:line: 'text': message` and go on with the batch; InternalError is ours and exits 2.
"""
from __future__ import annotations

from dataclasses import dataclass


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

    def __str__(self) -> str:
        if self.where is None:
            return self.message
        snippet = f" '{self.where.text}'" if self.where.text else ""
        return f"{self.where}:{snippet}: {self.message}" if snippet else f"{self.where}: {self.message}"


class LitmusError(CheckerError):
    """The litmus test is malformed: YAML, PTX, positions, conditions, matrix. The user's input."""


class ModelError(CheckerError):
    """The cat model file is malformed or names a relation the engine does not provide."""


class SolverUnknown(CheckerError):
    """Z3 answered unknown or ran out of time/resources: the verdict is UNKNOWN, never forbidden."""


class LimitExceeded(CheckerError):
    """A test is larger than a configured limit (threads, events, candidates): reported, not solved."""


class Unsupported(CheckerError):
    """A well-formed input that this engine cannot handle (e.g. brute force on thin-air values)."""


class HarnessError(CheckerError):
    """The hardware harness could not generate, build or run a test."""


class InternalError(CheckerError):
    """A bug in ptxmc itself."""
