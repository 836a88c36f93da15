"""The cost model of `ptxmc fix`: what each edit costs, the default table, and `--cost FILE`.

A repair's cost is the sum of its edits' costs (positive integers). The table is flat: one key
per kind of edit (docs/fix.md lists every key with the reason for its value):

- inserting an instruction: its key is the instruction as inserted, without operands
  (`fence.proxy.async.shared::cta`, `fence.acq_rel.gpu`, `cp.async.wait_all`, `bar.sync`,
  `barrier.cluster` for an arrive + wait pair, ...);
- strengthening an access: `access.SEM.SCOPE` is what an access at that strength costs
  (`weak` costs 0); strengthening costs the difference, new minus old;
- strengthening a fence in place: the difference of the two `fence.SEM.SCOPE` entries;
- tightening a completion wait (a smaller N, `.read` dropped, `wait_group` to `wait_all`):
  `tighten`.

The order the defaults encode (justified in docs/fix.md): a proxy fence < a .cta fence < .cluster
< .gpu < .sys; fence.acquire / fence.release < fence.acq_rel < fence.sc at each scope; an
.acquire / .release access costs half the fence of its scope; completion waits and barriers
stall a thread until other work is done, so they cost more than a fence of the CTA.

A cost file overrides some entries: YAML (`fence.sc.gpu: 30`) or TOML (`"fence.sc.gpu" = 30`),
chosen by the file's extension. `load` checks it: known keys, positive integers, and the orders
the search relies on (`ORDERS`): the candidate pruning keeps, among edits with the same effect,
the cheapest (the narrowest scope, the narrowest proxy fence), which is sound only when wider is
never cheaper.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from ..errors import CheckerError, SourceLoc

SCOPES = ("cta", "cluster", "gpu", "sys")
FENCE_SEMS = ("acquire", "release", "acq_rel", "sc")
ACCESS_SEMS = ("relaxed", "acquire", "release", "acq_rel")

_FENCE = {"acquire": (4, 8, 16, 32), "release": (4, 8, 16, 32), "acq_rel": (5, 10, 20, 40), "sc": (8, 16, 32, 64)}
_ACCESS = {"relaxed": (1, 2, 3, 5), "acquire": (2, 4, 8, 16), "release": (2, 4, 8, 16), "acq_rel": (3, 6, 12, 24)}


def _defaults() -> dict[str, int]:
    t: dict[str, int] = {}
    for sem, costs in _FENCE.items():
        for scope, c in zip(SCOPES, costs):
            t[f"fence.{sem}.{scope}"] = c
    for sem, costs in _ACCESS.items():
        for scope, c in zip(SCOPES, costs):
            t[f"access.{sem}.{scope}"] = c
    for scope, c in zip(SCOPES, _FENCE["release"]):
        t[f"fence.proxy.tensormap::generic.release.{scope}"] = c + 1
        t[f"fence.proxy.tensormap::generic.acquire.{scope}"] = c + 1
    t.update({
        "fence.proxy.async.shared::cta": 2,
        "fence.proxy.async.shared::cluster": 2,
        "fence.proxy.async.global": 2,
        "fence.proxy.async": 3,
        "fence.proxy.alias": 3,
        "fence.mbarrier_init.release.cluster": 3,
        "fence.release.sync_restrict::shared::cta.cluster": 5,
        "fence.acquire.sync_restrict::shared::cluster.cluster": 5,
        "fence.proxy.async::generic.release.sync_restrict::shared::cta.cluster": 5,
        "fence.proxy.async::generic.acquire.sync_restrict::shared::cluster.cluster": 5,
        "tcgen05.fence::before_thread_sync": 1,
        "tcgen05.fence::after_thread_sync": 1,
        "wgmma.fence": 1,
        "cp.async.wait_all": 6,
        "cp.async.bulk.wait_group.read": 5,
        "cp.async.bulk.wait_group": 6,
        "wgmma.wait_group": 6,
        "tcgen05.wait::ld": 5,
        "tcgen05.wait::st": 5,
        "mbarrier.try_wait": 6,
        "tighten": 3,
        "bar.warp.sync": 3,
        "bar.sync": 10,
        "barrier.cluster": 20,
        "barrier.cluster.arrive.release": 4,   # barrier.cluster.arrive.relaxed -> .release in place
        # the edits that can remove a hang (checker.repair.hangs): an operand or a qualifier
        # changed, an arrival added
        "parity": 1,
        "expect_tx": 1,
        "mbarrier.init.count": 1,
        "bar.count": 1,
        "cp.async.mbarrier.arrive.noinc": 1,
        "st.value": 1,
        "mbarrier.arrive": 2,
        "barrier.cluster.arrive": 10,
    })
    return t


DEFAULTS: Mapping[str, int] = MappingProxyType(_defaults())


def _orders() -> tuple[tuple[str, str, str], ...]:
    """(cheaper-or-equal key, key, why): what the candidate pruning relies on."""
    out = []
    for table, sems in (("fence", FENCE_SEMS), ("access", ACCESS_SEMS)):
        for sem in sems:
            for a, b in zip(SCOPES, SCOPES[1:]):
                out.append((f"{table}.{sem}.{a}", f"{table}.{sem}.{b}", "costs must not decrease as a scope widens"))
    for scope in SCOPES:
        for weak, strong in (("acquire", "acq_rel"), ("release", "acq_rel"), ("acq_rel", "sc")):
            out.append((f"fence.{weak}.{scope}", f"fence.{strong}.{scope}",
                        "a stronger fence must not cost less than a weaker one"))
        for weak, strong in (("relaxed", "acquire"), ("relaxed", "release"), ("acquire", "acq_rel"),
                             ("release", "acq_rel")):
            out.append((f"access.{weak}.{scope}", f"access.{strong}.{scope}",
                        "a stronger access must not cost less than a weaker one"))
        for sem in ("release", "acquire"):
            key = f"fence.proxy.tensormap::generic.{sem}.{scope}"
            out.append((f"fence.{sem}.{scope}", key, "a tensormap proxy fence is also a release/acquire fence"))
            if scope != "sys":
                nxt = SCOPES[SCOPES.index(scope) + 1]
                out.append((key, f"fence.proxy.tensormap::generic.{sem}.{nxt}",
                            "costs must not decrease as a scope widens"))
    for space in ("shared::cta", "shared::cluster", "global"):
        out.append((f"fence.proxy.async.{space}", "fence.proxy.async",
                    "a proxy fence restricted to a state space must not cost more than the unrestricted one"))
    out.append(("fence.proxy.async.shared::cta", "fence.proxy.async.shared::cluster",
                "fence.proxy.async.shared::cluster covers the CTA's own shared memory too"))
    for sem, r in (("release", "sync_restrict::shared::cta"), ("acquire", "sync_restrict::shared::cluster")):
        out.append((f"fence.{sem}.{r}.cluster", f"fence.{sem}.cluster",
                    "a restricted fence must not cost more than the unrestricted one"))
        out.append((f"fence.{sem}.{r}.cluster", f"fence.proxy.async::generic.{sem}.{r}.cluster",
                    "the async::generic proxy fence is also the restricted fence"))
    out.append(("cp.async.bulk.wait_group.read", "cp.async.bulk.wait_group",
                "the .read wait waits for less"))
    return tuple(out)


ORDERS = _orders()


@dataclass(frozen=True)
class CostModel:
    """The table in force and where it came from ('default' or the file)."""

    table: Mapping[str, int]
    source: str = "default"

    def __getitem__(self, key: str) -> int:
        return self.table[key]

    def access(self, sem: str | None, scope: str | None) -> int:
        """What an access at this strength costs (weak, or no semantics: 0)."""
        if sem in (None, "weak") or scope is None:
            return 0
        return self.table[f"access.{sem}.{scope}"]

    def fence(self, sem: str, scope: str) -> int:
        return self.table[f"fence.{sem}.{scope}"]


DEFAULT = CostModel(DEFAULTS)


def load(path: str | Path) -> CostModel:
    """The default table with the entries of a YAML or TOML cost file; CheckerError naming the
    file, the line and the entry when the file is unreadable or an entry is unknown or bad."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise CheckerError(f"cannot read the cost file: {e.strerror}", SourceLoc(str(path), 0)) from None
    except UnicodeDecodeError:
        raise CheckerError("the cost file is not UTF-8 text", SourceLoc(str(path), 0)) from None
    if len(text) > 1_000_000:
        raise CheckerError("the cost file is too large (more than 1 MB)", SourceLoc(str(path), 1))
    entries = _parse_toml(text, str(path)) if path.suffix == ".toml" else _parse_yaml(text, str(path))
    table = dict(DEFAULTS)
    for key, value, line in entries:
        where = SourceLoc(str(path), line, key)
        if key not in DEFAULTS:
            near = [k for k in DEFAULTS if k.split(".")[0] == key.split(".")[0]][:6]
            hint = f" (keys like: {', '.join(near)})" if near else " (see docs/fix.md for the keys)"
            raise CheckerError(f"unknown cost entry '{key}'{hint}", where)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise CheckerError(f"the cost of '{key}' must be a positive integer, not {value!r}", where)
        if value > 10**6:
            raise CheckerError(f"the cost of '{key}' is too large ({value}; at most 1000000)", where)
        table[key] = value
    lines = {k: line for k, _, line in entries}
    for cheap, dear, why in ORDERS:
        if table[cheap] > table[dear]:
            key = dear if dear in lines else cheap
            raise CheckerError(f"'{cheap}' costs {table[cheap]} but '{dear}' costs {table[dear]}: {why} "
                               "(the search keeps the cheapest of edits with the same effect)",
                               SourceLoc(str(path), lines.get(key, 0), key))
    return CostModel(MappingProxyType(table), str(path))


