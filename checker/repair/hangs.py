"""The edits that can remove a hang, for a target that forbids one (`ptxmc fix FILE hang`, or a
test that expects `hang: forbidden` and hangs). Synchronization (checker.repair.candidates) only
removes executions; a hang usually needs the protocol itself changed: a parity, a count, a byte
count, a missing arrival. One function per kind below; the prices are the cost table's
(checker.repair.costs, docs/fix.md).

Every value is derived from the hangs the test's UnionSession finds (checker.verdict.union:
the final state a spinning wait reads, the arrivals a stuck barrier generation receives), never
from a table of known bugs; whether an edit removes the hang is for the search to judge, through
the same session (checker.repair.variants.UnionProblem).

- `parity`: a try_wait/test_wait .parity in a loop that hangs: the other parity. An immediate
  parity is flipped in the wait; a register that holds a constant on the hanging path (nvcc's
  `mov.u32 %r, 0` ... `xor.b32 %r, %r, 1`) is flipped where it is set, in its one `mov` of an
  immediate when every other writer toggles it with xor (each wait reading it then waits for the
  other parity), else in the wait, written with the other parity as an immediate. On a fresh
  mbarrier the other parity names the phase before the first, which a wait finds complete at
  once, so there only where an arrive on it follows a wait of its thread (a ring of handshakes,
  whose first wait on one side is meant to pass: a producer's first wait on 'empty'); elsewhere
  the flip would let the wait wait for nothing.
- `expect_tx`: an expect_tx byte count (mbarrier.arrive.expect_tx, mbarrier.expect_tx) on an
  mbarrier a hanging wait finds with tx-count t != 0 left: the count minus t (what arrives).
- `mbarrier.init.count`: an mbarrier.init count on an mbarrier found with k arrivals pending: the
  count minus k.
- `noinc`: a cp.async.mbarrier.arrive without .noinc on such an mbarrier: with .noinc (its
  arrive-on then counts as one of the expected arrivals).
- `mbarrier.arrive`: on such an mbarrier, an arrive in a thread of its CTA that does not wait on
  it (its own arrival would let its wait wait for itself): after the thread's last arrive on it,
  else at its end; never at a label (the arrive would join the loop the label heads).
- `bar.count`: a counted CTA barrier whose stuck generation receives m >= 2 arrivals: every use
  of the barrier given count m (one edit: PTX requires one count per barrier); where the count
  is the whole CTA's and no use is a bar.arrive, every use without a count (a generation then
  waits only for the threads that have not exited).
- `barrier.cluster.arrive`: a cluster barrier wait a thread reaches without an arrive since its
  previous wait (in a test that hangs at a barrier): an arrive before it.
- `st.value`: a store of an immediate to a location a hanging spin loop polls: each value the
  loop compares the loaded value with (its setp immediates, or registers only a `mov` of an
  immediate writes; an await's value).

Not made: adding a store where no thread writes the location a loop polls. Which thread should
write it, where and how strongly is the protocol's design, and an edit that lets the spinning
thread write its own flag removes any such hang while meaning nothing; a never-set flag is
reported as having no repair in the space.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cached_property

from ..ast import Addr, Imm, Instr, LitmusTest, Reg
from ..errors import LitmusError
from ..isa import address, barriers, registry
from ..isa.mbarrier import fields
from ..isa.syntax import render_instr
from .costs import CostModel
from .edits import PHASES, Edit, Insert, Replace, instr

ARRIVES = ("mbarrier.arrive", "mbarrier.arrive_drop")
WAITS = ("mbarrier.try_wait", "mbarrier.test_wait")


@dataclass
class _Hangs:
    """What the hangs of the original test say, for the generators."""

    test: LitmusTest
    asked: object                   # its UnionSession (asked the liveness question)

    @cached_property
    def found(self) -> tuple:
        return self.asked.hangs()[0]

    @cached_property
    def combos(self) -> set[str]:
        return {h.combo for h in self.found}

    def loc(self, name: str) -> str:
        return self.asked.names.get(name, name)

    @cached_property
    def spins(self) -> list:
        """(thread, Spin) of every loop a hanging combination is cut in."""
        out = []
        for c in list(self.asked.combos) + [c for c, _ in self.asked.blocked]:
            if c.cut and c.describe() in self.combos:
                out.extend(c.cut)
        return out

    @cached_property
    def mb_states(self) -> dict[str, set[tuple[int, int, int, int]]]:
        """mbarrier -> the final states (phase, expected, pending, tx) a hanging wait reads."""
        mbs = {self.loc(w.operands[1].base) for _, s in self.spins for w in s.waits}
        out: dict = {}
        for h in self.found:
            d = dict(h.outcome)
            for m in mbs:
                if d.get(m):
                    out.setdefault(m, set()).add(fields(d[m]))
        return out

    @cached_property
    def blocked(self) -> bool:
        """Does a hanging combination block at a barrier?"""
        return any(c.describe() in self.combos for c, _ in self.asked.blocked)

    @cached_property
    def stuck(self) -> list:
        """(combination, blocked use, the uses that arrived in its generation) of every barrier
        generation a hanging combination never completes."""
        out = []
        for c, _ in self.asked.blocked:
            if not c.stuck or c.describe() not in self.combos:
                continue
            # (the combination's test stops each stuck thread before its barrier operation)
            by = {(u.thread, u.index): u for us in barriers.uses(c.test).values() for u in us}
            by.update({(u.thread, u.index): u for u in c.schedule.blocked})
            gen = {(t, i): g for t, i, g in c.schedule.generation}
            for u in c.schedule.blocked:
                g = gen.get((u.thread, u.index))
                came = [by[k] for k, gg in gen.items() if gg == g and k in by and by[k].key == u.key
                        and by[k].kind != "wait"]
                out.append((c, u, came))
        return out

    def index(self, thread: str, ins: Instr) -> int | None:
        """The index, in the test as written, of the instruction a path's `ins` came from."""
        code = next(t.code for t in self.test.threads if t.name == thread)
        if ins.where is None:
            return None
        for k, i in enumerate(code):
            if i.where is ins.where:
                return k
        for k, i in enumerate(code):
            if i.where == ins.where and i.op == ins.op:
                return k
        return None


