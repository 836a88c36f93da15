"""Golden outputs: what `ptxmc check`, `outcomes`, `run --format herd|text`, `fix`, `diff` and the
Markdown report print for a few bundled tests (tests/golden/cases.txt), and the worked example in
README.md, byte for byte. A case whose arguments hold `{out}` runs with a fresh folder there, and
its golden output also holds every Markdown file the command wrote into it.

    python tests/report/test_golden.py --promote     # rewrite every .expected file and the README example

then review the diff, as with herd7's .expected files."""
from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
README = ROOT / "README.md"


def _cases() -> list[tuple[str, list[str]]]:
    out = []
    for line in (GOLDEN / "cases.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, args = line.partition("|")
            out.append((name.strip(), shlex.split(args)))
    return out


def ptxmc(args: list[str]) -> str:
    """stdout and stderr of `ptxmc ARGS` run from the repository root, and its exit code (then
    the Markdown files written to `{out}`, if an argument names it)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        args = [a.replace("{out}", str(out)) for a in args]
        r = subprocess.run([sys.executable, "-m", "checker", *args], cwd=ROOT, capture_output=True, text=True,
                           timeout=600)
        err = "".join(f"[stderr] {line}\n" for line in r.stderr.splitlines())
        # the seconds `ptxmc fix` reports are wall-clock time: not part of the output judged
        text = _SECONDS.sub(r"\1 T s", r.stdout) + err + f"[exit {r.returncode}]\n"
        for f in sorted(out.glob("*.md")) if out.is_dir() else ():
            text += f"[file {f.name}]\n" + f.read_text()
        return text.replace(str(out), "{out}")


_SECONDS = re.compile(r"(, \d+ Sessions?,) \d+(?:\.\d+)? s")


# The README's worked example: a ```text block whose first line is `$ ptxmc ARGS`.
_EXAMPLE = re.compile(r"```text\n\$ ptxmc (?P<args>[^\n]*)\n(?P<out>.*?)```", re.S)


def _readme_examples() -> list[re.Match]:
    return list(_EXAMPLE.finditer(README.read_text()))


@pytest.mark.parametrize("name, args", _cases(), ids=[n for n, _ in _cases()])
def test_golden_output(name, args):
    expected = (GOLDEN / f"{name}.expected").read_text()
    assert ptxmc(args) == expected, f"run `python tests/report/test_golden.py --promote` if the change is intended"


def test_readme_worked_example_is_what_ptxmc_prints():
    examples = _readme_examples()
    assert examples, "README.md has no worked example"
    for m in examples:
        got = ptxmc(shlex.split(m["args"])).rsplit("[exit", 1)[0]
        assert got == m["out"], f"README example `ptxmc {m['args']}` is stale: promote it"


def promote() -> None:
    for name, args in _cases():
        (GOLDEN / f"{name}.expected").write_text(ptxmc(args))
        print(f"promoted {name}")
    text = README.read_text()
    for m in reversed(_readme_examples()):
        got = ptxmc(shlex.split(m["args"])).rsplit("[exit", 1)[0]
        text = text[:m.start("out")] + got + text[m.end("out"):]
    README.write_text(text)
    print("promoted README.md worked example")


if __name__ == "__main__":
    if sys.argv[1:] != ["--promote"]:
        sys.exit(__doc__)
    promote()
