"""The padded plan's two copies, A's and B's, in one launch.

Where K is not a multiple of 4 the padded plan copies both A and B (pad_copy.py).  Launched one
after the other, the second copy waits for the first to finish and the GPU idles between them;
here the grid's z picks the pair, z = 0 A's and z = 1 B's, and both copies run side by side from
one launch: three launches for the split plan instead of four.  Near 1000 (999x1001x1003, an
H200 under Nsight Compute) both copies take 6.5-6.6 µs from one launch, one after the other
4.7-4.9 µs each (experiments/shape_classes/near_1000_probe.py).  Each
block does what a block of pad_copy does (tests/library: the same zero-padded copies); the code
is pad_copy's, written out again because numba types a device-function call through the current
GPU, and every library kernel must also compile offline (gemm_lessons.runs.arch_facts).
"""
import numpy as np
from numba import cuda

from gemm_lessons.core.float4 import load1, store4
from gemm_lessons.kernels.library import pad_copy


@cuda.jit
def pad_copy_pair(src0, dst0, src1, dst1):
    src, dst = (src0, dst0) if cuda.blockIdx.z == 0 else (src1, dst1)
    rows, cols = src.shape
    col = 4 * (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x)  # dst's columns col .. col + 3
    if col >= dst.shape[1]:
        return
    for row in range(cuda.blockIdx.y, dst.shape[0], cuda.gridDim.y):
        v0 = v1 = v2 = v3 = np.float32(0.0)  # zeros outside the source
        if row < rows:
            if col < cols:
                v0 = load1(src, row, col)
            if col + 1 < cols:
                v1 = load1(src, row, col + 1)
            if col + 2 < cols:
                v2 = load1(src, row, col + 2)
            if col + 3 < cols:
                v3 = load1(src, row, col + 3)
        store4(dst, row, col, v0, v1, v2, v3)  # one 16-byte store


def grid(shape0, shape1):
    """The launch's blocks for destinations of shapes shape0 and shape1 (columns multiples of 4):
    enough for the larger of each side (the extra threads of the smaller copy return at once)."""
    (x0, y0), (x1, y1) = pad_copy.grid(*shape0), pad_copy.grid(*shape1)
    return max(x0, x1), max(y0, y1), 2
