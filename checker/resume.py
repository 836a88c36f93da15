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
from dataclasses import dataclass

from .errors import CheckerError
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


def test_key(test, model_hash: str, options, engine: str, lim) -> str:
    """The identity of one piece of work: this test under this model, options, engine, limits."""
    what = json.dumps([repr(test), model_hash, sorted(options), engine, sorted(vars(lim).items())])
    return hashlib.sha256(what.encode()).hexdigest()


@dataclass(frozen=True)
class Previous:
    """The usable records of an earlier stream, by key (the last record of a key wins)."""
    path: str
    records: dict


def read_previous(path: str) -> Previous:
    """The records of `path` (a --results-jsonl stream): a line cut short by a kill is ignored, a
    file that is not such a stream, or one written without keys, is refused."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return Previous(path, {})                       # nothing done yet: start the run
    except (OSError, UnicodeError) as e:
        raise CheckerError(f"--resume {path}: cannot read it: {e}") from None
    records: dict = {}
    for n, line in enumerate(lines, 1):
        try:
            rec = json.loads(line)
        except ValueError:
            if n == len(lines):                         # the last line, cut short: ignored
                break
            raise CheckerError(f"--resume {path}:{n}: not a ptxmc --results-jsonl line") from None
        if not isinstance(rec, dict):
            raise CheckerError(f"--resume {path}:{n}: not a ptxmc --results-jsonl line")
        if "end" in rec:
            continue
        if "key" not in rec or "status" not in rec:
            raise CheckerError(f"--resume {path}:{n}: a result without a key (written by an older ptxmc, "
                               "or not a --results-jsonl stream): it cannot be matched to a test")
        if rec["status"] in ("error", "unknown") and rec.get("message", "").startswith(RETRY_PREFIXES):
            continue
        records[rec["key"]] = rec
    return Previous(path, records)


def result_of_record(rec: dict, test) -> Result:
    """The Result a stream line holds (checker.results.output.result_dict inverted), for `test`:
    the fields a JSON object does not keep in order (matrix rows, outcome keys) come from it."""
    def value(v):
        return int(v, 16) if isinstance(v, str) else v   # past 64 bits a value is a hex string

    observe = tuple(rec["observe"])
    outcomes = tuple(tuple((k, value(o[k])) for k in observe if k in o) for o in rec["outcomes"])
    verdict = {"allowed": True, "forbidden": False, "unknown": None}
    conds = tuple(ConditionResult(c["text"], c["expected"], verdict[c["model"]], c["positive"], c["negative"],
                                  c["sane"], tuple(tuple(b) for b in c["blame"])) for c in rec["conditions"])
    undefined = tuple(UndefinedReport(u["flag"], tuple(u["events"]), u["why"]) for u in rec["undefined"])
    return Result(name=test.name, path=test.path, status=rec["status"], message=rec["message"], observe=observe,
                  outcomes=outcomes, complete=rec["complete"], conditions=conds, undefined=undefined,
                  expect_undefined=rec["expect_undefined"], engine=rec["engine"], model=rec["model"],
                  time=rec.get("time", 0.0), notes=tuple(rec["notes"]), matrix_row=test.matrix_row,
                  source=rec["source"])
