"""Time `ptxmc audit tilelang-fence-proxy` over whole suites: each policy, every reading.

    python bench/audit.py [PATHS...] [--policy tilelang|corrected|both] [--jobs N] [--json FILE] [--rlimit N]

Default PATHS: every bundled suite (litmus/, the audit family litmus/audit included). For each
policy: the wall seconds of the whole audit (loading, the policy, the judgements, the
repair and prune searches, every re-check), the slowest tests, and the summary table of
checker.audit.output (the workers' CPU time is not visible to this process: they are children of
multiprocessing's forkserver; the sum of the judgements' wall seconds is printed instead). --json writes the full audit documents.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from checker import limits  # noqa: E402
from checker.audit import output  # noqa: E402
from checker.audit.run import audit_paths  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="*", default=[str(ROOT / "litmus")])
    ap.add_argument("--policy", choices=("tilelang", "corrected", "both"), default="both")
    ap.add_argument("--json", help="write the audit documents here")
    ap.add_argument("--rlimit", type=int, default=None)
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    args = ap.parse_args()
    if args.rlimit is not None:
        limits.set_current(replace(limits.current(), rlimit=args.rlimit))
    docs = {}
    for policy in (("tilelang", "corrected") if args.policy == "both" else (args.policy,)):
        w0 = time.perf_counter()
        audit = audit_paths(args.paths, policy, None, jobs=args.jobs)
        wall = time.perf_counter() - w0
        judged = sum(j.seconds for ta in audit.tests for _, j in ta.by_reading)
        print(f"== policy {policy}: {len(audit.tests)} tests, wall {wall:.1f} s, "
              f"judgements {judged:.1f} s in all, load average {os.getloadavg()[0]:.1f}")
        slow = sorted(((sum(j.seconds for _, j in ta.by_reading), ta.name) for ta in audit.tests), reverse=True)[:5]
        print("   slowest: " + ", ".join(f"{n} {s:.1f} s" for s, n in slow))
        print("\n".join(output.table(audit)))
        print(f"   {output.dependent_count(audit)} finding(s) depend on the reading")
        docs[policy] = json.loads(output.as_json(audit)) | {"wall": round(wall, 2), "judged": round(judged, 2)}
    if args.json:
        Path(args.json).write_text(json.dumps(docs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
