"""The bank model on every example of seed 002 section 5 (and seed 000), and the tracer."""

import numpy as np
import pytest
from numba import cuda

from gemm_lessons.teaching import figures
from gemm_lessons.instruments import bank_model, shared_tracer

from conftest import requires_simulator

W = bank_model.wavefronts


def lanes(fn):
    return [fn(l) for l in range(32)]


# ---- LDS.32: one phase of 32 lanes -------------------------------------------------------
def test_lds32_each_lane_its_own_bank():  # seed 002 example 1 (and seed 000: addresses 0, 4, ..., 124)
    a = W(lanes(lambda l: 4 * l))
    assert (a.wavefronts, a.ideal, a.degree, a.conflicts) == (1, 1, 1, 0)


def test_lds32_permuted_banks():  # example 2: a permutation of the banks
    perm = [(7 * l + 3) % 32 for l in range(32)]
    assert W([4 * p for p in perm]).wavefronts == 1


def test_lds32_different_rows_different_banks():  # example 3: distinct banks on different rows
    assert W(lanes(lambda l: 4 * l + 128 * (l % 4))).wavefronts == 1


def test_lds32_broadcast():  # example 4: lanes 0-2 read the same word of bank 0
    addrs = lanes(lambda l: 4 * l)
    addrs[1] = addrs[2] = 0
    a = W(addrs)
    assert a.wavefronts == 1 and a.degree == 1


def test_lds32_two_way():  # examples 5 and 6: two distinct words in one bank
    addrs = lanes(lambda l: 4 * l)
    addrs[1] = 128  # bank 0, second row
    a = W(addrs)
    assert (a.wavefronts, a.degree, a.conflicts) == (2, 2, 1)
    assert W(lanes(lambda l: 8 * l)).wavefronts == 2  # seed 000: addresses 0, 8, ..., 248


def test_lds32_three_way():  # example 7
    addrs = lanes(lambda l: 4 * l)
    addrs[1], addrs[2] = 128, 256
    assert W(addrs).degree == 3 and W(addrs).wavefronts == 3


def test_lds32_32_way_column_of_a_tile():
    assert W(lanes(lambda l: 128 * l)).wavefronts == 32
    assert W(lanes(lambda l: 132 * l)).wavefronts == 1  # the [32][33] padding


# ---- LDS.64: two phases of 16 lanes ------------------------------------------------------
def test_lds64_no_conflict_two_phases():  # case 1
    a = W(lanes(lambda l: 8 * l), width=8)
    assert (a.wavefronts, a.ideal, a.phases) == (2, 2, [1, 1])


def test_lds64_conflict_in_first_half_only():  # case 2: t0 and t1 hit banks 0-1 at different rows
    addrs = lanes(lambda l: 8 * l)
    addrs[1] = 128
    a = W(addrs, width=8)
    assert a.phases == [2, 1] and a.wavefronts == 3


def test_lds64_conflicts_only_within_a_phase():
    addrs = lanes(lambda l: 8 * (l % 16))  # lanes 16-31 repeat lanes 0-15: different phase
    assert W(addrs, width=8).wavefronts == 2


# ---- LDS.128: four phases of 8 lanes -----------------------------------------------------
def test_lds128_warp_2x16_conflicts():  # 5.2 (1): threads 0&4, 1&5, ... clash in each quarter
    addrs = bank_model.warp_layout_addresses((2, 16), lanes_along="cols")
    a = W(addrs, width=16)
    assert a.phases == [2, 2, 2, 2] and a.wavefronts == 8 and a.ideal == 4


def test_lds128_warp_4x8_is_conflict_free():  # 5.2 (2): lanes run along rows, 2 columns per quarter
    addrs = bank_model.warp_layout_addresses((4, 8), lanes_along="rows")
    a = W(addrs, width=16)
    assert a.wavefronts == 4 and a.degree == 1


def test_lds128_split_8x8_into_4x4_is_conflict_free():  # 5.2 (3): a quarter warp reads one row of banks
    addrs = bank_model.warp_layout_addresses((2, 16), split=True, lanes_along="cols")
    assert W(addrs, width=16).wavefronts == 4


def test_lds32_a_tile_2x16_two_way():  # 5.2 (1), A side: lanes 0-15 one word, 16-31 another, same bank
    addrs = [0] * 16 + [8 * 8 * 4] * 16  # rows 0 and 8 of a (128, 8) float tile: 256 bytes apart, bank 0
    assert W(addrs).wavefronts == 2


def test_inactive_lanes_and_errors():
    assert W([None] * 31 + [4]).wavefronts == 1
    assert W([None] * 32).wavefronts == 0
    with pytest.raises(ValueError):
        W([0] * 31)
    with pytest.raises(ValueError):
        W([4] * 32, width=16)  # misaligned
    with pytest.raises(ValueError):
        W([0] * 32, width=32)


def test_compute_ratio_prefers_square_warps():  # 5.2 (4): 2/(1/x+1/y)
    from gemm_lessons.model.counting import compute_to_memory_ratio
    assert compute_to_memory_ratio(32, 64) > compute_to_memory_ratio(16, 128)


