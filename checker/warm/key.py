"""Which warm server may serve which caller, and what makes a server stale.

A caller's key is everything a command's output may depend on that is fixed once a Python
process has imported the checker: the interpreter (executable - its real file, as `python` and
`python3` name the same - prefix, version, flags, -W and -X options), where modules are found (sys.path after its first entry, which only names the
script's folder), the checker package's folder and version, and the environment variables
read as the interpreter or the checker starts (PYTHON*, LC_*, LANG, LANGUAGE, PTXMC_*; the rest
of the environment is the caller's own in the forked command). The server's socket is named by
a checksum of the key, and the server compares the whole key with its own before it serves.

A server is stale when what it imported is not what is on disk now (`Snapshot`): the content of
every source file of the package (Python and the cat grammar) and of every file of the bundled
models (axioms/), and the size, times and inode of every other module file it has loaded (the
standard library, z3, yaml, lark) and of every native library mapped into it (Z3's, loaded by
ctypes). The server takes the snapshot when it starts, compares before each command, and serves
only while nothing differs.
"""
from __future__ import annotations

import os
import sys
import zlib

from ..version import __version__

_ENV_PREFIXES = ("PYTHON", "LC_", "PTXMC_")
_ENV_NAMES = ("LANG", "LANGUAGE")
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def caller_key(environ=None) -> bytes:
    """This process's key (bytes): equal keys, same process state after import. It is the tuple's
    ascii(), the same text in every process: marshal's bytes were not (an object that something else
    in the process also held was written as a back-reference), so a caller that had imported less
    than the server named another socket."""
    env = os.environ if environ is None else environ
    names = sorted(k for k in env if (k.startswith(_ENV_PREFIXES) or k in _ENV_NAMES) and not k.startswith("PTXMC_WARM"))
    return ascii((__version__, PACKAGE_DIR, os.path.realpath(sys.executable), sys.prefix, sys.version, tuple(sys.flags),
                  tuple(sys.warnoptions), tuple(sorted(map(str, sys._xoptions.items()))),
                  tuple(sys.path[1:]), tuple((k, env[k]) for k in names))).encode("ascii")


def socket_dir() -> str:
    """The folder of the servers' sockets: $PTXMC_WARM_DIR, else ptxmc-warm-UID under
    $XDG_RUNTIME_DIR or /tmp."""
    given = os.environ.get("PTXMC_WARM_DIR")
    if given:
        return given
    return os.path.join(os.environ.get("XDG_RUNTIME_DIR") or "/tmp", f"ptxmc-warm-{os.getuid()}")


def socket_path(key: bytes, folder: str | None = None) -> str:
    return os.path.join(folder or socket_dir(), f"{zlib.crc32(key):08x}.sock")


def private(folder: str) -> bool:
    """Is `folder` a directory of this user that no one else may enter or write to?"""
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    return (st.st_mode & 0o170000) == 0o040000 and st.st_uid == os.getuid() and not st.st_mode & 0o077


def _roots() -> list[str]:
    from ..resources import AXIOMS_DIR

    return [PACKAGE_DIR, str(AXIOMS_DIR)]


def _watched(name: str, base: str, root: str) -> bool:
    """Is the file `name` in `base` one the snapshot compares (a package source or model file)?"""
    return root != PACKAGE_DIR or name.endswith((".py", ".lark"))


def _listing(base: str, root: str) -> tuple[list[str], list[str]] | None:
    """The sub-folders (less __pycache__) and compared files of `base`, sorted; None if unreadable."""
    try:
        entries = list(os.scandir(base))
    except OSError:
        return None
    dirs = sorted(e.name for e in entries if e.is_dir() and e.name != "__pycache__")
    files = sorted(e.name for e in entries if not e.is_dir() and _watched(e.name, base, root))
    return dirs, files


def _folders() -> dict[str, tuple[str, tuple[list[str], list[str]] | None]]:
    """Every folder of the package and the models: its root and its listing."""
    out = {}
    for root in _roots():
        todo = [root]
        while todo:
            base = todo.pop()
            listing = out[base] = (root, _listing(base, root))
            if listing[1] is not None:
                todo += [os.path.join(base, d) for d in listing[1][0]]
    return out


def _sources(folders) -> list[str]:
    return sorted({os.path.join(base, f) for base, (_, listing) in folders.items() if listing for f in listing[1]})


def _loaded_outside() -> list[str]:
    outside = {getattr(m, "__file__", None) for m in list(sys.modules.values())}
    try:                            # native libraries loaded without a module (Z3's, by ctypes)
        with open("/proc/self/maps") as f:
            outside |= {line.split(None, 5)[5].strip() for line in f if line.count(" ") >= 5 and ".so" in line}
    except (OSError, IndexError):
        pass
    return sorted(p for p in outside if isinstance(p, str) and not p.startswith(PACKAGE_DIR + os.sep))


def _stat(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


class Snapshot:
    """What a server has loaded, as it was when the server started: `stale()` says whether any
    of it differs now. A source or model file is compared by content (SHA-256; read again only
    when its size, times or inode changed), any other module file by size, modification time
    and inode; a file added to or removed from the package or the models is a change too (a
    folder's listing is read again only when the folder's own size, times or inode changed)."""

    def __init__(self):
        self.folders = _folders()
        self.folder_stats = {base: _stat(base) for base in self.folders}
        self.sources = _sources(self.folders)
        self.stats = {p: _stat(p) for p in self.sources}
        self.digests = {p: self._digest(p) for p in self.sources}
        self.outside = {p: _stat(p) for p in _loaded_outside()}

    @staticmethod
    def _digest(path: str) -> bytes | None:
        import hashlib

        try:
            with open(path, "rb") as f:
                return hashlib.sha256(f.read()).digest()
        except OSError:
            return None

    def stale(self) -> str | None:
        """None while everything is as loaded; else the first file that changed."""
        for path, st in self.outside.items():
            if _stat(path) != st:
                return path
        for base, st in self.folder_stats.items():
            now = _stat(base)
            if now != st:
                root, listing = self.folders[base]
                if now is None or _listing(base, root) != listing:
                    return f"{base}: a file or folder added or removed"
                self.folder_stats[base] = now       # (an entry that is not compared came or went)
        for path, st in self.stats.items():
            now = _stat(path)
            if now != st:
                if self._digest(path) != self.digests[path]:
                    return path
                self.stats[path] = now          # touched, not changed
        return None
