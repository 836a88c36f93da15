"""Fuzz target `fix-apply`: `ptxmc fix --apply` (-o or --in-place) on small tests that often need a
repair, written in every shape a user writes: `code:` block lists (with trailing comments, two
statements on a line), flow lists, `ptx: |` blocks (with `.reg` lines and `//` comments), a
`matrix:`, a list file with other tests, comment lines, CRLF line endings, no final newline, a
quoted scalar holding U+2028/U+0085, extra keys (locations, rlimit), files of various modes;
with fences to remove and `--prune` too.

Properties (output safety and round trip):
- the command answers (exit 0, 1 or 2) without an internal error or a traceback;
- what is written loads, holds every test of the original file unchanged, and its fixed test
  passes `ptxmc run` (the re-check's claim);
- outside a matrix, only the lines of the test's instructions change (every other line is kept
  byte for byte, line endings included); a matrix row is appended after the untouched original;
- --in-place keeps the file's mode and leaves no temporary file; -o leaves the input untouched;
- a file that is refused stays as it was.
"""
from __future__ import annotations

import difflib
import os
import stat
from pathlib import Path

from hypothesis import strategies as st

from checker.front.litmus import load_text
from checker.repair.yamlpatch import split_lines

ST = {"w": ".weak.global", "r": ".relaxed.gpu.global", "s": ".release.gpu.global"}
LD = {"w": ".weak.global", "r": ".relaxed.gpu.global", "s": ".acquire.gpu.global"}
PATTERNS = {    # thread code (with {0}..{3}: the four accesses' qualifiers), the forbidden outcome
    "MP": ((("st{0} [x], 1", "st{1} [flag], 1"), ("ld{2} {r}0, [flag]", "ld{3} {r}1, [x]")),
           "P1:{r}0=1 /\\ P1:{r}1=0"),
    "SB": ((("st{0} [x], 1", "ld{2} {r}0, [y]"), ("st{1} [y], 1", "ld{3} {r}1, [x]")),
           "P0:{r}0=0 /\\ P1:{r}1=0"),
}


@st.composite
def cases(draw):
    return {
        "pattern": draw(st.sampled_from(sorted(PATTERNS))),
        "sems": draw(st.lists(st.sampled_from("wrrs"), min_size=4, max_size=4)),
        "styles": draw(st.lists(st.sampled_from(("block", "block#", "semi", "flow", "ptx", "ptx-reg")),
                                min_size=2, max_size=2)),
        "matrix": draw(st.booleans()) and draw(st.booleans()),
        "wrap": draw(st.sampled_from(("single", "single", "before", "after"))),
        "comments": draw(st.booleans()),
        "crlf": draw(st.booleans()),
        "final_newline": draw(st.booleans()) or draw(st.booleans()),
        "separator": draw(st.sampled_from(("", "", "\u2028", "\x85"))),
        "extras": draw(st.booleans()),
        "mode": draw(st.sampled_from((0o644, 0o600, 0o640))),
        "in_place": draw(st.booleans()),
        "fences": draw(st.lists(st.sampled_from((False, False, True)), min_size=2, max_size=2)),
        "prune": draw(st.booleans()),
    }


def render(case: dict) -> str:
    """The test file of a case (LF line endings; CRLF is applied by the caller)."""
    (threads, cond) = PATTERNS[case["pattern"]]
    sems = [ST[case["sems"][0]], ST[case["sems"][1]], LD[case["sems"][2]], LD[case["sems"][3]]]
    reg = "%r" if all(s == "ptx-reg" for s in case["styles"]) else "r"
    name = "F+${v}" if case["matrix"] else "F"
    out = ["# fuzz: fix --apply must keep this comment", f"name: {name}",
           'source: "tests/fuzz/fixapply.py' + case["separator"] + 'generated"']
    if case["extras"]:
        out += ["locations: [x]", "rlimit: 5000000"]
    out.append("threads:")
    for n, (code, style) in enumerate(zip(threads, case["styles"])):
        lines = [c.format(*sems, r=reg) for c in code]
        if case.get("fences", (False, False))[n]:
            lines.insert(1, "fence.sc.gpu")
        if case["matrix"] and n == 0:
            lines[0] = lines[0].replace(sems[0], "${s}", 1)
        out += [f"  P{n}:", f"    at: gpu0.cta{n}"]
        if case["comments"]:
            out.append(f"    # thread P{n}")
        if style in ("block", "block#"):
            out.append("    code:")
            out += [f"      - {c}" + ("  # mine" if style == "block#" else "") for c in lines]
        elif style == "semi":
            out += ["    code:", "      - " + "; ".join(lines)]
        elif style == "flow":
            out.append("    code: [" + ", ".join(f"'{c}'" for c in lines) + "]")
        else:
            out.append("    ptx: |")
            if style == "ptx-reg":
                out.append(f"      .reg .b32 {reg}<2>;")     # (the spelling the thread uses: %r1 and r1 are two)
            out += [f"      {c};" + ("   // mine" if k == 0 else "") for k, c in enumerate(lines)]
    out += ["expect:", f"  forbidden: ['{cond.format(r=reg)}']"]
    if case["matrix"]:
        out += ["matrix:", f"  - {{v: a, s: '{sems[0]}'}}", "  - {v: b, s: .release.gpu.global}"]
    if case["comments"]:
        out.insert(3, "# between keys")
    other = ["name: OTHER", 'source: "tests/fuzz/fixapply.py"', "threads:",
             "  P0: {at: gpu0.cta0, code: ['st.global [z], 1']}"]
    if case["wrap"] != "single":
        items = [out, other] if case["wrap"] == "after" else [other, out]
        out = [("- " if k == 0 else "  ") + ln for item in items for k, ln in enumerate(item)]
    return "\n".join(out) + ("\n" if case["final_newline"] else "")


