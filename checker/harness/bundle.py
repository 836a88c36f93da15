"""`ptxmc hw pack`: everything a GPU run needs, built and checked on a CPU machine, in one folder
that needs only Python's standard library, the NVIDIA driver and the GPU on the other side.

    BUNDLE/run.py          the runner (checker/harness/bundle_run.py, copied): python3 run.py --deadline S
    BUNDLE/manifest.json   the work, in run order: per test its executable, index, outcome space,
                           fingerprint and planned time; the configuration, target, toolchain, model hash
    BUNDLE/bin/pNNN        multi-test executables: up to CHUNK programs each, one CUDA context per process
    BUNDLE/lib/            the CUDA runtime the executables link (libcudart.so.*): one copy, not one per
                           executable (review C5: ~1 MB of static runtime per program made 728 MB)
    BUNDLE/unsupported.txt every test not packed, with the reason (not expressible, static or SASS check)

Each program is generated, read back by the static check (checker.harness.static_check: waits that
can complete, alignment, time-bounded spins, its device's target, committed bulk groups, no
prefetch racing a test's tensormap acquire) and compiled; every fence and access of the test must
be in the SASS of the executable itself (cuobjdump extracts its cubin; line info maps the SASS to
the test's lines). A program failing either check is not packed.

Order (review C3): the positive controls first, then tests by value: those with asynchronous-proxy,
tensor-map, mbarrier, bulk-copy, wgmma or tcgen05 instructions, then the generic ones; a run cut
short by its deadline has done the most useful work.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..ast import LitmusTest
from ..errors import HarnessError
from .build import NVCC_FLAGS, batch_source, safe_name
from .codegen import Program
from .toolchain import Toolchain, find_toolchain, search_dirs

CHUNK = 24                     # programs per executable (one nvcc, one process on the GPU)
RUNNER = Path(__file__).resolve().parent / "bundle_run.py"

# Run profiles: seconds per test and per positive control (the program stops at whichever of
# time and max_iterations comes first). first-run: ~6 minutes for the whole suite on one H100/H200
# (docs/hardware-harness.md#the-first-run-profile has the arithmetic); full: the configuration's own budget.
PROFILES = {
    "first-run": {"time_s": 0.25, "control_time_s": 5.0, "deadline_s": 480},
    "full": {"time_s": None, "control_time_s": None, "deadline_s": None},
}
# What a test costs besides its own time, assumed for one H100/H200 (see the profile's docs above):
# per test in a process (allocations, occupancy query, result block), and per executable (process
# start and CUDA context creation).
PER_TEST_OVERHEAD_S = 0.05
PER_EXECUTABLE_S = 2.0


def estimate_seconds(n_tests: int, n_controls: int, profile: str, config, chunk: int = CHUNK) -> float:
    """The device time a bundle of `n_tests` tests (`n_controls` of them positive controls) takes
    under `profile`, with the overheads assumed above."""
    prof = PROFILES[profile]
    per_test = prof["time_s"] or config.time_budget_s
    per_control = prof["control_time_s"] or config.time_budget_s
    executables = -(-n_tests // chunk)
    return (n_controls * per_control + (n_tests - n_controls) * per_test + n_tests * PER_TEST_OVERHEAD_S
            + executables * PER_EXECUTABLE_S)

_ASYNC_OPS = {"cp", "cp.async", "mbarrier", "tensormap", "wgmma", "tcgen05"}


def value_rank(test: LitmusTest) -> int:
    """0 for the positive controls, 1 for proxy and asynchronous tests, 2 for the generic ones."""
    from .controls import is_control
    if is_control(test):
        return 0
    for t in test.threads:
        for i in t.code:
            if i.op in _ASYNC_OPS or (i.op in ("fence", "membar") and "proxy" in i.qualifiers) or i.has("async"):
                return 1
    return 2


def ordered(tests: list[LitmusTest]) -> list[LitmusTest]:
    """Controls first, then by value; the suite's order within each rank (a stable sort)."""
    return sorted(tests, key=value_rank)


