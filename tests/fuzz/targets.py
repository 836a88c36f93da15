"""The fuzz targets: what is generated, which invariant check it goes through, and how many
inputs the CI run gives it (tests/cli/test_fuzz.py; the campaign scales the same shares up).

The CI budgets add up to at least 2,000 inputs; the cheap front-end targets take most of them,
the targets that run Z3 or load a whole model take few.
"""
from __future__ import annotations

import atexit
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from hypothesis import strategies as st

from . import props, strategies as S


@dataclass(frozen=True)
class Target:
    name: str
    strategy: Callable[[], st.SearchStrategy]
    check: Callable[[object], None]
    ci_budget: int
    doc: str


_TMP: list[Path] = []


def _tmp() -> Path:
    if not _TMP:
        _TMP.append(Path(tempfile.mkdtemp(prefix="ptxmc-fuzz-")))
        atexit.register(shutil.rmtree, _TMP[0], True)
    return _TMP[0]


def _instruction(text: str) -> None:
    props.check_instruction(text, run=hash_bucket(text, 4))


def _condition(text: str) -> None:
    props.check_condition(text, run=hash_bucket(text, 8))


def _yaml(text: str) -> None:
    props.check_litmus_text(text, "fuzz/generated.yaml", run=1)


def _raw(text: str) -> None:
    props.check_litmus_text(text, "fuzz/raw.yaml", run=1)


def _mutant(arg) -> None:
    name, text, line = arg
    props.check_litmus_text(text, name, run=1, near_line=line + 1)


def _cat(text: str) -> None:
    props.check_cat_text(text, "fuzz.cat", run=True)


def _cat_mutant(arg) -> None:
    name, text = arg
    props.check_cat_text(text, name, run=True)


def _cli(arg) -> None:
    name, text, _line = arg
    props.check_cli_file(_tmp(), text)


def _differential(doc) -> None:
    import yaml

    props.check_engines_agree(yaml.safe_dump(doc, sort_keys=False))


def _grammar(doc) -> None:
    from . import grammar

    props.check_valid_test(grammar.dump(doc), twice=hash_bucket(repr(doc), 3))


def _metamorphic(arg) -> None:
    doc, seed = arg
    props.check_metamorphic(doc, seed)


def _permutation(arg) -> None:
    docs, order, jobs = arg
    props.check_suite_permutation(docs, order, jobs)


def _refused_fast(doc) -> None:
    props.check_lowering_refused_fast(doc)


def _fix_apply(case) -> None:
    from . import fixapply

    for k, v in fixapply.check(_tmp(), case, props.run_cli).items():
        props.REACHED[k] += v


def _output(arg) -> None:
    writer, kind, force, follow = arg
    props.check_output_safety(_tmp(), writer, kind, force, follow)


def _grammar_tests(**kw):
    from . import grammar

    return grammar.valid_tests(**kw)


def _metamorphic_inputs():
    return st.tuples(_grammar_tests(max_threads=2, max_code=3), st.integers(0, 10**6))


@st.composite
def _suites(draw):
    docs = draw(st.lists(_grammar_tests(max_threads=2, max_code=3), min_size=2, max_size=4))
    order = draw(st.permutations(range(len(docs))))
    jobs = draw(st.sampled_from((0, 0, 0, 2)))
    return docs, list(order), jobs


def _output_cases():
    return st.tuples(st.sampled_from(props.OUTPUT_WRITERS), st.sampled_from(props.TARGET_KINDS),
                     st.booleans(), st.booleans())


def _writers():
    from . import writers

    return writers


def _counted(check, case) -> None:
    props.REACHED.update(check(_tmp(), case, props.run_cli))


def hash_bucket(text: str, n: int) -> bool:
    """Deterministically true for about 1 in n texts (Python's str hash is salted per process)."""
    import zlib

    return zlib.crc32(text.encode("utf-8", "surrogatepass")) % n == 0


TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("instruction", S.instructions, _instruction, 600,
           "PTX instruction strings: parsed, and every 4th lowered and checked inside a small test"),
    Target("condition", S.conditions, _condition, 500,
           "herd conditions: parsed, printed and parsed again, evaluated; every 8th checked in a test"),
    Target("yaml", S.yaml_texts, _yaml, 300,
           "YAML litmus structures of the right and the wrong shape; small valid tests go through Z3"),
    Target("raw-yaml", S.raw_yaml_texts, _raw, 200,
           "raw YAML text: anchors, aliases, tags, merge keys, odd characters"),
    Target("alias-bomb", S.alias_bombs, _raw, 12, "billion-laughs alias bombs (every depth 1..12)"),
    Target("mutant", S.mutated_bundled, _mutant, 400,
           "every bundled litmus file, mutated: lines deleted/duplicated/swapped, characters flipped, "
           "qualifiers swapped, numbers changed; the test nearest the edit goes through Z3"),
    Target("cat", S.cat_texts, _cat, 250, "small cat models; those that load check a small test"),
    Target("cat-mutant", S.mutated_models, _cat_mutant, 40,
           "the bundled cat models, mutated; those that load check a small test"),
    Target("differential", S.valid_documents, _differential, 60,
           "small well-formed tests: the Z3 and brute-force engines allow the same outcomes"),
    Target("cli", lambda: S.mutated_bundled(small=True), _cli, 25,
           "mutated bundled files through `ptxmc run`, `outcomes` and `check` (in process)"),
    Target("grammar", _grammar_tests, _grammar, 150,
           "VALID tests from the instruction tables (tests/fuzz/grammar.py): lowered in bounded time per "
           "event; small ones checked, every 3rd twice (two runs, the same JSON)"),
    Target("metamorphic", _metamorphic_inputs, _metamorphic, 20,
           "renaming threads, registers and locations, reordering threads, adding an independent thread: "
           "the same outcomes, verdicts and undefinedness"),
    Target("permutation", _suites, _permutation, 8,
           "a suite of valid tests in any order, with any --jobs: the same result for every test"),
    Target("refused-fast", _grammar_tests, _refused_fast, 30,
           "a valid test grown to 32 threads x 64 instructions: refused while lowering, fast, limit named"),
    Target("output", _output_cases, _output, 40,
           "every writer onto every kind of target (files, folders of user files, links, FIFOs, devices, "
           "inputs, the current folder): written only where the policy allows, else refused, untouched"),
    Target("fix-apply", lambda: __import__("tests.fuzz.fixapply", fromlist=["cases"]).cases(), _fix_apply, 8,
           "`fix --apply` (-o, --in-place) on small tests in every shape (block/flow lists, ptx: blocks, a "
           "matrix, list files, comments, CRLF, U+2028, modes): the file's other tests and lines unchanged, "
           "the fixed test passes, the mode kept, nothing left behind"),
    Target("gen-output", lambda: _writers().gen_cases(), lambda c: _counted(_writers().check_gen, c), 10,
           "`gen -o DIR` onto every state of DIR (earlier outputs with a link, a FIFO or a user's file where gen "
           "writes, a link or a file as DIR), with --force / --follow-symlinks: nothing outside DIR changes, a "
           "refusal leaves DIR as it was, a FIFO never blocks; what gen wrote is what its index lists, and loads"),
    Target("import", lambda: _writers().import_cases(), lambda c: _counted(_writers().check_import, c), 15,
           "Dat3M and herd files (the converter's examples, with hostile names and mutated lines) in folders of "
           "random depth: never an unlocated error or a raw control character; every converted test loads, and "
           "export to herd then import again keeps every thread's instructions"),
    Target("resume", lambda: _writers().resume_cases(), lambda c: _counted(_writers().check_resume, c), 15,
           "a finished run's stream, damaged (cut anywhere, lines dropped/duplicated/swapped, fields removed or "
           "changed, garbage), then run --resume: the uninterrupted run's output byte for byte, or a located "
           "--resume FILE:N error with the stream untouched"),
)}

CI_TOTAL = sum(t.ci_budget for t in TARGETS.values())
