"""Text from the input that reaches a terminal or a document: control characters (C0, C1, DEL),
bidirectional overrides, zero-width and other invisible formatting characters, and line or
paragraph separators are escaped (`\\x1b`, `\\u202e`), so that a test or file name cannot restyle
a terminal, set its title, reorder what is shown, or forge an output line."""
from __future__ import annotations

import re
import unicodedata

# Unicode categories that are never shown as themselves: controls, formatting (bidi overrides,
# zero-width characters), surrogates, private use, unassigned, line and paragraph separators.
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_CANDIDATE = re.compile(r"[^\x20-\x7e]")


def unsafe(c: str) -> bool:
    """Is the character `c` one that must not reach a terminal as itself?"""
    return unicodedata.category(c) in UNSAFE_CATEGORIES


def escape_char(c: str) -> str:
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else (f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}")


def first_unsafe(s: str) -> str | None:
    """The first unsafe character of `s`, or None."""
    for m in _CANDIDATE.finditer(s):
        if unsafe(m.group()):
            return m.group()
    return None


def printable(s: str, newlines: bool = False) -> str:
    """`s` with every unsafe character escaped (`newlines`: keep line breaks as they are)."""
    def fix(m: re.Match) -> str:
        c = m.group()
        if newlines and c == "\n":
            return c
        return escape_char(c) if unsafe(c) else c

    return _CANDIDATE.sub(fix, s)
