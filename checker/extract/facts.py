"""What the decisions of a kernel's paths imply about the unknown values they were taken on.

A branch of `ptxmc extract` on an unknown predicate is decided (checker.extract.interp). The
predicate is a formula: integer comparisons (`setp.eq.s32 %p4, %r9, 0`: an Atom of one value
against a constant; `setp.lt.s32 %p4, %r9, %r10`: of two values), opaque predicates (a float
comparison, a shuffled predicate: a Var), and what `setp.CMP.BOOLOP`, `setp p|q`, `and/or/xor/
not.pred` build from them. A value is named by where it comes from (interp.Unk.src): a kernel parameter's bytes (the same
value in every register and every thread it is loaded into), a launch-wide special register
(`%nctaid.x`: one value for the launch), an unknown stored to shared memory
and loaded back after a barrier, lane 0's value broadcast with `shfl`, else the register at its
write (a copy with `mov` is the same value; `add/sub` of a constant is that value plus the
constant; a value computed from named ones by integer arithmetic Z3 models exactly is a term of
them, and a global load of bytes no store of the kernel writes is their concatenation). The
decision is a fact: the formula is true (or false). A later predicate is evaluated
under the facts where they settle it (Z3, exactly, over bit-vectors of the comparisons' widths),
so that no path takes both sides of one question; facts on values every thread names the same
are shared by the kernel (interp.Machine, skeleton._run_all): the first thread to decide a
question decides it for all."""
from __future__ import annotations

from dataclasses import dataclass

# each comparison as (canonical comparison, whether it is the canonical one's negation)
_CANON = {"eq": ("eq", False), "ne": ("eq", True), "lt": ("lt", False), "ge": ("lt", True),
          "le": ("le", False), "gt": ("le", True), "lo": ("lo", False), "hs": ("lo", True),
          "ls": ("ls", False), "hi": ("ls", True)}
_SWAP = {"eq": "eq", "ne": "ne", "lt": "gt", "gt": "lt", "le": "ge", "ge": "le",
         "lo": "hi", "hi": "lo", "ls": "hs", "hs": "ls"}
_INT = ("s", "u", "b")
_SHOW = {"eq": "==", "lt": "<", "le": "<=", "lo": "<", "ls": "<="}


def _name(key: tuple) -> str:
    reg = key[0]
    if isinstance(reg, tuple):
        return term_text(reg)
    if reg.startswith(("parameter ", "address of ", "launch ")):
        return reg.split(":")[0]
    if reg.startswith(("shared value ", "global byte ")):
        return f"({reg})"
    base, _, tag = reg.partition("|")
    return "%" + base.split("#")[0] + (f" of thread {tag[1:].split('c')[0]}" if tag.startswith("t") else "")


@dataclass(frozen=True)
class Atom:
    """`VALUE CMP CONST` (`other` None) or `VALUE CMP OTHER` on values named (reg, gen) (a
    parameter's value: `reg` `parameter KEY:BITS`, `gen` 0); `typ` the setp's type (`s32`),
    `cmp` canonical (eq, lt, le, lo, ls)."""

    reg: str
    gen: int
    cmp: str
    const: int
    typ: str
    other: tuple | None = None
    add: int = 0            # the value compared is the named one + add (modulo 2^bits), and
    add2: int = 0           # the other one + add2

    def keys(self) -> tuple:
        return _leaves((self.reg, self.gen)) + (_leaves(self.other) if self.other else ())

    def text(self) -> str:
        rhs = _name(self.other) + _plus(self.add2) if self.other else str(self.const)
        return f"{_name((self.reg, self.gen))}{_plus(self.add)} {_SHOW[self.cmp]} {rhs} ({self.typ})"


def _plus(k: int) -> str:
    return f" + {k}" if k else ""


@dataclass(frozen=True)
class Var:
    """An unknown predicate with no known structure (a float comparison, a shuffled predicate),
    named by the value it is."""

    reg: str
    gen: int

    def keys(self) -> tuple:
        return ((self.reg, self.gen),)

    def text(self) -> str:
        return _name((self.reg, self.gen))


