"""Can a numba kernel use cp.async (asynchronous global -> shared copies) through linked CUDA C?

    python3 -m experiments.cp_async.cp_async_probe [--out DIR]   -> DIR/cp-async-probe-<device>.json
    (from the repository root, on a GPU; prints what it checked; the record is kept in experiments/cp_async/)

Issue 14's last lever for large squares: cuBLAS's kernel there keeps 4 k slices in flight
(CUTLASS's stages, lesson 11), filled by copies that bypass registers.  numba-cuda 0.30.4 has no
intrinsic for them, so cp_async.cu (next to this file) wraps the PTX in C functions that
cuda.declare_device links in.  This probe only checks the mechanism, not a GEMM:
  * 4-byte copies (cp.async.ca: what a transposing A-tile load needs, one float at a time) and
    16-byte copies (cp.async.cg) into a shared array, committed as groups and waited for
    (wait_group 0, and wait_group 1 with two groups in flight), then written back: exact;
  * the SASS holds LDGSTS (the instruction cp.async becomes) and no LDG/STS pair for those copies.
"""
import argparse
import sys

import numpy as np

import gemm_lessons  # (chooses the GPU before numba.cuda is imported)

from experiments._shared import cp_async_functions, opcode_counts, record, write_record

SASS_OPS = ("LDGSTS", "LDGDEPBAR", "DEPBAR", "LDG", "STS")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=None, help="write the record into this directory")
    args = p.parse_args()
    if gemm_lessons.SIMULATOR:
        sys.exit("cp.async needs a GPU (the simulator cannot link CUDA C)")
    from numba import cuda, float32

    fns = cp_async_functions(waits=(0, 1))
    ffi, cp4, cp16, commit, wait0, wait1 = (fns[k] for k in ("ffi", "cp4", "cp16", "commit", "wait0", "wait1"))
    N = 1024  # floats per block: 256 threads, 4 floats each

    @cuda.jit
    def copy_through_shared(src, dst, wide):
        buf = cuda.shared.array((2, N), float32)  # two stages
        p = ffi.from_buffer(buf)
        g = ffi.from_buffer(src)
        t = cuda.threadIdx.x
        base = cuda.blockIdx.x * 2 * N  # this block copies 2N floats: stage 0 then stage 1
        for stage in range(2):
            if wide:
                cp16(p, stage * N + 4 * t, g, base + stage * N + 4 * t)
            else:
                for e in range(4):  # 4-byte copies, strided as a transposing load would be
                    cp4(p, stage * N + t + 256 * e, g, base + stage * N + t + 256 * e)
            commit()
        wait1()  # stage 0 has landed (stage 1 may still be in flight)
        cuda.syncthreads()
        for e in range(4):
            dst[base + t + 256 * e] = buf[0, t + 256 * e]
        wait0()
        cuda.syncthreads()
        for e in range(4):
            dst[base + N + t + 256 * e] = buf[1, t + 256 * e]

    blocks = 64
    src = np.random.default_rng(0).random(blocks * 2 * N, dtype=np.float32)
    ok, checks = True, []
    for wide in (False, True):
        d_src, d_dst = cuda.to_device(src), cuda.to_device(np.full_like(src, np.nan))
        copy_through_shared[blocks, 256](d_src, d_dst, wide)
        good = bool(np.array_equal(d_dst.copy_to_host(), src))
        ok &= good
        what = f"{'16' if wide else '4'}-byte cp.async, two groups, wait_group 1 then 0"
        checks.append({"copy": what, "exact": good})
        print(f"{what}: {'exact' if good else 'WRONG'}")
    ops = opcode_counts(copy_through_shared, SASS_OPS)
    counts = {op: sum(n for o, n in ops.items() if o.split(".")[0] == op) for op in SASS_OPS}  # widths summed
    print("SASS:", counts)
    ok &= counts["LDGSTS"] > 0
    print("cp.async through linked CUDA C:", "works" if ok else "FAILED")
    write_record("cp_async", record("cp-async-probe", {"command": "python3 -m experiments.cp_async.cp_async_probe",
                                                       "checks": checks, "sass": counts, "works": bool(ok)}), args.out)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
