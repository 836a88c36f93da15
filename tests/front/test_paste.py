"""PTX pasted as nvcc prints it (docs/format.md#ptx-as-nvcc-prints-it): tab-indented lines in a
`ptx: |` block, `.shared` variables in a kernel's body, and kernel arguments (ld.param,
cvta.param), which are refused saying what to write instead."""
from __future__ import annotations

import pytest

from checker.ast import Addr, Imm
from checker.errors import LitmusError
from checker.front import yamlsafe
from checker.front.litmus import load_text
from checker.isa.registry import lower
from checker.resources import resolve_model
from checker.verdict.check import check_test

PTX = resolve_model("ptx")

TABS = ("name: tabs\nsource: t\nmemory: {x: 0}\nthreads:\n  P0:\n    at: gpu0.cta0\n    ptx: |\n"
        "\t.reg .b32 \t%r<3>;\n\n\tmov.u32 \t%r1, 1;\n\tst.global.u32 \t[x], %r1;\n\tret;\n"
        "  P1:\n    at: gpu0.cta1\n    ptx: |\n      .reg .b32 %r<3>;\n\tld.global.u32 \t%r2, [x];\n"
        "expect: {allowed: ['P1:r2=1']}\n")


def test_a_tab_indented_paste_loads_with_its_lines():
    [t] = load_text(TABS, "t.yaml")
    assert not isinstance(t, LitmusError), t
    assert [(i.text, i.where.line) for i in t.threads[0].code] == \
        [("mov.u32 %r1, 1", 10), ("st.global.u32 [x], %r1", 11), ("ret", 12)]
    assert [(i.text, i.where.line) for i in t.threads[1].code] == [("ld.global.u32 %r2, [x]", 17)]
    assert check_test(t, PTX).status == "pass"


def test_a_tab_indented_error_names_its_line():
    [r] = load_text(TABS.replace("\tmov.u32 \t%r1, 1;", "\tfrob.u32 \t%r1, 1;"), "t.yaml")
    assert isinstance(r, LitmusError) and r.where.line == 10 and "unknown or unsupported PTX instruction" in r.message


def test_only_tab_led_lines_of_block_scalars_change():
    text = "a: |\n\tx\n  y\nb: 'q'\n\tc: 1\n"
    assert yamlsafe.tab_indented_blocks(text) == "a: |\n  \tx\n  y\nb: 'q'\n\tc: 1\n"
    assert yamlsafe.tab_indented_blocks("a: |\n  x\n\ty\n") == "a: |\n  x\n  \ty\n"
    assert yamlsafe.tab_indented_blocks("a: 1\nb: [1, 2]\n") is None


def test_a_tab_yaml_cannot_take_says_what_to_do():
    with pytest.raises(LitmusError) as e:
        yamlsafe.compose("name: t\n\tthreads: {}\n", "t.yaml")
    assert e.value.where.line == 2
    assert e.value.message.endswith("(YAML does not allow a tab as indentation: indent with spaces; in a `ptx: |` "
                                    "block, a line that starts with a tab is read as the block's text)")


def test_after_the_tabs_are_read_the_next_yaml_error_is_the_one_reported():
    with pytest.raises(LitmusError) as e:
        yamlsafe.compose("name: t\nthreads:\n  P0:\n    ptx: |\n\tmov.u32 %r1, 1;\nexpect: [a\n", "t.yaml")
    assert e.value.where.line == 7 and "flow sequence" in e.value.message and "tab" not in e.value.message


SHARED = """
name: sh
source: t
memory:
  full: {space: shared, owner: gpu0.cta0, size: 8}
  full1: {space: shared, owner: gpu0.cta1, offset_of: full}
threads:
  P0:
    at: gpu0.cta0
    ptx: |
      .reg .b64 %rd<3>;
      .shared .align 8 .u64 full;
      mov.u64 %rd1, full;
      st.shared.u64 [%rd1], 1;
  P1:
    at: gpu0.cta1
    ptx: |
      .shared .align 8 .u64 full;
      st.shared.u64 [full], 2;
expect: {allowed: ['full=1 /\\ full1=2']}
"""


def test_a_shared_variable_is_each_ctas_own_copy():
    [t] = load_text(SHARED, "t.yaml")
    assert not isinstance(t, LitmusError), t
    assert [i.operands[0] for t_ in t.threads for i in t_.code if i.op == "st"] == [Addr("full"), Addr("full1")]
    assert check_test(t, PTX).status == "pass"


