"""The importers' common intermediate form and their outcomes.

Each importer (checker.convert.herd, .dat3m, .mixedproxy) turns one source file into a
`TestIR`: ptxmc's own vocabulary (positions `gpuG[.clusterK].ctaN[.warpW]`, PTX instruction text
that checker.isa.syntax parses, memory declarations, herd-syntax conditions), with the source line of
everything it came from. checker.convert.emit writes the YAML; checker.convert.driver loads
that YAML with ptxmc's own loader before calling the test converted.

Whatever cannot be expressed raises `Unconvertible`, naming the source file, line and text; the
driver reports the test as skipped with that reason and goes on with the next file.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from ..errors import LitmusError, SourceLoc


class Unconvertible(LitmusError):
    """A construct of the source file that ptxmc cannot express (or a malformed source file)."""


def fail(msg: str, path: str, line: int, text: str = ""):
    raise Unconvertible(msg, SourceLoc(path, line, text.strip()))


@dataclass(frozen=True)
class Code:
    """One instruction in ptxmc's PTX syntax, and the source text it translates."""

    text: str
    line: int
    original: str = ""


@dataclass(frozen=True)
class Control:
    """A control-flow construct of the source: kind is 'label', 'jump' or 'branch'; `text` is
    the source text; `target` the label a jump or branch goes to.
    checker.convert.controlflow decides what becomes of it."""

    kind: str
    text: str
    line: int
    target: str = ""
    args: tuple[str, ...] = ()    # a conditional branch's comparison and operands ('beq', 'r0', '0')


Item = Union[Code, Control]


@dataclass(frozen=True)
class ThreadIR:
    name: str
    at: str                       # gpuG[.clusterK].ctaN[.warpW]
    body: tuple[Item, ...]
    line: int


@dataclass(frozen=True)
class TestIR:
    """One imported test. `memory` keeps declaration order: name -> initial value (int) or the
    long-form mapping (space/owner/init/alias_of/texture_of/...). `allowed`/`forbidden` are the
    expectations the source file states (ptxmc condition text); `unstated` lists conditions the
    file gives without a verdict (`exists C` of herd and Dat3M), recorded in the doc."""

    name: str
    fmt: str                      # 'herd' | 'dat3m' | 'mixedproxy'
    path: str                     # the source file, as shown to the user
    line: int                     # the line that names the test (or 1)
    doc: str
    memory: tuple[tuple[str, object], ...]
    threads: tuple[ThreadIR, ...]
    allowed: tuple[str, ...] = ()
    forbidden: tuple[str, ...] = ()
    unstated: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    cites: str = ""               # a verdict source the file names (`(* ptxmc: source: ... *)`)
    arch: str | None = None


@dataclass(frozen=True)
class Converted:
    """A test written to `out` (relative to the output folder)."""

    path: str
    name: str
    out: str
    yaml: str
    notes: tuple[str, ...]
    verdict: str                  # what the expectations are: 'stated by the file' or 'none'


@dataclass(frozen=True)
class Skipped:
    """A test (or a whole file) not converted, and why."""

    path: str
    name: str
    error: LitmusError

    def line(self) -> str:
        """The name and the reason, control and formatting characters escaped (the name comes
        from the source file and goes to a terminal and the report)."""
        from ..textsafe import printable

        return printable(f"{self.name + ': ' if self.name else ''}{self.error}")
