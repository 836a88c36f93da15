"""The CuTe DSL Hopper dense GEMM's mutants (`ptxmc extract --mutants`, issue 35): every one is
answered at default options, caught (load-bearing) or not load-bearing with a reason read off the
skeleton. All 23 take about 2 minutes of CPU, so this judges one of each kind (the slowest of its
kind where kinds differ in cost); docs/extract.md records the full table."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from checker import limits
from checker.extract.api import extract_file
from checker.extract.render import mutants, yaml_text

ROOT = Path(__file__).resolve().parents[2]
CUTEDSL = ROOT / "examples" / "kernels" / "cutedsl" / "cutedsl_hopper_dense_gemm.sm90a.ptx"

SAMPLE = {
    # a wait for the wrong phase of the consumer's full barrier: it reads a tile in flight
    "w1_3_3t-L322-1-flip-parity": "InFlight",
    # the producer expects one box short: the phase completes before the second copy lands
    "w0_3_125t-L345-1-short-tx": "InFlight",
    # the producer's arrive on the full barrier dropped: every execution blocks
    "w0_3_125t-L131-1-no-arrive": "every execution blocks",
    # the epilogue's proxy fence between its stmatrix stores and the TMA store dropped
    "w0_3_125t-L410-1-no-proxy-fence": "MixedSizeRace",
}
NOT_BEARING = {
    # the last iteration's release of the stage: no role waits for the phase it completes
    "w1_3_3t-L309-2-no-arrive": "phase 0 of dynamic_shmem__0_mb3, which no role waits for",
}


def test_cutedsl_mutants_are_each_answered(tmp_path):
    [x] = extract_file(str(CUTEDSL), out_dir=str(tmp_path))
    every = {m.name: m for m in mutants(x.skeleton)}
    assert len(every) == 23
    x.mutants = [every[n] for n in (*SAMPLE, *NOT_BEARING)]
    Path(x.path).write_text(yaml_text(x.skeleton, x.mutants))
    # default options (the limits the skeleton's header names); the timeout only as a safety net
    # for a loaded machine: each of these takes under 20 s on one
    rep = x.check(jobs=0, lim=replace(limits.current(), timeout=900.0))
    assert rep.ok, rep.text
    assert not rep.unknown and not rep.unexplained, rep.text
    assert sorted(rep.mutants_caught) == sorted(SAMPLE), rep.text
    for name, why in SAMPLE.items():
        line = next(ln for ln in rep.text.splitlines() if f"caught     {name}:" in ln)
        assert why in line, line
    assert rep.not_bearing.keys() == NOT_BEARING.keys(), rep.text
    for name, why in NOT_BEARING.items():
        assert why in rep.not_bearing[name]
