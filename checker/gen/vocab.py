"""The generator's vocabulary: structural edges, the annotation tokens of each dimension, the
families (names that stand for several tokens), the presets, and the selection that
`--preset`/`--edges`/`--exclude`/`--scopes`/`--placement` make of them.

Every token is a YAML-visible name: it appears in generated test names, in `source:` and in the
index file, and docs/gen.md lists them all."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from ..errors import CheckerError

SCOPES = ("cta", "cluster", "gpu", "sys")


# ------------------------------------------------------------------------ structural edges --

@dataclass(frozen=True)
class Edge:
    """One edge of a cycle: from an access of kind `src` to one of kind `dst` ('R' or 'W').
    kind 'po' is program order (`same_loc`: Pos, else Pod); 'rf'/'fr'/'co' are communication
    edges, `ext` when they cross threads (Rfe) and internal otherwise (Rfi: forward in program
    order)."""

    name: str
    kind: str
    ext: bool
    src: str
    dst: str
    same_loc: bool

    @property
    def com(self) -> bool:
        return self.kind != "po"


def _edges() -> dict[str, Edge]:
    out = {}
    for loc, same in (("d", False), ("s", True)):
        for a in "WR":
            for b in "WR":
                out[f"Po{loc}{a}{b}"] = Edge(f"Po{loc}{a}{b}", "po", False, a, b, same)
    for kind, a, b in (("rf", "W", "R"), ("fr", "R", "W"), ("co", "W", "W")):
        for ext in (True, False):
            name = kind.capitalize() + ("e" if ext else "i")
            out[name] = Edge(name, kind, ext, a, b, True)
    return out


EDGES: dict[str, Edge] = _edges()
# The order in which edges are compared when choosing a cycle's canonical rotation.
EDGE_ORDER = {name: i for i, name in enumerate(EDGES)}


# ------------------------------------------------------------------------ annotation tokens --

@dataclass(frozen=True)
class Access:
    """How an access is performed: `proxy` gen | alias | async | tmap, `sem` weak | relaxed |
    release | acquire, and the scope of a strong one."""

    proxy: str = "gen"
    sem: str = "weak"
    scope: str | None = None

    @property
    def token(self) -> str:
        """The access's part of a test name ('' for a weak generic access)."""
        return _access_token(self)


@lru_cache(maxsize=1024)
def _access_token(a: Access) -> str:
    parts = [] if a.proxy == "gen" else [a.proxy]
    if a.sem != "weak":
        parts.append(f"{SEM_TOKEN[a.sem]}.{a.scope}")
    return ".".join(parts)


SEM_TOKEN = {"relaxed": "rlx", "release": "rel", "acquire": "acq"}
TOKEN_SEM = {v: k for k, v in SEM_TOKEN.items()}

STRENGTHS = ("weak",) + tuple(f"{t}.{s}" for t in ("rlx", "rel", "acq") for s in SCOPES)
PROXIES = ("gen", "alias", "async", "tmap")

# Fences (one per program-order edge at most). '.S' tokens exist for each scope.
FENCE_KINDS = ("fence.sc", "fence.acq_rel", "fence.rel", "fence.acq", "fence.tmap.rel", "fence.tmap.acq")
FENCES = ("nofence",) + tuple(f"{k}.{s}" for k in FENCE_KINDS for s in SCOPES) \
    + ("fence.proxy.alias", "fence.proxy.async")
COMPLETIONS = ("nowait", "wait_group", "mbar_wait")

PLACEMENTS = ("warp", "cta", "cluster", "gpu", "sys")
# The part of a test name for a uniform placement (every communicating pair at that level).
PLACEMENT_NAME = {"warp": "sameWarp", "cta": "sameCTA", "cluster": "sameCluster", "gpu": "sameGPU",
                  "sys": "diffGPU"}

# The plain choice of each dimension: kept unless excluded by name.
PLAIN = {"access": "weak", "proxy": "gen", "fence": "nofence", "completion": "nowait"}

DIMENSIONS: dict[str, tuple[str, ...]] = {
    "edge": tuple(EDGES),
    "access": STRENGTHS,
    "proxy": PROXIES,
    "fence": FENCES,
    "completion": COMPLETIONS,
}
DIMENSION_OF = {tok: dim for dim, toks in DIMENSIONS.items() for tok in toks}


