"""litmus7-format logs of hardware histograms (herdtools7's `litmus` skeleton): write them so they
pair with the model's herd log (`ptxmc run --format herd`) test by test, and read them back (ours
or litmus7's own), so runs made elsewhere can be compared.

One block per test, under the test's own name, as the herd log has it; a test with several
conditions repeats the condition lines (Ok/No, Witnesses, Condition, Observation) per condition,
as the herd log does; the histogram rows mark ('*') the rows satisfying the first condition:

    Test NAME Allowed                      kind of the first condition: exists -> Allowed
    Histogram (N states)
    96    *>1:r0=0; 1:r1=0; x=1;           litmus7 naming: thread index:register, locations bare
    Ok                                     exists: some row satisfies it; ~exists: none does
    Witnesses
    Positive: 96, Negative: 999904         ~exists swaps the two counts, as litmus7 does
    Condition exists (1:r0=0 /\\ 1:r1=0) is validated
    Observation NAME Sometimes 96 999904   Never / Sometimes / Always
    Hash=0123456789abcdef                  the test's fingerprint (checker.harness.space)
    Time NAME 0.11

followed by ptxmc's own lines (device, target, instances, rate, seed, other, timeout, hang), which the
reader uses when present. Registers are written `1:r0` (the thread's index in the test) as
litmus7 does; the reader accepts `1:r0`, `P1:r0` and `[x]`.
"""
from __future__ import annotations

import re
from pathlib import Path

from ..ast import LitmusTest
from ..errors import HarnessError
from .histogram import Histogram, load, make
from .space import eval_cond, fingerprint, observed_vars


def _thread_index(test: LitmusTest | None) -> dict[str, int]:
    return {t.name: k for k, t in enumerate(test.threads)} if test is not None else {}


def litmus7_name(var: str, index: dict[str, int]) -> str:
    """'P1:r0' -> '1:r0' (the thread's position in the test); locations unchanged."""
    th, sep, reg = var.partition(":")
    if not sep:
        return var
    if th in index:
        return f"{index[th]}:{reg}"
    m = re.fullmatch(r"P(\d+)", th)
    return f"{m.group(1)}:{reg}" if m else var


def _cond_text(text: str, index: dict[str, int]) -> str:
    return re.sub(r"\b([A-Za-z_]\w*):(\w+)", lambda m: litmus7_name(m.group(0), index), text)


def _row(outcome, index) -> str:
    return "".join(f"{litmus7_name(k, index)}={v}; " for k, v in outcome).rstrip()


def block(hist: Histogram, test: LitmusTest | None = None) -> str:
    name = hist.test
    rows = hist.counts
    exps = list(test.expectations) if test is not None else []
    index = _thread_index(test)
    first = exps[0] if exps else None
    star = (lambda o: eval_cond(first.cond, dict(o))) if first is not None else (lambda o: False)
    kind = "Allowed" if first is None or first.kind == "allowed" else "Forbidden"
    out = [f"Test {name} {kind}", f"Histogram ({len(rows)} states)"]
    for o, c in rows:
        out.append(f"{c:<6}{'*' if star(o) else ':'}>{_row(o, index)}")
    for e in exps:
        p_true = sum(c for o, c in rows if eval_cond(e.cond, dict(o)))
        p_false = hist.valid - p_true
        exists = e.kind == "allowed"
        ok = p_true > 0 if exists else p_true == 0
        out += ["Ok" if ok else "No", "", "Witnesses"]
        pos, neg = (p_true, p_false) if exists else (p_false, p_true)
        out.append(f"Positive: {pos}, Negative: {neg}")
        out.append(f"Condition {'' if exists else '~'}exists ({_cond_text(e.text, index)}) is "
                   f"{'' if ok else 'NOT '}validated")
        obs = "Never" if p_true == 0 else ("Always" if p_false == 0 else "Sometimes")
        out.append(f"Observation {name} {obs} {p_true} {p_false}")
    if not exps:
        out.append(f"Observation {name} Never 0 {hist.valid}")
    out.append(f"Hash={hist.fingerprint or (fingerprint(test) if test is not None else '?')}")
    out.append(f"Time {name} {hist.time_s:.2f}")
    rate = hist.total / hist.time_s if hist.time_s > 0 else 0.0
    if hist.simulated:
        out.append("SIMULATED by the fake device: not an observation")
    out.append(f"Device {hist.device or '?'} (sm {hist.compute_capability or '?'}), target {hist.target or '?'}, "
               f"driver {hist.driver or '?'}, CUDA runtime {hist.cuda or '?'}")
    out.append(f"Instances {hist.total} in {hist.iterations} launches ({rate:.0f}/s), seed {hist.seed}, "
               f"config {hist.config.get('name', '?')}")
    out.append(f"Other {hist.other}, Timeout {hist.timeout}, Epilogue {hist.epilogue}, Hang {hist.hang}")
    return "\n".join(out)


