"""Whether a session asks the bundled model (axioms/ptx.cat) under options its shortcuts were read
with: the refuter (checker.verdict.stops) and the extension lemma (union.UnionSession._ub_variants)
cite its axioms and relations by line (docs/model.md#a18), so under any other model file or option
they are not taken."""
from __future__ import annotations

from pathlib import Path

from ..resources import AXIOMS_DIR

# The model options docs/model.md#a18's arguments were read with (axioms/ptx.cat's `if "..."` and
# checker.isa.flow's): with any other, every combination is asked and the undefined-behaviour
# search starts from every choice.
READ_OPTIONS = frozenset({"bulk-group-only", "commit-cumulative", "proxy-fence-any-cta", "strict-cta",
                          "tensormap-pair", "rmw-rewrite-effect", "inval-no-proxy"})
# inval-no-proxy (A7) only adds ppbc edges from an mbarrier.inval: more causality removes executions
# and MixedSizeRace pairs, never adds them, so a refuted combination stays without an execution, and
# the extension lemma needs a test without inval (condition (2)).


def bundled(model, options) -> bool:
    """Is `model` the bundled axioms/ptx.cat and `options` among READ_OPTIONS?"""
    try:
        same = Path(model.path).resolve() == (AXIOMS_DIR / "ptx.cat").resolve()
    except (OSError, TypeError, AttributeError):
        return False
    return same and frozenset(options) <= READ_OPTIONS
