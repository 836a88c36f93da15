"""Resource limits: every bound ptxmc puts on its input and on its work, with the defaults in one
place.

A limit exists so that no input - a huge or deeply nested file, a test with thousands of events,
a query Z3 cannot settle - can crash ptxmc with a Python traceback, exhaust the stack, or run
without bound. Exceeding a limit is never a verdict: a test that is too large is reported as
UNKNOWN ("too large", or the solver limit that stopped it), with the limit named and the flag that
raises it, and the batch goes on.

    limit                  default     bounds                                            checked in
    yaml_bytes           1_000_000     size of one litmus file (a matrix: its rows times checker.front.litmus
                                       the test's text, as if written out)
    yaml_depth                  32     nesting of YAML mappings and lists                checker.front.yamlsafe
    threads                     32     threads of one test                               checker.front.litmus
    instructions                64     instructions of one thread                        checker.front.litmus
    locations                   64     memory locations of one test (declared or used)   checker.front.litmus
    events                     192     events of one test after lowering (the encoding   checker.engines.smt,
                                       grows with the cube of the event count; the test's checker.engines.brute
                                       timeout bounds it: lowering and encoding check it)
    nesting                    100     nesting of a condition ('(', '~', '!=') or of a   checker.front.conditions,
                                       cat expression (parentheses, operators)           checker.cat.parse
    cat_bytes            1_000_000     size of one cat model file                        checker.cat.parse
    timeout                   60.0     wall-clock seconds per test                       checker.engines.smt,
                                                                                         checker.pool (hard)
    rlimit             100_000_000     Z3 resource limit per solver call (deterministic, checker.engines.smt
                                       unlike the timeout; 0 = none)
    outcomes                  4096     distinct outcomes enumerated per test             checker.engines.smt,
                                                                                         checker.engines.brute
    candidates              50_000     candidate executions of the brute-force engine    checker.engines.brute
    unroll                       2     times a loop body runs on one control path (a    checker.unfold.paths
                                       test's `unroll:` key takes precedence)
    paths                      256     control paths of one thread, and combinations of  checker.unfold.paths,
                                       the threads' paths judged for one test            checker.unfold.variants
    memory                    4096     megabytes Z3 may allocate in one process (its     checker.watchdog,
                                       memory_max_size): a costly cat model is bounded   checker.verdict.check
                                       by memory, not only by time

Fixed, not configurable: integers (literals, YAML values, computed register values) stay in the
64-bit range -2**63 .. 2**64-1 (checker.isa.syntax, checker.front.yamlsafe, checker.model.values), and a stuck or
crashed worker is stopped at `hard_timeout()` (checker.pool).

The command line overrides them with `--timeout S`, `--rlimit N` and `--limit NAME=VALUE`; the
active limits are process-wide (`current()` / `use()`), handed to worker processes explicitly.
Every value is checked where it is given (`override`, `check_value`): a number, finite, positive
(rlimit may be 0, meaning none), a timeout of at most MAX_TIMEOUT seconds, and the nesting limits
at most MAX_RAISABLE (the parsers recurse once per level: deeper would exhaust Python's stack).

A test's time runs from the start of its work, lowering included: `deadline(at)` sets the moment
for the block, and long loops call `check_deadline()`, which raises the same "timeout" UNKNOWN as
the solver does.
"""
from __future__ import annotations

import contextlib
import math
import os
import select
import stat
import time
from dataclasses import dataclass, fields, replace
from typing import Iterator

from .errors import CheckerError, LimitExceeded, SolverUnknown, SourceLoc, TooLarge

# How much longer than --timeout a test may run before its worker process is stopped: the soft
# timeout (Z3's, and the engine's own deadline) normally ends it first; the hard one covers the
# parts Z3's timeout does not (lowering, encoding) and anything that would not stop on its own.
HARD_GRACE_SECONDS = 5.0
HARD_GRACE_FACTOR = 0.25
# The largest --timeout (about 11.6 days): its milliseconds still fit Z3's 32-bit timeout, and
# the hard bound and every wait derived from it stay ordinary numbers.
MAX_TIMEOUT = 1e6
# Limits that bound a recursion (PyYAML's composer, the condition and cat parsers and the passes
# over their trees): raised past these, a deep enough input would exhaust Python's stack.
MAX_RAISABLE = {"yaml_depth": 200, "nesting": 200}


@dataclass(frozen=True)
class Limits:
    yaml_bytes: int = 1_000_000
    yaml_depth: int = 32
    threads: int = 32
    instructions: int = 64
    locations: int = 64
    events: int = 192
    nesting: int = 100
    cat_bytes: int = 1_000_000
    timeout: float = 60.0
    rlimit: int = 100_000_000
    outcomes: int = 4096
    candidates: int = 50_000
    unroll: int = 2
    paths: int = 256
    memory: int = 4096

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
            changes[name] = check_value(name, v, f"--limit {s}")
        return replace(self, **changes)