def hang_candidates(test: LitmusTest, asked, costs: CostModel) -> tuple[Edit, ...]:
    """The hang-removing edits of `test` (asked: its UnionSession, with the liveness question)."""
    h = _Hangs(test, asked)
    if not h.found:
        return ()
    out: list[Edit] = []
    for kind in (parity, expect_tx, init_count, noinc, arrive, bar_count, cluster_arrive, store_value):
        out.extend(kind(h, costs))
    seen, edits = set(), []
    for e in out:
        if e.key not in seen:
            seen.add(e.key)
            edits.append(e)
    return tuple(edits)


# -- helpers ---------------------------------------------------------------------------------------

def _with_operands(test: LitmusTest, ins: Instr, operands, qualifiers=None) -> Instr | None:
    """`ins` with other operands (and qualifiers), validated; None if the registry refuses it.
    Its registers are spelled as `ins` spells them (`%p0` in a `ptx:` block: ptxmc reads `%p0`
    and `p0` as one register, and a patched file that wrote both would not load)."""
    text = _spelled(render_instr(replace(ins, operands=tuple(operands)), qualifiers), ins.text)
    try:
        new = instr(text, test, ins.where.line if ins.where else None)
    except LitmusError:
        return None
    return replace(new, where=ins.where, await_value=ins.await_value, predicate=ins.predicate)


def _spelled(text: str, like: str) -> str:
    """`text` (a rendered statement) with each register that `like` writes with a '%' written so
    (outside the opcode)."""
    names = set(re.findall(r"%([A-Za-z_$][\w$]*)", like))
    if not names:
        return text
    pattern = re.compile(r"(?<![\w$%])(" + "|".join(map(re.escape, sorted(names))) + r")(?![\w$])")

    def respell(part: str) -> str:
        return pattern.sub(lambda m: "%" + m.group(1), part)

    op = next((t for t in text.split() if not t.startswith("@")), "")
    if not op:
        return respell(text)
    at = text.find(op)
    return respell(text[:at]) + op + respell(text[at + len(op):])


def _reg_text(name: str, like: str) -> str:
    """Register `name` as the statement `like` writes it (with or without '%')."""
    return "%" + name if re.search(rf"%{re.escape(name)}(?![\w$])", like) else name


def _mb_of(ins: Instr) -> str | None:
    """The mbarrier an mbarrier (or cp.async.mbarrier.arrive) instruction names."""
    for o in ins.operands:
        if isinstance(o, Addr):
            return o.base
    return None


