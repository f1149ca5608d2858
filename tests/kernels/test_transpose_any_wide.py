"""transpose/transpose_any_wide.py: 16-byte accesses for every shape, exact on the simulator.

The access-log test checks, lane by lane, that every access made through load4_flat/store4_flat
is four consecutive floats on a 16-byte boundary, that the scalar accesses are only where the
kernel says they must be (the array's last, cut-short float4; float4s a dst segment shares with a
neighbouring block's), and that every dst float is written exactly once by the block that owns it.
"""
import collections
import inspect

import numpy as np
import pytest
from numba import cuda

from gemm_lessons.core import float4
from gemm_lessons.kernels.library import transpose_any_wide

from conftest import check_transpose_offset, requires_simulator

SHAPES = [(1, 1), (1, 67), (67, 1), (3, 5), (5, 3), (63, 65), (64, 64), (65, 67), (130, 7), (7, 130),
          (129, 131), (4, 4), (8, 12), (68, 72), (1, 8), (8, 1)]


def run(rows, cols, **kw):
    check_transpose_offset(transpose_any_wide.transpose, rows, cols, **kw)


@pytest.mark.parametrize("rows, cols", SHAPES)
def test_any_wide_is_exact_on_every_shape(rows, cols):
    run(rows, cols)


@pytest.mark.parametrize("tile, threads_rows, shape", [(64, 8, (65, 67)), (32, 8, (67, 70)), (32, 4, (33, 35)),
                                                      (32, 8, (1, 37)), (16, 4, (19, 13))])
def test_any_wide_other_tiles(tile, threads_rows, shape):
    run(*shape, TILE=tile, ROWS=threads_rows)


def test_any_wide_rejects_wrong_arrays():
    src = cuda.to_device(np.zeros((3, 5), np.float32))
    with pytest.raises(ValueError, match="dst must be 5x3"):
        transpose_any_wide.transpose(src, cuda.device_array((6, 3), np.float32))  # larger than needed
    with pytest.raises(ValueError, match="dst must be 5x3"):
        transpose_any_wide.transpose(src, cuda.device_array((3, 5), np.float32))  # src's shape, not its transpose
    with pytest.raises(ValueError, match="dst must be 5x3"):
        transpose_any_wide.transpose(src, cuda.device_array((15, 1), np.float32))  # the right size, the wrong shape
    with pytest.raises(TypeError, match="float32"):
        transpose_any_wide.transpose(cuda.to_device(np.zeros((3, 5))), cuda.device_array((5, 3), np.float32))
    with pytest.raises(TypeError, match="host memory"):
        transpose_any_wide.transpose(np.zeros((3, 5), np.float32), cuda.device_array((5, 3), np.float32))
    with pytest.raises(ValueError, match="2-D"):
        transpose_any_wide.transpose(cuda.to_device(np.zeros(15, np.float32)), cuda.device_array((5, 3), np.float32))
    with pytest.raises(ValueError, match="TILE a multiple of 4"):
        transpose_any_wide.transpose(src, cuda.device_array((5, 3), np.float32), TILE=64, ROWS=2)


@requires_simulator  # on a GPU .T of a device array is a C-contiguous copy
def test_any_wide_rejects_non_contiguous_views():
    base = cuda.to_device(np.zeros((6, 4), np.float32))
    with pytest.raises(ValueError, match="C-contiguous"):
        transpose_any_wide.transpose(base.T, cuda.device_array((6, 4), np.float32))
    with pytest.raises(ValueError, match="C-contiguous"):
        transpose_any_wide.transpose(base[:, :3], cuda.device_array((3, 6), np.float32))


def _sites():
    """float4.py's flat helpers: file and the line range of each (the simulator's versions)."""
    out = {}
    for name in ("load4_flat", "store4_flat", "load1_flat", "store1_flat"):
        lines, first = inspect.getsourcelines(getattr(float4, name))
        out[name] = range(first, first + len(lines))
    return inspect.getsourcefile(float4), out


