"""The front end: YAML -> LitmusTest (checker.front: yamlsafe, conditions, ptx, litmus; validation by checker.isa).

Malformed inputs live in tests/malformed/litmus/, one file per error class; MALFORMED below holds
each file's exact message (after the file path).
"""
import importlib
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from checker.isa import syntax as ptx
from checker.isa import hints, registry
from checker.isa.table import Family, Group
from checker.front import yamlsafe
from checker.ast import (Addr, And, Const, Eq, EqRef, Expectation, Imm, Instr, LitmusTest, MemoryDecl, MemRef, Name,
                         Not, Or, Position, Reg, RegRef, Sink, Thread, Vec)
from checker.front.conditions import check_refs, parse_cond, refs, show
from checker.errors import LitmusError, SourceLoc
from checker.front.litmus import load_file, load_paths, load_text

MALFORMED_DIR = Path(__file__).parents[1] / "malformed" / "litmus"

MALFORMED = {
    "address_is_register": "6: 'st [%rd1], 1': '[rd1]': register rd1 holds no address ptxmc can follow (addresses "
                           "are computed in the test from a location: mov, cvta, mapa, and add/sub of a constant)",
    "alias": "7: '*here': YAML aliases are not supported",
    "alias_cycle": "3: 'a': a -> b -> a is a cycle of aliases/views",
    "alias_missing_target": "3: 'q': alias_of 'q': no such location (declared or used)",
    "alias_with_init": "4: 'init': 'y' is alias_of 'x': its init is that of 'x'",
    "atom_type": "6: 'atom.add.b32 r5, [x], 1': atom.add does not take .b32 (it takes .u32, .s32, .u64, .f32 or .f64)",
    "await_on_store": "6: 'st [x], 1 == 1': '== 1': st returns no value to await",
    "bad_arch": "1: 'sm90': arch must look like sm_90 or sm_90a",
    "bad_condition": "15: 'P1:r0=1 /\\ (P1:r1=0': expected ')' (to close the '(' of column 12) at column 20, "
                     "found the end of the condition",
    "bad_operand_count": "6: 'atom.cas.b32 r5, [x], 0': expected 4 operands (d, [a], b, c), got 3",
    "bad_operand_kind": "6: 'st [x], [flag]': operand 2 ('[flag]') must be a register, a number, or a vector "
                        "of them {a, b, ...}",
    "bad_position": "9: 'gpu0.block1': bad position 'gpu0.block1': write gpu<N>[.cluster<N>].cta<N>[.warp<N>]",
    "bad_qualifier": "6: 'st.weak.global.nc [x], 1': unknown qualifier '.nc' for st",
    "bar_arrive_without_count": "6: 'bar.arrive 1': missing operand b, the thread count (operands: a, b)",
    "duplicate_key": "6: 'at': duplicate key 'at' (lines 4 and 6)",
    "duplicate_test_name": "16: 'twin': duplicate test name 'twin' (first at line 1)",
    "empty_file": "1: empty file: expected a test (a mapping) or a list of tests",
    "fence_without_scope": "6: 'fence.sc': fence needs a .scope qualifier (.cta, .cluster, .gpu or .sys)",
    "global_as_shared": "6: 'st.shared [x], 1': 'x' is global memory, but the access is .shared",
    "herd_exists": "15: 'exists (P1:r0=1)': 'exists' at column 1: write the bare condition and list it "
                   "under expect: allowed or forbidden",
    "ld_release": "11: 'ld.release.gpu r0, [flag]': ld.release does not exist: a load is .weak, .relaxed, "
                  ".acquire, .volatile or .mmio",
    "matrix_name_without_placeholder": "1: 'MP-matrix': a test with a matrix needs a ${...} placeholder in its "
                                       "name, so that each row's test has its own name",
    "matrix_unknown_placeholder": "8: '${w} [x], ${v}': unknown matrix placeholder '${v}' (this row has: w) "
                                  "(matrix row 1: w=st.release.gpu)",
    "matrix_unused_key": "3: 'sope': matrix key 'sope' is not used: the test has no ${sope} (matrix row 1)",
    "merge_key": "4: '<<': YAML merge keys (<<) are not supported",
    "missing_name": "1: a test needs 'name:'",
    "missing_threads": "1: a test needs 'threads:'",
    "mixed_cluster_styles": "8: 'P1': 'gpu0.cluster0.cta1' names a cluster, but 'gpu0.cta0' (line 3) does not: "
                            "name a cluster in every position or in none",
    "name_with_space": "1: 'message passing': a test name is one word, without spaces",
    "owner_is_warp": "3: 'gpu0.cta0.warp1': owner must name a CTA (gpu<N>[.cluster<N>].cta<N>), not a warp",
    "placeholder_without_matrix": "6: '${w} [x], 1': '${w}': placeholders need a matrix: table",
    "qualifier_twice": "6: 'st.relaxed.gpu.gpu [x], 1': qualifier '.gpu' given twice",
    "red_acquire": "6: 'red.acquire.gpu.add.u32 [x], 1': red takes only .relaxed or .release",
    "register_as_location": "5: 'ld r1, [r0]': '[r0]': register r0 holds no address ptxmc can follow (addresses "
                            "are computed in the test from a location: mov, cvta, mapa, and add/sub of a constant)",
    "relaxed_without_scope": "6: 'st.relaxed [x], 1': .relaxed accesses need a scope (.cta, .cluster, .gpu or .sys)",
    "shared_other_cluster": "10: 'ld.shared::cluster r0, [s]': 's' is shared memory of gpu0.cta0, outside the "
                            "cluster of P1 (gpu0.cta1): no access is possible",
    "shared_remote_without_qualifier": "10: 'ld.shared r0, [s]': 's' is shared memory of another CTA "
                                       "(gpu0.cluster0.cta0): access it with .shared::cluster",
    "shared_without_owner": "3: 'space': shared location 's' needs an owner: the CTA whose shared memory "
                            "holds it (owner: gpu0.cta0)",
    "st_acquire": "6: 'st.acquire.gpu [x], 1': st.acquire does not exist: a store is .weak, .relaxed, "
                  ".release, .volatile or .mmio",
    "two_from_one_group": "6: 'st.relaxed.release.gpu [x], 1': '.relaxed' and '.release' cannot be combined "
                          "(one .sem only)",
    "undefined_not_bool": "14: 'maybe': undefined must be true or false",
    "unknown_key": "13: 'expcet': unknown key 'expcet' in a test (valid keys: name, doc, source, arch, "
                   "memory, threads, expect, matrix, locations, filter, rlimit, threads_per_litmus_thread, "
                   "kernels, unroll, params); did you mean 'expect'?",
    "unknown_location": "15: 'z=1': 'z' is not a location of this test (locations: flag, x)",
    "unknown_memory_key": "3: 'initial': unknown key 'initial' in location 'x' (valid keys: space, owner, "
                          "init, size, alias_of, texture_of, surface_of, constant_of, mbarrier, tensormap, "
                          "box, strides, offset_of); did you mean 'init'?",
    "unknown_opcode": "6: 'stx [x], 1': unknown or unsupported PTX instruction 'stx'",
    "unknown_register": "15: 'P1:r0=1 /\\ P1:r2=0': 'P1:r2': P1 has no register r2 (its registers: r0, r1); "
                        "did you mean P1:r1?",
    "unknown_thread": "15: 'P2:r0=1': 'P2:r0': there is no thread P2 (threads: P0, P1); did you mean P1:r0?",
    "unknown_thread_key": "9: 'where': unknown key 'where' in thread 'P1' (valid keys: at, code, ptx)",
    "vector_access": "6: 'st.v2.u32 [x], {1, 2, 3}': st.v2 takes a vector of 2 elements {a, b, ...}",
    "weak_with_scope": "6: 'st.weak.gpu [x], 1': .weak accesses take no scope",
    "yaml_syntax": "3: 'P0: {at: gpu0.cta0, code: [st [x], 1]': YAML syntax error: while parsing a flow "
                   "sequence: expected ',' or ']', but got '['",
    "yaml_tag": "1: 'rm': YAML tag '!!python/object:os.system' is not supported",
}