# A term: a value computed exactly from named values (checker.extract.interp names them), a
# nested tuple: ("v", NAME, BITS) the named value NAME at BITS bits (the same Z3 variable as the
# value NAME compared at that width); (OP, BITS, ARG...) with ARG a term or an int (a constant),
# OP one of add sub mul and or xor shl lshr ashr (two ARGs), not neg (one), zext sext trunc (one:
# to BITS), cat (bytes, the most significant first), smin smax umin umax (two). Bit-vector
# semantics are the PTX ISA's for these: modulo 2^BITS, a shift by BITS or more gives 0 (the sign
# for ashr), as Z3's do.
_OPS = {"add": "+", "sub": "-", "mul": "*", "and": "&", "or": "|", "xor": "^", "shl": "<<", "lshr": ">>u",
        "ashr": ">>s"}


def width(t) -> int:
    """The width of a term, in bits."""
    return t[2] if t[0] == "v" else t[1]


def _leaves(key: tuple) -> tuple:
    """The named values a value key (NAME, generation) is made of: itself, or a term's leaves."""
    if not isinstance(key[0], tuple):
        return (key,)
    hit = _LEAVES.get(key)
    if hit is None:
        if len(_LEAVES) > 100_000:
            _LEAVES.clear()
        hit = _LEAVES[key] = _walk_leaves(key[0])
    return hit


_LEAVES: dict = {}


def _walk_leaves(term) -> tuple:
    out: list = []

    def walk(t):
        if isinstance(t, int):
            return
        if t[0] == "v":
            if (t[1], 0) not in out:
                out.append((t[1], 0))
            return
        for x in t[2:]:
            walk(x)
    walk(term)
    return tuple(out)


def term_text(t) -> str:
    if isinstance(t, int):
        return str(t)
    if t[0] == "v":
        return _name((t[1], 0))
    if t[0] == "cat":           # a load's bytes (checker.extract.interp): the bytes it loads
        first, last = t[-1][1], t[2][1]
        if all(isinstance(x, tuple) and x[0] == "v" and x[1].startswith("global byte ") for x in t[2:]):
            return f"(global {len(t) - 2} bytes {first[len('global byte '):]}..{last.rsplit('+', 1)[1]})"
    args = [term_text(x) for x in t[2:]]
    if t[0] in _OPS:
        return f"({args[0]} {_OPS[t[0]]} {args[1]})"
    return f"{t[0]}{t[1]}({', '.join(args)})"


def _term_z3(t, bits: int | None = None):
    import z3
    if isinstance(t, int):
        return z3.BitVecVal(t & ((1 << bits) - 1), bits)
    op, w = t[0], width(t)
    if op == "v":
        return z3.BitVec(f"v:{t[1]}#0/{w}", w)
    if op in ("zext", "sext", "trunc"):
        a = _term_z3(t[2], None if not isinstance(t[2], int) else w)
        n = a.size()
        if op == "trunc":
            return z3.Extract(w - 1, 0, a)
        return (z3.ZeroExt if op == "zext" else z3.SignExt)(w - n, a)
    if op == "cat":
        return z3.Concat(*[_term_z3(x, 8) for x in t[2:]]) if len(t) > 3 else _term_z3(t[2], 8)
    args = [_term_z3(x, w) for x in t[2:]]
    if op == "not":
        return ~args[0]
    if op == "neg":
        return -args[0]
    a, b = args
    return {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "and": lambda: a & b,
            "or": lambda: a | b, "xor": lambda: a ^ b, "shl": lambda: a << b, "lshr": lambda: z3.LShR(a, b),
            "ashr": lambda: a >> b, "smin": lambda: z3.If(a < b, a, b), "smax": lambda: z3.If(a > b, a, b),
            "umin": lambda: z3.If(z3.ULT(a, b), a, b), "umax": lambda: z3.If(z3.UGT(a, b), a, b)}[op]()


def _rename(t, name):
    """A term with its leaves renamed by `name` ((NAME, 0) -> (NEW, 0))."""
    if isinstance(t, int):
        return t
    if t[0] == "v":
        return ("v", name((t[1], 0))[0], t[2])
    return t[:2] + tuple(_rename(x, name) for x in t[2:])


