# Exercise 00a-launch, wrong: the number of blocks rounds down, so the last elements of out are
# never written.
import gemm_lessons  # noqa: F401  (first: it chooses the GPU, or numba's CUDA simulator)
from numba import cuda


@cuda.jit
def two_x_minus_y(x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = 2 * x[i] - y[i]


def launch(x, y, out):
    threads = 128
    blocks = max(out.size // threads, 1)
    two_x_minus_y[blocks, threads](x, y, out)
