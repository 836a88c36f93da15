"""`ptxmc extract`: a compiler's `.ptx` module in, a checked synchronization skeleton out.

module (the .ptx file -> kernels' statements) -> interp (one thread run concretely) ->
skeleton (roles, objects, scaled counts) -> render (litmus YAML, role table, mutants) -> api
(write and check). See docs/extract.md.
"""
