"""The validated litmus-test AST: what the YAML front end produces and everything else reads.

Frozen dataclasses only; no behaviour beyond small accessors. PTX instructions are kept as
opcode + qualifiers + operands; checker.isa.registry validates them once and records the
instruction's family and every qualifier group's value (PTX defaults applied); the families'
lowerings (checker.isa) turn them into events.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Mapping, Union

from .errors import SourceLoc


@dataclass(frozen=True, order=True)
class Position:
    """Where a thread runs: gpu > cluster > cta > warp. cluster is None in a launch without clusters
    (then every CTA is its own cluster)."""

    gpu: int
    cluster: int | None
    cta: int
    warp: int = 0

    def __str__(self) -> str:
        cl = f".cluster{self.cluster}" if self.cluster is not None else ""
        return f"gpu{self.gpu}{cl}.cta{self.cta}.warp{self.warp}"

    def cta_key(self) -> tuple:
        return (self.gpu, self.cluster, self.cta)

    def cta_text(self) -> str:
        """The CTA as a test writes it: gpuG[.clusterK].ctaN."""
        return cta_text(self.cta_key())

    def cluster_key(self) -> tuple:
        # Without clusters every CTA is its own cluster.
        return (self.gpu, self.cluster) if self.cluster is not None else (self.gpu, None, self.cta)


def cta_text(key: tuple) -> str:
    """A CTA key (gpu, cluster, cta) as a test writes it: gpuG[.clusterK].ctaN."""
    g, cl, cta = key
    return f"gpu{g}" + (f".cluster{cl}" if cl is not None else "") + f".cta{cta}"


@dataclass(frozen=True)
class MemoryDecl:
    """One named location (an abstract cell). `alias_of` makes it another virtual address of that
    cell; `view`/`view_of` make it an address seen through an ISCA'22 hypothetical proxy
    ('texture', 'surface', 'constant'); `mbarrier` marks a pre-initialised mbarrier
    ({'count': n}); `tensormap` maps the map's values to the global buffers they describe;
    `offset_of` names the shared cell at whose CTA-relative offset this one sits in its own
    CTA's shared memory (the cells a .multicast::cluster operation reaches)."""

    name: str
    space: str = "global"             # 'global' | 'shared' | 'tensor' (Tensor Memory)
    owner: Position | None = None     # the CTA whose shared memory holds it
    init: int = 0
    alias_of: str | None = None
    view: str | None = None
    view_of: str | None = None
    mbarrier: Mapping[str, int] | None = None
    tensormap: Mapping[int, str] | None = None
    offset_of: str | None = None
    size: int | None = None           # bytes; None: the largest end of its sized accesses, or unsized
    box: int | None = None            # tensor maps: bytes of the box a tensor copy moves
    strides: tuple[int, ...] | None = None  # tensor maps: bytes per unit of each coordinate
    where: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Reg:
    name: str


@dataclass(frozen=True)
class Imm:
    value: int


@dataclass(frozen=True)
class Addr:
    """`[x]`, `[x+4]`, or `[tmap, {0, 1}]` (coords); `[%rd]`, `[rd+8]` (`register`: the base is a
    register holding an address, resolved to a location when the test is loaded)."""

    base: str
    offset: int = 0
    coords: tuple["Operand", ...] = ()
    register: bool = False


@dataclass(frozen=True)
class Float:
    """A decimal floating-point literal (`1.5`, `-2e3`), as written: it becomes the .f32 or .f64
    bit pattern of the instruction that uses it. (PTX's exact forms `0f3F800000` and
    `0d3FF0000000000000` are integers: the bit patterns themselves.)"""

    text: str


@dataclass(frozen=True)
class Vec:
    """`{r0, r1}` braces list."""

    items: tuple["Operand", ...]


@dataclass(frozen=True)
class Sink:
    """`_`: a destination that is discarded."""


@dataclass(frozen=True)
class Name:
    """A bare identifier operand that is not a register (e.g. a label or a memory name)."""

    name: str


Operand = Union[Reg, Imm, Float, Addr, Vec, Sink, Name]


class Quals(Mapping[str, Union[str, None]]):
    """The value of each qualifier group of an instruction's family (group name -> the qualifier
    given, or PTX's default, or None): immutable, hashable and picklable."""

    __slots__ = ("_items",)

    def __init__(self, items=()):
        object.__setattr__(self, "_items", tuple(dict(items).items()))

    def __getitem__(self, key: str):
        for k, v in self._items:
            if k == key:
                return v
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(self._items)

    def __eq__(self, other) -> bool:
        return isinstance(other, Quals) and self._items == other._items

    def __reduce__(self):
        return (Quals, (self._items,))

    def __repr__(self) -> str:
        return f"Quals({dict(self._items)!r})"


@dataclass(frozen=True)
class Instr:
    """One PTX instruction. `op` is the opcode root ('ld', 'fence', 'cp', ...), `qualifiers` the
    dot-separated parts after it in source order (compound parts such as 'shared::cta' kept
    whole). `await_value` is the v of a trailing `== v` (a spin-wait). `family` and `quals` are
    set by checker.isa.registry.validate: the key of the instruction's family, and the value of
    each of its qualifier groups with PTX's defaults applied."""

    op: str
    qualifiers: tuple[str, ...]
    operands: tuple[Operand, ...]
    text: str
    where: SourceLoc | None = field(default=None, compare=False)
    await_value: int | None = None
    predicate: str | None = None      # '@p' / '@!p' guard text, if any
    family: str = ""
    quals: Quals = field(default_factory=Quals)

    def has(self, q: str) -> bool:
        return q in self.qualifiers

    def pick(self, choices, default=None):
        """The first qualifier among `choices`, else `default`."""
        for q in self.qualifiers:
            if q in choices:
                return q
        return default


