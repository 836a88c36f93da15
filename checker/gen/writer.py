"""Writing a generated suite: one YAML file per family and index.tsv (every test with its file,
cycle, condition and expectation), streamed test by test so that memory stays bounded whatever
the number of tests. With a model, each test's expectation is the model's verdict on its cycle
condition, computed in batches (worker processes with jobs > 1), order preserved."""
from __future__ import annotations

import multiprocessing
from collections import Counter
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Callable, Iterator

from .. import limits as _limits
from .generate import SOURCE, family_shapes, family_tests
from .render import Test, expect_yaml
from .vocab import Selection

INDEX = "index.tsv"
INDEX_MAGIC = "# ptxmc gen"
SOURCE_MODEL = ("ptxmc gen (diy-style cycle generator): cycle {cycle}; the expectation is model-derived: "
                "the verdict of the model {model} computed by ptxmc, not derived independently from the PTX ISA")
BATCH = 256
PART_BYTES = _limits.DEFAULT.yaml_bytes // 2     # a family's file is split beyond this (see _Parts)


@dataclass(frozen=True)
class ModelSpec:
    model: str | None = None
    options: tuple[str, ...] = ()
    timeout: float | None = None
    jobs: int = 1

    @property
    def label(self) -> str:
        label = self.model or "ptx"
        if self.options:
            label += " with " + ", ".join(f"--option {o}" for o in self.options)
        return label


@dataclass
class Summary:
    families: dict[str, int] = field(default_factory=dict)
    verdicts: Counter = field(default_factory=Counter)
    problems: list[tuple[str, str]] = field(default_factory=list)   # (test, unknown/error message)

    @property
    def total(self) -> int:
        return sum(self.families.values())


def prepare(out: Path, policy=None) -> Path:
    """Make `out` ready, before the work (checker.outsafe's policy, as for every writer): a folder
    that is absent, empty or an earlier `ptxmc gen` output (its marker, or its index naming its
    files); anything else only with --force. The earlier output's files (regular files only, never
    a link) are removed; an entry that is not a regular file (a link, a FIFO, a device) where gen
    would write is refused rather than written through or blocked on. Returns the folder to write."""
    from .. import outsafe

    policy = policy or outsafe.Policy()
    real = outsafe._real(out, policy)
    if _legacy(real):                                    # written before the marker existed
        outsafe.claim_as(real, "gen")
    real = outsafe.check_folder(out, "gen", policy)
    index = real / INDEX
    try:
        earlier = set()
        if _regular(index) and _read_head(index).startswith(INDEX_MAGIC):
            earlier = {n for n in _listed(index) if "/" not in n and n.endswith(".yaml") and _regular(real / n)}
            earlier.add(INDEX)
        others = sorted(e.name for e in real.iterdir() if e.name not in earlier and e.name != outsafe.MARKER)
        if others and not policy.force:
            listed = ", ".join(outsafe._show(o) for o in others[:3]) + (f" and {len(others) - 3} more"
                                                                        if len(others) > 3 else "")
            raise outsafe.fail(out, f"the folder holds files that are not ptxmc gen's earlier output ({listed}); "
                                    "ptxmc replaces or deletes nothing it did not write: choose another folder, "
                                    "or pass --force to write ptxmc's files into it (nothing else is touched)")
        for name in sorted(earlier):
            (real / name).unlink()
    except OSError as e:
        raise outsafe.fail(out, e.strerror or str(e)) from None
    return real


def _regular(p: Path) -> bool:
    import os
    import stat

    try:
        return stat.S_ISREG(os.lstat(p).st_mode)
    except OSError:
        return False


def _read_head(index: Path) -> str:
    with index.open(encoding="utf-8", errors="replace") as f:
        return f.read(len(INDEX_MAGIC))


def _listed(index: Path) -> set[str]:
    files = set()
    with index.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.startswith("#") and "\t" in line:
                files.add(line.split("\t")[1])
    return files


def _legacy(folder: Path) -> bool:
    """An output of a ptxmc gen without the marker: only its index and the .yaml files it lists."""
    from .. import outsafe

    index = folder / INDEX
    if not _regular(index) or (folder / outsafe.MARKER).exists() or not _read_head(index).startswith(INDEX_MAGIC):
        return False
    listed = _listed(index) | {INDEX}
    try:
        return all(e.name in listed and _regular(e) for e in folder.iterdir())
    except OSError:
        return False