def log(hists: list[Histogram], tests: dict | None = None) -> str:
    """The whole log: one block per histogram, separated by blank lines, in histogram order."""
    tests = tests or {}
    return "\n\n".join(block(h, tests.get(h.test)) for h in hists) + "\n"


# -- reading ---------------------------------------------------------------------------------------

_ROW = re.compile(r"^([-+]?\d+)\s*([*:])>(.*)$")


def _var_name(raw: str, test: LitmusTest | None) -> str:
    raw = raw.strip()
    m = re.fullmatch(r"\[(\w+)\]", raw)
    if m:
        return m.group(1)
    th, sep, reg = raw.partition(":")
    if not sep:
        return raw
    if th.isdigit():
        if test is not None:
            k = int(th)
            if k >= len(test.threads):
                raise HarnessError(f"register {raw}: {test.name} has {len(test.threads)} threads")
            return f"{test.threads[k].name}:{reg}"
        return f"P{th}:{reg}"
    return raw


def _count(text: str, what: str) -> int:
    """A count of the log: digits only, at most 2**63-1 (D10, D13)."""
    from .histogram import count_of
    text = text.strip()
    if not text.isdigit() or len(text) > 19:
        raise HarnessError(f"{what} is {text[:40]!r}{'...' if len(text) > 40 else ''}: a count must be a "
                           f"non-negative integer below 2**63")
    return count_of(int(text), what)


def _value(text: str) -> int:
    text = text.strip()
    if len(text) > 24:
        raise ValueError("value too long")
    v = int(text, 0)
    if not -(2**63) <= v < 2**64:
        raise ValueError("value out of range")
    return v


