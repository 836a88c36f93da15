"""An annotated cycle as a litmus test: its name, its condition (the cycle is observed) and its
YAML text, written directly as text (fast, and byte-for-byte deterministic)."""
from __future__ import annotations

from dataclasses import dataclass

from . import placement
from .annotate import Sep, Variant
from .cycles import LOCATION_NAMES
from .vocab import PLACEMENT_NAME

TMAP_BASE = 100          # a tensor map's value v selects the buffer holding TMAP_BASE + v


@dataclass(frozen=True)
class Test:
    name: str
    family: str
    cycle: str             # the structural edges, space-separated
    condition: str         # herd syntax: the cycle is observed
    body: str              # the YAML list item without `expect:` (ends with a newline)

    def yaml(self, expect: str = "") -> str:
        return self.body + expect


# -------------------------------------------------------------------------------------- names --

def sep_token(edge_same_loc: bool, s: Sep) -> str:
    parts = [p for p in (s.completion, s.fence) if p not in ("nowait", "nofence")]
    base = "pos" if edge_same_loc else "po"
    if not parts:
        return base
    return ".".join(([base] if edge_same_loc else []) + parts)


def name_of(v: Variant) -> str:
    """Family, then one component per thread of two or more accesses (diy style: all 'po' is
    left out, n equal ones are written once with an 's'); when a thread of one access is
    annotated, every thread has a component, 'plain' for a single weak generic access."""
    sh = v.shape
    comps, singles = [], []
    for evs in sh.threads:
        toks = []
        for j, i in enumerate(evs):
            toks.append(v.access[i].token)
            if j + 1 < len(evs):
                e = sh.edges[i]
                toks.append(sep_token(e.same_loc, v.sep[i]) if e.kind == "po" else e.name.lower())
        comps.append("-".join(t for t in toks if t))
        singles.append(len(evs) == 1)
    if any(c for c, single in zip(comps, singles) if single):
        parts = [sh.family] + [c or "plain" for c in comps]
    else:
        multi = [c for c, single in zip(comps, singles) if not single]
        if all(c == "po" for c in multi):
            parts = [sh.family]
        elif len(multi) > 1 and len(set(multi)) == 1:
            parts = [sh.family, multi[0] + "s"]
        else:
            parts = [sh.family] + multi
    parts.append(placement_suffix(v.levels))
    return "+".join(parts)


def placement_suffix(levels: tuple[str, ...]) -> str:
    if len(set(levels)) == 1:
        return PLACEMENT_NAME[levels[0]]
    return "-".join(PLACEMENT_NAME[lv] for lv in levels)


# ------------------------------------------------------------------------------------- render --

