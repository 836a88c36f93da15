#!/usr/bin/env python3
"""Run a ptxmc hardware bundle (`ptxmc hw pack`) on a GPU machine, within a deadline.

    python3 run.py --deadline SECONDS [-o results] [--seed N] [--resume] [--only NAME ...]

Needs only Python's standard library (3.8+), the NVIDIA driver and the GPU: no ptxmc, no pip. This
file is checker/harness/bundle_run.py, copied into each bundle as run.py; it must never import
anything outside the standard library (tests run it under `python3 -I -S`).

The work is manifest.json's, in its order (positive controls first, then by value). Each
executable holds up to a few dozen tests and runs those it is given one after the other in one
process (one CUDA context). The time per test is the manifest's planned time, scaled down so the
whole list fits the deadline (never below MIN_TIME); what does not fit is listed as not run, and
the run stops STOP_MARGIN seconds before the deadline at the latest, killing a test in progress if
it must. A test that does not finish within its time plus a margin is killed (spins inside the
program are bounded by %globaltimer, so this is a hang nothing else caught), recorded as failed,
and the executable is restarted for the tests after it. An instance whose spin gave up is counted
in the `hang` (or `timeout`) bucket of its test's histogram by the program itself.

Written to the output folder, each as soon as it is known:
    histograms.jsonl   one ptxmc histogram per test (`ptxmc hw compare` / `hw import` read it)
    run.log            what happened, test by test
    status.json        device, driver, bundle, and which tests ran, failed or were not run

`--fake-device SPEC` runs the same path with this file standing in for every executable (for the
plumbing tests: outcomes drawn uniformly from each test's outcome space; everything labelled
SIMULATED and `"simulated": true`). SPEC: comma-separated KIND:TEST (TEST a name or *), KIND one
of hang (the process hangs in TEST), crash (it dies in TEST), fail (TEST exits non-zero),
timeout (every instance of TEST times out), spin (a quarter of TEST's instances hang), seed:N.
"""
import argparse
import json
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FORMAT, VERSION = "ptxmc-histogram", 1
FAKE_DEVICE = "ptxmc fake device"
MIN_TIME = 0.05          # seconds per test, at least
OVERHEAD = 0.05          # per test inside a process (allocation, occupancy query, result block)
STARTUP = 2.0            # first guess at starting an executable and its CUDA context (then measured)
CONTEXT_ALLOWANCE = 20.0  # extra time the first test of a process may take (context creation)
STOP_MARGIN = 5.0        # stop this long before the deadline (or 5% of it, if less)
MAX_FAILURES_IN_A_ROW = 8


class UsageError(Exception):
    pass


# -- the program's result block (checker.harness.histogram.parse_output reads the same) ------------

def parse_block(lines):
    """(meta, [(bucket, count)]) of a 'ptxmc-hw 1' block (its lines, 'end' included); ValueError."""
    meta, buckets, done = {}, [], False
    for line in lines[1:]:
        key, _, rest = line.strip().partition(" ")
        if key == "end":
            done = True
            break
        if key == "bucket":
            parts = rest.split()
            if len(parts) != 2 or not all(x.isdigit() for x in parts):
                raise ValueError(f"malformed result line {line.strip()!r} (expected 'bucket INDEX COUNT')")
            buckets.append((int(parts[0]), int(parts[1])))
        elif key:
            meta[key] = rest
    if not done:
        raise ValueError("the result block is truncated (no 'end' line)")
    return meta, buckets


def decode(index, domains):
    """The values of bucket `index`: mixed radix over the domains, the last variable fastest."""
    size = 1
    for d in domains:
        size *= len(d)
    if not 0 <= index < size:
        raise ValueError(f"bucket {index} outside the outcome space (size {size})")
    vals = []
    for dom in reversed(domains):
        index, k = divmod(index, len(dom))
        vals.append(dom[k])
    return list(reversed(vals))


