"""Thread runs remembered across the extraction's rounds and its parameter search
(checker.extract.memo): a run is reused only when every lookup it made gets the same answer, so
the skeleton is the one every thread run afresh gives, and runs are reused."""
from __future__ import annotations

import pytest

from checker.extract import memo, skeleton
from checker.extract.api import skeleton_of
from checker.extract.interp import ABSENT, Ident, Machine
from checker.extract.layout import Layout
from checker.extract.module import load
from checker.extract.render import yaml_text

from .test_extract import GLUON, KERNELS

ATTN = KERNELS / "triton" / "triton_attn_fwd_ws.sm100a.ptx"


def _afresh(monkeypatch):
    """Every thread run again each time (the memo never answers)."""
    def run(self, m, ident):
        self.misses += 1
        try:
            return m.run(ident)
        except skeleton.Refused as e:
            return e
    monkeypatch.setattr(memo.RunMemo, "run", run)


@pytest.mark.parametrize("path", [GLUON, ATTN], ids=lambda p: p.name)
def test_remembered_runs_give_the_same_skeleton(monkeypatch, path):
    """Gluon's GEMM (a state word read in a second round, a parameter searched) and Triton's
    attention (a parameter searched; its roles read each other's constants): the same skeleton
    text with runs remembered as with every thread run afresh, and most runs remembered."""
    mod = load(path.read_text(), str(path))
    fn = mod.kernels()[0]
    seen = []
    real = memo.RunMemo.__init__

    def init(self):
        real(self)
        seen.append(self)
    monkeypatch.setattr(memo.RunMemo, "__init__", init)
    remembered = yaml_text(skeleton_of(mod, fn), [], False)
    assert seen and seen[0].hits > 0
    _afresh(monkeypatch)
    assert yaml_text(skeleton_of(mod, fn), [], False) == remembered


def test_a_run_is_reused_only_when_its_lookups_answer_the_same():
    """A thread that reads a constant another thread stored: its run is reused while the constant
    is the same, run again when it changes (another round's store), and a constant it never
    looks up changes nothing."""
    mod = load(GLUON.read_text(), str(GLUON))
    fn = mod.kernels()[0]
    layout = Layout(mod, fn)
    block = fn.block()
    ident = Ident((0, 0, 0), block)
    m = Machine(fn, layout, mod.path, 3)
    runs = memo.RunMemo()
    first = runs.run(m, ident)
    assert runs.misses == 1
    again = runs.run(Machine(fn, layout, mod.path, 3), ident)
    assert again is first and runs.hits == 1
    read = next(k for t, k in m.reads if t == "p")          # a parameter it looked up
    other = runs.run(Machine(fn, layout, mod.path, 3, param_values={read: 4096}), ident)
    assert runs.misses == 2 and other is not first
    unread = runs.run(Machine(fn, layout, mod.path, 3, param_values={"no such parameter": 1}), ident)
    assert unread is first and runs.hits == 2
    assert Machine(fn, layout, mod.path, 3).lookup("c", (0, 0)) is ABSENT
