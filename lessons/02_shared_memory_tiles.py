# %% [markdown]
# # 02 · Shared-memory tiles
#
# **Where we are.** The coalesced naive kernel loads two floats from global memory for every
# FMA, $2MNK$ loads in all, and every value of A and B is fetched again and again.

# %%
import gemm_lessons as gl  # first: it chooses the GPU, or numba's CUDA simulator when there is none
from gemm_lessons.model import counting
from gemm_lessons.teaching import exercises, figures, measure_step, plots
from gemm_lessons.instruments import compiler_facts
from gemm_lessons.kernels import ladder
from gemm_lessons.records import results
from gemm_lessons.core.jit import jit  # cuda.jit that also takes GPU-only options (max_registers) on the simulator
import functools
import numpy as np
from numba import cuda, float32
# %matplotlib inline
print(gl.banner())

# %%
measure_step.recorded(["naive", "smem_tile", "cublas"])

# %% [markdown]
# ## Idea: split K, stage tiles in shared memory
#
# A block that computes a BM x BN tile of C needs a BM-row strip of A and a BN-column strip of
# B. Cut K into slices of BK. For each slice, the block's threads cooperatively copy a BM x BK
# tile of A and a BK x BN tile of B into **shared memory** (on-chip, visible to the whole
# block), wait for each other (`cuda.syncthreads()`), and compute from there. Every value
# loaded from global memory is then used BN times (A) or BM times (B) instead of once.

# %%
figures.tiles(BM=32, BN=32, BK=32);

# %% [markdown]
# **Predict.** Each block reads $BM \cdot K$ values of A and $K \cdot BN$ of B, and there are
# $(M/BM)(N/BN)$ blocks, so the global loads fall from $2MNK$ to
# $$MNK\left(\frac{1}{BM} + \frac{1}{BN}\right)$$
# a factor of $2MNK / (MNK \cdot 2/32) = 32$ for 32x32 tiles, and 16 for 16x16 tiles. The next
# cell checks the formula against a *count* for both tile sizes: it runs the kernel on the CUDA
# simulator with arrays that count every element read (small sizes: the simulator is slow).

# %%
# NBVAL_CHECK_OUTPUT
from gemm_lessons.instruments import global_loads

for rung, tile, (M, N, K) in [("smem_tile16", 16, (32, 48, 64)), ("smem_tile", 32, (64, 64, 64))]:
    counted = global_loads.count_rung(rung, M, N, K)["global_reads"]
    naive_loads = counting.naive_global_loads(M, N, K)
    print(f"{M}x{N}x{K}, {tile}x{tile} tiles: counted {counted:,} global reads, "
          f"formula MNK(1/{tile} + 1/{tile}) = {counting.tiled_global_loads(M, N, K, tile, tile):,.0f}, "
          f"naive 2MNK = {naive_loads:,}: {naive_loads / counted:.0f}x fewer")


# %% [markdown]
# ## The kernel
#
# A kernel *factory*: numba needs shared-array shapes to be compile-time constants, and a
# closure variable (`TILE`) is one. Each call of `make_sgemm_smem_tile(TILE)` compiles a kernel
# for that tile size. Threads outside the matrices stage zeros, so the inner loop needs no guard.
#
# The two `syncthreads()` are both necessary: the first so nobody reads a tile before it is
# complete, the second so nobody overwrites it while a slower thread is still reading.

