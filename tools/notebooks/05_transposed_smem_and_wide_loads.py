from nbtools import SETUP, code, md, src

CELLS = [
md("""
# 05 · Transposed shared memory and 128-bit loads

**Where we are.** Lesson 04's outer product reads 16 values per 64 FMAs, but each value
arrives through its own 4-byte instruction: 16 `LDS` per k-step, plus 8 4-byte global loads
per thread per slice, and the compiler unrolled only part of the k-loop.
"""),
code(SETUP),
code("""
measure.recorded(["reg2d", "vec", "cublas"])
"""),
md("""
## Idea: make a thread's values contiguous, then move 16 bytes at a time

A thread's 8 values of B for one k are already neighbours in `sB[k, :]`. Its 8 values of A are
not: in `sA[m, k]` they are a column, BK floats apart. Store the A tile **transposed**,
`sAT[k, m]`, and they become neighbours too. Then:

* shared memory: 8 + 8 values per k-step arrive in four 16-byte loads (`LDS.128`) instead of
  sixteen 4-byte ones;
* global memory: each thread stages one float4 (16 bytes) of A and one of B per slice
  (`LDG.128`); the A values are scattered into `sAT` on the way in;
* C is written 16 bytes at a time (`STG.128`).
"""),
code("""
figures.transposed_tile();
"""),
md("""
## How to get 128-bit instructions from numba

* **Shared memory**: nothing special. Shared arrays are aligned, so when four loads hit
  `sAT[k, m]`, `sAT[k, m+1]`, ... with `m` visibly a multiple of 4, the compiler (NVVM's
  load/store vectorizer) merges them into one `LDS.128`.
* **Global memory**: numba tells LLVM nothing about the alignment of an array's data pointer,
  so four neighbouring global loads stay four `LDG.E`. `gemm_lessons/float4.py` adds two
  small numba *intrinsics*, `load4` and `store4`, that emit one `<4 x float>` load or store
  with 16-byte alignment. The price: every row must start on a 16-byte boundary, so this rung
  requires K and N to be multiples of 4, and says so (ValueError) otherwise.
* **Unrolling**: numba has no `#pragma unroll`, and NVVM did not unroll lesson 04's loop nest
  completely. So the k-step body is *generated*: a short Python function writes the 64
  accumulators `c_i_j`, the 16 register values and the 64 FMAs out as source text, and
  `exec` + `cuda.jit` compile it. Named scalars instead of a local array also leave the
  compiler no doubt that they are registers. The loop over the 8 k-steps of a slice stays a
  loop: writing it out as well (`unroll_k=True`) is measured below, and it is slower.
"""),
code("""
from gemm_lessons.float4 import load4, store4  # the 16-byte load/store intrinsics
"""),
src("gemm_lessons/sgemm_kernels/vec.py"),
code("""
print("\\n".join(generate_sgemm_vec_source().splitlines()[:40]))
print("    ...")
"""),
code("""
from gemm_lessons.sgemm_kernels import vec

my_vec = make_sgemm_vec()
gl.check_all(functools.partial(vec.sgemm, kernel=my_vec), name="vec",
             shapes=[(68, 44, 36, 1.0, 0.0), (36, 72, 20, 1.5, -0.5)] if gl.SIMULATOR else
                    [(68, 44, 36, 1.0, 0.0), (516, 1028, 260, -1.0, 0.5), (4, 4, 4, 2.0, 1.0)])
"""),
code("""
A = cuda.to_device(np.ones((8, 6), np.float32))
B = cuda.to_device(np.ones((6, 8), np.float32))
try:
    vec.sgemm(A, B, cuda.device_array((8, 8), np.float32))
except ValueError as e:
    print("ValueError:", e)
""", check=True),
md("""
### Look inside with the bank tracer

One block (K = 8) on the simulator, with the shared loads merged into 16-byte accesses as the
compiler does (`merge=("ld",)`; the SASS below confirms `LDS.128`). The `sAT` reads are
conflict-free, but the `sB` reads are not: 8 threads of a quarter warp read 16 bytes each, 32
bytes apart, two to a bank. Lesson 06 removes that.
"""),
code("""
from gemm_lessons import banks
vec_trace = banks.trace_rung("vec", (128, 128, 8), merge=("ld",))
vec_trace
"""),
code("""
t = vec_trace.totals("ld")
print(f"loads: {t['instructions']} warp instructions, {t['wavefronts']} wavefronts, {t['conflicts']} from conflicts")
""", check=True),
md("""
## Measure
"""),
code("""
my_vec_unrolled_k = make_sgemm_vec(unroll_k=True)
table = measure.compare({"vec": functools.partial(vec.sgemm, kernel=my_vec),
                         "vec_unrolled_k": functools.partial(vec.sgemm, kernel=my_vec_unrolled_k),
                         "reg2d": ladder.SGEMM["reg2d"]}, size=(4096, 4096, 4096))
table
"""),
code("""
print(f"vec vs reg2d: {table.speedup('vec', 'reg2d'):.2f}x ({table.source})")
"""),
md("""
## Look inside: the SASS proves the wide loads

Count the instructions by width: `LDG.E.128` (global float4 loads; the count includes the
loads of C for beta != 0), `LDS.128` (shared float4 loads), `STG.E.128` (float4 stores of C)
and `FFMA`, with 0 bytes of local memory. Then compare with the fully unrolled variant: its
`FFMA` count shows all eight k-steps written out, but with k a constant in every index the
compiler no longer merged the shared loads, so every value arrives through a 4-byte `LDS`.
More unrolling is not automatically better: read the SASS, then measure.
"""),
code("""
kernels = {"vec": my_vec, "vec_unrolled_k": my_vec_unrolled_k}
inspect_kernel.compiler_facts(kernels, threads={name: 256 for name in kernels})
"""),
md("""
## Exercise 05-stage-a
Each of the 256 threads stages one float4 of the 128x8 A tile. Write `stage_a(tid)` returning
the (row, first column) of that float4 within the tile, so that neighbouring threads read
neighbouring 16-byte pieces of a row.
"""),
code("""
def stage_a(tid):
    ### BEGIN SOLUTION
    return tid // 2, (tid % 2) * 4
    ### END SOLUTION

exercises.check("05-stage-a", stage_a)
""", check=True),
md("""
## Takeaway

* Layout first: transposing the A tile on its way into shared memory turns a thread's strided
  values into contiguous ones, which is what makes 16-byte loads possible.
* From numba: shared-memory `LDS.128` comes for free with aligned, visibly contiguous indices;
  global `LDG.128`/`STG.128` needs a tiny intrinsic; full unrolling needs generated source.
  Always confirm in the SASS.
* Next (lesson 06): the banks of shared memory, and why *which* threads read *which*
  addresses in the same instruction still matters.
"""),
]
