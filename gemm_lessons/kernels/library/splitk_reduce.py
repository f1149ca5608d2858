"""Split-K's second kernel: C = alpha * (sum of the partial products) + beta * C.

any_shape.py with several blocks along z writes each block's partial sum over its part of k
into a workspace W of (splits*M) x N floats: rows s*M .. s*M + M-1 hold part s.  This kernel
adds the parts for each element of C, in a fixed order (part 0 first), and applies alpha and
beta once.  Why a workspace and a second kernel rather than atomicAdd into C: the result is the
same, bit for bit, on every call (float atomics add in whatever order blocks finish), C needs no
pre-pass to scale it by beta first, and the extra traffic, (splits + 2) * M * N floats, is small
next to the product itself in the shapes where splitting pays (small M*N, large K).

One thread per element of C: consecutive threads take consecutive columns (coalesced reads of
every part and of C); the grid's y covers rows, a grid-stride loop the rows past 65535.
"""
from numba import cuda

THREADS = 128  # per block, along a row of C


# lesson-cell: begin
@cuda.jit
def sgemm_splitk_reduce(W, C, alpha, beta):
    M, N = C.shape
    splits = W.shape[0] // M
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if col >= N:
        return
    for row in range(cuda.blockIdx.y, M, cuda.gridDim.y):
        total = W[row, col]
        for s in range(1, splits):
            total += W[s * M + row, col]
        if beta == 0:  # C is not read (it may hold anything, NaN included)
            C[row, col] = alpha * total
        else:
            C[row, col] = alpha * total + beta * C[row, col]
# lesson-cell: end


def grid(M, N):
    return (N + THREADS - 1) // THREADS, min(M, 65535)
