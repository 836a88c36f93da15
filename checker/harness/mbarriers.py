"""Static accounting of the mbarriers that asynchronous operations complete on, so the epilogue of a
generated program never waits for a phase nothing completes, and never lets a CTA exit with a copy
still writing into its shared memory.

A litmus thread's code is straight-line (an await that gives up goes on with the next
instruction), so every instruction runs exactly once per instance and the arrivals and
transaction bytes each mbarrier receives are known statically:

    count     the arrival count of phase 0: the test's `mbarrier.init` in its code, else the
              declaration's `count`, else 1 for a barrier the harness initialises itself
    arrivals  mbarrier.arrive{_drop}{.expect_tx} (their count operand, else 1),
              cp.async.mbarrier.arrive.noinc, tcgen05.commit ...mbarrier::arrive::one, plus
              the harness's own prologue arrive on a barrier it initialises
    expected  transaction bytes announced: expect_tx operands (scaled like the emitted code)
    completed transaction bytes delivered: bulk/tensor copies (one cell each), st.async/red.async
              (4 or 8 bytes), mbarrier.complete_tx operands

The epilogue runs after every test thread of the cluster is done, so the test itself never sees
what it adds. While the test leaves arrivals to make up (`arrivals < count`), phase 0 cannot have
completed yet: the epilogue balances the transaction bytes (expect_tx of what the copies deliver
beyond what the test announced, complete_tx of what was announced but never delivered), makes up
the arrivals, and waits for phase 0, which then completes exactly when the last copy has landed.
When the test makes all the arrivals itself, the wait is sound only if `expected == completed`
(else phase 0 can complete before the data lands, or never); more arrivals than the count mean
several phases. Those cases are listed as not expressible with the reason (`problems`).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ast import Addr, Imm, Instr, LitmusTest

WIDE_TYPES = ("b64", "u64", "s64")


@dataclass(frozen=True)
class Account:
    name: str
    count: int
    arrivals: int
    expected: int
    completed: int
    waited: bool          # an asynchronous operation completes on it: the epilogue waits for it

    @property
    def makeup(self) -> int:
        """Arrivals the epilogue adds so phase 0 can complete."""
        return max(0, self.count - self.arrivals)

    @property
    def makeup_expect(self) -> int:
        """Transaction bytes the epilogue announces (expect_tx) that the test does not: only while
        the test leaves arrivals to make up, so phase 0 cannot complete before the epilogue."""
        return max(0, self.completed - self.expected) if self.makeup else 0

    @property
    def makeup_complete(self) -> int:
        """Transaction bytes the epilogue completes (complete_tx) that the test announces but no
        operation delivers (same condition)."""
        return max(0, self.expected - self.completed) if self.makeup else 0


def _addrs(i: Instr) -> list[str]:
    return [o.base for o in i.operands if isinstance(o, Addr)]


def completion_target(i: Instr) -> str | None:
    """The mbarrier an asynchronous operation completes on (complete_tx), or None."""
    a = _addrs(i)
    if i.op == "cp" and any(q.startswith("mbarrier::complete_tx") for q in i.qualifiers) and len(a) >= 2:
        return a[-1]
    if i.op in ("st", "red") and i.has("async") and len(i.operands) > 2 and isinstance(i.operands[2], Addr):
        return i.operands[2].base
    return None


def _completed_bytes(i: Instr, cell_bytes: int) -> int:
    if i.op == "cp":
        return cell_bytes
    return 8 if any(q in WIDE_TYPES for q in i.qualifiers) else 4


def _imm(op, default: int) -> int:
    return op.value if isinstance(op, Imm) else default


def _root(decl: dict, name: str) -> str:
    seen = {name}
    while decl.get(name) is not None and decl[name].offset_of and decl[name].offset_of not in seen:
        name = decl[name].offset_of
        seen.add(name)
    return name


def multicast_targets(test: LitmusTest, i: Instr, issuer, name: str) -> tuple[list[str], list[str]]:
    """The locations at `name`'s offset in each CTA of a .multicast::cluster operation's ctaMask
    (issued by a thread at position `issuer`), and the CTAs of the mask where none is declared."""
    decl = {m.name: m for m in test.memory}
    mask_op = [o for o in i.operands if isinstance(o, Imm)]
    mask = mask_op[-1].value if mask_op else 0
    root = _root(decl, name)
    out, missing = [], []
    for n in range(16):
        if not mask >> n & 1:
            continue
        key = (issuer.gpu, issuer.cluster, n)
        hit = [m.name for m in test.memory if m.space == "shared" and m.owner is not None
               and m.owner.cta_key() == key and _root(decl, m.name) == root]
        (out.append(hit[0]) if hit else missing.append(f"cta{n}"))
    return out, missing


def accounts(test: LitmusTest, cell_bytes: int, tx_factor: int, harness_expect: dict[str, int]) -> tuple[dict[str, Account], list[str]]:
    """Per mbarrier that something arrives on or completes on: its Account; and the problems that
    make the epilogue's wait unsound (every reason, with the mbarrier's name)."""
    decl = {m.name: m for m in test.memory}
    count: dict[str, int] = {}
    arrivals: dict[str, int] = {}
    expected: dict[str, int] = {}
    completed: dict[str, int] = {}
    inits: dict[str, int] = {}
    invalidated: set[str] = set()
    waited: set[str] = set()
    for name, nbytes in harness_expect.items():      # the harness initialises, arrives and expects
        count[name], arrivals[name], expected[name] = 1, 1, nbytes
    for m in test.memory:
        if m.mbarrier is not None:
            count[m.name] = int(m.mbarrier.get("count", 1))
    problems = []
    for t in test.threads:
        for i in t.code:
            a = _addrs(i)
            target = completion_target(i)
            targets = [target] if target is not None else []
            if target is not None and "multicast::cluster" in i.qualifiers:
                targets, missing = multicast_targets(test, i, t.position, target)
                if missing:
                    problems.append(f"'{i.text}': the ctaMask reaches {', '.join(missing)}, where no mbarrier is "
                                    f"declared at '{target}''s offset (offset_of): its complete-tx would hit "
                                    f"uninitialised shared memory")
            for target in targets:
                waited.add(target)
                completed[target] = completed.get(target, 0) + _completed_bytes(i, cell_bytes)
            if i.op == "mbarrier" and a and i.qualifiers:
                kind, mb = i.qualifiers[0], a[0]
                if kind == "init":
                    inits[mb] = inits.get(mb, 0) + 1
                    count[mb] = _imm(i.operands[1], 1) if len(i.operands) > 1 else 1
                elif kind == "inval":
                    invalidated.add(mb)
                elif kind in ("arrive", "arrive_drop"):
                    if "expect_tx" in i.qualifiers:
                        arrivals[mb] = arrivals.get(mb, 0) + 1
                        expected[mb] = expected.get(mb, 0) + _imm(i.operands[2], 0) * tx_factor
                    else:
                        n = _imm(i.operands[2], 1) if len(i.operands) > 2 else 1
                        arrivals[mb] = arrivals.get(mb, 0) + n
                elif kind == "expect_tx":
                    expected[mb] = expected.get(mb, 0) + _imm(i.operands[1], 0) * tx_factor
                elif kind == "complete_tx":
                    completed[mb] = completed.get(mb, 0) + _imm(i.operands[1], 0) * tx_factor
            elif i.op == "cp" and "mbarrier" in i.qualifiers and "arrive" in i.qualifiers and a:
                if "noinc" in i.qualifiers:     # without .noinc the pending count is raised first: net 0
                    arrivals[a[0]] = arrivals.get(a[0], 0) + 1
            elif i.op == "tcgen05" and any(q.startswith("mbarrier::arrive") for q in i.qualifiers) and a:
                arrivals[a[-1]] = arrivals.get(a[-1], 0) + 1
    names = sorted(set(count) | set(arrivals) | set(waited))
    out = {n: Account(n, count.get(n, 1), arrivals.get(n, 0), expected.get(n, 0), completed.get(n, 0), n in waited)
           for n in names}
    for n, acc in out.items():
        if not acc.waited:
            continue
        m = decl.get(n)
        if m is None or m.space != "shared":
            continue            # other checks say why (the copy's mbarrier must be shared memory)
        if n in invalidated:
            problems.append(f"mbarrier '{n}' is invalidated by the test while a copy completes on it: the "
                            f"epilogue cannot wait for the copy to land")
        elif inits.get(n, 0) > 1:
            problems.append(f"mbarrier '{n}' is initialised more than once: the epilogue cannot tell which "
                            f"phase the copies complete")
        elif acc.arrivals > acc.count:
            problems.append(f"mbarrier '{n}' receives {acc.arrivals} arrivals for a count of {acc.count} (more "
                            f"than one phase): the epilogue cannot tell when the copies have landed")
        elif acc.expected != acc.completed and not acc.makeup:
            problems.append(f"mbarrier '{n}': the test expects {acc.expected} transaction bytes but its copies "
                            f"complete {acc.completed} (scaled to {cell_bytes}-byte cells) and it makes every arrival "
                            f"itself, so phase 0 can complete before the data lands or never: no bounded "
                            f"epilogue wait is sound")
    return out, problems