def render(v: Variant, source: str) -> Test:
    sh = v.shape
    n = len(sh.edges)
    pos = placement.positions(v.levels)
    assert pos is not None
    locs = LOCATION_NAMES
    memory: list[str] = []
    tmap_locs = sorted({sh.loc[i] for i in range(n) if v.access[i].proxy == "tmap"})
    for L in tmap_locs:
        writes = sum(1 for i in range(n) if sh.loc[i] == L and sh.kinds[i] == "W")
        name = locs[L]
        entries = ", ".join(f"{k}: {name}_g{k}" for k in range(writes + 1))
        memory.append(f"{name}: {{tensormap: {{{entries}}}, init: 0}}")
        memory.extend(f"{name}_g{k}: {TMAP_BASE + k}" for k in range(writes + 1))
    for L in sorted({sh.loc[i] for i in range(n) if v.access[i].proxy == "alias"}):
        memory.append(f"{locs[L]}: 0")                # declared: it may be used only through its alias
        memory.append(f"{locs[L]}a: {{alias_of: {locs[L]}}}")
    # With asynchronous accesses, a read that must see another write of the cycle and that
    # precedes more of its thread is an await: the thread goes on once it has seen the value, as a
    # consumer does, so that the in-flight checks judge the executions that follow the protocol.
    awaits = any(a.proxy in ("async", "tmap") for a in v.access)
    atoms: list[str] = []
    threads_text: list[str] = []
    k_async = 0
    for t, evs in enumerate(sh.threads):
        cta = placement.cta_text(pos[t])
        code: list[str] = []
        reg = 0
        for j, i in enumerate(evs):
            a = v.access[i]
            L = locs[sh.loc[i]]
            nxt_sep = v.sep[i] if j + 1 < len(evs) else None
            want = sh.reads[i]
            if a.proxy in ("gen", "alias"):
                addr = L + "a" if a.proxy == "alias" else L
                sem = a.sem + (f".{a.scope}" if a.scope else "")
                if sh.kinds[i] == "W":
                    code.append(f"st.{sem}.global [{addr}], {sh.value[i]}")
                else:
                    wait = f" == {want}" if awaits and want and j + 1 < len(evs) else ""
                    code.append(f"ld.{sem}.global r{reg}, [{addr}]{wait}")
                    if want is not None:
                        atoms.append(f"P{t}:r{reg}={want}")
                    reg += 1
            else:
                k = k_async
                k_async += 1
                waits = nxt_sep is not None and nxt_sep.completion != "nowait"
                if sh.kinds[i] == "W":
                    memory.append(f"s{k}: {{space: shared, owner: {cta}, init: {sh.value[i]}}}")
                    code.append(f"cp.async.bulk.global.shared::cta.bulk_group [{L}], [s{k}], 16")
                else:
                    memory.append(f"d{k}: {{space: shared, owner: {cta}}}")
                    memory.append(f"mb{k}: {{space: shared, owner: {cta}, mbarrier: {{count: 1}}}}")
                    if waits:
                        code.append(f"mbarrier.arrive.expect_tx.shared::cta.b64 _, [mb{k}], 16")
                    if a.proxy == "async":
                        code.append(f"cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes "
                                    f"[d{k}], [{L}], 16, [mb{k}]")
                        if want is not None:
                            atoms.append(f"d{k}={want}")
                    else:
                        code.append(f"cp.async.bulk.tensor.1d.shared::cta.global.tile.mbarrier::complete_tx::bytes "
                                    f"[d{k}], [{L}, {{0}}], [mb{k}]")
                        if want is not None:
                            atoms.append(f"d{k}={TMAP_BASE + want}")
                if waits:
                    if nxt_sep.completion == "wait_group":
                        code += ["cp.async.bulk.commit_group", "cp.async.bulk.wait_group 0"]
                    else:
                        code.append(f"mbarrier.try_wait.parity.shared::cta.b64 p{k}, [mb{k}], 0 == 1")
            if nxt_sep is not None and nxt_sep.fence != "nofence":
                code.append(fence_text(nxt_sep.fence, locs[sh.loc[(i + 1) % n]]))
        lines = "\n".join(f"        - {c}" for c in code)
        threads_text.append(f"    P{t}:\n      at: {placement.position_text(pos[t])}\n      code:\n{lines}\n")
    atoms.extend(f"{locs[L]}={sh.value[w]}" for L, w in sh.final)
    cond = " /\\ ".join(atoms) if atoms else "true"
    name = name_of(v)
    cycle = sh.cycle
    doc = f"Cycle {cycle} observed: {cond} (family {sh.family}; annotations in the name, see docs/gen.md)."
    src = source.replace("{cycle}", cycle)
    mem = "".join(f"    {m}\n" for m in memory)
    body = (f"- name: \"{name}\"\n"
            f"  doc: '{doc}'\n"
            f"  source: '{src}'\n"
            f"  arch: sm_90\n"
            + (f"  memory:\n{mem}" if memory else "")
            + "  threads:\n" + "".join(threads_text))
    return Test(name, sh.family, cycle, cond, body)


def fence_text(fence: str, target_loc: str) -> str:
    if fence.startswith("fence.tmap."):
        _, _, sem, scope = fence.split(".")
        if sem == "acq":
            return f"fence.proxy.tensormap::generic.acquire.{scope} [{target_loc}], 128"
        return f"fence.proxy.tensormap::generic.release.{scope}"
    if fence.startswith("fence.proxy."):
        return fence
    _, kind, scope = fence.split(".")
    return f"fence.{_FENCE_SEM.get(kind, kind)}.{scope}"


_FENCE_SEM = {"rel": "release", "acq": "acquire"}


def expect_yaml(verdict: str, condition: str) -> str:
    """The `expect:` lines for a model verdict: allowed | forbidden | undefined."""
    if verdict == "undefined":
        return "  expect:\n    undefined: true\n"
    return f"  expect:\n    {verdict}: ['{condition}']\n"
