"""Mutation adequacy of the hang question's differential fuzzer (tests/unfold/fuzz_shortcuts.py):
each mutant below drops one condition of a shortcut (the extension lemma's conditions (1)-(8),
docs/model.md#a18, checker/verdict/union.py `_extension_lemma_fails` and
checker/verdict/extension.py; the refuter's premises, checker/verdict/stops.py; quiet mbarriers,
checker/verdict/quiet.py), applied in a child process by substituting the module's source in
memory (no file is changed), and the fuzzer's comparison is run on a seed's cases: a case
*catches* the mutant when it reports a disagreement with the reference there.

    python bench/fuzz_mutants.py SEED:N [SEED:N ...] [--only=NAME,NAME] [--engine=z3|brute] [--shape=freeing]

prints one line per mutant (cases caught per seed, and which) and a Markdown table at the end. A
mutant whose text no longer matches the source (the code moved on) is reported "stale"."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

U, E, S, Q = "checker.verdict.union", "checker.verdict.extension", "checker.verdict.stops", "checker.verdict.quiet"

# name -> (what it drops, [(module, old text, new text)])
MUTANTS: dict[str, tuple[str, list]] = {
    "lemma-always": ("the extension lemma applied whatever its conditions",
                     [(U, "        if not (self.quiet and self.spin_once and self.loops) or self.test.kernels \\",
                       "        return None\n        if not (self.quiet and self.spin_once and self.loops) or self.test.kernels \\")]),
    "L1-unroll": ("(1) unroll at least 2",
                  [(U, "\\\n                or (self.test.unroll or self.lim.unroll) < 2:", ":")]),
    "L1-loops": ("(1) no loop but awaits (no bra, no label)",
                 [(U, "            if t.labels:", "            if False:"),
                  (U, "if i.op == \"bra\" or i.family in", "if i.family in")]),
    "L1-awaits": ("(1) every await an `== 1` mbarrier wait on a quiet mbarrier",
                  [(U, "                if i.await_value is not None and not (", "                if False and not (")]),
    "L2-inval": ("(2) no mbarrier.inval",
                 [(U, "i.family in (\"mbarrier.inval\", *TMEM_ALLOCATION)", "i.family in TMEM_ALLOCATION")]),
    "L3-quiet": ("(3) every mbarrier quiet",
                 [(U, "        if any(\"MB\" in ev.tags and ev.loc not in mine", "        if False and any(\"MB\" in ev.tags and ev.loc not in mine")]),
    "L4-kernels": ("(4) one kernel", [(U, "or self.test.kernels \\", "\\")]),
    "L5-bundled": ("(5) the bundled model and options", [(U, "        if not bundled(self.model, self.options):", "        if False:")]),
    "L6-nohang": ("(6) the hang question answered 'no hang', complete, with an execution that terminates",
                  [(U, "            if found or not complete or self.never_terminates() is not None:", "            if False:")]),
    "L7-all": ("(7) no member of MB_RANGE, MB_STALE, MB_SKIP (extension.members_excluded)",
               [(U, "        why = members_excluded(self.test, self.lim, per)", "        why = None")]),
    "L7-stale": ("(7) MB_STALE: no wait with a state token",
                 [(E, "    if es.value_sets.get(\"MB_STALE\"):", "    if False:")]),
    "L7-range": ("(7) MB_RANGE: no RMW leaves the ranges from a folded state",
                 [(E, "                    if bad is not None and evaluate(bad, value) != 0:", "                    if False:")]),
    "L7-skip": ("(7) MB_SKIP: no RMW reads a later phase",
                [(E, "                    if s != 0 and fields(s)[0] != phase0:", "                    if False:")]),
    "L7-init": ("(7) MB_RANGE: an init's count in range",
                [(E, "            if bad is not None and (reads_of(bad) or evaluate(bad, lambda e: 0) != 0):", "            if False:")]),
    "L7-writes": ("(7) every write to an mbarrier an init, its initial write or an RMW of its own read",
                  [(E, "        else:\n            return f\"{ev.label or ev.loc}: a write to an mbarrier that is not an RMW of its own read\"",
                    "        else:\n            continue")]),
    "L8-tmem": ("(8) no tcgen05.alloc / dealloc / relinquish_alloc_permit",
                [(U, "i.family in (\"mbarrier.inval\", *TMEM_ALLOCATION)", "i.family in (\"mbarrier.inval\",)")]),
    "R-all": ("the refuter refutes every stopping combination",
              [(S, "    if u.test.kernels or not _bundled(u):\n        return False", "    return True")]),
    "R-freeing": ("refuter: a gate that undefined behaviour may free is still a gate (freeing premise)",
                  [(S, "        free = {g for g, f in frees.items() if f & fire}", "        free = set()")]),
    "R-fire": ("refuter: a member of value-dependent undefined behaviour on a quiet mbarrier never fires",
               [(S, "            if states is None or any(_may_be_nonzero(x, own, s) for s in states):",
                 "            if states is None:")]),
    "R-since": ("refuter: a later gate reads at or after its earlier gate's state even where one is freed",
                [(S, "and g[:2] not in free and prev[:2] not in free:", ":")]),
    "R-gate": ("refuter: an RMW behind any gate, opened or not, never precedes a gate",
               [(S, "if any(k < i and (t.name, k) not in opened for k in behind.get(t.name, ())):",
                 "if any(k < i for k in behind.get(t.name, ())):")]),
    "R-gate-init": ("refuter: waits before the initialisation are gates too",
                    [(S, "                 and (after is None or j >= after[t.name])]", "                 ]")]),
    "R-forced": ("refuter: every RMW is forced after the initialisation (none overwritten)",
                 [(S, "            forced = after is None or j >= after[t.name]", "            forced = True")]),
    "R-other": ("refuter: an mbarrier written otherwise than by RMWs and inits still folded",
                [(S, "    if any(d is not None and d[\"other\"] for d in mine):\n        return None", "")]),
    "R-inits": ("refuter: an mbarrier with two inits still folded (from the first)",
                [(S, "    if len(inits) > 1:\n        return None", "")]),
    "R-declared": ("refuter: a thread without mbarrier operations gives a declared mbarrier's start (seed 26's bug)",
                   [(S, "            if \"MB\" in ev.tags or root[ev.loc] not in declared:", "            if True:")]),
    "Q-named": ("quiet: an mbarrier named by a non-mbarrier instruction, an offset or a register still quiet",
                [(Q, "            if a.offset != 0 or a.register or not (i.family in _OPS or completes or arrives):",
                  "            if False:")]),
    "Q-inits": ("quiet: two inits still quiet", [(Q, "if n not in bad and inits.get(n, 0) <= 1", "if n not in bad")]),
    "Q-cta": ("quiet: threads of several CTAs", [(Q, "    if len({t.position.cta_key() for t in test.threads}) != 1:\n        return frozenset()", "")]),
    "Q-rounds": ("quiet: no choice with a failed iteration on a quiet mbarrier combined",
                 [(U, "if x not in seen and sum(failed[k][y] for k, y in enumerate(x)) <= 1:",
                   "if x not in seen and sum(failed[k][y] for k, y in enumerate(x)) < 1:")]),
}


def apply(name: str) -> None:
    """Substitute mutant `name`'s texts in the loaded modules (raises KeyError where stale)."""
    import importlib
    by: dict[str, str] = {}
    for mod, old, new in MUTANTS[name][1]:
        m = importlib.import_module(mod)
        src = by.get(mod) or Path(m.__file__).read_text()
        if src.count(old) != 1:
            raise KeyError(f"{name}: {old!r} occurs {src.count(old)} times in {mod}")
        by[mod] = src.replace(old, new)
    for mod, src in by.items():
        m = importlib.import_module(mod)
        before = dict(m.__dict__)
        exec(compile(src, m.__file__, "exec"), m.__dict__)
        # rebind what other modules imported from it
        for other in list(sys.modules.values()):
            if other is None or other is m or not getattr(other, "__name__", "").startswith(("checker", "tests")):
                continue
            for k, v in list(vars(other).items()):
                if k in before and before[k] is v and k in m.__dict__ and m.__dict__[k] is not v:
                    setattr(other, k, m.__dict__[k])