def check(tmp: Path, case: dict, run_cli) -> dict:
    """Run one case; assert the properties (see the module docstring). Returns what it reached."""
    text = render(case)
    if case["crlf"]:
        text = text.replace("\n", "\r\n")
    folder = Path(os.path.realpath(tmp)) / f"fx{os.getpid()}-{abs(hash(repr(case))) % 10**8}"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    f = folder / "t.yaml"
    f.write_bytes(text.encode("utf-8"))
    os.chmod(f, case["mode"])
    before = [t for t in load_text(text, str(f))]
    names = [t.name for t in before if not isinstance(t, Exception)]
    assert all(not isinstance(t, Exception) for t in before), f"the generated file does not load: {before}"
    target = next(n for n in names if n != "OTHER")
    out = folder / "out.yaml"
    argv = ["fix", f"{f}::{target}", "--max", "1", "--budget", "60", "--apply"] + \
        (["--prune"] if case.get("prune") else []) + \
        (["--in-place"] if case["in_place"] else ["-o", str(out)])
    code, stdout, stderr = run_cli(argv)
    assert code in (0, 1, 2), (code, stderr)
    assert "dropped" not in stdout, f"a repair was dropped: {stdout}"
    assert "internal error" not in stderr and "Traceback" not in stderr, stderr
    written = f if case["in_place"] else out
    wrote = "wrote " in stderr
    if not case["in_place"]:
        assert f.read_bytes() == text.encode("utf-8"), "-o changed the input"
    if not wrote:
        assert f.read_bytes() == text.encode("utf-8"), "a file was changed though nothing was written"
        assert not out.exists()
        return {"fix-unwritten": 1}
    new = written.read_bytes().decode("utf-8")
    if case["in_place"]:
        assert stat.S_IMODE(f.stat().st_mode) == case["mode"], "--in-place changed the mode"
    assert sorted(p.name for p in folder.iterdir()) == sorted({"t.yaml", written.name}), \
        f"files left behind: {sorted(p.name for p in folder.iterdir())}"
    after = {t.name: t for t in load_text(new, str(f)) if not isinstance(t, Exception)}
    for t in before:
        if t.name == target and not case["matrix"]:
            continue                            # the one test edited in place
        assert after.get(t.name) == t, f"the test {t.name} changed or went missing"
    fixed = [n for n in after if n not in names] or [target]
    assert len(fixed) == 1, f"tests added: {fixed}"
    olds, news = split_lines(text), split_lines(new)
    if case["crlf"]:
        assert all(ln.endswith("\r\n") for ln in news if ln.endswith("\n")), "a line lost its CRLF"
    if case["matrix"]:
        base = [ln for ln in olds]
        kept = news[:len(base)]
        if case["wrap"] == "single":            # the one test became a list item: two more columns
            kept = [ln[2:] if ln[:2] in ("- ", "  ") else ln for ln in kept]
        assert [ln.rstrip("\r\n") for ln in kept] == [ln.rstrip("\r\n") for ln in base], \
            "the original text of a matrix file was changed"
    else:
        instr = {i.where.line for t in before if t.name == target for th in t.threads for i in th.code}
        sm = difflib.SequenceMatcher(None, olds, news, autojunk=False)
        for op, a0, a1, _b0, _b1 in sm.get_opcodes():
            if op in ("replace", "delete"):
                assert all(k + 1 in instr for k in range(a0, a1)), \
                    f"lines other than instructions changed: {olds[a0:a1]}"
    code, stdout, _ = run_cli(["run", str(written)])
    assert f"PASS      {fixed[0]} " in stdout, f"the fixed test does not pass: {stdout}"
    return {"fix-written": 1, "fix-pruned": int(bool(case.get("prune"))), "fix-row-copied": int(case["matrix"] and "rendered from" not in stdout),
            "fix-row-rendered": int("rendered from" in stdout)}
