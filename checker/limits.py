"""Resource limits: every bound ptxmc puts on its input and on its work, with the defaults in one
place.

A limit exists so that no input - a huge or deeply nested file, a test with thousands of events,
a query Z3 cannot settle - can crash ptxmc with a Python traceback, exhaust the stack, or run
without bound. Exceeding a limit is never a verdict: a test that is too large is reported as
UNKNOWN ("too large", or the solver limit that stopped it), with the limit named and the flag that
raises it, and the batch goes on.

    limit                  default     bounds                                            checked in
    yaml_bytes           1_000_000     size of one litmus file                           checker.front.litmus
    yaml_depth                  32     nesting of YAML mappings and lists                checker.front.yamlsafe
    threads                     32     threads of one test                               checker.front.litmus
    instructions                64     instructions of one thread                        checker.front.litmus
    locations                   64     memory locations of one test (declared or used)   checker.front.litmus
    events                     128     events of one test after lowering (the encoding   checker.engines.smt,
                                       grows with the cube of the event count)           checker.engines.brute
    nesting                    100     nesting of a condition ('(', '~', '!=') or of a   checker.front.conditions,
                                       cat expression (parentheses, operators)           checker.cat.parse
    cat_bytes            1_000_000     size of one cat model file                        checker.cat.parse
    timeout                   60.0     wall-clock seconds per test                       checker.engines.smt,
                                                                                         checker.pool (hard)
    rlimit              20_000_000     Z3 resource limit per solver call (deterministic, checker.engines.smt
                                       unlike the timeout; 0 = none)
    outcomes                  4096     distinct outcomes enumerated per test             checker.engines.smt
    candidates              50_000     candidate executions of the brute-force engine    checker.engines.brute

Fixed, not configurable: integers (literals, YAML values, computed register values) stay in the
64-bit range -2**63 .. 2**64-1 (checker.front.ptx, checker.front.yamlsafe, checker.model.values), and a stuck or
crashed worker is stopped at `hard_timeout()` (checker.pool).

The command line overrides them with `--timeout S`, `--rlimit N` and `--limit NAME=VALUE`; the
active limits are process-wide (`current()` / `use()`), handed to worker processes explicitly.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, fields, replace
from typing import Iterator

from .errors import CheckerError, LimitExceeded, SourceLoc, TooLarge

# How much longer than --timeout a test may run before its worker process is stopped: the soft
# timeout (Z3's, and the engine's own deadline) normally ends it first; the hard one covers the
# parts Z3's timeout does not (lowering, encoding) and anything that would not stop on its own.
HARD_GRACE_SECONDS = 5.0
HARD_GRACE_FACTOR = 0.25


@dataclass(frozen=True)
class Limits:
    yaml_bytes: int = 1_000_000
    yaml_depth: int = 32
    threads: int = 32
    instructions: int = 64
    locations: int = 64
    events: int = 128
    nesting: int = 100
    cat_bytes: int = 1_000_000
    timeout: float = 60.0
    rlimit: int = 20_000_000
    outcomes: int = 4096
    candidates: int = 50_000

    def hard_timeout(self) -> float:
        """Seconds after which a test's worker process is stopped (see HARD_GRACE_*)."""
        return self.timeout + max(HARD_GRACE_SECONDS, HARD_GRACE_FACTOR * self.timeout)

    def override(self, settings: list[str] | tuple[str, ...]) -> "Limits":
        """These limits with `NAME=VALUE` settings applied; CheckerError if one is malformed."""
        kinds = {f.name: f.type for f in fields(self)}
        changes: dict = {}
        for s in settings:
            name, eq, value = s.partition("=")
            name = name.strip().replace("-", "_")
            if not eq or name not in kinds:
                raise CheckerError(f"--limit {s}: write NAME=VALUE, NAME one of {', '.join(kinds)}")
            try:
                v = float(value) if kinds[name] in (float, "float") else int(value.replace("_", ""))
            except ValueError:
                raise CheckerError(f"--limit {s}: '{value}' is not a number") from None
            if v < 0 or (v == 0 and name != "rlimit"):
                raise CheckerError(f"--limit {s}: must be positive")
            changes[name] = v
        return replace(self, **changes)


DEFAULT = Limits()
_current = DEFAULT


def current() -> Limits:
    """The limits in force in this process."""
    return _current


def set_current(limits: Limits) -> None:
    global _current
    _current = limits


@contextlib.contextmanager
def use(limits: Limits) -> Iterator[Limits]:
    """Run a block under other limits (tests use it to make a limit small)."""
    old = current()
    set_current(limits)
    try:
        yield limits
    finally:
        set_current(old)


def flag(name: str) -> str:
    """How a user raises the limit `name`."""
    if name == "timeout":
        return "--timeout S"
    if name == "rlimit":
        return "--rlimit N"
    return f"--limit {name}=N"


def too_large(what: str, name: str, where: SourceLoc | None = None) -> TooLarge:
    """The error for an input over limit `name`: "<what> (limit N; raise it with FLAG)". A
    TooLarge is also a LitmusError, so the loaders return it in place of the test."""
    return TooLarge(f"{what} (limit {getattr(current(), name)}; raise it with {flag(name)})", where)


def read_text(path, limit: int) -> tuple[str | None, int]:
    """(text, size) of a UTF-8 file, reading at most limit + 1 bytes (a stat size says nothing
    for /dev/zero or a pipe); text is None when the file is larger than `limit`.
    OSError and UnicodeDecodeError propagate."""
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        return None, len(data)
    return data.decode("utf-8"), len(data)


def check_events(count: int) -> None:
    """LimitExceeded if a test lowered to more events than the limit allows."""
    lim = current().events
    if count > lim:
        raise LimitExceeded(f"too large: {count} events (limit {lim}; raise it with {flag('events')})")
