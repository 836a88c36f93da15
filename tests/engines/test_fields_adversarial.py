"""Adversarial cases for the field-wise equalities (checker/engines/fields.py, "exact and
redundant"): byte-level stores read by wider loads (st.u8 into ld.u32, st.v2, a negative .s16),
values read from the initial state, mbarrier fields driven out of range (more arrivals than are
pending, an arrival count above the expected one, a tx-count pushed negative and past 2^20-1,
arrive_drop lowering the expected count); and a seeded sample of random mbarrier and mixed-size
tests. Each is answered by Z3 with the equalities on at every size, by Z3 with them off (the
encoding before issue 35's change), and by brute force: the same outcomes over every register
and final value, and the same undefined-behaviour flags; and the values the PTX text gives."""
from __future__ import annotations

import random
from dataclasses import replace

import pytest
import yaml

from checker import limits
from checker.engines import encode
from checker.engines.brute import BruteEngine
from checker.engines.smt import Z3Engine
from checker.errors import LimitExceeded, LitmusError, Unsupported
from checker.front.litmus import load_text
from checker.isa.registry import lower
from checker.resources import resolve_model
from checker.verdict.session import Session

MODEL = resolve_model("ptx")
BRUTE = 50_000

MB = {"mb": {"space": "shared", "owner": "gpu0.cta0", "mbarrier": {"count": 2}},
      "d": {"space": "shared", "owner": "gpu0.cta0"}}

# name -> (memory, threads' code, {observable: the values the PTX text allows} or None, flags)
CASES = {
    # a byte store published by release/acquire, read back as a word: only that byte changes
    "u8-into-u32": ({"x": {"space": "global", "size": 4, "init": 0x01020304}, "f": {"space": "global"}},
                    [["st.global.u8 [x+1], 0xab", "st.release.gpu.global.u32 [f], 1"],
                     ["ld.acquire.gpu.global.u32 r9, [f] == 1", "ld.global.u32 r0, [x]", "ld.global.u8 r1, [x+3]"]],
                    {"P1:r0": {0x0102AB04}, "P1:r1": {0x01}}, set()),
    # a vector of two halves, little-endian, in one thread; then one half replaced by -2 (.s16)
    "v2-and-negative": ({"x": {"space": "global", "size": 8}},
                        [["st.global.v2.u16 [x], {0x1111, 0x2222}", "ld.global.u32 r0, [x]",
                          "st.global.s16 [x+2], -2", "ld.global.u32 r1, [x]", "ld.global.u16 r2, [x+2]",
                          "ld.global.b64 r3, [x]"]],
                        {"P0:r0": {0x22221111}, "P0:r1": {0xFFFE1111}, "P0:r2": {0xFFFE},
                         "P0:r3": {0xFFFE1111}, "x": {0xFFFE1111}}, set()),
    # the initial state, read through every width
    "initial-bytes": ({"x": {"space": "global", "size": 8, "init": -5}},
                      [["ld.global.u8 r0, [x]", "ld.global.u8 r1, [x+7]", "ld.global.s16 r2, [x+6]",
                        "ld.global.u32 r3, [x+4]"]],
                      {"P0:r0": {0xFB}, "P0:r1": {0xFF}, "P0:r3": {0xFFFFFFFF}}, set()),
    # a byte store racing with a word load: either byte, and the race is undefined
    "u8-race": ({"x": {"space": "global", "size": 4}},
                [["st.relaxed.gpu.global.u8 [x+2], 7"], ["ld.relaxed.gpu.global.u32 r0, [x]"]],
                {"P1:r0": {0, 7 << 16}}, {"MixedSizeRace"}),
    # three arrivals of count 1 on an mbarrier of count 2: the third is past the pending count
    # of phase 1 only if it lands after phase 0 completed -- in range; an arrival count of 3 is not
    "arrive-count-3": (MB, [["mbarrier.arrive.release.cta.shared::cta.b64 _, [mb], 3"],
                            ["mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [mb], 0 == 1",
                             "ld.shared.u32 r0, [d]"]],
                       None, {"MbarrierRange"}),
    # arrive_drop lowers the expected count: the next phase completes with one arrival
    "arrive-drop": (MB, [["st.shared.u32 [d], 1", "mbarrier.arrive_drop.release.cta.shared::cta.b64 _, [mb]"],
                         ["mbarrier.arrive.release.cta.shared::cta.b64 _, [mb]",
                          "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [mb], 0 == 1",
                          "mbarrier.arrive.release.cta.shared::cta.b64 _, [mb]",
                          "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 q, [mb], 1 == 1",
                          "ld.shared.u32 r0, [d]"]],
                    {"P1:r0": {1}}, set()),
    # complete_tx before any expect_tx: the tx-count goes negative (in range), the phase waits for
    # the expect_tx that brings it back to zero
    "tx-negative": (MB, [["mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [mb], 16"],
                         ["st.shared.u32 [d], 3",
                          "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [mb], 16",
                          "mbarrier.arrive.release.cta.shared::cta.b64 _, [mb]",
                          "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [mb], 0 == 1",
                          "ld.shared.u32 r0, [d]"]],
                    {"P1:r0": {3}}, set()),
    # complete_tx of 2^20-1 twice with nothing expected: past -(2^20-1)
    "tx-underflow": (MB, [["mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [mb], 1048575"],
                          ["mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [mb], 1048575",
                           "mbarrier.arrive.release.cta.shared::cta.b64 _, [mb]"]],
                     None, {"MbarrierRange"}),
    # an expected count of 2^20-1 (the largest) and an arrival count of 2^20-1: phase 0 completes
    "count-max": ({"mb": {"space": "shared", "owner": "gpu0.cta0", "mbarrier": {"count": 1048575}},
                   "d": {"space": "shared", "owner": "gpu0.cta0"}},
                  [["st.shared.u32 [d], 5", "mbarrier.arrive.release.cta.shared::cta.b64 _, [mb], 1048575"],
                   ["mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [mb], 0 == 1", "ld.shared.u32 r0, [d]"]],
                  {"P1:r0": {5}}, set()),
}


