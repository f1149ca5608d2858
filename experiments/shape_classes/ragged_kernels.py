"""Candidate kernels for ragged N (a vocabulary projection: N not a multiple of 4, K one), next to
the library's any-shape kernel (gemm_lessons/kernels/library/sgemm_any_shape.py).

``make_vec_a(cfg)``: the any-shape kernel with A staged as warptile stages it (one 16-byte load
per float4 of a row of A: needs K a multiple of 4, A C-contiguous and 16-byte aligned) and B as
the any-shape kernel stages it (single floats, a warp reading 32 neighbours of a row of B: any N,
any alignment).  C is written one float at a time, each column guarded.  Arguments
(A, B, C, alpha, beta, k_chunk) as the any-shape kernel's, split-K included.

``make_interior(cfg)``: the library's any-shape kernel (any shape, alignment and stride) with a
second main loop for a block whose tile lies wholly inside C: while both slices it stages lie
wholly inside its k-range, its loads carry no predicate and zero nothing; the last slices, and
blocks on C's edges, take the any-shape kernel's predicated loop.  The question it asks: how much
of the any-shape kernel's gap to the wide kernel (1,326 against 1,173 instructions per 1,024 FFMAs,
experiments/shape_classes/sass_loop.py) is its predicates.

``make_grouped(cfg)``: make_interior with the wide kernel's staging pattern kept for scalar loads:
each thread stages four neighbouring floats of a row of A (four k) and of a row of B (four
columns), as four single-float loads from one address (offsets 0, 4, 8, 12 bytes), so a thread
keeps one address per group of four instead of one per float.  Compiled offline the interior
kernel still spills under the 128-register cap even without its predicated loop; the question
here is whether the scalar loads' addresses are what spills.

``make_grouped(cfg, a_wide=True)``: the same, its unpredicated loop loading A's groups with one
16-byte load each (K a multiple of 4, A C-contiguous and aligned) and B's as single floats. With
A's rows a multiple of 128 bytes apart, the 16 rows one scalar load instruction of a warp reads
all start at the same place in their 128-byte lines, and the grouped kernel took 14-15% longer at
4096^3 than at 4095x4097x4093 (short-scoreboard stalls 32% against 7%): A is where one 16-byte
load instead of four scalar ones matters, and B, any N, can stay scalar.

``make_grouped(cfg, c_wide=True)``: for split-K near 1000 without copies. Split four ways at
999x1001x1003 the grouped kernel wrote its partial sums one float at a time, 16 MB, and took 75-81
µs (interior-probe-near-1000-split-nvidia-h200.json); with c_wide its workspace is N rounded up to
4 floats wide and written 16 bytes at a time, for the library's 16-byte reduction
(kernels/library/splitk_reduce_padded.py): two launches, no copies.

``make_grouped(cfg, fixup=S)``: the same split along K in S parts in one launch.  Each part writes
its sums into the workspace W (N rounded up to 4 floats wide, 16-byte stores, as with c_wide),
fences, and counts itself in ``counters[tile]`` (int32, zero before the launch; one atomic add
per block); the part that arrives last reads the S parts of its tile back from W, whole rows per
warp and about sixteen 16-byte loads in flight per thread, adds them in their order (part 0
first: splitk_reduce_padded's sums, bit for bit), applies alpha and beta, writes C one float at
a time, and sets the count back to zero for the next call.  The question: does the separate
reduction's launch (7.9-8.1 µs under ncu near 1000, and the gap before it) cost more than the
last parts' additions at the kernel's end?  A first form (commit b5f6e4d) added the parts in
each thread's own layout, its own part from registers, one part after another in a loop over S
decided at run time: each of its loads waited for the one before.

Every kernel of ``_make_two_loops`` takes (A, B, C, alpha, beta, k_chunk, W, counters); all but
fixup's ignore the last two (``extra_argtypes``, ``no_fixup``).
"""
import numpy as np
from numba import boolean, cuda, float32, int32

from gemm_lessons.core.float4 import load1, load4, store1, store4
from gemm_lessons.core.jit import jit
from gemm_lessons.core.unroll import static, static_range, unrolled


