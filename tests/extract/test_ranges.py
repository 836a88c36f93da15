"""Counts and tx-counts outside the range PTX gives them (1..2^20-1 for an mbarrier's expected
count and an arrival count, 0..2^20-1 for a tx-count) are undefined behaviour of the kernel that
its skeleton would not show: counts are divided by their common factor, an mbarrier that only
its init names is not emitted, and a copy's bytes become one 16-byte box. `ptxmc extract`
refuses them at their PTX line instead of writing a skeleton that passes."""
from __future__ import annotations

import pytest

from checker.errors import LitmusError
from checker.extract.api import extract_file

from .test_extract import KERNELS
from .test_reduce import TWO_ROLES

BIG = 1 << 21                       # 2^21: outside 1..2^20-1

CASES = {
    # an mbarrier nothing but its init uses (the reduction drops it) with expected count 0
    "unused-count-0": (TWO_ROLES.replace("[mb+8], 1;", "[mb+8], 0;"),
                       "[mb+8], 0", "expected arrival count 0"),
    # count and arrival count 2^21: divided by their common factor both would be 1
    "divided-into-range": (TWO_ROLES.replace("[mb], 1;", f"[mb], {BIG};")
                           .replace("[mb];\nC:", f"[mb], {BIG};\nC:"),
                           f"[mb], {BIG}", f"expected arrival count {BIG}"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_counts_out_of_range_are_refused_at_their_line(case, tmp_path):
    text, where, what = CASES[case]
    assert text != TWO_ROLES
    f = tmp_path / "k.ptx"
    f.write_text(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if where in ln)
    with pytest.raises(LitmusError) as e:
        extract_file(str(f), out_dir=str(tmp_path / "out"))
    msg = str(e.value)
    assert f"k.ptx:{line}:" in msg and what in msg and "undefined" in msg, msg


def test_a_tx_count_out_of_range_is_refused_at_its_line(tmp_path):
    """The nvcc TMA pipeline of the corpus with its expect_tx register set to 2^20 bytes."""
    text = (KERNELS / "cuda" / "tma_ws_pipeline.sm90a.ptx").read_text()
    assert text.count("mov.u32 \t%r57, 8192;") == 1
    f = tmp_path / "tx.ptx"
    f.write_text(text.replace("mov.u32 \t%r57, 8192;", "mov.u32 \t%r57, 1048576;"))
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "expect_tx" in ln and "%r57" in ln)
    with pytest.raises(LitmusError) as e:
        extract_file(str(f), out_dir=str(tmp_path / "out"))
    msg = str(e.value)
    assert f"tx.ptx:{line}:" in msg and "expect_tx of 1048576 bytes" in msg, msg