# A formula: an Atom, a Var, or (op, f, g) with op in and/or/xor, or ("not", f)
def _keys(f) -> frozenset:
    if isinstance(f, tuple):
        return frozenset().union(*(_keys(x) for x in f[1:]))
    return frozenset(f.keys())


def _text(f) -> str:
    if not isinstance(f, tuple):
        return f.text()
    if f[0] == "not":
        return f"!({_text(f[1])})"
    return "(" + f" {f[0]} ".join(_text(x) for x in f[1:]) + ")"


@dataclass(frozen=True)
class Cond:
    """An unknown predicate that is the formula `f` (`true`) or its negation."""

    f: object
    true: bool = True

    def negated(self) -> "Cond":
        return Cond(self.f, not self.true)

    def keys(self) -> frozenset:
        return _keys(self.f)

    def text(self) -> str:
        return _text(self.f)

    def formula(self):
        return self.f if self.true else ("not", self.f)

    def shared(self) -> bool:
        """Whether every value it names is the same in every thread that names it: a kernel
        parameter's (or an address computed from one), a value stored to shared memory, or one
        named with its thread (lane 0's value a warp broadcasts): its decisions are the kernel's."""
        return all(k[0].startswith(("parameter ", "shared value ", "address of ", "global byte ", "launch "))
                   or "|t" in k[0]
                   for k in self.keys())


def combine(op: str, a: "Cond", b: "Cond") -> "Cond":
    """a OP b (and, or, xor)."""
    return Cond((op, a.formula(), b.formula()))


def comparison(q: tuple, srcs: tuple, vals: tuple, adds: tuple = (0, 0)) -> Cond | None:
    """The Cond of `setp.CMP.TYPE d, a, b` with one side a register holding an unknown value and the
    other a known integer, or both unknown values (`srcs`: which value each operand is, (name,
    generation), or None; `adds`: the constant added to each, at the setp's width); None
    otherwise."""
    if len(q) < 2 or q[0] not in _CANON:
        return None
    typ = next((x for x in q[1:] if x[:1] in _INT and x[1:].isdigit()), None)
    if typ is None:
        return None
    cmp = q[0]
    known = [isinstance(v, int) for v in vals]
    bits = int(typ[1:])
    if not known[0] and not known[1] and srcs[0] is not None and srcs[1] is not None:
        canon, neg = _CANON[cmp]
        (a, x), (b, y) = (srcs[0], adds[0]), (srcs[1], adds[1])
        if canon == "eq" and _order((b, y)) < _order((a, x)):         # one name for a == b and b == a
            (a, x), (b, y) = (b, y), (a, x)
        t = f"b{bits}" if canon == "eq" else typ
        m = (1 << bits) - 1
        return Cond(Atom(a[0], a[1], canon, 0, t, other=b, add=x & m, add2=y & m), not neg)
    if srcs[0] is not None and not known[0] and known[1]:
        src, c, k = srcs[0], vals[1], adds[0]
    elif srcs[1] is not None and not known[1] and known[0]:
        src, c, k, cmp = srcs[1], vals[0], adds[1], _SWAP[cmp]
    else:
        return None
    canon, neg = _CANON[cmp]
    t = f"b{bits}" if canon == "eq" else typ
    return Cond(Atom(src[0], src[1], canon, _norm(c, t), t, add=k & ((1 << bits) - 1)), not neg)


def _order(k) -> tuple:
    """A key's place in the order of a == b's operands (a term after every name)."""
    return (1, repr(k)) if isinstance(k[0][0], tuple) else (0, k)


def _norm(c: int, typ: str) -> int:
    bits = int(typ[1:])
    c &= (1 << bits) - 1
    return c - (1 << bits) if typ[0] == "s" and c >> (bits - 1) else c


# ------------------------------------------------------------------------------ solving --
_CACHE: dict = {}