def _accesses(log):
    """Per access made through float4.py's flat helpers: (block, thread, kind, array, flat index),
    kind "wide" (one load4_flat/store4_flat: its four floats checked here) or "scalar"."""
    path, sites = _sites()
    by_thread = collections.defaultdict(list)
    for e in log.events:
        if e.kind == "global":
            assert e.site[0] == path, f"a global access outside float4.py's flat helpers: {e.site}"
            name = next(n for n, r in sites.items() if e.site[1] in r)
            by_thread[(e.block, e.thread)].append((e.seq, name, e))
    out = []
    for (block, thread), evs in by_thread.items():
        evs.sort(key=lambda x: x[0])
        i = 0
        while i < len(evs):
            name, e = evs[i][1], evs[i][2]
            if name.startswith(("load4", "store4")):  # four floats in a row from one call
                run4 = [x[2] for x in evs[i:i + 4]]
                assert [x.site for x in run4] == [e.site] * 4 and {x.array for x in run4} == {e.array}
                assert [x.address for x in run4] == [e.address + 4 * d for d in range(4)], \
                    f"{name} of {block} thread {thread}: floats not consecutive"
                assert e.address % 16 == 0, f"{name} at byte {e.address}: not 16-byte aligned"
                out.append((block, thread, "wide", e.array, e.address // 4))
                i += 4
            else:
                out.append((block, thread, "scalar", e.array, e.address // 4))
                i += 1
    return out


@requires_simulator
@pytest.mark.parametrize("rows, cols", [(67, 70), (70, 67), (64, 68), (9, 133)])
def test_any_wide_moves_16_bytes_wherever_it_can(rows, cols):
    from gemm_lessons.instruments import access_log

    TILE = 64
    src = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    log, out = access_log.log(lambda src, dst: transpose_any_wide.transpose(src, dst, TILE=TILE),
                              {"src": src, "dst": np.full((cols, rows), np.nan, np.float32)})
    assert np.array_equal(out["dst"], src.T)
    acc = _accesses(log)
    total = rows * cols
    # loads: 16 bytes wide, except inside the array's last float4 when it is cut short
    scalar_loads = [f for b, t, kind, arr, f in acc if arr == "src" and kind == "scalar"]
    assert all(f >= total - total % 4 for f in scalar_loads) and len(scalar_loads) <= 3
    # stores: every dst float exactly once, by the block whose tile holds it
    written = collections.Counter()
    per_segment = collections.Counter()
    for (bx, by, _), t, kind, arr, f in (a for a in acc if a[3] == "dst"):
        floats = range(f, f + 4) if kind == "wide" else [f]
        written.update(floats)
        for g in floats:
            C, R = divmod(g, rows)  # dst[C, R] = src[R, C]
            assert bx * TILE <= C < (bx + 1) * TILE and by * TILE <= R < (by + 1) * TILE, \
                f"block {(bx, by)} wrote dst[{C}, {R}], outside its tile"
        if kind == "scalar":  # only where the aligned float4 is shared with another segment
            C, R = divmod(f, rows)
            seg0 = C * rows + by * TILE
            seg1 = C * rows + min((by + 1) * TILE, rows)
            a = f - f % 4
            assert a < seg0 or a + 4 > seg1, f"a scalar store at dst[{C}, {R}] inside a whole float4 of its segment"
            per_segment[(C, by)] += 1
    assert set(written) == set(range(total)) and set(written.values()) == {1}
    assert max(per_segment.values(), default=0) <= 6  # at most 3 at each end of a segment
    wide = sum(4 for a in acc if a[2] == "wide" and a[3] == "dst")
    if rows % 4 == 0:  # every dst segment starts and ends on a float4 boundary
        assert wide == total and not per_segment
    if cols % 4 == 0:
        assert not scalar_loads


@requires_simulator
@pytest.mark.parametrize("rows, cols", [(64, 64), (65, 64), (67, 66), (66, 67)])
def test_any_wide_shared_accesses_conflict_no_more_than_wide(rows, cols):
    """The bank tracer on block (0, 0): staging_width picks, per shape, a staging row width whose
    gather is at most 2-way, as lesson 09's `wide` (one width for every shape leaves some 4-way:
    69 floats 65 x 64 and 67 x 66, 71 floats 67 x 64 and 65 x 66)."""
    from gemm_lessons.instruments import access_log

    src = np.random.default_rng(0).random((rows, cols), dtype=np.float32)
    log, out = access_log.log(lambda src, dst: transpose_any_wide.transpose(src, dst),
                              {"src": src, "dst": np.zeros((cols, rows), np.float32)})
    assert np.array_equal(out["dst"], src.T)
    trace = log.shared_trace((0, 0, 0), merge=())
    for op in ("ld", "st"):
        t = trace.totals(op)
        assert t["wavefronts"] <= 2 * t["ideal"], (op, t)
    assert max(r["degree"] for r in trace.by_site()) <= 2
