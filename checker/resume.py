"""`ptxmc run --resume FILE.jsonl`: go on with a long run that was interrupted (Ctrl-C, a crash, a
killed machine) without checking again what it finished.

Every line of a `--results-jsonl` stream carries a `key`: a hash of the test (its parsed form,
which includes its file, line and every field), of the model's text (its file and includes), of
the options, the engine and the limits. A resumed run reuses a streamed result whose key is the
key of one of its tests, and checks the rest; a result that the run's circumstances rather than
the test produced (a worker crash, a timeout) is checked again. The stream is continued in place:
first rewritten (atomically) with the results reused, renumbered to this run's indexes, then
appended to as tests finish. The final output is the same bytes as an uninterrupted run's,
timing fields aside."""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from .errors import CheckerError
from .textsafe import printable
from .results.result import ConditionResult, Result, UndefinedReport

# Results that say more about the run than about the test: checked again on resume.
RETRY_PREFIXES = ("worker crashed", "timeout:")


def model_digest(model) -> str:
    """A hash of a parsed model's text: its file and every file it includes."""
    h = hashlib.sha256()
    for src in model.sources or (model.path,):
        with open(src, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


_build: list[str] = []


def build_digest() -> str:
    """ptxmc's version and a hash of its code (every .py and .lark file of the checker package),
    read once per process: a result computed by another ptxmc - an older version, a local patch,
    a soundness fix since - is never reused (the version alone would not tell: it changes
    rarely)."""
    if not _build:
        from pathlib import Path

        from .version import __version__

        pkg = Path(__file__).resolve().parent
        h = hashlib.sha256(__version__.encode() + b"\0")
        for f in sorted(p for ext in ("*.py", "*.lark") for p in pkg.rglob(ext)):
            h.update(f.relative_to(pkg).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
        _build.append(h.hexdigest())
    return _build[0]


def test_key(test, model_hash: str, options, engine: str, lim) -> str:
    """The identity of one piece of work: this test under this model, options, engine, limits,
    judged by this ptxmc (build_digest)."""
    what = json.dumps([repr(test), model_hash, sorted(options), engine, sorted(vars(lim).items()), build_digest()])
    return hashlib.sha256(what.encode()).hexdigest()


@dataclass(frozen=True)
class Previous:
    """The usable records of an earlier stream, by key (the last record of a key wins)."""
    path: str
    records: dict


def read_previous(path: str) -> Previous:
    """The records of `path` (a --results-jsonl stream): a line cut short by a kill is ignored, a
    file that is not such a stream, one written without keys, or a record whose fields are not
    those ptxmc writes (an edited or damaged line), is refused with its line number."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return Previous(path, {})                       # nothing done yet: start the run
    except (OSError, UnicodeError) as e:
        raise CheckerError(f"--resume {path}: cannot read it: {e}") from None
    records: dict = {}
    shown = printable(str(path))
    for n, line in enumerate(lines, 1):
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):            # RecursionError: nested past Python's stack
            if n == len(lines):                         # the last line, cut short: ignored
                break
            raise CheckerError(f"--resume {shown}:{n}: not a ptxmc --results-jsonl line") from None
        if not isinstance(rec, dict):
            raise CheckerError(f"--resume {shown}:{n}: not a ptxmc --results-jsonl line")
        if "end" in rec:
            continue
        if "key" not in rec or "status" not in rec:
            raise CheckerError(f"--resume {shown}:{n}: a result without a key (written by an older ptxmc, "
                               "or not a --results-jsonl stream): it cannot be matched to a test")
        wrong = _malformed(rec)
        if wrong:
            raise CheckerError(f"--resume {shown}:{n}: not a result ptxmc wrote ({wrong}): the stream was "
                               "edited or damaged; repair the line, delete it (its test is checked again), "
                               "or start without --resume")
        if rec["status"] in ("error", "unknown") and rec["message"].startswith(RETRY_PREFIXES):
            continue
        records[rec["key"]] = rec
    return Previous(path, records)


def _brief(v) -> str:
    try:
        text = json.dumps(v)
    except (ValueError, RecursionError):
        return "nested too deeply"
    return printable(text if len(text) <= 60 else text[:57] + "...")


STATUSES = ("pass", "fail", "error", "unknown", "undefined", "run")
_VERDICTS = {"allowed": True, "forbidden": False, "unknown": None}


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _strings(v) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _value(v) -> bool:
    """An outcome's value: an integer, or (past 64 bits) a hexadecimal string."""
    if isinstance(v, str):
        return 0 < len(v) <= 70_000 and re.fullmatch(r"-?(0x)?[0-9a-fA-F]+", v) is not None
    return _is_int(v)


def _condition(c) -> bool:
    return (isinstance(c, dict) and isinstance(c.get("text"), str) and c.get("expected") in ("allowed", "forbidden", None)
            and c.get("model") in _VERDICTS and _is_int(c.get("positive")) and _is_int(c.get("negative"))
            and isinstance(c.get("sane"), bool) and isinstance(c.get("blame"), list) and all(map(_strings, c["blame"])))


def _undefined(u) -> bool:
    return (isinstance(u, dict) and isinstance(u.get("flag"), str) and _strings(u.get("events"))
            and isinstance(u.get("why"), str))


def _malformed(rec: dict) -> str:
    """What is wrong with a stream record (a field missing or of the wrong type), or ''."""
    checks = (
        ("key", lambda v: isinstance(v, str)),
        ("status", lambda v: v in STATUSES),
        ("message", lambda v: isinstance(v, str)),
        ("model", lambda v: isinstance(v, str)),
        ("engine", lambda v: isinstance(v, str)),
        ("source", lambda v: isinstance(v, str)),
        ("observe", _strings),
        ("outcomes", lambda v: isinstance(v, list) and all(
            isinstance(o, dict) and all(_value(x) for x in o.values()) for o in v)),
        ("complete", lambda v: isinstance(v, bool)),
        ("conditions", lambda v: isinstance(v, list) and all(map(_condition, v))),
        ("undefined", lambda v: isinstance(v, list) and all(map(_undefined, v))),
        ("expect_undefined", lambda v: v is None or isinstance(v, bool)),
        ("notes", _strings),
        ("time", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)),
    )
    for name, ok in checks:
        if name not in rec:
            if name == "time":                      # streams written with --no-timing have none
                continue
            return f"no '{name}'"
        if not ok(rec[name]):
            return f"'{name}' is {_brief(rec[name])}"
    return ""


def result_of_record(rec: dict, test) -> Result:
    """The Result a stream line holds (checker.results.output.result_dict inverted), for `test`:
    the fields a JSON object does not keep in order (matrix rows, outcome keys) come from it."""
    def value(v):
        return int(v, 16) if isinstance(v, str) else v   # past 64 bits a value is a hex string

    observe = tuple(rec["observe"])
    outcomes = tuple(tuple((k, value(o[k])) for k in observe if k in o) for o in rec["outcomes"])
    verdict = _VERDICTS
    conds = tuple(ConditionResult(c["text"], c["expected"], verdict[c["model"]], c["positive"], c["negative"],
                                  c["sane"], tuple(tuple(b) for b in c["blame"])) for c in rec["conditions"])
    undefined = tuple(UndefinedReport(u["flag"], tuple(u["events"]), u["why"]) for u in rec["undefined"])
    return Result(name=test.name, path=test.path, status=rec["status"], message=rec["message"], observe=observe,
                  outcomes=outcomes, complete=rec["complete"], conditions=conds, undefined=undefined,
                  expect_undefined=rec["expect_undefined"], engine=rec["engine"], model=rec["model"],
                  time=rec.get("time", 0.0), notes=tuple(rec["notes"]), matrix_row=test.matrix_row,
                  source=rec["source"])