def test_every_malformed_file_has_an_expected_message():
    assert sorted(p.stem for p in MALFORMED_DIR.glob("*.yaml")) == sorted(MALFORMED)


@pytest.mark.parametrize("stem", sorted(MALFORMED))
def test_malformed(stem):
    path = MALFORMED_DIR / f"{stem}.yaml"
    errors = [r for r in load_file(path) if isinstance(r, LitmusError)]
    assert [str(e) for e in errors] == [f"{path}:{MALFORMED[stem]}"]


# ---------------------------------------------------------------- the format reference example --

DESIGN_EXAMPLE = r"""
name: MP+rel.gpu+acq.gpu           # required, unique in a suite
doc: Message passing across CTAs with gpu-scope release/acquire.
source: "PTX ISA, Memory Consistency Model > Causality axiom"   # where the verdicts come from
arch: sm_90                        # optional: minimum target for the hardware harness
memory:                            # optional; undeclared locations are global, init 0
  x: 0                             # global, initial value 0
  flag: {space: global, init: 0}
  s: {space: shared, owner: gpu0.cta0}         # shared memory of that CTA
  y: {alias_of: x}                 # a second virtual address mapping x's memory (virtual alias)
  t: {texture_of: y}               # y's address seen through the texture proxy; likewise
                                   # surface_of / constant_of (ISCA'22 hypothetical proxies)
threads:
  P0:
    at: gpu0.cta0                  # position: gpu<N>[.cluster<N>].cta<N>[.warp<N>]
    code:                          # PTX instructions, one per item; trailing ';' optional
      - st.weak.global [x], 1
      - st.release.gpu.global [flag], 1
  P1:
    at: gpu0.cta1
    code:
      - ld.acquire.gpu.global r0, [flag]
      - ld.weak.global r1, [x]
expect:                            # conditions over final state, each with a verdict
  forbidden:
    - P1:r0=1 /\ P1:r1=0
  allowed:
    - P1:r0=0 /\ P1:r1=0
"""


def _instr(op, quals, operands, text, await_value=None, predicate=None):
    return registry.validate(Instr(op, tuple(quals), tuple(operands), text, None, await_value, predicate))


def test_design_example_parses_to_the_expected_ast():
    [test] = load_text(DESIGN_EXAMPLE, "MP.yaml")
    r0_1 = And((Eq(RegRef("P1", "r0"), 1), Eq(RegRef("P1", "r1"), 0)))
    r0_0 = And((Eq(RegRef("P1", "r0"), 0), Eq(RegRef("P1", "r1"), 0)))
    expected = LitmusTest(
        name="MP+rel.gpu+acq.gpu",
        doc="Message passing across CTAs with gpu-scope release/acquire.",
        source="PTX ISA, Memory Consistency Model > Causality axiom",
        arch="sm_90",
        path="MP.yaml",
        memory=(MemoryDecl("x"), MemoryDecl("flag"),
                MemoryDecl("s", space="shared", owner=Position(0, None, 0)),
                MemoryDecl("y", alias_of="x"), MemoryDecl("t", view="texture", view_of="y")),
        threads=(
            Thread("P0", Position(0, None, 0), (
                _instr("st", ["weak", "global"], [Addr("x"), Imm(1)], "st.weak.global [x], 1"),
                _instr("st", ["release", "gpu", "global"], [Addr("flag"), Imm(1)],
                       "st.release.gpu.global [flag], 1"))),
            Thread("P1", Position(0, None, 1), (
                _instr("ld", ["acquire", "gpu", "global"], [Reg("r0"), Addr("flag")],
                       "ld.acquire.gpu.global r0, [flag]"),
                _instr("ld", ["weak", "global"], [Reg("r1"), Addr("x")], "ld.weak.global r1, [x]"))),
        ),
        expectations=(Expectation("forbidden", r0_1, r"P1:r0=1 /\ P1:r1=0"),
                      Expectation("allowed", r0_0, r"P1:r0=0 /\ P1:r1=0")),
    )
    assert test == expected
    assert test.where == SourceLoc("MP.yaml", 2, "MP+rel.gpu+acq.gpu")
    assert test.threads[1].code[0].where == SourceLoc("MP.yaml", 22, "ld.acquire.gpu.global r0, [flag]")
    assert test.expectations[0].where.line == 26
    assert test.mem("flag").where.line == 8


