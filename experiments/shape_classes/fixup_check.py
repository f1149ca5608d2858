"""make_grouped(fixup=S) called twice per shape and split (the count must be back at zero for the
second call), each result checked against float64: the calls compute-sanitizer ran.

    compute-sanitizer --tool memcheck --report-api-errors no --kernel-name kns=two_loops \
        python3 -m experiments.shape_classes.fixup_check

(H200, 2026-11-29, commit f5f82ef: the checks at 999x1001x1003 split 2 and 4 and 131x70x203 split
2 passed; the run reached its time limit before the last check and the sanitizer's summary line.)
"""
import sys

import numpy as np

import gemm_lessons  # noqa: F401  (chooses the GPU before numba.cuda is imported)
from gemm_lessons.library import dispatch

from . import interior_probe, ragged_kernels

SHAPES = [(999, 1001, 1003), (131, 70, 203)]


def main():
    from numba import cuda

    rng = np.random.default_rng(3)
    for M, N, K in SHAPES:
        a = rng.standard_normal((M, K)).astype(np.float32)
        b = rng.standard_normal((K, N)).astype(np.float32)
        A, B = cuda.to_device(a), cuda.to_device(b)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        for parts in (2, 4):
            C = cuda.to_device(np.full((M, N), np.nan, np.float32))
            fn = interior_probe.split_call(ragged_kernels.make_grouped(dispatch.TILES["128x128"], fixup=parts), "128x128",
                                           parts, A, B, C, two_loops=True, fixup=True)
            fn()
            fn()
            err = np.abs(C.copy_to_host() - ref).max() / np.abs(ref).max()
            print(M, N, K, "split", parts, "rel err", err, flush=True)
            if not err < 1e-5:
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
