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

from ..ast import Addr, Imm, Instr, LitmusTest, Reg, registers
from ..errors import HarnessError
from .devices import STRESS_PATTERNS, DeviceConfig, load_device
from . import flow
from .barriers import problems as barrier_problems
from .numformat import encode, formats
from . import tmem
from .emit import needs_newer_cuda, opspec
from .layout import Layout, layout_problems, make_layout
from .mbarriers import accounts
from .memory import bulk_sizing, locations, memory_problems, wide_regs
from .operands import RESERVED_BARRIER, Ctx, NotExpressible
from .space import OutcomeSpace, map_tables, outcome_space

TEMPLATE = Path(__file__).resolve().parent / "templates" / "program.cu"
MARK = re.compile(r"// @ptxmc (\S+):(\d+)\b")
STATIC_SMEM_LIMIT = 48 * 1024        # static __shared__ per CTA without the dynamic opt-in


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
    """The newest of: the device's target (sm_90a by default), the test's `arch:` (a minimum),
    and sm_100a when the test uses tcgen05. From sm_90 on, the arch-specific 'a' variant: the
    harness emits arch-specific instructions (tensormap.replace, wgmma, tcgen05), and an 'a'
    target is a superset of its plain arch."""
    def num(arch: str) -> int:
        m = re.fullmatch(r"sm_(\d+)[af]?", arch or "")
        return int(m.group(1)) if m else 0
    device = config.target if config else "sm_90a"
    n = max(num(device), num(test.arch or ""))
    if any(i.op == "tcgen05" for t in test.threads for i in t.code):
        n = max(n, 100)
    if n == 0:
        return device
    return f"sm_{n}a" if n >= 90 else f"sm_{n}"


# -- generation ---------------------------------------------------------------------------------

