"""Output safety: the one policy every writer of ptxmc follows (`run -o`, `--results-jsonl`,
`check --dot`, `diff -o`, `report --out`, `gen -o`, `hw ... -o`, `hw import -o/--json`,
`import/export -o`, `fix --apply`; `fix --in-place` edits its input: check_in_place /
replace_in_place).

    1. Nothing ptxmc did not create is deleted or replaced. A folder ptxmc writes carries a
       marker file (MARKER: the tool, the kind of folder and, for a report, the files it wrote).
       A report replaces an existing folder only when that folder holds nothing but an earlier
       report's files; a folder of any other content is refused unless --force, and even then
       ptxmc only writes its own files into it and deletes nothing else.
    2. Only regular files are written. A device, a FIFO or a socket at the target is refused (as
       root, replacing a /dev/null-like node would break the machine); so is a symbolic link,
       unless --follow-symlinks, which writes to the file the link points to (never replacing the
       link). An existing regular file at a file target is replaced, as `-o` does everywhere.
    3. An output is never one of the inputs, and a folder output never holds an input or the
       current folder. The inputs are every file the command reads: the tests, and also the model
       file with its includes (--model), the cost file (--cost), the histograms (--hw, hw
       import) and a device configuration file (hw --device FILE.toml).
    4. Every target is checked, and its folder test-written, before the work starts: a run never
       ends in an unwritable output after the work is done.
    5. An I/O failure is an OutputError, printed as `ptxmc: cannot write PATH: REASON` (exit 2),
       never an internal error.

Files are written atomically (a temporary file beside the target, renamed over it), folders as
a whole (a temporary folder renamed into place; the old one moved aside and removed last), so
that after a crash or Ctrl-C there is the old output or the new one, never half of one.
"""
from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from .errors import CheckerError

# (json, shutil, tempfile and zlib are imported where they are used: `ptxmc check` imports this
# module for its policy on every run, and writes a file only with --dot)

MARKER = ".ptxmc-output"
# Reports written before the marker existed: a report.json of this format, and only these files.
_LEGACY_REPORT_FILES = ("index.html", "report.md", "report.json", "junit.xml", "screenshot.png")


class OutputError(CheckerError):
    """An output cannot be written where it was asked for (exit 2, not an internal error)."""


@dataclass(frozen=True)
class Policy:
    """How a command may write: `force` lets a folder that is not ptxmc's receive ptxmc's files
    (nothing else in it is touched); `follow_symlinks` writes through a symbolic link to its
    target; `inputs` are the files and folders the command reads."""

    force: bool = False
    follow_symlinks: bool = False
    inputs: tuple[str, ...] = ()


def policy_of(args, inputs: Iterable[str] = ()) -> Policy:
    """The Policy of a parsed command line (its --force / --follow-symlinks, if it has them)."""
    return Policy(bool(getattr(args, "force", False)), bool(getattr(args, "follow_symlinks", False)),
                  tuple(str(p) for p in inputs))


def fail(path, reason: str) -> OutputError:
    return OutputError(f"cannot write {_show(path)}: {reason}")


def _show(path) -> str:
    from .textsafe import printable

    return printable(str(path)) if str(path) else "''"


_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"), (stat.S_ISREG, "a regular file"))


def _kind(mode: int) -> str:
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def _lstat(p: Path) -> os.stat_result | None:
    try:
        return os.lstat(p)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise fail(p, e.strerror) from None


def _real(path, policy: Policy) -> Path:
    """The path to write: `path`, or the file its symbolic link points to (--follow-symlinks)."""
    p = Path(path)
    if not str(path):
        raise fail(path, "an empty path")
    st = _lstat(p)
    if st is not None and stat.S_ISLNK(st.st_mode):
        if not policy.follow_symlinks:
            raise fail(p, f"it is a symbolic link (to {_show(os.readlink(p))}); ptxmc does not replace links "
                          "(--follow-symlinks writes to the file it points to)")
        return Path(os.path.realpath(p))
    return p


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def _inside(inner: Path, outer: Path) -> bool:
    """Is `inner` `outer` or somewhere below it (after resolving links)?"""
    try:
        i, o = Path(os.path.realpath(inner)), Path(os.path.realpath(outer))
    except OSError:
        return False
    return i == o or o in i.parents


