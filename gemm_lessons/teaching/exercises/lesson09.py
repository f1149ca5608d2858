"""Lesson 09's exercise: dst = src + src.T through a padded shared tile (coalesced, conflict-free)."""
import collections

import numpy as np

from gemm_lessons.core import backend
from gemm_lessons.teaching.exercises.core import exercise
from gemm_lessons.teaching.exercises.kernels_05_11 import _on_gpu

TRANSPOSE_TILE = (32, 8)  # 09-symmetrize: 32 x 32 tiles, blocks of 32 x 8 threads


_SYM_SIZES = (67, 40, 1)


def _launch_symmetrize(kernel, src, dst):
    TILE, ROWS = TRANSPOSE_TILE
    n = src.shape[0]
    grid = ((n + TILE - 1) // TILE, (n + TILE - 1) // TILE)
    kernel[grid, (TILE, ROWS)](src, dst)


@exercise("09-symmetrize",
          "both the read of src and the write of dst should go along rows (threadIdx.x along a row): take the "
          "transposed element from a shared tile, not from global memory.",
          "the block that writes dst's tile at rows r0.., columns c0.. needs src's mirror tile, rows c0.., columns "
          "r0..: stage that one row by row, then read the tile by column after a barrier. A column of a tile 32 "
          "floats wide lies in one bank.",
          "follow one element: dst[r, c] with r = r0 + ty + j and c = c0 + tx needs src[c, r]. In the staging "
          "loop, which thread (tx, ty, j) loads src[c, r] when a warp reads along a row of src, and where in the "
          "tile does it put it? Read that tile position in the second loop; lanes then differ in the tile's first "
          "index (a column). For the conflict-free column: what tile width puts row l in bank l?",
          answer="symmetrize",
          defines="symmetrize: the @cuda.jit kernel (src, dst) writing dst = src + src.T, launched with 32 x 8 "
                  "threads per 32 x 32 tile")
def check_symmetrize_through_shared_tile(kernel):
    from numba import cuda

    from gemm_lessons.measure.problems import POISON, POISON_BITS

    rng = np.random.default_rng(9)
    for n in _SYM_SIZES:
        src = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        dst = cuda.to_device(np.full((n, n), POISON, np.float32))
        _launch_symmetrize(kernel, cuda.to_device(src), dst)
        got = dst.copy_to_host()
        unwritten = got.view(np.uint32) == POISON_BITS
        if unwritten.any():
            r, c = np.argwhere(unwritten)[0]
            return False, f"for n = {n}, {int(unwritten.sum())} element(s) of dst were never written (first at {r}, {c})."
        want = src + src.T
        if not np.array_equal(got, want):
            r, c = np.argwhere(got != want)[0]
            return False, f"for n = {n}, dst[{r}, {c}] = {got[r, c]!r}, expected src[{r}, {c}] + src[{c}, {r}] = {want[r, c]!r}."
    right = f"dst = src + src.T is right for n = {', '.join(map(str, _SYM_SIZES))}"
    if not backend.SIMULATOR:
        return _on_gpu("09-symmetrize", kernel, right)
    from gemm_lessons.instruments import access_log

    n = 64
    src = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    log, _ = access_log.log(lambda src, dst: _launch_symmetrize(kernel, src, dst),
                            dict(src=src, dst=np.zeros((n, n), np.float32)))
    slow = collections.OrderedDict()
    for ins in log.global_instructions():
        if ins.sectors > ins.ideal_sectors:
            key = (ins.array, ins.op, ins.site[1])
            s = slow.setdefault(key, [0, ins.sectors, ins.ideal_sectors])
            s[0] += 1
    if slow:
        (arr, op, line), (count, sectors, ideal) = next(iter(slow.items()))
        return False, (right + f", but not coalesced: the {'read of' if op == 'ld' else 'write to'} {arr} on line "
                       f"{line} of your cell touches {sectors} sectors of 32 bytes per warp where {ideal} would "
                       f"do ({count} such warp accesses for a {n}x{n} matrix): a warp should read and write rows. "
                       "Read src[c, r] through a shared tile instead.")
    trace = log.shared_trace(merge=False)
    if not trace.instructions:
        return False, right + ", but no shared memory was used."
    t = trace.totals()
    if t["conflicts"]:
        worst = max(trace.instructions, key=lambda i: i.cost.degree)
        return False, (right + f", coalesced, but the shared tile has bank conflicts: {t['wavefronts']} wavefronts "
                       f"where {t['ideal']} would do (block 0; the worst, a {'load from' if worst.op == 'ld' else 'store into'} "
                       f"{worst.array} on line {worst.site[1]}, is {worst.cost.degree}-way). Pad the tile.")
    return True, (right + f"; every warp's global access touches the fewest 32-byte sectors possible (the access "
                  f"log, {n}x{n}), and the shared tile is conflict-free ({t['instructions']} instructions, "
                  f"{t['wavefronts']} wavefronts, block 0).")