@pytest.mark.parametrize("change, line, message", [
    (("  full1: {space: shared, owner: gpu0.cta1, offset_of: full}\n", ""), 17,
     "'.shared' declares full in gpu0.cta1's shared memory, and memory: declares none in that CTA at full's offset: "
     "each CTA has its own copy of a .shared variable; declare this CTA's (COPY: {space: shared, owner: gpu0.cta1, "
     "offset_of: full})"),
    (("full: {space: shared, owner: gpu0.cta0, size: 8}", "full: {space: shared, owner: gpu0.cta0, size: 4}"), 12,
     "'.shared' declares full of 8 bytes, and memory: declares full of 4"),
    (("      .shared .align 8 .u64 full;\n      mov", "      .shared .align 16 .b8 buf[16];\n      mov"), 12,
     "'.shared' declares buf in gpu0.cta0's shared memory: declare it under memory: (buf: {space: shared, owner: "
     "gpu0.cta0, size: 16}), where ptxmc places a test's memory"),
    (("      .shared .align 8 .u64 full;\n      mov", "      .shared .align 8 .pred full;\n      mov"), 12,
     "malformed .shared declaration: write .shared {.align N} .TYPE NAME{[COUNT]}"),
    (("      .shared .align 8 .u64 full;\n      mov", "      .local .u64 l;\n      mov"), 12,
     "directive '.local' is not accepted in a thread's code"),
    (("      .shared .align 8 .u64 full;\n      mov", "      .visible .entry _Z4ringPi(\n      mov"), 12,
     "'.visible' belongs to the PTX module or the kernel's declaration, not to a thread's code: paste the kernel's "
     "body (the lines between its braces); its memory goes under memory: and its .param arguments under params:"),
    (("      mov.u64 %rd1, full;", "      ld.param.u64 %rd1, [_Z4ringPi_param_0];"), 13,
     "ld.param reads a kernel argument: give its value under params: (e.g. params: {_Z4ringPi_param_0: out}, with "
     "out the location declared under memory: that a pointer argument points to; or a number) "
     "(docs/format.md#kernel-arguments-and-shared-variables)"),
    (("      mov.u64 %rd1, full;", "      cvta.param.u64 %rd1, %rd2;"), 13,
     "cvta.param takes the address of a __grid_constant__ kernel argument (a CUtensorMap): give the location it is "
     "under params: (e.g. params: {_Z8tma_load14CUtensorMap_stPi_param_0: tmap}, with tmap a tensor map declared "
     "under memory:) (docs/format.md#kernel-arguments-and-shared-variables)"),
    (("      mov.u64 %rd1, full;", "      ld.local.u64 %rd1, [full];"), 13,
     "ptxmc models .global and .shared memory (.local and .const are not modelled): declare the data under memory:"),
])
def test_shared_variables_and_kernel_arguments_refused_with_what_to_write(change, line, message):
    old, new = change
    assert old in SHARED
    [r] = load_text(SHARED.replace(old, new), "t.yaml")
    assert isinstance(r, LitmusError), r
    assert (r.where.path, r.where.line) == ("t.yaml", line) and message in r.message, str(r)


PARAMS = """
name: par
source: t
memory:
  g: 1
  out: 0
  tmap: {tensormap: {0: g}}
  s: {space: shared, owner: gpu0.cluster0.cta0}
  mb: {space: shared, owner: gpu0.cluster0.cta0, mbarrier: {count: 1}}
params:
  _Z4copyPi_param_0: out
  _Z4copyPi_param_1: 16
  _Z4copyPi_param_2: tmap
threads:
  P0:
    at: gpu0.cluster0.cta0
    ptx: |
      .reg .pred %p<2>;
      .reg .b32 %r<9>;
      .reg .b64 %rd<9>;
      ld.param.u64 %rd1, [_Z4copyPi_param_0];
      ld.param.u32 %r8, [_Z4copyPi_param_1];
      mov.b64 %rd2, _Z4copyPi_param_2;
      cvta.param.u64 %rd4, %rd2;
      cvta.to.global.u64 %rd3, %rd1;
      mbarrier.arrive.expect_tx.shared::cta.b64 _, [mb], %r8;
      cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [s], [%rd4, {0}], [mb];
      mbarrier.try_wait.parity.shared::cta.b64 %p1, [mb], 0 == 1;
      ld.shared.u32 %r1, [s];
      st.global.u32 [%rd3], %r1;
      ret;
expect: {allowed: ["out=1"], forbidden: ["out=0"]}
"""


def test_kernel_arguments_take_the_values_params_gives():
    [t] = load_text(PARAMS, "t.yaml")
    assert not isinstance(t, LitmusError), t
    code = t.threads[0].code
    assert code[0].text == "ld.param.u64 %rd1, [_Z4copyPi_param_0]" and code[0].op == "mov"
    assert [i.operands for i in code if i.op == "cp"][0][1] == Addr("tmap", 0, (Imm(0),))
    assert [i.operands[0] for i in code if i.op == "st"] == [Addr("out")]
    assert check_test(t, PTX).status == "pass"