def test_implicit_locations_are_global_init_0_in_order_of_first_use():
    [t] = load_text("name: T\nthreads:\n  P0: {at: gpu0.cta0, code: ['st [b], 1', 'ld r0, [a]']}\n"
                    "  P1: {at: gpu0.cta1, code: ['ld r0, [b]', 'ld r1, [c+4]']}\n", "t.yaml")
    assert [m.name for m in t.memory] == ["b", "a", "c"]
    assert all(m.space == "global" and m.init == 0 for m in t.memory)
    assert t.mem("c").where == SourceLoc("t.yaml", 4, "ld r1, [c+4]")


def test_positions_and_long_memory_forms():
    text = """
name: T
memory:
  s: {space: shared, owner: gpu0.cluster0.cta0, init: 3}
  mb: {space: shared, owner: gpu0.cluster0.cta0, mbarrier: {count: 2}}
  gA: 0
  tmap: {tensormap: {0: gA, 1: gB}, init: 1}
  v: {surface_of: gA}
  c: {constant_of: gA}
threads:
  P0: {at: gpu1.cluster0.cta0.warp2, code: []}
  P1: {at: gpu0.cluster0.cta1, code: ['ld.shared::cluster r0, [s]', 'st [gB], 1']}
"""
    [t] = load_text(text)
    assert t.threads[0].position == Position(1, 0, 0, 2)
    assert t.threads[1].position == Position(0, 0, 1, 0)
    assert t.mem("s") == MemoryDecl("s", space="shared", owner=Position(0, 0, 0), init=3)
    assert t.mem("mb").mbarrier == {"count": 2}
    assert t.mem("tmap").tensormap == {0: "gA", 1: "gB"} and t.mem("tmap").init == 1
    assert (t.mem("v").view, t.mem("v").view_of, t.mem("c").view) == ("surface", "gA", "constant")


def test_expect_undefined_and_absent_expect():
    base = "name: T\nthreads:\n  P0: {at: gpu0.cta0, code: ['st [x], 1']}\n"
    [t] = load_text(base)
    assert t.expectations == () and t.expect_undefined is None
    [t] = load_text(base + "expect: {undefined: true, allowed: ['x=1']}\n")
    assert t.expect_undefined is True and t.expectations[0].cond == Eq(MemRef("x"), 1)


MEMORY_ERRORS = [
    ("  x: {space: local}", "3: 'local': space must be global, shared or tensor"),
    ("  x: {owner: gpu0.cta0}", "3: 'owner': owner is for shared memory: add 'space: shared' to 'x'"),
    ("  x: abc", "3: 'abc': location 'x': write its initial value (x: 0) or a mapping ({space: ..., init: ...})"),
    ("  x: [1]", "3: location 'x' must be a mapping"),
    ("  1x: 0", "3: '1x': '1x' cannot name a location: use an identifier"),
    ("  x: {init: one}", "3: 'one': init must be an integer"),
    ("  x: {init: true}", "3: 'true': init must be an integer"),
    ("  y: {alias_of: x, texture_of: x}\n  x: 0", "3: 'texture_of': 'y' can be only one of alias_of, texture_of"),
    ("  y: {texture_of: x, space: global}\n  x: 0", "3: 'space': 'y' is texture_of 'x': its space is that of 'x'"),
    ("  x: {mbarrier: {count: 1}}",
     "3: 'mbarrier': an mbarrier lives in shared memory: add space: shared and an owner"),
    ("  mb: {space: shared, owner: gpu0.cta0, init: 1, mbarrier: {count: 1}}",
     "3: 'init': an mbarrier's initial state comes from its count: drop init"),
    ("  mb: {space: shared, owner: gpu0.cta0, mbarrier: {count: 0}}", "3: '0': mbarrier count must be positive"),
    ("  mb: {space: shared, owner: gpu0.cta0, mbarrier: {cnt: 1}}",
     "3: 'cnt': unknown key 'cnt' in mbarrier (valid keys: count); did you mean 'count'?"),
    ("  t: {tensormap: {1: x}}", "3: the initial value 0 of tensor map 't' is none of its values (1)"),
    ("  t: {tensormap: {0: nope}}", "3: 'nope': tensormap 'nope': no such location (declared or used)"),
    ("  t: {tensormap: {0: s}}\n  s: {space: shared, owner: gpu0.cta0}",
     "3: 's': tensor map buffer 's' must be global memory"),
    ("  t: {tensormap: [x]}", "3: tensormap maps values to global buffers: {0: gA, 1: gB}"),
    ("  t: {space: shared, owner: gpu0.cta0, tensormap: {0: x}}",
     "3: 'tensormap': a tensor map lives in global memory"),
    ("  y: {alias_of: s}\n  s: {space: shared, owner: gpu0.cta0}",
     "3: 'y': 'y' is an alias or view of shared memory 's': only global memory has those"),
    ("  y: {alias_of: y}", "3: 'y': y -> y is a cycle of aliases/views"),
    ("  y: {surface_of: [x]}", "3: surface_of must be text, not a list"),
    ("  true: 0", "3: 'true': 'true' cannot name a location: use an identifier"),
]


@pytest.mark.parametrize("decls, msg", MEMORY_ERRORS)
def test_memory_errors(decls, msg):
    text = f"name: T\nmemory:\n{decls}\nthreads:\n  P0: {{at: gpu0.cta0, code: ['st [x], 1']}}\n"
    assert [str(r) for r in load_text(text, "m.yaml")] == [f"m.yaml:{msg}"]


