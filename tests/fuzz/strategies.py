"""Hypothesis strategies for fuzzing ptxmc's inputs: PTX instruction strings, herd conditions,
YAML litmus structures, raw YAML text, cat text, and mutations of the bundled files.

Each strategy mixes well-formed inputs (so that fuzzing reaches the lowering, the encoding and
Z3) with near misses and plain garbage (so that it exercises every error path). The instruction
vocabulary is read from checker.registry.FAMILIES, so new opcode families are fuzzed as they appear.
"""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import yaml
from hypothesis import strategies as st

import checker.front.litmus  # noqa: F401 - registers every PTX family
from checker import AXIOMS_DIR, LITMUS_DIR
from checker.isa import registry

BUNDLED_FILES = sorted(LITMUS_DIR.rglob("*.yaml"), key=lambda p: p.as_posix())
BUNDLED_TEXTS = {p: p.read_text(encoding="utf-8") for p in BUNDLED_FILES}
MODEL_FILES = sorted(AXIOMS_DIR.glob("*.cat"))
MODEL_TEXTS = {p: p.read_text(encoding="utf-8") for p in MODEL_FILES}

# ------------------------------------------------------------------------------- vocabulary --

FAMILY_KEYS = sorted(registry.FAMILIES)
# wgmma.mma_async is registered once per shape and type combination (checker.isa.wgmma): those
# hundreds of keys are drawn as one family, so they do not crowd out the others.
_WGMMA = "wgmma.mma_async.sync.aligned."
WGMMA_KEYS = [k for k in FAMILY_KEYS if k.startswith(_WGMMA)]
FAMILY_DRAW = [k for k in FAMILY_KEYS if not k.startswith(_WGMMA)] + WGMMA_KEYS[:1]
QUALIFIERS = sorted({c for f in registry.FAMILIES.values() for g in f.groups for c in g.choices}
                    | {"weak", "nc", "v2", "gl", "L1::no_allocate", "sc", "b1", "", "x"})
OPCODES = sorted({k.split(".")[0] for k in FAMILY_KEYS} | {"bra", "ret", "cvta", "mbarrier", "wgmma",
                                                          "tcgen05", "ld.global", "prefetch"})
LOCATIONS = ("x", "y", "flag", "s", "mb", "tmap", "g", "a")
REGISTERS = ("r0", "r1", "r2", "r3", "p", "%r1", "%rd2", "q")
THREADS = ("P0", "P1", "P2")

BIG = (2**31 - 1, 2**32, 2**63, 2**64 + 1, 10**30, -(2**63))


@cache
def integers_text() -> st.SearchStrategy[str]:
    """Integer literals as written: small, big, negative, hex, binary, leading zeros, huge."""
    small = st.integers(-3, 5).map(str)
    return st.one_of(
        small, small, small,
        st.sampled_from(BIG).map(str),
        st.integers(0, 2**40).map(hex),
        st.integers(0, 255).map(bin),
        st.sampled_from(("007", "0x", "-0", "+1", "1e3", "1_000", "0b2", "٣", "9" * 30)),
        st.integers(50, 6000).map(lambda n: "9" * n),       # past Python's int-string limit
    )


# ------------------------------------------------------------------------------ instructions --

@cache
def _operand(kind: str) -> st.SearchStrategy[str]:
    reg = st.sampled_from(REGISTERS[:4])
    loc = st.sampled_from(LOCATIONS)
    if kind in ("reg",):
        return reg
    if kind == "dst":
        return st.one_of(reg, st.just("_"))
    if kind == "val":
        return st.one_of(reg, integers_text())
    if kind == "imm":
        return integers_text()
    if kind == "pred":
        return st.sampled_from(("p", "!p", "q"))
    if kind == "addr":
        return st.one_of(loc.map(lambda x: f"[{x}]"), st.tuples(loc, st.sampled_from(("+4", "-8", "+0x10", "+r1")))
                         .map(lambda t: f"[{t[0]}{t[1]}]"))
    if kind == "taddr":
        return st.tuples(st.sampled_from(("tmap", "x")), st.lists(st.sampled_from(("0", "1", "r0", "-1")), min_size=1,
                                                                  max_size=5)) \
            .map(lambda t: f"[{t[0]}, {{{', '.join(t[1])}}}]")
    return st.lists(st.one_of(reg, integers_text()), min_size=1, max_size=4).map(lambda xs: "{" + ", ".join(xs) + "}")


