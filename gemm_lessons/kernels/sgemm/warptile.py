"""Lessons 07 and 08: double buffering, warp tiles, and one kernel for a family of configurations.

One kernel, many configurations: a ``TileConfig`` names the block tile (BM x BN, BK deep),
the warp tile (WM x WN: the part of C one warp of 32 threads computes), the thread tile
(TM x TN results per thread, in 4x4 pieces), the number of shared-memory buffers (stages) and
a register cap.  ``make_kernel(config)`` returns the kernel with the configuration's numbers
as constants: ``static_range`` loops spell out every k-step and ``if static(...)`` keeps the
code of the configuration's choices (gemm_lessons/core/unroll.py); ``TileConfig.validate`` rejects
a configuration that cannot work before anything is compiled or launched.

What lessons 07 and 08 add to lesson 06's kernel:
  * stages=2 (lesson 07): the next slice of A and B is loaded from global memory into
    registers while the threads compute from one shared buffer, then stored into the other
    buffer; one barrier per slice instead of two.  The two buffers are two *separate* shared
    arrays and the main loop handles two slices per trip, so every shared index is a plain
    expression (a runtime buffer index cost registers and the LDS.128, see dbuf.py).
  * warp tiles (lesson 08): lane l of a warp owns 4x4 pieces at (l // LN, l % LN) of an
    LM x LN grid of lanes, repeated TM/4 x TN/4 times across the warp tile.  For this kernel
    the layout turned out not to matter: with 4 x 8 lanes or lesson 06's 2 x 16, a quarter
    warp of an LDS.128 reads 8 different 16-byte pieces, conflict-free (tracer and sweep agree).
  * loads outside A or B are avoided by one predicated condition per float4 (``guard``; a
    short-circuit ``and`` cost spills, a clamp + select cost instructions: lesson 07).
  * every shared-memory read is an explicit 128-bit load (``load4`` works on shared arrays
    too), so fully unrolled k-steps keep their LDS.128 (NVVM's merging had lost them, lesson 05).
  * the transposed A tile gets ``pad_a`` extra floats per row: the four scalar stores that
    transpose a float4 of A then avoid a 2-way bank conflict (lesson 06's padding; measured
    in 08: no change in speed).
  * split-K (lesson 11, ``split_k``, for gl.sgemm): with s blocks along the grid's z, block z
    sums only k in [z * chunk, (z + 1) * chunk), chunk = K / s rounded up to a multiple of BK,
    and writes rows z*M .. z*M + M-1 of C, which is then an (s*M) x N workspace of partial sums
    (kernels/library/splitk_reduce.py adds them up).  Without it, k runs over all of K into C.
  * a ragged C (lesson 11, ``ragged_c``, for gl.sgemm's padded plan): C is written one float at
    a time, each column checked against C's own width, which may be less than B's (B padded
    with zero columns to a multiple of 4, C as the caller gave it) and need not be a multiple of 4.
  * block order (lesson 08, ``group_m``): with group_m = 1 block (x, y) computes tile (row y,
    column x) of C, row-major order; with group_m = G > 1 the grid is (G, tile columns, groups)
    and block (x, y, z) computes tile (row z * G + x, column y): in the order of their linear
    index the blocks walk groups of G tile rows column by column, the Triton matmul tutorial's
    grouped ordering (block_order.py), so that the blocks resident at the same time share more
    rows of A and columns of B in the L2 cache.  Blocks past the last tile row (a last group
    with fewer than G rows) return at once.
"""
from dataclasses import dataclass, fields

import numpy as np
from numba import boolean, cuda, float32, int64

from gemm_lessons.core.array_checks import sgemm_shapes
from gemm_lessons.core.jit import jit
from gemm_lessons.core.float4 import load1, load4, require_wide_alignment, store1, store4
from gemm_lessons.core.unroll import static, static_range, unrolled

STATIC_SHARED_LIMIT = 48 * 1024  # bytes of statically sized shared memory per block