def _family_names() -> dict[str, tuple[str, ...]]:
    e = EDGES.values()
    fam: dict[str, tuple[str, ...]] = {
        "Pod": tuple(x.name for x in e if x.kind == "po" and not x.same_loc),
        "Pos": tuple(x.name for x in e if x.kind == "po" and x.same_loc),
        "Po": tuple(x.name for x in e if x.kind == "po"),
        "Rf": ("Rfe", "Rfi"), "Fr": ("Fre", "Fri"), "Co": ("Coe", "Coi"),
        "ext": ("Rfe", "Fre", "Coe"), "int": ("Rfi", "Fri", "Coi"),
        "com": ("Rfe", "Fre", "Coe", "Rfi", "Fri", "Coi"),
        "strong": tuple(t for t in STRENGTHS if t != "weak"),
        "proxy": ("alias", "async", "tmap"),
        "fence": tuple(f for f in FENCES if f != "nofence"),
        "fence.proxy": ("fence.proxy.alias", "fence.proxy.async")
        + tuple(f for f in FENCES if f.startswith("fence.tmap.")),
        "fence.tmap": tuple(f for f in FENCES if f.startswith("fence.tmap.")),
        "wait": ("wait_group", "mbar_wait"),
    }
    for t in ("rlx", "rel", "acq"):
        fam[t] = tuple(f"{t}.{s}" for s in SCOPES)
    for k in FENCE_KINDS:
        fam[k] = tuple(f"{k}.{s}" for s in SCOPES)
    return fam


FAMILIES = _family_names()


class SelectionError(CheckerError):
    """A bad --edges/--exclude/--scopes/--placement/--preset value (the user's command line)."""


def expand(names: list[str]) -> list[str]:
    """Tokens named by `names` (tokens or family names), in vocabulary order per name."""
    out: list[str] = []
    for n in names:
        if n in DIMENSION_OF:
            out.append(n)
        elif n in FAMILIES:
            out.extend(FAMILIES[n])
        elif n == "all":
            out.extend(DIMENSION_OF)
        else:
            raise SelectionError(f"unknown edge or annotation '{n}' (see `ptxmc gen --list`)")
    return out


# ------------------------------------------------------------------------------- selection --

@dataclass(frozen=True)
class Selection:
    """What to generate: the tokens of each dimension, the scopes and placement levels, and
    whether scopes and placements are uniform per test or mixed."""

    edges: frozenset[str]
    access: frozenset[str]
    proxy: frozenset[str]
    fence: frozenset[str]
    completion: frozenset[str]
    scopes: tuple[str, ...] = SCOPES
    placements: tuple[str, ...] = ("gpu",)
    scope_mode: str = "uniform"
    placement_mode: str = "uniform"
    size: int = 4
    threads: int = 4
    cycles: tuple[tuple[str, ...], ...] = field(default=())   # explicit cycles (--cycle)

    def describe(self) -> str:
        """A one-line summary, for the index file's header."""
        dims = "; ".join(f"{d}: {' '.join(sorted(getattr(self, d), key=_vocab_order))}"
                         for d in ("edges", "access", "proxy", "fence", "completion"))
        head = ("cycles " + ", ".join(" ".join(c) for c in self.cycles) if self.cycles
                else f"size {self.size}; threads {self.threads}")
        return (f"{head}; {dims}; scopes {' '.join(self.scopes)} "
                f"({self.scope_mode}); placement {' '.join(self.placements)} ({self.placement_mode})")


_ORDER = {tok: i for i, tok in enumerate(DIMENSION_OF)}


def _vocab_order(tok: str) -> int:
    return _ORDER.get(tok, len(_ORDER))


def _preset(edges, access, fence, proxy=("gen",), completion=("nowait",), placements=("gpu",)) -> dict:
    return {"edges": tuple(expand(list(edges))), "access": tuple(expand(list(access))),
            "proxy": tuple(proxy), "fence": tuple(expand(list(fence))),
            "completion": tuple(completion), "placements": tuple(placements)}


PRESETS = {
    # The classic families (program order to different locations, external communication) with
    # release/acquire accesses and fence.sc at .gpu scope, threads in different clusters of one GPU.
    "generic": _preset(("Pod", "ext"), ("weak", "rel.gpu", "acq.gpu"), ("nofence", "fence.sc.gpu")),
    # Every strength and fence at every scope, threads at every placement level (one scope and one
    # placement per test).
    "scopes": _preset(("Pod", "ext"), ("weak", "rlx", "rel", "acq"), ("nofence", "fence.sc", "fence.acq_rel"),
                      placements=("cta", "cluster", "gpu", "sys")),
    # Virtual aliases and the tensormap proxy with their proxy fences, release/acquire at .gpu,
    # threads in one CTA or in different CTAs (the proxy fence placement rules).
    "proxy": _preset(("Pod", "Pos", "ext"), ("weak", "rel.gpu", "acq.gpu"),
                     ("nofence", "fence.proxy.alias", "fence.tmap.rel.gpu", "fence.tmap.acq.gpu"),
                     proxy=("gen", "alias", "tmap"), placements=("cta", "cluster")),
    # Bulk copies (async proxy) with and without their completion (bulk wait_group for a copy
    # to global memory, an mbarrier complete-tx wait for a copy from it), fence.proxy.async,
    # release/acquire at .cluster, threads in one CTA or in different CTAs of one cluster.
    "async": _preset(("Pod", "ext"), ("weak", "rel.cluster", "acq.cluster"), ("nofence", "fence.proxy.async"),
                     proxy=("gen", "async"), completion=("nowait", "wait_group", "mbar_wait"),
                     placements=("cta", "cluster")),
}