def _change(out: list, h: _Hangs, costs: CostModel, kind: str, cost_key: str, thread: str, k: int, ins: Instr,
            operands, why: str, qualifiers=None) -> None:
    """Append the edit that rewrites instruction k of `thread` with other operands (qualifiers),
    if the registry takes the result. Its slot is the instruction's strength's
    (checker.repair.candidates): one replacement per instruction."""
    new = _with_operands(h.test, ins, operands, qualifiers)
    if new is not None:
        key = f"hang:{kind}:{thread}:{k}:{new.text}"
        out.append(Edit(key, kind, ("access", (thread, k)), None, costs[cost_key], (Replace(thread, k, new),),
                        cost_key, why=why))


def _code(test: LitmusTest):
    for th in test.threads:
        for k, ins in enumerate(th.code):
            yield th, k, ins


# -- the kinds -------------------------------------------------------------------------------------

def parity(h: _Hangs, costs: CostModel) -> list[Edit]:
    out = []
    for thread, spin in h.spins:
        th = next(t for t in h.test.threads if t.name == thread)
        for w in spin.waits:
            k = h.index(thread, w)
            if k is None:
                continue
            ins = th.code[k]
            if not ins.quals.get("parity"):
                continue
            # the parity on the hanging path: an immediate, or a register holding a constant there
            # (the path reads it as that immediate: checker.isa.fold.with_constants)
            written, held = ins.operands[2], w.operands[2]
            if not isinstance(held, Imm) or not isinstance(written, (Imm, Reg)):
                continue
            # On a fresh mbarrier the other parity names the phase before the first, which a wait
            # finds complete at once: offered only where a phase has completed, or where an arrive
            # on the mbarrier comes after a wait of its thread (a ring of handshakes, whose first
            # wait on one side is meant to pass: a producer's first wait on 'empty')
            mb = ins.operands[1].base
            if not any(ph >= 1 for ph, _, _, _ in h.mb_states.get(h.loc(mb), ())) and not _handshake(h.test, mb):
                continue
            flipped = 1 - held.value % 2
            start = _phase_start(th, written.name) if isinstance(written, Reg) else None
            if start is not None:
                # where the program sets the parity: its one `mov`, the other writers toggling it
                s = th.code[start]
                _change(out, h, costs, "parity", "parity", thread, start, s,
                        (s.operands[0], Imm(s.operands[1].value ^ 1)),
                        f"{thread} starts {_reg_text(written.name, s.text)} at the other parity: it waits for the "
                        f"phase of parity {flipped} of {mb} here")
            else:
                _change(out, h, costs, "parity", "parity", thread, k, ins,
                        ins.operands[:2] + (Imm(flipped),) + ins.operands[3:],
                        f"{thread} waits for the phase of parity {flipped} of {mb}"
                        + (f" ({_reg_text(written.name, ins.text)} holds {held.value} here)"
                           if isinstance(written, Reg) else ""))
    return out


def _phase_start(th, reg: str) -> int | None:
    """The index of the one instruction that starts parity register `reg` of thread `th` (a `mov`
    of an immediate) when every other instruction that writes it toggles it (`xor reg, reg, imm`:
    a phase bit flipped per round), so that flipping the bit the `mov` sets flips the parity of
    every wait that reads it; None otherwise."""
    starts = []
    for k, i in enumerate(th.code):
        if reg not in address.destinations(i, registry.family(i)):
            continue
        if i.predicate is None and i.family == "mov" and isinstance(i.operands[1], Imm):
            starts.append(k)
        elif not (i.family == "xor" and len(i.operands) == 3 and Reg(reg) in i.operands[1:]
                  and any(isinstance(o, Imm) for o in i.operands[1:])):
            return None
    return starts[0] if len(starts) == 1 else None


def _handshake(test: LitmusTest, mb: str) -> bool:
    """Does some thread arrive on `mb` after it waits on an mbarrier?"""
    for th in test.threads:
        waited = False
        for i in th.code:
            if i.family in WAITS:
                waited = True
            elif i.family in ARRIVES and _mb_of(i) == mb and waited:
                return True
    return False


def expect_tx(h: _Hangs, costs: CostModel) -> list[Edit]:
    out = []
    for th, k, ins in _code(h.test):
        if not ins.quals.get("expect_tx") and ins.family != "mbarrier.expect_tx":
            continue
        mb = _mb_of(ins)
        if mb is None or not isinstance(ins.operands[-1], Imm):
            continue
        for _, _, _, tx in sorted(h.mb_states.get(h.loc(mb), ())):
            n = ins.operands[-1].value - tx
            if tx == 0 or n <= 0:
                continue
            _change(out, h, costs, "expect_tx", "expect_tx", th.name, k, ins, ins.operands[:-1] + (Imm(n),),
                    f"{mb} expects the {n} bytes that arrive ({tx:+d} left pending on the path that hangs)")
    return out