P0 = "threads:\n  P0: {at: gpu0.cta0, code: []}\n"
STRUCTURE_ERRORS = [
    ("name: T\nthreads: []\n", "2: threads must map thread names to {at: POSITION, code: [...]}"),
    ("name: T\nthreads:\n  P0: {code: []}\n", "3: thread 'P0' needs 'at:'"),
    ("name: T\nthreads:\n  P0: {at: gpu0.cta0}\n", "3: thread 'P0' needs 'code:'"),
    ("name: T\nthreads:\n  P0: {at: gpu0.cta0, code: [[st]]}\n", "3: an instruction must be text, not a list"),
    ("name: T\nthreads:\n  P0: [at]\n", "3: thread 'P0' must be a mapping"),
    ("name: T\nthreads:\n  P-0: {at: gpu0.cta0, code: []}\n",
     "3: 'P-0': thread name 'P-0' must be an identifier (P0, P1, ...)"),
    ("name: T\n" + P0 + "expect: [x=0]\n", "4: expect must be a mapping"),
    ("name: T\n" + P0 + "expect: {allowed: x=0}\n", "4: 'x=0': allowed must be a list"),
    ("name: T\n" + P0 + "expect: {allowed: [[x=0]]}\n", "4: a condition must be text, not a list"),
    ("name: [T]\n" + P0, "1: name must be text, not a list"),
    ("name: T\ndoc: {a: 1}\n" + P0, "2: doc must be text, not a mapping"),
    ("name: T${a}\nmatrix: {a: 1}\n" + P0, "2: matrix must be a list"),
    ("name: T${a}\nmatrix: []\n" + P0, "2: matrix needs at least one row"),
    ("name: T${a}\nmatrix: [1]\n" + P0, "2: '1': a matrix row must be a mapping (placeholder: value, ...) (matrix row 1)"),
    ("name: T${a}\nmatrix: [{a: [1]}]\n" + P0, "2: matrix value 'a' must be text, not a list (matrix row 1)"),
    ("name: T\nthreads:\n  P0: {at: gpu0.cta0, code: ['ld r0, [x]']}\n  P1: {at: gpu0.cta0, code: ['ld x, [y]']}\n",
     "3: 'ld r0, [x]': 'x' is used both as a register and as a location"),
    ("- name: T\n  " + P0.replace("\n  ", "\n    ") + "- 42\n", "4: '42': a test must be a mapping"),
    ("[]\n", None),
]


@pytest.mark.parametrize("text, msg", STRUCTURE_ERRORS)
def test_structure_errors(text, msg):
    errors = [str(r) for r in load_text(text, "s.yaml") if isinstance(r, LitmusError)]
    assert errors == ([f"s.yaml:{msg}"] if msg else [])


# ------------------------------------------------------------------------------ files --

MULTI = """
- name: A
  threads: {P0: {at: gpu0.cta0, code: ['st [x], 1']}}
- name: B
  threads: {P0: {at: gpu0.cta0, code: ['st.weak.gpu [x], 1']}}
- name: C
  threads: {P0: {at: gpu0.cta0, code: ['ld r0, [x]']}}
  expect: {allowed: ['P0:r0=0']}
- name: D
  threads: {P0: {at: gpu0.cta0, code: ['st [x], 1']}, P0: {at: gpu0.cta1, code: []}}
- 42
"""


def test_one_bad_test_does_not_stop_the_others():
    results = load_text(MULTI, "m.yaml")
    assert [r.name if isinstance(r, LitmusTest) else str(r) for r in results] == [
        "A",
        "m.yaml:5: 'st.weak.gpu [x], 1': .weak accesses take no scope",
        "C",
        "m.yaml:10: 'P0': duplicate key 'P0' (lines 10 and 10)",
        "m.yaml:11: '42': a test must be a mapping",
    ]


def test_load_paths_recurses_sorts_and_reports_duplicates_across_files(tmp_path):
    one = "name: {n}\nthreads:\n  P0: {{at: gpu0.cta0, code: ['st [x], 1']}}\n"
    (tmp_path / "sub").mkdir()
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "b.yaml").write_text(one.format(n="B"))
    (tmp_path / "sub" / "a.yml").write_text(one.format(n="A"))
    (tmp_path / "a.yaml").write_text(one.format(n="B"))
    (tmp_path / "notes.txt").write_text("not a test")
    (tmp_path / ".hidden" / "h.yaml").write_text("::: broken")
    results = load_paths([tmp_path, tmp_path / "a.yaml", tmp_path / "missing.yaml"])
    shown = [r.name if isinstance(r, LitmusTest) else str(r) for r in results]
    assert shown == ["B",
                     f"{tmp_path / 'b.yaml'}:1: 'B': duplicate test name 'B' (also in {tmp_path / 'a.yaml'}:1)",
                     "A",
                     f"{tmp_path / 'missing.yaml'}:1: no such file or directory"]
    assert results[0].path == str(tmp_path / "a.yaml")


def test_unreadable_file(tmp_path):
    p = tmp_path / "bin.yaml"
    p.write_bytes(b"\xff\xfe\x00name")
    assert [str(e) for e in load_file(p)] == [f"{p}:1: not a UTF-8 text file (byte 0xff at line 1)"]
    p.write_bytes(b"name: T\ndoc: caf\xe9\n")        # the line of the first bad byte (issue 23)
    assert [str(e) for e in load_file(p)] == [f"{p}:2: not a UTF-8 text file (byte 0xe9 at line 2)"]


# ----------------------------------------------------------------------------- matrix --

MATRIX = r"""
name: MP+${w}+${r}${f}
matrix:
  - {w: rel, r: acq, f: "", fence: "", wq: st.release.gpu, rq: ld.acquire.gpu}
  - {w: rlx, r: rlx, f: +fence, fence: fence.sc.gpu, wq: st.relaxed.gpu, rq: ld.relaxed.gpu}
  - {w: rlx, r: rlx, f: "", fence: "", wq: st.relaxed.gpu, rq: ld.relaxed.gpu,
     expect: {allowed: ['P1:r0=1 /\ P1:r1=0']}}
  - {w: weak, r: rlx, f: "", fence: "", wq: st.weak.gpu, rq: ld.relaxed.gpu}
threads:
  P0:
    at: gpu0.cta0
    code:
      - st [x], 1
      - ${fence}
      - ${wq} [flag], 1
  P1:
    at: gpu0.cta1
    code:
      - ${rq} r0, [flag]
      - ld r1, [x]
expect:
  forbidden: ['P1:r0=1 /\ P1:r1=0']
  undefined: false
"""


def test_matrix_expands_one_test_per_row():
    results = load_text(MATRIX, "mx.yaml")
    assert [r.name if isinstance(r, LitmusTest) else str(r) for r in results] == [
        "MP+rel+acq",
        "MP+rlx+rlx+fence",
        "MP+rlx+rlx",
        "mx.yaml:15: 'st.weak.gpu [flag], 1': .weak accesses take no scope "
        "(matrix row 4: w=weak, r=rlx, f=, fence=, wq=st.weak.gpu, rq=ld.relaxed.gpu)",
    ]
    rel, fenced, rlx = results[:3]
    assert [i.text for i in rel.threads[0].code] == ["st [x], 1", "st.release.gpu [flag], 1"]
    assert [i.text for i in fenced.threads[0].code] == ["st [x], 1", "fence.sc.gpu", "st.relaxed.gpu [flag], 1"]
    assert fenced.matrix_row == (("w", "rlx"), ("r", "rlx"), ("f", "+fence"), ("fence", "fence.sc.gpu"),
                                 ("wq", "st.relaxed.gpu"), ("rq", "ld.relaxed.gpu"))
    assert [e.kind for e in rel.expectations] == ["forbidden"] and rel.expect_undefined is False
    # the row's expect replaces the test's 'allowed'/'forbidden' entries key by key
    assert [e.kind for e in rlx.expectations] == ["forbidden", "allowed"]
    assert rlx.where == SourceLoc("mx.yaml", 6, "MP+rlx+rlx")