@dataclass(frozen=True)
class Thread:
    name: str
    position: Position
    code: tuple[Instr, ...]
    where: SourceLoc | None = field(default=None, compare=False)
    # `L:` entries of the code: (label, index of the instruction it precedes; len(code) at the end)
    labels: tuple[tuple[str, int], ...] = ()
    # the thread declares its registers with `.reg` (their widths checked by the front end); else
    # each register is as wide as the value ptxmc last put in it (checker.isa.common.same_width)
    declares_registers: bool = False
    # a straight-line variant's thread whose code stops before the thread's end: a loop the bound
    # cut, or a barrier it never returns from (checker.unfold.variants); it has not exited
    stops: bool = False

    @property
    def branches(self) -> bool:
        """Does the thread have control flow (a label, a branch, a guarded instruction)?"""
        return bool(self.labels) or any(i.op == "bra" or i.predicate for i in self.code)


# Conditions (herd syntax) ------------------------------------------------------------------

@dataclass(frozen=True)
class RegRef:
    thread: str
    reg: str

    def __str__(self) -> str:
        return f"{self.thread}:{self.reg}"


@dataclass(frozen=True)
class MemRef:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Eq:
    lhs: RegRef | MemRef
    value: int | float      # float: a decimal floating-point literal (compared as a bit pattern)


@dataclass(frozen=True)
class EqRef:
    """Two observables are equal: `P0:r1=P0:r2`, `P1:r0=x` (their final values, compared as the
    unsigned bit patterns outcomes list)."""
    lhs: RegRef | MemRef
    rhs: RegRef | MemRef


def value_text(v: int | float) -> str:
    """A value as ptxmc prints it: decimal within 64 bits, hexadecimal beyond (the value of a
    large access: a 8192-byte copy is a 65536-bit number)."""
    if isinstance(v, int) and not -(1 << 64) < v < (1 << 64):
        return f"-{-v:#x}" if v < 0 else f"{v:#x}"
    return str(v)


@dataclass(frozen=True)
class Not:
    arg: "Cond"


@dataclass(frozen=True)
class And:
    args: tuple["Cond", ...]


@dataclass(frozen=True)
class Or:
    args: tuple["Cond", ...]


@dataclass(frozen=True)
class Const:
    value: bool


Cond = Union[Eq, EqRef, Not, And, Or, Const]


@dataclass(frozen=True)
class Expectation:
    kind: str                 # 'allowed' | 'forbidden'
    cond: Cond
    text: str
    where: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Kernel:
    """One kernel of a test's stream (`kernels:`): its threads, and how it was launched ('stream':
    after the earlier kernels complete; 'pdl': programmatic dependent launch, docs/model.md#a17)."""

    name: str
    threads: tuple[str, ...]
    launch: str = "stream"
    where: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True)
class LitmusTest:
    name: str
    threads: tuple[Thread, ...]
    memory: tuple[MemoryDecl, ...] = ()
    expectations: tuple[Expectation, ...] = ()
    expect_undefined: bool | None = None   # `undefined: true` / `undefined: false`
    doc: str = ""
    source: str = ""
    arch: str | None = None
    path: str = "<string>"
    where: SourceLoc | None = field(default=None, compare=False)
    matrix_row: tuple[tuple[str, str], ...] | None = None   # the ${name} substitutions of a row
    locations: tuple["RegRef | MemRef", ...] = ()   # what `outcomes` shows besides the conditions (herd's locations)
    observe_defaults: bool = False                  # shown too: what a test with no locations and no conditions shows
    filter: "Cond | None" = None                    # only executions satisfying it count (herd's filter)
    rlimit: int | None = None                       # this test's Z3 resource limit per solver call
    threads_per_litmus_thread: int = 1              # PTX threads one litmus thread stands for (barrier counts)
    kernels: tuple[Kernel, ...] = ()                # kernels in stream order (empty: one kernel)
    unroll: int | None = None                       # loop bound of this test (`unroll:`; None: the default)
    expect_hang: bool | None = None                 # `expect: {hang: allowed}` (True) / `forbidden` (False)
    # the generation of each barrier operation, (thread, index in its code, generation), where the
    # test's barriers can meet in several ways (each way a variant: checker.unfold.variants; checker.isa.barriers)
    barrier_generations: tuple[tuple[str, int, int], ...] | None = None

    @property
    def branches(self) -> bool:
        """Does any thread have control flow (checker.unfold.paths splits such a test)?"""
        return any(t.branches for t in self.threads)

    def mem(self, name: str) -> MemoryDecl | None:
        for m in self.memory:
            if m.name == name:
                return m
        return None


def registers(instr: Instr) -> Iterator[str]:
    """Every register the instruction names (operands, vectors, tensor coordinates, guard)."""
    def walk(ops):
        for o in ops:
            if isinstance(o, Reg):
                yield o.name.lstrip("!")
            elif isinstance(o, Vec):
                yield from walk(o.items)
            elif isinstance(o, Addr):
                yield from walk(o.coords)
    if instr.predicate:
        yield instr.predicate.lstrip("@!")
    yield from walk(instr.operands)
