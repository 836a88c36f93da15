"""`ptxmc gen`: diy-style generation of litmus tests from cycles of edges (checker/gen).

The classic families and every annotation combination at size 4, the same verdicts as the
hand-written MP/SB tests of litmus/core, duplicates up to renaming removed, byte-for-byte
determinism, every test loading and lowering with ptxmc's own front end, the cycle condition
satisfiable without axioms, and the counter agreeing with the enumeration."""
from __future__ import annotations

import argparse
import itertools
import re
from dataclasses import replace
from pathlib import Path

import pytest

from checker import LITMUS_DIR
from checker.ast import Expectation, LitmusTest, Position
from checker.resources import resolve_model
from checker.verdict.check import check_test
from checker.front.conditions import parse_cond
from checker.errors import LitmusError
from checker.gen.annotate import variants
from checker.gen.cli import add_subcommands
from checker.gen.count import count_shape
from checker.gen.cycles import CycleError, parse_cycle
from checker.gen.generate import all_tests, family_shapes
from checker.gen.placement import choices, positions
from checker.gen.vocab import select
from checker.front.litmus import load_file, load_paths, load_text
from checker.isa.registry import lower

NO_AXIOMS = '"no axioms: well-formedness only"\n'


def gen(*argv: str) -> int:
    """`ptxmc gen ARGV` on a fresh parser."""
    parser = argparse.ArgumentParser(prog="ptxmc")
    add_subcommands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["gen", *argv])
    return args.func(args)


def verdict(test: LitmusTest, cond: str, model: str = "ptx") -> str:
    """The model's verdict on `cond` for `test`: allowed, forbidden or undefined (the one place
    this file calls the checker)."""
    probe = replace(test, expectations=(Expectation("allowed", parse_cond(cond), cond),), expect_undefined=None)
    r = check_test(probe, resolve_model(model), model)
    if r.undefined:
        return "undefined"
    assert r.status in ("pass", "fail"), (test.name, r.status, r.message)
    return "allowed" if r.conditions[0].allowed else "forbidden"


def index_rows(out: Path) -> list[list[str]]:
    lines = (out / "index.tsv").read_text().splitlines()
    return [line.split("\t") for line in lines if not line.startswith("#")]


# ------------------------------------------------------------------------ the classic families --