def parse_log(text: str, tests: dict | None = None, where: str = "<log>") -> list[Histogram]:
    """Histograms from a litmus7-format log (this module's, or litmus7's own: `Test`, `Histogram`,
    count rows, `Time`, optional `Hash=`). A test found in `tests` must be observed exactly (the
    same variables as its conditions), else HarnessError naming the line."""
    tests = tests or {}
    out: list[Histogram] = []
    lines = text.splitlines()
    k = 0
    while k < len(lines):
        m = re.match(r"^Test (\S+)(?: (\w+))?\s*$", lines[k])
        if not m:
            k += 1
            continue
        name, start = m.group(1), k + 1
        test = tests.get(name)
        rows, meta = [], {}
        k += 1
        while k < len(lines) and not lines[k].startswith("Test "):
            line = lines[k].strip()
            r = _ROW.match(line)
            if r:
                pairs = [p for p in r.group(3).split(";") if p.strip()]
                try:
                    outcome = tuple((_var_name(p.split("=")[0], test), _value(p.split("=")[1])) for p in pairs)
                except (IndexError, ValueError):
                    raise HarnessError(f"{where}:{k + 1}: malformed histogram row {line[:80]!r}")
                rows.append((outcome, _count(r.group(1), f"{where}:{k + 1}: the count")))
            elif line.startswith("Time "):
                meta["time"] = line.split()[-1]
            elif line.startswith("Hash="):
                meta["hash"] = line[5:].strip()
            elif line.startswith("Device "):
                d = re.match(r"Device (.*) \(sm (\S+)\), target (\S+), driver (\S+), CUDA runtime (\S+)", line)
                if d:
                    meta.update(device=d.group(1), cc=d.group(2), target=d.group(3), driver=d.group(4), cuda=d.group(5))
            elif line.startswith("Instances "):
                d = re.match(r"Instances \d+ in (\d+) launches .*seed (\d+), config (\S+)", line)
                if d:
                    meta.update(iterations=d.group(1), seed=d.group(2), config=d.group(3))
            elif line.startswith("Other "):
                d = re.match(r"Other (\d+), Timeout (\d+)(?:, Epilogue (\d+))?(?:, Hang (\d+))?", line)
                if d:
                    meta.update(other=d.group(1), timeout=d.group(2), epilogue=d.group(3) or "0", hang=d.group(4) or "0")
            elif line.startswith("SIMULATED"):
                meta["simulated"] = True
            k += 1
        names = tuple(dict.fromkeys(n for o, _ in rows for n, _ in o))
        if test is not None:
            want = tuple(str(v) for v in observed_vars(test))
            if rows and not set(want) <= set(names):
                raise HarnessError(f"{where}:{start}: {name}: the log's rows name {sorted(names)}, the test's "
                                   f"conditions need {sorted(want)} (missing {sorted(set(want) - set(names))})")
            names = want            # extra variables (litmus7 prints every final location) are summed out
        for o, _ in rows:
            if not set(names) <= set(n for n, _ in o):
                raise HarnessError(f"{where}:{start}: {name}: rows name different variables")
        counts = [(tuple((n, dict(o)[n]) for n in names), c) for o, c in rows]
        fp = meta.get("hash", "")
        fp = fp if re.fullmatch(r"[0-9a-f]{16}", fp) else ""        # litmus7's own hash is another hash
        cfg = {"name": meta["config"]} if meta.get("config", "?") != "?" else {}
        unknown = lambda v: "" if v in (None, "?") else v
        for key in ("other", "timeout", "epilogue", "hang", "seed", "iterations"):
            if key in meta:
                meta[key] = _count(meta[key], f"{where}:{start}: {name}: '{key}'")
        try:
            time_s = float(meta.get("time", 0.0))
            if not 0 <= time_s < 1e9:
                raise ValueError(time_s)
        except ValueError:
            raise HarnessError(f"{where}:{start}: {name}: malformed time {meta['time'][:40]!r}")
        out.append(make(name, names, counts, other=int(meta.get("other", 0)), timeout=int(meta.get("timeout", 0)),
                        epilogue=int(meta.get("epilogue", 0)), hang=int(meta.get("hang", 0)), device=unknown(meta.get("device")) or "litmus7 log",
                        compute_capability=unknown(meta.get("cc")), driver=unknown(meta.get("driver")),
                        cuda=unknown(meta.get("cuda")), target=unknown(meta.get("target")), config=cfg,
                        seed=int(meta.get("seed", 0)), iterations=int(meta.get("iterations", 0)),
                        time_s=time_s, fingerprint=fp, simulated=bool(meta.get("simulated"))))
    if not out:
        raise HarnessError(f"{where}: no 'Test NAME' block: not a litmus7 log")
    return out


def load_any(path: str | Path, tests: dict | None = None, allow_simulated: bool = False) -> list[Histogram]:
    """Histograms from any file the harness writes or reads: ptxmc JSON/JSONL, a litmus7 log (.log,
    or a first line 'Test ...'; `tests`: name -> LitmusTest for its register names), or the results
    folder of a bundle's run.py (its histograms.jsonl). SIMULATED ones refused unless allowed."""
    p = Path(path)
    if p.is_dir():
        if not (p / "histograms.jsonl").is_file():
            raise HarnessError(f"{p}: a folder without histograms.jsonl (a bundle run's results folder?)")
        return load(p / "histograms.jsonl", allow_simulated)
    head = ""
    try:
        with open(p, "rb") as fh:
            head = fh.read(5).decode("utf-8", "replace")
    except OSError:
        pass
    if p.suffix != ".log" and not head.startswith("Test "):
        return load(p, allow_simulated)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise HarnessError(f"{p}: cannot read: {e.strerror}")
    except UnicodeDecodeError as e:
        raise HarnessError(f"{p}: not UTF-8 text (byte {e.start}): not a litmus7 log")
    hists = parse_log(text, tests, str(p))
    if not allow_simulated and any(h.simulated for h in hists):
        raise HarnessError(f"{p}: SIMULATED histograms (the fake device): not observations of a GPU")
    return hists
