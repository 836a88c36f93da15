"""Engines: decide a cat model over an event structure. `base` defines what every engine
answers (the Engine protocol, Execution); `smt` is the Z3 engine, `brute` the explicit
enumerator that cross-checks it; `registry` lists them for --engine."""