def check_file(path, policy: Policy = Policy(), probe: bool = True) -> Path:
    """Check a file output before the work: a regular file or nothing at the target (a link only
    with --follow-symlinks), not an input, and a folder that can take it (created if missing, and
    test-written when `probe`). Returns the path to write; OutputError otherwise."""
    real = _real(path, policy)
    st = _lstat(real)
    if st is not None:
        if not stat.S_ISREG(st.st_mode):
            extra = "" if stat.S_ISDIR(st.st_mode) else "; ptxmc writes regular files only"
            raise fail(path, f"it is {_kind(st.st_mode)}{extra}")
        for i in policy.inputs:
            if Path(i).exists() and _same(real, Path(i)):
                raise fail(path, f"it is one of the inputs ({_show(i)})")
    if probe:
        _probe_folder(real.parent if str(real.parent) else Path("."), path)
    return real


def makedirs(folder: Path) -> None:
    """`folder` and its missing parents, made top-down with a loop: Path.mkdir(parents=True) and
    os.makedirs recurse once per level (a 1,200-level output - an import of a folder that deep -
    exhausted Python's stack). OSError as they raise it."""
    missing = []
    p = Path(folder)
    while not p.is_dir():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir()
        except FileExistsError:
            if not d.is_dir():
                raise


def _probe_folder(folder: Path, shown) -> None:
    """Create `folder` if missing and prove a file can be created in it."""
    import tempfile

    try:
        makedirs(folder)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".ptxmc-probe.", suffix=".tmp")
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        where = f" (in {_show(folder)})" if e.filename is None or Path(str(e.filename)) != Path(str(shown)) else ""
        raise fail(shown, f"{e.strerror or e}{where}") from None


def write_file(path, data: str | bytes, policy: Policy = Policy()) -> Path:
    """Write `data` to a file output atomically (checked again just before: never a special file,
    a link unless followed, or an input)."""
    real = check_file(path, policy, probe=False)
    try:
        makedirs(real.parent)
    except OSError as e:
        raise fail(path, e.strerror or str(e)) from None
    umask = os.umask(0)
    os.umask(umask)
    return _replace(path, real, data, 0o666 & ~umask)    # mkstemp makes 0600; the output is an ordinary file


def _replace(path, real: Path, data: str | bytes, mode: int, last_check=None) -> Path:
    """`data` written to a temporary file beside `real`, given `mode`, passed to last_check(tmp)
    (which may refuse) and renamed over `real`: the file is the old one or the new one, whole.
    An OSError is an OutputError for `path`; the temporary file never stays."""
    import tempfile

    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w",
                       **({} if isinstance(data, bytes) else {"encoding": "utf-8", "newline": "\n"})) as f:
            f.write(data)
        os.chmod(tmp, mode)
        if last_check is not None:
            last_check(tmp)
        os.replace(tmp, real)
        tmp = None
    except OSError as e:
        raise fail(path, e.strerror or str(e)) from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
    return real


def check_in_place(path, policy: Policy = Policy()) -> Path:
    """Check, before the work, a file that is to be edited in place (`fix --in-place`): a regular
    file (a link only with --follow-symlinks), writable by its mode, with one name (replacing
    a file with hard links would leave its other names with the old text), in a folder where a
    file can be created. Returns the path to write; OutputError otherwise."""
    real = _real(path, policy)
    st = _lstat(real)
    if st is None:
        raise fail(path, "it does not exist")
    if not stat.S_ISREG(st.st_mode):
        raise fail(path, f"it is {_kind(st.st_mode)}; ptxmc edits regular files only")
    if not st.st_mode & stat.S_IWUSR:
        raise fail(path, f"it is read-only (mode {stat.S_IMODE(st.st_mode):04o}); ptxmc does not edit it in place")
    if st.st_nlink > 1:
        raise fail(path, f"it has {st.st_nlink} hard links: replacing it would leave the other names with the "
                         "old text (write the fixed copy elsewhere: -o FILE)")
    _probe_folder(real.parent if str(real.parent) else Path("."), path)
    return real


def replace_in_place(path, data: str, original: bytes, policy: Policy = Policy()) -> Path:
    """Edit a file in place as an editor saves it: checked again (check_in_place); refused if it
    no longer holds `original`, the bytes it was read with (someone edited it meanwhile); the new
    text is written to a temporary file beside it, given the file's mode (and owner, where that
    is allowed) and renamed over it, so that the file is the old one or the new one, whole."""
    real = check_in_place(path, policy)
    st = os.stat(real)

    def unchanged(tmp: str) -> None:
        try:
            os.chown(tmp, st.st_uid, st.st_gid)
        except OSError:
            pass                            # not ours to give away: the file becomes the user's own
        with open(real, "rb") as f:
            now = f.read(len(original) + 1)
        if now != original:
            raise fail(path, "it changed since ptxmc read it (edited meanwhile?): nothing written; run the "
                             "command again on the new text")

    return _replace(path, real, data, stat.S_IMODE(st.st_mode), unchanged)


