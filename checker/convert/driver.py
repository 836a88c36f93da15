"""Running an importer over files and folders: find the sources, convert each, give every test a
unique name, check the result with ptxmc's own loader and lowering, write the YAML files and
the report.

A test counts as converted only if its YAML loads with checker.front.litmus.load_text and lowers to
events (checker.isa.registry.lower): what ptxmc would refuse when checking it is reported here, against the
source line it came from, instead. One bad file never stops the others.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from .. import limits
from ..errors import CheckerError, LitmusError, SourceLoc
from . import dat3m, herd, mixedproxy
from ..front.files import suite_files
from ..textsafe import printable
from .emit import stated, to_yaml_mapped
from .model import Code, Converted, Skipped, TestIR, Unconvertible

IMPORTERS = {
    "herd": (herd.convert, (".litmus",)),
    "dat3m": (dat3m.convert, (".litmus",)),
    "mixedproxy": (mixedproxy.convert, (".test",)),
}
REPORT = "import-report.txt"


@dataclass(frozen=True)
class Source:
    file: Path
    shown: str          # the path written into `source:` and the report (independent of the cwd)
    out: str            # the output file, relative to the output folder


@dataclass(frozen=True)
class ImportRun:
    fmt: str
    files: int
    converted: tuple[Converted, ...]
    skipped: tuple[Skipped, ...]

    def report(self) -> str:
        lines = [f"ptxmc import --from {self.fmt}: {self.files} file{'s' if self.files != 1 else ''}, "
                 f"{len(self.converted)} test{'s' if len(self.converted) != 1 else ''} converted, "
                 f"{len(self.skipped)} skipped", ""]
        if self.converted:
            lines.append("converted (expect: 'stated' = the source file's claim, copied; 'none' = the file "
                         "states no verdict, ask ptxmc check):")
            for c in self.converted:
                lines.append(printable(f"  {c.path} -> {c.out}  {c.name}  [{c.verdict}]"))
                lines += [printable(f"      note: {n}") for n in c.notes]
            lines.append("")
        if self.skipped:
            lines.append("skipped (not converted; the reason and the source line):")
            lines += [f"  {s.line()}" for s in self.skipped]
            lines.append("")
        return "\n".join(lines)


def sources(paths, suffixes: tuple[str, ...]) -> tuple[list[Source], list[Skipped]]:
    out, missing, taken = [], [], set()
    for arg in map(Path, paths):
        if arg.is_dir():
            files = suite_files(arg, suffixes)     # its own stack: a folder of any depth
            pairs = [(f, f.relative_to(arg)) for f in files]
            prefix = arg.resolve().name
        elif arg.is_file():
            pairs, prefix = [(arg, Path(arg.name))], ""
        else:
            missing.append(Skipped(str(arg), "", LitmusError("no such file or folder", SourceLoc(str(arg), 0))))
            continue
        for f, rel in pairs:
            target = rel.with_suffix(".yaml").as_posix()
            stem, n = target[:-5], 2
            while target in taken:
                target, n = f"{stem}-{n}.yaml", n + 1
            taken.add(target)
            out.append(Source(f, f"{prefix}/{rel.as_posix()}" if prefix else rel.as_posix(), target))
    return out, missing


def import_paths(paths, fmt: str) -> ImportRun:
    """Convert every source file under `paths` (nothing is written)."""
    convert, suffixes = IMPORTERS[fmt]
    srcs, skipped = sources(paths, suffixes)
    irs: list[tuple[Source, TestIR]] = []
    for src in srcs:
        try:
            text = _read(src)
            irs.append((src, convert(text, src.shown)))
        except LitmusError as e:
            skipped.append(Skipped(src.shown, _name_in(src), e))
    converted = []
    names: dict[str, str] = {}
    for src, ir in irs:
        ir = _unique(ir, names)
        result = validate(ir, src.out)
        (converted if isinstance(result, Converted) else skipped).append(result)
    skipped.sort(key=lambda s: s.path)          # stable: a file's own order is kept
    return ImportRun(fmt, len(srcs), tuple(converted), tuple(skipped))


def import_text(text: str, fmt: str, path: str = "<string>") -> Converted | Skipped:
    """Convert one source text (the Python entry point; nothing is written)."""
    try:
        ir = IMPORTERS[fmt][0](text, path)
    except LitmusError as e:
        return Skipped(path, "", e)
    return validate(ir, re.sub(r"\.\w+$", "", Path(path).name) + ".yaml")


def validate(ir: TestIR, out: str) -> Converted | Skipped:
    """The YAML of `ir`, if ptxmc's loader and lowering accept it; else why not, at the source line."""
    from ..front.litmus import load_text
    from ..isa.registry import lower
    from ..unfold.variants import one_variant

    try:
        text, where = to_yaml_mapped(ir)
    except Unconvertible as e:
        return Skipped(ir.path, ir.name, e)
    items = load_text(text, out)
    try:
        if len(items) != 1:
            raise LitmusError(f"expected one test, got {len(items)}", SourceLoc(out, 1))
        if isinstance(items[0], CheckerError):
            raise items[0]
        variant = one_variant(items[0])
        if variant is not None:         # else asked over its variants (a hang is a finding)
            lower(variant)
    except CheckerError as e:
        return Skipped(ir.path, ir.name, _at_source(e, where, ir))
    return Converted(ir.path, ir.name, out, text, ir.notes, "stated" if stated(ir) else "none")