def record(entry, manifest, meta, buckets, seed, simulated):
    """The ptxmc histogram (checker.harness.histogram.Histogram.to_json) of one test's block."""
    def num(key):
        v = meta.get(key, "0").strip() or "0"
        if not v.isdigit():
            raise ValueError(f"'{key} {v}' is not a count")
        return int(v)
    counts = {}
    for b, c in buckets:
        vals = tuple(decode(b, entry["domains"]))
        counts[vals] = counts.get(vals, 0) + c
    rows = [{"outcome": dict(zip(entry["vars"], vals)), "count": c} for vals, c in sorted(counts.items()) if c]
    other, timeout, epilogue, hang = num("other"), num("timeout"), num("epilogue"), num("hang")
    total = sum(counts.values()) + other + timeout + epilogue + hang
    if "instances" in meta and num("instances") != total:
        raise ValueError(f"the counts add up to {total} instances, the program ran {num('instances')}")
    if meta.get("test", entry["name"]) != entry["name"]:
        raise ValueError(f"the program reports test {meta.get('test')!r}")
    return {
        "format": FORMAT, "version": VERSION, "test": entry["name"], "vars": entry["vars"], "counts": rows,
        "other": other, "timeout": timeout, "epilogue": epilogue, "unsynced": num("unsynced"), "hang": hang,
        "fingerprint": entry["fingerprint"], "sms": num("sms"), "nvcc": manifest.get("nvcc", ""),
        "device_index": os.environ.get("CUDA_VISIBLE_DEVICES", ""), "simulated": simulated,
        "device": meta.get("device", ""), "compute_capability": meta.get("cc", ""),
        "driver": meta.get("driver", ""), "cuda": meta.get("runtime", ""), "target": entry["target"],
        "config": manifest.get("config", {}), "seed": seed, "iterations": num("iterations"),
        "instances": total, "time_s": float(meta.get("time", "0") or 0)}


# -- planning ---------------------------------------------------------------------------------------

def times_for(todo, remaining, startup):
    """Seconds for each test of `todo` so that all fit in `remaining` seconds (scaled down from the
    planned times, never below MIN_TIME)."""
    switches = 1 + sum(1 for a, b in zip(todo, todo[1:]) if a["binary"] != b["binary"])
    room = remaining - switches * startup - len(todo) * OVERHEAD
    planned = sum(e["time_s"] for e in todo)
    scale = min(1.0, room / planned) if planned > 0 and room > 0 else 0.0
    return [max(MIN_TIME, e["time_s"] * scale) for e in todo]