def test_matrix_values_are_retyped_after_substitution():
    text = ("name: T${v}\nmatrix: [{v: 1}, {v: 0x10}]\nmemory:\n  x: ${v}\n"
            "threads:\n  P0: {at: gpu0.cta0, code: ['ld r0, [x] == ${v}']}\n")
    a, b = load_text(text)
    assert (a.mem("x").init, b.mem("x").init) == (1, 16)
    assert (a.threads[0].code[0].await_value, b.threads[0].code[0].await_value) == (1, 16)
    assert (a.name, b.name) == ("T1", "T0x10")


# -------------------------------------------------------------------------- instructions --

def test_every_operand_form():
    i = ptx.parse("mov %r1, -5")
    assert i.operands == (Reg("r1"), Imm(-5))
    i = ptx.parse("op d, 0x1F, 0b101, 7, [x], [x+4], [x - 8], [tmap, {0, r1}], {r0, %r2, 3}, _, !p, x",
                  memory={"x"})
    assert i.operands == (Reg("d"), Imm(31), Imm(5), Imm(7), Addr("x"), Addr("x", 4), Addr("x", -8),
                          Addr("tmap", 0, (Imm(0), Reg("r1"))), Vec((Reg("r0"), Reg("r2"), Imm(3))),
                          Sink(), Reg("!p"), Name("x"))
    assert [ptx.render(o) for o in i.operands][4:8] == ["[x]", "[x+4]", "[x-8]", "[tmap, {0, r1}]"]
    assert list(ptx.address_bases(i)) == ["x", "x", "x", "tmap"]


def test_nvcc_negative_offset_plus_minus_is_a_minus():
    # nvcc prints a negative address offset as `+-4`: it was refused as a malformed address
    i = ptx.parse("op [x+-4], [%rd1+-8], [x + -0x10], [x-4]", memory={"x"})
    assert i.operands == (Addr("x", -4), Addr("rd1", -8, register=True), Addr("x", -16), Addr("x", -4))
    for bad in ("[x-+4]", "[x+--4]", "[x+-]"):
        with pytest.raises(LitmusError):
            ptx.parse(f"ld r0, {bad}", memory={"x"})


