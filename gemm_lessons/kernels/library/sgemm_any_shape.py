"""gl.sgemm's kernel for every shape and layout, and for split-K: lesson 08's warptile kernel
with scalar, predicated global memory accesses.

warptile.py moves 16 bytes at a time, so it needs K and N multiples of 4, C-contiguous arrays
and 16-byte-aligned data.  This kernel keeps everything that makes warptile fast (block, warp
and thread tiles from a TileConfig, double buffering, 128-bit shared loads in the k-steps) and
changes only the edges, where a library meets arbitrary input:

  * global loads are single floats (float4.load1: no negative-index handling), each with its
    own predicate (inside the matrix and inside this block's k-range), so any K, any N, any
    alignment and any row stride work.  Consecutive threads load consecutive addresses (a
    warp reads 32 neighbours of a row of B, or 4 rows x 8 k of A): every sector fetched is
    used, the same traffic as warptile's float4s at 4x the load instructions, a few per 512
    FFMAs;
  * C is written one float at a time, each column guarded;
  * split-K: block z of the grid sums only k in [z * k_chunk, min(K, (z + 1) * k_chunk)) and
    writes rows z*M .. z*M + M-1 of C.  With one block along z (k_chunk >= K) that is the whole
    product, written to C with alpha and beta; with several, C is a (splits*M) x N workspace of
    partial products (alpha 1, beta 0) that splitk_reduce.py adds up.

The arrays may be typed C-contiguous or 'A' (any strides: numba then indexes with the row
stride passed at launch), which is what lets gemm_lessons.library.device_arrays take slices of larger arrays.
"""
import numpy as np
from numba import boolean, cuda, float32

from gemm_lessons.core.float4 import load1, load4, store1
from gemm_lessons.core.jit import jit
from gemm_lessons.core.unroll import static_range, unrolled
from gemm_lessons.kernels.sgemm.warptile import TileConfig


def validate(cfg):
    """warptile's rules plus the scalar staging's: each thread loads elements at a fixed k of A
    and a fixed column of B, so the threads must split BK and BN evenly."""
    cfg.validate()
    if cfg.stages != 2 or cfg.spread or cfg.guard != "if" or cfg.group_m != 1:
        raise ValueError(f"any_shape kernel {cfg.short()}: only stages=2, spread=False, guard='if', "
                         "group_m=1 (its loads and its grid are its own)")
    T = cfg.threads
    if T % cfg.BK or (cfg.BM * cfg.BK) % T or T % cfg.BN or (cfg.BK * cfg.BN) % T:
        raise ValueError(f"any_shape kernel {cfg.short()}: {T} threads must be a multiple of BK and BN "
                         "and split the A and B tiles evenly")
    return cfg