@st.composite
def _valid_instruction(draw) -> str:
    """An instruction built from its family's table: mostly well formed."""
    key = draw(st.sampled_from(FAMILY_DRAW))
    if key.startswith(_WGMMA):
        key = draw(st.sampled_from(WGMMA_KEYS))
    fam = registry.FAMILIES[key]
    quals = []
    for g in fam.groups:
        if g.required or draw(st.booleans()):
            quals.append(draw(st.sampled_from(g.choices)))
    quals = draw(st.permutations(quals)) if draw(st.integers(0, 4)) == 0 else quals
    try:
        slots = fam.slots({g.name: next((q for q in quals if q in g.choices), g.default) for g in fam.groups})
    except Exception:                                   # noqa: BLE001 - an odd combination
        slots = ()
    ops = []
    for slot in slots:
        if slot.optional and not draw(st.booleans()):
            continue
        if slot.kind == "addr" and draw(st.integers(0, 3)):   # mostly a location that fits the slot
            shared = any(q.startswith("shared") for q in key.split(".")[1:] + quals)
            if slot.name == "mbar":
                ops.append("[mb]")
            elif slot.name == "dst" and "shared" in key.split(".")[3:4] + [""]:
                ops.append("[s]")
            else:
                ops.append(draw(st.sampled_from(("[s]",) if shared else ("[x]", "[y]", "[g]"))))
        else:
            ops.append(draw(_operand(slot.kind)))
    text = ".".join([key, *quals])
    if ops:
        text += " " + ", ".join(ops)
    if draw(st.integers(0, 5)) == 0:
        text += f" == {draw(integers_text())}"
    if draw(st.integers(0, 6)) == 0:
        text = f"@{draw(st.sampled_from(('p', '!p', '%p', '!', '')))} " + text
    if draw(st.integers(0, 4)) == 0:
        text += draw(st.sampled_from((";", " ;", " // comment", ";;", " == ")))
    return text


@st.composite
def _soup_instruction(draw) -> str:
    """Plausible pieces in random order: opcodes, qualifiers, operands, punctuation."""
    head = draw(st.sampled_from(OPCODES))
    quals = draw(st.lists(st.sampled_from(QUALIFIERS), max_size=6))
    pieces = draw(st.lists(st.one_of(
        st.sampled_from(REGISTERS), st.sampled_from(LOCATIONS), integers_text(),
        st.sampled_from(("[", "]", "{", "}", ",", "_", "==", "@p", "!", "%", "+", "-", "::", ".", ";", "//")),
        _operand("addr"), _operand("vec"), _operand("taddr")), max_size=8))
    sep = draw(st.sampled_from((" ", ", ", "")))
    return ".".join([head, *quals]) + " " + sep.join(pieces)


@cache
def instructions() -> st.SearchStrategy[str]:
    from . import grammar                  # valid forms from the tables (tests/fuzz/grammar.py)

    return st.one_of(grammar.instructions(), grammar.instructions(), _valid_instruction(), _soup_instruction(),
                     st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40),
                     st.integers(1, 3000).map(lambda n: "mov r0, " + "{" * n + "r1" + "}" * n))


# -------------------------------------------------------------------------------- conditions --

@cache
def _atom() -> st.SearchStrategy[str]:
    ref = st.one_of(st.tuples(st.sampled_from(THREADS), st.sampled_from(("r0", "r1", "%r2", "r9")))
                    .map(lambda t: f"{t[0]}:{t[1]}"), st.sampled_from(("x", "y", "flag", "nope")))
    return st.one_of(st.tuples(ref, st.sampled_from(("=", "==", "!=")), integers_text()).map("".join),
                     st.sampled_from(("true", "false")))


