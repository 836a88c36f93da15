"""`ptxmc extract` as a library: a .ptx file -> skeleton files -> their verdicts.

    >>> outs = extract_file("k.ptx", out_dir="skel")       # doctest: +SKIP
    >>> print(outs[0].table); print(outs[0].check().text)   # doctest: +SKIP
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import LitmusError, SourceLoc
from .module import Module, load
from .bearing import reason
from .render import Mutant, mutants as make_mutants, role_table, short_name, test_name, yaml_text
from .interp import Refused
from .memo import RunMemo
from .skeleton import Skeleton, extract

MAX_ITERATIONS = 6
TILES = 1            # trips of a persistent kernel's tile loop (2: the ring's phase and the epilogue's buffers carry over once; 320 lines, beyond the default timeout)
EVENTS = 1000        # the event limit the checks run under (a skeleton of a real kernel has 100-300)
INSTRUCTIONS = 256   # and the per-thread instruction limit (a role of a real kernel has up to ~120)


@dataclass
class Report:
    ok: bool
    text: str
    mutants_caught: list[str] = field(default_factory=list)
    mutants_missed: list[str] = field(default_factory=list)
    # mutant name -> why it is not load-bearing (checker.extract.bearing); a missed mutant that
    # is not here is unexplained
    not_bearing: dict[str, str] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)

    @property
    def unexplained(self) -> list[str]:
        return [m for m in self.mutants_missed if m not in self.not_bearing and m not in self.unknown]


@dataclass
class Extraction:
    skeleton: Skeleton
    path: str
    mutants: list[Mutant]
    hang: bool

    @property
    def table(self) -> str:
        return role_table(self.skeleton)

    def _run(self, mutants, hang: bool, jobs: int, lim) -> list:
        """The results of the skeleton with `mutants` (its own first), written with or without the
        hang question to a file of their own."""
        import tempfile
        from ..api import run
        with tempfile.TemporaryDirectory(prefix="ptxmc-extract-") as folder:
            path = os.path.join(folder, os.path.basename(self.path) or "skeleton.yaml")
            Path(path).write_text(yaml_text(self.skeleton, mutants, hang))
            return run([path], jobs=jobs, limits=lim)

    def _mutants_hang(self, jobs: int, lim) -> list:
        """The mutants' results with --hang: each asked first without it (what that run finds stands,
        each of its executions being one of the mutant's, as for the skeleton below), and only those
        it does not catch asked the hang question (a mutant that breaks a synchronization leaves the
        conditions that make that question fast, and runs to the timeout)."""
        plain = self._run(self.mutants, False, jobs, lim)[1:]
        caught = {r.name for r in plain if r.status in ("fail", "undefined")}
        rest = [m for m in self.mutants if test_name(self.skeleton, "-" + m.name) not in caught]
        again = {r.name: r for r in self._run(rest, True, jobs, lim)[1:]} if rest else {}
        return [again.get(r.name, r) for r in plain]

    def check(self, jobs: int = 1, lim=None) -> Report:
        """Run the skeleton (and its mutants) through ptxmc, under `lim` (default: the limits in
        force) with at least EVENTS events and INSTRUCTIONS instructions per thread allowed."""
        from .. import limits
        from ..api import run
        lim = lim or limits.current()
        if lim.events < EVENTS:
            lim = lim.override([f"events={EVENTS}"])
        if lim.instructions < INSTRUCTIONS:
            lim = lim.override([f"instructions={INSTRUCTIONS}"])
        size = os.path.getsize(self.path)
        if size > lim.yaml_bytes:       # the file this extraction wrote (a big kernel's mutants)
            lim = lim.override([f"yaml_bytes={size}"])
        if not self.mutants:
            results = run([self.path], jobs=jobs, limits=lim)
        else:
            # the mutants keep the as-compiled expectations: they are judged only when it passes
            results = self._run([], self.hang, jobs, lim)
            if _passed(results[0]) and not self.hang:
                results = results[:1] + run([self.path], jobs=jobs, limits=lim)[1:]
            elif _passed(results[0]):
                results = results[:1] + self._mutants_hang(jobs, lim)
        sk = self.skeleton
        base = results[0]
        ok = _passed(base)
        lines = _verdict_lines(sk, base, self.hang)
        if self.hang and base.status == "unknown":
            # The hang question (and undefined behaviour over the waits' loops) went unanswered:
            # the questions a run without --hang answers are still asked, and said as such.
            without = self._run([], False, jobs, lim)[0]
            if without.status in ("fail", "undefined"):
                # Each execution of the run without --hang is one of the kernel's (its waits end
                # their loops), so what it finds stands whatever the hang question would say:
                # the finding is the verdict, and the unanswered question is named below it.
                why = base.message.splitlines()[0] if base.message else "no answer"
                lines = _verdict_lines(sk, without, False) + [
                    f"  the hang question (--hang) has no answer ({why})"
                    + ("; with undefined behaviour any behaviour is allowed, a hang included" if without.undefined
                       else "")]
            else:
                lines += ["  without --hang: " + x.lstrip() if k == 0 else "  " + x
                          for k, x in enumerate(_verdict_lines(sk, without, False))]
        rep = Report(ok, "")
        by_name = {test_name(sk, "-" + m.name): m for m in self.mutants}
        if self.mutants and not ok:
            # every mutant keeps the as-compiled expectations, which the skeleton already fails:
            # a mutant's failure would not tell its synchronization apart
            lines.insert(1, f"mutants: {len(self.mutants)} not judged: " + (
                "the as-compiled skeleton fails already (fix the finding first, then ask again)"
                if base.status in ("fail", "undefined") else
                f"the as-compiled skeleton has no answer ({base.status}): a mutant's would not tell"))
        elif self.mutants:
            answered = {r.name for r in results[1:]}
            for name, m in by_name.items():
                if name not in answered:        # never silently dropped
                    rep.mutants_missed.append(m.name)
                    rep.unknown.append(m.name)
                    lines.append(f"  NO RESULT  {m.name}: {m.what}")
            for r in results[1:]:
                m = by_name.get(r.name)
                if m is None:
                    continue
                caught = r.status in ("fail", "undefined")
                passed = _passed(r)
                (rep.mutants_caught if caught else rep.mutants_missed).append(m.name)
                why = reason(sk, m.role, m.index) if passed else None
                if why:
                    rep.not_bearing[m.name] = why
                elif not caught and not passed:
                    rep.unknown.append(m.name)          # no answer: neither caught nor explained
                verdict = "caught    " if caught else (
                    ("not load-bearing" if why else "NOT caught, UNEXPLAINED") if passed
                    else r.status.upper())
                msg = _message(r).splitlines()[0] if caught and _message(r) else (why or "")
                where = _ptx_lines(sk, _message(r)) if caught else []
                lines.append(f"  {verdict} {m.name}: {m.what}" + (f": {msg[:200]}" if msg else "")
                             + (f" [PTX lines {', '.join(where)}]" if where else ""))
            n = len(rep.mutants_caught)
            lines.insert(1, f"mutants: {n} of {len(self.mutants)} caught (load-bearing), {len(rep.not_bearing)} not "
                            f"load-bearing within the window, {len(rep.unexplained)} unexplained"
                            + (f", {len(rep.unknown)} unknown" if rep.unknown else ""))
        rep.text = "\n".join(lines)
        return rep


def _verdict_lines(sk: Skeleton, r, hang: bool) -> list[str]:
    """What the run `r` of skeleton `sk` (asked with the hang question when `hang`) says."""
    ok = _passed(r)
    lines = [f"{r.name}: {'PASS' if ok else r.status.upper()}" + (
        " (no undefined behaviour; every checked read and copy carries its data"
        + (", no hang)" if hang else ")") if ok else "")]
    if not ok:
        lines += ["  " + x for x in _message(r).splitlines()]
        lines += ["    " + sk.why[c.text] for c in r.conditions
                  if c.text in sk.why and c.expected == "forbidden" and c.allowed]
        named = _ptx_lines(sk, _message(r))
        if named:
            lines.append("  PTX lines named: " + ", ".join(named))
    elif not hang:
        # a wait is the read that ends its spin loop here (docs/model.md#a18): say what that leaves out
        lines.append("  not asked: hangs, and undefined behaviour that needs a wait's earlier reads "
                     "(--hang asks both)")
    return lines


def _passed(r) -> bool:
    """A skeleton's expectations hold: "pass", or "run" (no condition to judge, a skeleton with no
    data check) with no undefined behaviour."""
    return r.status == "pass" or (r.status == "run" and not r.undefined)


def _message(r) -> str:
    """What a Result says went wrong, with the litmus instructions it names."""
    parts = [r.message] if r.message else []
    for u in r.undefined:
        if f"{u.flag}: {u.why}" not in (r.message or ""):     # the message names each flag it has already
            parts.append(f"undefined behaviour: {u.flag}: {u.why} ({'; '.join(u.events)})")
    for c in r.conditions:
        if c.expected is not None and c.allowed is not None and (c.expected == "forbidden") == c.allowed:
            parts.append(f"expected {c.expected}: {c.text}, but it is {'allowed' if c.allowed else 'forbidden'}")
    return "\n".join(parts)


def _ptx_lines(sk: Skeleton, message: str) -> list[str]:
    found = []
    for r in sk.roles:
        for ln in r.lines:
            if f"{r.name}: {ln.text}" in message and f"L{ln.src_line}" not in found:
                found.append(f"L{ln.src_line}")
    return found


def extract_file(path: str, *, kernel: str | None = None, iterations: int | None = None, block=None,
                 cluster: int | None = None, out_dir: str | None = None, mutants: bool = False,
                 hang: bool = False, policy=None, params: dict | None = None,
                 tiles: int = TILES) -> list[Extraction]:
    """Extract every kernel of the .ptx file at `path` (or `kernel`); with `out_dir`, write
    OUT_DIR/KERNEL.yaml for each (checker.outsafe: a folder ptxmc did not create is refused
    unless policy.force). `params`: kernel parameters (NAME or NAME@OFFSET) taken as the given
    values instead of searched. `tiles`: the trips of an outer loop whose exit is unknown (a
    persistent kernel's tile loop). LitmusError, naming the PTX line, for what cannot be extracted."""
    from .. import outsafe
    policy = policy or outsafe.Policy(inputs=(path,))
    p = Path(path)
    if not p.is_file():
        raise LitmusError(f"no such file: {path}")
    data = p.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise LitmusError("not a PTX file (not UTF-8 text)", SourceLoc(path, 1, "")) from None
    mod = load(text, path)
    kernels = mod.kernels()
    if kernel is not None:
        kernels = [k for k in kernels if k.name == kernel]
        if not kernels:
            names = ", ".join(f"{k.name} (line {k.line})" for k in mod.kernels()) or "none"
            raise LitmusError(f"no kernel '{kernel}' in {path} (its kernels: {names})")
    if not kernels:
        raise LitmusError(f"{path} has no .entry (kernel)")
    folder = outsafe.check_folder(out_dir, "extract", policy) if out_dir is not None else None
    out: list[Extraction] = []
    for fn in kernels:
        sk = skeleton_of(mod, fn, iterations=iterations, block=block, cluster=cluster, params=params, tiles=tiles)
        ms = make_mutants(sk) if mutants else []
        target = None
        if folder is not None:
            stem = re.sub(r"[^\w+.-]", "_", short_name(fn.name))
            target = os.path.join(out_dir, f"{stem}.yaml")
            outsafe.write_file(folder / f"{stem}.yaml", yaml_text(sk, ms, hang), policy)
        out.append(Extraction(sk, target or "", ms, hang))
    return out


def skeleton_of(mod: Module, fn, *, iterations: int | None = None, block=None, cluster=None,
                params: dict | None = None, tiles: int = TILES) -> Skeleton:
    """The skeleton, unrolled `iterations` times or (None) stages + 1 times.

    A kernel whose synchronization depends on a scalar parameter in a way the unrolling cannot
    decide (Triton's peeled loops: a parity or a guard computed from `N_CTX > 0`,
    `N_CTX > 128`) is extracted again with that parameter set to a value that makes the loop run
    `iterations` times: iterations x a block size; the value taken is in the skeleton's notes."""
    n = iterations or 3
    memo = RunMemo()        # the search's trials share the thread runs their parameters do not change
    sk = _search(mod, fn, n, block, cluster, dict(params or {}), tiles, memo)
    if iterations is None:
        # the stages: the most mbarriers one wait instruction of one role waits on, in turn
        per_line: dict = {}
        for r in sk.roles:
            for e in r.trace.events:
                if e.kind == "mb_wait":
                    per_line.setdefault((r.name, e.line), set()).add(e.get("mb"))
        stages = max((len(v) for v in per_line.values()), default=1)
        want = max(2, min(MAX_ITERATIONS, stages + 1))
        if want != n:
            sk = _search(mod, fn, want, block, cluster, dict(params or {}), tiles, memo)
    return sk


_PARAM = re.compile(r"\((float )?parameter ([\w@-]+)\)")
# A float parameter compared in a branch (CUTLASS's `beta == 0`: whether the epilogue loads the
# source matrix C) is taken as FLOAT_VALUES[0], non-zero: the side that synchronizes more (C's
# loads and their mbarriers); `--param KEY=0` extracts the other side.
FLOAT_VALUES = (1.0, 0.0)


def _search(mod, fn, n, block, cluster, params, tiles, memo) -> Skeleton:
    try:
        return extract(mod, fn, iterations=n, block=block, cluster=cluster, params=params, tiles=tiles, memo=memo)
    except Refused as e:
        m = _PARAM.search(e.message)
        if m is None or m.group(2) in params:
            raise
        if m.group(1):
            return _with_float(mod, fn, n, block, cluster, params, m.group(2), e, tiles, memo)
        return _with_parameter(mod, fn, n, block, cluster, params, m.group(2), e, tiles, memo)


def _with_float(mod, fn, n, block, cluster, params, name, first_error, tiles, memo):
    for v in FLOAT_VALUES:
        try:
            return _search(mod, fn, n, block, cluster, {**params, name: v}, tiles, memo)
        except Refused:
            continue
    raise first_error


def _loop_count(sk: Skeleton) -> int:
    """How many times the busiest wait instruction of one role ran in one trip of its outer loop
    (`--tiles`; the whole run when it has none): the pipeline's iterations."""
    per_line: dict = {}
    for r in sk.roles:
        trips = max(r.trace.tiles.values(), default=1)
        for e in r.trace.events:
            if e.kind == "mb_wait":
                per_line[(r.name, e.line)] = per_line.get((r.name, e.line), 0) + 1
        for key in [k for k in per_line if k[0] == r.name]:
            per_line[key] = -(-per_line[key] // trips)
    return max(per_line.values(), default=0)


def _with_parameter(mod, fn, n, block, cluster, params, name, first_error, tiles, memo):
    """Extract with parameter `name` = n x B for the block size B (128, 64, 256, 32, 16 or 1, the
    usual first) that makes the pipeline run n iterations (else the closest that extracts)."""
    best = None
    found: dict = {}            # other parameters an earlier trial had to set (CUTLASS's beta): set them at once
    for b in (128, 64, 256, 32, 16, 1):
        trial = {**params, name: n * b}
        try:
            sk = None
            if found:       # the same parameters as the last trial found: the search below would set them
                try:
                    sk = extract(mod, fn, iterations=n, block=block, cluster=cluster, params={**trial, **found},
                                 tiles=tiles, memo=memo)
                except Refused:
                    sk = None
            if sk is None:
                sk = extract(mod, fn, iterations=n, block=block, cluster=cluster, params=trial, tiles=tiles, memo=memo)
        except Refused as e:
            m = _PARAM.search(e.message)
            if m is None:
                raise               # not about a parameter: another value would not help
            if m.group(2) in trial:
                continue
            try:
                sk = (_with_float if m.group(1) else _with_parameter)(mod, fn, n, block, cluster, trial,
                                                                      m.group(2), e, tiles, memo)
            except Refused:
                continue
            found.update({k: v for k, v in sk.params.items() if k not in trial})
        score = abs(_loop_count(sk) - n)
        if best is None or score < best[0]:
            best = (score, sk)
        if score == 0:
            break
    if best is None:
        raise first_error
    return best[1]
