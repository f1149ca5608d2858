"""Lesson 02: split K into tiles staged through shared memory (one thread per element of C)."""
import functools

import numpy as np
from numba import cuda, float32

from gemm_lessons.core.array_checks import sgemm_shapes

# lesson-cell: begin
def make_sgemm_smem_tile(TILE):
    """A TILE x TILE block of threads computes a TILE x TILE tile of C.  TILE is baked in
    as a compile-time constant (a closure variable), so shared-array shapes are constants."""

    @cuda.jit
    def sgemm_smem_tile(A, B, C, alpha, beta):
        sA = cuda.shared.array((TILE, TILE), float32)
        sB = cuda.shared.array((TILE, TILE), float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        row = cuda.blockIdx.y * TILE + ty
        col = cuda.blockIdx.x * TILE + tx
        M, K = A.shape
        N = B.shape[1]
        acc = np.float32(0.0)
        for k0 in range(0, K, TILE):
            # every thread stages one element of each tile; zeros outside the matrices
            # keep the inner loop free of guards
            sA[ty, tx] = A[row, k0 + tx] if row < M and k0 + tx < K else np.float32(0.0)
            sB[ty, tx] = B[k0 + ty, col] if k0 + ty < K and col < N else np.float32(0.0)
            cuda.syncthreads()  # the tiles are complete before anyone reads them
            for k in range(TILE):
                acc += sA[ty, k] * sB[k, tx]
            cuda.syncthreads()  # everyone is done reading before the next tile overwrites
        if row < M and col < N:
            if beta == 0:
                C[row, col] = alpha * acc
            else:
                C[row, col] = alpha * acc + beta * C[row, col]

    return sgemm_smem_tile
# lesson-cell: end


@functools.lru_cache(maxsize=None)
def kernel_for(tile):
    return make_sgemm_smem_tile(tile)


def sgemm(A, B, C, alpha=1.0, beta=0.0, tile=32, kernel=None):
    """Launch with TILE x TILE threads per block (tile 16 or 32; 32x32 = 1024 threads, the limit)."""
    if tile not in (8, 16, 32):
        raise ValueError(f"tile must be 8, 16 or 32 (TILE*TILE threads per block, at most 1024), got {tile}.")
    M, N, K = sgemm_shapes(A, B, C)
    kernel = kernel or kernel_for(tile)
    grid = ((N + tile - 1) // tile, (M + tile - 1) // tile)
    kernel[grid, (tile, tile)](A, B, C, np.float32(alpha), np.float32(beta))