def _doc(name, memory, code):
    mbar = "mb" in memory
    threads = {f"P{i}": {"at": f"gpu0.cta0.warp{i}" if mbar else f"gpu0.cta{i}", "code": c}
               for i, c in enumerate(code)}
    doc = {"name": name, "source": "PTX ISA 9.4, mbarrier (contents and ranges; arrive, arrive_drop, "
           "expect_tx, complete_tx); ld/st (vectors, sizes; little-endian bytes); docs/model.md#a7, #a15, #a16",
           "memory": memory, "threads": threads}
    if mbar:
        doc["arch"] = "sm_90"
    return yaml.safe_dump([doc], sort_keys=False)


def _three_ways(t, monkeypatch):
    """(outcomes over every register and final value, flags) by Z3 with the equalities at every
    size, by Z3 without them, by brute force."""
    es = lower(t)
    # a location cut into atoms is observed whole (its root), as the outcomes list it; an
    # mbarrier's final state too (the packed fields)
    root = {atom: r for r, parts in es.compose.items() for atom, _ in parts}
    observe = tuple(sorted(f"{th}:{r}" for th, r in es.registers) +
                    sorted({root.get(loc, loc) for loc in es.final_writes}))
    with limits.use(replace(limits.current(), candidates=BRUTE)):     # (first: its limit refuses fast)
        want, complete = BruteEngine(es, MODEL, limit=BRUTE).outcomes(observe)
        assert complete
        brute = (want, frozenset(u.flag for u in Session(t, MODEL, engine="brute").undefined))
    out = []
    for how in ("on", "off"):
        with monkeypatch.context() as m:
            m.setattr(encode, "FIELDWISE_EVENTS", 0)
            if how == "off":
                m.setattr(encode, "equalities", lambda *a, **k: None)
            got, complete = Z3Engine(lower(t), MODEL).outcomes(observe)
            assert complete
            out.append((got, frozenset(u.flag for u in Session(t, MODEL, engine="z3").undefined)))
    return observe, out + [brute]


@pytest.mark.parametrize("name", sorted(CASES))
def test_fieldwise_equalities_change_no_answer(name, monkeypatch):
    memory, code, values, flags = CASES[name]
    (t,) = load_text(_doc(name, memory, code), f"{name}.yaml")
    observe, (on, off, brute) = _three_ways(t, monkeypatch)
    assert on == off == brute
    outs, fired = on
    assert fired == flags
    assert outs
    for k, allowed in (values or {}).items():
        assert {dict(o)[k] for o in outs} == allowed, k


SIZES = {"u8": 1, "s8": 1, "u16": 2, "s16": 2, "u32": 4, "s32": 4, "b64": 8}
VALS = [0, 1, 2, -1, 255, 0x1234, -300, 65535, 0x10203]
TX = [0, 16, 1048575, 1000000, 5000, 1]


