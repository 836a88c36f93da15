"""Positions and comments in cat source text, without the parser (lark): the comments blanked out
(checker.cat.parse parses what is left; checker.cat.captions reads a definition's comment), and
the SourceLoc of a position or line, its text shortened for messages."""
from __future__ import annotations

from ..errors import ModelError, SourceLoc

_MAX_TEXT = 100


def _blank_comments(text: str, path: str) -> tuple[str, list[tuple[int, int]]]:
    """Text with every comment replaced by spaces (newlines kept), and the comments' spans."""
    out = list(text)
    spans: list[tuple[int, int]] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == '"':
            close, eol = text.find('"', i + 1), text.find("\n", i + 1)
            i = close + 1 if close >= 0 and (eol < 0 or close < eol) else i + 1
        elif text.startswith("(*", i):
            start, depth = i, 0
            while i < n:
                if text.startswith("(*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*)", i):
                    depth, i = depth - 1, i + 2
                    if depth == 0:
                        break
                else:
                    i += 1
            if depth:
                raise ModelError("unterminated comment", _where(path, text, start))
            spans.append((start, i))
            for k in range(start, i):
                if out[k] != "\n":
                    out[k] = " "
        else:
            i += 1
    return "".join(out), spans


def _snippet(text: str) -> str:
    head = text[: 8 * _MAX_TEXT]              # a long line (a 20,000-term union) is not split whole per name
    s = " ".join(head.split())
    if len(s) <= _MAX_TEXT < len(text):       # mostly blanks (a comment): look at all of it
        s = " ".join(text.split())
    return s if len(s) <= _MAX_TEXT else s[: _MAX_TEXT - 3] + "..."


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _where(path: str, text: str, pos: int) -> SourceLoc:
    line = _line_of(text, pos)
    return _line_loc(path, text, line)


def _line_loc(path: str, text: str, line: int) -> SourceLoc:
    lines = text.split("\n")
    return SourceLoc(path, line, _snippet(lines[line - 1]) if 0 < line <= len(lines) else "")