def make_vec_a(cfg):
    cfg.validate()
    BM, BN, BK, WM, WN, TM, TN = cfg.BM, cfg.BN, cfg.BK, cfg.WM, cfg.WN, cfg.TM, cfg.TN
    LM, LN = cfg.lanes
    T = cfg.threads
    A_ROW = BM + cfg.pad_a
    A_LOADS = BM * BK // 4 // T  # float4s of the A tile per thread, A_STEP rows apart (warptile's)
    A_STEP = T // (BK // 4)
    B_LOADS = BK * BN // T  # single floats of the B tile per thread, B_STEP rows apart (any_shape's)
    B_STEP = T // BN
    assert T % BN == 0 and (BK * BN) % T == 0

    @jit(max_registers=cfg.max_registers)
    @unrolled
    def sgemm_vec_a(A, B, C, alpha, beta, k_chunk):
        sA0 = cuda.shared.array((BK, A_ROW), float32)
        sA1 = cuda.shared.array((BK, A_ROW), float32)
        sB0 = cuda.shared.array((BK, BN), float32)
        sB1 = cuda.shared.array((BK, BN), float32)
        tid = cuda.threadIdx.x
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        M, K = A.shape
        N = B.shape[1]
        k_begin = cuda.blockIdx.z * k_chunk
        k_end = min(K, k_begin + k_chunk)
        warp, lane = tid // 32, tid % 32
        a_base = (warp // (BN // WN)) * WM + (lane // LN) * 4
        b_base = (warp % (BN // WN)) * WN + (lane % LN) * 4
        a_r = tid // (BK // 4)
        a_c = (tid % (BK // 4)) * 4
        b_r = tid // BN
        b_c = tid % BN
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
        xa = cuda.local.array((A_LOADS, 4), float32)
        xb = cuda.local.array(B_LOADS, float32)

        def load_a(i, k0):  # K is a multiple of 4: a float4 is wholly inside k or outside
            xa[i, 0] = xa[i, 1] = xa[i, 2] = xa[i, 3] = np.float32(0.0)
            if a_ok[i] & (k0 + a_c < k_end):
                xa[i, 0], xa[i, 1], xa[i, 2], xa[i, 3] = load4(A, row0 + a_r + i * A_STEP, k0 + a_c)

        def load_b(j, k0):
            xb[j] = np.float32(0.0)
            if b_ok & (k0 + b_r + j * B_STEP < k_end):
                xb[j] = load1(B, k0 + b_r + j * B_STEP, col0 + b_c)

        def stage_loads(k0):
            for i in static_range(A_LOADS):
                load_a(i, k0)
            for j in static_range(B_LOADS):
                load_b(j, k0)

        def stage_stores(sA, sB):
            for i in static_range(A_LOADS):
                for d in static_range(4):
                    sA[a_c + d, a_r + i * A_STEP] = xa[i, d]
            for j in static_range(B_LOADS):
                sB[b_r + j * B_STEP, b_c] = xb[j]

        def k_step(sA, sB, k):
            for p in static_range(TM // 4):
                a[4 * p], a[4 * p + 1], a[4 * p + 2], a[4 * p + 3] = load4(sA, k, a_base + p * LM * 4)
            for q in static_range(TN // 4):
                b[4 * q], b[4 * q + 1], b[4 * q + 2], b[4 * q + 3] = load4(sB, k, b_base + q * LN * 4)
            for i in static_range(TM):
                for j in static_range(TN):
                    acc[i, j] += a[i] * b[j]

        def compute_and_stage(sA, sB, k0, sA_next, sB_next):
            stage_loads(k0)
            for k in static_range(BK):
                k_step(sA, sB, k)
            stage_stores(sA_next, sB_next)

        stage_loads(k_begin)
        stage_stores(sA0, sB0)
        cuda.syncthreads()
        for k0 in range(k_begin, k_end, 2 * BK):
            compute_and_stage(sA0, sB0, k0 + BK, sA1, sB1)
            cuda.syncthreads()
            if k0 + BK >= k_end:
                break
            compute_and_stage(sA1, sB1, k0 + 2 * BK, sA0, sB0)
            cuda.syncthreads()
        out0 = cuda.blockIdx.z * M
        for i in static_range(TM):
            row = row0 + a_base + (i // 4 * LM * 4 + i % 4)
            if row < M:
                for j in static_range(TN):
                    col = col0 + b_base + (j // 4 * LN * 4 + j % 4)
                    if col < N:
                        if beta == 0:
                            store1(C, out0 + row, col, alpha * acc[i, j])
                        else:
                            store1(C, out0 + row, col, alpha * acc[i, j] + beta * load1(C, out0 + row, col))

    sgemm_vec_a.config = cfg
    return sgemm_vec_a


def extra_argtypes():
    """The numba types of W and counters, the arguments every two-loops kernel takes after k_chunk."""
    from gemm_lessons.core.numba_compat import types

    return (types.Array(types.float32, 2, "C"), types.Array(types.int32, 2, "C"))


def no_fixup(C):
    """(W, counters) for a kernel that ignores them: C itself and a 1 x 1 count."""
    return C, cuda.to_device(np.zeros((1, 1), np.int32))


def make_interior(cfg):
    """The any-shape kernel's staging (one float per thread and load) with the unpredicated loop."""
    return _make_two_loops(cfg, "element")


def make_grouped(cfg, wide_inside=False, a_wide=False, c_wide=False, fixup=0):
    """Groups of four neighbouring floats per thread; wide_inside: the unpredicated loop loads each
    group with one 16-byte load (load4), for A and B whose rows start on 16-byte boundaries (K and N
    multiples of 4, C-contiguous, aligned); a_wide: only A's groups so (K a multiple of 4, A
    C-contiguous and aligned; any N); the edge loop is unchanged.  c_wide: C is a workspace whose
    rows are N rounded up to 4 floats (C-contiguous, aligned: split-K's partial sums, which the
    library's splitk_reduce_padded reads), written four floats per 16-byte store up to its own
    width (the columns past N get zeros) instead of one float at a time up to N; alpha and beta
    are ignored (the reduction applies them).  fixup=S: split-K in S parts (the grid's z) in one
    launch; each part's sums go to the workspace W as with c_wide, and the last part of a tile to
    arrive (counted in ``counters``) adds the parts in order into C (see the module doc)."""
    return _make_two_loops(cfg, "grouped_wide" if wide_inside else "grouped_a_wide" if a_wide else "grouped",
                           c_wide=c_wide, fixup=fixup)


def _make_two_loops(cfg, staging, c_wide=False, fixup=0):
    """The kernel with two main loops (make_interior, make_grouped): ``staging`` "element" (the
    any-shape kernel's: thread tid stages rows tid // BK + i * A_STEP of A at k tid % BK, and row
    tid // BN + j * B_STEP of B at column tid % BN), "grouped" (four neighbours of a row per
    thread and load group, warptile's mapping, loaded as single floats from one address) or
    "grouped_wide" (the same, the unpredicated loop by 16-byte loads) or "grouped_a_wide" (only A's
    groups by 16-byte loads there)."""
    GROUPED, WIDE_INSIDE, C_WIDE, FIXUP = staging != "element", staging == "grouped_wide", c_wide, fixup > 0
    SPLIT = max(fixup, 1)  # fixup: the parts along K, fixed when compiled (the loads below are unrolled)
    A_WIDE = staging in ("grouped_wide", "grouped_a_wide")
    if GROUPED:
        cfg.validate()
    else:
        from gemm_lessons.kernels.library.sgemm_any_shape import validate

        validate(cfg)
    BM, BN, BK, WM, WN, TM, TN = cfg.BM, cfg.BN, cfg.BK, cfg.WM, cfg.WN, cfg.TM, cfg.TN
    LM, LN = cfg.lanes
    T = cfg.threads
    A_ROW = BM + cfg.pad_a
    G = 4 if GROUPED else 1  # floats per thread and load group
    A_LOADS = BM * BK // G // T  # load groups of the A tile per thread, A_STEP rows apart
    A_STEP = T // (BK // G)
    B_LOADS = BK * BN // G // T  # ... of the B tile, B_STEP rows apart
    B_STEP = T // (BN // G)
    assert A_LOADS >= 1 and B_LOADS >= 1
    F_STEP = T // (BN // 4)  # the fixup: rows of the tile apart for one thread (four floats of a row each)
    F_ROWS = BM // F_STEP
    F_BATCH = max(b for b in range(1, F_ROWS + 1) if F_ROWS % b == 0 and b * SPLIT <= max(16, SPLIT))
    assert BM % F_STEP == 0  # F_BATCH rows: up to sixteen 16-byte loads in flight per thread

    @jit(max_registers=cfg.max_registers)
    @unrolled
    def sgemm_two_loops(A, B, C, alpha, beta, k_chunk, W, counters):  # W, counters: fixup's only
        sA0 = cuda.shared.array((BK, A_ROW), float32)
        sA1 = cuda.shared.array((BK, A_ROW), float32)
        sB0 = cuda.shared.array((BK, BN), float32)
        sB1 = cuda.shared.array((BK, BN), float32)
        tid = cuda.threadIdx.x
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        M, K = A.shape
        N = B.shape[1]
        k_begin = cuda.blockIdx.z * k_chunk
        k_end = min(K, k_begin + k_chunk)
        warp, lane = tid // 32, tid % 32
        a_base = (warp // (BN // WN)) * WM + (lane // LN) * 4
        b_base = (warp % (BN // WN)) * WN + (lane % LN) * 4
        if static(GROUPED):
            a_r = tid // (BK // 4)  # rows a_r + i * A_STEP of the A tile, k a_c .. a_c + 3
            a_c = (tid % (BK // 4)) * 4
            b_r = tid // (BN // 4)  # rows b_r + j * B_STEP of the B tile, columns b_c .. b_c + 3
            b_c = (tid % (BN // 4)) * 4
        else:
            a_r = tid // BK
            a_k = tid % BK
            b_r = tid // BN
            b_c = tid % BN
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
        if static(GROUPED):
            xa = cuda.local.array((A_LOADS, 4), float32)
            xb = cuda.local.array((B_LOADS, 4), float32)
        else:
            xa = cuda.local.array(A_LOADS, float32)
            xb = cuda.local.array(B_LOADS, float32)

        if static(FIXUP):
            parts = cuda.local.array((F_BATCH, SPLIT, 4), float32)  # the fixup's loads in flight
            sums = cuda.local.array(4, float32)

        def stage_loads(k0):  # each float under its own predicate, 0 outside A, B or the k-range
            if static(GROUPED):
                for i in static_range(A_LOADS):
                    row = row0 + a_r + i * A_STEP
                    for d in static_range(4):
                        xa[i, d] = np.float32(0.0)
                        if (row < M) & (k0 + a_c + d < k_end):
                            xa[i, d] = load1(A, row, k0 + a_c + d)
                for j in static_range(B_LOADS):
                    k = k0 + b_r + j * B_STEP
                    for d in static_range(4):
                        xb[j, d] = np.float32(0.0)
                        if (k < k_end) & (col0 + b_c + d < N):
                            xb[j, d] = load1(B, k, col0 + b_c + d)
            else:
                for i in static_range(A_LOADS):
                    xa[i] = np.float32(0.0)
                    if a_ok[i] & (k0 + a_k < k_end):
                        xa[i] = load1(A, row0 + a_r + i * A_STEP, k0 + a_k)
                for j in static_range(B_LOADS):
                    xb[j] = np.float32(0.0)
                    if b_ok & (k0 + b_r + j * B_STEP < k_end):
                        xb[j] = load1(B, k0 + b_r + j * B_STEP, col0 + b_c)

        def stage_loads_inside(k0):  # the tile and the slice inside A and B: no predicate
            for i in static_range(A_LOADS):
                if static(A_WIDE):
                    xa[i, 0], xa[i, 1], xa[i, 2], xa[i, 3] = load4(A, row0 + a_r + i * A_STEP, k0 + a_c)
                elif static(GROUPED):
                    for d in static_range(4):
                        xa[i, d] = load1(A, row0 + a_r + i * A_STEP, k0 + a_c + d)
                else:
                    xa[i] = load1(A, row0 + a_r + i * A_STEP, k0 + a_k)
            for j in static_range(B_LOADS):
                if static(WIDE_INSIDE):
                    xb[j, 0], xb[j, 1], xb[j, 2], xb[j, 3] = load4(B, k0 + b_r + j * B_STEP, col0 + b_c)
                elif static(GROUPED):
                    for d in static_range(4):
                        xb[j, d] = load1(B, k0 + b_r + j * B_STEP, col0 + b_c + d)
                else:
                    xb[j] = load1(B, k0 + b_r + j * B_STEP, col0 + b_c)

        def stage_stores(sA, sB):  # A transposed (conflict-free with pad_a 4), B as it is
            if static(GROUPED):
                for i in static_range(A_LOADS):
                    for d in static_range(4):
                        sA[a_c + d, a_r + i * A_STEP] = xa[i, d]
                for j in static_range(B_LOADS):
                    store4(sB, b_r + j * B_STEP, b_c, xb[j, 0], xb[j, 1], xb[j, 2], xb[j, 3])
            else:
                for i in static_range(A_LOADS):
                    sA[a_k, a_r + i * A_STEP] = xa[i]
                for j in static_range(B_LOADS):
                    sB[b_r + j * B_STEP, b_c] = xb[j]

        def k_step(sA, sB, k):
            for p in static_range(TM // 4):
                a[4 * p], a[4 * p + 1], a[4 * p + 2], a[4 * p + 3] = load4(sA, k, a_base + p * LM * 4)
            for q in static_range(TN // 4):
                b[4 * q], b[4 * q + 1], b[4 * q + 2], b[4 * q + 3] = load4(sB, k, b_base + q * LN * 4)
            for i in static_range(TM):
                for j in static_range(TN):
                    acc[i, j] += a[i] * b[j]

        def compute_and_stage(sA, sB, k0, sA_next, sB_next):
            stage_loads(k0)
            for k in static_range(BK):
                k_step(sA, sB, k)
            stage_stores(sA_next, sB_next)

        def compute_and_stage_inside(sA, sB, k0, sA_next, sB_next):
            stage_loads_inside(k0)
            for k in static_range(BK):
                k_step(sA, sB, k)
            stage_stores(sA_next, sB_next)

        stage_loads(k_begin)
        stage_stores(sA0, sB0)
        cuda.syncthreads()
        k_next = k_begin  # where the predicated loop starts
        if (row0 + BM <= M) & (col0 + BN <= N):  # the whole tile inside C: the same for every thread
            while k_next + 3 * BK <= k_end:  # both slices staged in this pass lie inside the k-range
                compute_and_stage_inside(sA0, sB0, k_next + BK, sA1, sB1)
                cuda.syncthreads()
                compute_and_stage_inside(sA1, sB1, k_next + 2 * BK, sA0, sB0)
                cuda.syncthreads()
                k_next += 2 * BK
        for k0 in range(k_next, k_end, 2 * BK):
            compute_and_stage(sA0, sB0, k0 + BK, sA1, sB1)
            cuda.syncthreads()
            if k0 + BK >= k_end:
                break
            compute_and_stage(sA1, sB1, k0 + 2 * BK, sA0, sB0)
            cuda.syncthreads()
        out0 = cuda.blockIdx.z * M

        def store_parts(P):  # this part's sums into rows out0.. of P, four floats per store, up to P's width
            for i in static_range(TM):
                row = row0 + a_base + (i // 4 * LM * 4 + i % 4)
                if row < M:
                    for j in static_range(0, TN, 4):
                        col = col0 + b_base + j // 4 * LN * 4
                        if col < P.shape[1]:
                            store4(P, out0 + row, col, acc[i, j], acc[i, j + 1], acc[i, j + 2], acc[i, j + 3])

        if static(FIXUP):  # this part's sums into W; the last part of the tile to finish adds them into C
            store_parts(W)
            cuda.threadfence()  # this thread's sums visible to every block before the count says so
            cuda.syncthreads()
            arrived = cuda.shared.array(1, int32)
            if tid == 0:
                arrived[0] = cuda.atomic.add(counters, (cuda.blockIdx.y, cuda.blockIdx.x), 1)
            cuda.syncthreads()
            if arrived[0] == SPLIT - 1:  # every other part is in W
                cuda.threadfence()
                col = col0 + (tid % (BN // 4)) * 4  # a warp reads whole rows of the tile: coalesced
                if col < N:
                    for rb in static_range(0, F_ROWS, F_BATCH):  # F_BATCH rows' parts loaded before any is added
                        for r in static_range(F_BATCH):
                            row = row0 + tid // (BN // 4) + (rb + r) * F_STEP
                            for p in static_range(SPLIT):
                                for d in static_range(4):
                                    parts[r, p, d] = np.float32(0.0)
                            if row < M:
                                for p in static_range(SPLIT):
                                    parts[r, p, 0], parts[r, p, 1], parts[r, p, 2], parts[r, p, 3] = load4(W, p * M + row, col)
                        for r in static_range(F_BATCH):
                            row = row0 + tid // (BN // 4) + (rb + r) * F_STEP
                            if row < M:
                                for d in static_range(4):  # part 0 first: splitk_reduce_padded's order and bits
                                    sums[d] = parts[r, 0, d]
                                    for p in static_range(1, SPLIT):
                                        sums[d] += parts[r, p, d]
                                for d in static_range(4):
                                    if col + d < N:
                                        if beta == 0:
                                            store1(C, row, col + d, alpha * sums[d])
                                        else:
                                            store1(C, row, col + d, alpha * sums[d] + beta * load1(C, row, col + d))
                if tid == 0:
                    counters[cuda.blockIdx.y, cuda.blockIdx.x] = 0  # ready for the next call
            return
        if static(C_WIDE):  # C is the workspace (alpha and beta: the reduction's; the beta branch cost 52 bytes of spills)
            store_parts(C)
            return
        for i in static_range(TM):
            row = row0 + a_base + (i // 4 * LM * 4 + i % 4)
            if row < M:
                for j in static_range(TN):
                    col = col0 + b_base + (j // 4 * LN * 4 + j % 4)
                    if col < N:
                        if beta == 0:
                            store1(C, out0 + row, col, alpha * acc[i, j])
                        else:
                            store1(C, out0 + row, col, alpha * acc[i, j] + beta * load1(C, out0 + row, col))

    sgemm_two_loops.config = cfg
    return sgemm_two_loops
