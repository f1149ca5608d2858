"""kernels/library/transpose_few_rows.py: exact for every row count it takes (odd, even, a power of
two), across block edges and at any alignment; refuses other shapes; its shared stores conflict at
most as its doc says (the bank tracer, on the simulator)."""
import numpy as np
import pytest
from numba import cuda

from gemm_lessons.kernels.library import transpose_few_rows

from conftest import check_transpose_offset, requires_simulator


def run(rows, cols, offset=0):
    """src and dst ``offset`` floats into fresh buffers (offset 1: neither starts on 16 bytes)."""
    check_transpose_offset(transpose_few_rows.transpose, rows, cols, offset)


@pytest.mark.parametrize("rows", range(1, transpose_few_rows.MAX_ROWS + 1))
def test_every_row_count_is_exact_across_block_edges(rows):
    run(rows, transpose_few_rows.COLS + 3)  # a full block and a ragged one


@pytest.mark.parametrize("rows, cols", [(7, 300), (8, 1), (3, 256), (16, 513)])
def test_any_alignment_is_exact(rows, cols):
    run(rows, cols, offset=1)


def test_other_row_counts_are_refused_with_where_to_go():
    src = cuda.to_device(np.zeros((transpose_few_rows.MAX_ROWS + 1, 4), np.float32))
    with pytest.raises(ValueError, match="library.transpose"):
        transpose_few_rows.transpose(src, cuda.device_array((4, transpose_few_rows.MAX_ROWS + 1), np.float32))


@requires_simulator
@pytest.mark.parametrize("rows, ways", [(7, 1), (13, 1), (8, 1), (16, 1), (6, 2), (12, 2)])
def test_shared_accesses_conflict_as_the_doc_says(rows, ways):
    """Odd rows: stores `rows` floats apart, 32 banks; even: one float of padding every 32 keeps them
    at most 2-way, 1-way for a power of two.  The reads of the run are consecutive: conflict-free."""
    from gemm_lessons.instruments import access_log

    cols = transpose_few_rows.COLS
    src = np.random.default_rng(rows).random((rows, cols), dtype=np.float32)
    log, out = access_log.log(lambda src, dst: transpose_few_rows.transpose(src, dst),
                              {"src": src, "dst": np.zeros((cols, rows), np.float32)})
    assert np.array_equal(out["dst"], src.T)
    trace = log.shared_trace((0, 0, 0), merge=())
    assert trace.totals("ld")["wavefronts"] == trace.totals("ld")["ideal"]
    assert max(r["degree"] for r in trace.by_site() if r["op"] == "st") == ways
