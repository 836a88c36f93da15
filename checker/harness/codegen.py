"""LitmusTest + DeviceConfig -> one self-contained CUDA C++ program (pure: no toolchain, no GPU).

The program (templates/program.cu) runs many instances of the test per launch with thread-role,
lane, warp and location permutation, memory stress and pre-stress, a bounded start barrier,
bounded spin loops for awaits (`== v`; a give-up counts as `timeout`), and counts outcomes on the
device into the buckets of checker.harness.space (plus `other`, which must stay 0).

Each test instruction is one line of the source ending in `// @ptxmc THREAD:INDEX`, so the SASS
check can find the machine code of every fence by line number.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from string import Template

from ..ast import Addr, Imm, Instr, LitmusTest, Reg
from ..errors import HarnessError
from .devices import STRESS_PATTERNS, DeviceConfig, load_device
from .emit import RESERVED_BARRIER, WIDE, Ctx, NotExpressible, opspec
from .layout import Layout, layout_problems, make_layout
from .space import OutcomeSpace, Var, outcome_space

TEMPLATE = Path(__file__).resolve().parent / "templates" / "program.cu"
MARK = re.compile(r"// @ptxmc (\S+):(\d+)\b")


@dataclass(frozen=True)
class Program:
    """A generated program and what is needed to read its output back."""

    test: str
    source: str
    target: str
    space: OutcomeSpace
    layout: Layout
    config: DeviceConfig
    notes: tuple[str, ...]

    def instr_lines(self) -> dict[tuple[str, int], int]:
        """(thread, instruction index) -> 1-based source line."""
        out = {}
        for n, line in enumerate(self.source.splitlines(), 1):
            m = MARK.search(line)
            if m:
                out[(m.group(1), int(m.group(2)))] = n
        return out


def target_for(test: LitmusTest, config: DeviceConfig | None = None) -> str:
    """sm_90a by default (or the device's target); sm_100a when the test uses tcgen05; the test's
    own `arch:` when given."""
    if test.arch:
        return test.arch
    if any(i.op == "tcgen05" for t in test.threads for i in t.code):
        return "sm_100a"
    return config.target if config else "sm_90a"


# -- memory -------------------------------------------------------------------------------------

def _locations(test: LitmusTest) -> tuple[list[str], list[str], dict[str, int], dict]:
    """Global and shared location names (declared, then undeclared ones met in the code)."""
    decl = {m.name: m for m in test.memory}
    names = [m.name for m in test.memory]
    for t in test.threads:
        for i in t.code:
            for o in i.operands:
                if isinstance(o, Addr) and o.base not in decl and o.base not in names:
                    names.append(o.base)
    glob = [n for n in names if n not in decl or decl[n].space != "shared"]
    shared = [n for n in names if n in decl and decl[n].space == "shared"]
    return glob, shared, {}, decl


def _memory_problems(test: LitmusTest) -> list[str]:
    out = []
    for m in test.memory:
        if m.alias_of:
            out.append(f"'{m.name}' is a virtual alias: two virtual mappings of one physical page "
                       f"(cuMemMap) are not built yet")
        if m.view or m.view_of:
            out.append(f"'{m.name}' is seen through the {m.view or 'texture/surface/constant'} proxy "
                       f"(ISCA'22 hypothetical): no PTX instruction reads a plain location that way")
        if m.tensormap is not None:
            out.append(f"'{m.name}' is a tensor map: cuTensorMapEncodeTiled maps are not built yet")
        if m.space not in ("global", "shared"):
            out.append(f"'{m.name}': state space '{m.space}' is not expressible")
        if m.mbarrier is not None and m.space != "shared":
            out.append(f"'{m.name}': an mbarrier must live in shared memory")
    return out


def _bulk_sizing(test: LitmusTest) -> tuple[int, int, list[str]]:
    """(cell bytes, tx factor, problems). A cell is 16 bytes (bulk copies move >= 16 aligned
    bytes); a test written with smaller copy sizes has its byte counts scaled to match."""
    sizes = set()
    st_async = False
    for t in test.threads:
        for i in t.code:
            if i.op == "cp" and "bulk" in i.qualifiers and len(i.operands) > 2 and isinstance(i.operands[2], Imm):
                sizes.add(i.operands[2].value)
            if i.op in ("st", "red") and i.has("async"):
                st_async = True
    if not sizes:
        return 16, 1, []
    if len(sizes) > 1:
        return 16, 1, [f"bulk copies of different sizes {sorted(sizes)}: a cell has one size"]
    s = sizes.pop()
    if s <= 0:
        return 16, 1, [f"bulk copy size {s}"]
    if s % 16 == 0:
        return s, 1, []
    if 16 % s == 0:
        if st_async:
            return 16, 1, ["st.async/red.async together with sub-16-byte bulk copies: tx counts cannot be scaled"]
        return 16, 16 // s, []
    return 16, 1, [f"bulk copy size {s} is neither a multiple nor a divisor of 16 bytes"]


def _wide_regs(test: LitmusTest) -> dict[str, frozenset[str]]:
    out = {}
    for t in test.threads:
        wide = set()
        for i in t.code:
            dst = i.operands[0] if i.operands else None
            if not isinstance(dst, Reg):
                continue
            if i.op == "mbarrier" and i.qualifiers and i.qualifiers[0].startswith("arrive"):
                wide.add(dst.name)
            elif i.op in ("ld", "atom", "mov", "add", "sub", "mul", "and", "or", "xor") and set(i.qualifiers) & WIDE:
                wide.add(dst.name)
        out[t.name] = frozenset(wide)
    return out


# -- generation ---------------------------------------------------------------------------------

class _Gen:
    def __init__(self, test: LitmusTest, config: DeviceConfig):
        self.test, self.config = test, config
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.problems += layout_problems(test)
        self.problems += _memory_problems(test)
        self.cell_bytes, self.tx_factor, bp = _bulk_sizing(test)
        self.problems += bp
        self.glob, self.shared, _, self.decl = _locations(test)
        self.layout = make_layout(test) if not layout_problems(test) else None
        try:
            self.space = outcome_space(test)
        except HarnessError as e:
            self.problems.append(f"outcome space: {e.message}")
            self.space = None

    def owner_cta(self) -> dict[str, int]:
        out = {}
        for name in self.shared:
            m = self.decl[name]
            if m.owner is not None:
                out[name] = self.layout.role_cta(m.owner)
                continue
            for t in self.test.threads:      # default owner: the first thread that names it
                if any(isinstance(o, Addr) and o.base == name for i in t.code for o in i.operands):
                    out[name] = self.layout.role_cta(t.position)
                    break
            else:
                out[name] = 0
        return out

    def thread_code(self, tid: int, owners: dict[str, int], wide: frozenset[str]) -> list[str]:
        t = self.test.threads[tid]
        slot = self.layout.slots[tid]
        ctx = Ctx(self.test, self.layout, slot, self.cell_bytes, self.tx_factor,
                  {n: k for k, n in enumerate(self.shared)}, {n: k for k, n in enumerate(self.glob)},
                  owners, wide)
        body = []
        for idx, i in enumerate(t.code):
            where = f"{t.name}:{idx}"
            if i.predicate:
                self.problems.append(f"{where} '{i.text}': predicated instructions are not expressible yet")
                continue
            try:
                stmt = opspec(i).emit(i, ctx)
            except NotExpressible as e:
                self.problems.append(f"{where} '{i.text}': {e}")
                continue
            except (IndexError, AttributeError):
                self.problems.append(f"{where} '{i.text}': unexpected operands for the harness")
                continue
            body += self._with_await(i, stmt, where, ctx)
        self.notes += [f"{t.name}: {n}" for n in ctx.notes]
        regs = sorted({o.name for i in t.code for o in i.operands if isinstance(o, Reg)})
        decls = [f"unsigned long long {ctx.reg(r)} = 0ull;" if r in wide else f"unsigned {ctx.reg(r)} = 0u;"
                 for r in regs]
        addr_lines = [self._address(name, kind, var, slot.role_cta, owners) for (name, kind), var in sorted(ctx.addrs.items())]
        out = [f"case {tid}: {{   // {t.name} at {t.position}"]
        out += ["    " + d for d in decls + addr_lines]
        out.append("    start_barrier(p, inst);")
        out += ["    " + line for line in body]
        out += ["    " + line for line in self._cluster_padding(tid)]
        for k, v in enumerate(self.obs_vars):
            if v.thread == t.name:
                out.append(f"    p.obs[inst * N_OBS + {k}] = (unsigned){ctx.reg(v.name)};"
                           if v.name in regs else f"    p.obs[inst * N_OBS + {k}] = 0u;")
        out.append("    if (timed_out) atomicOr(&p.status[inst], 1u);")
        out.append("    break;")
        out.append("}")
        return out

    def _with_await(self, i: Instr, stmt: str, where: str, ctx: Ctx) -> list[str]:
        mark = f"  // @ptxmc {where} {i.text}"
        if i.await_value is None:
            return [stmt + mark]
        dst = i.operands[0]
        if not isinstance(dst, Reg):
            self.problems.append(f"{where} '{i.text}': an await needs a destination register")
            return []
        reg = ctx.reg(dst.name)
        v = i.await_value & 0xFFFFFFFF
        return [f"for (unsigned n_ = 0;; n_++) {{   // await {dst.name} == {i.await_value}",
                f"    {stmt}{mark}",
                f"    if ((unsigned){reg} == {v}u) break;",
                "    if (n_ >= SPIN_CAP) { timed_out = 1; break; }",
                "}"]

    def _address(self, name: str, kind: str, var: str, here: int, owners: dict[str, int]) -> str:
        if name in self.shared:
            j = self.shared.index(name)
            cell = f"(smem + ({j} * PER_WARP + slot) * CELL_WORDS)"
            owner = owners[name]
            rank = self.layout.rank(owner)
            if kind == "cta":
                return f"const unsigned {var} = to_cta({cell});"
            if kind == "cluster":
                return f"const unsigned {var} = to_cluster({cell}, {rank}u);"
            if owner == here:
                return f"const unsigned long long {var} = (unsigned long long){cell};"
            return f"const unsigned long long {var} = remote_generic({cell}, {rank}u);"
        j = self.glob.index(name)
        if kind == "global":
            return f"const unsigned long long {var} = to_global(gcell(p, {j}, inst));"
        return f"const unsigned long long {var} = (unsigned long long)gcell(p, {j}, inst);"

    def _cluster_barrier_counts(self) -> dict[int, int]:
        return {tid: sum(1 for i in t.code if i.op == "barrier" and i.has("cluster") and i.has("arrive"))
                for tid, t in enumerate(self.test.threads)}

    def _cluster_padding(self, tid: int) -> list[str]:
        """barrier.cluster counts every thread of the cluster: threads with fewer cluster barriers
        than the most in their cluster (and idle lanes) arrive and wait for the difference."""
        counts = self._cluster_barrier_counts()
        unit = self.layout.unit(self.layout.slots[tid].role_cta)
        most = max((c for t, c in counts.items() if self.layout.unit(self.layout.slots[t].role_cta) == unit), default=0)
        n = most - counts[tid]
        return [f"for (int b_ = 0; b_ < {n}; b_++) asm volatile(\"barrier.cluster.arrive.relaxed; barrier.cluster.wait;\" ::: \"memory\");"] if n else []

    def idle_padding(self) -> str:
        counts = self._cluster_barrier_counts()
        if not any(counts.values()):
            return ""
        # An idle thread may sit in any unit: pad to that unit's largest count.
        per_unit = {}
        for tid, c in counts.items():
            u = self.layout.unit(self.layout.slots[tid].role_cta)
            per_unit[u] = max(per_unit.get(u, 0), c)
        table = ", ".join(str(per_unit.get(u, 0)) for u in range(self.layout.units))
        return ("            { const int pad_[UNITS] = {" + table + "};\n"
                "              for (int b_ = 0; b_ < pad_[role_cta / CLUSTER]; b_++) "
                "asm volatile(\"barrier.cluster.arrive.relaxed; barrier.cluster.wait;\" ::: \"memory\"); }")

    def epilogue_waits(self, owners: dict[str, int]) -> str:
        """Bounded wait for mbarriers that async copies complete on (phase 0), so no CTA exits
        with a copy into its shared memory in flight; a give-up counts as a timeout."""
        targets = set()
        for t in self.test.threads:
            for i in t.code:
                if i.op == "cp" and any(q.startswith("mbarrier::complete_tx") for q in i.qualifiers) and len(i.operands) > 3:
                    if isinstance(i.operands[3], Addr):
                        targets.add(i.operands[3].base)
                if i.op in ("st", "red") and i.has("async") and len(i.operands) > 2 and isinstance(i.operands[2], Addr):
                    targets.add(i.operands[2].base)
        out = []
        for name in sorted(targets):
            if name not in self.shared:
                continue
            j = self.shared.index(name)
            out.append(
                f"    if (role >= 0 && role_cta == {owners[name]} && threadIdx.x < PER_WARP) {{\n"
                f"        unsigned a_ = to_cta(smem + ({j} * PER_WARP + threadIdx.x) * CELL_WORDS), ok_ = 0;\n"
                f"        for (unsigned n_ = 0; n_ < SPIN_CAP && !ok_; n_++)\n"
                f"            asm volatile(\"{{ .reg .pred P; mbarrier.test_wait.parity.shared::cta.b64 P, [%1], 0; selp.u32 %0, 1, 0, P; }}\" : \"=r\"(ok_) : \"r\"(a_) : \"memory\");\n"
                f"        if (!ok_) atomicOr(&p.status[group * PER_WARP + threadIdx.x], 1u);\n"
                f"    }}")
        return "\n".join(out)

    def generate(self) -> Program:
        if self.problems:
            raise HarnessError(f"{self.test.name}: not expressible on hardware: " + "; ".join(self.problems))
        lay, space, cfg = self.layout, self.space, self.config
        owners = self.owner_cta()
        wide = _wide_regs(self.test)
        self.obs_vars = [v for v in space.vars if v.thread]
        cases = []
        for tid in range(len(self.test.threads)):
            cases += self.thread_code(tid, owners, wide[self.test.threads[tid].name])
        if self.problems:
            raise HarnessError(f"{self.test.name}: not expressible on hardware: " + "; ".join(self.problems))
        k_table, who = [], []
        for c in range(lay.ctas_per_group):
            for w in range(lay.warps):
                members = [s.tid for s in lay.slots if s.role_cta == c and s.warp == w]
                k_table.append(len(members))
                who += members + [-1] * (32 - len(members))
        var_kind, var_index = [], []
        for v in space.vars:
            if v.thread:
                var_kind.append(0)
                var_index.append(self.obs_vars.index(v))
            elif v.name in self.shared:
                var_kind.append(2)
                var_index.append(self.shared.index(v.name))
            else:
                var_kind.append(1)
                var_index.append(self.glob.index(v.name) if v.name in self.glob else 0)
                if v.name not in self.glob:
                    raise HarnessError(f"{self.test.name}: condition names unknown location '{v.name}'")
        starts, values = [0], []
        for d in space.domains:
            values += [x % 2**32 for x in d]
            starts.append(len(values))
        target = target_for(self.test, cfg)
        notes = tuple(self.notes)
        decl = self.decl

        def arr(xs, fmt=str):
            return ", ".join(fmt(x) for x in list(xs) + [0])

        fields = dict(
            test_name=self.test.name, test_path=self.test.path, target=target, config_name=cfg.name,
            layout_doc=(f"{lay.units} unit(s) of {lay.cluster} CTA(s){' (clusters)' if lay.clustered else ''}, "
                        f"{lay.warps} warp(s) per CTA, {lay.per_warp} instance(s) per warp"),
            observed_doc=", ".join(space.names) or "(nothing)",
            notes="\n".join(f"// Note: {n}" for n in notes),
            n_roles=len(self.test.threads), cluster=lay.cluster, units=lay.units, warps=lay.warps,
            per_warp=lay.per_warp, n_global=len(self.glob), n_shared=len(self.shared),
            n_obs=max(1, len(self.obs_vars)), n_vars=len(space.vars), n_buckets=space.size,
            cell_words=self.cell_bytes // 4, spin_cap=cfg.spin_cap, testing_groups=cfg.testing_groups,
            stress_units=cfg.stress_units, shuffle_pct=cfg.shuffle_pct, stride_cells=cfg.stride_cells,
            permute_locations=int(cfg.permute_locations), stress_pattern=STRESS_PATTERNS.index(cfg.pattern),
            line_words=cfg.line_words, target_lines=cfg.target_lines, stress_iterations=cfg.iterations,
            stress_pct=cfg.stress_pct, pre_stress_iterations=cfg.pre_stress_iterations,
            pre_stress_pct=cfg.pre_stress_pct, barrier_pct=cfg.barrier_pct,
            time_budget_s=repr(float(cfg.time_budget_s)), max_iterations=cfg.max_iterations,
            global_init=arr(f"{(decl[n].init if n in decl else 0) & 0xFFFFFFFF}u" for n in self.glob),
            shared_init=arr(f"{decl[n].init & 0xFFFFFFFF}u" for n in self.shared),
            shared_owner=arr(owners[n] for n in self.shared),
            shared_mbarrier=arr(int((decl[n].mbarrier or {}).get("count", 1)) if decl[n].mbarrier is not None else 0
                                for n in self.shared),
            var_kind=arr(var_kind), var_index=arr(var_index), var_domain_start=arr(starts),
            n_domain_values=len(values), domain_values=arr(f"{x}u" for x in values),
            k_table=", ".join(map(str, k_table)), who_table=", ".join(map(str, who)),
            cluster_attr=f"__cluster_dims__({lay.cluster}, 1, 1)" if lay.clustered else "",
            clustered=int(lay.clustered), reserved_barrier=RESERVED_BARRIER,
            role_cases="\n".join(" " * 8 + line for line in cases),
            idle_cluster_barriers=self.idle_padding(),
            epilogue_waits=self.epilogue_waits(owners),
            test_name_c=self.test.name.replace("\\", "\\\\").replace('"', '\\"'),
        )
        source = Template(TEMPLATE.read_text()).substitute(fields)
        return Program(self.test.name, source, target, space, lay, cfg, notes)


def unsupported(test: LitmusTest, config: DeviceConfig | None = None) -> str | None:
    """Why the harness cannot express `test` yet (every reason, '; '-joined), or None."""
    g = _Gen(test, config or load_device())
    if not g.problems:
        try:
            g.generate()
        except HarnessError:
            pass
    return "; ".join(dict.fromkeys(g.problems)) or None


def generate(test: LitmusTest, config: DeviceConfig | None = None) -> Program:
    """The CUDA program for `test`; HarnessError (with every reason) when not expressible."""
    return _Gen(test, config or load_device()).generate()
