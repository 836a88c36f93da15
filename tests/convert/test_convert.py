"""`ptxmc import` (herd, Dat3M, mixedproxy) and `ptxmc export --to herd`.

The test data under tests/convert_data/ was written for these tests (no other project's suites or
verdicts). What is checked: each format's files convert or are skipped exactly as expected, with
the reason and the source line; every conversion loads with ptxmc's own loader; conversions are
byte-for-byte deterministic; the mapping of placement, semantics, scopes, proxies, register
values and conditions; the verdicts the data files state agree with ptxmc's checker (so a wrong
mapping of a scope or a placement shows); the command line; and export followed by import gives
the same verdicts on every bundled litmus/core test in the generic subset.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from checker import LITMUS_DIR
from checker.resources import resolve_model
from checker.verdict.check import check_test
from checker.convert import export_paths, import_paths, import_text
from checker.convert.cli import add_subcommands
from checker.convert.controlflow import to_code
from checker.convert.export import outside_subset, write as write_export
from checker.convert.model import Code, Control, Unconvertible
from checker.errors import LitmusError
from checker.front.litmus import load_paths, load_text

DATA = Path(__file__).parents[1] / "convert_data"

# name -> 'stated' / 'none' (converted; whether the file states a verdict), or
# (file:line, words of the reason) for a skipped test
EXPECTED = {
    "dat3m": {
        "MP-rel-acq": "stated", "MP-weak": "none", "SB-fence-sc": "stated", "RMW-ops": "stated",
        "Barrier-cta": "stated", "Barrier-quorum": "none", "Barrier-sites": "none", "Proxy-alias": "stated", "Proxy-constant": "none", "Values-sys": "stated",
        "MP-cta-scope": "stated",
        "Spinlock-goto": "stated",
        "Atom-sub": ("dat3m/Atom-sub.litmus:7", "atom.sub: not a PTX atomic operation"),
        "Cond-regs": "stated",
        "Cond-ints": ("dat3m/Cond-ints.litmus:8", "a comparison of two integers"),
        "Filter": ("dat3m/Filter.litmus:9", "'filter' is not supported"),
        "Pointer": ("dat3m/Pointer.litmus:5", "holds the address of 'x'"),
    },
    "herd": {
        "MP+rel+acq": "stated", "CoRR-gpuptx": "none", "SB+fence.sc.cluster": "stated", "LB+atom": "none",
        "Shared-bar": "stated", "Stated": "stated",
        "Guarded": "none", "Branch": "none",
        "AddrDep": ("herd/AddrDep.litmus:7", "the address would depend on the execution"),
        "Cvt": "none",
        "Ordering": ("herd/Ordering.litmus:8", "ordering comparison '<'"),
        "Unplaced": ("herd/Unplaced.litmus:6", "no thread placement"),
        "Multimem": ("herd/Multimem.litmus:7", "unknown or unsupported PTX instruction 'multimem'"),
    },
    "mixedproxy": {
        "MP_rel_acq_gpu": "stated", "MP_cta_two_blocks": "stated", "Alias_fence": "stated",
        "Texture_view": "stated", "Surface_write": "stated", "SB_sc_gpu": "stated", "Atom_add": "stated",
        "Shared_block": "stated",
        "Surface_atomic": ("mixedproxy/Surface_atomic.test:6", "surface atomics are not modelled"),
        "Template": ("mixedproxy/Template.test:5", "a template with $N placeholders"),
        "Fence_noscope": ("mixedproxy/Fence_noscope.test:6", "a fence without a scope"),
        "Shared_register": ("mixedproxy/Shared_register.test:9", "register r0 is used by d0b0t0 and d0b1t0"),
    },
}


@pytest.fixture(scope="module")
def runs():
    return {fmt: import_paths([DATA / fmt], fmt) for fmt in EXPECTED}


@pytest.fixture(scope="module")
def model():
    return resolve_model("ptx")


def converted(runs, fmt: str, name: str):
    test = next(c for c in runs[fmt].converted if c.name == name)
    (loaded,) = load_text(test.yaml, test.out)
    return test, loaded


def code(test, thread: str) -> list[str]:
    return [i.text for i in next(t for t in test.threads if t.name == thread).code]


def at(test, thread: str) -> str:
    p = next(t for t in test.threads if t.name == thread).position
    return f"gpu{p.gpu}" + (f".cluster{p.cluster}" if p.cluster is not None else "") + f".cta{p.cta}.warp{p.warp}"


def expects(test) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for e in test.expectations:
        out.setdefault(e.kind, []).append(e.text)
    return out


# ---------------------------------------------------------------------------------- outcomes --

@pytest.mark.parametrize("fmt", sorted(EXPECTED))
def test_each_file_is_converted_or_skipped_with_its_reason(runs, fmt):
    run = runs[fmt]
    assert run.files == len(EXPECTED[fmt]) >= 12
    got = {c.name: c.verdict for c in run.converted}
    got.update({s.name: s for s in run.skipped})
    assert sorted(got) == sorted(EXPECTED[fmt])
    for name, want in EXPECTED[fmt].items():
        if isinstance(want, str):
            assert got[name] == want, name
        else:
            where, words = want
            skip = got[name]
            assert isinstance(skip, type(run.skipped[0])), f"{name} was converted"
            assert f"{where}:" in skip.line() and words in skip.line(), skip.line()
    assert len(run.converted) >= 6 and len(run.skipped) >= 4


@pytest.mark.parametrize("fmt", sorted(EXPECTED))
def test_every_conversion_loads_with_ptxmcs_loader_and_says_where_it_came_from(runs, fmt):
    for c in runs[fmt].converted:
        items = load_text(c.yaml, c.out)
        assert len(items) == 1 and not isinstance(items[0], LitmusError), (c.name, items)
        test = items[0]
        assert test.name == c.name
        assert test.source.startswith(f"Imported from {fmt}/") and "by ptxmc import" in test.source
        if c.verdict == "stated":
            assert test.expectations and "the source file's claim, not derived" in test.source
        else:
            assert not test.expectations and "the file states no expectation" in test.source
            assert "states no verdict" in test.doc and "ptxmc check" in test.doc


@pytest.mark.parametrize("fmt", sorted(EXPECTED))
def test_conversions_are_deterministic(runs, fmt, tmp_path):
    again = import_paths([DATA / fmt], fmt)
    assert [(c.out, c.yaml) for c in again.converted] == [(c.out, c.yaml) for c in runs[fmt].converted]
    assert again.report() == runs[fmt].report()
    for d in ("a", "b"):
        main(["import", str(DATA / fmt), "--from", fmt, "-o", str(tmp_path / d)])
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert files and files == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    for f in files:
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()


@pytest.mark.parametrize("fmt", sorted(EXPECTED))
def test_stated_verdicts_agree_with_ptxmc(runs, fmt, model):
    """The data files' claims follow the PTX rules; a conversion that got a scope, a placement or
    a proxy wrong would make ptxmc disagree with them."""
    for c in runs[fmt].converted:
        (test,) = load_text(c.yaml, c.out)
        result = check_test(test, model)
        if any("may deadlock under ptxmc" in n for n in c.notes):     # Dat3M's barriers (A19)
            assert result.status == "fail" and "a hang" in result.message, (c.name, result.message)
            continue
        assert result.status == ("pass" if c.verdict == "stated" else "run"), (c.name, result.message,
                                                                                result.conditions)


# --------------------------------------------------------------------------------- the mapping --

def test_dat3m_placement_semantics_and_scopes(runs):
    _, mp = converted(runs, "dat3m", "MP-rel-acq")
    assert at(mp, "P0") == "gpu0.cta0.warp0" and at(mp, "P1") == "gpu0.cta1.warp0"
    assert code(mp, "P0") == ["st.weak [data], 42", "st.release.gpu [flag], 1"]
    assert code(mp, "P1") == ["ld.acquire.gpu r0, [flag]", "ld.weak r1, [data]"]
    assert expects(mp) == {"forbidden": ["P1:r0=1 /\\ P1:r1=0"]}
    _, weak = converted(runs, "dat3m", "MP-weak")          # no semantics: .weak, as in PTX
    assert code(weak, "P0") == ["st.weak [data], 1", "st.weak [flag], 1"]
    _, sys_ = converted(runs, "dat3m", "Values-sys")
    assert at(sys_, "P1") == "gpu1.cta0.warp0"
    assert code(sys_, "P0")[:3] == ["mov r1, 20", "add r2, r1, 1", "mul r2, r2, 2"]
    _, bar = converted(runs, "dat3m", "Barrier-cta")       # two threads of one CTA: two warps
    assert at(bar, "P1") == "gpu0.cta0.warp1"
    assert code(bar, "P0")[3] == "bar.cta.arrive 1, 2"


def test_dat3m_conditions_rmw_and_register_values(runs):
    c, rmw = converted(runs, "dat3m", "RMW-ops")
    assert code(rmw, "P1") == ["mov r7, 5", "atom.acq_rel.gpu.exch r1, [ctr], r7",
                               "atom.acquire.cta.cas r2, [ctr], 5, 9"]
    assert code(rmw, "P0") == ["atom.relaxed.gpu.add r0, [ctr], 1", "red.release.gpu.add [ctr], 2"]
    assert expects(rmw) == {"allowed": ["ctr=8"]}            # final ... with default: exists;
    assert any("tso: ~exists" in n for n in c.notes)
    _, sb = converted(runs, "dat3m", "SB-fence-sc")          # forall C: ~(C) is forbidden
    assert expects(sb) == {"forbidden": ["~(P0:r0=1 \\/ P1:r0=1)"]}
    _, weak = converted(runs, "dat3m", "MP-weak")            # exists C: no verdict, kept in the doc
    assert not weak.expectations and "'P1:r0=1 /\\ P1:r1=0'" in weak.doc


def test_conditions_comparing_two_observables_are_imported_and_exported(runs, model, tmp_path):
    """Issue 34 item 4: `P0:r0 == P1:r0` (a ticket lock's draw) and `0:r0=x` were refused; now
    they are EqRef conditions, judged like any other, and herd export writes them back."""
    _, regs = converted(runs, "dat3m", "Cond-regs")
    assert expects(regs) == {"forbidden": ["P0:r0=P1:r0"]}
    assert check_test(regs, model).status == "pass"
    herd = import_text("""PTX T
{
x=0;
}
 P0@cta 0,gpu 0                   | P1@cta 1,gpu 0                   ;
 atom.relaxed.gpu.global.add r0, [x], 1 | atom.relaxed.gpu.global.add r0, [x], 1 ;
~exists (0:r0=1:r0 \\/ x=0:r0)
""", "herd", "t.litmus")
    (t,) = load_text(herd.yaml, herd.out)
    assert expects(t) == {"forbidden": ["P0:r0=P1:r0 \\/ x=P0:r0"]}
    assert check_test(t, model).status == "pass"
    src = tmp_path / "t.yaml"
    src.write_text(herd.yaml)
    run = export_paths([src])
    (text,) = [e.text for e in run.exported]
    assert "~exists (P0:r0=P1:r0 \\/ x=P0:r0)" in text


def test_dat3m_barriers_that_rely_on_dat3ms_semantics_get_a_note(runs, model):
    """Issue 34 item 5: a counted barrier more threads arrive at than its count, and barriers without
    a count met at different sites, pass under Dat3M's barrier semantics and deadlock under the
    PTX text (A19): the import says so, and ptxmc indeed finds the hang."""
    c, quorum = converted(runs, "dat3m", "Barrier-quorum")
    assert code(quorum, "P1")[0] == "bar.cta.sync 1, 2"
    (note,) = [n for n in c.notes if "count 2" in n]
    assert "3 arrivals (P0, P1, P2)" in note and "may deadlock" in note and "docs/model.md#a19" in note
    assert "# note: barrier 1 with count 2" in c.yaml
    c, sites = converted(runs, "dat3m", "Barrier-sites")
    (note,) = [n for n in c.notes if "without a count" in n]
    assert "P0 meets barriers 0 and P1 meets 1" in note and "may deadlock" in note
    for t in (quorum, sites):
        res = check_test(t, model)
        assert any(n.startswith("hang:") and "blocks forever at bar.cta.sync" in n for n in res.notes), res.notes
    c, plain = converted(runs, "dat3m", "Barrier-cta")
    assert not [n for n in c.notes if "deadlock" in n]
    assert check_test(plain, model).status == "pass"


def test_dat3m_proxies_and_aliases(runs):
    _, alias = converted(runs, "dat3m", "Proxy-alias")
    assert alias.mem("view").alias_of == "buf"
    assert code(alias, "P0") == ["st.weak [buf], 7", "fence.proxy.alias", "ld.weak r0, [view]"]
    _, const = converted(runs, "dat3m", "Proxy-constant")
    assert (const.mem("cval").view, const.mem("cval").view_of) == ("constant", "val")
    assert code(const, "P1")[1:] == ["fence.proxy.constant", "ldc r1, [cval]"]


def test_herd_scope_tree_address_registers_and_cache_operators(runs):
    c, corr = converted(runs, "herd", "CoRR-gpuptx")
    assert at(corr, "P0") == "gpu0.cta0.warp0" and at(corr, "P1") == "gpu0.cta1.warp0"
    assert code(corr, "P0") == ["mov.s32 r0, 1", "st.s32 [x], r0"]
    assert code(corr, "P1") == ["ld.s32 r0, [x]", "membar.gl", "ld.s32 r2, [x]"]
    assert any("cache operator .cg dropped" in n for n in c.notes)
    assert any("P1:r3 holds the address of x" in n for n in c.notes)
    _, shared = converted(runs, "herd", "Shared-bar")
    s = shared.mem("s")
    assert (s.space, str(s.owner)) == ("shared", "gpu0.cta0.warp0")
    assert at(shared, "P1") == "gpu0.cta0.warp1"


def test_herd_clusters_pragmas_and_locations(runs):
    _, sb = converted(runs, "herd", "SB+fence.sc.cluster")
    assert at(sb, "P0") == "gpu0.cluster0.cta0.warp0" and at(sb, "P1") == "gpu0.cluster0.cta1.warp0"
    _, stated = converted(runs, "herd", "Stated")
    assert expects(stated) == {"allowed": ["P1:r0=1 /\\ P1:r1=2"], "forbidden": ["P1:r0=2 /\\ P1:r1=1"]}
    assert stated.arch == "sm_90" and "Axioms > Coherence" in stated.source
    assert at(stated, "P1") == "gpu0.cta0.warp1"
    c, lb = converted(runs, "herd", "LB+atom")
    assert any("'locations [x; y;]' dropped" in n for n in c.notes)
    assert code(lb, "P0") == ["atom.relaxed.gpu.exch.b32 r0, [x], 1", "red.relaxed.gpu.add.u32 [y], 1"]


def test_mixedproxy_threads_awaits_commands_and_views(runs):
    _, mp = converted(runs, "mixedproxy", "MP_rel_acq_gpu")
    assert [t.name for t in mp.threads] == ["d0b0t0", "d0b1t0"]
    assert at(mp, "d0b1t0") == "gpu0.cta1.warp0"
    assert code(mp, "d0b1t0") == ["ld.acquire.gpu r0, [flag] == 1", "ld.weak r1, [x]"]
    assert mp.threads[1].code[0].await_value == 1
    assert expects(mp) == {"forbidden": ["~d0b1t0:r1=1"]}          # assert C: ~C forbidden
    _, cta = converted(runs, "mixedproxy", "MP_cta_two_blocks")     # permit and check: allowed
    assert expects(cta) == {"allowed": ["d0b1t0:r1=0", "d0b1t0:r1=1"]}
    assert code(cta, "d0b0t0")[0] == "st.weak [x], 1"
    _, atom = converted(runs, "mixedproxy", "Atom_add")
    assert code(atom, "d0b0t0") == ["atom.relaxed.gpu.add r0, [c], 1"]
    assert expects(atom)["forbidden"] == ["d0b0t0:r0=0 /\\ d0b1t0:r1=0"]   # no double negation
    _, alias = converted(runs, "mixedproxy", "Alias_fence")
    assert alias.mem("y").alias_of == "x" and code(alias, "d0b0t0")[1] == "fence.proxy.alias"
    _, tex = converted(runs, "mixedproxy", "Texture_view")
    assert tex.mem("t").view == "texture" and code(tex, "d0b0t1")[2] == "tld r1, [t]"
    _, surf = converted(runs, "mixedproxy", "Surface_write")
    assert surf.mem("s").view == "surface" and code(surf, "d0b0t0")[0] == "sust [s], 4"
    _, shared = converted(runs, "mixedproxy", "Shared_block")
    assert shared.mem("s").space == "shared" and str(shared.mem("s").owner) == "gpu0.cta0.warp0"


def test_control_flow_becomes_labels_branches_and_setp_in_one_place():
    body = (Control("label", "LC00:", 3, "LC00"), Code("ld.acquire.gpu r0, [x]", 4),
            Control("branch", "beq r0, 0, LC00", 5, "LC00", ("beq", "r0", "0")),
            Control("branch", "bge r0, r1, END", 6, "END", ("bge", "r0", "r1")),
            Control("jump", "goto LC00", 7, "LC00"), Control("label", "END:", 8, "END"))
    assert [c.text for c in to_code(body, "f.litmus")] == [
        "LC00:", "ld.acquire.gpu r0, [x]", "setp.eq.s64 __c0, r0, 0", "@__c0 bra LC00",
        "setp.ge.s64 __c1, r0, r1", "@__c1 bra END", "bra LC00", "END:"]
    with pytest.raises(Unconvertible) as e:
        to_code((Control("branch", "bxx r0, 0, L", 9, "L", ("bxx", "r0", "0")),), "f.litmus")
    assert str(e.value).startswith("f.litmus:9: 'bxx r0, 0, L': unknown conditional branch 'bxx'")


def test_an_imported_spin_loop_is_judged_path_by_path():
    """Dat3M's `LC00: ... beq r0, 0, LC00` spin lock converts to a loop ptxmc unrolls, and the
    file's stated verdict (the acquire loop sees the data) holds; the predicate ptxmc adds stays
    out of the outcomes."""
    run = import_paths([DATA / "dat3m" / "Spinlock-goto.litmus"], "dat3m")
    (test,) = load_text(run.converted[0].yaml, run.converted[0].out)
    r = check_test(test, resolve_model("ptx"))
    assert r.status == "pass", r.message
    assert not any("__c" in k for k in r.observe)


# ------------------------------------------------------------------------- bad input, names --

def test_malformed_files_are_skipped_and_the_run_goes_on(tmp_path):
    (tmp_path / "a.litmus").write_text("PTX ok\n{ x=0; }\n P0@cta 0,gpu 0 ;\n st.weak x, 1 ;\nexists (x=1)\n")
    (tmp_path / "b.litmus").write_text("PTX broken\n(* never closed\n{ x=0; }\n")
    (tmp_path / "c.litmus").write_text("PTX nothreads\n{ x=0; }\n")
    (tmp_path / "d.litmus").write_bytes(b"PTX bin\n\xff\xfe\n")
    (tmp_path / "e.litmus").write_text("PTX rows\n{ x=0; }\n P0@cta 0,gpu 0 ;\n st.weak x, 1 | st.weak x, 2 ;\n")
    run = import_paths([tmp_path], "dat3m")
    assert [c.name for c in run.converted] == ["ok"]
    reasons = {Path(s.path).name: s.line() for s in run.skipped}
    assert reasons["b.litmus"].startswith("broken: ") and reasons["b.litmus"].endswith(
        "b.litmus:2: unterminated comment '(*'")
    assert "no thread header" in reasons["c.litmus"]
    assert "not a UTF-8 text file" in reasons["d.litmus"]
    assert "2 cells in a row of a test with 1 threads" in reasons["e.litmus"]


def test_duplicate_names_are_renamed_with_a_note(tmp_path):
    for sub in ("one", "two"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "t.litmus").write_text("PTX Same\n{ x=0; }\n P0@cta 0,gpu 0 ;\n st.weak x, 1 ;\n"
                                                 "exists (x=1)\n")
    run = import_paths([tmp_path], "dat3m")
    assert [(c.name, c.out) for c in run.converted] == [("Same", "one/t.yaml"), ("Same-2", "two/t.yaml")]
    assert any("renamed from 'Same'" in n and "one/t.litmus" in n for n in run.converted[1].notes)
    assert all(not isinstance(t, LitmusError) for c in run.converted for t in load_text(c.yaml, c.out))


def test_a_translation_ptxmc_rejects_names_the_source_line():
    text = "PTX Bad\n{ x=0; }\n P0@cta 0,gpu 0 ;\n ld.release.gpu r0, x ;\nexists (P0:r0=0)\n"
    got = import_text(text, "dat3m", "bad.litmus")
    assert str(got.error) == ("bad.litmus:4: 'ld.release.gpu r0, x': ptxmc does not accept it (translated to "
                              "'ld.release.gpu r0, [x]'): ld.release does not exist: a load is .weak, .relaxed, "
                              ".acquire, .volatile or .mmio")



def test_a_translation_that_hangs_is_converted_and_judged_a_hang():
    """A deadlock is a finding, not a malformed test (barriers 0 and 1 taken in opposite orders)."""
    hang = ("PTX Hang\n{ }\n P0@cta 0,gpu 0 | P1@cta 0,gpu 0 ;\n bar.cta.sync 0 | bar.cta.sync 1 ;\n"
            " bar.cta.sync 1 | bar.cta.sync 0 ;\nexists (true)\n")
    got = import_text(hang, "dat3m", "hang.litmus")
    (test,) = load_text(got.yaml)
    r = check_test(test, resolve_model("ptx"))
    assert r.status == "fail" and all(c.allowed is None for c in r.conditions), r.message
    assert r.message.startswith("no execution terminates") and "barrier 0 generation 1 never completes" in r.message and "barrier 1 generation 1" in r.message


def test_conditions_name_registers_the_code_never_writes():
    text = "PTX R\n{ P0:r3=0; }\n P0@cta 0,gpu 0 ;\n st.weak x, 1 ;\n~exists (P0:r3=1 \\/ P0:r4=2)\n"
    got = import_text(text, "dat3m", "r.litmus")
    (test,) = load_text(got.yaml)
    assert code(test, "P0") == ["mov r3, 0", "mov r4, 0", "st.weak [x], 1"]


# ------------------------------------------------------------------------------ command line --

def main(argv) -> int:
    parser = argparse.ArgumentParser(prog="ptxmc")
    add_subcommands(parser.add_subparsers(dest="cmd", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_import_writes_the_tests_and_the_report(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["import", str(DATA / "dat3m"), "--from", "dat3m", "-o", str(out)]) == 1   # some skipped
    captured = capsys.readouterr()
    assert "13 converted, 4 skipped (17 files)" in captured.out
    assert "ptxmc: skipped: Atom-sub: dat3m/Atom-sub.litmus:7:" in captured.err
    report = (out / "import-report.txt").read_text()
    assert "ptxmc import --from dat3m: 17 files, 13 tests converted, 4 skipped" in report
    assert "dat3m/MP-rel-acq.litmus -> MP-rel-acq.yaml  MP-rel-acq  [stated]" in report
    assert "Atom-sub: dat3m/Atom-sub.litmus:7:" in report
    loaded = load_paths([out])
    assert len(loaded) == 13 and not any(isinstance(t, LitmusError) for t in loaded)
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "ok.litmus").write_text("PTX ok\n{ x=0; }\n P0@cta 0,gpu 0 ;\n st.weak x, 1 ;\nforall (x=1)\n")
    assert main(["import", str(clean), "--from", "dat3m", "-o", str(tmp_path / "o2")]) == 0
    assert main(["import", str(tmp_path / "nope"), "--from", "herd", "-o", str(tmp_path / "o3")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_cli_export_lists_tests_outside_the_subset(tmp_path, capsys):
    suite = tmp_path / "s.yaml"
    suite.write_text(r"""
- name: plain
  source: "ptxmc tests"
  threads:
    P0: {at: gpu0.cta0, code: ['st.relaxed.gpu [x], 1']}
    P1: {at: gpu0.cta1, code: ['ld.relaxed.gpu r0, [x]']}
  expect: {allowed: ['P1:r0=1']}
- name: awaits
  source: "ptxmc tests"
  threads:
    P0: {at: gpu0.cta0, code: ['ld.acquire.gpu r0, [x] == 1']}
  expect: {allowed: ['P0:r0=1']}
- name: shared
  source: "ptxmc tests"
  memory: {s: {space: shared, owner: gpu0.cta0}}
  threads:
    P0: {at: gpu0.cta0, code: ['st.shared.u32 [s], 1']}
  expect: {allowed: ['s=1']}
- name: proxyfence
  source: "ptxmc tests"
  threads:
    P0: {at: gpu0.cta0, code: ['fence.proxy.alias']}
  expect: {allowed: ['true']}
""")
    out = tmp_path / "out"
    assert main(["export", str(suite), "--to", "herd", "-o", str(out)]) == 1
    assert (out / "plain.litmus").read_text() == (
        "PTX plain\n(* ptxmc: source: ptxmc tests *)\n(* ptxmc: allowed: P1:r0=1 *)\n{\nx=0;\n}\n"
        " P0@cta 0,gpu 0        | P1@cta 1,gpu 0         ;\n"
        " st.relaxed.gpu [x], 1 | ld.relaxed.gpu r0, [x] ;\nexists (P1:r0=1)\n")
    report = (out / "export-report.txt").read_text()
    assert "awaits: " in report and "an await (== v)" in report
    assert "'s' is shared memory" in report
    assert "fence.proxy is outside the generic subset" in report
    assert sorted(p.name for p in out.iterdir()) == [".ptxmc-output", "export-report.txt", "plain.litmus"]


def test_export_refuses_what_herd_cannot_state():
    (t,) = load_text("name: u\nthreads:\n  P0: {at: gpu0.cta0, code: ['st.weak [x], 1']}\n"
                     "expect: {undefined: false}\n")
    assert "an 'undefined:' expectation" in str(outside_subset(t))
    (t,) = load_text("name: n\nthreads:\n  P0: {at: gpu0.cta0, code: ['st.weak [x], 1']}\n")
    assert "no expectation" in str(outside_subset(t))


# ------------------------------------------------------------------------------- round trip --

def same_verdicts(original, reimported, model) -> tuple[bool, str]:
    """Check both tests with ptxmc and compare what the verdicts consist of: the status, each
    expectation's kind and answer (and how many allowed outcomes satisfy it or not), and the
    number of allowed outcomes. Thread names may differ (export renames them P0, P1, ...)."""
    def summary(test):
        r = check_test(test, model)
        return r.status, sorted((c.expected, c.allowed, c.positive, c.negative) for c in r.conditions), len(r.outcomes)

    a, b = summary(original), summary(reimported)
    return a == b, f"{original.name}: {a} != {b}"


def test_export_then_import_gives_the_same_verdicts_on_litmus_core(tmp_path, model):
    core = LITMUS_DIR / "core"
    run = export_paths([core])
    originals = {t.name: t for t in load_paths([core]) if not isinstance(t, LitmusError)}
    assert len(run.exported) >= 300 and len(run.exported) + len(run.skipped) == len(originals)
    assert all("is shared memory" in s.error.message or "is an alias" in s.error.message for s in run.skipped)
    write_export(run, tmp_path)
    back = import_paths([tmp_path], "herd")
    assert not back.skipped, [s.line() for s in back.skipped]
    assert sorted(c.name for c in back.converted) == sorted(e.name for e in run.exported)
    for c in back.converted:
        (reimported,) = load_text(c.yaml, c.out)
        assert reimported.expectations, c.name            # the ptxmc comments carried them
        ok, why = same_verdicts(originals[c.name], reimported, model)
        assert ok, why
