"""Lesson 04's figure of one block: the results it colours are the ones the kernel's thread owns."""
import matplotlib

matplotlib.use("Agg")

from gemm_lessons.teaching import figures


def test_every_result_of_the_tile_has_one_owner_in_both_layouts():
    for spread in (False, True):
        owned = [(r, c) for t in range(256) for rows, cols in [figures.thread_tile_rows_cols(t, spread=spread)]
                 for r in rows for c in cols]
        assert sorted(owned) == [(r, c) for r in range(128) for c in range(128)]


def test_the_layouts_are_the_kernels():
    # reg2d's thread tid owns rows t_row + i*ROW_STEP and columns t_col + j*COL_STEP (make_sgemm_reg2d)
    tid = 37
    assert figures.thread_tile_rows_cols(tid, spread=True) == ([2 + 16 * i for i in range(8)], [5 + 16 * j for j in range(8)])
    assert figures.thread_tile_rows_cols(tid, spread=False) == ([16 + i for i in range(8)], [40 + j for j in range(8)])


def test_the_block_figure_draws_the_block_and_the_outer_product():
    axes = figures.register_block()
    assert "thread 37" in axes[0].get_title() and "8+8 reads, 64 FMAs" in axes[1].get_title()
    assert any("256 threads" in t.get_text() for t in axes[0].texts)
    matplotlib.pyplot.close(axes[0].figure)
