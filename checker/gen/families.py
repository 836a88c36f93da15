"""Family names: the conventional names of the classic cycle shapes (diy's and the litmus
literature's), and a systematic name for every other shape.

A shape (skeleton) is the cyclic sequence of threads, each written as the kinds of its accesses
in program order (W, R) followed by the external communication edge that leaves it. The internal
edges of a thread (Pod, Pos, Rfi, ...) and every annotation are not part of the family: they make
the rest of a test's name."""
from __future__ import annotations

Skeleton = tuple[tuple[str, str], ...]     # ((kinds, external edge), ...) in thread order

# name -> the conventional thread order (P0 first).
NAMED: dict[str, Skeleton] = {
    "MP": (("WW", "Rfe"), ("RR", "Fre")),
    "SB": (("WR", "Fre"), ("WR", "Fre")),
    "LB": (("RW", "Rfe"), ("RW", "Rfe")),
    "S": (("WW", "Rfe"), ("RW", "Coe")),
    "R": (("WW", "Coe"), ("WR", "Fre")),
    "2+2W": (("WW", "Coe"), ("WW", "Coe")),
    "CoRR": (("W", "Rfe"), ("RR", "Fre")),
    "WRC": (("W", "Rfe"), ("RW", "Rfe"), ("RR", "Fre")),
    "WWC": (("W", "Rfe"), ("RW", "Rfe"), ("RW", "Coe")),
    "RWC": (("W", "Rfe"), ("RR", "Fre"), ("WR", "Fre")),
    "ISA2": (("WW", "Rfe"), ("RW", "Rfe"), ("RR", "Fre")),
    "W+RWC": (("WW", "Rfe"), ("RR", "Fre"), ("WR", "Fre")),
    "3.SB": (("WR", "Fre"),) * 3,
    "3.LB": (("RW", "Rfe"),) * 3,
    "3.2W": (("WW", "Coe"),) * 3,
    "IRIW": (("W", "Rfe"), ("RR", "Fre"), ("W", "Rfe"), ("RR", "Fre")),
    "4.SB": (("WR", "Fre"),) * 4,
    "4.LB": (("RW", "Rfe"),) * 4,
    "4.2W": (("WW", "Coe"),) * 4,
}
ORDER = {name: i for i, name in enumerate(NAMED)}

_ABBR = {"Rfe": "rf", "Fre": "fr", "Coe": "co"}


def rotations(sk: Skeleton) -> list[Skeleton]:
    return [sk[i:] + sk[:i] for i in range(len(sk))]


def _canon(sk: Skeleton) -> Skeleton:
    return min(rotations(sk))


_BY_CANON = {_canon(sk): name for name, sk in NAMED.items()}


def family_of(sk: Skeleton) -> tuple[str, Skeleton]:
    """(family name, the skeleton rotation whose first thread is P0)."""
    canon = _canon(sk)
    name = _BY_CANON.get(canon)
    if name is not None:
        return name, NAMED[name]
    return ".".join(f"{kinds}.{_ABBR[ext]}" for kinds, ext in canon), canon


def sort_key(family: str) -> tuple:
    """Named families first, in the table's order, then the others by name."""
    return (0, ORDER[family], "") if family in ORDER else (1, 0, family)