@dataclass(frozen=True)
class Packed:
    test: LitmusTest
    program: Program
    binary: str            # 'bin/p003'
    index: int             # the test's number inside that executable


def multi_source(programs: list[Program]) -> str:
    """One translation unit: every program in its own namespace (checker.harness.build.batch_source)
    with its `main` renamed `test_main`, and a `main` that runs the tests it is asked for, one after
    the other, in this one process:

        EXE --seed S --run K:SECONDS [--run K:SECONDS ...]

    Before test K it prints `ptxmc-start K`, then the test's `ptxmc-hw 1` block, then
    `ptxmc-exit K RC` (RC: the test's exit code), flushing each, so the runner reads results as they
    come and knows which test a hang or a crash belongs to."""
    text, _ = batch_source(programs)
    text = text.replace("#define PTXMC_NO_MAIN\n", "#define PTXMC_MULTI\n#include <cuda.h>\n", 1)
    decls = "".join(f"namespace ptxmc_t{k} {{ int test_main(int, char **); }}\n" for k in range(len(programs)))
    table = ", ".join(f"ptxmc_t{k}::test_main" for k in range(len(programs)))
    main = f"""
{decls}static int (*const ptxmc_tests[])(int, char **) = {{{table}}};
int main(int argc, char **argv) {{
    const char *seed = "1";
    for (int i = 1; i + 1 < argc; i += 2) {{
        if (!strcmp(argv[i], "--seed")) {{ seed = argv[i + 1]; continue; }}
        if (strcmp(argv[i], "--run")) {{ printf("error unknown option %s\\n", argv[i]); return 2; }}
        char buf[64];
        strncpy(buf, argv[i + 1], sizeof buf - 1); buf[sizeof buf - 1] = 0;
        char *colon = strchr(buf, ':');
        if (!colon) {{ printf("error --run %s: expected K:SECONDS\\n", buf); return 2; }}
        *colon = 0;
        int k = atoi(buf);
        if (k < 0 || k >= {len(programs)}) {{ printf("error no test %d\\n", k); return 2; }}
        printf("ptxmc-start %d\\n", k); fflush(stdout);
        char a0[] = "test", a1[] = "--seed", a3[] = "--time";
        char *targv[] = {{a0, a1, (char *)seed, a3, colon + 1, 0}};
        int rc = ptxmc_tests[k](5, targv);
        printf("ptxmc-exit %d %d\\n", k, rc); fflush(stdout);
    }}
    return 0;
}}
"""
    return text + main


def _runtime_lib(tc: Toolchain) -> Path:
    """The shared CUDA runtime matching nvcc (the wheel's nvidia/cu13/lib, or the toolkit's lib64)."""
    roots = [Path(tc.nvcc).resolve().parent.parent] if tc.nvcc else []
    roots += [d.parent for d in search_dirs()]
    for root in roots:
        for sub in ("lib", "lib64", "targets/x86_64-linux/lib"):
            found = sorted((root / sub).glob("libcudart.so.[0-9]*"))
            if found:
                return min(found, key=lambda p: len(p.name))
    raise HarnessError("the shared CUDA runtime (libcudart.so.N) was not found next to nvcc or in the nvidia-* "
                       "wheels: pip install 'ptxmc[hw]' (nvidia-cuda-runtime)")


class Children:
    """The compiler processes a pack has running: killed when the pack is interrupted (a signal
    reaches the main thread only, while the compiles wait in worker threads). Each nvcc runs in
    its own process group, killed whole: nvcc's children (cicc, ptxas, the host linker) would
    otherwise outlive it and write the executable after the pack has stopped."""

    def __init__(self):
        self.procs: set = set()
        self.stopped = False
        self.lock = threading.Lock()

    def run(self, cmd, timeout: float, cwd: Path) -> tuple[int, str]:
        with self.lock:           # no compiler starts once kill_all has run
            if self.stopped:
                raise HarnessError("interrupted")
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd,
                                    start_new_session=True)
            self.procs.add(proc)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.communicate()
            raise HarnessError(f"nvcc did not finish within {timeout:.0f} s")
        finally:
            with self.lock:
                self.procs.discard(proc)
        return proc.returncode, out

    def kill_all(self) -> None:
        with self.lock:
            self.stopped = True
            for proc in list(self.procs):
                _kill_group(proc)


