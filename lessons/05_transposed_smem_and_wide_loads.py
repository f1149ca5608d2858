# %% [markdown]
# # 05 · Transposed shared memory and 128-bit loads
#
# **Where we are.** Lesson 04's outer product reads 16 values per 64 FMAs, but each value
# arrives through its own 4-byte instruction: 16 `LDS` per k-step, plus 8 4-byte global loads
# per thread per slice, and the compiler unrolled only part of the k-loop.

# %%
import gemm_lessons as gl  # first: it chooses the GPU, or numba's CUDA simulator when there is none
from gemm_lessons import counting, exercises, figures, inspect_kernel, ladder, measure, plots, results
from gemm_lessons.jit import jit  # cuda.jit that also takes GPU-only options (max_registers) on the simulator
import functools
import numpy as np
from numba import cuda, float32
# %matplotlib inline
print(gl.banner())

# %%
measure.recorded(["reg2d", "vec", "cublas"])

# %% [markdown]
# ## Idea: make a thread's values contiguous, then move 16 bytes at a time
#
# A thread's 8 values of B for one k are already neighbours in `sB[k, :]`. Its 8 values of A are
# not: in `sA[m, k]` they are a column, BK floats apart. Store the A tile **transposed**,
# `sAT[k, m]`, and they become neighbours too. Then:
#
# * shared memory: 8 + 8 values per k-step arrive in four 16-byte loads (`LDS.128`) instead of
#   sixteen 4-byte ones;
# * global memory: each thread stages one float4 (16 bytes) of A and one of B per slice
#   (`LDG.128`); the A values are scattered into `sAT` on the way in;
# * C is written 16 bytes at a time (`STG.128`).

# %%
figures.transposed_tile();

# %% [markdown]
# ## How to get 128-bit instructions from numba
#
# * **Shared memory**: nothing special. Shared arrays are aligned, so when four loads hit
#   `sAT[k, m]`, `sAT[k, m+1]`, ... with `m` visibly a multiple of 4, the compiler (NVVM's
#   load/store vectorizer) merges them into one `LDS.128`.
# * **Global memory**: numba tells LLVM nothing about the alignment of an array's data pointer,
#   so four neighbouring global loads stay four `LDG.E`. `gemm_lessons/float4.py` adds two
#   small numba *intrinsics*, `load4` and `store4`, that emit one `<4 x float>` load or store
#   with 16-byte alignment. The price: every row must start on a 16-byte boundary, so this rung
#   requires K and N to be multiples of 4, and says so (ValueError) otherwise.
# * **Unrolling**: numba has no `#pragma unroll`, and NVVM did not unroll lesson 04's loop nest
#   completely. So the k-step body is *generated*: a short Python function writes the 64
#   accumulators `c_i_j`, the 16 register values and the 64 FMAs out as source text, and
#   `exec` + `cuda.jit` compile it. Named scalars instead of a local array also leave the
#   compiler no doubt that they are registers. The loop over the 8 k-steps of a slice stays a
#   loop: writing it out as well (`unroll_k=True`) is measured below, and it is slower.

# %%
from gemm_lessons.float4 import load4, store4  # the 16-byte load/store intrinsics