class Runner:
    def __init__(self, manifest, todo, out, deadline, seed, fake, kill_margin, say, context_allowance=CONTEXT_ALLOWANCE):
        self.manifest, self.todo, self.out, self.seed, self.fake = manifest, list(todo), out, seed, fake
        self.start = time.monotonic()
        self.stop_at = self.start + deadline - min(STOP_MARGIN, 0.05 * deadline)
        self.kill_margin = kill_margin
        self.say = say
        self.startup = STARTUP
        self.ran, self.failed, self.not_run = [], [], []
        self.gpu = {}
        self.failures_in_a_row = 0
        self.proc = None
        self.stopped = ""
        self.context_allowance = context_allowance

    def left(self):
        return self.stop_at - time.monotonic()

    def run(self):
        while self.todo and not self.stopped:
            if self.failures_in_a_row >= MAX_FAILURES_IN_A_ROW:
                self.stopped = f"{MAX_FAILURES_IN_A_ROW} tests failed in a row: the GPU or the bundle looks unusable"
                break
            times = times_for(self.todo, self.left(), self.startup)
            batch, need = [], self.startup
            for e, t in zip(self.todo, times):
                if e["binary"] != self.todo[0]["binary"] or need + t + OVERHEAD > self.left():
                    break
                batch.append((e, t))
                need += t + OVERHEAD
            if not batch:
                self.stopped = "the deadline leaves no time for the next test"
                break
            self.run_process(batch)
        for e in self.todo:
            self.not_run.append({"test": e["name"], "why": self.stopped or "not run"})
        self.todo = []

    def command(self, binary, batch):
        args = ["--seed", str(self.seed)]
        for e, t in batch:
            args += ["--run", f"{e['index']}:{t:.3f}"]
        if self.fake is not None:
            return [sys.executable, "-I", "-S", str(HERE / "run.py"), "--fake-binary", binary, "--fake-spec",
                    self.fake, *args]
        return [str(HERE / binary), *args]

    def run_process(self, batch):
        binary = batch[0][0]["binary"]
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = str(HERE / "lib") + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        spawned = time.monotonic()
        try:
            self.proc = subprocess.Popen(self.command(binary, batch), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         text=True, errors="replace", env=env, start_new_session=True)
        except OSError as e:
            e0 = batch[0][0]
            self.fail(e0, f"cannot start {binary}: {e.strerror}")
            self.todo.remove(e0)
            return
        lines: queue.Queue = queue.Queue()

        def reader(stream):
            for line in stream:
                lines.put(line.rstrip("\n"))
            lines.put(None)
        threading.Thread(target=reader, args=(self.proc.stdout,), daemon=True).start()
        by_index = {e["index"]: (e, t) for e, t in batch}
        current, started, block, chatter, first, finished = None, 0.0, None, [], True, 0
        limit_at = spawned + self.context_allowance + self.startup
        while True:
            wait = min(limit_at, self.stop_at) - time.monotonic()
            try:
                line = lines.get(timeout=max(0.01, wait))
            except queue.Empty:
                line = ""
                if time.monotonic() >= self.stop_at:
                    self.kill()
                    if current is not None:
                        self.not_run.append({"test": current[0]["name"], "why": "stopped at the deadline"})
                        self.todo.remove(current[0])
                    self.stopped = "the deadline"
                    return
                if time.monotonic() >= limit_at:
                    self.kill()
                    if current is None:
                        self.fail(batch[0][0], f"{binary} printed nothing within {limit_at - spawned:.0f} s")
                        self.todo.remove(batch[0][0])
                    else:
                        self.fail(current[0], f"killed after {time.monotonic() - started:.1f} s (its limit): the "
                                              f"program hung despite its bounded spins")
                        self.todo.remove(current[0])
                    return
                continue
            if line is None:                      # the process ended
                rc = self.proc.wait()
                self.proc = None
                if current is not None:
                    self.fail(current[0], f"the executable died (exit {rc}) during the test: "
                                          + " / ".join(l for l in chatter[-5:] if l))
                    self.todo.remove(current[0])
                elif rc != 0 or not finished:
                    self.fail(batch[0][0], f"{binary} exited {rc} before its first test: " + " / ".join(chatter[-5:]))
                    self.todo.remove(batch[0][0])
                return
            if line.startswith("ptxmc-start "):
                k = int(line.split()[1])
                current, started, block, chatter = by_index[k], time.monotonic(), None, []
                e, t = current
                if first:
                    self.startup = 0.5 * self.startup + 0.5 * (started - spawned)
                limit_at = started + t + self.kill_margin(t) + (self.context_allowance if first else 0.0)
                first = False
            elif line.startswith("ptxmc-exit ") and current is not None:
                rc = int(line.split()[2])
                e, t = current
                if rc != 0:
                    self.fail(e, f"the program exited {rc}: " + " / ".join(l for l in chatter[-5:] if l))
                elif block is None:
                    self.fail(e, "the program printed no result block")
                else:
                    self.result(e, block)
                self.todo.remove(e)
                current, finished = None, finished + 1
                limit_at = time.monotonic() + self.context_allowance
            elif line == "ptxmc-hw 1":
                block = [line]
            elif block is not None and block[-1] != "end":
                block.append(line)
            else:
                chatter.append(line)

    def result(self, e, block):
        try:
            meta, buckets = parse_block(block)
            rec = record(e, self.manifest, meta, buckets, self.seed, self.fake is not None)
        except ValueError as err:
            self.fail(e, str(err))
            return
        with open(self.out / "histograms.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(rec, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())
        if not self.gpu:
            self.gpu = {k: rec[k] for k in ("device", "compute_capability", "driver", "cuda", "sms")}
        self.ran.append(e["name"])
        self.failures_in_a_row = 0
        self.say(f"ran  {e['name']}: {rec['instances']} instances in {rec['time_s']:.2f} s, {len(rec['counts'])} "
                 f"outcome(s), timeout {rec['timeout']}, hang {rec['hang']}" + (" [SIMULATED]" if rec["simulated"] else ""))

    def fail(self, e, why):
        self.failed.append({"test": e["name"], "why": why})
        self.failures_in_a_row += 1
        self.say(f"FAIL {e['name']}: {why}")

    def kill(self):
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self.proc.wait()
            self.proc = None


def gpu_problem(manifest):
    """Why this machine's GPU cannot run the bundle (its executables are built for one architecture:
    an sm_90a program does not load on a B200), or None; nvidia-smi absent: nothing to say."""
    import shutil
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    rows = [[x.strip() for x in line.split(",")] for line in out.splitlines() if line.strip()]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    row = rows[int(visible)] if visible.isdigit() and int(visible) < len(rows) else (rows[0] if rows else None)
    if row is None or len(row) < 2:
        return None
    want = manifest.get("target", "")
    cc = row[1].replace(".", "")
    if want.startswith("sm_") and cc.isdigit() and want[3:].rstrip("af") != cc:
        return (f"this bundle is built for {want}, but {row[0]} is compute capability {row[1]}: pack one with "
                f"`ptxmc hw pack --device {'h100' if cc.startswith('9') else 'b200' if cc == '100' else 'FILE.toml'}`")
    return None


def load_manifest():
    try:
        manifest = json.loads((HERE / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise UsageError(f"{HERE / 'manifest.json'}: cannot read the bundle's manifest: {e}")
    if manifest.get("format") != "ptxmc-bundle" or manifest.get("version") != 1:
        raise UsageError(f"{HERE / 'manifest.json'}: not a ptxmc bundle manifest (version 1)")
    return manifest


def main(argv=None):
    ap = argparse.ArgumentParser(prog="run.py", description="Run a ptxmc hardware bundle within a deadline.")
    ap.add_argument("--deadline", type=float, default=None, help="seconds the whole run may take (required)")
    ap.add_argument("-o", "--output", default=None, help="results folder (default: results next to run.py)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--resume", action="store_true", help="skip tests already in OUTPUT/histograms.jsonl")
    ap.add_argument("--only", action="append", default=[], help="only this test (repeatable)")
    ap.add_argument("--kill-after", type=float, default=10.0,
                    help="seconds past a test's own time before it counts as hung (default 10, plus 2x its time)")
    ap.add_argument("--context-allowance", type=float, default=CONTEXT_ALLOWANCE,
                    help=f"extra seconds for the first test of each executable (CUDA context; default {CONTEXT_ALLOWANCE:g})")
    ap.add_argument("--fake-device", default=None, metavar="SPEC", help="simulate the GPU (plumbing tests; SIMULATED)")
    ap.add_argument("--fake-binary", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--fake-spec", default="", help=argparse.SUPPRESS)
    ap.add_argument("--run", action="append", default=[], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.fake_binary is not None:
        return fake_binary(args)
    try:
        return run(args)
    except UsageError as e:
        print(f"run.py: {e}", file=sys.stderr)
        return 2


def run(args):
    import math
    if args.deadline is None:
        raise UsageError("--deadline SECONDS is required (the time this run may take, e.g. 480)")
    if not (math.isfinite(args.deadline) and args.deadline > 0):
        raise UsageError(f"--deadline {args.deadline}: must be a positive number of seconds")
    for flag, v in (("--kill-after", args.kill_after), ("--context-allowance", args.context_allowance)):
        if not (math.isfinite(v) and v > 0):
            raise UsageError(f"{flag} {v}: must be a positive number of seconds")
    manifest = load_manifest()
    if args.fake_device is not None:
        fake_spec(args.fake_device)
    else:
        problem = gpu_problem(manifest)
        if problem:
            raise UsageError(problem)
    tests = manifest["tests"]
    if args.only:
        unknown = sorted(set(args.only) - {e["name"] for e in tests})
        if unknown:
            raise UsageError(f"no test named {', '.join(unknown)} in this bundle")
        tests = [e for e in tests if e["name"] in set(args.only)]
    out = Path(args.output) if args.output else HERE / "results"
    out.mkdir(parents=True, exist_ok=True)
    jsonl = out / "histograms.jsonl"
    done = set()
    if jsonl.is_file() and jsonl.stat().st_size:
        if not args.resume:
            raise UsageError(f"{jsonl} holds the histograms of an earlier run: pass --resume to go on with it, or "
                             f"another -o folder (nothing was deleted)")
        for line in jsonl.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                r = json.loads(line)
                done.add((r["test"], r["fingerprint"]))
            except (ValueError, KeyError, TypeError):
                continue
    todo = [e for e in tests if (e["name"], e["fingerprint"]) not in done]
    jsonl.touch()
    log = open(out / "run.log", "a", encoding="utf-8")

    def say(msg):
        print(msg, flush=True)
        log.write(msg + "\n")
        log.flush()
    if args.fake_device is not None:
        say("SIMULATED: --fake-device: no GPU is used; nothing below is an observation")
    say(f"bundle: {len(tests)} tests for '{manifest.get('device')}' ({manifest.get('target')}), profile "
        f"{manifest.get('profile')}; {len(tests) - len(todo)} already done; deadline {args.deadline:g} s")
    r = Runner(manifest, todo, out, args.deadline, args.seed, args.fake_device,
               lambda t: args.kill_after + 2 * t, say, args.context_allowance)

    def on_signal(signum, frame):
        r.kill()
        r.stopped = f"signal {signum}"
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_signal)
    try:
        r.run()
    except KeyboardInterrupt:
        r.kill()
        r.stopped = r.stopped or "interrupted"
        r.not_run += [{"test": e["name"], "why": r.stopped} for e in r.todo]
    elapsed = time.monotonic() - r.start
    status = {
        "format": "ptxmc-bundle-status", "version": 1, "simulated": args.fake_device is not None,
        "bundle": {k: manifest.get(k) for k in ("ptxmc", "model_hash", "device", "target", "nvcc", "profile")},
        "gpu": r.gpu, "deadline_s": args.deadline, "elapsed_s": round(elapsed, 3), "seed": args.seed,
        "stopped": r.stopped, "ran": r.ran, "failed": r.failed, "not_run": r.not_run,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    (out / "status.json").write_text(json.dumps(status, indent=1) + "\n", encoding="utf-8")
    say(f"ran {len(r.ran)}, failed {len(r.failed)}, not run {len(r.not_run)} in {elapsed:.1f} s"
        + (f" (stopped: {r.stopped})" if r.stopped else "") + f"; wrote {jsonl}, {out / 'status.json'}")
    log.close()
    return 0 if not r.failed and not r.not_run else 1


# -- the fake device: this file standing in for an executable ----------------------------------------

def fake_spec(spec):
    kinds = ("hang", "crash", "fail", "timeout", "spin", "seed")
    out = {k: set() for k in kinds}
    out["seed"] = 1
    for part in filter(None, (p.strip() for p in (spec or "").split(","))):
        kind, _, arg = part.partition(":")
        if kind not in kinds or not arg:
            raise UsageError(f"--fake-device {spec!r}: expected KIND:TEST with KIND one of {', '.join(kinds)}")
        if kind == "seed":
            if not arg.isdigit():
                raise UsageError(f"--fake-device: seed:{arg} is not a number")
            out["seed"] = int(arg)
        else:
            out[kind].add(arg)
    return out


def fake_binary(args):
    """Print what the executable `args.fake_binary` would for `--run K:T ...`, taking T seconds per
    test (so deadlines are exercised), from the manifest's outcome spaces."""
    spec = fake_spec(args.fake_spec)
    manifest = load_manifest()
    mine = {e["index"]: e for e in manifest["tests"] if e["binary"] == args.fake_binary}
    hit = lambda kind, name: name in spec[kind] or "*" in spec[kind]
    for run_arg in args.run:
        k, _, t = run_arg.partition(":")
        e = mine[int(k)]
        name = e["name"]
        print(f"ptxmc-start {k}", flush=True)
        if hit("hang", name):
            time.sleep(3600)
        if hit("crash", name):
            print("error fake.cu:1 simulated crash", flush=True)
            return 3
        time.sleep(float(t))
        if hit("fail", name):
            print("error fake.cu:2 simulated failure", flush=True)
            print(f"ptxmc-exit {k} 3", flush=True)
            continue
        rng = random.Random(f"{spec['seed']}:{args.seed}:{name}")
        size = 1
        for d in e["domains"]:
            size *= len(d)
        n, counts, timeout, hang = 4096, {}, 0, 0
        if hit("timeout", name):
            timeout = n
        else:
            hang = n // 4 if hit("spin", name) else 0
            for _ in range(n - hang):
                b = rng.randrange(size)
                counts[b] = counts.get(b, 0) + 1
        cc = {"sm_90a": "9.0", "sm_100a": "10.0"}.get(e["target"], "0.0")
        lines = ["ptxmc-hw 1", f"test {name}", f"device {FAKE_DEVICE}", f"cc {cc}", "sms 0", "driver 0", "runtime 0",
                 f"seed {args.seed}", "iterations 1", f"instances {n}", "testing_ctas 0", f"time {float(t):.3f}"]
        lines += [f"bucket {b} {c}" for b, c in sorted(counts.items())]
        lines += ["other 0", f"timeout {timeout}", "epilogue 0", "unsynced 0", f"hang {hang}", "end"]
        print("\n".join(lines), flush=True)
        print(f"ptxmc-exit {k} 0", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