def open_stream(path, policy: Policy = Policy(), append: bool = False):
    """A text file opened for writing line by line (--results-jsonl): the same checks, and the
    opened file itself must be a regular file (a FIFO or device put there meanwhile is refused
    without blocking). `append`: go on after what it holds (run --resume) instead of emptying it."""
    real = check_file(path, policy)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (os.O_APPEND if append else 0)
    if not policy.follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(real, flags, 0o666)
    except OSError as e:
        raise fail(path, e.strerror or str(e)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise fail(path, f"it is {_kind(st.st_mode)}; ptxmc writes regular files only")
        os.set_blocking(fd, True)
        if not append:
            os.ftruncate(fd, 0)
        return os.fdopen(fd, "a" if append else "w", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


# ---------------------------------------------------------------------------------- folders --

def _marker(kind: str, files: Iterable[str] = ()) -> str:
    import json

    return json.dumps({"tool": "ptxmc", "kind": kind, "files": sorted(files)}, indent=1) + "\n"


def _read_marker(folder: Path) -> dict | None:
    import json

    m = folder / MARKER
    try:
        if not stat.S_ISREG(os.lstat(m).st_mode):
            return None
        doc = json.loads(m.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("tool") == "ptxmc" else None


def _contents(folder: Path) -> set[str]:
    """Every entry below `folder`, as relative posix paths (folders end in '/'), links not followed."""
    out: set[str] = set()
    stack = [folder]
    while stack:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            rel = Path(e.path).relative_to(folder).as_posix()
            if e.is_dir(follow_symlinks=False):
                out.add(rel + "/")
                stack.append(Path(e.path))
            else:
                out.add(rel)
    return out


def _report_files(folder: Path) -> set[str] | None:
    """The files of an earlier report in `folder` (None: not a ptxmc report)."""
    import json

    doc = _read_marker(folder)
    if doc is not None:
        return set(doc.get("files") or ()) if doc.get("kind") == "report" else None
    try:                                          # a report written before the marker existed
        legacy = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(legacy, dict) or legacy.get("format") != "ptxmc-report":
        return None
    files = {f for f in _contents(folder) if not f.endswith("/")}
    ok = all(f in _LEGACY_REPORT_FILES or (f.startswith("dot/") and f.endswith(".dot")) for f in files)
    return files if ok else None


def _extra(folder: Path, ours: set[str]) -> list[str]:
    """What `folder` holds beyond the files `ours` (and their folders, and the marker)."""
    dirs = {p.rsplit("/", 1)[0] + "/" for f in ours for p in _prefixes(f)}
    return sorted(c for c in _contents(folder) if c not in ours and c not in dirs and c != MARKER)


def _prefixes(f: str):
    parts = f.split("/")
    for k in range(1, len(parts)):
        yield "/".join(parts[:k]) + "/x"


def check_folder(path, kind: str, policy: Policy = Policy(), replaces: bool = False) -> Path:
    """Check a folder output before the work. `kind` names the writer (report, hw, import,
    export); `replaces`: the writer replaces the folder as a whole (a report). Returns the folder
    to write (created when the writer fills it file by file); OutputError otherwise."""
    real = _real(path, policy)
    st = _lstat(real)
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise fail(path, f"it is {_kind(st.st_mode)}, not a folder")
    try:
        cwd = Path.cwd()
    except OSError:
        cwd = None
    if replaces and cwd is not None and _inside(cwd, real):
        raise fail(path, "it holds the current folder")
    for i in policy.inputs:
        if Path(i).exists() and _inside(Path(i), real):
            raise fail(path, f"it holds an input ({_show(i)})")
    if st is not None:
        _check_ownership(real, path, kind, policy, replaces)
    if replaces:
        _probe_folder(real.parent if str(real.parent) else Path("."), path)
    else:
        _probe_folder(real, path)
        claim(real, kind)
    return real


def _check_ownership(real: Path, shown, kind: str, policy: Policy, replaces: bool) -> None:
    contents = _contents(real)
    if not contents:
        return
    if replaces:
        ours = _report_files(real)
        extra = _extra(real, ours) if ours is not None else sorted(contents)
    else:
        doc = _read_marker(real)
        extra = [] if doc is not None and doc.get("kind") == kind else sorted(contents)
    if extra and not policy.force:
        listed = ", ".join(_show(e) for e in extra[:3]) + (f" and {len(extra) - 3} more" if len(extra) > 3 else "")
        what = "an earlier report's files" if replaces else f"ptxmc's {kind} output"
        raise fail(shown, f"the folder holds files that are not {what} ({listed}); ptxmc replaces or deletes "
                          "nothing it did not write: choose another folder, empty it, or pass --force to write "
                          "ptxmc's files into it (nothing else in it is touched)")


def claim(folder: Path, kind: str) -> None:
    """Mark a folder that ptxmc fills file by file as ptxmc's (only when it is empty or already
    marked as this kind: a folder of other content, written into under --force, stays unmarked)."""
    doc = _read_marker(folder)
    if doc is not None or _contents(folder):
        return
    write_file(folder / MARKER, _marker(kind))


def claim_as(folder: Path, kind: str) -> None:
    """Mark `folder` as ptxmc's `kind` output: for a writer that recognised its own earlier output,
    written before the marker existed (gen: an index naming every file there)."""
    if _read_marker(folder) is None:
        write_file(folder / MARKER, _marker(kind))


def write_tree(out, files: dict[str, str | bytes], policy: Policy = Policy(), kind: str = "report") -> Path:
    """Write `files` (relative name -> text or bytes) as the folder `out`, with its marker.

    The usual case - no folder there, an empty one, or an earlier report - is atomic: a temporary
    folder beside `out` is filled and renamed into place (the old one moved aside first, removed
    last); on any exception, KeyboardInterrupt included, the temporary folder is removed and `out`
    is left as it was. A folder holding anything else is refused (check_folder) unless
    policy.force, and then ptxmc's files are written into it one by one (each atomically): the
    files of an earlier report that the new one lacks are removed, nothing else is touched."""
    import shutil
    import tempfile

    for name in files:
        if not _safe_relative(name):
            raise fail(Path(out) / name, "not a plain relative file name")
    real = check_folder(out, kind, policy, replaces=True)
    names = set(files) | {MARKER}
    everything = {**files, MARKER: _marker(kind, files)}
    if real.exists() and _contents(real):
        ours = _report_files(real)
        if ours is None or _extra(real, ours):            # force (check_folder refused otherwise)
            return _write_into(real, everything, ours or set(), names, out)
    tmp = old = None
    try:
        tmp = Path(tempfile.mkdtemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tmp"))
        for name, data in sorted(everything.items()):
            p = tmp / name
            makedirs(p.parent)
            if isinstance(data, bytes):
                p.write_bytes(data)
            else:
                p.write_text(data, encoding="utf-8", newline="\n")
        os.chmod(tmp, 0o755)
        if real.exists():
            old = real.parent / f".{real.name}.{os.getpid()}.old"
            if old.exists():
                shutil.rmtree(old)
            os.replace(real, old)
        os.replace(tmp, real)
        tmp = None
    except OSError as e:
        _restore(real, old)
        raise fail(out, e.strerror or str(e)) from None
    except BaseException:
        _restore(real, old)
        raise
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return real


def _restore(real: Path, old: Path | None) -> None:
    if old is not None and old.exists() and not real.exists():
        os.replace(old, real)


def _write_into(real: Path, files: dict, ours: set[str], names: set[str], shown) -> Path:
    for name, data in sorted(files.items()):
        write_file(real / name, data)
    for stale in sorted(ours - names):
        p = real / stale
        if _safe_relative(stale) and p.is_file() and not p.is_symlink():
            p.unlink()
    return real


def _safe_relative(name: str) -> bool:
    parts = name.split("/")
    return bool(name) and not name.startswith("/") and all(p not in ("", ".", "..") for p in parts)


# ------------------------------------------------------------------------------- file names --

_UNSAFE = re.compile(r"[^A-Za-z0-9_.+-]")


def safe_filename(name: str) -> str:
    """A file name for a test name, distinct for distinct names: the name itself when it is made
    of letters, digits and `_.+-` only (and is not `.`/`..`-like), else the name with every other
    character replaced by `_` and a short hash of the original appended (`X/Y` -> `X_Y-1a2b3c4d`,
    so it no longer collides with the test named `X_Y`)."""
    import zlib

    plain = _UNSAFE.sub("_", name).strip(".")
    if plain == name and plain:
        return plain
    return f"{plain or 'test'}-{zlib.crc32(name.encode('utf-8', 'surrogatepass')):08x}"