def test_compound_qualifiers_guard_semicolon_comment():
    i = ptx.parse("@!%p1 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                  "[s], [g], 16, [mb]; // copy")
    assert (i.op, i.predicate) == ("cp", "@!p1")
    assert i.qualifiers == ("async", "bulk", "shared::cluster", "global", "mbarrier::complete_tx::bytes")
    assert i.text == ("@!%p1 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                      "[s], [g], 16, [mb]; // copy")
    assert list(ptx.registers(i)) == ["p1"]


def test_await():
    i = registry.parse_instr("ld.acquire.gpu r0, [flag] == 1;")
    assert (i.await_value, i.operands) == (1, (Reg("r0"), Addr("flag")))
    assert registry.parse_instr("atom.cas.b32 r0, [x], 0, 1 == -1").await_value == -1
    assert registry.parse_instr("ld r0, [x]").await_value is None
    for bad, msg in [("ld r0, [x] == y", "'== y': an await needs an integer value"),
                     ("fence.sc.gpu == 1", "'== 1': fence returns no value to await"),
                     ("red.add [x], 1 == 1", "'== 1': red returns no value to await")]:
        with pytest.raises(LitmusError) as e:
            registry.parse_instr(bad)
        assert e.value.message == msg


@pytest.mark.parametrize("text, quals", [
    ("ld r0, [x]", {"sem": "weak", "mmio": None, "scope": None, "space": None, "vec": None, "type": None}),
    ("ld.volatile.shared::cta.u32 r0, [x]", {"sem": "volatile", "mmio": None, "scope": None,
                                              "space": "shared::cta", "vec": None, "type": "u32"}),
    ("ld.mmio.relaxed.sys.global.b32 r0, [x]", {"sem": "relaxed", "mmio": "mmio", "scope": "sys",
                                                "space": "global", "vec": None, "type": "b32"}),
    ("st.global.release.cluster.b64 [x], r1", {"sem": "release", "mmio": None, "scope": "cluster",
                                               "space": "global", "vec": None, "type": "b64"}),
    ("ld.v4.b32 {r0, r1, _, r3}, [x]", {"sem": "weak", "mmio": None, "scope": None, "space": None,
                                        "vec": "v4", "type": "b32"}),
    ("atom.exch.b32 r0, [x], 1", {"sem": "relaxed", "scope": "gpu", "space": None, "op": "exch", "type": "b32"}),
    ("atom.acq_rel.sys.shared::cluster.inc.u32 r0, [x], 1",
     {"sem": "acq_rel", "scope": "sys", "space": "shared::cluster", "op": "inc", "type": "u32"}),
    ("red.release.cta.or.b64 [x], r1", {"sem": "release", "scope": "cta", "space": None, "op": "or", "type": "b64"}),
    ("red.min.s32 [x], -1", {"sem": "relaxed", "scope": "gpu", "space": None, "op": "min", "type": "s32"}),
    ("fence.cluster", {"sem": "acq_rel", "restrict": None, "scope": "cluster"}),
    ("fence.acquire.sys", {"sem": "acquire", "restrict": None, "scope": "sys"}),
    ("membar.cta", {"level": "cta"}),
    ("bar.cta.sync 0, 2", {"cta": "cta", "mode": "sync", "redop": None, "type": None}),
    ("barrier.arrive.aligned 1, 2", {"cta": None, "mode": "arrive", "redop": None, "type": None,
                                     "aligned": "aligned"}),
    ("bar.red.popc.u32 r0, 0, !p", {"cta": None, "mode": "red", "redop": "popc", "type": "u32"}),
    ("bar.red.or.pred p, 0, 2, q", {"cta": None, "mode": "red", "redop": "or", "type": "pred"}),
    ("bar.warp.sync 0xffffffff", {"mode": "sync"}),
    ("mov.u32 r0, 1", {"type": "u32"}),
    ("add r2, r0, r1", {"type": None}),
    ("sub.s64 r2, r0, 1", {"type": "s64"}),
    ("mul.lo.u32 r2, r0, 3", {"mode": "lo", "type": "u32"}),
    ("and.b32 r2, r0, 1", {"type": "b32"}),
    ("xor.pred p, q, 1", {"type": "pred"}),
])
def test_valid_instructions_and_their_defaults(text, quals):
    # ld/st's cache-hint groups (checker.isa.hints) are left out where not given
    hint_groups = {g.name for g in hints.LD_HINTS + hints.ST_HINTS}
    got = {k: v for k, v in registry.parse_instr(text).quals.items() if not (k in hint_groups and v is None)}
    assert got == quals


@pytest.mark.parametrize("text, msg", [
    ("ld.weak.sys r0, [x]", ".weak accesses take no scope"),
    ("ld.cta r0, [x]", ".weak accesses take no scope (ld without a semantics qualifier is .weak)"),
    ("st.volatile.gpu [x], 1", ".volatile accesses take no scope"),
    ("ld.acquire r0, [x]", ".acquire accesses need a scope (.cta, .cluster, .gpu or .sys)"),
    ("ld.mmio.relaxed.gpu r0, [x]", "ld.mmio must be .relaxed.sys (ld.mmio.relaxed.sys)"),
    ("st.mmio.relaxed.sys.shared [x], 1", ".mmio accesses are to .global memory only"),
    ("ld.acq_rel.gpu r0, [x]", "ld.release does not exist: a load is .weak, .relaxed, .acquire, .volatile or .mmio"),
    ("ld.v4.u32 {a, b, c}, [x]", "ld.v4 takes a vector of 4 elements {a, b, ...}"),
    ("ld.v4 {a, b, c, d}, [x]", "ld.v4 needs a type (e.g. .v4.b32)"),
    ("ld.v8.b64 {a, b, c, d, e, f, g, h}, [x]", ".v8 moves 32-bit elements"),
    ("ld.u32 {a, b}, [x]", "a vector operand goes with .v2, .v4 or .v8"),
    ("ld.v2.u32 {a, a}, [x]", "register a is written twice by one instruction: PTX does not define which "
                              "value it then holds (name each destination once, or _ to discard one)"),
    ("ld.v4.u32 {a, _, b, b}, [x]", "register b is written twice by one instruction: PTX does not define which "
                                    "value it then holds (name each destination once, or _ to discard one)"),
    ("atom.v2.add.u32 r0, [x], 1", "vector atomics (.v2, .v4, .v8) are not modelled"),
    ("ld.global.shared r0, [x]", "'.global' and '.shared' cannot be combined (one .space only)"),
    ("ld [x], r0", "operand 1 ('[x]') must be a register or a vector of registers {r0, r1, ...}"),
    ("ld r0, x", "operand 2 ('x') must be an address [x]"),
    ("st [x]", "expected 2 to 3 operands ([a], b{, policy}), got 1"),
    ("atom.add.u32 r0, [x]", "expected 3 operands (d, [a], b), got 2"),
    ("atom.volatile.add r0, [x], 1", "atom takes only .relaxed, .acquire, .release or .acq_rel"),
    ("atom.inc.u64 r0, [x], 1", "atom.inc does not take .u64 (it takes .u32)"),
    ("atom.add.max.u32 r0, [x], 1", "'.add' and '.max' cannot be combined (one .op only)"),
    ("red.acq_rel.add [x], 1", "red takes only .relaxed or .release"),
    ("red.cas [x], 1", "red has no .exch or .cas: use atom"),
    ("red.add.gpu.u32 r0, [x], 1", "expected 2 operands ([a], b), got 3"),
    ("fence.relaxed.gpu", "fence takes .sc, .acq_rel, .acquire or .release"),
    ("fence.proxy.async.release.gpu", "fence.proxy.async takes no .release"),
    ("fence.sc.gpu r0", "fence takes no operands"),
    ("membar.gpu", "membar levels are .cta, .gl and .sys (membar.gl is fence.sc.gpu)"),
    ("membar", "membar needs a .level qualifier (.cta, .gl or .sys)"),
    ("bar 0", "bar needs a .mode qualifier (.sync, .arrive or .red)"),
    ("bar.sync 0, 0", "the thread count must be positive"),
    ("bar.sync r0", "operand 1 ('r0') must be an integer"),
    ("bar.sync 0, 1, 2", "expected 1 to 2 operands (a{, b}), got 3"),
    ("bar.red.u32 r0, 0, p", "bar.red needs .popc, .and or .or"),
    ("bar.red.popc.pred r0, 0, p", "bar.red.popc is .u32"),
    ("bar.sync.popc 0", "'.popc' belongs to bar.red only"),
    ("bar.red.and.pred p, 0, 1", "operand 3 ('1') must be a predicate register (p or !p)"),
    ("barrier.cluster.arrive.acquire", "barrier.cluster.arrive takes no .acquire"),
    ("bar.warp.sync", "expected 1 operand (membermask), got 0"),
    ("mov r0, [x]", "operand 2 ('[x]') must be a register, a number or a location"),
    ("mov 1, r0", "operand 1 ('1') must be a register"),
    ("mov r0, !p", "operand 2 ('!p') must be a register, a number or a location"),
    ("mul.wide.s64 r0, r1, 2", "mul.wide takes .u16, .u32, .s16 or .s32 (its result is twice as wide)"),
    ("xor.u32 r0, r1, 2", "unknown qualifier '.u32' for xor"),
    ("cp.async.ca.shared.global [s], [g], 5", "cp-size is 4, 8 or 16, not 5"),
    ("", "empty instruction"),
    (";", "empty instruction"),
    ("@p", "malformed guard: write '@p' or '@!p' before the opcode"),
    ("1 r0", "expected an opcode"),
    ("ld..u32 r0, [x]", "empty qualifier ('..')"),
    ("ld.u32- r0, [x]", "malformed qualifier '.u32-'"),
    ("ld r0, [x", "unclosed '[' or '{'"),
    ("ld r0, x]", "unbalanced ']'"),
    ("ld r0,, [x]", "empty operand"),
    ("ld r0, [x+y]", "malformed offset in '[x+y]'"),
    ("ld r0, [3]", "malformed address '[3]': write [x], [x+4] or [tmap, {0, 1}]"),
    ("ld r0, [t, 1]", "'[t, 1]': the coordinates of a tensor address are a vector {c0, c1, ...}"),
    ("mov r0, {}", "malformed vector '{}'"),
    ("mov r0, {[x]}", "a vector holds registers and integers only: '{[x]}'"),
    ("mov r0, 08", "'08': write integers without leading zeros (PTX reads them as octal)"),
    ("mov r0, 1.5.2", "malformed operand '1.5.2'"),
    ("ld r0, [x] == 1 == 2", "more than one '== v'"),
])
def test_invalid_instructions(text, msg):
    with pytest.raises(LitmusError) as e:
        registry.parse_instr(text)
    assert e.value.message == msg
    assert e.value.where == SourceLoc("<string>", 1, text.strip())


def test_a_destination_named_twice_is_refused_where_it_is_written_and_a_source_named_twice_is_not():
    # ld.v2 {%r1, %r1} kept the last element's value; PTX defines no such value
    text = ("- name: T\n  threads: {P0: {at: gpu0.cta0, code: ['st.v2.u32 [x], {%r2, %r2}', 'ld.v2.u32 {%r1, %r1}, [x]']}}\n"
            "  expect: {allowed: ['P0:r1=0']}\n")
    [err] = load_text(text, "t.yaml")
    assert str(err) == ("t.yaml:2: 'ld.v2.u32 {%r1, %r1}, [x]': register r1 is written twice by one instruction: PTX "
                        "does not define which value it then holds (name each destination once, or _ to discard one)")
    assert registry.parse_instr("st.v2.u32 [x], {a, a}", memory=frozenset({"x"})).family == "st"
    assert registry.parse_instr("ld.v4.u32 {a, _, b, _}, [x]", memory=frozenset({"x"})).family == "ld"


def test_family_table_is_consistent():
    for fam in registry.FAMILIES.values():
        choices = [c for g in fam.groups for c in g.choices]
        assert len(choices) == len(set(choices)), fam.key
        assert not set(fam.rejects) & set(choices), fam.key     # a rejected qualifier must be unreachable
        for g in fam.groups:
            assert g.default is None or (g.default in g.choices and not g.required), (fam.key, g.name)
        assert fam.space is None or fam.space in {g.name for g in fam.groups}


def test_a_new_family_is_one_table_entry():
    fam = Family("fence.frob", groups=(Group("kind", ("alias", "async"), required=True),))
    reg = registry.Registry([*registry.FAMILIES.values(), fam])
    assert dict(reg.validate(ptx.parse("fence.frob.async")).quals) == {"kind": "async"}
    assert reg.family_of(ptx.parse("fence.frob.alias"))[0] is fam   # longest key wins
    assert reg.family_of(ptx.parse("fence.sc.gpu"))[0].key == "fence"
    with pytest.raises(ValueError, match="defined twice"):
        registry.Registry([*registry.FAMILIES.values(), Family("fence")])


def test_the_registry_loads_a_family_module_when_an_instruction_needs_it():
    """Each module is listed with the key prefixes of its families: an instruction loads only the
    modules that can hold its family, and a module with a family outside its prefixes is refused
    when it loads (a wrong list never hides a family)."""
    reg = registry.Registry(modules=registry.FAMILY_MODULES)
    assert reg.family_of(ptx.parse("fence.sc.gpu"))[0].key == "fence"
    assert set(reg._of_module) == {"", "core"}                      # not proxy's fence.proxy
    assert reg.family_of(ptx.parse("fence.proxy.async"))[0].key == "fence.proxy"
    assert set(reg._of_module) == {"", "core", "proxy"}
    assert reg.get("wgmma.fence").key == "wgmma.fence"                # a validated key loads its module too
    assert list(reg.families) == list(registry.FAMILIES)              # complete, in FAMILY_MODULES' order
    short = registry.Registry(modules={"core": ("ld", "st")})         # core also holds fence, atom, ...
    with pytest.raises(ValueError, match="lies under none of its prefixes"):
        short.family_of(ptx.parse("ld.relaxed.gpu.global r0, [x]"))
    lost = registry.Registry(modules={"core": registry.FAMILY_MODULES["core"]})
    with pytest.raises(LitmusError, match="unknown or unsupported PTX instruction 'wgmma'"):
        lost.family_of(ptx.parse("wgmma.fence.sync.aligned"))


def test_every_family_module_of_checker_isa_is_listed():
    import pkgutil

    import checker.isa

    with_families = sorted(m.name for m in pkgutil.iter_modules(checker.isa.__path__)
                           if any(isinstance(f, Family) for f in
                                  getattr(importlib.import_module(f"checker.isa.{m.name}"), "FAMILIES", ())))
    assert with_families == sorted(registry.FAMILY_MODULES)


# ---------------------------------------------------------------------------- conditions --

def test_condition_syntax_and_precedence():
    a, b, c = Eq(RegRef("P0", "r0"), 1), Eq(MemRef("x"), 2), Eq(RegRef("P1", "r1"), -3)
    assert parse_cond(r"P0:r0=1 /\ x=2 \/ P1:%r1 == -3") == Or((And((a, b)), c))
    assert parse_cond(r"P0:r0=1 /\ (x=2 \/ P1:r1=-3)") == And((a, Or((b, c))))
    assert parse_cond(r"~P0:r0=1 /\ x != 2") == And((Not(a), Not(b)))
    assert parse_cond(r"x=2 /\ x=2 /\ x=2") == And((b, b, b))
    assert parse_cond("~~(true)") == Not(Not(Const(True)))
    assert parse_cond("false \\/ x=0x2") == Or((Const(False), b))
    assert refs(parse_cond(r"~(P0:r0=1 \/ x=2)")) == [RegRef("P0", "r0"), MemRef("x")]


def test_condition_compares_two_observables():
    """Issue 34 item 4: a register with a register or a location (`P0:r1=P0:r2`, `P1:r0=x`)."""
    r1, r2, x = RegRef("P0", "r1"), RegRef("P0", "r2"), MemRef("x")
    assert parse_cond("P0:r1=P0:%r2") == EqRef(r1, r2)
    assert parse_cond(r"x == P0:r1 /\ P0:r1 != P0:r2") == And((EqRef(x, r1), Not(EqRef(r1, r2))))
    for text in ("P0:r1=P0:r2", "P1:r0=x", r"~P0:r1=x /\ y=3"):
        assert show(parse_cond(text)) == text
    assert refs(parse_cond("P1:r0=x")) == [RegRef("P1", "r0"), x]
    with pytest.raises(LitmusError, match="P0 has no register r9"):
        check_refs(parse_cond("P0:r1=P0:r9"), None, {"P0": {"r1", "r2"}}, {"x"})
    with pytest.raises(LitmusError, match="'z' is not a location"):
        check_refs(parse_cond("P0:r1=z"), None, {"P0": {"r1"}}, {"x"})
    from checker.model.observables import holds
    assert holds(parse_cond("P0:r1=P0:r2"), {"P0:r1": 3, "P0:r2": 3}, {}) and \
        not holds(parse_cond("P0:r1=x"), {"P0:r1": 3}, {})


@pytest.mark.parametrize("text, msg", [
    ("", "empty condition"),
    ("x=1 && y=2", "unexpected character '&' at column 5"),
    ("x=", "expected an integer, a register or a location after '=' at column 3, found the end of the condition"),
    ("P0:r0=true", "expected an integer, a register or a location after '=' at column 7, found 'true'"),
    ("P0:r0=P1:", "expected a register after 'P1:' at column 10, found the end of the condition"),
    ("x=1 y=2", "expected '/\\', '\\/' or the end of the condition at column 5, found 'y'"),
    ("x<1", "unexpected character '<' at column 2"),
    ("P0:=1", "expected a register after 'P0:' at column 4, found '='"),
    ("P0:r0", "expected '=' or '!=' after 'P0:r0' at column 6, found the end of the condition"),
    (")", "expected a register (P0:r0), a location, 'true', 'false', '~' or '(' at column 1, found ')'"),
    ("x=007", "'007' at column 3: write integers without leading zeros"),
    ("%r0=1", "'%r0' at column 1 looks like a register: write THREAD:r0"),
    ("forall x=1", "'forall' at column 1: write the bare condition and list it under expect: allowed or forbidden"),
])
def test_condition_errors(text, msg):
    with pytest.raises(LitmusError) as e:
        parse_cond(text)
    assert e.value.message == msg


# ------------------------------------------------------------------------------ yamlsafe --

def test_yamlsafe_keeps_lines_and_text():
    node = yamlsafe.load("a: 1\nb:\n  - x\n  - '0x10'\n  - 0x10\n", "f.yaml")
    (ka, va), (kb, vb) = node.items
    assert (ka.line, va.value, kb.line) == (1, 1, 2)
    assert [(i.line, i.value) for i in vb.items] == [(3, "x"), (4, "0x10"), (5, 16)]
    assert vb.items[0].with_raw("12").value == 12 and vb.items[1].with_raw("12").value == "12"


def test_yamlsafe_constructs_no_objects():
    with pytest.raises(LitmusError, match="YAML tag '!!python/object/apply:os.system' is not supported"):
        yamlsafe.load("a: !!python/object/apply:os.system ['echo hi']\n", "f")
    with pytest.raises(LitmusError, match="YAML tag '!custom' is not supported"):
        yamlsafe.load("a: !custom x\n", "f")


# ------------------------------------------------------------- no traceback ever escapes --

@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ldst.global[]{}x0r1,;=@!%_:-+ \n", max_size=40))
def test_parse_instr_fails_only_with_litmus_errors(text):
    try:
        registry.parse_instr(text, memory={"x"})
    except LitmusError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="P0:r1x=!~()/\\ -0xtruefals%", max_size=30))