# lesson-cell: begin
def make_kernel(cfg=TileConfig()):
    """Compile the any-shape kernel for ``cfg``; arguments (A, B, C, alpha, beta, k_chunk)."""
    validate(cfg)
    BM, BN, BK, WM, WN, TM, TN = cfg.BM, cfg.BN, cfg.BK, cfg.WM, cfg.WN, cfg.TM, cfg.TN
    LM, LN = cfg.lanes
    T = cfg.threads
    A_ROW = BM + cfg.pad_a  # a row of the transposed A tile, padded
    A_LOADS = BM * BK // T  # elements of the A tile each thread stages per slice, A_STEP rows apart
    A_STEP = T // BK
    B_LOADS = BK * BN // T  # ... and of the B tile, B_STEP rows apart
    B_STEP = T // BN

    @jit(max_registers=cfg.max_registers)
    @unrolled
    def sgemm_any_shape(A, B, C, alpha, beta, k_chunk):
        sA0 = cuda.shared.array((BK, A_ROW), float32)  # two buffers of the transposed A tile
        sA1 = cuda.shared.array((BK, A_ROW), float32)
        sB0 = cuda.shared.array((BK, BN), float32)
        sB1 = cuda.shared.array((BK, BN), float32)
        tid = cuda.threadIdx.x
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        M, K = A.shape
        N = B.shape[1]
        k_begin = cuda.blockIdx.z * k_chunk  # this block's part of the sum over k
        k_end = min(K, k_begin + k_chunk)
        warp, lane = tid // 32, tid % 32
        a_base = (warp // (BN // WN)) * WM + (lane // LN) * 4  # this thread's first row in the tile
        b_base = (warp % (BN // WN)) * WN + (lane % LN) * 4    # ... and first column
        a_r = tid // BK  # the elements of the A tile this thread stages: rows a_r + i * A_STEP,
        a_k = tid % BK   #   column a_k (8 neighbouring threads read 32 contiguous bytes of a row)
        b_r = tid // BN  # ... and of the B tile: rows b_r + j * B_STEP, column b_c (a warp reads
        b_c = tid % BN   #   128 contiguous bytes)
        a_ok = cuda.local.array(A_LOADS, boolean)
        for i in static_range(A_LOADS):
            a_ok[i] = row0 + a_r + i * A_STEP < M
        b_ok = col0 + b_c < N
        acc = cuda.local.array((TM, TN), float32)
        for i in static_range(TM):
            for j in static_range(TN):
                acc[i, j] = np.float32(0.0)
        a = cuda.local.array(TM, float32)
        b = cuda.local.array(TN, float32)
        xa = cuda.local.array(A_LOADS, float32)  # elements on their way from global to shared memory
        xb = cuda.local.array(B_LOADS, float32)

        def load_a(i, k0):  # global -> register, 0 outside A or outside this block's k-range
            xa[i] = np.float32(0.0)
            if a_ok[i] & (k0 + a_k < k_end):
                xa[i] = load1(A, row0 + a_r + i * A_STEP, k0 + a_k)

        def load_b(j, k0):
            xb[j] = np.float32(0.0)
            if b_ok & (k0 + b_r + j * B_STEP < k_end):
                xb[j] = load1(B, k0 + b_r + j * B_STEP, col0 + b_c)

        def stage_loads(k0):
            for i in static_range(A_LOADS):
                load_a(i, k0)
            for j in static_range(B_LOADS):
                load_b(j, k0)

        def stage_stores(sA, sB):  # registers -> shared: A transposed (conflict-free with pad_a 4)
            for i in static_range(A_LOADS):
                sA[a_k, a_r + i * A_STEP] = xa[i]
            for j in static_range(B_LOADS):
                sB[b_r + j * B_STEP, b_c] = xb[j]

        def k_step(sA, sB, k):  # as warptile: TM/4 + TN/4 LDS.128, TM*TN FFMA
            for p in static_range(TM // 4):
                a[4 * p], a[4 * p + 1], a[4 * p + 2], a[4 * p + 3] = load4(sA, k, a_base + p * LM * 4)
            for q in static_range(TN // 4):
                b[4 * q], b[4 * q + 1], b[4 * q + 2], b[4 * q + 3] = load4(sB, k, b_base + q * LN * 4)
            for i in static_range(TM):
                for j in static_range(TN):
                    acc[i, j] += a[i] * b[j]

        def compute_and_stage(sA, sB, k0, sA_next, sB_next):
            """BK k-steps from sA, sB while the slice starting at k0 travels to sA_next, sB_next."""
            stage_loads(k0)
            for k in static_range(BK):
                k_step(sA, sB, k)
            stage_stores(sA_next, sB_next)

        stage_loads(k_begin)  # prologue: the first slice into buffer 0
        stage_stores(sA0, sB0)
        cuda.syncthreads()
        for k0 in range(k_begin, k_end, 2 * BK):
            compute_and_stage(sA0, sB0, k0 + BK, sA1, sB1)
            cuda.syncthreads()  # buffer 1 full; everyone is done with buffer 0
            if k0 + BK >= k_end:
                break
            compute_and_stage(sA1, sB1, k0 + 2 * BK, sA0, sB0)
            cuda.syncthreads()
        out0 = cuda.blockIdx.z * M  # split-K: block z's partial sums go to rows z*M ...
        for i in static_range(TM):
            row = row0 + a_base + (i // 4 * LM * 4 + i % 4)  # 4x4 pieces, LM*4 rows apart
            if row < M:
                for j in static_range(TN):
                    col = col0 + b_base + (j // 4 * LN * 4 + j % 4)
                    if col < N:
                        if beta == 0:  # C is not read (it may hold anything, NaN included)
                            store1(C, out0 + row, col, alpha * acc[i, j])
                        else:
                            store1(C, out0 + row, col, alpha * acc[i, j] + beta * load1(C, out0 + row, col))

    sgemm_any_shape.config = cfg
    return sgemm_any_shape
# lesson-cell: end
