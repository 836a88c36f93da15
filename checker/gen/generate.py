"""The generator's pipeline without I/O: the cycles a Selection asks for, grouped by family in a
deterministic order, and every test of each family as a stream."""
from __future__ import annotations

from typing import Iterator

from . import families
from .annotate import variants
from .cycles import Shape, parse_cycle, shapes
from .render import Test, render
from .vocab import EDGE_ORDER, Selection

SOURCE = "ptxmc gen (diy-style cycle generator): cycle {cycle}; no expectation (run the test for the model verdict)"


def family_shapes(sel: Selection) -> list[tuple[str, list[Shape]]]:
    """(family, its cycles) in output order. The cycles themselves are few (hundreds); the tests
    they make are streamed by `family_tests`."""
    if sel.cycles:
        found: dict[tuple, Shape] = {}
        for c in sel.cycles:
            s = parse_cycle(c)
            found.setdefault(tuple(EDGE_ORDER[e.name] for e in s.edges), s)
        all_shapes = list(found.values())
    else:
        all_shapes = list(shapes(sel.edges, sel.size, sel.threads))
    by_family: dict[str, list[Shape]] = {}
    for s in all_shapes:
        by_family.setdefault(s.family, []).append(s)
    return [(f, by_family[f]) for f in sorted(by_family, key=families.sort_key)]


def family_tests(shapes_: list[Shape], sel: Selection, source: str = SOURCE) -> Iterator[Test]:
    for s in shapes_:
        for v in variants(s, sel):
            yield render(v, source)


def all_tests(sel: Selection, source: str = SOURCE) -> Iterator[Test]:
    for _, group in family_shapes(sel):
        yield from family_tests(group, sel, source)
