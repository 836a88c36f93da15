"""The registry of base sets and relations the engines provide to a cat model: their names and
kinds. What each one means is written once, in the glossary at the top of axioms/ptx.cat (each
model's own glossary comment); tests/cat/test_glossary.py keeps the names in step. Static names are
computed by the instruction families (checker.isa); dynamic ones (DYNAMIC) are chosen by the
engines.
"""
from __future__ import annotations

SETS: tuple[str, ...] = (
    "R", "W", "F", "B", "INIT", "STRONG", "WEAK", "RLX", "ACQ", "REL", "ACQ_REL", "SC", "VOL",
    "MMIO", "ATOM", "RED", "CTA", "CLUSTER", "GPU", "SYS", "GEN", "GLOBAL", "SHARED",
    "BAR_SYNC", "BAR_ARRIVE", "BAR_RED", "BAR_WARP", "ASYNC", "TMAP", "TEX", "SUR", "CON",
    "PF_ALIAS", "PF_ASYNC", "PF_TMAP", "PF_TEX", "PF_SUR", "PF_CON", "PF_UNI", "PF_READ",
    "RESTRICT", "MB", "MB_INIT", "MB_INVAL", "ACOMPL", "ASRC", "ADST", "CLU_ARRIVE", "CLU_WAIT",
    "TMEM", "TC_SYNC", "TC_BEFORE", "TC_AFTER", "TC_ALLOC", "TC_DEALLOC", "TC_RELINQ", "TC_LEAK",
    "WG_NOFENCE", "REG_HAZARD",
)

RELATIONS: tuple[str, ...] = (
    "po", "rmw", "dep", "ctrl", "loc", "vloc", "sa", "srange", "sthd", "swarp", "scta",
    "scluster", "sgpu", "syncbar", "syncwarp", "kbo", "pscta", "aso", "acomp", "mbgroup",
    "pfcover", "clusterbar", "sgrp", "tbuf", "tsel", "tcissue", "tcpipe", "tcgrow", "rf", "co", "fsc",
)

# Sets whose members depend on the values of an execution: each member is an event that the
# values read make one (EventStructure.value_sets); the engines compute them per execution. Each
# is a value-dependent undefined behaviour (its flag in the model).
VALUE_SETS: tuple[str, ...] = ("MB_RANGE", "MB_STALE", "MB_SKIP")

# Value sets whose membership also depends on reads that are no cause of the member: an
# observation of what has not happened yet (MB_SKIP: no successful wait read the phase before an
# arrive-on). Their members' causal past starts from the member and the read of its own
# read-modify-write only, not from every read of the expression (EventStructure._ub_past).
OBSERVING_SETS = frozenset({"MB_SKIP"})

# Value sets whose member is a read whose own result the undefined behaviour leaves undefined (a
# wait on a stale state token: the wait is undefined whatever it returns). The await or guard on
# the member's own result is freed by it (EventStructure.freeing), though the read is in its causal
# past: an execution where the wait returns another value than the one the model computes is still
# an execution of the undefined program, not a hang.
OWN_RESULT_SETS = frozenset({"MB_STALE"})

DYNAMIC = frozenset({"rf", "co", "fsc", *VALUE_SETS})


def glossary_names() -> dict[str, str]:
    """Every base name with its kind ('set' or 'rel')."""
    out = {n: "set" for n in (*SETS, *VALUE_SETS)}
    out.update({n: "rel" for n in RELATIONS})
    return out