def _pending(h: _Hangs, mb: str) -> list[int]:
    return sorted({p for _, _, p, _ in h.mb_states.get(h.loc(mb), ()) if p > 0})


def init_count(h: _Hangs, costs: CostModel) -> list[Edit]:
    out = []
    for th, k, ins in _code(h.test):
        if ins.family != "mbarrier.init" or not isinstance(ins.operands[1], Imm):
            continue
        for p in _pending(h, ins.operands[0].base):
            n = ins.operands[1].value - p
            if n >= 1:
                _change(out, h, costs, "count", "mbarrier.init.count", th.name, k, ins, (ins.operands[0], Imm(n)),
                        f"{ins.operands[0].base} expects the {n} arrival{'s' if n != 1 else ''} it gets "
                        f"({p} missing on the path that hangs)")
    return out


def noinc(h: _Hangs, costs: CostModel) -> list[Edit]:
    out = []
    for th, k, ins in _code(h.test):
        if ins.family != "cp.async.mbarrier.arrive" or ins.quals.get("noinc") or not _pending(h, _mb_of(ins)):
            continue
        _change(out, h, costs, "noinc", "cp.async.mbarrier.arrive.noinc", th.name, k, ins, ins.operands,
                f"the copies' arrive-on counts as an expected arrival on {_mb_of(ins)}",
                ins.qualifiers[:3] + ("noinc",) + ins.qualifiers[3:])
    return out


def arrive(h: _Hangs, costs: CostModel) -> list[Edit]:
    out = []
    for loc in h.mb_states:
        mbs = [m for m in {_mb_of(i) for _, _, i in _code(h.test) if i.family.startswith("mbarrier")}
               if m is not None and h.loc(m) == loc]
        if not mbs or not _pending(h, mbs[0]):
            continue
        mb = mbs[0]
        decl = h.test.mem(mb)
        touching = {th.name for th, _, i in _code(h.test) if _mb_of(i) in mbs}
        model = next((i for _, _, i in _code(h.test) if i.family == "mbarrier.arrive" and _mb_of(i) in mbs
                      and not i.quals.get("expect_tx") and len(i.operands) == 2 and not i.predicate), None)
        space = next((i.quals.get("space") for _, _, i in _code(h.test) if i.family.startswith("mbarrier")
                      and _mb_of(i) in mbs and i.quals.get("space")), "shared::cta")
        text = (f"{model.op}.{'.'.join(model.qualifiers)} _, [{mb}]" if model is not None
                else f"mbarrier.arrive.{space}.b64 _, [{mb}]")
        for th in h.test.threads:
            if decl is not None and decl.owner is not None:
                if th.position.cta_key() != decl.owner.cta_key():
                    continue
            elif th.name not in touching:
                continue
            point = _arrive_point(th, mbs)
            if point is None:
                continue
            try:
                ins = instr(text, h.test)
            except LitmusError:
                continue
            out.append(Edit(f"hang:arrive:{th.name}:{mb}", "arrive", ("arrive", th.name, mb), None,
                            costs["mbarrier.arrive"], (Insert(th.name, point, PHASES["fence_pre"], (ins,)),),
                            "mbarrier.arrive", why=f"{th.name} makes an arrival {mb} waits for"))
    return out


def _arrive_point(th, mbs) -> int | None:
    """Where `th` arrives: after its last arrive on the mbarrier, else at its end; never at a
    label (the arrive would join the loop it heads), and not in a thread that waits on the
    mbarrier (its own arrival would let its wait wait for itself)."""
    labelled = {k for _, k in th.labels}
    arrives = [k for k, i in enumerate(th.code) if i.family in ARRIVES and _mb_of(i) in mbs and not i.predicate]
    waits = [k for k, i in enumerate(th.code) if i.family in WAITS and _mb_of(i) in mbs]
    if waits:
        return None                     # (its own arrival would let its wait wait for itself)
    if arrives and arrives[-1] + 1 not in labelled:
        return arrives[-1] + 1
    return len(th.code) if len(th.code) not in labelled else None