@cache
def conditions() -> st.SearchStrategy[str]:
    tree = st.recursive(_atom(), lambda sub: st.one_of(
        _atom(),
        st.tuples(sub, st.sampled_from((" /\\ ", " \\/ ", "/\\", "\\/")), sub).map("".join),
        sub.map(lambda c: f"~{c}"), sub.map(lambda c: f"({c})")), max_leaves=12)
    soup = st.lists(st.one_of(st.sampled_from(("(", ")", "~", "/\\", "\\/", "=", "!=", ":", "exists", "%", " ")),
                              _atom(), integers_text()), max_size=12).map(" ".join)
    deep = st.tuples(st.integers(1, 5000), st.sampled_from(("(", "~", "~(")), _atom()).map(
        lambda t: t[1] * t[0] + t[2] + (")" * (t[0] * t[1].count("("))))
    return st.one_of(tree, tree, soup, deep, st.text(max_size=30))


# ------------------------------------------------------------------------------ YAML tests --

@cache
def positions() -> st.SearchStrategy[str]:
    good = st.tuples(st.integers(0, 1), st.one_of(st.none(), st.integers(0, 1)), st.integers(0, 2),
                     st.one_of(st.none(), st.integers(0, 1))).map(
        lambda t: f"gpu{t[0]}" + (f".cluster{t[1]}" if t[1] is not None else "") + f".cta{t[2]}"
        + (f".warp{t[3]}" if t[3] is not None else ""))
    return st.one_of(good, good, good, st.sampled_from(("gpu0", "cta0", "gpu0.cta99999999999999999999", "", "gpu-1.cta0")))


@cache
def yaml_scalars():
    return st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(BIG), st.floats(allow_nan=True),
                     st.text(max_size=12), integers_text())


@cache
def yaml_values():
    return st.recursive(yaml_scalars(), lambda sub: st.one_of(st.lists(sub, max_size=3),
                                                              st.dictionaries(st.text(max_size=6), sub, max_size=3)),
                        max_leaves=8)


@cache
def _location_decl():
    space = st.sampled_from(("global", "shared", "local"))
    long = st.fixed_dictionaries({}, optional={
        "space": space, "owner": positions(), "init": st.one_of(st.integers(-2, 3), yaml_scalars()),
        "alias_of": st.sampled_from(LOCATIONS), "texture_of": st.sampled_from(LOCATIONS),
        "mbarrier": st.one_of(st.fixed_dictionaries({"count": st.integers(-1, 3)}), yaml_values()),
        "tensormap": st.one_of(st.dictionaries(st.integers(0, 2), st.sampled_from(LOCATIONS), max_size=3), yaml_values()),
    })
    return st.one_of(st.integers(-3, 3), long, yaml_values())


@st.composite
def litmus_documents(draw) -> object:
    """A litmus test as a Python structure: usually the right shape, sometimes not at all."""
    nthreads = draw(st.integers(1, 3))
    threads = {}
    for t in range(nthreads):
        code = draw(st.lists(instructions(), min_size=0, max_size=5))
        thread = {"at": draw(positions()), "code": code}
        if draw(st.integers(0, 12)) == 0:
            thread = draw(yaml_values())
        threads[draw(st.sampled_from(THREADS)) if draw(st.integers(0, 6)) == 0 else f"P{t}"] = thread
    doc: dict = {"name": draw(st.one_of(st.just("T"), st.text(min_size=0, max_size=10))), "threads": threads}
    if draw(st.booleans()):
        doc["memory"] = draw(st.dictionaries(st.sampled_from(LOCATIONS + ("1x", "true")), _location_decl(), max_size=3))
    if draw(st.booleans()):
        doc["expect"] = draw(st.fixed_dictionaries({}, optional={
            "allowed": st.lists(conditions(), max_size=2), "forbidden": st.lists(conditions(), max_size=2),
            "undefined": st.one_of(st.booleans(), yaml_scalars())}))
    if draw(st.integers(0, 5)) == 0:
        doc["name"] = "T${v}"
        doc["matrix"] = draw(st.lists(st.dictionaries(st.sampled_from(("v", "w", "expect")), yaml_scalars(), max_size=2),
                                      max_size=3))
    for _ in range(draw(st.integers(0, 1))):
        doc[draw(st.sampled_from(("doc", "source", "arch", "bogus", "threads", "name")))] = draw(yaml_values())
    if draw(st.integers(0, 8)) == 0:
        return [doc, draw(yaml_values())]
    return doc


SCOPED = ("relaxed", "acquire", "release", "acq_rel")


