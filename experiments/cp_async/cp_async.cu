// Asynchronous copies from global to shared memory (PTX cp.async, compute capability 8.0 and
// later) as C functions a numba kernel can call: numba-cuda 0.30.4 has no intrinsic for them.
// The shared-memory pointer arrives as a generic address (cffi's ffi.from_buffer of a
// cuda.shared.array); cp.async wants a shared-space one, hence __cvta_generic_to_shared.
// Each function is "extern C" and returns an int that numba ignores (numba's ABI for foreign
// device functions: the first parameter receives the return value).

extern "C" __device__ int cp_async4(int *ret, float *smem, long long i, const float *gmem, long long j) {
    unsigned s = (unsigned)__cvta_generic_to_shared(smem + i);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" :: "r"(s), "l"(gmem + j) : "memory");
    return 0;
}

extern "C" __device__ int cp_async16(int *ret, float *smem, long long i, const float *gmem, long long j) {
    unsigned s = (unsigned)__cvta_generic_to_shared(smem + i);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(s), "l"(gmem + j) : "memory");
    return 0;
}

extern "C" __device__ int cp_async_commit(int *ret) {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
    return 0;
}

// wait until at most N groups are still in flight (N must be a constant in PTX: one function each)
extern "C" __device__ int cp_async_wait0(int *ret) { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); return 0; }
extern "C" __device__ int cp_async_wait1(int *ret) { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); return 0; }
extern "C" __device__ int cp_async_wait2(int *ret) { asm volatile("cp.async.wait_group 2;\n" ::: "memory"); return 0; }