@pytest.fixture(scope="module")
def generic4(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("generic4")
    assert gen("--preset", "generic", "--size", "4", "-o", str(out)) == 0
    return out


def test_generic_size4_has_the_classic_families(generic4):
    rows = index_rows(generic4)
    families = {r[1][:-len(".yaml")] for r in rows}
    for fam in ("MP", "SB", "LB", "S", "R", "2+2W", "WRC", "WWC", "RWC", "ISA2", "W+RWC", "IRIW",
                "3.SB", "3.LB", "3.2W", "4.SB", "4.LB", "4.2W"):
        assert fam in families, fam
        assert (generic4 / f"{fam}.yaml").is_file()
    names = {r[0] for r in rows}
    for name in ("MP+sameGPU", "MP+po-rel.gpu+acq.gpu-po+sameGPU", "MP+fence.sc.gpus+sameGPU",
                 "SB+fence.sc.gpus+sameGPU", "LB+acq.gpu-po-rel.gpu+acq.gpu-po+sameGPU",
                 "2+2W+fence.sc.gpus+sameGPU", "IRIW+fence.sc.gpus+sameGPU",
                 "WRC+acq.gpu-po-rel.gpu+acq.gpu-po+sameGPU", "ISA2+po-rel.gpu+acq.gpu-po-rel.gpu+acq.gpu-po+sameGPU"):
        assert name in names, name
    # The conditions of the classic shapes (diy's, in herd syntax).
    cond = {r[0]: r[3] for r in rows}
    assert cond["MP+sameGPU"] == r"P1:r0=1 /\ P1:r1=0"
    assert cond["SB+sameGPU"] == r"P0:r0=0 /\ P1:r0=0"
    assert cond["LB+sameGPU"] == r"P0:r0=1 /\ P1:r0=1"
    assert cond["2+2W+sameGPU"] == r"x=2 /\ y=2"
    assert cond["R+sameGPU"] == r"P1:r0=0 /\ y=2"
    assert cond["S+sameGPU"] == r"P1:r0=1 /\ x=2"
    assert cond["IRIW+sameGPU"] == r"P1:r0=1 /\ P1:r1=0 /\ P3:r0=1 /\ P3:r1=0"
    assert cond["WRC+sameGPU"] == r"P1:r0=1 /\ P2:r0=1 /\ P2:r1=0"
    # No name twice, and the index agrees with the counter.
    assert len(names) == len(rows)
    assert len(rows) == sum(count_shape(s, select("generic", size=4))
                            for _, g in family_shapes(select("generic", size=4)) for s in g)


def _expected_names(family: str, threads: list[tuple[str, str]]) -> set[str]:
    """Every name the grammar of docs/gen.md gives a two-access-per-thread family, from each
    thread's kinds: access weak or rel/acq.gpu, program order plain or fence.sc.gpu."""
    def access(kind):
        return ["", "rel.gpu" if kind == "W" else "acq.gpu"]

    per_thread = []
    for k0, k1 in threads:
        per_thread.append(["-".join(t for t in (a, sep, b) if t)
                           for a in access(k0) for sep in ("po", "fence.sc.gpu") for b in access(k1)])
    out = set()
    for comps in itertools.product(*per_thread):
        if all(c == "po" for c in comps):
            out.add(f"{family}+sameGPU")
        elif len(set(comps)) == 1:
            out.add(f"{family}+{comps[0]}s+sameGPU")
        else:
            out.add("+".join([family, *comps, "sameGPU"]))
    return out


def test_generic_size4_every_annotation_combination(generic4):
    names = {r[0] for r in index_rows(generic4) if r[1] in ("MP.yaml", "SB.yaml", "S.yaml")}
    mp = _expected_names("MP", [("W", "W"), ("R", "R")])
    s = _expected_names("S", [("W", "W"), ("R", "W")])
    assert len(mp) == 64 and mp <= names and s <= names
    # SB is symmetric: a combination and its thread-swapped twin are one test.
    sb = _expected_names("SB", [("W", "R"), ("W", "R")])
    sb_got = {n for n in names if n.startswith("SB+")}
    assert sb_got <= sb and len(sb_got) == (64 + 8) // 2        # Burnside: 64 combinations, 8 symmetric
    for n in sb - sb_got:
        a, b = n.split("+")[1:3]
        assert f"SB+{b}+{a}+sameGPU" in sb_got, n


# ------------------------------------------------------ the same verdicts as litmus/core MP/SB --

_LOC = re.compile(r"\[([A-Za-z_$][\w$]*)\]")


def _level(p: Position, q: Position) -> str:
    if p.cta_key() == q.cta_key():
        return "warp" if p.warp == q.warp else "cta"
    if p.cluster_key() == q.cluster_key():
        return "cluster"
    return "gpu" if p.gpu == q.gpu else "sys"


def _signature(threads: list[tuple[str, Position, list[str]]]):
    """Code with locations renamed in order of appearance and the placement level, least over
    the two thread orders; with the thread order that gives it."""
    best = None
    for order in itertools.permutations(range(len(threads))):
        names: dict[str, str] = {}
        code = []
        for i in order:
            code.append(tuple(_LOC.sub(lambda m: "[" + names.setdefault(m.group(1), f"L{len(names)}") + "]",
                                       " ".join(c.split())) for c in threads[i][2]))
        sig = (_level(threads[0][1], threads[1][1]), tuple(code))
        if best is None or sig < best[0]:
            best = (sig, [threads[i][0] for i in order])
    return best


_AT = re.compile(r"gpu(\d+)\.cluster(\d+)\.cta(\d+)(?:\.warp(\d+))?")


def _generated_threads(body: str):
    threads, cur = [], None
    for line in body.splitlines():
        s = line.strip()
        if re.fullmatch(r"P\d+:", s):
            cur = [s[:-1], None, []]
            threads.append(cur)
        elif s.startswith("at: ") and cur is not None:
            g, cl, cta, w = _AT.fullmatch(s[4:]).groups()
            cur[1] = Position(int(g), int(cl), int(cta), int(w or 0))
        elif s.startswith("- ") and cur is not None:
            cur[2].append(s[2:])
    return [tuple(t) for t in threads]


def test_generated_mp_sb_match_hand_written_verdicts():
    hand = [t for f in ("MP.yaml", "SB.yaml") for t in load_file(LITMUS_DIR / "core" / f)]
    assert not [t for t in hand if isinstance(t, LitmusError)]
    hand_sig = {}
    for t in hand:
        plain = all(m.space == "global" and m.init == 0 and m.alias_of is None and m.view is None
                    and m.mbarrier is None and m.tensormap is None for m in t.memory)
        if len(t.threads) == 2 and plain:
            sig, order = _signature([(th.name, th.position, [i.text for i in th.code]) for th in t.threads])
            hand_sig.setdefault(sig, (t, order))
    sel = select("scopes", size=2, edges=["PodWW", "PodRR", "PodWR", "Rfe", "Fre", "fence.sc", "fence.acq_rel",
                                          "fence.rel", "fence.acq"])
    matched = []
    for g in all_tests(sel):
        sig, order = _signature(_generated_threads(g.body))
        if sig in hand_sig:
            matched.append((g, order, *hand_sig[sig]))
    names = {h.name for _, _, h, _ in matched}
    # Every scope x placement of the release/acquire and fence.sc matrices, and the fence variants.
    assert len(names) >= 60, sorted(names)
    for must in ("MP+rel.gpu+acq.gpu+sameCluster", "MP+rel.cta+acq.cta+sameCluster", "MP+fence.acq_rel.sys+diffGPU",
                 "MP+fence.rel+fence.acq", "SB+fence.sc.cluster+sameCluster", "SB+fence.sc.cta+diffCluster",
                 "SB+fence.sc+relaxed", "SB+fence.acq_rel"):
        assert must in names, must
    for g, g_order, h, h_order in matched:
        rename = dict(zip(g_order, h_order))
        hcond = re.sub(r"P\d+(?=:)", lambda m: rename[m.group(0)], g.condition)
        gtest = load_text(g.body)[0]
        got = verdict(gtest, g.condition)
        assert got == verdict(h, hcond), (g.name, h.name)
        stated = [e.kind for e in h.expectations if " ".join(e.text.split()) == hcond]
        assert stated in ([], [got]), (g.name, h.name, stated, got)


# ------------------------------------------------------------------------------------- dedup --

def _renaming_key(t: LitmusTest, cond: str) -> tuple:
    """The test up to renaming of threads, locations and registers (whatever the thread order)."""
    best = None
    for order in itertools.permutations(range(len(t.threads))):
        names: dict[str, str] = {}
        tnames = {t.threads[i].name: f"T{k}" for k, i in enumerate(order)}
        code = []
        for i in order:
            th = t.threads[i]
            code.append(tuple(_LOC.sub(lambda m: "[" + names.setdefault(m.group(1), f"L{len(names)}") + "]", c.text)
                              for c in th.code))
        levels = tuple(_level(t.threads[a].position, t.threads[b].position)
                       for a, b in itertools.combinations(order, 2))
        c = re.sub(r"P\d+(?=:)", lambda m: tnames[m.group(0)], cond)
        c = re.sub(r"\b([a-z])(?==)", lambda m: names.get(m.group(1), m.group(1)), c)
        key = (tuple(code), levels, " /\\ ".join(sorted(c.split(" /\\ "))))
        best = key if best is None or key < best else best
    return best


def test_renamed_duplicates_are_removed(tmp_path):
    # One cycle given in two rotations (threads renamed) and again: one set of tests.
    a, b = tmp_path / "a", tmp_path / "b"
    assert gen("--cycle", "PodWR Fre PodWR Fre", "--cycle", "Fre PodWR Fre PodWR", "-o", str(a)) == 0
    assert gen("--cycle", "PodWR Fre PodWR Fre", "-o", str(b)) == 0
    assert (a / "SB.yaml").read_bytes() == (b / "SB.yaml").read_bytes()
    names = {r[0] for r in index_rows(a)}
    assert "SB+fence.sc.gpu+po+sameGPU" in names and "SB+po+fence.sc.gpu+sameGPU" not in names
    # No two generated tests are equal up to renaming (symmetric families, mixed placements).
    c = tmp_path / "c"
    assert gen("--size", "3", "--edges", "PodWR,PodWW,PodRR,Fre,Rfe,Coe", "--exclude", "rel,acq",
               "--placement", "cta,gpu", "--placement-mode", "mixed", "-o", str(c)) == 0
    rows = {r[0]: r[3] for r in index_rows(c)}
    tests = [t for t in load_paths([c])]
    assert len(tests) == len(rows) > 300
    keys = [_renaming_key(t, rows[t.name]) for t in tests]
    assert len(set(keys)) == len(keys)


def test_deterministic_bytes(tmp_path):
    for run in ("one", "two"):
        assert gen("--preset", "async", "--size", "2", "--placement", "cluster", "-o", str(tmp_path / run)) == 0
    one = sorted(p.name for p in (tmp_path / "one").iterdir())
    assert one == sorted(p.name for p in (tmp_path / "two").iterdir()) and len(one) > 3
    for name in one:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name


def test_large_families_are_split_into_files_ptxmc_run_reads(tmp_path, monkeypatch):
    """A family is split into FAMILY.yaml, FAMILY.part2.yaml, ... (each under half the default
    yaml_bytes; here a smaller bound to keep the run short): the index names each test's file,
    every test loads once, and a second run into the folder removes every part first."""
    from checker.gen import writer

    monkeypatch.setattr(writer, "PART_BYTES", 3_000)
    out = tmp_path / "o"
    args = ("--size", "3", "--edges", "PodWR,PodWW,PodRR,Fre,Rfe,Coe", "--exclude", "rel,acq", "-o", str(out))
    assert gen(*args) == 0
    files = sorted(p.name for p in out.glob("*.yaml"))
    parts = [f for f in files if ".part" in f]
    assert parts and all(p.stat().st_size <= 3_000 for p in out.glob("*.yaml") if p.read_text().count("\n- name") > 1)
    rows = index_rows(out)
    assert {r[1] for r in rows} == set(files)
    tests = load_paths([out])
    assert sorted(t.name for t in tests) == sorted(r[0] for r in rows)
    monkeypatch.setattr(writer, "PART_BYTES", 10**9)
    assert gen(*args) == 0                                 # the parts of the first run are gone
    assert not [f for f in out.glob("*.yaml") if ".part" in f.name]
    assert len(load_paths([out])) == len(tests)


# ------------------------------------------------------------ validity and the sanity check --

SMALL = [("generic", {}), ("generic", {"placements": ["warp", "cta", "sys"], "placement_mode": "mixed",
                                       "edges": ["PodWR", "PodRR", "PodRW", "Rfe", "Fre"], "size": 3}),
         ("scopes", {"edges": ["PodWW", "PodRR", "Rfe", "Fre"], "placements": ["cta", "sys"]}),
         ("proxy", {"edges": ["PodWW", "PodRR", "PodWR", "Rfe", "Fre"]}), ("async", {})]


@pytest.mark.parametrize("preset,kw", SMALL, ids=["generic", "mixed-placement", "scopes", "proxy", "async"])
def test_small_presets_load_and_conditions_are_sane(preset, kw, tmp_path):
    """Every test of a small run loads and lowers; on a sample, the cycle condition is
    satisfiable without axioms (a model with none) and the PTX model judges it."""
    sel = select(preset, **{"size": 2, **kw})
    tests = list(all_tests(sel))
    assert tests
    step = max(1, len(tests) // 250)
    sample = tests[::step]
    (tmp_path / "none.cat").write_text(NO_AXIOMS)
    none = str(tmp_path / "none.cat")
    seen = set()
    for i, g in enumerate(sample):
        items = load_text(g.body, f"{g.family}.yaml")
        assert len(items) == 1 and isinstance(items[0], LitmusTest), (g.name, items)
        t = items[0]
        assert t.name == g.name and "ptxmc gen" in t.source and g.cycle in t.source and not t.expectations
        lower(t)
        if i % 10 == 0:
            assert verdict(t, g.condition, none) == "allowed", g.name
            seen.add(verdict(t, g.condition))
    assert "forbidden" in seen or preset == "async"


# ----------------------------------------------------------------------------- the counter --

@pytest.mark.parametrize("preset,kw", [
    ("generic", {}), ("scopes", {}),
    ("generic", {"placements": ["warp", "cta", "gpu", "sys"], "placement_mode": "mixed", "size": 3}),
    ("scopes", {"scope_mode": "mixed", "scopes": ["cta", "gpu"]}),
    ("proxy", {"edges": ["alias", "async", "tmap", "mbar_wait", "wait_group", "fence.proxy.async"]}),
    ("generic", {"edges": ["Po", "com"], "size": 3, "threads": 3}),
])
def test_count_equals_enumeration(preset, kw):
    kw = {"size": 2, **kw}
    sel = select(preset, **kw)
    groups = family_shapes(sel)
    for _, shapes in groups:
        for s in shapes:
            assert count_shape(s, sel) == sum(1 for _ in variants(s, sel)), s.cycle


# ---------------------------------------------------------------------- cycles and conditions --

def test_cycle_rules():
    mp = parse_cycle("Rfe PodRR Fre PodWW")               # any rotation
    assert mp.family == "MP" and mp.cycle == "PodWW Rfe PodRR Fre"
    corr = parse_cycle("Rfe PosRR Fre")
    assert corr.family == "CoRR" and corr.reads == (None, 1, 0)
    with pytest.raises(CycleError, match="Pod edge joins"):
        parse_cycle("PodWW Rfe PosRR Fre")                # one location change cannot close
    with pytest.raises(CycleError, match="no program-order edge"):
        parse_cycle("Rfe Fre Rfe Fre")
    with pytest.raises(CycleError, match="starts at a read"):
        parse_cycle("PodWW Fre PodRR Rfe")
    with pytest.raises(CycleError, match="two coherence edges"):
        parse_cycle("PodWW Coe Coe PodWW Coe Coe")        # co into two writes of y: not observable


def test_placements():
    assert positions(("cta", "gpu", "gpu")) == ((0, 0, 0, 0), (0, 0, 0, 1), (0, 1, 1, 0))
    assert positions(("warp", "warp")) == ((0, 0, 0, 0), (0, 0, 0, 0))
    assert positions(("cluster", "sys", "gpu", "sys")) == ((0, 0, 0, 0), (0, 0, 1, 0), (1, 1, 2, 0), (1, 2, 3, 0))
    assert positions(("cta", "cta", "gpu")) is None           # T0, T2 share T1's CTA: not 'gpu' apart
    assert positions(("sys", "gpu", "gpu")) is None
    assert list(choices(3, ("cta", "gpu"), "mixed")) == [("cta", "cta", "cta"), ("cta", "gpu", "gpu"),
                                                         ("gpu", "cta", "gpu"), ("gpu", "gpu", "cta"),
                                                         ("gpu", "gpu", "gpu")]


def test_expect_from_model(tmp_path):
    out = tmp_path / "m"
    assert gen("--cycle", "PodWW Rfe PodRR Fre", "--cycle", "PodWR Fre PodWR Fre", "--expect-from-model",
               "-o", str(out)) == 0
    items = load_paths([out])
    assert all(isinstance(t, LitmusTest) for t in items)
    rows = {r[0]: r for r in index_rows(out)}
    model = resolve_model("ptx")
    for t in items:
        assert "model-derived" in t.source and "ptx" in t.source
        assert len(t.expectations) == 1 and t.expectations[0].text == rows[t.name][3]
        assert rows[t.name][4] == t.expectations[0].kind
        assert check_test(t, model).status == "pass", t.name
    kinds = {rows[n][4] for n in rows}
    assert kinds == {"allowed", "forbidden"}
    assert rows["MP+po-rel.gpu+acq.gpu-po+sameGPU"][4] == "forbidden"
    assert rows["MP+sameGPU"][4] == "allowed"
    assert rows["SB+fence.sc.gpus+sameGPU"][4] == "forbidden"
    # Without the flag: no expectation at all.
    plain = tmp_path / "p"
    assert gen("--cycle", "PodWW Rfe PodRR Fre", "-o", str(plain)) == 0
    assert "expect:" not in (plain / "MP.yaml").read_text()


def test_async_mp_follows_the_proxy_rules():
    """The async preset's MP, judged by the model, follows the rules litmus/proxy/MP-proxies.yaml
    states: a bulk-copy write needs its completion (wait_group, with the implicit proxy fence)
    before the release, else the reader's load is in flight with it; a bulk-copy read of data
    written by a generic store needs fence.proxy.async in the copy's CTA. The flag load is an
    await (the copy is issued once the flag is seen)."""
    tests = {t.name: t for t in all_tests(select("async", size=2, edges=["PodWW", "PodRR", "Rfe", "Fre"]))}
    want = {
        "MP+async-wait_group-rel.cluster+acq.cluster-po+sameCluster": "forbidden",
        "MP+async-po-rel.cluster+acq.cluster-po+sameCluster": "undefined",
        "MP+po-rel.cluster+acq.cluster-fence.proxy.async-async+sameCluster": "forbidden",
        "MP+po-rel.cluster+acq.cluster-po-async+sameCluster": "allowed",
        "MP+fence.proxy.async-rel.cluster+acq.cluster-po-async+sameCluster": "allowed",   # writer's CTA
        "MP+fence.proxy.async-rel.cluster+acq.cluster-po-async+sameCTA": "forbidden",     # the copy's CTA
    }
    for name, expected in want.items():
        g = tests[name]
        assert "r0, [y] == 1" in g.body, name
        assert verdict(load_text(g.body)[0], g.condition) == expected, name


def test_usage_errors(tmp_path, capsys):
    assert gen("--edges", "PodXY", "-o", str(tmp_path / "x")) == 2
    assert "unknown edge or annotation 'PodXY'" in capsys.readouterr().err
    assert gen("--cycle", "PodWW Rfe PosRR Fre", "-o", str(tmp_path / "x")) == 2
    assert "Pod edge" in capsys.readouterr().err
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "mine.txt").write_text("keep")
    assert gen("--cycle", "PodWW Rfe PodRR Fre", "-o", str(busy)) == 2
    assert "holds files that are not ptxmc's gen output (mine.txt)" in capsys.readouterr().err
    assert (busy / "mine.txt").read_text() == "keep"
    # An earlier output is replaced, files it did not write are kept.
    again = tmp_path / "again"
    assert gen("--preset", "generic", "--size", "2", "-o", str(again)) == 0
    assert gen("--cycle", "PodWW Rfe PodRR Fre", "-o", str(again)) == 0
    assert sorted(p.name for p in again.iterdir()) == [".ptxmc-output", "MP.yaml", "index.tsv"]


# ---------------------------------------------- issue 37: gen follows the output policy (D5) --

SB_MP = ("--cycle", "PodWW Rfe PodRR Fre", "--cycle", "PodWR Fre PodWR Fre")


def test_gen_never_writes_through_a_link_in_its_folder(tmp_path, capsys):
    # D5: a link put into an earlier gen folder, named as a family the next run writes, was
    # written through: the file outside the folder was replaced by generated YAML.
    out = tmp_path / "g"
    assert gen("--cycle", "PodWW Rfe PodRR Fre", "-o", str(out)) == 0
    precious = tmp_path / "precious.txt"
    precious.write_text("precious user data")
    (out / "SB.yaml").symlink_to("../precious.txt")
    mp = (out / "MP.yaml").read_text()
    capsys.readouterr()
    assert gen(*SB_MP, "-o", str(out)) == 2
    assert "not ptxmc gen's earlier output (SB.yaml)" in capsys.readouterr().err
    assert precious.read_text() == "precious user data" and (out / "SB.yaml").is_symlink()
    assert (out / "MP.yaml").read_text() == mp                  # refused before the work
    # --force writes ptxmc's files into it, still never through the link
    assert gen(*SB_MP, "-o", str(out), "--force") == 2
    assert "SB.yaml: it is a symbolic link" in capsys.readouterr().err
    assert precious.read_text() == "precious user data"


def test_gen_never_blocks_on_a_fifo_in_its_folder(tmp_path, capsys):
    import os

    out = tmp_path / "g"
    assert gen("--cycle", "PodWW Rfe PodRR Fre", "-o", str(out)) == 0
    os.mkfifo(out / "SB.yaml")
    assert gen(*SB_MP, "-o", str(out), "--force") == 2          # before: blocked forever in open()
    assert "SB.yaml: it is a FIFO" in capsys.readouterr().err


def test_gen_output_folder_that_is_a_link_is_refused(tmp_path, capsys):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("real")
    assert gen("--cycle", "PodWW Rfe PodRR Fre", "-o", str(tmp_path / "link")) == 2
    assert "it is a symbolic link" in capsys.readouterr().err and not list((tmp_path / "real").iterdir())
    assert gen("--cycle", "PodWW Rfe PodRR Fre", "-o", str(tmp_path / "link"), "--follow-symlinks") == 0
    assert (tmp_path / "real" / "MP.yaml").is_file()


def test_gen_replaces_an_earlier_output_without_marker(tmp_path):
    # outputs written before the marker existed: an index naming every file there
    out = tmp_path / "old"
    assert gen("--cycle", "PodWW Rfe PodRR Fre", "-o", str(out)) == 0
    (out / ".ptxmc-output").unlink()
    assert gen("--cycle", "PodWR Fre PodWR Fre", "-o", str(out)) == 0
    assert sorted(p.name for p in out.iterdir()) == [".ptxmc-output", "SB.yaml", "index.tsv"]


# ------------------------------------------------- issue 37: bounds and checked values (D9, D14, D19) --

@pytest.mark.parametrize("argv, message", [
    (("--size", "10000000", "--count"), "--size 10000000: at most 8"),
    (("--size", "99999999999", "--count"), "--size 99999999999: at most 8"),
    (("--threads", "9", "--count"), "--threads 9: at most 8"),
    (("--preset", "scopes", "--size", "4", "-o", "OUT"), "the selection has more than --max 1,000,000 tests"),
    (("--cycle", "PodWW Rfe PodRR Fre", "--max", "10", "-o", "OUT"), "more than --max 10 tests"),
    (("--cycle", "PodWW Rfe PodRR Fre", "--max", "0", "-o", "OUT"), "--max 0: must be at least 1"),
    (("--cycle", "PodWW Rfe PodRR Fre", "--expect-from-model", "--timeout", "nan", "-o", "OUT"),
     "--timeout nan: must be a finite number"),
    (("--cycle", "PodWW Rfe PodRR Fre", "--expect-from-model", "--timeout", "inf", "-o", "OUT"),
     "--timeout inf: must be a finite number"),
    (("--cycle", "PodWW Rfe PodRR Fre", "--expect-from-model", "--timeout", "-1", "-o", "OUT"),
     "--timeout -1: must be positive"),
    (("--cycle", "PodWW Rfe PodRR Fre", "--expect-from-model", "--timeout", "0", "-o", "OUT"),
     "--timeout 0: must be positive"),
    (("--cycle", "PodWW Rfe PodRR Fre", "--expect-from-model", "--option", "bogus", "-o", "OUT"),
     "--option 'bogus': the model ptx.cat has no such option"),
])
def test_gen_refuses_unbounded_or_unchecked_values(tmp_path, capsys, argv, message):
    out = tmp_path / "out"
    assert gen(*[str(out) if a == "OUT" else a for a in argv]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()                                     # nothing written
