"""Fuzz targets for the writers and readers review 3 attacked (issue 37): `gen -o`, `import`
and `run --resume`. Each case is drawn by hypothesis and checked by running the real command in
this process (props.run_cli: PTXMC_DEBUG=1, so a bug raises instead of being reported).

- gen-output: `gen -o DIR` onto every state of DIR (absent, empty, an earlier gen output, one
  with a link, a FIFO or a user's file where gen writes, a link as DIR, a file as DIR), with and
  without --force / --follow-symlinks. Output safety: nothing outside DIR changes, a refusal says
  `cannot write` and leaves DIR as it was, a FIFO never blocks; round trip: what gen wrote is
  what its index lists, and every file loads without a malformed test.
- import: Dat3M and herd litmus files (the converter's examples, mutated: control characters in
  names, deleted or swapped lines, flipped characters), in folders of random depth. Never an
  unlocated error, never a raw control character on stderr or in the report; round trip: every
  converted test loads, and exporting it to herd and importing that again gives the same
  threads, code and condition.
- resume: a stream of a finished run, damaged (cut at any byte, lines dropped, duplicated,
  swapped, a field removed or changed, garbage added), then `run --resume`: either the output of
  an uninterrupted run, byte for byte, or a located `--resume FILE:N` error with the stream
  left as it was; never an internal error.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
from collections import Counter
from pathlib import Path

from hypothesis import strategies as st

from checker.front.litmus import load_file
from checker.errors import LitmusError

ROOT = Path(__file__).resolve().parents[2]
SUITE = Path(__file__).parent / "suite.yaml"
CONVERT = ROOT / "tests" / "convert_data"
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")

# ------------------------------------------------------------------------------ gen-output --

CYCLES = ("PodWW Rfe PodRR Fre", "PodWR Fre PodWR Fre", "PodRW Rfe PodRW Rfe", "PodWW Coe PodWW Coe",
          "PodWW Rfe PodRW Coe")
FAMILIES = ("MP", "SB", "LB", "2+2W", "S")      # the families of CYCLES
STATES = ("absent", "empty", "earlier", "earlier+link", "earlier+fifo", "earlier+user", "user", "link-dir",
          "file", "earlier-unmarked")


def gen_cases():
    return st.tuples(st.lists(st.sampled_from(CYCLES), min_size=1, max_size=3, unique=True),
                     st.sampled_from(STATES), st.sampled_from(FAMILIES), st.booleans(), st.booleans())


def _snapshot(p: Path):
    try:
        s = os.lstat(p)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(s.st_mode):
        return ("link", os.readlink(p))
    if stat.S_ISREG(s.st_mode):
        return ("file", p.read_bytes())
    if stat.S_ISDIR(s.st_mode):
        return ("dir", tuple(sorted((e.name, _snapshot(Path(e.path))) for e in os.scandir(p))))
    return ("special", stat.S_IFMT(s.st_mode))


def check_gen(tmp: Path, case, run_cli) -> Counter:
    cycles, state, family, force, follow = case
    reached: Counter = Counter()
    base = tmp / "gen-case"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    outside = base / "precious.txt"
    outside.write_text("user data\n")
    out = base / "out"
    if state.startswith("earlier"):
        code, _, err = run_cli(["gen", "--cycle", CYCLES[0], "-o", str(out)])
        assert code == 0, err
        if state == "earlier+link":
            (out / f"{family}.yaml").unlink(missing_ok=True)
            (out / f"{family}.yaml").symlink_to("../precious.txt")
        elif state == "earlier+fifo":
            (out / f"{family}.yaml").unlink(missing_ok=True)
            os.mkfifo(out / f"{family}.yaml")
        elif state == "earlier+user":
            (out / "notes.txt").write_text("mine\n")
        elif state == "earlier-unmarked":
            (out / ".ptxmc-output").unlink()
    elif state == "empty":
        out.mkdir()
    elif state == "user":
        out.mkdir()
        (out / "notes.txt").write_text("mine\n")
    elif state == "link-dir":
        (base / "real").mkdir()
        out.symlink_to("real")
    elif state == "file":
        out.write_text("a file\n")
    before_out, before_outside = _snapshot(out), _snapshot(outside)
    argv = ["gen", *[a for c in cycles for a in ("--cycle", c)], "-o", str(out)]
    argv += ["--force"] * force + ["--follow-symlinks"] * follow
    code, stdout, err = run_cli(argv)
    assert "Traceback" not in err and "internal error" not in err, err
    # --follow-symlinks writes to the file a link points to (the policy's one exception): then,
    # and only then, the file outside may now hold generated YAML
    through = follow and state == "earlier+link"
    if through and _snapshot(outside) != before_outside:
        assert outside.read_text().startswith("# Family "), (case, "written through a link, but not gen's file")
        reached["gen followed a link"] += 1
    else:
        assert _snapshot(outside) == before_outside, (case, "a file outside the output folder changed")
    if code != 0:
        assert code == 2 and "cannot write" in err, (case, code, err)
        if not force or state not in ("earlier+link", "earlier+fifo"):
            assert _snapshot(out) == before_out, (case, "a refused output folder changed")
        reached["gen refused"] += 1
        return reached
    # written: only where the policy allows
    may = {"absent": True, "empty": True, "earlier": True, "earlier-unmarked": True, "earlier+user": force,
           "user": force, "link-dir": follow, "file": False, "earlier+link": force, "earlier+fifo": force}[state]
    assert may, (case, "written where the policy refuses", err)
    if state == "earlier+link":          # the link stays a link (written around it, or through it)
        assert (out / f"{family}.yaml").is_symlink(), case
    if state == "earlier+fifo":
        assert stat.S_ISFIFO(os.lstat(out / f"{family}.yaml").st_mode), case
    real = out.resolve()
    listed = _index_files(real)
    yamls = {p.name for p in real.iterdir() if p.suffix == ".yaml"}
    stale = {p for p in yamls if p not in listed}
    assert not stale or state in ("earlier+user", "user") or force, (case, "files not in the index", stale)
    for name in listed:
        p = real / name
        assert p.is_file() and (not p.is_symlink() or follow), (case, name)
        items = load_file(p)
        bad = [it for it in items if isinstance(it, LitmusError)]
        assert not bad, (case, str(bad[0]))
    if state in ("user", "earlier+user"):
        assert (real / "notes.txt").read_text() == "mine\n", (case, "a user's file changed")
    reached["gen written"] += 1
    return reached


def _index_files(folder: Path) -> set[str]:
    index = folder / "index.tsv"
    return {line.split("\t")[1] for line in index.read_text().splitlines()
            if line and not line.startswith("#") and "\t" in line}


# ---------------------------------------------------------------------------------- import --

def _seed_files():
    return sorted(p for fmt in ("dat3m", "herd") for p in (CONVERT / fmt).glob("*.litmus"))


NAME_CHARS = st.text(st.sampled_from("AZaz09_.+-/\x1b\x07\u202e\u200b \t:;\"'"), min_size=0, max_size=12)


@st.composite
def import_cases(draw):
    from .strategies import apply_mutations, mutation_ops

    seeds = _seed_files()
    k = draw(st.integers(1, 3))
    files = []
    for _ in range(k):
        src = draw(st.sampled_from(seeds))
        fmt = src.parent.name
        text = src.read_text()
        if draw(st.booleans()):                       # a hostile name on the first line
            first, _, rest = text.partition("\n")
            text = f"{first.split(' ')[0]} {draw(NAME_CHARS)}\n{rest}"
        if draw(st.booleans()):
            text, _ = apply_mutations(text, draw(mutation_ops(text.count("\n") + 1)))
        files.append((fmt, text))
    depth = draw(st.integers(0, 40))
    fmt = draw(st.sampled_from(sorted({f for f, _ in files})))
    return fmt, [t for f, t in files if f == fmt], depth


def check_import(tmp: Path, case, run_cli) -> Counter:
    fmt, texts, depth = case
    reached: Counter = Counter()
    base = tmp / "import-case"
    shutil.rmtree(base, ignore_errors=True)
    folder = base / "in"
    for _ in range(depth):
        folder = folder / "d"
    folder.mkdir(parents=True)
    for k, text in enumerate(texts):
        (folder / f"t{k}.litmus").write_text(text, encoding="utf-8", errors="surrogatepass")
    out = base / "out"
    code, stdout, err = run_cli(["import", "--from", fmt, str(base / "in"), "-o", str(out)])
    assert code in (0, 1), (code, err)
    assert not _CONTROL.search(err), ("a raw control character on stderr", err)
    report = (out / "import-report.txt").read_text()
    assert not _CONTROL.search(report), ("a raw control character in the report", report)
    converted = sorted(p for p in out.rglob("*.yaml"))
    for p in converted:
        items = load_file(p)
        bad = [it for it in items if isinstance(it, LitmusError)]
        assert not bad, ("a converted test does not load", str(bad[0]))
        reached["imported"] += len(items)
    if converted and fmt == "herd":
        reached.update(_round_trip(base, converted, run_cli))
    reached["import files"] += len(texts)
    return reached


def _shape(t):
    """Per thread, each instruction's opcode and qualifiers (export may rename registers and
    locations, so operands are not compared)."""
    return [[(i.op, i.qualifiers) for i in th.code] for th in t.threads]


def _round_trip(base: Path, converted: list[Path], run_cli) -> Counter:
    """export --to herd, then import --from herd: the same threads, code and condition."""
    reached: Counter = Counter()
    exported = base / "exported"
    code, _, err = run_cli(["export", *map(str, converted), "--to", "herd", "-o", str(exported)])
    assert code in (0, 1), err
    back = base / "back"
    if not list(exported.glob("*.litmus")):
        return reached
    code, _, err = run_cli(["import", "--from", "herd", str(exported), "-o", str(back)])
    assert code in (0, 1), err
    first = {t.name: t for p in converted for t in load_file(p) if not isinstance(t, LitmusError)}
    for p in back.rglob("*.yaml"):
        for t in load_file(p):
            if isinstance(t, LitmusError) or t.name not in first:
                continue
            a, b = _shape(first[t.name]), _shape(t)
            assert a == b, (t.name, a, b)
            reached["round trip"] += 1
    return reached


# ---------------------------------------------------------------------------------- resume --

DAMAGES = ("cut", "drop", "duplicate", "swap", "field-drop", "field-change", "garbage", "none")


def resume_cases():
    return st.tuples(st.lists(st.sampled_from(DAMAGES), min_size=1, max_size=3), st.integers(0, 10 ** 6),
                     st.sampled_from(("status", "message", "key", "observe", "outcomes", "conditions", "notes",
                                      "complete", "undefined", "index", "name")),
                     st.sampled_from((None, 0, -1, 1.5, "x", "pass", [], {}, [1], True, "0xzz", "9" * 50)))


_REFERENCE: dict = {}


def _reference(tmp: Path, run_cli) -> tuple[str, str]:
    """The uninterrupted run's output and its stream (computed once per process)."""
    if not _REFERENCE:
        stream = tmp / "resume-ref.jsonl"
        code, out, err = run_cli(["run", str(SUITE), "--jobs", "0", "--no-timing", "--results-jsonl", str(stream)])
        assert code in (0, 1), err
        _REFERENCE["out"], _REFERENCE["stream"] = out, stream.read_text()
    return _REFERENCE["out"], _REFERENCE["stream"]