@pytest.mark.parametrize("change, line, message", [
    (("ld.param.u64 %rd1, [_Z4copyPi_param_0]", "ld.param.u64 %rd1, [_Z4copyPi_param_7]"), 21,
     "'_Z4copyPi_param_7' is a kernel argument that params: does not give (it gives _Z4copyPi_param_0, "
     "_Z4copyPi_param_1, _Z4copyPi_param_2)"),
    (("ld.param.u64 %rd1, [_Z4copyPi_param_0]", "ld.param.u64 %rd1, [_Z4copyPi_param_0+8]"), 21,
     "a field of kernel argument '_Z4copyPi_param_0' (at byte 8) is not modelled: params: gives whole arguments"),
    (("_Z4copyPi_param_0: out", "_Z4copyPi_param_0: nowhere"), 11,
     "params: _Z4copyPi_param_0 is a location declared under memory: (the one a pointer argument points to, or a "
     "__grid_constant__ argument such as a tensor map) or a number"),
    (("_Z4copyPi_param_0: out", "g: out"), 11, "'g' is a location under memory: and a kernel argument"),
])
def test_kernel_arguments_refused_with_why(change, line, message):
    old, new = change
    assert old in PARAMS
    [r] = load_text(PARAMS.replace(old, new), "t.yaml")
    assert isinstance(r, LitmusError), r
    assert (r.where.path, r.where.line) == ("t.yaml", line) and r.message == message, str(r)


# nvcc 13.5 -arch=sm_90a -ptx of
#   __global__ void ring(int *out) { __shared__ int buf; if (threadIdx.x == 0) { buf = 42; }
#     __syncthreads(); if (threadIdx.x == 32) out[threadIdx.x] = buf; }
# (the body as printed: tabs, a label at column 0; nvcc kept only the store of 42 to out[32])
RING_BODY = ("\t.reg .pred \t%p<2>;\n\t.reg .b32 \t%r<3>;\n\t.reg .b64 \t%rd<3>;\n\n\n"
             "\tld.param.u64 \t%rd1, [_Z4ringPi_param_0];\n\tmov.u32 \t%r1, %tid.x;\n\tbar.sync \t0;\n"
             "\tsetp.ne.s32 \t%p1, %r1, 32;\n\t@%p1 bra \t$L__BB0_2;\n\n\tcvta.to.global.u64 \t%rd2, %rd1;\n"
             "\tmov.u32 \t%r2, 42;\n\tst.global.u32 \t[%rd2+128], %r2;\n\n$L__BB0_2:\n\tret;\n\n")


def test_a_kernel_body_as_nvcc_prints_it_runs():
    text = ("name: ring\nsource: nvcc\nmemory:\n  out: {size: 256}\nparams:\n  _Z4ringPi_param_0: out\nthreads:\n"
            "  P0:\n    at: gpu0.cta0.warp0\n    ptx: |\n" + RING_BODY +
            "  P1:\n    at: gpu0.cta0.warp1\n    ptx: |\n" + RING_BODY)
    [t] = load_text(text, "t.yaml")
    assert not isinstance(t, LitmusError), t
    assert ("$L__BB0_2", 8) in t.threads[0].labels
    assert [i.operands[0] for i in t.threads[1].code if i.op == "st"] == [Addr("out", 128)]
    assert check_test(t, PTX).status == "run"


# nvcc 13.5 -arch=sm_90a -ptx of cooperative_groups' `*cluster.map_shared_rank(&buf, rank ^ 1) = rank + 1`
# in a kernel of a 2-CTA cluster (the body's lines, tabs and the inline-asm block as printed)
MAP_SHARED_RANK = ("\t.reg .b32 \t%r<9>;\n\t.reg .b64 \t%rd<7>;\n\t.shared .align 4 .u32 _ZZ2k2PiE3buf;\n\n"
                   "\tmov.b32 %r1, %cluster_ctarank;\n\txor.b32  \t%r3, %r1, 1;\n\tmov.u32 \t%r4, _ZZ2k2PiE3buf;\n"
                   "\t{ .reg .b64 %tmp;\n\t  cvt.u64.u32 \t%tmp, %r4;\n\t  cvta.shared.u64 \t%rd2, %tmp; }\n"
                   "\tmapa.u64 \t%rd3, %rd2, %r3;\n\tadd.s32 \t%r5, %r1, 1;\n\tst.u32 \t[%rd3], %r5;\n")