@st.composite
def _simple_instruction(draw, regs: list[str]) -> str:
    """A well-formed instruction of the core PTX subset on global locations x, y."""
    loc = draw(st.sampled_from(("x", "y")))
    scope = draw(st.sampled_from(("cta", "cluster", "gpu", "sys")))
    val = str(draw(st.integers(0, 3)))
    reg = f"r{len(regs)}"
    kind = draw(st.sampled_from(("st", "st", "ld", "ld", "atom", "red", "fence", "membar", "alu", "await")))
    if kind == "st":
        sem = draw(st.sampled_from(("", ".weak", ".relaxed", ".release", ".volatile")))
        sc = f".{scope}" if sem in (".relaxed", ".release") else ""
        src = draw(st.sampled_from(regs)) if regs and draw(st.booleans()) else val
        return f"st{sem}{sc}.global [{loc}], {src}"
    if kind in ("ld", "await"):
        sem = draw(st.sampled_from(("", ".weak", ".relaxed", ".acquire", ".volatile")))
        sc = f".{scope}" if sem in (".relaxed", ".acquire") else ""
        regs.append(reg)
        return f"ld{sem}{sc}.global {reg}, [{loc}]" + (f" == {val}" if kind == "await" else "")
    if kind in ("atom", "red"):
        sem = draw(st.sampled_from(SCOPED if kind == "atom" else ("relaxed", "release")))
        op = draw(st.sampled_from(("add", "exch", "cas", "inc", "max") if kind == "atom" else ("add", "max", "or")))
        ty = {"add": "u32", "inc": "u32", "max": "u32"}.get(op, "b32")
        if kind == "red":
            return f"red.{sem}.{scope}.global.{op}.{ty} [{loc}], {val}"
        regs.append(reg)
        extra = f", {draw(st.integers(0, 3))}" if op == "cas" else ""
        return f"atom.{sem}.{scope}.global.{op}.{ty} {reg}, [{loc}], {val}{extra}"
    if kind == "fence":
        return f"fence.{draw(st.sampled_from(('sc', 'acq_rel', 'acquire', 'release')))}.{scope}"
    if kind == "membar":
        return f"membar.{draw(st.sampled_from(('cta', 'gl', 'sys')))}"
    if not regs:
        regs.append(reg)
        return f"mov {reg}, {val}"
    op = draw(st.sampled_from(("add", "sub", "mul", "and", "or", "xor", "mov")))
    src = draw(st.sampled_from(regs))
    regs.append(reg)
    operand = draw(st.sampled_from((val, val, "-1", "-3", "4294967295", "4294967296", "2147483648")))
    return f"mov {reg}, {src}" if op == "mov" else f"{op} {reg}, {src}, {operand}"


@st.composite
def valid_documents(draw) -> dict:
    """A small well-formed test of the core subset (it may still be rejected, e.g. by an await
    no execution can satisfy), with conditions over the registers and locations it uses."""
    threads, atoms = {}, []
    for t in range(draw(st.integers(1, 3))):
        regs: list[str] = []
        code = [draw(_simple_instruction(regs)) for _ in range(draw(st.integers(1, 4)))]
        warp = draw(st.sampled_from(("", ".warp1")))
        threads[f"P{t}"] = {"at": f"gpu0.cta{draw(st.integers(0, 2))}{warp}", "code": code}
        atoms += [f"P{t}:{r}={draw(st.integers(0, 3))}" for r in dict.fromkeys(regs)]
    atoms += [f"{loc}={draw(st.integers(0, 3))}" for loc in ("x", "y")]
    conds = draw(st.lists(st.lists(st.sampled_from(atoms), min_size=1, max_size=3).map(" /\\ ".join),
                          max_size=3))
    doc: dict = {"name": "V", "threads": threads}
    if conds:
        split = draw(st.integers(0, len(conds)))
        doc["expect"] = {k: v for k, v in (("allowed", conds[:split]), ("forbidden", conds[split:])) if v}
    return doc