def child(name: str, seeds: list[tuple[int, int]], engine: str, shape: str = "generate") -> dict:
    import random
    import signal

    from tests.unfold import fuzz_shortcuts as fz
    from tests.unfold.test_ub_variants import MODEL
    import checker.verdict.union as _  # (loaded before the substitution)
    del _
    if name != "none":
        try:
            apply(name)
        except KeyError as e:
            return {"stale": str(e)}

    # the references' answers do not depend on the mutant (the reference asks for none of the
    # shortcuts: quiet=False, refute=False, extend=False; the hang answer without the refuter
    # depends on quiet mbarriers only): kept on disk, by the generator's text and the test
    import hashlib
    import pickle
    h = hashlib.sha1(Path(fz.__file__).read_bytes())
    for f in sorted([*(ROOT / "checker").rglob("*.py"), *(ROOT / "axioms").glob("*.cat")]):
        h.update(f.read_bytes())        # (the code and model the references were computed on)
    tag = h.hexdigest()[:12]
    cache = Path("/tmp/fuzz_mutants_cache") / f"{tag}-{engine}-{shape}"
    cache.mkdir(parents=True, exist_ok=True)
    flags, hang_answer = fz.flags, fz.hang_answer

    def cached(kind, fn, t, *a, **kw):
        f = cache / f"{kind}-{t.name}.pkl"
        if f.exists():
            return pickle.loads(f.read_bytes())
        got = fn(t, *a, **kw)
        f.write_bytes(pickle.dumps(got))
        return got

    def ref_flags(t, model, eng, **kw):
        if kw == dict(quiet=False, refute=False, extend=False):
            return cached("flags", flags, t, model, eng, **kw)
        return flags(t, model, eng, **kw)

    def ref_hang(t, model, eng, refute):
        if not refute and not name.startswith("Q-"):
            return cached("hang", hang_answer, t, model, eng, refute)
        return hang_answer(t, model, eng, refute)
    fz.flags, fz.hang_answer = ref_flags, ref_hang

    def alarm(*_):
        raise TimeoutError()
    signal.signal(signal.SIGALRM, alarm)
    out: dict = {}
    for seed, n in seeds:
        rng = random.Random(seed)
        caught, slow, cpu = [], [], []
        for k in range(n):
            t0 = time.process_time()
            text = getattr(fz, shape)(rng, f"Fuzz{seed}x{k}")
            signal.alarm(120)
            try:
                if fz.compare(text, MODEL, engine, {}):
                    caught.append(k)
            except Exception as e:         # a mutant may break the code: counted as caught
                caught.append(k)
                slow.append(f"{k}:{type(e).__name__}")
            finally:
                signal.alarm(0)
                cpu.append(round(time.process_time() - t0, 2))
        out[str(seed)] = {"caught": caught, "errors": slow, **({"cpu": cpu} if name == "none" else {})}
    return out


