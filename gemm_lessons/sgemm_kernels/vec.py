"""Lesson 05: A stored transposed in shared memory, and 128-bit loads everywhere.

Same 128x128x8 block and 8x8 results per thread as lesson 04, with three changes:
  * the A tile is stored transposed (sAT[k, m]) so a thread's 8 values of A for one k are
    contiguous, like its 8 values of B: two LDS.128 each instead of eight LDS.32;
  * global memory is read and C written 16 bytes at a time (LDG.128 / STG.128, see gemm_lessons/float4.py);
  * the k-step body is written out in full by a generator (64 named accumulators), because
    NVVM does not fully unroll the loop nest of lesson 04 and numba has no ``#pragma unroll``;
    the loop over the BK k-steps stays a loop (writing it out too was slower, see
    generate_sgemm_vec_source).
"""
import numpy as np
from numba import cuda, float32

from ..arrays import sgemm_shapes
from ..float4 import load4, require_wide_alignment, store4

# lesson-cell: begin
BM, BN, BK, TM, TN = 128, 128, 8, 8, 8
THREADS = (BM // TM) * (BN // TN)  # 256
assert BM * BK == 4 * THREADS and BK * BN == 4 * THREADS  # one float4 of each tile per thread

KERNEL_TEMPLATE = '''
@cuda.jit
def sgemm_vec(A, B, C, alpha, beta):
    sAT = cuda.shared.array((BK, BM), float32)  # A tile, transposed: sAT[k, m]
    sB = cuda.shared.array((BK, BN), float32)
    tid = cuda.threadIdx.x
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    M, K = A.shape
    N = B.shape[1]
    t_row = (tid // (BN // TN)) * {ROW_SPAN}  # first row and column of this thread's results
    t_col = (tid % (BN // TN)) * {COL_SPAN}
    a_r = tid // (BK // 4)            # the float4 of the A tile this thread stages
    a_c = (tid % (BK // 4)) * 4
    b_r = tid // (BN // 4)            # ... and of the B tile
    b_c = (tid % (BN // 4)) * 4
{zero}
    for k0 in range(0, K, BK):
        # K and N are multiples of 4, so a float4 lies wholly inside or wholly outside
        if row0 + a_r < M and k0 + a_c < K:
            x0, x1, x2, x3 = load4(A, row0 + a_r, k0 + a_c)
        else:
            x0 = x1 = x2 = x3 = np.float32(0.0)
        sAT[a_c + 0, a_r] = x0  # transposing on the way in: four 4-byte stores
        sAT[a_c + 1, a_r] = x1
        sAT[a_c + 2, a_r] = x2
        sAT[a_c + 3, a_r] = x3
        if k0 + b_r < K and col0 + b_c < N:
            y0, y1, y2, y3 = load4(B, k0 + b_r, col0 + b_c)
        else:
            y0 = y1 = y2 = y3 = np.float32(0.0)
        sB[b_r, b_c + 0] = y0  # four neighbours at a multiple of 4: one STS.128
        sB[b_r, b_c + 1] = y1
        sB[b_r, b_c + 2] = y2
        sB[b_r, b_c + 3] = y3
        cuda.syncthreads()
{inner}
        cuda.syncthreads()
{store}
'''


def source_parts(unroll_k=False, split=False, buffer_index=""):
    """The generated pieces of the kernel: zeroing 64 accumulators c_i_j, the BK k-steps of
    a slice (8+8 register values a_i and b_j, 64 fused multiply-adds each), and the store of
    C.  ``buffer_index`` is put in front of every shared-memory index (lesson 07's second
    buffer).  With unroll_k, the k-steps are written out too; measured on an H100 that was
    slower: with k a constant in every index, NVVM no longer merged the shared loads into
    LDS.128 (lesson 05).  With split, a thread's 8x8 results are four 4x4 pieces, BM/2 rows and
    BN/2 columns apart (lesson 06): then 8 neighbouring threads read 128 contiguous bytes."""
    I = range(TM)
    J = range(TN)
    # offset of the thread's i-th row (j-th column) from t_row (t_col)
    row_off = [(i % 4) + (i // 4) * (BM // 2) for i in I] if split else list(I)
    col_off = [(j % 4) + (j // 4) * (BN // 2) for j in J] if split else list(J)
    zero = "\n".join(f"    c_{i}_{j} = np.float32(0.0)" for i in I for j in J)
    b = buffer_index

    def k_step(k, indent):
        return [indent + f"a_{i} = sAT[{b}{k}, t_row + {row_off[i]}]" for i in I] + \
               [indent + f"b_{j} = sB[{b}{k}, t_col + {col_off[j]}]" for j in J] + \
               [indent + f"c_{i}_{j} += a_{i} * b_{j}" for i in I for j in J]

    if unroll_k:
        inner = "\n".join(line for k in range(BK) for line in k_step(k, " " * 8))
    else:
        inner = "\n".join(["        for k in range(BK):"] + k_step("k", " " * 12))
    store = []
    for i in I:
        r = row_off[i]
        store.append(f"    if t_row + row0 + {r} < M:")
        for j in range(0, TN, 4):
            c = col_off[j]
            scaled = ", ".join(f"alpha * c_{i}_{j + d}" for d in range(4))
            mixed = ", ".join(f"alpha * c_{i}_{j + d} + beta * o{d}" for d in range(4))
            store += [
                f"        if col0 + t_col + {c} < N:",
                "            if beta == 0:",
                f"                store4(C, row0 + t_row + {r}, col0 + t_col + {c}, {scaled})",
                "            else:",
                f"                o0, o1, o2, o3 = load4(C, row0 + t_row + {r}, col0 + t_col + {c})",
                f"                store4(C, row0 + t_row + {r}, col0 + t_col + {c}, {mixed})",
            ]
    spans = dict(ROW_SPAN=4 if split else "TM", COL_SPAN=4 if split else "TN")
    return zero, inner, "\n".join(store), spans


def generate_sgemm_vec_source(unroll_k=False, split=False):
    zero, inner, store, spans = source_parts(unroll_k, split)
    return KERNEL_TEMPLATE.format(zero=zero, inner=inner, store=store, **spans)


def make_sgemm_vec(unroll_k=False, split=False):
    namespace = dict(cuda=cuda, float32=float32, np=np, load4=load4, store4=store4,
                     BM=BM, BN=BN, BK=BK, TM=TM, TN=TN)
    exec(compile(generate_sgemm_vec_source(unroll_k, split), "<sgemm_vec generated>", "exec"), namespace)
    return namespace["sgemm_vec"]
# lesson-cell: end


sgemm_vec = make_sgemm_vec()
sgemm_vec_unrolled_k = make_sgemm_vec(unroll_k=True)
sgemm_vec_split = make_sgemm_vec(split=True)


def sgemm(A, B, C, alpha=1.0, beta=0.0, kernel=sgemm_vec):
    M, N, K = sgemm_shapes(A, B, C)
    require_wide_alignment(("A", A), ("B", B), ("C", C))
    grid = ((N + BN - 1) // BN, (M + BM - 1) // BM)
    kernel[grid, THREADS](A, B, C, np.float32(alpha), np.float32(beta))
