"""Conformance reports and explanations (docs/cli.md, §7): `ptxmc report`.

    analyze   one test: Result, formula, witness per allowed outcome, blame per forbidden condition
    cycle     a violated axiom as a path of named relations (e7 -fr-> e2 -cause-> e7)
    mutate    the synchronization a forbidden outcome depends on (drop a fence, weaken .release ...)
    svg       pictures: Graphviz when installed, else a built-in layout (checker.results.witness has the data)
    build     the whole report as data, and its atomic writing
    html, markdown, jsondoc, junit   the four formats;  browser   headless Chromium;  cli   the command
"""
