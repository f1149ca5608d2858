"""Primer: out = a*x + y, one thread per element, launched by hand."""
import numpy as np
from numba import cuda

# lesson-cell: begin
@cuda.jit
def saxpy(a, x, y, out):
    i = cuda.grid(1)  # this thread's index in the whole grid: blockIdx.x * blockDim.x + threadIdx.x
    if i < out.size:  # the grid holds whole blocks, so it can reach past the end: those threads do nothing
        out[i] = a * x[i] + y[i]
# lesson-cell: end

THREADS = 256  # threads per block


def blocks_for(n, threads=THREADS):
    """The smallest number of blocks of ``threads`` threads that covers ``n`` elements."""
    return (n + threads - 1) // threads


def launch(a, x, y, out, threads=THREADS, kernel=saxpy):
    """saxpy on device (or, on the simulator, host) arrays: the launch the primer writes by hand."""
    kernel[blocks_for(out.size, threads), threads](np.float32(a), x, y, out)
    return out
