"""The last rung with S shared stages filled by cp.async, against the library's 128x128 and cuBLAS.

    python3 -m experiments.multistage.multistage_probe [--out DIR]  -> DIR/multistage-probe-<device>.json
    ncu --clock-control none --profile-from-start off --csv --print-units base \
        --metrics "$(python3 -m experiments.ncu_vs_cublas.ncu_vs_cublas metrics)" \
        python3 -m experiments.multistage.multistage_probe --profile > ncu-multistage-<device>.csv
    (from the repository root, on a GPU; both kept in experiments/multistage/)

Lesson 11 read cuBLAS's kernel for large squares as CUTLASS's `256x128_8x4`: 4 stages, that is
four k slices in shared memory at once, filled by asynchronous copies that bypass registers
(`align1`: 4 bytes at a time).  The last rung (warptile.py) instead loads the next slice into
registers while it computes, then stores it into its second buffer.  experiments/cp_async/
showed that a numba kernel can issue cp.async through linked CUDA C (cp_async/cp_async.cu).
This probe writes the last rung's tile (128x128x8, warp tiles 32x64, 8x8 results per thread, 256
threads, 128 registers) with S = 3 and 4 stages:

    prologue: slices 0 .. S-2 requested (one commit group each)
    for each slice kt (S per trip of the loop, so that each stage's offset is a constant):
                        wait until slice kt has landed (at most S-2 groups in flight),
                        barrier (every warp is also done with slice kt-1's stage),
                        request slice kt+S-1 into that stage, commit,
                        the BK k-steps from slice kt's stage
    the A tile arrives transposed (sA[k, m]): four 4-byte copies per thread per slice;
    the B tile as one 16-byte copy per thread.

An experiment, not a kernel of the package: it takes only M and N multiples of 128 and K of 8
(no edge guards).  Checked against float64 (every element at 1024 x 1152 x 768, a sample at each
timed size), then timed back to back with cuBLAS before and after, as experiments/bigtile/.
"""
import argparse
import functools
import sys
import time

import numpy as np

import gemm_lessons  # noqa: F401  (chooses the GPU before numba.cuda is imported)
from gemm_lessons.library import dispatch
from gemm_lessons.instruments import profiler
from gemm_lessons.measure import cublas
from gemm_lessons.core.float4 import load4, store4
from gemm_lessons.kernels.sgemm import warptile
from gemm_lessons.runs.shapes import check_product, random_device_matrix
from gemm_lessons.core.unroll import static_range, unrolled

from experiments._shared import cp_async_functions, opcode_counts, poisoned, record, time_squares, write_record

BM = BN = 128
BK, WM, WN, TM, TN, THREADS, PAD = 8, 32, 64, 8, 8, 256, 4
LM, LN = WM // TM, WN // TN  # 4 x 8 lanes
A_ROW = BM + PAD
SIZES = [2048, 4096, 8192, 16384]
CHECK_SHAPE = (1024, 1152, 768)


