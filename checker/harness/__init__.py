"""The hardware harness (docs/hardware-harness.md): litmus tests as CUDA programs with inline PTX.

    codegen   LitmusTest + device config -> one CUDA C++ program (pure; templates/, devices/)
    emit      the per-opcode table; emit_generic / emit_async the emitters, operands their
              plumbing, transfer the value transfer functions
    layout    positions -> hardware CTAs / warps / lanes, many instances per launch
    memory    where locations live: cells, virtual aliases (VMM mappings), tensor maps
    space     observed variables and the on-device outcome buckets
    toolchain find nvcc / cuobjdump / nvdisasm (PATH, /usr/local/cuda, the pip wheels)
    build     nvcc for the target (sm_90a; sm_100a for tcgen05; the test's arch)
    sass      every fence of the test must survive into SASS
    run       run with a time budget on a GPU -> Histogram
    histogram JSON histograms; litmus7   litmus7-format log
    compare   histograms x model verdicts: violation / coverage gap / ok, positive controls
    controls  the positive controls;     cli   `ptxmc hw gen|build|run|import|compare`
"""
from .codegen import Program, generate, target_for, unsupported
from .toolchain import find_toolchain

__all__ = ["Program", "generate", "target_for", "unsupported", "find_toolchain"]