@cache
def yaml_texts() -> st.SearchStrategy[str]:
    """Test documents dumped as YAML (block or flow style): some well formed, some of the right
    shape with odd contents, some of the wrong shape, a few with one line mutated."""
    docs = st.one_of(valid_documents(), litmus_documents())
    dumped = st.tuples(docs, st.booleans()).map(
        lambda t: yaml.safe_dump(t[0], sort_keys=False, default_flow_style=t[1], allow_unicode=True))
    mutated = st.tuples(valid_documents().map(lambda d: yaml.safe_dump(d, sort_keys=False)), mutation_ops(12)) \
        .map(lambda t: apply_mutations(*t)[0])
    return st.one_of(dumped, dumped, mutated)


@cache
def raw_yaml_texts() -> st.SearchStrategy[str]:
    """YAML-ish text: anchors, aliases, tags, merge keys, duplicate keys, odd characters."""
    tokens = st.sampled_from(("name: T", "threads:", "  P0:", "    at: gpu0.cta0", "    code:", "      - st [x], 1",
                              "      - ld r0, [x]", "expect:", "  allowed:", "    - P0:r0=1", "&a", "*a", "<<: *a",
                              "!!python/object:os.system", "!!binary", "? ", ": ", "- ", "[", "]", "{", "}", "'", '"',
                              "\t", "%YAML 1.1", "---", "...", "\x00", "\ufeff", "#", "|", ">", "name: T",
                              'name: "\\ud800"', 'doc: "\\x0f\\0"', 'name: "a\\x0fb"'))
    deep = st.tuples(st.integers(1, 3000), st.sampled_from(("[", "{a: ", "- "))).map(
        lambda t: "name: " + t[1] * t[0] if t[1] != "- " else "\n".join("  " * i + "- " for i in range(t[0])))
    soup = st.lists(st.one_of(tokens, st.text(max_size=8)), max_size=25).map("\n".join)
    return st.one_of(soup, soup, soup, deep, st.text(max_size=60))


@cache
def alias_bombs() -> st.SearchStrategy[str]:
    def bomb(n: int) -> str:
        lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
        lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, n)]
        return "\n".join(lines) + "\n"
    return st.integers(1, 12).map(bomb)


# ------------------------------------------------------------------------------------ mutations --

QUALIFIER_SWAPS = (("acquire", "release"), ("release", "acquire"), ("relaxed", "weak"), ("weak", "relaxed"),
                   ("gpu", "cta"), ("cta", "gpu"), ("cluster", "sys"), ("sys", "cluster"), ("global", "shared"),
                   ("shared", "global"), ("sc", "acq_rel"), ("acq_rel", "sc"), ("forbidden", "allowed"),
                   ("allowed", "forbidden"), ("ld", "st"), ("st", "ld"), ("add", "exch"), ("async", "alias"),
                   ("shared::cta", "shared::cluster"), ("r0", "r1"), ("P1", "P0"), ("x", "y"), ("true", "false"))


@st.composite
def mutation_ops(draw, n_lines: int):
    """A list of edits to apply to a file's lines."""
    line = st.integers(0, max(0, n_lines - 1))
    op = st.one_of(
        st.tuples(st.just("delete"), line),
        st.tuples(st.just("duplicate"), line),
        st.tuples(st.just("swap"), line, line),
        st.tuples(st.just("flip"), line, st.integers(0, 200), st.characters(codec="utf-8", exclude_categories=("Cs",))),
        st.tuples(st.just("qualifier"), line, st.sampled_from(QUALIFIER_SWAPS)),
        st.tuples(st.just("number"), line, st.integers(0, 20), integers_text()),
        st.tuples(st.just("indent"), line, st.sampled_from(("", " ", "  ", "\t", "      "))),
        st.tuples(st.just("truncate"), line, st.integers(0, 200)),
    )
    return draw(st.lists(op, min_size=1, max_size=4))


def apply_mutations(text: str, ops) -> tuple[str, int]:
    """The mutated text and the (0-based) line the first edit touched."""
    lines = text.split("\n")
    first = None
    for op in ops:
        if not lines:
            break
        i = min(op[1], len(lines) - 1)
        first = i if first is None else first
        kind = op[0]
        if kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "swap":
            j = min(op[2], len(lines) - 1)
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "flip":
            s = lines[i]
            k = op[2] % (len(s) + 1)
            lines[i] = s[:k] + op[3] + s[k + 1:]
        elif kind == "qualifier":
            old, new = op[2]
            lines[i] = re.sub(rf"\b{re.escape(old)}\b", new, lines[i], count=1)
        elif kind == "number":
            nums = list(re.finditer(r"\d+", lines[i]))
            if nums:
                m = nums[op[2] % len(nums)]
                lines[i] = lines[i][:m.start()] + op[3] + lines[i][m.end():]
        elif kind == "indent":
            lines[i] = op[2] + lines[i].lstrip()
        elif kind == "truncate":
            lines[i] = lines[i][:op[2]]
    return "\n".join(lines), first or 0


