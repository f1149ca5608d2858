"""Primer: each block reverses its own slice of the array, through shared memory."""
import numpy as np
from numba import cuda, float32

THREADS = 128  # threads per block = values per slice

# lesson-cell: begin
@cuda.jit
def reverse_slices(x, out):
    tile = cuda.shared.array(THREADS, float32)  # one array per block, seen by all its threads
    t = cuda.threadIdx.x
    start = cuda.blockIdx.x * THREADS
    n = min(THREADS, x.size - start)  # values in this block's slice (the last one may be short)
    if t < n:
        tile[t] = x[start + t]  # each thread stores one value ...
    cuda.syncthreads()  # ... and waits until every thread of the block has stored its value
    if t < n:
        out[start + t] = tile[n - 1 - t]  # then reads a value another thread stored
# lesson-cell: end


def reference(x, threads=THREADS):
    """The same on the host: every slice of ``threads`` values reversed in place."""
    out = np.empty_like(x)
    for s in range(0, x.size, threads):
        out[s:s + threads] = x[s:s + threads][::-1]
    return out


def launch(x, out, kernel=reverse_slices):
    kernel[(x.size + THREADS - 1) // THREADS, THREADS](x, out)
    return out