# lesson-cell: begin
@dataclass(frozen=True)
class TileConfig:
    BM: int = 128  # block tile: BM x BN of C per block, BK-deep slices of A and B
    BN: int = 128
    BK: int = 8
    WM: int = 32   # warp tile: WM x WN of C per warp
    WN: int = 64
    TM: int = 8    # thread tile: TM x TN of C per thread, in 4x4 pieces
    TN: int = 8
    stages: int = 2          # shared buffers: 1 (two barriers per slice) or 2 (one barrier)
    pad_a: int = 4           # extra floats per row of the transposed A tile (multiple of 4)
    spread: bool = False     # stage the next slice float4 by float4 through the compute
    guard: str = "if"        # how loads outside A and B are avoided: "if", "select" or "and"
    max_registers: int = 128  # register cap per thread (None: the compiler decides)
    group_m: int = 1         # block order: 1 row-major; G > 1 groups of G tile rows (block_order.py)
    split_k: bool = False    # block z sums only its part of k into rows z*M.. of C (gl.sgemm, lesson 11)
    ragged_c: bool = False   # C written one float at a time, up to C's own width (gl.sgemm, lesson 11)

    @property
    def lanes(self):  # (LM, LN): how the 32 lanes of a warp tile the warp tile
        return self.WM // self.TM, self.WN // self.TN

    @property
    def threads(self):
        return (self.BM // self.WM) * (self.BN // self.WN) * 32

    @property
    def shared_bytes(self):
        return 4 * self.stages * self.BK * (self.BM + self.pad_a + self.BN)

    def grid(self, M, N):
        """The launch's blocks for an M x N result: (tile columns, tile rows); with group_m = G > 1,
        (G rows of a group, tile columns, groups), so that blocks in the order of their linear
        index walk G tile rows column by column (block_order.py), without a division."""
        tiles_m, tiles_n = (M + self.BM - 1) // self.BM, (N + self.BN - 1) // self.BN
        if self.group_m == 1:
            return tiles_n, tiles_m
        return self.group_m, tiles_n, (tiles_m + self.group_m - 1) // self.group_m

    def validate(self):
        """ValueError naming the first rule the configuration breaks (checked before compiling)."""
        rules = [
            (all(isinstance(getattr(self, f.name), int) and getattr(self, f.name) > 0
                 for f in fields(self) if f.name not in ("pad_a", "max_registers", "spread", "guard", "split_k",
                                                                  "ragged_c")),
             "sizes must be positive integers"),
            (self.TM % 4 == 0 and self.TN % 4 == 0, "TM and TN must be multiples of 4 (4x4 pieces)"),
            (self.BK % 4 == 0, "BK must be a multiple of 4 (A is read 4 floats at a time along k)"),
            (self.pad_a >= 0 and self.pad_a % 4 == 0, "pad_a must be 0, 4, 8, ... (keeps LDS.128 aligned)"),
            (self.BM % self.WM == 0 and self.BN % self.WN == 0, "warp tiles must tile the block tile"),
            (self.WM % self.TM == 0 and self.WN % self.TN == 0, "thread tiles must tile the warp tile"),
            (self.lanes[0] * self.lanes[1] == 32,
             f"a warp has 32 lanes, but (WM/TM) x (WN/TN) = {self.lanes[0]} x {self.lanes[1]}"),
            (self.threads <= 1024, f"{self.threads} threads per block; the limit is 1024"),
            (self.stages in (1, 2), "stages must be 1 or 2"),
            (self.guard in GUARDS, f"guard must be one of {GUARDS}"),
            ((self.BM * self.BK // 4) % self.threads == 0 and self.threads % (self.BK // 4) == 0,
             f"the {self.BM}x{self.BK} A tile must split evenly into float4s over {self.threads} threads"),
            ((self.BK * self.BN // 4) % self.threads == 0 and self.threads % (self.BN // 4) == 0,
             f"the {self.BK}x{self.BN} B tile must split evenly into float4s over {self.threads} threads"),
            (self.shared_bytes <= STATIC_SHARED_LIMIT,
             f"{self.shared_bytes} bytes of shared memory; a block may have {STATIC_SHARED_LIMIT}"),
            (self.TM * self.TN <= 128, "more than 128 results per thread cannot stay in registers"),
            (self.max_registers is None or 64 <= self.max_registers <= 255,
             "max_registers must be None or 64..255"),
            (not (self.split_k and self.group_m > 1), "split_k and group_m > 1 both need the grid's z"),
        ]
        for ok, message in rules:
            if not ok:
                raise ValueError(f"invalid TileConfig {self.short()}: {message}")
        return self

    def short(self):
        return (f"{self.BM}x{self.BN}x{self.BK} warp {self.WM}x{self.WN} thread {self.TM}x{self.TN} "
                f"stages {self.stages} pad {self.pad_a} regs {self.max_registers}"
                + (" spread" if self.spread and self.stages == 2 else "")
                + ("" if self.guard == "if" else f" guard {self.guard}")
                + ("" if self.group_m == 1 else f" group {self.group_m}")
                + (" split_k" if self.split_k else "") + (" ragged_c" if self.ragged_c else ""))


GUARDS = ("if", "select", "and")


def make_kernel(cfg):
    """Compile the kernel for ``cfg`` (validated first); the result remembers its config."""
    cfg.validate()
    BM, BN, BK, WM, WN, TM, TN = cfg.BM, cfg.BN, cfg.BK, cfg.WM, cfg.WN, cfg.TM, cfg.TN
    LM, LN = cfg.lanes
    A_ROW = BM + cfg.pad_a                 # a row of the transposed A tile, padded
    A_LOADS = BM * BK // 4 // cfg.threads  # float4s of the A tile each thread stages per slice,
    A_STEP = cfg.threads // (BK // 4)      #   A_STEP rows apart
    B_LOADS = BK * BN // 4 // cfg.threads  # ... and of the B tile, B_STEP rows apart
    B_STEP = cfg.threads // (BN // 4)
    STAGES, GUARD, GROUP_M, SPLIT_K, RAGGED_C = cfg.stages, cfg.guard, cfg.group_m, cfg.split_k, cfg.ragged_c

    def load_at(u):  # the k-step before which staged float4 u (A's first, then B's) is loaded
        return u * BK // (A_LOADS + B_LOADS) if cfg.spread else 0

    def store_at(u):  # ... and stored into shared memory (BK: after the last k-step)
        return min(load_at(u) + BK // 2, BK) if cfg.spread else BK

    @jit(max_registers=cfg.max_registers)
    @unrolled
    def sgemm_warptile(A, B, C, alpha, beta):
        sA0 = cuda.shared.array((BK, A_ROW), float32)  # A tile, transposed: sA0[k, m]
        if static(STAGES == 2):
            sA1 = cuda.shared.array((BK, A_ROW), float32)
        sB0 = cuda.shared.array((BK, BN), float32)
        if static(STAGES == 2):
            sB1 = cuda.shared.array((BK, BN), float32)
        tid = cuda.threadIdx.x
        if static(GROUP_M == 1):  # row-major: block (x, y) computes tile (row y, column x)
            row0 = cuda.blockIdx.y * BM
            col0 = cuda.blockIdx.x * BN
        else:  # grouped: block (x, y, z) computes row x of group z in tile column y
            row0 = (cuda.blockIdx.z * GROUP_M + cuda.blockIdx.x) * BM
            col0 = cuda.blockIdx.y * BN
        M, K = A.shape
        N = B.shape[1]
        k_begin, k_end, c_row0 = 0, K, 0  # the k this block sums; its first row of C
        if static(SPLIT_K):  # block z: its chunk of k (a multiple of BK), into rows z*M.. of C (lesson 11)
            chunk = (K + cuda.gridDim.z * BK - 1) // (cuda.gridDim.z * BK) * BK
            k_begin = cuda.blockIdx.z * chunk
            k_end = min(K, k_begin + chunk)
            c_row0 = cuda.blockIdx.z * M
        if static(GROUP_M > 1):
            if row0 >= M:  # a last group with fewer rows: this block has no tile
                return
        warp, lane = tid // 32, tid % 32
        a_base = (warp // (BN // WN)) * WM + (lane // LN) * 4   # this thread's first row in the tile
        b_base = (warp % (BN // WN)) * WN + (lane % LN) * 4     # ... and first column
        a_r = tid // (BK // 4)          # the float4s of the A tile this thread stages:
        a_c = (tid % (BK // 4)) * 4     #   rows a_r + i * A_STEP, columns a_c..a_c+3
        b_r = tid // (BN // 4)          # ... and of the B tile: rows b_r + j * B_STEP
        b_c = (tid % (BN // 4)) * 4
        # registers (local arrays indexed by constants only): rows of A and the columns of B
        # inside the matrix (outside ones are read clamped to the last row or float4, see
        # load_float4), the thread's TM x TN results, one k-step's fragments of A and B, and
        # the float4s on their way from global to shared memory
        a_ok = cuda.local.array(A_LOADS, boolean)
        a_row = cuda.local.array(A_LOADS, int64)
        for i in static_range(A_LOADS):
            a_ok[i] = row0 + a_r + i * A_STEP < M
            a_row[i] = min(row0 + a_r + i * A_STEP, M - 1)
        b_ok = col0 + b_c < N  # N is a multiple of 4: a float4 is wholly in or out
        b_col = min(col0 + b_c, N - 4)
        acc = cuda.local.array((TM, TN), float32)
        for i in static_range(TM):
            for j in static_range(TN):
                acc[i, j] = np.float32(0.0)
        a = cuda.local.array(TM, float32)
        b = cuda.local.array(TN, float32)
        xa = cuda.local.array((A_LOADS, 4), float32)
        xb = cuda.local.array((B_LOADS, 4), float32)

        def load_float4(X, row, col, inside_mn, inside_k, safe_row, safe_col):
            """X[row, col:col+4], or zeros where the float4 lies outside X: past M (A) or N (B)
            or past K.  GUARD "if": one condition, so ptxas can predicate the load instead of
            branching (the fastest in lesson 08's sweep); "select": the address is
            clamped into the matrix and the value replaced by 0 outside it, no condition around
            the load at all; "and": Python's short-circuit ``and`` is two branches."""
            if static(GUARD == "select"):
                ok = inside_mn & inside_k
                v0, v1, v2, v3 = load4(X, safe_row, safe_col)
                v0 = v0 if ok else np.float32(0.0)
                v1 = v1 if ok else np.float32(0.0)
                v2 = v2 if ok else np.float32(0.0)
                v3 = v3 if ok else np.float32(0.0)
            else:
                v0 = v1 = v2 = v3 = np.float32(0.0)
                if static(GUARD == "and"):
                    if inside_mn and inside_k:
                        v0, v1, v2, v3 = load4(X, row, col)
                elif inside_mn & inside_k:
                    v0, v1, v2, v3 = load4(X, row, col)
            return v0, v1, v2, v3

        def load_a(i, k0):  # global -> registers: A's float4 i of the slice starting at k0
            xa[i, 0], xa[i, 1], xa[i, 2], xa[i, 3] = load_float4(
                A, row0 + a_r + i * A_STEP, k0 + a_c, a_ok[i], k0 + a_c < k_end, a_row[i], min(k0 + a_c, K - 4))

        def load_b(j, k0):
            xb[j, 0], xb[j, 1], xb[j, 2], xb[j, 3] = load_float4(
                B, k0 + b_r + j * B_STEP, col0 + b_c, b_ok, k0 + b_r + j * B_STEP < k_end,
                min(k0 + b_r + j * B_STEP, K - 1), b_col)

        def store_a(i, sA):  # registers -> shared: A transposed, four scalar stores
            for d in static_range(4):
                sA[a_c + d, a_r + i * A_STEP] = xa[i, d]

        def store_b(j, sB):  # ... B as one float4
            store4(sB, b_r + j * B_STEP, b_c, xb[j, 0], xb[j, 1], xb[j, 2], xb[j, 3])

        def stage(k0, sA, sB):  # the slice starting at k0, all at once: global -> registers -> shared
            for i in static_range(A_LOADS):
                load_a(i, k0)
            for j in static_range(B_LOADS):
                load_b(j, k0)
            for i in static_range(A_LOADS):
                store_a(i, sA)
            for j in static_range(B_LOADS):
                store_b(j, sB)

        def k_step(sA, sB, k):  # TM/4 + TN/4 LDS.128 (4x4 pieces, LM*4 rows and LN*4 columns apart), TM*TN FFMA
            for p in static_range(TM // 4):
                a[4 * p], a[4 * p + 1], a[4 * p + 2], a[4 * p + 3] = load4(sA, k, a_base + p * LM * 4)
            for q in static_range(TN // 4):
                b[4 * q], b[4 * q + 1], b[4 * q + 2], b[4 * q + 3] = load4(sB, k, b_base + q * LN * 4)
            for i in static_range(TM):
                for j in static_range(TN):
                    acc[i, j] += a[i] * b[j]

        def compute_and_stage(sA, sB, k0, sA_next, sB_next):
            """BK k-steps from sA, sB while the slice starting at k0 travels global -> registers ->
            sA_next, sB_next: all loads before the first k-step and all stores after the last, or
            (spread) float4 by float4 through the slice, each store half a slice after its load,
            so fewer registers hold staged values at any time."""
            for k in static_range(BK + 1):
                for u in static_range(A_LOADS + B_LOADS):
                    if static(load_at(u) == k):
                        if static(u < A_LOADS):
                            load_a(u, k0)
                        else:
                            load_b(u - A_LOADS, k0)
                    if static(store_at(u) == k):
                        if static(u < A_LOADS):
                            store_a(u, sA_next)
                        else:
                            store_b(u - A_LOADS, sB_next)
                if static(k < BK):
                    k_step(sA, sB, k)

        if static(STAGES == 1):
            for k0 in range(k_begin, k_end, BK):
                stage(k0, sA0, sB0)
                cuda.syncthreads()
                for k in static_range(BK):
                    k_step(sA0, sB0, k)
                cuda.syncthreads()
        else:
            stage(k_begin, sA0, sB0)  # prologue: the first slice into buffer 0
            cuda.syncthreads()
            for k0 in range(k_begin, k_end, 2 * BK):
                compute_and_stage(sA0, sB0, k0 + BK, sA1, sB1)  # from buffer 0; the next slice into buffer 1
                cuda.syncthreads()  # buffer 1 full; everyone is done with buffer 0
                if k0 + BK >= k_end:
                    break
                compute_and_stage(sA1, sB1, k0 + 2 * BK, sA0, sB0)
                cuda.syncthreads()
        for i in static_range(TM):
            row = row0 + a_base + (i // 4 * LM * 4 + i % 4)  # 4x4 pieces, LM*4 rows apart
            if row < M:
                row += c_row0  # split_k: block z's rows of the workspace
                if static(RAGGED_C):  # one float at a time, columns checked against C's width
                    for j in static_range(TN):
                        col = col0 + b_base + (j // 4 * LN * 4 + j % 4)
                        if col < C.shape[1]:
                            if beta == 0:
                                store1(C, row, col, alpha * acc[i, j])
                            else:
                                store1(C, row, col, alpha * acc[i, j] + beta * load1(C, row, col))
                else:  # float4 by float4 (N a multiple of 4, C aligned)
                    for j in static_range(0, TN, 4):
                        col = col0 + b_base + j // 4 * LN * 4
                        if col < N:
                            if beta == 0:
                                store4(C, row, col, alpha * acc[i, j], alpha * acc[i, j + 1],
                                       alpha * acc[i, j + 2], alpha * acc[i, j + 3])
                            else:
                                o0, o1, o2, o3 = load4(C, row, col)
                                store4(C, row, col, alpha * acc[i, j] + beta * o0, alpha * acc[i, j + 1] + beta * o1,
                                       alpha * acc[i, j + 2] + beta * o2, alpha * acc[i, j + 3] + beta * o3)

    sgemm_warptile.config = cfg
    return sgemm_warptile
# lesson-cell: end


_kernels = {}


def kernel_for(cfg):
    """One compiled kernel per configuration (compiling takes seconds)."""
    if cfg not in _kernels:
        _kernels[cfg] = make_kernel(cfg)
    return _kernels[cfg]


def sgemm(A, B, C, alpha=1.0, beta=0.0, config=TileConfig(), kernel=None):
    """Launch the kernel for ``config`` (or ``kernel``, one made by make_kernel, with its own config)."""
    M, N, K = sgemm_shapes(A, B, C)
    require_wide_alignment(("A", A), ("B", B), ("C", C))
    if kernel is None:
        kernel = kernel_for(config)
    config = kernel.config
    kernel[config.grid(M, N), config.threads](A, B, C, np.float32(alpha), np.float32(beta))