def main(argv: list[str]) -> None:
    args = [a for a in argv if not a.startswith("--")]
    only = next((a.split("=", 1)[1].split(",") for a in argv if a.startswith("--only=")), list(MUTANTS))
    engine = next((a.split("=", 1)[1] for a in argv if a.startswith("--engine=")), "z3")
    shape = next((a.split("=", 1)[1] for a in argv if a.startswith("--shape=")), "generate")
    seeds = [tuple(int(x) for x in a.split(":")) for a in args]
    rows = []
    for name in only:
        t0 = time.time()
        p = subprocess.run([sys.executable, __file__, "--child", name, engine, json.dumps(seeds), shape],
                           capture_output=True, text=True, cwd=ROOT)
        try:
            got = json.loads(p.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            got = {"stale": "child failed: " + p.stderr[-300:]}
        rows.append((name, got))
        print(name, json.dumps(got), f"{time.time() - t0:.0f}s", flush=True)
    print()
    print("| mutant | drops | " + " | ".join(f"seed {s} ({n})" for s, n in seeds) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in seeds) + " |")
    for name, got in rows:
        cells = ["stale" if "stale" in got else str(len(got[str(s)]["caught"])) for s, _ in seeds]
        print(f"| {name} | {MUTANTS[name][0] if name in MUTANTS else ''} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2], [tuple(x) for x in json.loads(sys.argv[4])], sys.argv[3], sys.argv[5])))
    else:
        main(sys.argv[1:])
