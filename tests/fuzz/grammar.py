"""A grammar-based generator of VALID litmus tests, driven by the instruction tables
(checker.isa.registry.FAMILIES): pick a family, fill its qualifier groups and operand slots with
well-typed operands and locations declared in a fixed memory layout, then assemble threads,
awaits and conditions over the registers the threads use.

The table says which qualifiers exist and which kind of operand each slot takes, not which
combinations the family's rules and the memory layout accept (an mbarrier operand must be an
mbarrier, a .shared::cta address the issuing CTA's shared memory, a tcgen05.ld vector as long as
its shape says). So each family's *forms* are found once per process with the real front end as
the oracle: for a few qualifier choices, the operand candidates of each slot that the validator
(and the access checks of the loader) accept; a form whose instruction does not lower is
dropped. Drawing from the forms gives tests that load and lower most of the time (the fuzz
campaign reports the rate), while the draw still ranges over every family, qualifier and operand
kind.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import cache

import yaml
from hypothesis import strategies as st

from checker.errors import CheckerError, LitmusError, SourceLoc
from checker.isa import registry

MEMORY = {
    "x": 0, "y": 0, "g": 1,
    "tmap": {"tensormap": {0: "g", 1: "y"}, "init": 0},
    "s": {"space": "shared", "owner": "gpu0.cluster0.cta0"},
    "s2": {"space": "shared", "owner": "gpu0.cluster0.cta0"},
    "mb": {"space": "shared", "owner": "gpu0.cluster0.cta0", "mbarrier": {"count": 1}},
    "t": {"space": "tensor", "owner": "gpu0.cluster0.cta0"},
    "s1": {"space": "shared", "owner": "gpu0.cluster0.cta1", "offset_of": "s"},
    "s3": {"space": "shared", "owner": "gpu0.cluster0.cta1", "offset_of": "s2"},
    "mb1": {"space": "shared", "owner": "gpu0.cluster0.cta1", "mbarrier": {"count": 1}, "offset_of": "mb"},
    "t1": {"space": "tensor", "owner": "gpu0.cluster0.cta1"},
    "tex": {"texture_of": "x"}, "surf": {"surface_of": "x"}, "cst": {"constant_of": "x"},
}
# Thread positions: two CTAs of one cluster, a second warp in CTA 0.
POSITIONS = ("gpu0.cluster0.cta0", "gpu0.cluster0.cta1", "gpu0.cluster0.cta0.warp1")
# A thread in CTA 1 uses CTA 1's cells where CTA 0's thread uses CTA 0's (and the other way round).
_CTA1 = {"s": "s1", "s1": "s", "s2": "s3", "s3": "s2", "mb": "mb1", "mb1": "mb", "t": "t1", "t1": "t"}

_REGS = ("r0", "r1", "r2", "r3")
CANDIDATES: dict[str, tuple[str, ...]] = {
    "reg": _REGS + ("p",),
    "dst": _REGS[:3] + ("_",),
    "val": ("r0", "r1", "0", "1", "2", "16"),
    "imm": ("0", "1", "2", "16", "32", "128"),
    "pred": ("p", "!p"),
    "addr": tuple(f"[{n}]" for n in MEMORY),
    "taddr": tuple(f"[tmap, {{{', '.join(['0'] * k)}}}]" for k in range(1, 6)) + ("[tmap, {r0}]",),
    "vec": ("{r0, r1}", "{r0, r1, r2, r3}"),
    "ctamask": ("0b11", "0x1", "0x2"),
    "srcsz": ("16", "8", "p"),
    "regvec": tuple("{" + ", ".join(f"v{i}" for i in range(n)) + "}" for n in (1, 2, 4, 8, 16, 32, 64, 128)),
    "amat": ("[s]", "{a0, a1, a2, a3}"),
    "addrsrc": tuple(MEMORY) + ("r0",),
    "movsrc": ("r0", "r1", "0", "1", "16") + tuple(MEMORY),
    "dvec": ("r0", "r1", "{r0, r1}", "{r0, r1, r2, r3}"),
    "vvec": ("r0", "0", "1", "{r0, r1}", "{1, 2}"),
    "label": ("L0",),
}
# Control flow needs a label in the thread: its tests are tests/unfold/test_flow.py's, not drawn here.
_CONTROL = ("bra", "assume")
# wgmma.mma_async is registered once per shape and type: a few of them stand for all.
_WGMMA = "wgmma.mma_async.sync.aligned."


@dataclass(frozen=True)
class Form:
    """Valid instructions of one family: its key and qualifiers, and for each operand slot the
    candidates the front end accepts (the others held at a known-good choice); `optional` slots
    may be left out (only trailing ones are)."""

    key: str
    quals: tuple[str, ...]
    slots: tuple[tuple[str, ...], ...]     # '' leaves an optional operand out
    loads: bool                            # the first slot receives a value (an await may follow)
    awaits: tuple[str, ...] = ()           # an await the family requires (an mbarrier wait's '== 1')

    def text(self, pick) -> str:
        ops = [c for c in (cands[pick(len(cands))] for cands in self.slots) if c]
        head = ".".join((self.key,) + self.quals)
        end = self.awaits[pick(len(self.awaits))] if self.awaits else ""
        return head + (" " + ", ".join(ops) if ops else "") + end


@cache
def _environment():
    """(declared names, name -> MemoryDecl, the layout's test with one CTA-0 thread)."""
    from checker.front.litmus import load_text

    doc = {"name": "env", "memory": MEMORY, "threads": {"P0": {"at": POSITIONS[0], "code": ["mov r0, 1"]}}}
    [t] = load_text(yaml.safe_dump(doc, sort_keys=False))
    return frozenset(MEMORY), {m.name: m for m in t.memory}, t


def _valid(text: str) -> bool:
    """Does the front end accept `text` in a thread of CTA 0 of the layout, and does it lower?"""
    from dataclasses import replace

    from checker.front.litmus import _check_accesses
    from checker.isa.registry import lower

    declared, memory, env = _environment()
    where = SourceLoc("grammar.yaml", 1, text)
    try:
        instr = registry.parse_instr(text, where, declared)
        thread = replace(env.threads[0], code=(instr,))
        _check_accesses([thread], memory)
        lower(replace(env, threads=(thread,)))
    except CheckerError:
        return False
    return True


_SPACES = ("global", "shared", "shared::cta", "shared::cluster")
_IN_SPACE = {"global": ("x", "g", "y"), "shared": ("s", "s2"), "shared::cta": ("s", "s2"),
             "shared::cluster": ("s1", "s", "s2")}
_BY_SLOT = {"mbar": ("mb", "mb1"), "taddr": ("t",)}
_BY_FAMILY = {"tld": ("tex",), "suld": ("surf",), "sust": ("surf",), "ldc": ("cst",),
              "tensormap.replace": ("tmap",), "tcgen05.mma": ("t", "s"), "tcgen05.cp": ("t", "s"),
              "tcgen05.alloc": ("s",), "tcgen05.dealloc": ("t",), "tcgen05.ld": ("t",), "tcgen05.st": ("t",),
              "mbarrier": ("mb",), "cp.async.mbarrier.arrive": ("mb",), "clusterlaunchcontrol.try_cancel": ("s",),
              "wgmma": ("s",), "tensormap.cp_fenceproxy": ("tmap", "s")}
_BY_NAME = {"size": ("16", "128"), "ncols": ("32",), "count": ("1",), "tx": ("16",), "n": ("0",)}


def _preferred(key: str, quals: tuple[str, ...], slots) -> list[tuple[str, ...]]:
    """For each slot, its candidates with the likely ones first (the family's spaces in order:
    a copy 'shared::cta.global' writes shared memory and reads global memory)."""
    parts = key.split(".") + list(quals) + [g.default for g in registry.FAMILIES[key].groups if g.default]
    spaces = [p for p in parts if p in _SPACES]
    rank = next((int(p[0]) for p in parts if re.fullmatch(r"[1-5]d", p)), 1)
    fam = next((v for k, v in _BY_FAMILY.items() if key == k or key.startswith(k + ".")), None)
    out, addr_k = [], 0
    for s in slots:
        first: tuple[str, ...] = ()
        if s.kind in ("addr", "amat"):
            if s.name == "mbar" and out and next((c for c in out[0] if c), None) == "[s1]":
                first = ("mb1", "mb")                 # a remote destination signals its own CTA
            elif s.name in _BY_SLOT and (s.name != "taddr" or key.startswith("tcgen05")):
                first = _BY_SLOT[s.name]
            elif fam:
                first = fam[min(addr_k, len(fam) - 1):] + fam
            elif spaces:
                first = _IN_SPACE[spaces[min(addr_k, len(spaces) - 1)]]
            addr_k += 1
            first = tuple(f"[{n}]" for n in first)
        elif s.kind == "taddr":
            first = (f"[tmap, {{{', '.join(['0'] * rank)}}}]",)
            addr_k += 1
        elif s.name in _BY_NAME:
            first = _BY_NAME[s.name]
        absent = ("",) if s.optional else ()
        out.append(tuple(dict.fromkeys(absent + first + CANDIDATES[s.kind])))
    return out


def _forms_of(key: str, rng: random.Random, want: int = 3, tries: int = 12) -> list[Form]:
    from checker.ast import Quals

    fam = registry.FAMILIES[key]
    out, seen = [], set()
    for n in range(tries):
        if len(out) >= want:
            break
        chosen = {}
        for g in fam.groups:                 # the first try: only what is required
            if g.required or (n and rng.random() < 0.4):
                chosen[g.name] = rng.choice(g.choices)
        quals = tuple(chosen.values())
        if quals in seen:
            continue
        seen.add(quals)
        try:
            slots = fam.slots(Quals((g.name, chosen.get(g.name, g.default)) for g in fam.groups))
        except Exception:                               # noqa: BLE001 - an odd combination
            continue
        head = ".".join((key,) + quals)
        cands = _preferred(key, quals, slots)

        end = ""

        def text_of(pick):
            ops = [c[p] for c, p in zip(cands, pick) if c[p]]
            return head + (" " + ", ".join(ops) if ops else "") + end

        base = None
        for t in range(60):
            pick = [0] * len(cands) if t == 0 else \
                [rng.randrange(min(2, len(c))) if rng.random() < 0.6 else rng.randrange(len(c)) for c in cands]
            end = "" if t % 2 == 0 else " == 1"        # mbarrier waits are spin-waits: '== 1'
            if _valid(text_of(pick)):
                base = pick
                break
        if base is None:
            continue
        good = []
        for k, c in enumerate(cands):
            good.append(tuple(cand for j, cand in enumerate(c) if _valid(text_of(base[:k] + [j] + base[k + 1:]))))
        loads = bool(slots) and slots[0].kind in ("reg", "dst")
        awaits = tuple(a for a in (" == 0", " == 1") if end and _valid(text_of(base)[:-len(end)] + a))
        out.append(Form(key, quals, tuple(good), loads, awaits))
    return out


@cache
def forms() -> tuple[Form, ...]:
    """Every family's valid forms (computed once per process, with a fixed seed)."""
    rng = random.Random(23)
    keys = [k for k in sorted(registry.FAMILIES) if not k.startswith(_WGMMA) and k not in _CONTROL]
    keys += [k for k in sorted(registry.FAMILIES) if k.startswith(_WGMMA)][::60]
    out = []
    for k in keys:
        out += _forms_of(k, rng)
    return tuple(out)


def document(threads, conditions, name: str = "G") -> dict:
    """A test document: threads as (name, position, code), conditions as (kind, text)."""
    doc: dict = {"name": name, "memory": MEMORY,
                 "threads": {n: {"at": pos, "code": list(code)} for n, pos, code in threads}}
    expect: dict = {}
    for kind, text in conditions:
        expect.setdefault(kind, []).append(text)
    if expect:
        doc["expect"] = expect
    return doc


_NAME = re.compile(r"[A-Za-z_$%][\w$]*")


def _own_cells(text: str, pos: str) -> str:
    """An instruction written for CTA 0, for a thread at `pos` (CTA 1 uses its own cells)."""
    if ".cta1" not in pos:
        return text
    head, _, ops = text.partition(" ")
    return head + (" " + re.sub(r"\[(\w+)", lambda m: "[" + _CTA1.get(m.group(1), m.group(1)), ops) if ops else "")


@st.composite
def instructions(draw) -> str:
    """One instruction from a valid form (a register in CTA 0's frame)."""
    fs = forms()
    f = fs[draw(st.integers(0, len(fs) - 1))]
    return f.text(lambda n: draw(st.integers(0, n - 1)))


@st.composite
def valid_tests(draw, max_threads: int = 3, max_code: int = 4) -> dict:
    """A test document built from the forms: 1..max_threads threads of 1..max_code instructions,
    an optional await on a load, and conditions over the registers the threads use and x, y."""
    fs = forms()
    threads, atoms = [], []
    for k in range(draw(st.integers(1, max_threads))):
        pos = POSITIONS[k]
        code, regs = [], []
        for _ in range(draw(st.integers(1, max_code))):
            f = fs[draw(st.integers(0, len(fs) - 1))]
            text = _own_cells(f.text(lambda n: draw(st.integers(0, n - 1))), pos)
            if f.loads and f.key == "ld" and draw(st.integers(0, 5)) == 0:
                text += f" == {draw(st.integers(0, 2))}"
            code.append(text)
            first = text.partition(" ")[2].split(",")[0].strip()
            if re.fullmatch(r"r\d", first):
                regs.append(first)
        name = f"P{k}"
        threads.append((name, pos, code))
        atoms += [f"{name}:{r}={draw(st.integers(0, 2))}" for r in dict.fromkeys(regs)]
    atoms += [f"{loc}={draw(st.integers(0, 2))}" for loc in ("x", "y")]
    conds = []
    for _ in range(draw(st.integers(0, 2))):
        body = " /\\ ".join(draw(st.lists(st.sampled_from(atoms), min_size=1, max_size=2)))
        conds.append((draw(st.sampled_from(("allowed", "forbidden"))), body))
    return document(threads, conds)


def dump(doc) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


# ------------------------------------------------------------------------------ renaming --

def rename(doc: dict, threads: dict[str, str], regs: dict[str, str], locs: dict[str, str]) -> dict:
    """The same test with threads, registers and locations renamed (metamorphic: the outcomes
    are the same, renamed)."""
    def operands(text: str) -> str:
        head, sep, ops = text.partition(" ")
        ops, eq, value = ops.partition("==")
        ops = _NAME.sub(lambda m: locs.get(m.group(), regs.get(m.group(), m.group())), ops)
        if head.startswith("@"):                 # a guard: @p / @!p
            return head + sep + operands(ops + eq + value)
        return head + sep + ops + eq + value

    def cond(text: str) -> str:
        def ref(m):
            t, _, r = m.group().partition(":")
            return f"{threads.get(t, t)}:{regs.get(r, r)}" if r else locs.get(t, t)
        return re.sub(r"[A-Za-z_$][\w$]*(?::%?[A-Za-z_$][\w$]*)?", ref, text)

    def decl(v):
        if not isinstance(v, dict):
            return v
        out = {}
        for k, x in v.items():
            if k in ("alias_of", "texture_of", "surface_of", "constant_of", "offset_of"):
                x = locs.get(x, x)
            elif k == "tensormap":
                x = {n: locs.get(b, b) for n, b in x.items()}
            out[k] = x
        return out

    new = dict(doc)
    if "memory" in doc:
        new["memory"] = {locs.get(k, k): decl(v) for k, v in doc["memory"].items()}
    new["threads"] = {threads.get(n, n): {"at": th["at"], "code": [operands(i) for i in th["code"]]}
                      for n, th in doc["threads"].items()}
    if "expect" in doc:
        new["expect"] = {k: [cond(c) for c in v] for k, v in doc["expect"].items()}
    return new


def with_independent_thread(doc: dict, name: str = "Pind") -> dict:
    """The test with one more thread, in a cluster of its own, on a location of its own: it
    cannot change what the other threads may observe."""
    new = dict(doc)
    new["memory"] = {**doc.get("memory", {}), "zind": 0}
    new["threads"] = {**doc["threads"], name: {"at": "gpu0.cluster1.cta0", "code": [
        "st.relaxed.gpu.global [zind], 1", "ld.relaxed.gpu.global r0, [zind]"]}}
    return new