def _parse_yaml(text: str, path: str) -> list[tuple[str, object, int]]:
    from ..front import yamlsafe
    from ..errors import LitmusError

    try:
        composed = yamlsafe.compose(text, path)
        root = yamlsafe.convert(composed, path) if composed is not None else None
    except LitmusError as e:
        raise CheckerError(f"the cost file is not valid YAML: {e.message}", e.where) from None
    if root is None:
        return []
    if root.kind != "map":
        raise CheckerError("a cost file is a mapping of entries to costs (fence.sc.gpu: 30)",
                           SourceLoc(path, root.line))
    out = []
    for k, v in root.items:
        if v.kind != "scalar":
            raise CheckerError(f"the cost of '{k.raw}' must be a positive integer", SourceLoc(path, v.line, k.raw))
        out.append((k.raw, v.value if v.tag == yamlsafe.INT else v.raw, k.line))
    return out


def _parse_toml(text: str, path: str) -> list[tuple[str, object, int]]:
    try:
        import tomllib
    except ImportError:             # Python 3.10
        raise CheckerError("TOML cost files need Python 3.11 or later: write the table in YAML",
                           SourceLoc(path, 0)) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise CheckerError(f"the cost file is not valid TOML: {e}", SourceLoc(path, 0)) from None

    def flat(d, prefix=""):
        for k, v in d.items():
            if isinstance(v, dict):
                yield from flat(v, f"{prefix}{k}.")
            else:
                yield f"{prefix}{k}", v

    out = []
    lines = text.splitlines()
    for key, value in flat(data):
        last = key.split(".")[-1]
        line = next((n for n, l in enumerate(lines, 1) if key in l or f'"{last}"' in l or l.strip().startswith(last)), 0)
        out.append((key, value, line))
    return out