def test_parse_cond_fails_only_with_litmus_errors(text):
    try:
        parse_cond(text)
    except LitmusError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(MULTI.splitlines() + MATRIX.splitlines() + DESIGN_EXAMPLE.splitlines()
                                + ["  - &a x", "  - *a", "<<: {}", "matrix: [1]", "\t", "- ${z}"]),
                max_size=25))
def test_load_text_returns_errors_never_raises(lines):
    for r in load_text("\n".join(lines), "fuzz.yaml"):
        assert isinstance(r, (LitmusTest, LitmusError))


# -- barrier generations: a count no arrivals reach, or arrivals that meet in several ways -------

def _bar_test(counts: list[str]) -> str:
    lines = ["name: Bar", "threads:"]
    for k, c in enumerate(counts):
        lines += [f"  P{k}:", f"    at: gpu0.cta0.warp{k}", "    code:", f"      - bar.sync 1{c}",
                  f"      - st.shared [s{k}], 1"]
    return "\n".join(lines) + "\nmemory:\n" + "".join(
        f"  s{k}: {{space: shared, owner: gpu0.cta0}}\n" for k in range(len(counts)))


@pytest.mark.parametrize("counts, message", [
    ([", 3", ", 3"], "barrier 1 generation 1 never completes: it needs 3 threads' arrivals, 2 arrive (P0+P1; "
                     "counts are in PTX threads, and each litmus thread stands for 1: threads_per_litmus_thread: 1, "
                     "the default); P0 (line 6) and P1 (line 11) wait forever"),
    ([", 2"] * 4, "which arrivals complete each barrier generation is decided at run time (3 ways): each way is "
                  "one straight-line variant of the test (checker.unfold.variants), not one test to lower"),
])
def test_barrier_lowering_needs_one_way_that_completes(counts, message):
    """Building one event structure needs the barriers to meet in exactly one way that completes;
    the other tests are judged schedule by schedule (tests/model/test_generations.py)."""
    from checker.isa.registry import lower

    [test] = load_text(_bar_test(counts), "bar.yaml")
    with pytest.raises(LitmusError) as e:
        lower(test)
    assert str(e.value) == f"bar.yaml:6: 'bar.sync 1{counts[0]}': {message}"


def test_the_families_come_in_one_order_whichever_module_loaded_first():
    """`families` lists every family in FAMILY_MODULES' order even when instructions loaded every
    module before it was asked (was: their load order, so what iterates the families -- docs, the
    fuzz grammar -- depended on which tests ran first)."""
    first = registry.Registry(modules=registry.FAMILY_MODULES)
    for module in reversed(list(registry.FAMILY_MODULES)):       # load every module, last first
        first._load(registry.FAMILY_MODULES[module][0])
    assert not first._pending
    assert list(first.families) == list(registry.Registry(modules=registry.FAMILY_MODULES).families)
