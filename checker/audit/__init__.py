"""`ptxmc audit`: judge a compiler's fence-insertion rule with the model. A policy (policy.py:
TileLang's InjectFenceProxy as documented, and the corrected rule of docs/audit.md) is applied
to each thread of a test after the test's own async proxy fences are removed; the audited program
is then judged against the original test's requirements (judge.py): under-fencing (a forbidden
outcome or undefined behaviour comes back; witness and repair from checker.repair), over-fencing
(an inserted fence can go; checker.repair.prune), each finding re-checked from scratch, under
each reading of the model (run.py). output.py prints text and JSON; cli.py is the command line.
docs/audit.md describes the whole."""

# The readings audited by default (here, not in run.py, so that `ptxmc --help` imports no checker).
DEFAULT_READINGS = ("default", "proxy-fence-any-cta")