def check_value(name: str, v, shown: str):
    """`v` if it is a valid value of limit `name`; CheckerError naming `shown` (the flag as the
    user wrote it) otherwise."""
    if isinstance(v, float) and not math.isfinite(v):
        raise CheckerError(f"{shown}: must be a finite number")
    if v < 0 or (v == 0 and name != "rlimit"):
        raise CheckerError(f"{shown}: must be {'0 (none) or ' if name == 'rlimit' else ''}positive")
    if name == "timeout" and v > MAX_TIMEOUT:
        raise CheckerError(f"{shown}: at most {MAX_TIMEOUT:g} seconds")
    if name in MAX_RAISABLE and v > MAX_RAISABLE[name]:
        raise CheckerError(f"{shown}: at most {MAX_RAISABLE[name]} (ptxmc's parsers recurse once per level; "
                           "deeper nesting would exhaust Python's stack)")
    return v


DEFAULT = Limits()
_current = DEFAULT


def current() -> Limits:
    """The limits in force in this process."""
    return _current


def set_current(limits: Limits) -> None:
    global _current
    if limits.memory != _current.memory or limits is DEFAULT:
        from .watchdog import z3_param

        z3_param("memory_max_size", limits.memory)      # the `memory` limit: Z3's own allocator
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


def memory_exceeded(e: BaseException) -> SolverUnknown | None:
    """The UNKNOWN for Z3 running out of the `memory` limit (it raises Z3Exception 'out of
    memory' from whatever call allocated past memory_max_size), or None for any other error."""
    if type(e).__name__ == "Z3Exception" and "out of memory" in str(e):
        lim = current().memory
        return SolverUnknown(f"memory: Z3 needed more than {lim} MB (limit {lim}; raise it with {flag('memory')})")
    return None


@contextlib.contextmanager
def memory_as_unknown() -> Iterator[None]:
    """Z3 out of the `memory` limit inside the block raises SolverUnknown (as a timeout does),
    not Z3Exception."""
    try:
        yield
    except Exception as e:
        unknown = memory_exceeded(e)
        if unknown is None:
            raise
        raise unknown from None


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


def read_text(path, limit: int, wait: float | None = None) -> tuple[str | None, int]:
    """(text, size) of a UTF-8 file, reading at most limit + 1 bytes (a stat size says nothing
    for /dev/zero or a pipe); text is None when the file is larger than `limit`. Anything but a
    regular file (a FIFO, a device, /dev/fd/N of a shell's <(...)) is read without blocking
    for more than `wait` seconds in all (default: the current --timeout): OSError(ETIMEDOUT)
    after that. OSError and UnicodeDecodeError propagate."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.set_blocking(fd, True)
            with os.fdopen(os.dup(fd), "rb") as f:
                data = f.read(limit + 1)
        else:
            data = _read_bounded(fd, limit + 1, current().timeout if wait is None else wait)
    finally:
        os.close(fd)
    if len(data) > limit:
        return None, len(data)
    return data.decode("utf-8"), len(data)


def _read_bounded(fd: int, most: int, wait: float) -> bytes:
    """Up to `most` bytes from a non-blocking descriptor, until end of file, within `wait` s."""
    import errno

    end = time.monotonic() + wait
    chunks: list[bytes] = []
    got = 0
    while got < most:
        left = end - time.monotonic()
        if left <= 0:
            raise OSError(errno.ETIMEDOUT, f"no end of input within {wait:g} s (not a regular file)")
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        try:
            chunk = os.read(fd, min(1 << 16, most - got))
        except BlockingIOError:
            continue
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


_deadline: float | None = None


@contextlib.contextmanager
def deadline(at: float | None) -> Iterator[None]:
    """Within the block, check_deadline() raises once time.monotonic() passes `at`."""
    global _deadline
    old = _deadline
    _deadline = at
    try:
        yield
    finally:
        _deadline = old


def current_deadline() -> float | None:
    return _deadline


def check_deadline() -> None:
    """SolverUnknown("timeout ...") if the current test's time is up (see `deadline`)."""
    if _deadline is not None and time.monotonic() > _deadline:
        raise timeout_error(current().timeout)


def timeout_error(seconds: float) -> SolverUnknown:
    """What a test whose time (`seconds`) is up gets, from every engine alike."""
    return SolverUnknown(f"timeout: no answer within {seconds:g} s (raise it with {flag('timeout')})")


def check_events(count: int, counting: bool = False) -> None:
    """LimitExceeded if a test lowered to more events than the limit allows (`counting`: while
    lowering, which stops at the first event over the limit)."""
    lim = current().events
    if count > lim:
        many = f"more than {lim}" if counting else str(count)
        raise LimitExceeded(f"too large: {many} events (limit {lim}; raise it with {flag('events')})")