def _kill_group(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def compile_multi(programs: list[Program], out: Path, work: Path, tc: Toolchain, timeout: float = 3600,
                  children: Children | None = None) -> str:
    """Compile one multi-test executable with line info, linked against the shared runtime found
    through $ORIGIN/../lib; returns nvcc's warnings. HarnessError with nvcc's message."""
    nvcc = tc.require("nvcc")
    lib = _runtime_lib(tc)
    link = work / "lib"
    link.mkdir(parents=True, exist_ok=True)
    try:        # (executables compile in parallel into one work folder: the first link serves all)
        (link / "libcudart.so").symlink_to(lib)
    except FileExistsError:
        pass
    src = work / f"{out.name}.cu"
    src.write_text(multi_source(programs))
    part = out.with_name(f".{out.name}.part")
    target = programs[0].target
    virtual = "compute_" + target[len("sm_"):]
    # -compress-all: the device code compressed in the fatbinary (~20 KB per program instead of ~75)
    cmd = [nvcc, *NVCC_FLAGS, "-lineinfo", "-Xfatbin=-compress-all", f"-gencode=arch={virtual},code={target}", "-cudart", "shared",
           f"-L{link}", "-Xlinker", "-rpath,$ORIGIN/../lib", "-o", str(part.resolve()), str(src.resolve())]
    try:        # (linked under another name, renamed when whole: a stopped pack leaves no half executable)
        rc, log = (children or Children()).run(cmd, timeout, work)
        if rc != 0:
            from .build import _errors
            raise HarnessError(f"nvcc failed for {out.name} ({len(programs)} programs):\n{_errors(log)}")
        os.replace(part, out)
    finally:
        part.unlink(missing_ok=True)
    return log.strip()


def executable_sass(exe: Path, work: Path, tc: Toolchain) -> str:
    """The disassembly (with line info) of the device code inside an executable."""
    from .sass import disassemble
    dump = work / f"{exe.name}.elf"
    dump.mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.run([tc.require("cuobjdump"), "-xelf", "all", str(exe.resolve())], capture_output=True,
                              text=True, timeout=300, cwd=dump)
    except (OSError, subprocess.SubprocessError) as e:
        raise HarnessError(f"cannot run cuobjdump on {exe}: {e}")
    cubins = sorted(dump.glob("*.cubin"))
    if proc.returncode != 0 or not cubins:
        raise HarnessError(f"cuobjdump found no cubin in {exe}: {proc.stderr.strip()[:300]}")
    return "\n".join(disassemble(c, tc) for c in cubins)


def model_hash() -> str:
    try:
        from ..resources import model_hash as mh, resolve_model
        return mh(resolve_model(None))
    except Exception as e:            # the hash is informative: a missing one says why
        return f"unknown ({type(e).__name__})"


def pack(tests: list[LitmusTest], config, outdir: Path, profile: str = "first-run", chunk: int = CHUNK,
         jobs: int = 2, say=print) -> dict:
    """Build and check every expressible test, write the bundle into `outdir` (absent or empty, or a
    bundle written before); returns the manifest."""
    from concurrent.futures import ThreadPoolExecutor

    from ..version import __version__
    from .sass import check_fences
    from .space import fingerprint
    from .static_check import checked_programs
    if profile not in PROFILES:
        raise HarnessError(f"unknown profile '{profile}' (known: {', '.join(PROFILES)})")
    tc = find_toolchain()
    for tool in ("nvcc", "cuobjdump", "nvdisasm"):
        tc.require(tool)
    prof = PROFILES[profile]
    progs, skipped = checked_programs(ordered(tests), config, tc.version)
    names = [safe_name(t.name) for t, _ in progs]
    if len(set(names)) != len(names):
        raise HarnessError("two tests share a file name: rename one")
    (outdir / "bin").mkdir(parents=True, exist_ok=True)
    (outdir / "lib").mkdir(exist_ok=True)
    chunks = [progs[k:k + chunk] for k in range(0, len(progs), chunk)]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ptxmc-pack-") as tmp:
        work = Path(tmp)

        def one(n_items):
            n, items = n_items
            exe = outdir / "bin" / f"p{n:03d}"
            try:
                compile_multi([p for _, p in items], exe, work, tc, children=children)
                disasm = executable_sass(exe, work, tc)
            except HarnessError as e:
                return n, items, e
            checks = [check_fences(t, p, disasm, label=f"{k:03d}-{safe_name(p.test)}.cu")
                      for k, (t, p) in enumerate(items)]
            return n, items, checks

        packed: list[Packed] = []
        children = Children()
        ex = ThreadPoolExecutor(max_workers=max(1, jobs))
        try:
            for n, items, res in ex.map(one, enumerate(chunks)):
                if isinstance(res, HarnessError):
                    skipped += [(t.name, f"build: {res}") for t, _ in items]
                    say(f"FAIL bin/p{n:03d}: {res}")
                    continue
                for k, ((t, p), checks) in enumerate(zip(items, res)):
                    bad = [str(c) for c in checks if not c.ok]
                    if bad:
                        skipped.append((t.name, "SASS check: " + "; ".join(bad)))
                    else:
                        packed.append(Packed(t, p, f"bin/p{n:03d}", k))
                say(f"ok   bin/p{n:03d}: {len(items)} programs ({time.monotonic() - started:.0f} s)")
        except BaseException:                 # a signal or an error: no compiler left running
            children.kill_all()
            ex.shutdown(wait=True, cancel_futures=True)
            raise
        ex.shutdown(wait=True)
        shutil.copy2(_runtime_lib(tc), outdir / "lib" / _runtime_lib(tc).name)
    shutil.copy2(RUNNER, outdir / "run.py")
    order = {t.name: k for k, (t, _) in enumerate(progs)}
    packed.sort(key=lambda x: order[x.test.name])
    from .controls import is_control, is_informational
    entries = []
    for x in packed:
        control = is_control(x.test)
        planned = (prof["control_time_s"] if control else prof["time_s"]) or config.time_budget_s
        entries.append({
            "name": x.test.name, "binary": x.binary, "index": x.index, "target": x.program.target,
            "vars": list(x.program.space.names), "domains": [list(d) for d in x.program.space.domains],
            "fingerprint": fingerprint(x.test), "control": control, "informational": is_informational(x.test.name),
            "rank": value_rank(x.test), "time_s": planned})
    manifest = {
        "format": "ptxmc-bundle", "version": 1, "ptxmc": __version__, "model_hash": model_hash(),
        "device": config.name, "target": config.target, "config": config.to_dict(), "nvcc": tc.version or "",
        "profile": profile, "deadline_s": prof["deadline_s"], "tests": entries,
        "not_packed": [{"name": n, "reason": w} for n, w in skipped]}
    (outdir / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    (outdir / "unsupported.txt").write_text("".join(f"{n}: {w}\n" for n, w in skipped))
    (outdir / "README.txt").write_text(README.format(n=len(entries), device=config.name, profile=profile,
                                                     deadline=prof["deadline_s"] or "SECONDS"))
    return manifest


README = """ptxmc hardware bundle: {n} tests for the '{device}' configuration, profile {profile}.

On the GPU machine (Python 3.8+, the NVIDIA driver; nothing to install):

    python3 run.py --deadline {deadline} -o results

Back on the CPU machine:

    ptxmc hw compare results --controls       (the histograms, and what failed or did not fit)
    ptxmc hw import results/histograms.jsonl --controls -o results/litmus7.log

results/status.json says what ran, failed or did not fit; results/run.log is the run's log.
"""


def bundle_size(outdir: Path) -> int:
    return sum(p.stat().st_size for p in outdir.rglob("*") if p.is_file())


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