def _z3(f, env: dict):
    import z3
    if isinstance(f, tuple):
        args = [_z3(x, env) for x in f[1:]]
        if f[0] == "not":
            return z3.Not(args[0])
        if f[0] == "and":
            return z3.And(*args)
        if f[0] == "or":
            return z3.Or(*args)
        return z3.Xor(*args)
    if isinstance(f, Var):
        return z3.Bool(f"p:{f.reg}#{f.gen}")
    bits = int(f.typ[1:])

    def value(key):
        # a value compared at two widths is two values (a relation the facts do not follow: rare,
        # a register has one width); a term is built from its leaves (checker.extract.interp
        # compares one only at its own width)
        if isinstance(key[0], tuple):
            return _term_z3(key[0])
        return z3.BitVec(f"v:{key[0]}#{key[1]}/{bits}", bits)
    a = value((f.reg, f.gen)) + f.add
    b = value(f.other) + f.add2 if f.other else z3.BitVecVal(f.const & ((1 << bits) - 1), bits)
    if f.cmp == "eq":
        return a == b
    if f.cmp in ("lo", "ls") or f.typ[0] != "s":
        return z3.ULT(a, b) if f.cmp in ("lt", "lo") else z3.ULE(a, b)
    return a < b if f.cmp == "lt" else a <= b


def _canon(f, names: dict):
    """`f` with its value names renamed in order of appearance (`v0`, `v1`, ...): the same question
    in two threads (whose register values have names of their own) is one cache entry."""
    if isinstance(f, tuple):
        return (f[0],) + tuple(_canon(x, names) for x in f[1:])

    def name(key):
        if isinstance(key[0], tuple):
            return (_rename(key[0], name), 0)
        return (names.setdefault(key, f"v{len(names)}"), 0)
    if isinstance(f, Var):
        return Var(*name((f.reg, f.gen)))
    a = name((f.reg, f.gen))
    return Atom(a[0], 0, f.cmp, f.const, f.typ, name(f.other) if f.other else None, f.add, f.add2)


def _settled(cond: Cond, facts: tuple) -> bool | None:
    """Whether `facts` (formulas) imply `cond` (True), its negation (False), or neither (None)."""
    names: dict = {}
    goal = _canon(cond.formula(), names)
    facts = tuple(_canon(f, names) for f in facts)
    key = (goal, facts)
    hit = _CACHE.get(key, 0)
    if hit != 0:
        return hit
    import z3
    s = z3.Solver()
    env: dict = {}
    for f in facts:
        s.add(_z3(f, env))
    c = _z3(goal, env)
    out = None
    if s.check(z3.Not(c)) == z3.unsat:
        out = True
    elif s.check(c) == z3.unsat:
        out = False
    if len(_CACHE) > 100_000:
        _CACHE.clear()
    _CACHE[key] = out
    return out


def implied(cond: Cond, facts: dict, more=None) -> tuple[int, int | str] | None:
    """(the predicate's value, the decision it follows from: a line, or a text naming the line and
    the thread) where the facts (formula -> (truth, line)) and `more(key)` (the facts other threads
    decided on a value: formula -> (truth, where)) settle it, else None."""
    hit = facts.get(cond.f)
    if hit is not None:
        return int(hit[0] == cond.true), hit[1]
    # the facts connected to the condition's values, through facts that relate values
    keys = set(cond.keys())
    pool = dict(facts)
    if more is not None:
        for k in list(keys):
            pool.update((f, v) for f, v in more(k).items() if f not in pool)
        hit = pool.get(cond.f)
        if hit is not None:
            return int(hit[0] == cond.true), hit[1]
    chosen: dict = {}
    grew = True
    while grew:
        grew = False
        for f, v in pool.items():
            if f not in chosen and not _keys(f).isdisjoint(keys):
                chosen[f] = v
                new = _keys(f) - keys
                if new:
                    keys |= new
                    if more is not None:
                        for k in new:
                            pool.update((g, w) for g, w in more(k).items() if g not in pool)
                grew = True
                break
    if not chosen:
        return None
    order = sorted(chosen, key=repr)
    truth = _settled(cond, tuple(f if chosen[f][0] else ("not", f) for f in order))
    if truth is None:
        return None
    # the decision it follows from: the latest fact that names one of its values (for the table)
    line = next((chosen[f][1] for f in reversed(list(chosen)) if not _keys(f).isdisjoint(cond.keys())),
                chosen[order[-1]][1])
    return int(truth), line


def record(facts: dict, cond: Cond, value: int, line) -> None:
    """The decision that the predicate `cond` is `value`, taken at `line`."""
    facts.setdefault(cond.f, (bool(value) == cond.true, line))