def check_resume(tmp: Path, case, run_cli) -> Counter:
    damages, where, field, value = case
    reached: Counter = Counter()
    out, good = _reference(tmp, run_cli)
    lines = good.splitlines(keepends=True)
    for k, d in enumerate(damages):
        if not lines:
            break
        i = (where + k) % len(lines)
        if d == "cut":
            text = "".join(lines)
            lines = [text[:where % (len(text) + 1)]]
        elif d == "drop":
            del lines[i]
        elif d == "duplicate":
            lines.insert(i, lines[i])
        elif d == "swap":
            j = (where // 7 + k) % len(lines)
            lines[i], lines[j] = lines[j], lines[i]
        elif d in ("field-drop", "field-change"):
            try:
                rec = json.loads(lines[i])
            except ValueError:
                continue
            if not isinstance(rec, dict):      # a garbage line that is JSON but no record ("x", null)
                continue
            if d == "field-drop":
                rec.pop(field, None)
            else:
                rec[field] = value
            lines[i] = json.dumps(rec) + "\n"
        elif d == "garbage":
            lines.insert(i, ["{", "[" * 5000, "null", '"x"', "{}", "\x00\x01"][where % 6] + "\n")
    stream = tmp / "resume-case.jsonl"
    stream.write_text("".join(lines))
    before = stream.read_bytes()
    code, got, err = run_cli(["run", str(SUITE), "--jobs", "0", "--no-timing", "--resume", str(stream)])
    assert "internal error" not in err and "Traceback" not in err, err
    if code == 2:
        assert re.search(r"--resume .*resume-case\.jsonl:\d+: ", err), err
        assert stream.read_bytes() == before, "a refused stream was modified"
        reached["resume refused"] += 1
        return reached
    # A changed field the key still matches is taken as written (what a hand edit says); the
    # round trip is exact when the records reused are the original ones.
    if all(d in ("cut", "drop", "duplicate", "swap", "garbage", "none") for d in damages):
        assert got == out, ("a resumed run differs from the uninterrupted one", damages)
        reached["resume same output"] += 1
    else:
        reached["resume accepted an edited record"] += 1
    return reached