# %%
# source: gemm_lessons/sgemm_kernels/vec.py  (the package runs this same code; a test keeps the two identical)
BM, BN, BK, TM, TN = 128, 128, 8, 8, 8
THREADS = (BM // TM) * (BN // TN)  # 256
assert BM * BK == 4 * THREADS and BK * BN == 4 * THREADS  # one float4 of each tile per thread

KERNEL_TEMPLATE = '''
@cuda.jit
def sgemm_vec(A, B, C, alpha, beta):
    sAT = cuda.shared.array((BK, BM), float32)  # A tile, transposed: sAT[k, m]
    sB = cuda.shared.array((BK, BN), float32)
    tid = cuda.threadIdx.x
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    M, K = A.shape
    N = B.shape[1]
    t_row = (tid // (BN // TN)) * {ROW_SPAN}  # first row and column of this thread's results
    t_col = (tid % (BN // TN)) * {COL_SPAN}
    a_r = tid // (BK // 4)            # the float4 of the A tile this thread stages
    a_c = (tid % (BK // 4)) * 4
    b_r = tid // (BN // 4)            # ... and of the B tile
    b_c = (tid % (BN // 4)) * 4
{zero}
    for k0 in range(0, K, BK):
        # K and N are multiples of 4, so a float4 lies wholly inside or wholly outside
        if row0 + a_r < M and k0 + a_c < K:
            x0, x1, x2, x3 = load4(A, row0 + a_r, k0 + a_c)
        else:
            x0 = x1 = x2 = x3 = np.float32(0.0)
        sAT[a_c + 0, a_r] = x0  # transposing on the way in: four 4-byte stores
        sAT[a_c + 1, a_r] = x1
        sAT[a_c + 2, a_r] = x2
        sAT[a_c + 3, a_r] = x3
        if k0 + b_r < K and col0 + b_c < N:
            y0, y1, y2, y3 = load4(B, k0 + b_r, col0 + b_c)
        else:
            y0 = y1 = y2 = y3 = np.float32(0.0)
        sB[b_r, b_c + 0] = y0  # four neighbours at a multiple of 4: one STS.128
        sB[b_r, b_c + 1] = y1
        sB[b_r, b_c + 2] = y2
        sB[b_r, b_c + 3] = y3
        cuda.syncthreads()
{inner}
        cuda.syncthreads()
{store}
'''


def source_parts(unroll_k=False, split=False, buffer_index=""):
    """The generated pieces of the kernel: zeroing 64 accumulators c_i_j, the BK k-steps of
    a slice (8+8 register values a_i and b_j, 64 fused multiply-adds each), and the store of
    C.  ``buffer_index`` is put in front of every shared-memory index (lesson 07's second
    buffer).  With unroll_k, the k-steps are written out too; measured on an H100 that was
    slower: with k a constant in every index, NVVM no longer merged the shared loads into
    LDS.128 (lesson 05).  With split, a thread's 8x8 results are four 4x4 pieces, BM/2 rows and
    BN/2 columns apart (lesson 06): then 8 neighbouring threads read 128 contiguous bytes."""
    I = range(TM)
    J = range(TN)
    # offset of the thread's i-th row (j-th column) from t_row (t_col)
    row_off = [(i % 4) + (i // 4) * (BM // 2) for i in I] if split else list(I)
    col_off = [(j % 4) + (j // 4) * (BN // 2) for j in J] if split else list(J)
    zero = "\n".join(f"    c_{i}_{j} = np.float32(0.0)" for i in I for j in J)
    b = buffer_index

    def k_step(k, indent):
        return [indent + f"a_{i} = sAT[{b}{k}, t_row + {row_off[i]}]" for i in I] + \
               [indent + f"b_{j} = sB[{b}{k}, t_col + {col_off[j]}]" for j in J] + \
               [indent + f"c_{i}_{j} += a_{i} * b_{j}" for i in I for j in J]

    if unroll_k:
        inner = "\n".join(line for k in range(BK) for line in k_step(k, " " * 8))
    else:
        inner = "\n".join(["        for k in range(BK):"] + k_step("k", " " * 12))
    store = []
    for i in I:
        r = row_off[i]
        store.append(f"    if t_row + row0 + {r} < M:")
        for j in range(0, TN, 4):
            c = col_off[j]
            scaled = ", ".join(f"alpha * c_{i}_{j + d}" for d in range(4))
            mixed = ", ".join(f"alpha * c_{i}_{j + d} + beta * o{d}" for d in range(4))
            store += [
                f"        if col0 + t_col + {c} < N:",
                "            if beta == 0:",
                f"                store4(C, row0 + t_row + {r}, col0 + t_col + {c}, {scaled})",
                "            else:",
                f"                o0, o1, o2, o3 = load4(C, row0 + t_row + {r}, col0 + t_col + {c})",
                f"                store4(C, row0 + t_row + {r}, col0 + t_col + {c}, {mixed})",
            ]
    spans = dict(ROW_SPAN=4 if split else "TM", COL_SPAN=4 if split else "TN")
    return zero, inner, "\n".join(store), spans


def generate_sgemm_vec_source(unroll_k=False, split=False):
    zero, inner, store, spans = source_parts(unroll_k, split)
    return KERNEL_TEMPLATE.format(zero=zero, inner=inner, store=store, **spans)


def make_sgemm_vec(unroll_k=False, split=False):
    namespace = dict(cuda=cuda, float32=float32, np=np, load4=load4, store4=store4,
                     BM=BM, BN=BN, BK=BK, TM=TM, TN=TN)
    exec(compile(generate_sgemm_vec_source(unroll_k, split), "<sgemm_vec generated>", "exec"), namespace)
    return namespace["sgemm_vec"]


# %%
print("\n".join(generate_sgemm_vec_source().splitlines()[:40]))
print("    ...")

# %%
from gemm_lessons.sgemm_kernels import vec

my_vec = make_sgemm_vec()
gl.check_all(functools.partial(vec.sgemm, kernel=my_vec), name="vec",
             shapes=[(68, 44, 36, 1.0, 0.0), (36, 72, 20, 1.5, -0.5)] if gl.SIMULATOR else
                    [(68, 44, 36, 1.0, 0.0), (516, 1028, 260, -1.0, 0.5), (4, 4, 4, 2.0, 1.0)])

# %%
# NBVAL_CHECK_OUTPUT
A = cuda.to_device(np.ones((8, 6), np.float32))
B = cuda.to_device(np.ones((6, 8), np.float32))
try:
    vec.sgemm(A, B, cuda.device_array((8, 8), np.float32))
except ValueError as e:
    print("ValueError:", e)

# %% [markdown]
# ### Look inside with the bank tracer
#
# One block (K = 8) on the simulator, with the shared loads merged into 16-byte accesses as the
# compiler does (`merge=("ld",)`; the SASS below confirms `LDS.128`). The `sAT` reads are
# conflict-free, but the `sB` reads are not: 8 threads of a quarter warp read 16 bytes each, 32
# bytes apart, two to a bank. Lesson 06 removes that.

# %%
from gemm_lessons.instruments import shared_tracer
vec_trace = shared_tracer.trace_rung("vec", (128, 128, 8), merge=("ld",))
vec_trace

# %%
# NBVAL_CHECK_OUTPUT
t = vec_trace.totals("ld")
print(f"loads: {t['instructions']} warp instructions, {t['wavefronts']} wavefronts, {t['conflicts']} from conflicts")

# %% [markdown]
# ## Measure

# %%
my_vec_unrolled_k = make_sgemm_vec(unroll_k=True)
table = measure.compare({"vec": functools.partial(vec.sgemm, kernel=my_vec),
                         "vec_unrolled_k": functools.partial(vec.sgemm, kernel=my_vec_unrolled_k),
                         "reg2d": ladder.SGEMM["reg2d"]}, size=(4096, 4096, 4096))
table

# %%
print(f"vec vs reg2d: {table.speedup('vec', 'reg2d'):.2f}x ({table.source})")

# %% [markdown]
# ## Look inside: the SASS proves the wide loads
#
# Count the instructions by width: `LDG.E.128` (global float4 loads; the count includes the
# loads of C for beta != 0), `LDS.128` (shared float4 loads), `STG.E.128` (float4 stores of C)
# and `FFMA`, with 0 bytes of local memory. Then compare with the fully unrolled variant: its
# `FFMA` count shows all eight k-steps written out, but with k a constant in every index the
# compiler no longer merged the shared loads, so every value arrives through a 4-byte `LDS`.
# More unrolling is not automatically better: read the SASS, then measure.

# %%
kernels = {"vec": my_vec, "vec_unrolled_k": my_vec_unrolled_k}
inspect_kernel.compiler_facts(kernels, threads={name: 256 for name in kernels})


# %% [markdown]
# ## Exercise 05-stage-a
# Each of the 256 threads stages one float4 of the 128x8 A tile. Write `stage_a(tid)` returning
# the (row, first column) of that float4 within the tile, so that neighbouring threads read
# neighbouring 16-byte pieces of a row.

# %%
# NBVAL_CHECK_OUTPUT
def stage_a(tid):
    ### BEGIN SOLUTION
    return tid // 2, (tid % 2) * 4
    ### END SOLUTION

exercises.check("05-stage-a", stage_a)

# %% [markdown]
# ## Takeaway
#
# * Layout first: transposing the A tile on its way into shared memory turns a thread's strided
#   values into contiguous ones, which is what makes 16-byte loads possible.
# * From numba: shared-memory `LDS.128` comes for free with aligned, visibly contiguous indices;
#   global `LDG.128`/`STG.128` needs a tiny intrinsic; full unrolling needs generated source.
#   Always confirm in the SASS.
# * Next (lesson 06): the banks of shared memory, and why *which* threads read *which*
#   addresses in the same instruction still matters.

# %% [markdown]
# ## Sources and further reading
#
# * The source articles this lesson re-tells and tests: [[1]](REFERENCES.md#seed-000), [[4]](REFERENCES.md#seed-003), [[5]](REFERENCES.md#seed-004) (their origins and what each
#   covers are in [REFERENCES.md](REFERENCES.md#source-articles)).
# * What to read next: [REFERENCES.md, lesson 05](REFERENCES.md#lesson-05).
# * Terms: the [glossary](GLOSSARY.md); the execution model and the compiler-facts table are
#   introduced in the [primer](00a_primer.ipynb).