def _random_doc(rng: random.Random, k: int) -> str:
    """A small test of mbarrier operations on one object (count 1, 2, 3 or 2^20-1) and byte-level
    accesses of an 8-byte location, random sizes, offsets, values and qualifiers."""
    mbar = k % 2 == 0
    threads = {}
    for i in range(rng.choice([2, 2, 3])):
        regs: list[str] = []
        code = []
        for _ in range(rng.randint(1, 3)):
            code.append(_mb_instr(rng, regs) if mbar and rng.random() < 0.75 else _data_instr(rng, regs))
        threads[f"P{i}"] = {"at": f"gpu0.cta0.warp{i}" if mbar else f"gpu0.cta{i}", "code": code}
    doc = {"name": f"R{k}", "source": "review: random mbarrier and mixed-size accesses (PTX ISA 9.4)",
           "threads": threads}
    if mbar:
        doc["arch"] = "sm_90"
        doc["memory"] = {"mb": {"space": "shared", "owner": "gpu0.cta0",
                                "mbarrier": {"count": rng.choice([1, 2, 3, 1048575])}},
                         "d": {"space": "shared", "owner": "gpu0.cta0"}, "x": {"space": "global", "size": 8}}
    else:
        doc["memory"] = {"x": {"space": "global", "size": 8, "init": rng.choice([0, 0, 0x01020304, -5])}}
    return yaml.safe_dump([doc], sort_keys=False)


def _data_instr(rng, regs):
    k = rng.random()
    t = rng.choice(list(SIZES))
    n = SIZES[t]
    off = rng.choice(range(0, 8, n))
    sem = rng.choice(["relaxed.gpu.", "", "release.gpu." if k < 0.5 else "acquire.gpu."])
    if k < 0.4:
        v = rng.choice(VALS + regs[-1:])
        return f"st.{sem.replace('acquire', 'release')}global.{t} [x+{off}], {v}"
    if k < 0.5 and n <= 2:
        off = rng.choice(range(0, 8, 2 * n))
        return f"st.global.v2.{'u8' if n == 1 else 'u16'} [x+{off}], {{{rng.choice(VALS[:5] + regs[-1:])}, {rng.choice(VALS[:5])}}}"
    if k < 0.6 and n <= 2:
        off = rng.choice(range(0, 8, 2 * n))
        a, b = f"r{len(regs)}", f"r{len(regs) + 1}"
        regs += [a, b]
        return f"ld.global.v2.{'u8' if n == 1 else 'u16'} {{{a}, {b}}}, [x+{off}]"
    r = f"r{len(regs)}"
    regs.append(r)
    if k < 0.7 and n == 4:
        return f"atom.global.{rng.choice(['add', 'exch', 'max'])}.{'s32' if t == 's32' else 'u32'} {r}, [x+{off}], {rng.choice(VALS[:5])}"
    return f"ld.{sem.replace('release', 'acquire')}global.{t} {r}, [x+{off}]"


def _mb_instr(rng, regs):
    k = rng.random()
    if k < 0.25:
        return "mbarrier.arrive.release.cta.shared::cta.b64 _, [mb]" + rng.choice(["", "", ", 1", ", 2", ", 3"])
    if k < 0.4:
        return f"mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [mb], {rng.choice(TX)}"
    if k < 0.5:
        return f"mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [mb], {rng.choice(TX)}"
    if k < 0.62:
        return f"mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [mb], {rng.choice(TX)}"
    if k < 0.7:
        return "mbarrier.arrive_drop.release.cta.shared::cta.b64 _, [mb]"
    if k < 0.8 and regs:
        return f"st.shared.u32 [d], {rng.choice(regs + ['7'])}"
    if k < 0.85:
        r = f"r{len(regs)}"
        regs.append(r)
        return f"ld.shared.u32 {r}, [d]"
    return (f"mbarrier.{rng.choice(['try_wait', 'test_wait'])}.parity.acquire.cta.shared::cta.b64 p{len(regs)}, "
            f"[mb], {rng.choice([0, 1])} == {rng.choice([1, 1, 0])}")


def test_random_mbarrier_and_mixed_size_tests(monkeypatch):
    """A seeded sample (a campaign of ~1,600 such tests found no difference): the three answers
    agree on every test brute force can enumerate, and enough of them are compared."""
    rng = random.Random(3535)
    compared = 0
    for k in range(40):
        items = load_text(_random_doc(rng, k), f"r{k}.yaml")
        if not items or isinstance(items[0], LitmusError):
            continue                                    # a constant that does not fit its store
        try:
            _, (on, off, brute) = _three_ways(items[0], monkeypatch)
        except (LimitExceeded, Unsupported):
            continue                                    # brute force's candidate limit
        except LitmusError:
            continue                                    # a constant that does not fit its store
        assert on == off == brute, items[0].name
        compared += 1
    assert compared >= 15
