"""Whether every execution of a test stops at an await that is never satisfied: the program
hangs, which must not read as "Forbidden" or "Impossible" for every condition
(docs/model.md#a18). run, check, explain, the report's effects and the API ask this one
predicate, on either kind of session (it imports neither, so that every module of the verdict
package may ask it)."""
from __future__ import annotations

AWAITS_BLOCK = "no execution gets past its awaits: every execution blocks, a hang"


def awaits_block(s) -> bool:
    """Does every execution of session `s` stop at an await that is never satisfied (the test
    has awaits, no filter, and no execution at all; asked without the hang question, where an
    await is the read that returns its value)? A union session (one with complete_sessions)
    asked the hang question answers with never_terminates instead."""
    test = s.test
    if test.filter is not None or not any(i.await_value is not None for t in test.threads for i in t.code):
        return False
    if hasattr(s, "complete_sessions"):         # a UnionSession: the union over control paths
        return not s.loops and not s.bounded and not s.never_terminates() and \
            not any(x.witness(None) is not None for _, x in s.complete_sessions())
    return s.witness(None) is None


def never_ends(s) -> str | None:
    """Why no execution of session `s` terminates (a stuck barrier, an endless loop, or every
    execution blocked at an await), or None: the answer in place of every condition's verdict."""
    return s.never_terminates() or (AWAITS_BLOCK if awaits_block(s) else None)