def _at_source(e: CheckerError, where: dict[int, Code], ir: TestIR) -> Unconvertible:
    line = e.where.line if e.where else 0
    code = where.get(line)
    if code is not None:
        shown = f" (translated to '{code.text}')" if code.text != code.original.strip() else ""
        return Unconvertible(f"ptxmc does not accept it{shown}: {e.message}",
                             SourceLoc(ir.path, code.line, code.original))
    return Unconvertible(f"ptxmc does not accept the converted test: {e.message}", SourceLoc(ir.path, ir.line, ir.name))


def _unique(ir: TestIR, names: dict[str, str]) -> TestIR:
    name = re.sub(r"\s+", "_", ir.name.strip()) or "test"
    new, n = name, 2
    while new in names:
        new, n = f"{name}-{n}", n + 1
    notes = ir.notes
    if new != ir.name:
        why = f" (the name is also used by {names[name]})" if name in names else ""
        notes += (f"renamed from '{ir.name}'{why}",)
    names[new] = ir.path
    return replace(ir, name=new, notes=notes)


def _read(src: Source) -> str:
    try:
        text, size = limits.read_text(src.file, limits.current().yaml_bytes)
    except UnicodeDecodeError:
        raise Unconvertible("not a UTF-8 text file", SourceLoc(src.shown, 0)) from None
    except OSError as e:
        raise Unconvertible(f"cannot read: {e.strerror}", SourceLoc(src.shown, 0)) from None
    if text is None:
        raise Unconvertible(f"too large: a file of more than {size - 1} bytes", SourceLoc(src.shown, 1))
    return text


def _name_in(src: Source) -> str:
    """The test's name for the report, when the file cannot be converted."""
    if src.file.suffix == ".test":
        return src.file.stem
    try:
        first = next(line for line in _read(src).splitlines() if line.strip())
    except (Unconvertible, StopIteration):
        return ""
    parts = first.split()
    return parts[1] if len(parts) > 1 else ""


def write(run: ImportRun, out_dir: str | Path) -> Path:
    """Write each converted test and the report (each file atomically); return the report's path."""
    out = Path(out_dir)
    for c in run.converted:
        write_atomic(out / c.out, c.yaml)
    write_atomic(out / REPORT, run.report())
    return out / REPORT


def write_atomic(path: Path, text: str) -> None:
    """Atomically, a regular file only (checker.outsafe.write_file)."""
    from ..outsafe import write_file

    write_file(path, text)
