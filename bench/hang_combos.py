"""The hang question's combinations on a skeleton (issue 35/38): how many there are (one path per
thread, each await's loop run once, docs/model.md#a18) and what a sample of them costs: each
lowered, asked for an execution and, when it has one and a thread is stuck, judged for fairness
as checker.verdict.liveness does. Without limits (rlimit 0), one process.

    python bench/hang_combos.py SKELETON.yaml [--sample N] [--seed S]
"""
from __future__ import annotations

import argparse
import random
import time
from dataclasses import replace

from checker import limits
from checker.front.litmus import load_file
from checker.isa.registry import lower
from checker.resources import resolve_model
from checker.unfold.variants import combos, single
from checker.verdict import liveness
from checker.verdict.session import Session


class _Names:
    """What liveness's fairness check reads of a UnionSession: the location names."""
    def __init__(self, names):
        self.names = names


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("skeleton")
    p.add_argument("--sample", type=int, default=6)
    p.add_argument("--seed", type=int, default=35)
    a = p.parse_args()
    (t,) = load_file(a.skeleton)
    lim = replace(limits.current().override(["events=1000", "instructions=256", "paths=1000000"]), rlimit=0)
    t0 = time.process_time()
    cs = combos(t, lim, loops=True)
    print(f"{len(cs)} combinations ({sum(1 for c in cs if c.cut)} with a thread stuck), "
          f"built in {time.process_time() - t0:.1f} s CPU", flush=True)
    model = resolve_model("ptx")
    picked = [cs[0], cs[-1]] + random.Random(a.seed).sample(cs, min(a.sample, len(cs)))
    spent = []
    for c in picked:
        with limits.use(lim):
            t0 = time.process_time()
            es = lower(single(c.test))
            s = Session(c.test, model, frozenset(), "z3", lim, es=es)
            w = s.witness(None)
            hang = liveness._fair_hang(_Names(es.names), c, s) if w is not None and c.cut else None
            spent.append(time.process_time() - t0)
        print(f"{len(es.events)} events, stuck {[n for n, _ in c.cut]}: execution {w is not None}, "
              f"hang {hang is not None}, {spent[-1]:.1f} s CPU", flush=True)
    print(f"mean {sum(spent) / len(spent):.1f} s CPU per combination: about "
          f"{sum(spent) / len(spent) * len(cs) / 3600:.1f} h CPU for all {len(cs)}")


if __name__ == "__main__":
    main()
