"""transpose/transpose_aligned_stores.py: exact on every shape, and its stores 16 bytes wide but at the ends
of dst rows (the access log, lane by lane, on the simulator); the bank tracer on its staging."""
import collections

import numpy as np
import pytest

from gemm_lessons.kernels.library import transpose_aligned_stores

from conftest import check_transpose_offset, requires_simulator
from test_transpose_any_wide import SHAPES, _accesses

MORE = [(66, 3), (67, 129), (131, 9), (128, 67), (65, 64)]


def run(rows, cols, **kw):
    check_transpose_offset(transpose_aligned_stores.transpose, rows, cols, **kw)


@pytest.mark.parametrize("rows, cols", SHAPES + MORE)
def test_aligned_stores_is_exact_on_every_shape(rows, cols):
    run(rows, cols)


@pytest.mark.parametrize("tile, threads_rows, shape", [(64, 8, (65, 67)), (32, 8, (67, 70)), (16, 8, (19, 13)),
                                                      (32, 8, (1, 37))])
def test_aligned_stores_other_tiles(tile, threads_rows, shape):
    run(*shape, TILE=tile, ROWS=threads_rows)


def test_aligned_stores_refuses_too_few_threads():
    with pytest.raises(ValueError, match="TILE \\+ 3 threads"):
        transpose_aligned_stores.make_transpose_aligned_stores(TILE=16, ROWS=4)  # 16 threads for 19 staging rows


@requires_simulator
@pytest.mark.parametrize("rows, cols", [(67, 70), (70, 67), (130, 65), (9, 133), (64, 68)])
def test_aligned_stores_writes_16_bytes_but_at_the_ends_of_dst_rows(rows, cols):
    from gemm_lessons.instruments import access_log

    TILE = 64
    src = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    log, out = access_log.log(lambda src, dst: transpose_aligned_stores.transpose(src, dst, TILE=TILE),
                              {"src": src, "dst": np.full((cols, rows), np.nan, np.float32)})
    assert np.array_equal(out["dst"], src.T)
    acc = _accesses(log)  # also checks that each 16-byte access is aligned and four floats in a row
    total = rows * cols
    scalar_loads = [f for b, t, kind, arr, f in acc if arr == "src" and kind == "scalar"]
    # (the 3 extra staging rows are read by two blocks: the last float4 may be read twice)
    assert all(f >= total - total % 4 for f in scalar_loads) and len(set(scalar_loads)) <= 3
    written = collections.Counter()
    for (bx, by, _), t, kind, arr, f in (a for a in acc if a[3] == "dst"):
        floats = range(f, f + 4) if kind == "wide" else [f]
        written.update(floats)
        for g in floats:
            C, R = divmod(g, rows)  # dst[C, R] = src[R, C]
            assert bx * TILE <= C < (bx + 1) * TILE and by * TILE - 3 <= R < (by + 1) * TILE, \
                f"block {(bx, by)} wrote dst[{C}, {R}], outside its tile and the 3 rows above it"
        if kind == "scalar":  # only in a float4 that runs past the start or the end of its dst row
            C, R = divmod(f, rows)
            a = f - f % 4
            assert a < C * rows or a + 4 > (C + 1) * rows, f"a scalar store at dst[{C}, {R}], inside its row"
    assert set(written) == set(range(total)) and set(written.values()) == {1}
    if rows % 4 == 0:  # every dst row starts and ends on a float4 boundary
        assert all(kind == "wide" for _, _, kind, arr, _ in acc if arr == "dst")


@requires_simulator
@pytest.mark.parametrize("rows, cols", [(64, 64), (65, 64), (67, 66), (66, 67), (130, 67)])
def test_aligned_stores_shared_accesses_conflict_no_more_than_wide(rows, cols):
    """The bank tracer on a block of the second tile row (its 3 extra staging rows in use):
    any_wide.staging_width's choice of row width keeps every shared access at most 2-way."""
    from gemm_lessons.instruments import access_log

    src = np.random.default_rng(0).random((rows, cols), dtype=np.float32)
    log, out = access_log.log(lambda src, dst: transpose_aligned_stores.transpose(src, dst),
                              {"src": src, "dst": np.zeros((cols, rows), np.float32)})
    assert np.array_equal(out["dst"], src.T)
    block = (0, 1, 0) if rows > 64 else (0, 0, 0)
    trace = log.shared_trace(block, merge=())
    for op in ("ld", "st"):
        t = trace.totals(op)
        assert t["wavefronts"] <= 2 * t["ideal"], (op, t)
    assert max(r["degree"] for r in trace.by_site()) <= 2
