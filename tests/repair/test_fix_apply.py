"""`ptxmc fix --apply`: what is written keeps everything of the user's file that the repair does
not change (issue 32 item 7; issue 37 D1-D3, D6, D16, D17, D21-D23; the rules are in docs/fix.md
and docs/cli.md). Each test states the defect it pins."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from checker.cli import main
from checker.front.litmus import load_text
from checker.repair import output

# The searches' budget (seconds) is a safety net here, never what ends a search: on a loaded
# machine the default 120 s ended a mutant's search with nothing proven (status 'budget').
SAFETY = 1800.0

SB = """\
name: SB
source: "test of ptxmc fix --apply"
threads:
  P0:
    at: gpu0.cta0
    code:
      - st.relaxed.gpu.global [x], 1
      - ld.relaxed.gpu.global r0, [y]
  P1:
    at: gpu0.cta1
    code:
      - st.relaxed.gpu.global [y], 1
      - ld.relaxed.gpu.global r1, [x]
expect:
  forbidden: ['P0:r0=0 /\\ P1:r1=0']
"""

PTX_BLOCK = """\
# pasted PTX: the repair must be a diff of these lines
name: R09-ptx-block
source: "PTX ISA 9.4, mbarrier.arrive (.release/.relaxed, .cluster); mapa"
arch: sm_90
memory:
  buf0: {space: shared, owner: gpu0.cluster0.cta0}
  bar0: {space: shared, owner: gpu0.cluster0.cta0, mbarrier: {count: 1}}
  buf: {space: shared, owner: gpu0.cluster0.cta1, offset_of: buf0}
  bar: {space: shared, owner: gpu0.cluster0.cta1, offset_of: bar0, mbarrier: {count: 1}}
threads:
  P0:
    at: gpu0.cluster0.cta0
    ptx: |
      .reg .b32 %r<4>;
      mapa.shared::cluster.u32 %r2, buf0, 1;         // CTA 1's buf
      mapa.shared::cluster.u32 %r3, bar0, 1;         // CTA 1's bar
      st.shared::cluster.u32 [%r2], 7;
      mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%r3];
  P1:
    at: gpu0.cluster0.cta1
    ptx: |
      .reg .pred %p<2>;
      .reg .b32 %r<2>;
      mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 %p1, [bar], 0 == 1;
      ld.shared.u32 %r1, [buf];
expect:
  forbidden: ["P1:r1=0"]
