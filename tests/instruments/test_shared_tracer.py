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
    ax = figures.bank_map(bank_model.warp_layout_addresses((4, 8), lanes_along="rows"), 16)
    assert {t.get_text() for t in ax.texts} == {f"{l}-{l + 3}" for l in range(0, 32, 4)}  # every lane, as ranges
    matplotlib.pyplot.close(ax.figure)


def test_lane_labels_list_every_lane():
    assert figures.lane_label([0, 16]) == "0,16"
    assert figures.lane_label([3, 2, 1, 0]) == "0-3"
    assert figures.lane_label([0, 1, 2, 3, 16, 17, 18, 19]) == "0-3,16-19"
    assert figures.lane_label([5]) == "5" and figures.lane_label([0, 1, 7]) == "0,1,7"
    assert figures.lane_label(range(32)) == "0-31"


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


@requires_simulator
def test_lesson_09_tile_bank_maps_label_every_lane():
    """figures.tile_column_banks on the traced column reads of lesson 09's tiles: all 32 lanes
    labelled, the per-bank lane counts under the grid, the title's wavefronts the tracer's."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for rung, width, wf, counts in (("transpose:smem_tile", 32, 32, ["32"] + ["0"] * 31),
                                    ("transpose:smem_padded", 33, 1, ["1"] * 32)):
        ld = shared_tracer.trace_rung(rung, (32, 32), merge=False).first("ld")
        assert ld.cost.wavefronts == wf
        ax = figures.tile_column_banks(ld.addresses, width)
        texts = [t.get_text() for t in ax.texts]
        assert sorted(texts[:32], key=int) == [str(l) for l in range(32)] and texts[32:] == counts
        assert ax.get_title().endswith(f"{wf} wavefront{'s' if wf > 1 else ''}")
        plt.close(ax.figure)
    ax = figures.bytes_in_flight(["a", "b"], [8192, 32768], 11000, duty=0.5)
    assert [p.get_facecolor()[:3] == matplotlib.colors.to_rgb("tab:blue") for p in ax.patches] == [False, True]
    plt.close(ax.figure)


# ---- the tracer prices each access at its width (issue 35) ----------------------------------
def _float64_reads(stride):
    """8 warps; each lane stores two consecutive float64, then reads s[stride * lane + 64 r] for
    r = 0..3 (64 float64 = 512 bytes apart: bank 0 again): 32 load and 16 store warp-instructions."""
    from numba import float64

    @cuda.jit
    def kernel(out):
        s = cuda.shared.array(512, float64)
        t = cuda.threadIdx.x
        s[t] = t
        s[t + 256] = t
        cuda.syncthreads()
        lane = t % 32
        acc = 0.0
        for r in range(4):
            acc += s[stride * lane + 64 * r]
        out[t] = acc

    return kernel


@requires_simulator
@pytest.mark.parametrize("stride,per_load", [
    # consecutive: lanes 0-15 read bytes 0-127 (words 0-31, each bank once), lanes 16-31 the next
    # 128: one wavefront per half-warp phase = 2, ideal 2, no conflict (costed as 4-byte: 2 of ideal 1)
    (1, (2, 2, 0, 1)),
    # stride 2 (16 bytes): lanes 0-7 use banks 0,1,4,5,...,28,29 and lanes 8-15 the same banks on
    # the next 128 bytes: 2 wavefronts per phase = 4, ideal 2, 2 conflicts (the profiler: 128
    # wavefronts, 64 conflicts for 32 instructions; costed as 4-byte it was 4 of ideal 1, 3 conflicts)
    (2, (4, 2, 2, 2)),
    # broadcast: every lane the same float64 (banks 0 and 1): one wavefront for the warp, as Nsight
    # Compute counted on an H200 (results/banks-nvidia-h200.json), not one per half-warp phase
    (0, (1, 1, 0, 1)),
])
def test_tracer_prices_float64_at_8_bytes(stride, per_load):
    wavefronts, ideal, conflicts, degree = per_load
    out = cuda.device_array(256, np.float64)
    tr = shared_tracer.trace(lambda: _float64_reads(stride)[1, 256](out))
    assert {i.width for i in tr.instructions} == {8}
    assert tr.totals("ld") == {"instructions": 32, "wavefronts": 32 * wavefronts, "ideal": 32 * ideal,
                               "conflicts": 32 * conflicts}
    assert tr.first("ld").cost.degree == degree and len(tr.first("ld").cost.phases) == (1 if stride == 0 else 2)
    # the stores: 16 of consecutive float64, 2 wavefronts each, no conflict
    assert tr.totals("st") == {"instructions": 16, "wavefronts": 32, "ideal": 32, "conflicts": 0}
    assert tr.arrays["s"] == ((512,), 8, 0)


@requires_simulator
def test_tracer_mixed_widths_in_one_kernel():
    from numba import float32, float64

    from gemm_lessons.instruments import access_log

    @cuda.jit
    def mixed(out):
        a = cuda.shared.array(64, float32)
        d = cuda.shared.array(64, float64)
        t = cuda.threadIdx.x
        a[t] = t
        a[t + 32] = t
        d[t] = t
        d[t + 32] = t
        cuda.syncthreads()
        x = a[2 * t]  # float32 stride 2: even banks, 2 words each: 2 wavefronts, ideal 1
        y = d[2 * t]  # float64 stride 2: 2 phases of 2 wavefronts = 4, ideal 2
        z = d[t]  # float64 consecutive: 2 phases of 1 wavefront = 2, ideal 2
        out[t] = x + y + z

    out = cuda.device_array(32, np.float64)
    tr = shared_tracer.trace(lambda: mixed[1, 32](out), merge=False)
    assert tr.arrays == {"a": ((64,), 4, 0), "d": ((64,), 8, 256)}  # d starts at byte 256: bank 0
    loads = [(i.array, i.width, i.cost.wavefronts, i.cost.ideal) for i in tr.instructions if i.op == "ld"]
    assert loads == [("a", 4, 2, 1), ("d", 8, 4, 2), ("d", 8, 2, 2)]
    assert tr.totals("ld") == {"instructions": 3, "wavefronts": 8, "ideal": 5, "conflicts": 3}
    # stores: a[t], a[t + 32] one wavefront each; d[t], d[t + 32] two each
    assert tr.totals("st") == {"instructions": 4, "wavefronts": 6, "ideal": 6, "conflicts": 0}
    assert [(r["array"], r["width"]) for r in tr.by_site() if r["op"] == "ld"] == [("a", 4), ("d", 8), ("d", 8)]
    assert "| d | 8 |" in tr._repr_markdown_()
    # the access log's shared trace prices them the same way
    log, _ = access_log.log(lambda out: mixed[1, 32](out), {"out": np.zeros(32, np.float64)})
    assert log.shared_trace(merge=False).totals() == tr.totals()


@requires_simulator
def test_tracer_merges_neighbouring_float64_into_16_bytes():
    from numba import float64

    @cuda.jit
    def pairs(out):
        s = cuda.shared.array(64, float64)
        t = cuda.threadIdx.x
        s[t] = t
        s[t + 32] = t
        cuda.syncthreads()
        out[t] = s[2 * t] + s[2 * t + 1]  # two neighbouring float64, 16-byte aligned: one LDS.128

    out = cuda.device_array(32, np.float64)
    merged = shared_tracer.trace(lambda: pairs[1, 32](out), merge=("ld",)).first("ld")
    # 16 bytes per lane, 512 contiguous bytes: 4 quarter-warp phases of 1 wavefront
    assert (merged.width, merged.cost.wavefronts, merged.cost.ideal) == (16, 4, 4)
    apart = shared_tracer.trace(lambda: pairs[1, 32](out), merge=False)
    assert [(i.width, i.cost.wavefronts) for i in apart.instructions if i.op == "ld"] == [(8, 4), (8, 4)]


@requires_simulator
def test_tracer_records_float4_helpers_as_16_byte_accesses_at_the_kernels_line():
    from numba import float32

    from gemm_lessons.core.float4 import load4, store4

    @cuda.jit
    def helpers(out):
        s = cuda.shared.array((2, 128), float32)
        t = cuda.threadIdx.x
        store4(s, 0, 4 * t, t, t, t, t)  # STS.128: 32 lanes x 16 contiguous bytes
        s[1, t] = t
        cuda.syncthreads()
        x0, x1, x2, x3 = load4(s, 0, 4 * (t % 8))  # LDS.128: 8 distinct float4, lanes 8 apart share
        out[t] = x0 + x1 + x2 + x3 + s[1, t]

    out = cuda.device_array(32, np.float32)
    for merge in (False, ("ld", "st")):  # explicit 16-byte accesses: whatever the compiler merges
        tr = shared_tracer.trace(lambda: helpers[1, 32](out), merge=merge)
        rows = [(r["op"], r["width"], r["instructions"], r["wavefronts"], r["ideal"]) for r in tr.by_site()]
        # store4: 4 quarter-warp phases of 8 lanes x 16 bytes = 128 bytes, 1 wavefront each;
        # load4: each phase reads the same 128 bytes: 1 wavefront each (4; the paired rule does not
        # apply: lanes n and n^1 differ); s[1, t]: one 4-byte phase
        assert rows == [("st", 16, 1, 4, 4), ("st", 4, 1, 1, 1), ("ld", 16, 1, 4, 4), ("ld", 4, 1, 1, 1)]
        sources = [i.source for i in tr.instructions if i.width == 16]
        assert sources[0].startswith("store4(s, 0, 4 * t") and sources[1].startswith("x0, x1, x2, x3 = load4(s")


def test_an_8_byte_broadcast_in_one_pass():
    from gemm_lessons.instruments.bank_model import wavefronts

    assert wavefronts([0] * 32, 8).wavefronts == 1  # one float64 for every lane (measured on an H200)
    assert wavefronts([0] * 16 + [None] * 16, 8).wavefronts == 1  # half the lanes active: still one address
    assert wavefronts([8 * (l % 16) for l in range(32)], 8).wavefronts == 2  # two phases, as before
    assert wavefronts([8 * l for l in range(32)], 8).wavefronts == 2  # 64 words: two half-warp phases