def write(sel: Selection, out: Path, spec: ModelSpec | None = None,
          progress: Callable[[int], None] | None = None, policy=None) -> Summary:
    summary = Summary()
    source = SOURCE if spec is None else SOURCE_MODEL.replace("{model}", spec.label.replace("'", "''"))
    pool = None
    judge = None
    if spec is not None:
        from . import model_verdict

        judge = model_verdict.Judge(spec.model, spec.options, spec.timeout)   # a bad model fails here
    out = prepare(out, policy)
    if spec is not None and spec.jobs > 1:
        pool = _context().Pool(spec.jobs, model_verdict.init_worker, (spec.model, spec.options, spec.timeout))
    try:
        with _open(out / INDEX, policy) as index:
            index.write(f"{INDEX_MAGIC}: {sel.describe()}\n")
            index.write("# name\tfile\tcycle\tcondition\texpect\n")
            for family, shapes_ in family_shapes(sel):
                n = 0
                with _Parts(out, family, policy) as parts:
                    for test, verdict in _judged(family_tests(shapes_, sel, source), judge, pool, f"{family}.yaml"):
                        expect = ""
                        if verdict is not None:
                            summary.verdicts[verdict.kind] += 1
                            if verdict.kind in ("allowed", "forbidden", "undefined"):
                                expect = expect_yaml(verdict.kind, test.condition)
                            else:
                                summary.problems.append((test.name, f"{verdict.kind}: {verdict.message}"))
                        fname = parts.write(test.yaml(expect))
                        index.write(f"{test.name}\t{fname}\t{test.cycle}\t{test.condition}\t"
                                    f"{verdict.kind if verdict else ''}\n")
                        n += 1
                        if progress:
                            progress(1)
                summary.families[family] = n
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
    return summary


class _Parts:
    """A family's YAML files: FAMILY.yaml, then FAMILY.part2.yaml, ... whenever the next test would
    take a file past PART_BYTES, so that `ptxmc run` reads every file under its default size
    limit (checker.limits yaml_bytes)."""

    def __init__(self, out: Path, family: str, policy=None):
        self.out, self.family, self.k, self.f, self.size = out, family, 0, None, 0
        self.policy = policy

    def __enter__(self) -> "_Parts":
        return self

    def __exit__(self, *exc) -> None:
        if self.f is not None:
            self.f.close()

    def write(self, text: str) -> str:
        """Write one test's YAML; the name of the file it went to."""
        size = len(text.encode("utf-8"))
        if self.f is None or (self.size + size > PART_BYTES and self.size > self.header):
            self._next()
        self.f.write(text)
        self.size += size
        return self.name

    def _next(self) -> None:
        if self.f is not None:
            self.f.close()
        self.k += 1
        self.name = f"{self.family}.yaml" if self.k == 1 else f"{self.family}.part{self.k}.yaml"
        self.f = _open(self.out / self.name, self.policy)
        head = (f"# Family {self.family}{'' if self.k == 1 else f' (part {self.k})'}: generated by ptxmc gen "
                f"(see docs/gen.md); {INDEX} lists every test with its file and cycle.\n")
        self.f.write(head)
        self.size = self.header = len(head.encode("utf-8"))


def _open(path: Path, policy):
    """A file of the output, opened as checker.outsafe opens a stream: a regular file only (a link,
    unless --follow-symlinks, or a FIFO or device put there meanwhile is refused, never blocked on)."""
    from .. import outsafe

    return outsafe.open_stream(path, policy or outsafe.Policy())


def _context():
    """forkserver where the platform has it (workers do not re-run the caller's main module), else spawn."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("forkserver")
    return multiprocessing.get_context("spawn")


def _judged(tests: Iterator[Test], judge, pool, fname: str):
    if judge is None:
        for t in tests:
            yield t, None
        return
    while True:
        batch = list(islice(tests, BATCH))
        if not batch:
            return
        items = [(t.body, t.condition) for t in batch]
        if pool is not None:
            from .model_verdict import judge_in_worker

            verdicts = pool.map(judge_in_worker, items, chunksize=8)
        else:
            verdicts = [judge(body, cond, fname) for body, cond in items]
        yield from zip(batch, verdicts)