"""


def _write(tmp_path, name: str, text: str, **kw) -> Path:
    f = tmp_path / name
    with open(f, "w", encoding="utf-8", **kw) as h:
        h.write(text)
    return f


def _changed(before: str, after: str) -> list[tuple[str, str]]:
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    assert len(a) == len(b)
    return [(x, y) for x, y in zip(a, b) if x != y]


def test_a_ptx_block_is_edited_in_place(tmp_path, capsys):
    # issue 32 item 7: was rewritten as a `code:` list without .reg lines, comments, [%r3], and renamed
    f = _write(tmp_path, "r09.yaml", PTX_BLOCK)
    assert main(["fix", str(f), "--apply", "--in-place"]) == 0
    out = capsys.readouterr().out
    assert "matrix" not in out and "standalone" not in out and "re-check of the patched file: pass" in out
    assert "strengthen to mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r3]  (P0, line 18" in out
    assert _changed(PTX_BLOCK, f.read_text()) == [
        ("      mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%r3];\n",
         "      mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r3];\n")]


def test_a_tab_indented_ptx_block_is_edited_in_place(tmp_path, capsys):
    # PTX pasted as nvcc prints it, each line indented by a tab: the loader reads it
    # (front.yamlsafe.tab_indented_blocks), and the repair was "not written as a diff: the
    # file's text does not parse as YAML"
    text = PTX_BLOCK.replace("      mapa.", "\tmapa.").replace("      st.shared::", "\tst.shared::") \
        .replace("      mbarrier.", "\tmbarrier.").replace("      ld.shared", "\tld.shared")
    assert text.count("\n\t") == 6
    f = _write(tmp_path, "r09tab.yaml", text)
    assert main(["fix", str(f), "--apply", "--in-place"]) == 0
    out = capsys.readouterr().out
    assert "re-check of the patched file: pass" in out and "does not parse" not in out
    assert _changed(text, f.read_text()) == [
        ("\tmbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%r3];\n",
         "\tmbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r3];\n")]


def test_a_ptx_block_takes_an_inserted_line_like_its_neighbours(tmp_path, capsys):
    text = PTX_BLOCK.replace("mbarrier.arrive.relaxed.cluster", "mbarrier.arrive.release.cluster") \
        .replace("      st.shared::cluster.u32 [%r2], 7;\n", "      st.shared::cluster.u32 [%r2], 7;   // data\n") \
        .replace("mbarrier.try_wait.parity.acquire.cluster", "mbarrier.try_wait.parity.relaxed.cluster")
    f = _write(tmp_path, "r09b.yaml", text)
    assert main(["fix", str(f), "--max", "1", "--apply", "-o", str(tmp_path / "out.yaml")]) == 0
    new = (tmp_path / "out.yaml").read_text()
    old_lines = text.splitlines()
    assert [ln for ln in new.splitlines() if ln not in old_lines] != []
    assert all(ln in new.splitlines() for ln in old_lines if "try_wait" not in ln and "ld.shared" not in ln)
    assert main(["run", str(tmp_path / "out.yaml")]) == 0
    capsys.readouterr()


def test_a_comment_that_repeats_the_statement_is_not_edited(tmp_path, capsys):
    # a skeleton of `ptxmc extract` ends each line with the PTX it came from, which may repeat the
    # statement: the patcher found it twice on the line and refused the repair ("not written once");
    # the place shows the comment, which names the compiler's PTX line
    arrive = "mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%r3];"
    text = PTX_BLOCK.replace(f"      {arrive}\n", f"      {arrive}   // L42: {arrive}\n")
    f = _write(tmp_path, "r09c.yaml", text)
    assert main(["fix", str(f), "--apply", "--in-place"]) == 0
    out = capsys.readouterr().out
    assert "re-check of the patched file: pass" in out and "not written as a diff" not in out
    assert f"(P0, line 18 '{arrive.rstrip(';')}' // L42: {arrive})" in out
    assert _changed(text, f.read_text()) == [
        (f"      {arrive}   // L42: {arrive}\n",
         f"      {arrive.replace('relaxed', 'release')}   // L42: {arrive}\n")]


MATRIX = """\
# Message passing, three variants. Hand-written notes that must survive.
name: MP+${v}
source: "my notes"
threads:
  P0:
    at: gpu0.cta0
    code:
      - st.weak.global [x], 1
      - ${fence}
      - st.relaxed.gpu.global [flag], 1
  P1:
    at: gpu0.cta1
    code:
      - ld.relaxed.gpu.global r0, [flag]
      - ${fence}
      - ld.weak.global r1, [x]
expect: {forbidden: ['P1:r0=1 /\\ P1:r1=0']}
matrix:
  - v: relaxed
    fence: ''
  - v: fences
    fence: fence.acq_rel.gpu
  - v: sc
    fence: fence.sc.gpu
"""


def test_in_place_on_a_matrix_row_keeps_the_other_rows(tmp_path, capsys):
    # D1: the file was replaced by the fixed row alone
    f = _write(tmp_path, "mp.yaml", MATRIX)
    before = load_text(MATRIX, str(f))
    assert main(["fix", f"{f}::MP+relaxed", "--apply", "--in-place"]) == 0
    assert "a row of a matrix" in capsys.readouterr().out
    text = f.read_text()
    after = {t.name: t for t in load_text(text, str(f))}
    assert all(after[t.name] == t for t in before) and set(after) == {t.name for t in before} | {"MP+relaxed-fixed"}
    assert "# Message passing, three variants. Hand-written notes that must survive." in text
    fixed = after["MP+relaxed-fixed"]
    assert fixed.source == "my notes" and fixed.expectations == after["MP+relaxed"].expectations
    main(["run", str(f)])
    assert "PASS      MP+relaxed-fixed" in capsys.readouterr().out


KEYS = """\
# pasted from nvcc -- keep my comments
name: MPptx
filter: 'P1:r0=1'
locations: [x, 'P1:r0']
rlimit: 5000000
threads:
  P0:
    at: gpu0.cta0
    ptx: |
      .reg .b32 %r<4>;
      st.global.b32 [x], 1;                     // data
      st.relaxed.gpu.global.b32 [flag], 1;      // flag
  P1:
    at: gpu0.cta1
    ptx: |
      .reg .b32 %r<4>;
      ld.relaxed.gpu.global.b32 %r0, [flag];
      ld.global.b32 %r1, [x];
