"""A digest of the Z3 encodings of test suites: the SHA-256 of every solver's assertions (as
SMT-LIB text, engine after engine in input order), so that a change meant only to build the
encoding faster can show it builds the very same formulas.

    python bench/encoding_digest.py [PATHS...] [--model NAME] [--per-test]

Run it before and after the change (in two worktrees): the same digest means every test got
byte-identical assertions. --per-test also prints one digest per test, to find those that differ.
"""
from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from checker import LITMUS_DIR  # noqa: E402
from checker.engines import smt  # noqa: E402
from checker.errors import LitmusError  # noqa: E402
from checker.front.litmus import load_paths  # noqa: E402
from checker.resources import resolve_model  # noqa: E402
from checker.verdict.check import check_test  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", default=[str(LITMUS_DIR)])
    ap.add_argument("--model", default=None)
    ap.add_argument("--per-test", action="store_true")
    args = ap.parse_args()

    texts: list[bytes] = []
    built = smt.Z3Engine.__init__

    def digesting(self, *a, **k):
        built(self, *a, **k)
        texts.append(self.solver.sexpr().encode())

    smt.Z3Engine.__init__ = digesting
    model = resolve_model(args.model)
    total = hashlib.sha256()
    engines = tests = 0
    for item in load_paths(args.paths):
        if isinstance(item, LitmusError):
            continue
        texts.clear()
        check_test(item, model)     # (a test judged path by path builds one engine per path)
        one = hashlib.sha256()
        for text in texts:
            one.update(text)
            total.update(text)
        engines, tests = engines + len(texts), tests + 1
        if args.per_test:
            print(f"{one.hexdigest()[:16]}  {item.where.path}::{item.name}")
    print(f"{engines} engines for {tests} tests: {total.hexdigest()}")


if __name__ == "__main__":
    main()
