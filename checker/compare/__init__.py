"""`ptxmc diff`: one suite under two models or option sets, and every test, condition, outcome or
undefined-behaviour flag on which their verdicts differ, with a witness execution under the more
permissive side (herd's model comparisons). sides.py names a side (model text + options),
diff.py compares one test in a worker, output.py prints, cli.py is the subcommand."""