expect:
  forbidden: ['P1:%r0=1 /\\ P1:%r1=0']
"""


def test_a_repair_keeps_every_key_comment_and_the_name(tmp_path, capsys):
    # D2: filter, locations, rlimit, comments, .reg lines
    # and the name were lost
    f = _write(tmp_path, "t.yaml", KEYS)
    (old,) = load_text(KEYS, str(f))
    assert main(["fix", str(f), "--apply", "--in-place"]) == 0
    capsys.readouterr()
    text = f.read_text()
    (new,) = load_text(text, str(f))
    assert (new.name, new.filter, new.locations, new.rlimit) == (old.name, old.filter, old.locations, old.rlimit)
    assert [a for a, _ in _changed(KEYS, text)] == ["      st.relaxed.gpu.global.b32 [flag], 1;      // flag\n",
                                                    "      ld.relaxed.gpu.global.b32 %r0, [flag];\n"]


def test_in_place_refuses_a_file_edited_during_the_search(tmp_path, capsys, monkeypatch):
    # D3: the edit made meanwhile was overwritten. The
    # edit is made between the search and the writing (where a long search leaves time for it).
    f = _write(tmp_path, "sb.yaml", SB)
    verify = output.verify

    def edit_meanwhile(*a, **kw):
        with open(f, "a", encoding="utf-8") as h:
            h.write("# USER EDIT\n")
        return verify(*a, **kw)

    monkeypatch.setattr(output, "verify", edit_meanwhile)
    assert main(["fix", str(f), "--apply", "--in-place"]) == 2
    assert "changed since ptxmc read it" in capsys.readouterr().err
    assert f.read_text() == SB + "# USER EDIT\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_in_place_keeps_the_mode_and_refuses_read_only_files_and_hard_links(tmp_path, capsys):
    # D6: 0600 became 0644, 0444 was rewritten, a hard link split
    priv = _write(tmp_path, "priv.yaml", SB)
    priv.chmod(0o600)
    assert main(["fix", str(priv), "--apply", "--in-place"]) == 0
    assert stat.S_IMODE(priv.stat().st_mode) == 0o600 and priv.read_text() != SB
    ro = _write(tmp_path, "ro.yaml", SB)
    ro.chmod(0o444)
    assert main(["fix", str(ro), "--apply", "--in-place"]) == 2
    assert "read-only" in capsys.readouterr().err
    assert ro.read_text() == SB and stat.S_IMODE(ro.stat().st_mode) == 0o444
    hl = _write(tmp_path, "hl.yaml", SB)
    os.link(hl, tmp_path / "hl2.yaml")
    assert main(["fix", str(hl), "--apply", "--in-place"]) == 2
    err = capsys.readouterr()
    assert "hard links" in err.err and "Repair" not in err.out          # refused before the search
    assert hl.read_text() == SB and os.path.samefile(hl, tmp_path / "hl2.yaml")


def test_fix_reads_its_input_once(tmp_path, capsys):
    # D16: a pipe's second reading is empty, a FIFO's blocks
    r, w = os.pipe()
    os.write(w, SB.encode())
    os.close(w)
    try:
        assert main(["fix", f"/dev/fd/{r}", "--max", "1"]) == 0
    finally:
        os.close(r)
    out = capsys.readouterr().out
    assert "\n       - ld.relaxed.gpu.global r1, [x]\n" in out           # a line of context: the text was read
    assert "+name: " not in out and "matrix" not in out


def test_apply_checks_its_output_before_the_search(tmp_path, capsys):
    # D21
    f = _write(tmp_path, "sb.yaml", SB)
    (tmp_path / "dev").mkdir()
    os.mkfifo(tmp_path / "dev" / "fifo.yaml")
    assert main(["fix", str(f), "--apply", "-o", str(tmp_path / "dev" / "fifo.yaml")]) == 2
    res = capsys.readouterr()
    assert "FIFO" in res.err and res.out == ""                      # nothing searched, nothing printed
    cost = _write(tmp_path, "cost.yaml", "fence.sc.gpu: 31\n")
    assert main(["fix", str(f), "--cost", str(cost), "--apply", "-o", str(cost)]) == 2
    assert "one of the inputs" in capsys.readouterr().err and cost.read_text() == "fence.sc.gpu: 31\n"
    (tmp_path / "link.yaml").symlink_to("sb.yaml")
    assert main(["fix", str(tmp_path / "link.yaml"), "--apply", "--in-place"]) == 2
    assert "--follow-symlinks" in capsys.readouterr().err
    assert main(["fix", str(tmp_path / "link.yaml"), "--apply", "--in-place", "--follow-symlinks"]) == 0
    assert (tmp_path / "link.yaml").is_symlink() and f.read_text() != SB


PRUNE = """\
name: MPover
source: "test of ptxmc fix --prune"
threads:
  P0:
    at: gpu0.cta0
    code:
      - st.weak.global [x], 1
      - fence.sc.sys
      - st.release.sys.global [flag], 1
  P1:
    at: gpu0.cta1
    code:
      - ld.acquire.sys.global r0, [flag]
      - fence.sc.sys
      - ld.weak.global r1, [x]
  P2:
    at: gpu0.cta2
    code:
      - fence.sc.sys
