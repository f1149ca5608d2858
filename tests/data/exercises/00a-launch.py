# Exercise 00a-launch, the teacher notebook's solution (lessons/00a_primer.py):
# python -m gemm_lessons.check 00a-launch tests/data/exercises/00a-launch.py
import gemm_lessons  # noqa: F401  (first: it chooses the GPU, or numba's CUDA simulator)
from numba import cuda


@cuda.jit
def two_x_minus_y(x, y, out):
    ### BEGIN SOLUTION
    i = cuda.grid(1)
    if i < out.size:
        out[i] = 2 * x[i] - y[i]
    ### END SOLUTION


def launch(x, y, out):
    ### BEGIN SOLUTION
    threads = 128
    blocks = (out.size + threads - 1) // threads
    two_x_minus_y[blocks, threads](x, y, out)
    ### END SOLUTION