# %%
# source: gemm_lessons/kernels/sgemm/smem_tile.py  (the package runs this same code; a test keeps the two identical)
def make_sgemm_smem_tile(TILE):
    """A TILE x TILE block of threads computes a TILE x TILE tile of C.  TILE is baked in
    as a compile-time constant (a closure variable), so shared-array shapes are constants."""

    @cuda.jit
    def sgemm_smem_tile(A, B, C, alpha, beta):
        sA = cuda.shared.array((TILE, TILE), float32)
        sB = cuda.shared.array((TILE, TILE), float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        row = cuda.blockIdx.y * TILE + ty
        col = cuda.blockIdx.x * TILE + tx
        M, K = A.shape
        N = B.shape[1]
        acc = np.float32(0.0)
        for k0 in range(0, K, TILE):
            # every thread stages one element of each tile; zeros outside the matrices
            # keep the inner loop free of guards
            sA[ty, tx] = A[row, k0 + tx] if row < M and k0 + tx < K else np.float32(0.0)
            sB[ty, tx] = B[k0 + ty, col] if k0 + ty < K and col < N else np.float32(0.0)
            cuda.syncthreads()  # the tiles are complete before anyone reads them
            for k in range(TILE):
                acc += sA[ty, k] * sB[k, tx]
            cuda.syncthreads()  # everyone is done reading before the next tile overwrites
        if row < M and col < N:
            if beta == 0:
                C[row, col] = alpha * acc
            else:
                C[row, col] = alpha * acc + beta * C[row, col]

    return sgemm_smem_tile


# %%
from gemm_lessons.kernels.sgemm import smem_tile

tiled32 = make_sgemm_smem_tile(32)
tiled16 = make_sgemm_smem_tile(16)
gl.check_all(functools.partial(smem_tile.sgemm, tile=32, kernel=tiled32), name="smem_tile 32")

# %%
gl.check_all(functools.partial(smem_tile.sgemm, tile=16, kernel=tiled16), name="smem_tile 16")

# %% [markdown]
# ### Look inside with the bank tracer
#
# The **[bank tracer](GLOSSARY.md#bank-tracer)** (`shared_tracer.trace_rung`), one of this
# course's instruments, runs one block of a kernel on the CUDA simulator, records every
# shared-memory access of every thread, and groups them into warp-wide instructions, as the GPU
# issues them. Shared memory serves one instruction of a warp in one or more passes, called
# **[wavefronts](GLOSSARY.md#wavefront)**; it is split into 32 **[banks](GLOSSARY.md#bank)**, and
# when lanes of a warp need different words of the same bank, it needs more passes: a
# **[bank conflict](GLOSSARY.md#bank-conflict)** (lesson 06 explains the model). The table's
# columns:
#
# * **kernel line**: the line of the kernel (the cell above) that makes the access;
#   **op**: `ld`, a load from shared memory, or `st`, a store to it; **array**: which shared array.
# * **bytes**: bytes per thread in one instruction: 4, or 16 where four 4-byte loads were merged
#   into one `LDS.128`, as the compiler does here ("Look inside" below shows it in the SASS).
# * **instructions**: how many warp-wide instructions the traced block made at that line.
# * **wavefronts**: how many passes of shared memory they took; **ideal**: the fewest those
#   accesses could take without conflicts.
# * **worst n-way**: the largest number of different words one bank had to deliver in one of
#   those instructions (1: no bank conflict).
#
# Here one 32x32 block with K = 64: the `sA[ty, k]` reads are broadcasts (a warp is one row
# `ty`), merged four at a time; the `sB[k, tx]` reads are 32 neighbouring words. No bank conflicts.
# The tracer prices a 16-byte load at 4 wavefronts at least, one per quarter of the warp
# (8 lanes, one [phase](GLOSSARY.md#phase) each), even when every lane reads the same 16 bytes:
# its ideal column counts those 4. The GPU does better on these broadcasts: lesson 06 compares
# the tracer with the GPU's own counters on this very kernel, finds fewer load wavefronts than
# the tracer counts here, and adds the rule that explains it (when neighbouring lanes share an
# address, a 16-byte load takes half the passes).
# The cell after the table divides the totals by the block's **[warp-FMAs](GLOSSARY.md#warp-fma)**:
# a warp-FMA is one FMA instruction of a warp, 32 FMAs, one per thread.

# %%
from gemm_lessons.instruments import shared_tracer
tile_trace = shared_tracer.trace_rung("smem_tile", (32, 32, 64), merge=("ld",))
tile_trace

# %%
# NBVAL_CHECK_OUTPUT
for op in ("ld", "st"):
    t = tile_trace.totals(op)
    print(f"{op}: {t['instructions']} warp instructions, {t['wavefronts']} wavefronts, {t['conflicts']} from conflicts")
warp_fmas = (32 * 32 // 32) * 64  # 32 warps, each one FMA instruction per k-step, K = 64 k-steps
ld = tile_trace.totals("ld")
values = sum(i.width // 4 for i in tile_trace.instructions if i.op == "ld")  # 4-byte words per lane
print(f"per warp-FMA ({warp_fmas:,} in the block): {values / warp_fmas:.2f} values read from shared memory, "
      f"{ld['instructions'] / warp_fmas:.2f} load instructions, {ld['wavefronts'] / warp_fmas:.2f} wavefronts")

# %% [markdown]
# The lessons measure shared-memory traffic in **shared-memory values per FMA**: the 4-byte
# words a thread reads from shared memory for each FMA it does. Here that is 2, one of `sA` and
# one of `sB`. The compiler fetches four `sA` values with one 16-byte instruction, so there are
# fewer load *instructions* per FMA than values (the line above). By the tracer's count (the
# documented rule of lesson 06), the wavefronts per FMA are as many as the values; lesson 06
# measures the GPU doing better for this kernel's 16-byte loads.

# %% [markdown]
# ## Predict, then measure
# With 32x32 tiles the kernel reads 32 times fewer values from global memory than the naive
# kernel (the formula, and the count above). How many times faster do you expect
# `smem_tile` (32x32) to run than `naive` at 4096^3? Write one number in the next cell; after the
# measurement, a cell sets it against the measured speedup.

# %%
my_speedup = None  # your prediction: replace None with a number (for example 2.5)

# %% [markdown]
# ## Measure: 16 vs 32
#
# A 32x32 tile halves the global loads of a 16x16 tile, but it needs 1024 threads per block (the
# hardware limit) and four times the shared memory per block: two tiles of 32 x 32 floats,
# 2 x 32 x 32 x 4 bytes = 8 KiB, against 2 x 16 x 16 x 4 bytes = 2 KiB. Which wins is an empirical
# question.

# %%
table = measure_step.compare({
    "smem_tile16": functools.partial(smem_tile.sgemm, tile=16, kernel=tiled16),
    "smem_tile": functools.partial(smem_tile.sgemm, tile=32, kernel=tiled32),
    "naive": ladder.SGEMM["naive"],
}, size=(4096, 4096, 4096))
table

# %%
print(f"32x32 tiles vs naive: {table.speedup('smem_tile', 'naive'):.1f}x; "
      f"32x32 vs 16x16: {table.speedup('smem_tile', 'smem_tile16'):.2f}x ({table.source})")

# %%
exercises.compare_prediction(my_speedup, table.speedup("smem_tile", "naive"), "smem_tile vs naive at 4096^3 (times faster)",
                             table.source)

# %% [markdown]
# Set both ratios against the load count. The count is a model with one cost; where a
# measurement falls short of it, look at what it leaves out.
#
# * **32x32 against naive**: 32 times fewer values asked of global memory, and a smaller speedup
#   (your prediction was set against it above). Most of the naive kernel's repeated loads hit in
#   the L1 cache, so its $2MNK$ loads cost far less than $2MNK$ trips to DRAM (lesson 01's
#   profile, recorded: the next cell). And the tiled kernel pays costs the count does not see:
#   two shared-memory values per FMA (the trace above) and two barriers per slice.
# * **32x32 against 16x16**: half as many values asked of global memory, and on the H100 this
#   notebook was run on no faster (the second ratio). The count cannot explain that: by the
#   count, and by the barriers (a 16x16 block meets twice as many per FMA), 32x32 should win.
#   Both tile sizes read the same two shared-memory values per FMA, which suggests that
#   shared memory, not global memory, limits both; this lesson does not measure it. Lessons 03
#   and 04 cut the shared-memory values per FMA.

# %%
from IPython.display import Markdown, display
from gemm_lessons.instruments import profiler

naive_prof = profiler.recorded({"naive": "naive"}, size=(4096, 4096, 4096), rows=("l1_hit", "l2_hit", "dram_bytes"))
l1, l2, dram = (naive_prof.value("naive", row) for row in ("l1_hit", "l2_hit", "dram_bytes"))
if None not in (l1, l2, dram):
    asked = 4 * counting.naive_global_loads(4096, 4096, 4096)  # bytes the loads ask for
    display(Markdown(
        f"Lesson 01's profile of `naive` at 4096^3 ({naive_prof.source}): its loads ask for "
        f"{asked / 1e9:,.0f} GB; the L1 hit rate was {l1:.0f}%, the L2 hit rate {l2:.0f}%, and DRAM moved "
        f"{dram / 1e9:.0f} GB."))
else:
    display(Markdown(f"No recorded profile of `naive` here ({naive_prof.source})."))

# %% [markdown]
# ### A claim from the sources: "64x64 tiles are 50% faster but less accurate"
#
# One of the source write-ups, [[2]](REFERENCES.md#seed-001), reports that 64x64 tiles ran about
# 50% faster than 32x32 but gave less accurate results, cause unknown. A 64x64 block has 4096 threads, four times the limit of
# 1024 threads per block: the launch fails. In CUDA C++ a failed launch is silent unless you
# check for the error. A likely reading, which we cannot test without the write-up's code: the
# "kernel" did nothing, so the time measured was that of a launch that never ran, and C kept
# whatever it held, which the write-up read as "inaccurate". numba checks launches and raises;
# our launcher refuses the size before trying. (The CUDA simulator does not enforce the limit, so this cell shows the launcher's
# error there.)

# %%
A = cuda.to_device(np.ones((64, 64), np.float32))
C = cuda.device_array((64, 64), np.float32)
try:
    smem_tile.sgemm(A, A, C, tile=64)
except ValueError as e:
    print("launcher:", e)
if not gl.SIMULATOR:
    try:
        make_sgemm_smem_tile(64)[(1, 1), (64, 64)](A, A, C, np.float32(1), np.float32(0))
        cuda.synchronize()
    except Exception as e:
        print("raw launch of 64x64 threads:", type(e).__name__, e)

# %% [markdown]
# ## Look inside
#
# The inner loop now reads shared memory (`LDS`) instead of global memory. Note the `LDS.128`:
# the compiler noticed that `sA[ty, k..k+3]` are four neighbouring words at an aligned address
# and merged them into one 16-byte load. Still, each FMA needs its own value of `sB`, and one of
# `sA`: two shared-memory values per FMA (the trace above). Lesson 03 attacks that ratio. The
# blocks/SM column is for the 32 x 32 = 1,024-thread blocks of this kernel.

# %%
compiler_facts.compiler_facts({"smem_tile": tiled32}, threads={"smem_tile": 32 * 32})

# %% [markdown]
# ## Exercises
#
# ### 02-loads
# How many global loads does an SGEMM with M = 1024, N = 2048, K = 512 need with rectangular
# tiles, BM x BN = 64 x 32? Write the formula in M, N, K, BM and BN yourself (not a call to
# `counting`).

# %%
# NBVAL_CHECK_OUTPUT
### BEGIN SOLUTION: answer = None
M, N, K, BM, BN = 1024, 2048, 512, 64, 32
answer = M * N * K * (1 / BM + 1 / BN)  # (M/BM)(N/BN) blocks, each reading BM*K of A and K*BN of B
### END SOLUTION
exercises.check("02-loads", answer)

# %% [markdown]
# ### 02-kernel: stage rectangular tiles
# The kernel above uses square tiles, one value of A and one of B per thread. Here the tiles
# are rectangular: a block of 32 x 8 threads (`threadIdx.x` along the 32 columns) computes a
# BM x BN = 8 x 32 tile of C, in slices of BK = 32. The A tile (BM x BK = 8 x 32) holds one
# value per thread; the B tile (BK x BN = 32 x 32) holds four per thread, so thread
# (`ty`, `tx`) copies rows `ty`, `ty + 8`, `ty + 16` and `ty + 24` of it.
#
# Write the body of the loop over slices: stage both tiles (zeros outside the matrices), a
# barrier, the BK products, a barrier. The check runs your kernel against the float64
# reference, then counts its global reads on the simulator: a right result that reads more
# than $MNK(1/BM + 1/BN)$ elements does not pass.

# %%
# NBVAL_CHECK_OUTPUT
BM, BN, BK = 8, 32, 32  # a BM x BN tile of C per block, slices of BK; blocks of BN x BM threads


@cuda.jit
def my_tiled(A, B, C, alpha, beta):
    sA = cuda.shared.array((BM, BK), float32)
    sB = cuda.shared.array((BK, BN), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * BM + ty  # this thread computes C[row, col]
    col = cuda.blockIdx.x * BN + tx
    M, K = A.shape
    N = B.shape[1]
    acc = np.float32(0.0)
    for k0 in range(0, K, BK):
        ### BEGIN SOLUTION
        sA[ty, tx] = A[row, k0 + tx] if row < M and k0 + tx < K else np.float32(0.0)
        for l in range(BK // BM):  # rows ty, ty + BM, ... of the B tile
            r = ty + l * BM
            sB[r, tx] = B[k0 + r, col] if k0 + r < K and col < N else np.float32(0.0)
        cuda.syncthreads()
        for k in range(BK):
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()
        ### END SOLUTION
    if row < M and col < N:
        C[row, col] = alpha * acc + (beta * C[row, col] if beta != 0 else np.float32(0.0))


my_tiled.tile = (BM, BN, BK)  # the check's launch reads the tile shape from here
exercises.check("02-kernel", my_tiled)

# %% [markdown]
# ## Across sizes
#
# The recorded benchmark timed every [rung](GLOSSARY.md#rung) (each lesson's kernel) at four
# square sizes in one run. This lesson's rung,
# the rung before it and cuBLAS:

# %%
plots.rung_versus_size("smem_tile");

# %% [markdown]
# ## Takeaway
#
# * Shared-memory tiles cut global loads by the tile size: $MNK(1/BM + 1/BN)$, checked against
#   a count above.
# * Two barriers per slice, both required. Launch errors must be checked, never assumed away.
# * Each FMA still reads two values from shared memory, one of `sA` and one of `sB`. Whether they
#   are what limits the kernel now, lesson 03 tests by cutting them: keep values in registers and
#   reuse them.

# %% [markdown]
# ## Sources and further reading
#
# * The source articles this lesson re-tells and tests: [[1]](REFERENCES.md#seed-000), [[2]](REFERENCES.md#seed-001), [[3]](REFERENCES.md#seed-002), [[5]](REFERENCES.md#seed-004) (their origins and what each
#   covers are in [REFERENCES.md](REFERENCES.md#source-articles)).
# * What to read next: [REFERENCES.md, lesson 02](REFERENCES.md#lessons-02-04).
# * Terms: the [glossary](GLOSSARY.md); the execution model and the compiler-facts table are
#   introduced in the [primer](00a_primer.ipynb).