expect:
  forbidden: ['P1:r0=1 /\\ P1:r1=0']
"""


def test_prune_may_empty_a_thread(tmp_path, capsys):
    # D22: the pruning was dropped ("does not load")
    f = _write(tmp_path, "pr.yaml", PRUNE)
    assert main(["fix", str(f), "--prune", "--apply", "--in-place"]) == 0
    out = capsys.readouterr().out
    assert "dropped" not in out and "Pruning 1 (saves" in out
    (t,) = load_text(f.read_text(), str(f))
    assert [len(th.code) for th in t.threads] == [2, 2, 0] and "    code: []\n" in f.read_text()
    assert main(["run", str(f)]) == 0


def test_line_separators_and_crlf_are_kept(tmp_path, capsys):
    # D23: U+2028/U+0085 in a quoted scalar were
    # turned into line breaks, CRLF into LF
    body = SB.replace('source: "test of ptxmc fix --apply"', 'source: "Store\u2028buffering\x85doc"')
    u = tmp_path / "u.yaml"
    u.write_bytes(body.encode())
    assert main(["fix", str(u), "--apply", "--in-place"]) == 0
    text = u.read_bytes().decode()
    assert text.startswith(body.split("threads:")[0])
    assert load_text(text, str(u))[0].source == load_text(body, str(u))[0].source
    crlf = tmp_path / "crlf.yaml"
    crlf.write_bytes(SB.replace("\n", "\r\n").encode())
    assert main(["fix", str(crlf), "--apply", "--in-place"]) == 0
    data = crlf.read_bytes()
    assert data.count(b"\r\n") == data.count(b"\n") > SB.count("\n")
    capsys.readouterr()


def test_no_traceback_when_z3_was_interrupted(tmp_path):
    # D17: Ctrl-C inside z3.Context() leaves an object without `owner`, whose __del__ printed
    # "Exception ignored in: <function Context.__del__>" at the interpreter's teardown
    f = _write(tmp_path, "sb.yaml", SB)
    code = ("import sys, z3\n"
            "from checker.cli import main\n"
            "broken = z3.Context.__new__(z3.Context)\n"
            f"sys.exit(main(['fix', {str(f)!r}, '--max', '1'], fast_exit=True))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                       cwd=Path(__file__).resolve().parents[2])
    assert r.returncode == 0 and "Repair 1" in r.stdout
    assert "Exception ignored" not in r.stderr and "Traceback" not in r.stderr


def test_a_dropped_repair_says_why_its_file_does_not_load(tmp_path, monkeypatch, ptx_model):
    # D22: "the patched file does not load: ; st.release...; ; " named neither the error nor the
    # removed instructions. A patch that breaks the file (made here by hand) is dropped with both.
    from checker.repair import yamlpatch
    from checker.repair.prune import prune
    from checker.repair.target import from_test

    f = _write(tmp_path, "pr.yaml", PRUNE)
    (t,) = load_text(PRUNE, str(f))
    r = prune(t, from_test(t), ptx_model, max_repairs=1, budget=SAFETY)
    monkeypatch.setattr(output, "patch", lambda original, *a, **k: yamlpatch.Patched(
        original.replace("threads:", "threads: [", 1), False, t.name))
    (sh,) = output.verify(r, PRUNE, ptx_model)
    assert sh.recheck.startswith(f"fail: the patched file does not load: {f}:5: ") and "YAML syntax" in sh.recheck
    text = output.text(r, [sh])
    assert "remove fence.sc.sys" in text and "; ; " not in text


def test_flow_lists_and_shared_lines_are_edited_where_they_stand(tmp_path, capsys):
    # a flow list's item is removed or inserted as an item of its own; a statement that shares its
    # line goes with its `;` (was: the first item of the line taken for the instruction's)
    text = PRUNE.replace("    code:\n      - ld.acquire.sys.global r0, [flag]\n      - fence.sc.sys\n"
                         "      - ld.weak.global r1, [x]\n",
                         "    code: ['ld.acquire.sys.global r0, [flag]', 'fence.sc.sys', 'ld.weak.global r1, [x]']\n") \
        .replace("      - st.weak.global [x], 1\n      - fence.sc.sys\n",
                 "      - st.weak.global [x], 1; fence.sc.sys\n")
    f = _write(tmp_path, "flow.yaml", text)
    assert main(["fix", str(f), "--prune", "--apply", "--in-place"]) == 0
    new = f.read_text()
    assert "    code: ['ld.acquire.gpu.global r0, [flag]', 'ld.weak.global r1, [x]']\n" in new
    assert "      - st.weak.global [x], 1\n      - st.release.gpu.global [flag], 1\n" in new
    sb = SB.replace("    code:\n      - st.relaxed.gpu.global [x], 1\n      - ld.relaxed.gpu.global r0, [y]\n",
                    "    code: ['st.relaxed.gpu.global [x], 1', 'ld.relaxed.gpu.global r0, [y]']\n")
    g = _write(tmp_path, "sb.yaml", sb)
    assert main(["fix", str(g), "--apply", "--in-place"]) == 0
    assert "    code: ['st.relaxed.gpu.global [x], 1', 'fence.sc.gpu', 'ld.relaxed.gpu.global r0, [y]']\n" \
        in g.read_text()
    capsys.readouterr()


def test_a_rendered_test_keeps_its_labels(tmp_path):
    """A matrix row written standalone (render_test) keeps every `L:` of its threads, at its place
    (was: dropped, so each repair of a looping row failed its re-check, 'no such label')."""
    from checker.front.litmus import load_paths, load_text
    from checker.repair.yamlpatch import render_test
    from checker import LITMUS_DIR
    for t in load_paths([str(LITMUS_DIR / "liveness" / "hang-regressions.yaml")]):
        if any(th.labels for th in t.threads):
            [back] = load_text(render_test(t, t.name), "copy.yaml")
            assert not isinstance(back, Exception), back           # (was: "no such label")
            assert [(th.labels, [i.text for i in th.code]) for th in back.threads] == \
                [(th.labels, [i.text for i in th.code]) for th in t.threads], t.name
