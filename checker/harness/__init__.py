"""The hardware harness (docs/hardware-harness.md): litmus tests as CUDA programs with inline PTX.

    codegen   LitmusTest + device config -> one CUDA C++ program (pure; templates/, devices/)
    emit      the per-opcode table; emit_generic / emit_async the emitters, operands their
              plumbing, transfer the value transfer functions
    layout    positions -> hardware CTAs / warps / lanes, many instances per launch
    memory    where locations live: cells, virtual aliases (VMM mappings), tensor maps
    space     observed variables and the on-device outcome buckets
    toolchain find nvcc / cuobjdump / nvdisasm (PATH, /usr/local/cuda, the pip wheels)
    build     nvcc for the target (sm_90a; sm_100a for tcgen05; the test's arch)
    mbarriers static accounting of the mbarriers async copies complete on (the epilogue's make-up)
    static_check  every generated program read back: waits can complete, operands are aligned
    sass      every fence and every memory access of the test must survive into SASS, per target
    devicecheck  GPU / target / driver fit, before building
    run       GPU detection, one program run -> Histogram
    runner    a suite test by test: histograms.jsonl, --resume, --budget, --devices, --prebuilt
    bundle    `hw pack`: every program built and checked into multi-test executables + manifest
    bundle_run  the bundle's run.py (standard library only): runs it within a deadline on the GPU
    fakegpu   a simulated GPU for the plumbing tests (output labelled SIMULATED)
    histogram JSON histograms; litmus7   litmus7-format logs, written and read
    compare   histograms x model verdicts: violation / coverage gap / ok, positive controls
    controls  the positive controls;     cli   `ptxmc hw gen|build|pack|run|import|compare`
"""
__all__ = ["Program", "generate", "target_for", "unsupported", "find_toolchain"]


def __getattr__(name: str):
    """The names above, imported on first use (PEP 562): `ptxmc --help` imports this package."""
    if name in ("Program", "generate", "target_for", "unsupported"):
        from . import codegen

        return getattr(codegen, name)
    if name == "find_toolchain":
        from .toolchain import find_toolchain

        return find_toolchain
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