# Bounds on --size and --threads: at 8 and 8 the generic preset already has 32 billion tests (and
# counting the proxy preset takes minutes); without a bound a size of 10^11 never returned.
MAX_SIZE = 8
MAX_THREADS = 8


def select(preset: str = "generic", edges: list[str] | None = None, exclude: list[str] | None = None,
           scopes: list[str] | None = None, placements: list[str] | None = None,
           scope_mode: str = "uniform", placement_mode: str = "uniform", size: int = 4, threads: int = 4,
           cycles: tuple[tuple[str, ...], ...] = ()) -> Selection:
    """The selection a command line makes. `edges` replaces the preset's tokens in each dimension
    it names (the plain choice of that dimension -- weak, gen, nofence, nowait -- stays unless
    excluded); `exclude` removes tokens; `scopes` keeps only scoped tokens of those scopes."""
    if preset not in PRESETS:
        raise SelectionError(f"unknown preset '{preset}' (choose from {', '.join(PRESETS)})")
    if size < 2:
        raise SelectionError("--size must be at least 2 (a cycle needs two communication edges)")
    if threads < 2:
        raise SelectionError("--threads must be at least 2")
    if size > MAX_SIZE or threads > MAX_THREADS:
        flag, v = ("--size", size) if size > MAX_SIZE else ("--threads", threads)
        raise SelectionError(f"{flag} {v}: at most {MAX_SIZE if flag == '--size' else MAX_THREADS} (the count "
                             "of larger selections grows past billions of tests and takes minutes; "
                             "narrow the selection instead)")
    p = PRESETS[preset]
    dims: dict[str, list[str]] = {d: list(p[d if d != "edge" else "edges"]) for d in DIMENSIONS}
    if edges:
        named: dict[str, list[str]] = {}
        for tok in expand(edges):
            named.setdefault(DIMENSION_OF[tok], []).append(tok)
        for d, toks in named.items():
            keep = [PLAIN[d]] if d in PLAIN else []
            dims[d] = keep + toks
    drop = set(expand(exclude or []))
    for s in scopes or []:
        if s not in SCOPES:
            raise SelectionError(f"unknown scope '{s}' (choose from {', '.join(SCOPES)})")
    keep_scopes = tuple(s for s in SCOPES if s in (scopes or SCOPES))
    for d, toks in dims.items():
        dims[d] = [t for t in dict.fromkeys(toks) if t not in drop and scope_of(t) in (None,) + keep_scopes]
    for pl in placements or []:
        if pl not in PLACEMENTS:
            raise SelectionError(f"unknown placement '{pl}' (choose from {', '.join(PLACEMENTS)})")
    pls = tuple(pl for pl in PLACEMENTS if pl in (placements or p["placements"]))
    if scope_mode not in ("uniform", "mixed") or placement_mode not in ("uniform", "mixed"):
        raise SelectionError("--scope-mode and --placement-mode take 'uniform' or 'mixed'")
    for d in ("edge", "access", "proxy", "fence", "completion"):
        if not dims[d] and not (d == "edge" and cycles):
            raise SelectionError(f"nothing left to choose from for {d}s (every one excluded)")
    for c in cycles:
        for name in c:
            if name not in EDGES:
                raise SelectionError(f"unknown edge '{name}' in --cycle (edges: {', '.join(EDGES)})")
    return Selection(frozenset(dims["edge"]), frozenset(dims["access"]), frozenset(dims["proxy"]),
                     frozenset(dims["fence"]), frozenset(dims["completion"]), keep_scopes, pls,
                     scope_mode, placement_mode, size, threads, tuple(cycles))


def scope_of(token: str) -> str | None:
    """The scope a scoped token names (rel.gpu -> gpu), else None."""
    last = token.rsplit(".", 1)[-1]
    return last if last in SCOPES else None