SMALL_FILES = [p for p in BUNDLED_FILES if len(BUNDLED_TEXTS[p]) < 5000] or BUNDLED_FILES


@st.composite
def mutated_bundled(draw, small: bool = False) -> tuple[str, str, int]:
    """(file name, mutated text, line of the first edit) of one bundled litmus file (with
    `small`, one of the short files: the CLI target checks every test of the file)."""
    path = draw(st.sampled_from(SMALL_FILES if small else BUNDLED_FILES))
    text = BUNDLED_TEXTS[path]
    ops = draw(mutation_ops(text.count("\n") + 1))
    mutated, line = apply_mutations(text, ops)
    return path.relative_to(LITMUS_DIR.parent).as_posix(), mutated, line


# ------------------------------------------------------------------------------------------ cat --

BASE_NAMES = ("po", "rf", "co", "fr", "loc", "R", "W", "F", "M", "id", "rmw", "int", "ext", "sloc", "unknown_x")


@cache
def cat_expressions() -> st.SearchStrategy[str]:
    atom = st.one_of(st.sampled_from(BASE_NAMES), st.sampled_from(("0", "_", "[R]", "[W]", "[_]")))
    return st.recursive(atom, lambda sub: st.one_of(
        atom,
        st.tuples(sub, st.sampled_from((" | ", " ; ", " \\ ", " & ", " * ")), sub).map("".join),
        st.tuples(sub, st.sampled_from(("^-1", "+", "*", "?", "^ -1"))).map("".join),
        sub.map(lambda e: f"({e})"), sub.map(lambda e: f"~{e}"), sub.map(lambda e: f"[{e}]"),
        sub.map(lambda e: f"domain({e})"), sub.map(lambda e: f"range({e})"),
        st.tuples(sub, sub).map(lambda t: f'if "opt" then {t[0]} else {t[1]}')), max_leaves=10)


@st.composite
def cat_texts(draw) -> str:
    """A small model: lets, recursive lets, checks, flags, includes, comments, and some junk."""
    stmts = []
    names = []
    for k in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(("let", "let", "letrec", "check", "flag", "junk", "include", "comment")))
        if kind == "let":
            name = f"n{k}"
            stmts.append(f"let {name} = {draw(cat_expressions())}")
            names.append(name)
        elif kind == "letrec":
            stmts.append(f"let rec a{k} = {draw(cat_expressions())} | a{k};b{k} and b{k} = {draw(cat_expressions())}")
        elif kind in ("check", "flag"):
            test = draw(st.sampled_from(("acyclic", "irreflexive", "empty", "~empty")))
            flag = "flag " if kind == "flag" else ""
            name = draw(st.sampled_from(("", " as Ax", " as Coherence", " as")))
            stmts.append(f"{flag}{test} {draw(cat_expressions())}{name}")
        elif kind == "include":
            stmts.append(draw(st.sampled_from(('include "sc.cat"', 'include "nope.cat"', 'include "ptx.cat"',
                                               'include "/dev/zero"', 'include ""'))))
        elif kind == "comment":
            stmts.append(draw(st.sampled_from(("(* c *)", "(* (* nested *) *)", "(* open", "*)", "(* Glossary\n"
                                               "  rel po : program order\n  set R : reads\n*)"))))
        else:
            stmts.append(draw(st.text(max_size=10)))
    title = draw(st.sampled_from(("", '"fuzz"\n', "PTX\n")))
    return title + "\n".join(stmts) + "\n"


@st.composite
def mutated_models(draw) -> tuple[str, str]:
    """(file name, mutated text) of one bundled cat model."""
    path = draw(st.sampled_from(MODEL_FILES))
    text = MODEL_TEXTS[path]
    mutated, _ = apply_mutations(text, draw(mutation_ops(text.count("\n") + 1)))
    return path.name, mutated