def test_a_generic_store_through_map_shared_rank_reaches_the_peer_cta():
    """A generic address reaches the shared::cluster window: the generic st is the same access as
    st.shared::cluster (it was refused: 'access it with .shared::cluster')."""
    text = ("name: msr\nsource: nvcc\nmemory:\n  _ZZ2k2PiE3buf: {space: shared, owner: gpu0.cluster0.cta0}\n"
            "  buf1: {space: shared, owner: gpu0.cluster0.cta1, offset_of: _ZZ2k2PiE3buf}\nthreads:\n"
            "  A:\n    at: gpu0.cluster0.cta0\n    ptx: |\n" + MAP_SHARED_RANK +
            "  B:\n    at: gpu0.cluster0.cta1\n    ptx: |\n" + MAP_SHARED_RANK +
            "expect: {allowed: ['_ZZ2k2PiE3buf=2 /\\ buf1=1']}\n")
    [t] = load_text(text, "t.yaml")
    assert not isinstance(t, LitmusError), t
    assert [i.operands[0] for th in t.threads for i in th.code if i.op == "st"] == [Addr("buf1"), Addr("_ZZ2k2PiE3buf")]
    assert check_test(t, PTX).status == "pass"
    explicit = text.replace("\tst.u32 \t[%rd3], %r5;", "\tst.shared::cluster.u32 \t[%rd3], %r5;")
    [u] = load_text(explicit, "t.yaml")
    ev = [[(e.kind, sorted(e.tags), e.loc) for e in lower(x).events] for x in (t, u)]
    assert ev[0] == ev[1]


@pytest.mark.parametrize("code, message", [
    ("st.shared.u32 [%rd3], %r5", "access it with .shared::cluster"),
    ("mbarrier.arrive.b64 _, [%rd3]", "access it with .shared::cluster"),
])
def test_a_remote_access_that_names_no_cluster_window_stays_refused(code, message):
    text = ("name: msr\nsource: nvcc\nmemory:\n  _ZZ2k2PiE3buf: {space: shared, owner: gpu0.cluster0.cta0}\n"
            "  buf1: {space: shared, owner: gpu0.cluster0.cta1, offset_of: _ZZ2k2PiE3buf}\nthreads:\n"
            "  A:\n    at: gpu0.cluster0.cta0\n    ptx: |\n" + MAP_SHARED_RANK.replace("st.u32 \t[%rd3], %r5", code))
    [r] = load_text(text, "t.yaml")
    assert isinstance(r, LitmusError) and r.where.line == 22 and message in r.message, r


def test_cvta_shared_of_another_ctas_cell_is_refused():
    """cvta.shared converts within the executing CTA's window: another CTA's cell named under
    memory: is not in it (a generic store through it was taken as a store to that cell)."""
    text = ("name: w\nsource: probe\nmemory:\n  buf: {space: shared, owner: gpu0.cluster0.cta0}\n"
            "  buf1: {space: shared, owner: gpu0.cluster0.cta1, offset_of: buf}\nthreads:\n"
            "  P1:\n    at: gpu0.cluster0.cta1\n    ptx: |\n      .reg .b64 %rd<4>;\n      mov.u64 %rd1, buf;\n"
            "      cvta.shared.u64 %rd2, %rd1;\n      st.u32 [%rd2], 1;\n")
    [r] = load_text(text, "t.yaml")
    assert isinstance(r, LitmusError) and r.where.line == 12 and "gpu0.cluster0.cta0's shared memory" in r.message, r
    [own] = load_text(text.replace("mov.u64 %rd1, buf;", "mov.u64 %rd1, buf1;"), "t.yaml")
    assert [i.operands[0] for i in own.threads[0].code if i.op == "st"] == [Addr("buf1")]


def test_bundled_kernels_are_nvccs_text_and_hold():
    """litmus/real-ptx/nvcc-kernels.yaml holds two kernel bodies as nvcc printed them (tabs, labels at
    column 0, ld.param, .shared, cvt, mapa.u64, mul.wide): each loads and its expectations hold."""
    from pathlib import Path
    from checker.front.litmus import load_paths
    path = Path(__file__).parents[2] / "litmus" / "real-ptx" / "nvcc-kernels.yaml"
    text = path.read_text()
    assert "\n$L__BB0_2:\n\tbar.sync \t0;\n" in text and "\n\tld.param.u64 \t%rd1, [_Z4peerPi_param_0];\n" in text
    tests = load_paths([path])
    assert [t.name for t in tests] == ["RP-nvcc-verbatim-syncthreads", "RP-nvcc-verbatim-map-shared-rank"]
    assert [check_test(t, PTX).status for t in tests] == ["pass", "pass"]
