"""The user documentation in docs/ stays in step with the code.

- Every instruction family the parser accepts (checker.isa.registry.FAMILIES) is listed in docs/format.md,
  on a line that starts with `Keys:`, and nothing else is: each entry is a family key in
  backticks or a shell-style brace pattern (`{a,b}`, `{1..5}`, `{8..256..8}`, nested) that this
  test expands. Every entry has an example in a ```ptx block that the parser accepts and that
  resolves to one of its keys, unless the family only exists for its error message.
- Every ```ptx line in docs/format.md parses and validates.
- Every model option an axioms/*.cat file reads is documented in docs/model.md as
  `--option NAME`, and every `--option name` the docs mention is one a model reads.
- docs/model.md has the anchors a1..a14 and t1..t6, each on the heading of its decision, and
  every link to a page of docs/ (with or without an #anchor) anywhere in the repository, and
  every relative link inside docs/, names a page and an anchor that exist.
- Every ```yaml block of docs/format.md and docs/tutorial.md that is a complete test (a block
  whose first line is `# fragment` is not) loads without error, and its expectations hold.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

# The checker internals this test uses, in one place (re-point them here when modules move).
from checker.cat.interp import load_model
from checker.errors import LitmusError
from checker.isa import syntax as _ptx
from checker.front.litmus import load_text
from checker.isa import registry
from checker.verdict.check import check_test

FAMILIES = registry.FAMILIES                   # family key -> Family (groups, operands, ...)


def parse_checked(text: str):
    """One instruction, parsed and validated against its family (LitmusError if malformed)."""
    return registry.parse_instr(text)


def family_key(text: str) -> str:
    """The key of the family a valid instruction belongs to."""
    return registry.parse_instr(text).family


def validate_key_alone(key: str) -> None:
    """Validate the bare family key as an instruction (LitmusError if that is not one)."""
    registry.validate(_ptx.parse(key))


ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
AXIOMS = ROOT / "axioms"
FORMAT = DOCS / "format.md"
MODEL = DOCS / "model.md"
TUTORIAL = DOCS / "tutorial.md"


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _blocks(text: str, lang: str) -> list[tuple[int, str]]:
    """(line of the opening fence, body) of every ```lang block."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(1))
            for m in re.finditer(rf"^```{lang}[ \t]*\n(.*?)^```", text, re.S | re.M)]


# -- brace patterns ------------------------------------------------------------------------------

def expand(pattern: str) -> list[str]:
    """Shell-style brace expansion: `{a,b}` alternatives (possibly empty, possibly nested),
    `{m..n}` and `{m..n..step}` integer ranges."""
    start = pattern.find("{")
    if start < 0:
        return [pattern]
    depth = 0
    for end in range(start, len(pattern)):
        depth += {"{": 1, "}": -1}.get(pattern[end], 0)
        if depth == 0:
            break
    else:
        raise ValueError(f"unbalanced braces in {pattern!r}")
    inside, prefix, rest = pattern[start + 1:end], pattern[:start], expand(pattern[end + 1:])
    rng = re.fullmatch(r"(-?\d+)\.\.(-?\d+)(?:\.\.(\d+))?", inside)
    if rng:
        lo, hi, step = int(rng.group(1)), int(rng.group(2)), int(rng.group(3) or 1)
        alts = [str(n) for n in range(lo, hi + 1, step)]
    else:
        alts, depth, cur = [], 0, ""
        for c in inside:
            if c == "," and depth == 0:
                alts.append(cur)
                cur = ""
                continue
            depth += {"{": 1, "}": -1}.get(c, 0)
            cur += c
        alts.append(cur)
        alts = [a for alt in alts for a in expand(alt)]
    return [prefix + a + r for a in alts for r in rest]


def test_brace_expansion():
    assert expand("ld") == ["ld"]
    assert expand("x.{1..3}d") == ["x.1d", "x.2d", "x.3d"]
    assert expand("n{8..24..8}") == ["n8", "n16", "n24"]
    assert expand("{a,b}.{c,d}") == ["a.c", "a.d", "b.c", "b.d"]
    assert expand("n{8,{32..64..16}}k") == ["n8k", "n32k", "n48k", "n64k"]
    assert expand("a{,s.}b") == ["ab", "as.b"]
    with pytest.raises(ValueError):
        expand("a{b")


def _keys_entries() -> list[str]:
    """The entries of every `Keys:` line of docs/format.md, as written."""
    entries = []
    for line in _text(FORMAT).splitlines():
        if line.startswith("Keys:"):
            found = re.findall(r"`([^`]+)`", line)
            assert found, f"a Keys: line lists no `key`: {line!r}"
            entries += found
    return entries


def test_every_family_is_documented_and_nothing_else():
    documented: dict[str, str] = {}
    for entry in _keys_entries():
        for key in expand(entry):
            assert key not in documented, f"{key} is listed twice ({documented[key]!r}, {entry!r})"
            documented[key] = entry
    missing = sorted(set(FAMILIES) - set(documented))
    extra = sorted(set(documented) - set(FAMILIES))
    assert not missing, f"families the parser accepts but docs/format.md does not list: {missing[:20]}"
    assert not extra, f"docs/format.md lists keys the parser does not accept: {extra[:20]}"


# -- the PTX examples ----------------------------------------------------------------------------

def _examples() -> list[tuple[int, str]]:
    out = []
    for line, body in _blocks(_text(FORMAT), "ptx"):
        for k, text in enumerate(body.splitlines(), 1):
            if text.split("//", 1)[0].strip():
                out.append((line + k, text.strip()))
    return out


def test_every_ptx_example_is_accepted():
    examples = _examples()
    assert len(examples) > 100
    bad = []
    for line, text in examples:
        try:
            parse_checked(text)
        except LitmusError as e:
            bad.append(f"docs/format.md:{line}: {e.message}")
    assert not bad, "\n".join(bad)


def _message_only(key: str) -> bool:
    """A family that names no instruction: it exists so that an incomplete opcode gets a helpful
    message (e.g. `cp.async.bulk` without a direction)."""
    fam = FAMILIES[key]
    if fam.groups or callable(fam.operands) or fam.operands:
        return False
    try:
        validate_key_alone(key)
    except LitmusError:
        return True
    return False


def test_every_keys_entry_has_an_example():
    resolved = {family_key(text) for _, text in _examples()}
    lacking = [entry for entry in _keys_entries()
               if not any(k in resolved or _message_only(k) for k in expand(entry))]
    assert not lacking, f"Keys: entries without a ```ptx example in docs/format.md: {lacking}"


def test_message_only_families_are_few_and_said_so():
    bare = sorted(k for k in FAMILIES if _message_only(k))
    assert "cp.async.bulk" in bare and "ld" not in bare and "cp.async.commit_group" not in bare
    text = _text(FORMAT)
    for key in bare:
        assert f"`{key}`" in text, key


# -- options -------------------------------------------------------------------------------------

def _model_options() -> set[str]:
    """The options a model reads: its cat files', and the control-flow layer's (checker.isa.flow)."""
    from checker.isa.flow import OPTIONS
    return {o for path in sorted(AXIOMS.glob("*.cat")) for o in load_model(str(path)).options_used} | OPTIONS


def test_every_model_option_is_documented():
    options = _model_options()
    assert {"strict-cta", "bulk-group-only", "proxy-fence-any-cta"} <= options
    text = _text(MODEL)
    missing = sorted(o for o in options if f"--option {o}" not in text)
    assert not missing, f"options read by axioms/*.cat but not documented in docs/model.md: {missing}"


def test_every_documented_option_exists():
    options = _model_options()
    for page in sorted(DOCS.glob("*.md")):
        for name in re.findall(r"--option ([a-z][a-z0-9-]*)", _text(page)):
            assert name in options, f"{page.name} mentions --option {name}, which no model reads"


# -- anchors and links ---------------------------------------------------------------------------

def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = _text(path)
    found = set(re.findall(r'<a id="([\w-]+)"></a>', text))
    seen: dict[str, int] = {}
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    for heading in re.findall(r"^#{1,6} (.+)$", prose, re.M):
        s = _slug(heading)
        found.add(s if s not in seen else f"{s}-{seen[s]}")
        seen[s] = seen.get(s, 0) + 1
    return found


def test_model_decision_anchors():
    text = _text(MODEL)
    last = max(int(n) for n in re.findall(r'<a id="a(\d+)"></a>', text))     # decisions are added over time
    want = [f"a{n}" for n in range(1, max(last, 16) + 1)] + [f"t{n}" for n in range(1, 7)]
    for a in want:
        m = re.search(rf'^<a id="{a}"></a>\n### {a.upper()}\. \S', text, re.M)
        assert m, f'docs/model.md: <a id="{a}"></a> must stand right before the heading "### {a.upper()}. ..."'
    ids = re.findall(r'<a id="([at]\d+)"></a>', text)
    assert ids == want, "decision anchors must appear once each, in order"


_SKIP_DIRS = {"__pycache__", "node_modules", "build", "dist", "hw-out"}
_TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".cat", ".txt", ".toml", ".html", ".json", ".cfg", ".sh", ""}


def _repository_files():
    for path in sorted(ROOT.rglob("*")):
        rel = path.relative_to(ROOT).parts
        if any(p.startswith(".") or p in _SKIP_DIRS or p.endswith(".egg-info") for p in rel[:-1]):
            continue
        if path.is_file() and not rel[-1].startswith(".") and path.suffix in _TEXT_SUFFIXES \
                and path.stat().st_size < 20_000_000:
            yield path


def test_every_cited_docs_anchor_exists():
    pages = {p.name: anchors(p) for p in DOCS.glob("*.md")}
    bad = []
    for path in _repository_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        links = re.findall(r"docs/([\w.-]+\.md)(?:#([\w-]+))?", text)
        if path.parent == DOCS and path.suffix == ".md":
            links += [(page or path.name, anchor)
                      for page, anchor in re.findall(r"\]\(([\w.-]+\.md)?(?:#([\w-]+))?\)", text)]
        where = path.relative_to(ROOT)
        for page, anchor in links:
            if page not in pages:
                bad.append(f"{where}: no page docs/{page}")
            elif anchor and anchor not in pages[page]:
                bad.append(f"{where}: no anchor #{anchor} in docs/{page}")
    assert not bad, "\n".join(sorted(set(bad)))


def test_anchor_finder_sees_headings_and_explicit_anchors():
    found = anchors(MODEL)
    assert {"a1", "t6", "undefined-behaviour", "options"} <= found
    assert "limits" in anchors(DOCS / "cli.md")


# -- the YAML examples ---------------------------------------------------------------------------

def _yaml_examples():
    for page in (FORMAT, TUTORIAL):
        for line, body in _blocks(_text(page), "yaml"):
            yield pytest.param(page, line, body, id=f"{page.name}:{line}")


@pytest.mark.parametrize("page,line,body", list(_yaml_examples()))
def test_yaml_examples_load_and_hold(page, line, body, ptx_model):
    if body.startswith("# fragment"):
        return                      # a part of a test, marked as such
    items = load_text(body, f"{page.name}:{line}")
    errors = [str(i) for i in items if isinstance(i, LitmusError)]
    assert items and not errors, errors
    for test in items:
        result = check_test(test, ptx_model)
        judged = bool(test.expectations) or test.expect_undefined is not None
        assert result.status == ("pass" if judged else "run"), (test.name, result.status, result.message)


def test_the_tutorial_has_complete_tests():
    complete = [b for _, b in _blocks(_text(TUTORIAL), "yaml") if not b.startswith("# fragment")]
    assert len(complete) >= 4