class _Gen:
    def __init__(self, test: LitmusTest, config: DeviceConfig, cuda: str | None = None):
        self.problems: list[str] = _realptx_problems(test)
        from ..isa.special import operand_name
        virtual = {o.name for t0 in test.threads for i in t0.code for o in i.operands
                   if isinstance(o, Reg) and o.name.startswith("%") and operand_name(o.name)}
        test = virtualized(test)
        self.test, self.config, self.cuda = test, config, cuda
        self.notes: list[str] = []
        if virtual:
            self.notes.append(f"special registers {', '.join(sorted(virtual))} read as the values the test's "
                              f"positions give them (the model's), not the hardware's: the harness places "
                              f"threads elsewhere")
        # wgmma: its thread stands for a warpgroup; values cross into f16/f32 (numformat)
        self.wg = frozenset(tid for tid, t in enumerate(test.threads) if any(i.op == "wgmma" for i in t.code))
        self.fmt = formats(test)
        self.problems += list(self.fmt.problems)
        target = target_for(test, config)
        if target != config.target:
            # Review B3: a program built for another target than the device's never loads there
            # (an 'a' target runs on its own architecture only), so it is not expressible here.
            self.problems.append(f"needs {target}, but the device configuration '{config.name}' targets "
                                 f"{config.target}" + (" (use --device b200)" if target == "sm_100a" else ""))
        if self.wg and target != "sm_90a":
            self.problems.append(f"wgmma exists only on sm_90a; this device's target is {target_for(test, config)}")
        # tcgen05: its thread takes a whole warp; Tensor Memory cells are columns (checker.harness.tmem)
        self.tc, self.tmem_cells = tmem.threads(test), tmem.cells(test)
        self.stride = 4 if self.tc or self.tmem_cells else 1
        if self.tc or self.tmem_cells:
            self.problems += tmem.problems(test)
        self.problems += layout_problems(test, self.wg, self.stride)
        if self.wg:
            self.notes.append("ptxas may serialize the wgmma of this program (C7518: it sits in a per-lane role "
                              "switch, a divergent path to ptxas): outcomes that need the MMA still in flight at "
                              "later instructions may then go unseen (coverage gaps, never false violations)")
        self.problems += memory_problems(test)
        self.problems += barrier_problems(test)
        self.cell_bytes, self.tx_factor, bp = bulk_sizing(test)
        self.problems += bp
        self.glob, self.shared, self.aliases, self.decl = locations(test)
        self.sidx = self._shared_slots()
        self.maps = map_tables(test)
        self.tmaps = [n for n in self.maps if not (n in self.decl and self.decl[n].space == "shared")]
        self.smaps = [n for n in self.maps if n not in self.tmaps]
        for name, table in self.maps.items():
            if not table:
                self.problems.append(f"'{name}' is edited as a tensor map but no global map says which buffers "
                                     f"its values select")
            for buf in table.values():
                if buf not in self.glob:
                    self.problems.append(f"tensor map '{name}' points at '{buf}', which is not a global location")
        for e in test.expectations:
            from .space import cond_vars
            for v in (lambda out: (cond_vars(e.cond, out), out)[1])([]):
                if not v.thread and v.name in self.maps:
                    self.problems.append(f"the condition reads tensor map '{v.name}': a map's value cannot be read back")
        for t in test.threads:
            for idx, i in enumerate(t.code):
                tensor_ok = i.op in ("tensormap", "fence", "membar") or (i.op == "cp" and "tensor" in i.qualifiers)
                if not tensor_ok and any(isinstance(o, Addr) and o.base in self.maps for o in i.operands):
                    self.problems.append(f"{t.name}:{idx} '{i.text}': plain accesses to a tensor map are not "
                                         f"expressible (a map is a 128-byte descriptor)")
        self.zeros = [0]                 # p.zero[] slots handed out (checker.harness.operands.Ctx.opaque)
        from .emit_async import tensor_rank
        ranks = {tensor_rank(i) for t in test.threads for i in t.code if i.op == "cp" and "tensor" in i.qualifiers}
        ranks.discard(None)
        if len(ranks) > 1:
            self.problems.append(f"tensor copies of different ranks {sorted(ranks)}: the harness gives every map one rank")
        self.tmap_rank = max(ranks, default=1)
        self.mbar_expect, mb_problems = self._completion_barriers()
        self.problems += mb_problems
        self.mbars, mb_problems = accounts(test, self.cell_bytes, self.tx_factor, self.mbar_expect)
        self.problems += mb_problems
        self.slot_words, self.smem_align = self._slot_sizing()
        self.layout = (make_layout(test, self.wg, self.tc, self.stride)
                       if not layout_problems(test, self.wg, self.stride) else None)
        if self.layout is not None:
            smem = ((self.n_slots * self.layout.per_warp + 1) * self.slot_words * 4
                    + max(1, len(self.smaps) * self.layout.per_warp) * 128)
            if smem > STATIC_SMEM_LIMIT:
                self.problems.append(f"{self.n_slots} shared slot(s) x {self.layout.per_warp} instances per "
                                     f"warp x {self.slot_words * 4}-byte slots need {smem} bytes of static shared "
                                     f"memory (limit {STATIC_SMEM_LIMIT})")
        try:
            self.space = outcome_space(test)
        except HarnessError as e:
            self.problems.append(f"outcome space: {e.message}")
            self.space = None

    def owner_cta(self) -> dict[str, int]:
        out = {}
        for name in self.shared + self.smaps:
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
                  dict(self.sidx), {n: k for k, n in enumerate(self.glob)},
                  self.aliases, self.maps, owners, wide, zeros=self.zeros)
        group = tid in self.wg or tid in self.tc
        accs: list[str] = []
        ctx.tmem = tuple(self.tmem_cells)
        if tid in self.tc:
            ctx.whole_warp = True
        if tid in self.wg:
            from .emit_tensor import accumulator_vars
            for r in dict.fromkeys(r for (th, r) in self.fmt.regs if th == t.name):
                accs += accumulator_vars(r, ctx)
            ctx.warpgroup, ctx.accumulators = True, tuple(accs)
            if t.branches:
                self.problems.append(f"{t.name}: control flow in a warpgroup thread is not generated (its 128 "
                                     f"threads must stay converged for wgmma)")
        body = []
        flow_problems = flow.problems(t)
        self.problems += flow_problems
        fl = flow.analyse(t) if t.branches and not flow_problems else None
        at_label: dict[int, list[str]] = {}
        for name, k in t.labels:
            at_label.setdefault(k, []).append(name)
        for idx, i in enumerate(t.code):
            where = f"{t.name}:{idx}"
            body += [f"{_label(tid, n)}: ;   // {n}:" for n in at_label.get(idx, [])]
            if flow_problems and (i.predicate or i.op == "bra"):
                continue                    # refused above (flow.problems)
            if i.op == "bra":
                body.append(self._branch(tid, idx, i, fl, ctx))
                continue
            if group and i.op in ("bar", "barrier"):
                self.problems.append(f"{where} '{i.text}': a barrier in a warpgroup thread is not generated "
                                     f"(its count would be in the warpgroup's 128 threads)")
                continue
            i = self._encoded(t.name, i)
            newer = needs_newer_cuda(i, self.cuda)
            if newer:
                self.problems.append(f"{where} '{i.text}': {newer}")
                continue
            try:
                stmt = opspec(i).emit(i, ctx)
            except NotExpressible as e:
                self.problems.append(f"{where} '{i.text}': {e}")
                continue
            except (IndexError, AttributeError):
                self.problems.append(f"{where} '{i.text}': unexpected operands for the harness")
                continue
            if group and _writes_memory(i):     # the warpgroup's leader performs the thread's writes
                stmt = f"if (wg_lead_) {{ {stmt} }}"
            lines = self._with_await(i, stmt, where, ctx)
            if i.predicate and lines:     # never an await (flow.problems): one line
                lines = [f"if ({_guard(i, ctx)}) {{ {stmt} }}  // @ptxmc {where} {i.text}"]
            body += lines
        body += [f"{_label(tid, n)}: ;   // {n}: (end)" for n in at_label.get(len(t.code), [])]
        loops = fl is not None and fl.loops
        if loops:
            body.append(f"END_{tid}: ;   // a loop that gives up after SPIN_CAP spins jumps here (a hang)")
        self.notes += [f"{t.name}: {n}" for n in ctx.notes]
        regs = sorted({o.name for i in t.code for o in i.operands if isinstance(o, Reg)}
                      | {r for i in t.code if i.op in ("wgmma", "tcgen05") for r in registers(i)})
        decls = [f"unsigned long long {ctx.reg(r)} = 0ull;" if r in wide else f"unsigned {ctx.reg(r)} = 0u;"
                 for r in regs]
        if loops:
            decls.append("unsigned spins_ = 0, hung_ = 0;   // backward branches taken; gave up")
            decls.append("unsigned long long spin0_ = 0;   // when the loops started (%globaltimer)")
        if tid in self.wg:
            decls.append("const bool wg_lead_ = threadIdx.x % 128 == 0;   // holds D[0][0]; performs the writes")
        elif group:
            decls.append("const bool wg_lead_ = threadIdx.x % 32 == 0;   // Tensor Memory lane 0; performs the writes")
        decls += [f"unsigned {v} = 0u;   // accumulator fragment" for v in accs if v.startswith("X_")]
        addr_lines = [self._address(name, kind, var, slot.role_cta, owners) for (name, kind), var in sorted(ctx.addrs.items())]
        addr_lines += [f"const unsigned long long {var} = to_global(gcell(p, {self.glob.index(self.maps[m][k])}, inst));"
                       for (m, k), var in sorted(ctx.buffers.items())]
        # The initial maps reach the tensormap proxy before the test starts (docs/model.md#a12: kernel
        # start does not carry it), as pre-initialised mbarriers do.
        first = {}
        for (name, kind), var in sorted(ctx.addrs.items()):
            if name in self.tmaps and kind in ("generic", "global"):
                first.setdefault(name, var)
        # Then the descriptor is prefetched into the cache, so a test that edits the map later and
        # omits its own acquire can actually use the stale cached descriptor (review D16: the
        # harness's acquire alone left the cache cold, hiding the weak outcome).
        # Review A2: only where no thread of the test acquires a tensor map itself: a prefetch is
        # asynchronous, and one still in flight at the test's own acquire could cache the old
        # descriptor after the acquire invalidated it (a stale value the test forbids, made by the
        # harness). static_check.prefetch_problems refuses a program that does both.
        prefetch = "" if _acquires_tensormap(self.test) else " prefetch.tensormap [%0];"
        acquires = [f'asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;{prefetch}" '
                    f':: "l"({var}) : "memory");' for var in first.values()]
        out = [f"case {tid}: {{   // {t.name} at {t.position}, role CTA {slot.role_cta}"]
        out += ["    " + d for d in decls + addr_lines + acquires]
        out.append("    start_barrier(p, inst, wg_lead_);" if group else "    start_barrier(p, inst);")
        if loops:
            out.append("    spin0_ = now_ns();")
        out += ["    " + line for line in body]
        if tid in self.tc:     # no Tensor Memory access of the thread in flight when the columns are freed
            out.append('    __syncwarp(); asm volatile("tcgen05.wait::ld.sync.aligned; tcgen05.wait::st.sync.aligned; '
                       'tcgen05.fence::before_thread_sync;" ::: "memory");')
        out += ["    " + line for line in self._cluster_padding(tid)]
        for k, v in enumerate(self.obs_vars):
            if v.thread == t.name:
                out.append(("    if (wg_lead_) " if group else "    ")
                           + (f"p.obs[inst * N_OBS + {k}] = (unsigned){ctx.reg(v.name)};"
                              if v.name in regs else f"p.obs[inst * N_OBS + {k}] = 0u;"))
        if regs:     # every register stays live, so ptxas cannot delete an unobserved load
            fold = " ^ ".join(f"(unsigned){ctx.reg(r)}" for r in regs)
            out.append(f"    if (p.keep_regs) p.scratch[inst % SCRATCH_WORDS] = {fold};")
        out.append("    if (timed_out) atomicOr(&p.status[inst], 1u);")
        if loops:
            out.append("    if (hung_) atomicOr(&p.status[inst], 8u);")
        out.append("    break;")
        out.append("}")
        return out

    def _encoded(self, thread: str, i: Instr) -> Instr:
        """`i` with the immediate it writes re-encoded in the format of its destination (an f16
        matrix cell, an f32 accumulator or a location it is stored to: checker.harness.numformat)."""
        from dataclasses import replace
        if not self.fmt or len(i.operands) < 2 or not isinstance(i.operands[1], Imm):
            return i
        dst = i.operands[0]
        fmt = (self.fmt.locs.get(dst.base) if i.op == "st" and isinstance(dst, Addr)
               else self.fmt.regs.get((thread, dst.name)) if i.op == "mov" and isinstance(dst, Reg) else None)
        if fmt is None:
            return i
        word = encode(fmt, i.operands[1].value)
        if word is None:
            raise HarnessError(f"{self.test.name}: '{i.text}': {i.operands[1].value} is not exactly an {fmt}")
        return replace(i, operands=(dst, Imm(word)) + tuple(i.operands[2:]))

    def _init(self, name: str) -> int:
        m = self.decl.get(name)
        v = m.init if m is not None else 0
        word = encode(self.fmt.locs.get(name), v)
        if word is None:
            raise HarnessError(f"{self.test.name}: '{name}' starts at {v}, which {self.fmt.locs[name]} cannot hold exactly")
        return word

    def _branch(self, tid: int, idx: int, i: Instr, fl, ctx: Ctx) -> str:
        """`bra L` as a goto; backward, bounded: past SPIN_CAP backward branches or SPIN_NS since its
        loops started the thread gives up (a hang) and jumps to its end."""
        t = self.test.threads[tid]
        go = f"goto {_label(tid, flow.target(i))};"
        if idx in fl.backward:
            go = f"if (spin_give_up(++spins_, spin0_)) {{ hung_ = 1; goto END_{tid}; }} {go}"
        if i.predicate:
            go = f"if ({_guard(i, ctx)}) {{ {go} }}"
        return f"{go}   // @ptxmc {t.name}:{idx} {i.text}"

    def _with_await(self, i: Instr, stmt: str, where: str, ctx: Ctx) -> list[str]:
        mark = f"  // @ptxmc {where} {i.text}"
        if i.await_value is None:
            return [stmt + mark]
        dst = i.operands[0]
        if not isinstance(dst, Reg):
            self.problems.append(f"{where} '{i.text}': an await needs a destination register")
            return []
        if not _retryable(i):
            # The await is a spin loop that repeats the instruction: only a pure read may be
            # repeated. A repeated atom/red/cp/arrive performs its write again, which gives final
            # values no single execution has (false violations).
            self.problems.append(f"{where} '{i.text}': an await on {i.op} is not expressible (the harness "
                                 f"would repeat the instruction until it returns {i.await_value}, repeating its "
                                 f"side effects); only ld and mbarrier test_wait/try_wait can be awaited")
            return []
        reg = ctx.reg(dst.name)
        v = i.await_value & 0xFFFFFFFF
        return [f"{{ const unsigned long long since_ = now_ns(); for (unsigned n_ = 0;; n_++) {{   // await "
                f"{dst.name} == {i.await_value}",
                f"    {stmt}{mark}",
                f"    if ((unsigned){reg} == {v}u) break;",
                "    if (spin_give_up(n_, since_)) { timed_out = 1; break; }",
                "}}"]

    def _address(self, name: str, kind: str, var: str, here: int, owners: dict[str, int]) -> str:
        if kind == "tmem":
            return f"const unsigned {var} = tmem_base_ + {self.tmem_cells.index(name)}u;   // column {self.tmem_cells.index(name)}, lanes 0-31"
        if name in self.tmaps:
            cell = f"tmap_at(p, {self.tmaps.index(name)}, inst)"
            return (f"const unsigned long long {var} = to_global({cell});" if kind == "global"
                    else f"const unsigned long long {var} = (unsigned long long){cell};")
        if name in self.smaps:
            if owners.get(name, here) != here:
                raise HarnessError(f"'{name}': a shared tensor map of another CTA")
            cell = f"(smaps + ({self.smaps.index(name)} * PER_WARP + slot) * 32)"
            return (f"const unsigned {var} = to_cta({cell});" if kind == "cta"
                    else f"const unsigned long long {var} = (unsigned long long){cell};")
        if name in self.shared:
            j = self.sidx[name]
            cell = f"(smem + ({j} * PER_WARP + slot) * SLOT_WORDS)"
            owner = owners[name]
            rank = self.layout.rank(owner)
            if kind == "cta":
                return f"const unsigned {var} = to_cta({cell});"
            if kind == "cluster":
                return f"const unsigned {var} = to_cluster({cell}, {rank}u);"
            if owner == here:
                return f"const unsigned long long {var} = (unsigned long long){cell};"
            return f"const unsigned long long {var} = remote_generic({cell}, {rank}u);"
        if name in self.aliases:
            root, k = self.aliases[name]
            cell = f"mapped(p, {k}, gcell(p, {self.glob.index(root)}, inst))"
        else:
            cell = f"gcell(p, {self.glob.index(name)}, inst)"
        if kind == "global":
            return f"const unsigned long long {var} = to_global({cell});"
        return f"const unsigned long long {var} = (unsigned long long){cell};"

    def _completion_barriers(self) -> tuple[dict[str, int], list[str]]:
        """mbarriers that async copies complete on but that nobody initialises: the harness
        initialises them (count 1) and arrives expecting the copies' bytes, so completion can be
        awaited in the epilogue. Returns ({location: bytes}, problems)."""
        targets: dict[str, int] = {}
        other_use, inits = set(), set()
        for t in self.test.threads:
            for i in t.code:
                addrs = [o.base for o in i.operands if isinstance(o, Addr)]
                if i.op == "cp" and any(q.startswith("mbarrier::complete_tx") for q in i.qualifiers) and addrs:
                    targets[addrs[-1]] = targets.get(addrs[-1], 0) + self.cell_bytes
                elif i.op == "mbarrier" and addrs:
                    (inits if i.qualifiers[:1] == ("init",) else other_use).add(addrs[0])
                elif i.op in ("st", "red") and i.has("async") and len(addrs) > 1:
                    other_use.add(addrs[-1])
        out, problems = {}, []
        for name, nbytes in targets.items():
            m = self.decl.get(name)
            if m is None or m.space != "shared" or m.mbarrier is not None or name in inits:
                continue
            if name in other_use:
                problems.append(f"mbarrier '{name}' is used but neither declared (mbarrier: {{count: n}}) "
                                f"nor initialised by the test")
            else:
                out[name] = nbytes
        return out, problems

    def _initialised(self) -> set[str]:
        """mbarriers that are valid at the end: declared or harness-managed (the prologue
        initialises them) or initialised by the test's code."""
        out = {n for n, m in self.decl.items() if m.mbarrier is not None} | set(self.mbar_expect)
        out |= {o.base for t in self.test.threads for i in t.code
                if i.op == "mbarrier" and i.qualifiers[:1] == ("init",) for o in i.operands if isinstance(o, Addr)}
        return out

    def _invalidated(self) -> set[str]:
        return {o.base for t in self.test.threads for i in t.code
                if i.op == "mbarrier" and i.qualifiers[:1] == ("inval",) for o in i.operands if isinstance(o, Addr)}

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

    def _shared_slots(self) -> dict[str, int]:
        """Shared location -> its slot (CTA-relative offset index): locations declared with
        `offset_of` share their root's slot, in their own CTAs (the multicast layout)."""
        out: dict[str, int] = {}
        roots: list[str] = []
        for n in self.shared:
            root, seen = n, {n}
            while self.decl.get(root) is not None and self.decl[root].offset_of and self.decl[root].offset_of not in seen:
                root = self.decl[root].offset_of
                seen.add(root)
            if root not in roots:
                roots.append(root)
            out[n] = roots.index(root)
        self.n_slots = len(roots)
        return out

    def _slot_sizing(self) -> tuple[int, int]:
        """(words per shared slot, alignment of the shared array in bytes): tensor copies need
        128-byte aligned shared memory (CUDA Programming Guide, alignment requirements of bulk
        tensor copies), bulk copies 16, mbarriers 8; every slot is a multiple of the strictest."""
        tensor = any(i.op == "cp" and "tensor" in i.qualifiers for t in self.test.threads for i in t.code)
        align = 128 if tensor or self.wg else 16
        words = -(-self.cell_bytes // align) * align // 4
        if self.wg:          # a wgmma matrix: A of m64n8k16 f16 is 2048 bytes (the slot is zeroed)
            words = max(words, 512)
        return words, align

    def epilogue_waits(self, owners: dict[str, int]) -> str:
        """For each mbarrier that asynchronous operations complete on: the arrivals the test does
        not make (checker.harness.mbarriers), then a bounded wait for phase 0, so no CTA exits
        with a copy into its shared memory in flight and the dumped values are final. A give-up
        marks the instance (status bit 1: the `epilogue` count, apart from await timeouts)."""
        out = []
        for name in sorted(n for n, acc in self.mbars.items() if acc.waited and n in self.shared):
            acc = self.mbars[name]
            j = self.sidx[name]
            makeup = ""
            if acc.makeup_expect:
                makeup += (f"        asm volatile(\"mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\" "
                           f":: \"r\"(a_), \"r\"({acc.makeup_expect}u) : \"memory\");   // expect\n")
            if acc.makeup_complete:
                makeup += (f"        asm volatile(\"mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;\" "
                           f":: \"r\"(a_), \"r\"({acc.makeup_complete}u) : \"memory\");   // complete\n")
            if acc.makeup:
                makeup += (f"        asm volatile(\"mbarrier.arrive.release.cta.shared::cta.b64 _, [%0], %1;\" "
                           f":: \"r\"(a_), \"r\"({acc.makeup}u) : \"memory\");   // arrive\n")
            out.append(
                f"    if (role >= 0 && role_cta == {owners[name]} && threadIdx.x < PER_WARP) {{   // {name}: "
                f"count {acc.count}, test arrivals {acc.arrivals}, tx {acc.expected}/{acc.completed}\n"
                f"        unsigned a_ = to_cta(smem + ({j} * PER_WARP + threadIdx.x) * SLOT_WORDS), ok_ = 0;\n"
                + makeup +
                "        const unsigned long long since_ = now_ns();\n"
                "        for (unsigned n_ = 0; !ok_ && !spin_give_up(n_, since_); n_++)\n"
                "            asm volatile(\"{ .reg .pred P; mbarrier.try_wait.parity.shared::cta.b64 P, [%1], 0; selp.u32 %0, 1, 0, P; }\" : \"=r\"(ok_) : \"r\"(a_) : \"memory\");\n"
                "        if (!ok_) atomicOr(&p.status[group * PER_WARP + threadIdx.x], 2u);\n"
                "    }")
        return "\n".join(out)

    def generate(self) -> Program:
        if self.problems:
            raise HarnessError(f"{self.test.name}: not expressible on hardware: " + "; ".join(self.problems))
        lay, space, cfg = self.layout, self.space, self.config
        owners = self.owner_cta()
        wide = wide_regs(self.test)
        self.obs_vars = [v for v in space.vars if v.thread]
        cases = []
        for tid in range(len(self.test.threads)):
            cases += self.thread_code(tid, owners, wide[self.test.threads[tid].name])
        if self.problems:
            raise HarnessError(f"{self.test.name}: not expressible on hardware: " + "; ".join(self.problems))
        k_table, who = [], []
        wg_warps = {(lay.slots[t].role_cta, w): t for t in lay.warpgroups
                    for w in range(lay.slots[t].warp, lay.slots[t].warp + 4)}
        wg_warps.update({(lay.slots[t].role_cta, lay.slots[t].warp): t for t in lay.whole_warps})
        for c in range(lay.ctas_per_group):
            for w in range(lay.warps):
                if (c, w) in wg_warps:       # a warpgroup thread: every lane plays it, one instance
                    k_table.append(32)
                    who += [wg_warps[(c, w)]] * 32
                    continue
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
                var_index.append(self.sidx[v.name] * lay.ctas_per_group + owners[v.name])
            else:
                name = self.aliases[v.name][0] if v.name in self.aliases else v.name
                if name not in self.glob:
                    raise HarnessError(f"{self.test.name}: condition names unknown location '{v.name}'")
                var_kind.append(1)
                var_index.append(self.glob.index(name))
        starts, values = [0], []
        for v, d in zip(space.vars, space.domains):
            fmt = self.fmt.regs.get((v.thread, v.name)) if v.thread else self.fmt.locs.get(v.name)
            for x in d:
                word = encode(fmt, x)
                if word is None:
                    raise HarnessError(f"{self.test.name}: {v} may be {x}, which {fmt} cannot hold exactly")
                values.append(word)
            starts.append(len(values))
        target = target_for(self.test, cfg)
        notes = tuple(self.notes)
        map_values = 1 + max((k for table in self.maps.values() for k in table), default=0)
        cells: list[str | None] = [None] * (self.n_slots * lay.ctas_per_group)   # (slot, role CTA) -> location
        for n in self.shared:
            k = self.sidx[n] * lay.ctas_per_group + owners[n]
            if cells[k] is not None:
                raise HarnessError(f"{self.test.name}: '{cells[k]}' and '{n}' are at one offset in one CTA")
            cells[k] = n
        decl = self.decl

        def arr(xs, fmt=str):
            return ", ".join(fmt(x) for x in list(xs) + [0])

        fields = dict(
            test_name=self.test.name, target=target, config_name=cfg.name,
            layout_doc=(f"{lay.units} unit(s) of {lay.cluster} CTA(s){' (clusters)' if lay.clustered else ''}, "
                        f"{lay.warps} warp(s) per CTA, {lay.per_warp} instance(s) per warp"),
            observed_doc=", ".join(space.names) or "(nothing)",
            notes="\n".join(f"// Note: {n}" for n in notes),
            n_roles=len(self.test.threads), n_maps=1 + max((k for _, k in self.aliases.values()), default=0), cluster=lay.cluster, units=lay.units, warps=lay.warps,
            per_warp=lay.per_warp, warpgroups=int(bool(lay.warpgroups or lay.whole_warps)), n_tmem=len(self.tmem_cells), n_global=len(self.glob), n_shared=self.n_slots,
            n_obs=max(1, len(self.obs_vars)), n_vars=len(space.vars), n_buckets=space.size,
            cell_words=self.cell_bytes // 4, spin_cap=cfg.spin_cap, spin_ns=int(cfg.spin_time_us * 1000), testing_groups=cfg.testing_groups,
            stress_units=max(0, round(cfg.testing_groups * lay.units * (1 - cfg.testing_fraction) / cfg.testing_fraction)),
            stress_test_lines=int(cfg.stress_target == "test-lines"), shuffle_pct=cfg.shuffle_pct, stride_cells=cfg.stride_cells,
            permute_locations=int(cfg.permute_locations), stress_pattern=STRESS_PATTERNS.index(cfg.pattern),
            line_words=cfg.line_words, target_lines=cfg.target_lines, stress_iterations=cfg.iterations,
            stress_pct=cfg.stress_pct, pre_stress_iterations=cfg.pre_stress_iterations,
            pre_stress_pct=cfg.pre_stress_pct, barrier_pct=cfg.barrier_pct,
            time_budget_s=repr(float(cfg.time_budget_s)), max_iterations=cfg.max_iterations,
            global_init=arr(f"{self._init(n)}u" for n in self.glob),
            shared_here=arr(int(n is not None) for n in cells),
            shared_init=arr(f"{self._init(n)}u" if n else "0u" for n in cells),
            tmem_init=arr(f"{self._init(n)}u" for n in self.tmem_cells),
            shared_mbarrier=arr((int((decl[n].mbarrier or {}).get("count", 1)) if decl[n].mbarrier is not None
                                 else (1 if n in self.mbar_expect else 0)) if n else 0 for n in cells),
            shared_expect=arr(self.mbar_expect.get(n, 0) if n else 0 for n in cells),
            shared_inval=arr(int(n in self._initialised() and n not in self._invalidated()) if n else 0 for n in cells),
            slot_words=self.slot_words, smem_align=self.smem_align,
            n_tmaps=len(self.tmaps), n_smaps=len(self.smaps), map_values=map_values,
            tmap_buffer=arr(self.glob.index(table[k]) if k in table else -1
                            for table in (self.maps[n] for n in self.tmaps + self.smaps) for k in range(map_values)),
            tmap_init=arr(decl[n].init if n in decl else 0 for n in self.tmaps + self.smaps),
            smap_owner=arr(owners[n] for n in self.smaps),
            var_kind=arr(var_kind), var_index=arr(var_index), var_domain_start=arr(starts),
            n_domain_values=len(values), domain_values=arr(f"{x}u" for x in values),
            k_table=", ".join(map(str, k_table)), who_table=", ".join(map(str, who)),
            cluster_attr=f"__cluster_dims__({lay.cluster}, 1, 1)" if lay.clustered else "",
            clustered=int(lay.clustered), reserved_barrier=RESERVED_BARRIER,
            role_cases="\n".join(" " * 8 + line for line in cases),
            idle_cluster_barriers=self.idle_padding(),
            epilogue_waits=self.epilogue_waits(owners),
            n_zero=max(1, self.zeros[0]), tmap_rank=self.tmap_rank,
            target_cc=int(re.sub(r"\D", "", target) or 0),
            test_name_c=self.test.name.replace("\\", "\\\\").replace('"', '\\"'),
        )
        source = Template(TEMPLATE.read_text()).substitute(fields)
        return Program(self.test.name, source, target, space, lay, cfg, notes)


def _writes_memory(i: Instr) -> bool:
    """Does `i` write memory or an mbarrier (performed once, by a warpgroup's leader)?"""
    if i.op in ("st", "atom", "red", "cp", "tensormap"):
        return True
    if i.op == "tcgen05":
        return i.qualifiers[:1] == ("commit",)
    return i.op == "mbarrier" and i.qualifiers[:1] not in (("try_wait",), ("test_wait",))


def _acquires_tensormap(test: LitmusTest) -> bool:
    """Does some thread of `test` acquire a tensor map itself (fence.proxy.tensormap::generic.acquire)?"""
    return any(i.op in ("fence", "membar") and "tensormap::generic" in i.qualifiers and "acquire" in i.qualifiers
               for t in test.threads for i in t.code)


def _guard(i: Instr, ctx: Ctx) -> str:
    """The C condition of `@p` / `@!p` (the predicate register holds 0 or 1)."""
    return ("!" if i.predicate.startswith("@!") else "") + ctx.reg(i.predicate.lstrip("@!"))


def _label(tid: int, name: str) -> str:
    """The C label of litmus label `name` of thread `tid`: unique in the kernel (every thread's
    code is inlined once, in its own switch case)."""
    return f"L{tid}_" + re.sub(r"\W", lambda m: f"_{ord(m.group(0)):x}_", name)


def _realptx_problems(test: LitmusTest) -> list[str]:
    """What of issue 15's real-PTX coverage the harness does not generate yet (never run silently
    as something else): several kernels, special registers the test does not determine, an L2
    cache policy operand, .L2::evict_* (vector accesses only) and ld.global.nc. Cache operators
    and L1 eviction hints (.ca .cg .cs .lu .cv .wb .wt, L1::*, L2::NB prefetch sizes) are emitted
    as written."""
    from ..isa.special import operand_name, value
    out = []
    if len(test.kernels) > 1:
        out.append("several kernels (kernels:) are not expressible yet: the harness launches one kernel")
    for t in test.threads:
        for idx, i in enumerate(t.code):
            for o in i.operands:
                name = getattr(o, "name", None)
                if isinstance(o, Reg) and str(name).startswith("%") and operand_name(name):
                    v = value(name, test, t)
                    if not isinstance(v, int):
                        out.append(f"{t.name}:{idx} '{i.text}': special register {name}: {v}")
            if i.op in ("ld", "st") and any(i.quals.get(g) for g in ("cache_hint", "nc")):
                out.append(f"{t.name}:{idx} '{i.text}': an L2 cache policy operand and ld.global.nc are not "
                           f"generated yet")
            if i.op in ("ld", "st") and i.quals.get("l2_evict"):
                out.append(f"{t.name}:{idx} '{i.text}': ptxas (13.0) accepts .L2::evict_* only on .v8.b32/.v4.b64 "
                           f"accesses, and cells are single values")
    return out


def virtualized(test: LitmusTest) -> LitmusTest:
    """`test` with every special-register operand replaced by the value the model gives it
    (checker.isa.special: from the thread's position in the test). The harness places litmus
    threads elsewhere (other CTAs, lanes and warps per launch), so the hardware's own value would
    differ from the model's: the program reads the position the test defines, as the model does."""
    from dataclasses import replace
    from ..isa.special import operand_name, value

    def op(o, t):
        if isinstance(o, Reg) and o.name.startswith("%") and operand_name(o.name):
            v = value(o.name, test, t)
            return Imm(v) if isinstance(v, int) else o
        return o
    threads = tuple(replace(t, code=tuple(replace(i, operands=tuple(op(o, t) for o in i.operands)) for i in t.code))
                    for t in test.threads)
    return replace(test, threads=threads)


def _retryable(i: Instr) -> bool:
    """Instructions an await may repeat: those without side effects (loads, phase tests)."""
    if i.op == "ld":
        return True
    return i.op == "mbarrier" and i.qualifiers[:1] in (("try_wait",), ("test_wait",))


def unsupported(test: LitmusTest, config: DeviceConfig | None = None, cuda: str | None = None) -> str | None:
    """Why the harness cannot express `test` yet (every reason, '; '-joined), or None. With `cuda`
    (the toolchain's release, e.g. '13.0'), PTX forms that release cannot assemble count too."""
    g = _Gen(test, config or load_device(), cuda)
    if not g.problems:
        try:
            g.generate()
        except HarnessError as e:          # never report a test as expressible that is not
            if not g.problems:
                g.problems.append(e.message)
    return "; ".join(dict.fromkeys(g.problems)) or None


def generate(test: LitmusTest, config: DeviceConfig | None = None, cuda: str | None = None) -> Program:
    """The CUDA program for `test`; HarnessError (with every reason) when not expressible."""
    return _Gen(test, config or load_device(), cuda).generate()