# ---- tracer -------------------------------------------------------------------------------
@requires_simulator
@pytest.mark.parametrize("pad,wavefronts", [(0, 1024), (1, 32)])
def test_tracer_transpose_tile(pad, wavefronts):
    from gemm_lessons.kernels.transpose import smem_tile

    src = cuda.to_device(np.random.rand(64, 64).astype(np.float32))
    dst = cuda.device_array((64, 64), np.float32)
    tr = shared_tracer.trace(lambda: smem_tile.transpose(src, dst, PAD=pad))
    ld, st = tr.totals("ld"), tr.totals("st")
    assert ld["instructions"] == 32 and ld["wavefronts"] == wavefronts  # 32 warps, one column read each
    assert st["instructions"] == 32 and st["wavefronts"] == 32
    assert tr.first("ld").cost.degree == (32 if pad == 0 else 1)


@requires_simulator
def test_tracer_on_a_students_kernel_and_merging():
    from numba import float32

    @cuda.jit
    def student(out):
        s = cuda.shared.array((4, 64), float32)
        t = cuda.threadIdx.x
        for i in range(4):  # four neighbouring words per lane, 16-byte aligned: one LDS.128
            s[0, 4 * (t % 16) + i] = t
        cuda.syncthreads()
        out[t] = s[0, 2 * t]  # stride 2: 2-way conflict

    out = cuda.device_array(32, np.float32)
    tr = shared_tracer.trace(lambda: student[1, 32](out))
    st = tr.first("st")
    assert st.width == 16 and st.cost.wavefronts == 4  # two 8-lane phases share addresses: broadcast-free
    ld = tr.first("ld")
    assert ld.width == 4 and ld.cost.wavefronts == 2
    unmerged = shared_tracer.trace(lambda: student[1, 32](out), merge=False)
    assert shared_tracer.trace(lambda: student[1, 32](out), merge=("ld",)).first("st").width == 4
    assert unmerged.totals("st")["instructions"] == 4
    assert list(tr.arrays) == ["s"] and ld.array == "s"  # the kernel's own name for the array
    assert len(repr(tr)) < 300 and "loads" in repr(tr)  # a short repr, not thousands of addresses


def test_bank_map_draws():
    import matplotlib
    matplotlib.use("Agg")
    ax = figures.bank_map(bank_model.warp_layout_addresses((2, 16)), 16)
    assert "8 wavefronts" in ax.get_title(loc="left")
    labels = {t.get_text() for t in ax.texts}
    assert "0,16" in labels and len(ax.texts) == 16  # one label per 16-byte access, listing the lanes that share it
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "phase 0: lanes 0-7" in legend and not any(t.startswith("phase 2:") for t in legend)
    assert any(t.startswith("phases 2, 3: the same words") for t in legend)  # lanes 16-31 repeat lanes 0-15's words
    matplotlib.pyplot.close(ax.figure)


def test_paired_16_byte_loads_take_two_wavefronts():
    same = [0] * 32  # every lane the same float4: the documented rule says 4, the H100 did 2
    assert W(same, 16).wavefronts == 4
    assert W(same, 16, paired_loads=True).wavefronts == 2
    halves = [0] * 16 + [512] * 16  # lesson 05's sAT read: lanes 0-15 one float4, 16-31 another
    assert W(halves, 16, paired_loads=True).wavefronts == 2
    conflicted = bank_model.warp_layout_addresses((2, 16))  # no pairs share: the rule does not apply
    assert W(conflicted, 16, paired_loads=True).wavefronts == 8


@requires_simulator
@pytest.mark.parametrize("rung,names", [("vec", ["sAT", "sB"]), ("dbuf_indexed", ["sAT", "sB"]),
                                        ("warptile", ["sA0", "sA1", "sB0", "sB1"]),
                                        ("dbuf_one_buffer", ["sA0", "sB0"])])
def test_tracer_names_the_kernels_own_arrays_and_lines(rung, names):
    import linecache

    tr = shared_tracer.trace_rung(rung, (128, 128, 8), merge=("ld",))
    assert list(tr.arrays) == names
    assert {i.array for i in tr.instructions} == set(names)
    # the sites are lines of the kernel as compiled (expanded by gemm_lessons.core.unroll)
    st = tr.first("st", array=names[0])
    assert linecache.getline(*st.site).strip().startswith(names[0] + "[")
    # the table names each row by that line's code (the package file's line number means nothing
    # in a notebook), without its comment
    assert st.source.startswith(names[0] + "[") and "#" not in st.source
    assert f"| `{st.source}` | st | {names[0]} |" in tr._repr_markdown_()


@requires_simulator
def test_lesson_09_lane_figure_draws_what_the_naive_transpose_does():
    """figures.naive_transpose_warp_addresses (lesson 09's lanes-to-addresses figure) against the
    access log of the package's naive transpose: warp 0 reads one row of src (4 sectors) and
    writes one column of dst (32 sectors)."""
    import numpy as np

    from gemm_lessons.instruments import access_log
    from gemm_lessons.kernels.transpose import naive

    rows, cols = 40, 64
    src = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    log, out = access_log.log(lambda src, dst: naive.transpose(src, dst),
                              {"src": src, "dst": np.zeros((cols, rows), np.float32)})
    assert np.array_equal(out["dst"], src.T)
    first = {i.op: i for i in log.global_instructions() if i.block == (0, 0, 0) and i.warp == 0}
    read, write = figures.naive_transpose_warp_addresses(rows, cols)
    assert first["ld"].addresses == read and first["st"].addresses == write
    assert (figures.sectors(read), figures.sectors(write)) == (4, 32)
    figures.transpose_warp_access(rows, cols)
    import matplotlib.pyplot as plt
    plt.close("all")
