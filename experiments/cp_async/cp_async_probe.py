"""Can a numba kernel use cp.async (asynchronous global -> shared copies) through linked CUDA C?

    python3 tools/cp_async_probe.py        (on a GPU; prints what it checked)

Issue 14's last lever for large squares: cuBLAS's kernel there keeps 4 k slices in flight
(CUTLASS's stages, lesson 11), filled by copies that bypass registers.  numba-cuda 0.30.4 has no
intrinsic for them, so tools/cp_async/cp_async.cu wraps the PTX in C functions that
cuda.declare_device links in.  This probe only checks the mechanism, not a GEMM:
  * 4-byte copies (cp.async.ca: what a transposing A-tile load needs, one float at a time) and
    16-byte copies (cp.async.cg) into a shared array, committed as groups and waited for
    (wait_group 0, and wait_group 1 with two groups in flight), then written back: exact;
  * the SASS holds LDGSTS (the instruction cp.async becomes) and no LDG/STS pair for those copies.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import numpy as np  # noqa: E402

import gemm_lessons  # noqa: E402  (chooses the GPU before numba.cuda is imported)

CU = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cp_async", "cp_async.cu")


def main():
    if gemm_lessons.SIMULATOR:
        sys.exit("cp.async needs a GPU (the simulator cannot link CUDA C)")
    import cffi
    from numba import cuda, float32

    ffi = cffi.FFI()
    sig = "int32(CPointer(float32), int64, CPointer(float32), int64)"
    cp4 = cuda.declare_device("cp_async4", sig, link=CU)
    cp16 = cuda.declare_device("cp_async16", sig, link=CU)
    commit = cuda.declare_device("cp_async_commit", "int32()", link=CU)
    wait0 = cuda.declare_device("cp_async_wait0", "int32()", link=CU)
    wait1 = cuda.declare_device("cp_async_wait1", "int32()", link=CU)
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
    ok = True
    for wide in (False, True):
        d_src, d_dst = cuda.to_device(src), cuda.to_device(np.full_like(src, np.nan))
        copy_through_shared[blocks, 256](d_src, d_dst, wide)
        good = np.array_equal(d_dst.copy_to_host(), src)
        ok &= good
        print(f"{'16' if wide else '4'}-byte cp.async, two groups, wait_group 1 then 0: {'exact' if good else 'WRONG'}")
    sass = copy_through_shared.inspect_sass()
    sass = next(iter(sass.values())) if isinstance(sass, dict) else sass
    import re
    ops = re.findall(r"^\s*/\*[0-9a-f]+\*/\s+(?:@!?P\d\s+)?([A-Z][A-Z0-9_]*)", sass, re.M)  # opcodes
    counts = {op: ops.count(op) for op in ("LDGSTS", "LDGDEPBAR", "DEPBAR", "LDG", "STS")}
    print("SASS:", counts)
    ok &= counts["LDGSTS"] > 0
    print("cp.async through linked CUDA C:", "works" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