def make_multistage(S):
    from numba import cuda, float32

    fns = cp_async_functions(waits=(S - 2,))
    ffi, cp4, cp16, commit = fns["ffi"], fns["cp4"], fns["cp16"], fns["commit"]
    wait = fns[f"wait{S - 2}"]  # slice kt landed
    ROWS = S * BK  # shared rows: S stages of BK

    @cuda.jit(max_registers=128)
    @unrolled
    def sgemm_multistage(A, B, C, alpha, beta):
        sA = cuda.shared.array((ROWS, A_ROW), float32)  # stage s: rows s*BK .. s*BK+BK-1, A transposed
        sB = cuda.shared.array((ROWS, BN), float32)
        pA, pB = ffi.from_buffer(sA), ffi.from_buffer(sB)
        gA, gB = ffi.from_buffer(A), ffi.from_buffer(B)
        tid = cuda.threadIdx.x
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        M, K = A.shape
        N = B.shape[1]
        warp, lane = tid // 32, tid % 32
        a_base = (warp // (BN // WN)) * WM + (lane // LN) * 4
        b_base = (warp % (BN // WN)) * WN + (lane % LN) * 4
        a_r, a_c = tid // (BK // 4), (tid % (BK // 4)) * 4  # A: row a_r of the tile, k a_c..a_c+3
        b_r, b_c = tid // (BN // 4), (tid % (BN // 4)) * 4  # B: row b_r, columns b_c..b_c+3
        acc = cuda.local.array((TM, TN), float32)
        for i in static_range(TM):
            for j in static_range(TN):
                acc[i, j] = float32(0.0)
        a = cuda.local.array(TM, float32)
        b = cuda.local.array(TN, float32)
        slices = K // BK

        def request(kt, s):  # slice kt into stage s (kt % S), without registers
            for d in static_range(4):
                cp4(pA, (s * BK + a_c + d) * A_ROW + a_r, gA, (row0 + a_r) * K + kt * BK + a_c + d)
            cp16(pB, (s * BK + b_r) * BN + b_c, gB, (kt * BK + b_r) * N + col0 + b_c)

        for kt in static_range(S - 1):  # prologue
            if kt < slices:
                request(kt, kt)
            commit()
        # S slices per trip, so that every stage's place in shared memory is a constant (as
        # warptile's two buffers are two arrays): runtime stage offsets cost the first form
        for kt0 in range(0, slices, S):
            for s in static_range(S):
                if kt0 + s < slices:
                    wait()
                    cuda.syncthreads()
                    if kt0 + s + S - 1 < slices:
                        request(kt0 + s + S - 1, (s + S - 1) % S)
                    commit()
                    for k in static_range(BK):
                        for p in static_range(TM // 4):
                            a[4 * p], a[4 * p + 1], a[4 * p + 2], a[4 * p + 3] = load4(sA, s * BK + k,
                                                                                      a_base + p * LM * 4)
                        for q in static_range(TN // 4):
                            b[4 * q], b[4 * q + 1], b[4 * q + 2], b[4 * q + 3] = load4(sB, s * BK + k,
                                                                                      b_base + q * LN * 4)
                        for i in static_range(TM):
                            for j in static_range(TN):
                                acc[i, j] += a[i] * b[j]
        for i in static_range(TM):
            row = row0 + a_base + (i // 4 * LM * 4 + i % 4)
            for j in static_range(0, TN, 4):
                col = col0 + b_base + j // 4 * LN * 4
                if beta == 0:
                    store4(C, row, col, alpha * acc[i, j], alpha * acc[i, j + 1], alpha * acc[i, j + 2],
                           alpha * acc[i, j + 3])
                else:
                    o0, o1, o2, o3 = load4(C, row, col)
                    store4(C, row, col, alpha * acc[i, j] + beta * o0, alpha * acc[i, j + 1] + beta * o1,
                           alpha * acc[i, j + 2] + beta * o2, alpha * acc[i, j + 3] + beta * o3)

    def run(A, B, C):
        M, N = C.shape
        sgemm_multistage[(N // BN, M // BM), THREADS](A, B, C, np.float32(1.0), np.float32(0.0))

    run.kernel = sgemm_multistage
    return run


def library_128():
    kernel = warptile.kernel_for(dispatch.TILES["128x128"])

    def run(A, B, C):
        warptile.sgemm(A, B, C, kernel=kernel)

    run.kernel = kernel
    return run


SASS_KEEP = ("CALL", "RET", "LDGSTS", "LDGDEPBAR", "DEPBAR", "LDS.128", "LDS", "STS", "LDG.E.128", "FFMA", "BAR.SYNC",
             "STL", "LDL")  # opcodes counted (CALL: a foreign function not inlined)


def profile(n=4096):
    """Each kernel and cuBLAS once at n^3 between cuda.profile_start and profile_stop (for ncu
    --profile-from-start off), after a warm-up; and each kernel's SASS opcode counts."""
    from numba import cuda

    rng = np.random.default_rng(5)
    A_d, _ = random_device_matrix(n, n, rng)
    B_d, _ = random_device_matrix(n, n, rng)
    C = cuda.device_array((n, n), np.float32)
    runs = {"library 128x128": library_128(), "3 stages, cp.async": make_multistage(3),
            "4 stages, cp.async": make_multistage(4)}
    calls = {name: functools.partial(run, A_d, B_d, C) for name, run in runs.items()}
    calls["cublas"] = lambda: cublas.sgemm(A_d, B_d, C)  # the kernel each is held against
    profiler.profile_calls(calls)
    for name, run in runs.items():
        print(f"# sass {name}: {opcode_counts(run.kernel, SASS_KEEP)}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=None)
    p.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    p.add_argument("--profile", action="store_true", help="each kernel once at 4096^3 for ncu, and SASS counts")
    args = p.parse_args()
    if gemm_lessons.SIMULATOR:
        sys.exit("the multistage probe needs a GPU (cp.async through linked CUDA C)")
    if args.profile:
        return profile()

    t_start = time.perf_counter()
    rng = np.random.default_rng(23)
    runs = {"library 128x128": library_128(), "3 stages, cp.async": make_multistage(3),
            "4 stages, cp.async": make_multistage(4)}
    compiled, failures = {}, []
    M, N, K = CHECK_SHAPE
    A_d, A = random_device_matrix(M, K, rng)
    B_d, B = random_device_matrix(K, N, rng)
    for name, run in runs.items():
        C = poisoned(M, N)
        t = time.perf_counter()
        run(A_d, B_d, C)
        ok, err, how = check_product(A, B, C.copy_to_host())
        regs = run.kernel.get_regs_per_thread()
        compiled[name] = {"check_shape": list(CHECK_SHAPE), "correct": ok, "rel_error": err, "checked": how,
                          "first_call_s": round(time.perf_counter() - t, 1),
                          "registers": regs if isinstance(regs, int) else next(iter(regs.values()), None)
                          if isinstance(regs, dict) else None}
        if not ok:
            failures.append((name, CHECK_SHAPE))
        print(f"{name:22s} ok {ok} {err:.2e}  registers {compiled[name]['registers']}", flush=True)
    rows = time_squares(runs, args.sizes, rng, failures)
    rec = record("multistage-probe", {"command": "python3 -m experiments.multistage.multistage_probe",
                                      "pct_of": "mean of the cuBLAS medians before and after", "compiled": compiled,
                                      "rows": rows, "failures": failures}, t_start)
    write_record("multistage", rec, args.out)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