def bar_count(h: _Hangs, costs: CostModel) -> list[Edit]:
    out, done = [], set()
    n = h.test.threads_per_litmus_thread
    for c, u, came in h.stuck:
        if u.key[0] != "cta" or u.need is None:
            continue
        uses = [(th, k, i) for th, k, i in _code(h.test) if i.family in ("bar", "barrier")
                and i.quals["mode"] != "red" and th.position.cta_key() == u.key[1]
                and isinstance(i.operands[0], Imm) and i.operands[0].value == u.key[2]]
        members = [t for t in h.test.threads if t.position.cta_key() == u.key[1]]
        counts = []
        if len(came) >= 2 and len(came) * n != u.need:
            counts.append(len(came) * n)
        if u.need == len(members) * n and all(i.quals["mode"] != "arrive" for _, _, i in uses):
            counts.append(None)
        for m in counts:
            if (u.key, m) in done:
                continue
            done.add((u.key, m))
            changes = []
            for th, k, i in uses:
                new = _with_operands(h.test, i, (i.operands[0],) + ((Imm(m),) if m is not None else ()))
                if new is None:
                    break
                changes.append(Replace(th.name, k, new))
            else:
                what = f"count {m}" if m is not None else "no count"
                why = (f"barrier {u.key[2]} completes with the {m} threads' arrivals it gets" if m is not None else
                       f"barrier {u.key[2]} waits only for the threads of the CTA that have not exited")
                out.append(Edit(f"hang:bar:{u.key[2]}:{what}", "count", ("bar.count",) + u.key, None,
                                costs["bar.count"], tuple(changes), "bar.count", why=why))
    return out


def cluster_arrive(h: _Hangs, costs: CostModel) -> list[Edit]:
    if not h.blocked:
        return []
    out = []
    model = next((i for _, _, i in _code(h.test) if i.family == "barrier.cluster" and i.quals["mode"] == "arrive"),
                 None)
    for th in h.test.threads:
        armed = False
        for k, i in enumerate(th.code):
            if i.family != "barrier.cluster":
                continue
            if i.quals["mode"] == "arrive":
                armed = True
                continue
            if not armed:
                text = model.text if model is not None else \
                    "barrier.cluster.arrive" + (".aligned" if i.quals.get("aligned") else "")
                try:
                    ins = instr(text, h.test)
                except LitmusError:
                    continue
                out.append(Edit(f"hang:cluster-arrive:{th.name}:{k}", "arrive", ("cluster-arrive", th.name, k),
                                None, costs["barrier.cluster.arrive"],
                                (Insert(th.name, k, PHASES["fence_pre"], (ins,)),), "barrier.cluster.arrive",
                                why=f"{th.name} arrives before it waits on the cluster barrier"))
            armed = False
    return out


def store_value(h: _Hangs, costs: CostModel) -> list[Edit]:
    out = []
    want: dict[str, set[int]] = {}
    for thread, spin in h.spins:
        th = next(t for t in h.test.threads if t.name == thread)
        a, b = h.index(thread, spin.head), h.index(thread, spin.branch)
        body = th.code[a:b + 1] if a is not None and b is not None and a <= b else \
            (th.code[a:a + 1] if a is not None else ())
        values = {i.await_value for i in body if i.await_value is not None}
        for i in body:
            if i.family == "setp":
                values |= {v for o in i.operands[1:] for v in (_constant(th, o),) if v is not None}
        for _, loc in spin.loads:
            want.setdefault(h.loc(loc), set()).update(values)
    for th, k, ins in _code(h.test):
        if ins.family != "st" or ins.predicate or len(ins.operands) != 2 or not isinstance(ins.operands[1], Imm):
            continue
        addr = ins.operands[0]
        if not isinstance(addr, Addr) or addr.offset or h.loc(addr.base) not in want:
            continue
        for v in sorted(want[h.loc(addr.base)] - {ins.operands[1].value}):
            _change(out, h, costs, "value", "st.value", th.name, k, ins, (addr, Imm(v)),
                    f"{th.name} writes the value {v} the loop polling {addr.base} waits for")
    return out


def _constant(th, o) -> int | None:
    """The value of operand `o` of thread `th` when it is one: an immediate, or a register whose
    only writer in the thread is a `mov` of an immediate (the loop compares with a constant)."""
    if isinstance(o, Imm):
        return o.value
    if not isinstance(o, Reg):
        return None
    writers = [i for i in th.code if o.name in address.destinations(i, registry.family(i))]
    if len(writers) == 1 and writers[0].family == "mov" and isinstance(writers[0].operands[1], Imm):
        return writers[0].operands[1].value
    return None
