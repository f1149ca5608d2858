# %% [markdown]
# # 00a · Primer: how a GPU runs your kernel
#
# **Where we are.** At the very start: this primer comes first, before
# [lesson 00](00_setup_and_roofline.ipynb) (the GPU's two ceilings) and [lesson 01](01_naive.ipynb)
# (the first matrix product). It needs neither to have run: where it shows a number that only a
# GPU can give (SM count, latencies, copy bandwidth, compiler facts), it measures it here on a GPU,
# or reads the saved record in `results/`, and each output says which.
#
# The lessons speak of warps, blocks, SASS, `LDS.128`, occupancy and latency. Here each of these
# words is defined: most of them on kernels you launch yourself, the others (`LDS.128`, spills) on
# the lessons' own kernels, through the compiler-facts table of part 3. Every term is also in the
# [glossary](GLOSSARY.md); the source articles and the documentation to read next are in
# [REFERENCES.md](REFERENCES.md).
#
# Four parts:
#
# 1. **Threads, warps, blocks, grid**: the execution model in numba terms, and a first kernel
#    launched by hand and checked against NumPy.
# 2. **The memory hierarchy**: registers, shared memory, L1, L2, DRAM, with their sizes on this
#    GPU; and for the levels a load goes to (shared memory, L1, L2, DRAM) the latency of one load,
#    measured. Registers need no load: an instruction reads its operands from them directly.
# 3. **PTX and SASS**: what the compiler made of the kernel, and how to read the
#    compiler-facts tables of the lessons.
# 4. **Occupancy, latency hiding, instruction-level parallelism**: why a GPU needs many
#    independent operations in flight, and where they come from.
#
# A code cell whose first line is `# NBVAL_CHECK_OUTPUT` is one whose output the course's
# automatic tests compare with the saved one ([nbval](https://github.com/computationalmodelling/nbval)):
# its output does not depend on the GPU. The line is a comment; it does nothing when you run the cell.

# %%
import gemm_lessons as gl  # first: it chooses the GPU, or numba's CUDA simulator when there is none
from gemm_lessons.teaching import exercises, figures, hierarchy
from gemm_lessons.instruments import compiler_facts
from gemm_lessons.kernels import ladder
from gemm_lessons.measure import latency
from gemm_lessons.records import results
from gemm_lessons.measure.latency import clock64  # the SM's cycle counter, for the latency kernel of part 2
from gemm_lessons.teaching import primer_listing as listing
import inspect
import numpy as np
from numba import cuda, float32
from IPython.display import Markdown, display
# %matplotlib inline
print(gl.banner())

# %% [markdown]
# ## 1 · Threads, warps, blocks, grid
#
# A **kernel** is a function that the GPU (the **device**; the CPU is the **host**) runs many
# times at once, once per **thread**. Each thread runs the same code on its own data: it finds
# its data from its own index.
#
# * Threads are grouped into **blocks**. A block runs on one **streaming multiprocessor (SM)**,
#   the GPU's unit of execution (the cell below gives their number). The threads of a block
#   can share fast **shared memory** and wait for each other (`cuda.syncthreads()`).
# * The blocks of one launch form the **grid**. Blocks are independent: they may run in any order
#   and on any SM, several at once on one SM if its resources allow (part 4).
# * Inside a block the hardware cuts the threads into **warps** of 32 consecutive threads
#   ([CUDA C++ Programming Guide, SIMT architecture](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#simt-architecture)).
#   Consecutive by the thread's number in its block, in which `threadIdx.x` counts fastest, then
#   `threadIdx.y`, then `threadIdx.z`: thread (x, y, z) is number `x + y*blockDim.x +
#   z*blockDim.x*blockDim.y` ([thread hierarchy](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#thread-hierarchy)).
#   Numbers 0-31 form warp 0, 32-63 warp 1, and so on: in a 1-D block, warp 0 is `threadIdx.x`
#   0-31; in a 2-D block 32 threads wide, each value of `threadIdx.y` is one warp.
# * A warp executes one instruction at a time for all of its threads together, each on its own
#   data ([SIMT](GLOSSARY.md#simt): single instruction, multiple threads); each thread is a
#   **lane** of its warp. Everything the lessons say about [coalescing](GLOSSARY.md#coalescing)
#   (lesson 01), [bank conflicts](GLOSSARY.md#bank-conflict) (lesson 06) and
#   [divergence](GLOSSARY.md#divergence) is about what the 32 lanes of one warp do in the same
#   instruction. Inside a kernel, `cuda.warpsize` gives the warp size (on the host that name is
#   only a placeholder for the compiler, not a number); the driver reports it too (below).
# * **Compute capability** is NVIDIA's version number of a GPU's SM design, X.Y: the major
#   number names the architecture (9 for Hopper), the minor one a step within it
#   ([Programming Guide, compute capability](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#compute-capability)).
#   A GPU's limits (registers, shared memory, threads per SM) are documented per compute
#   capability; this primer quotes those of 9.0, the H100's.
#
# In numba a kernel is a Python function under `@cuda.jit`, and a launch names the grid first:
#
# | | numba | CUDA C++ |
# |---|---|---|
# | declare | `@cuda.jit` over `def k(...)` | `__global__ void k(...)` |
# | launch | `k[blocks, threads_per_block](args)` | `k<<<blocks, threads_per_block>>>(args)` |
# | 2-D launch | `k[(bx, by), (tx, ty)](args)` | `k<<<dim3(bx, by), dim3(tx, ty)>>>(args)` |
# | who am I | `cuda.threadIdx.x`, `cuda.blockIdx.x`, `cuda.blockDim.x`, `cuda.gridDim.x` | `threadIdx.x`, `blockIdx.x`, ... |
# | my global index | `cuda.grid(1)`; `x, y = cuda.grid(2)` | `blockIdx.x * blockDim.x + threadIdx.x` |
#
# Terms: [kernel](GLOSSARY.md#kernel), [thread](GLOSSARY.md#thread), [block](GLOSSARY.md#block),
# [grid](GLOSSARY.md#grid), [warp](GLOSSARY.md#warp), [lane](GLOSSARY.md#lane), [SM](GLOSSARY.md#sm),
# [launch](GLOSSARY.md#launch), [compute capability](GLOSSARY.md#compute-capability).
#
# The GPU this notebook runs on (on the simulator: the GPU of the newest record in `results/`):

# %%
display(Markdown(hierarchy.this_gpu_markdown()))

# %% [markdown]
# A launch returns at once: the GPU works in the background until something waits for it
# (copying a result back, or `cuda.synchronize()`). The lessons hide the launch inside small
# *launchers*; here is lesson 01's, the whole of it:

# %%
from gemm_lessons.kernels.sgemm import naive
print(inspect.getsource(naive.sgemm))
bx, by = naive.BLOCK
print("BLOCK =", naive.BLOCK, " # threads per block along x (columns of C) and y (rows)")
print(f"{bx * by // 32} warps per block; threads are numbered x fastest, so warp w holds "
      + (f"the {bx} threads with threadIdx.y == w" if bx == 32 else "32 consecutive thread numbers"))

# %% [markdown]
# The grid is rounded **up** to whole blocks, so unless the size divides evenly, some threads
# get an index past the end of the data. The figure shows a 1-D launch over 1000 elements with
# 256 threads per block.

# %%
figures.execution_model(n=1000, threads_per_block=256);

# %% [markdown]
# **Predict.** For `n` elements and 256 threads per block: how many blocks, how many warps, and
# how many threads past the end? Work it out for `n = 1000` and `n = 4096` before running the cell.

# %%
# NBVAL_CHECK_OUTPUT
from gemm_lessons.kernels.primer import saxpy as saxpy_module
for n in (1000, 4096):
    blocks = saxpy_module.blocks_for(n, 256)
    print(f"n = {n}: {blocks} blocks, {blocks * 256 // 32} warps, {blocks * 256 - n} threads past the end")

# %% [markdown]
# ### The kernel: `out = a*x + y`
#
# One thread per element. `cuda.grid(1)` is the thread's global index; the `if` is the
# **bounds guard**: without it, the threads past the end would read and write memory that is not
# part of the arrays. numba checks no bounds on a GPU (on the simulator it does, and raises
# `IndexError`).

# %%
# source: gemm_lessons/kernels/primer/saxpy.py  (the package runs this same code; a test keeps the two identical)
@cuda.jit
def saxpy(a, x, y, out):
    i = cuda.grid(1)  # this thread's index in the whole grid: blockIdx.x * blockDim.x + threadIdx.x
    if i < out.size:  # the grid holds whole blocks, so it can reach past the end: those threads do nothing
        out[i] = a * x[i] + y[i]


# %% [markdown]
# ### Launch it by hand
#
# `cuda.to_device` copies a NumPy array into the GPU's memory (**global memory**) and returns a
# device array; `copy_to_host` copies back, after waiting for the kernel. The output starts as
# NaN, so an element that no thread writes is visible afterwards.

# %%
n = 1000
rng = np.random.default_rng(0)
x = rng.standard_normal(n).astype(np.float32)
y = rng.standard_normal(n).astype(np.float32)
a = np.float32(2.5)

x_d = cuda.to_device(x)
y_d = cuda.to_device(y)
out_d = cuda.to_device(np.full(n, np.nan, np.float32))

threads = 256
blocks = (n + threads - 1) // threads  # rounded up: every element gets a thread
saxpy[blocks, threads](a, x_d, y_d, out_d)  # the launch
out = out_d.copy_to_host()

# %% [markdown]
# ### Check against NumPy
#
# On a GPU the compiled kernel computes `a*x + y` as one **fused multiply-add** (FMA: one
# rounding): part 3 shows the kernel's [SASS](GLOSSARY.md#sass), the GPU's machine code, in which
# it is a single [`FFMA`](GLOSSARY.md#ffma) instruction (FP32 fused multiply-add), and counts it.
# NumPy computes a multiply and an add (two roundings), so the last bit may differ.
# The check compares with a float64 result and allows float32 rounding.

# %%
# NBVAL_CHECK_OUTPUT
exact = np.float64(a) * x.astype(np.float64) + y.astype(np.float64)
allowed = 2 * np.finfo(np.float32).eps * (np.abs(np.float64(a) * x) + np.abs(y))
print("elements never written:", int(np.isnan(out).sum()))
print("every element within float32 rounding of the exact result:", bool((np.abs(out - exact) <= allowed).all()))

# %% [markdown]
# ### Without the guard
#
# The same kernel without `if i < out.size`, launched on arrays that are views of longer
# buffers (so that nothing outside our own allocations can be hit). On a GPU, the extra threads
# silently read and write past the end; in a real program, past the end is someone else's data.

# %%
@cuda.jit
def saxpy_unguarded(a, x, y, out):
    i = cuda.grid(1)
    out[i] = a * x[i] + y[i]


room = blocks * threads  # every thread of the grid has a place to land
x_big = cuda.to_device(np.concatenate([x, np.zeros(room - n, np.float32)]))
y_big = cuda.to_device(np.concatenate([y, np.zeros(room - n, np.float32)]))
out_big = cuda.to_device(np.full(room, np.nan, np.float32))
try:
    saxpy_unguarded[blocks, threads](a, x_big[:n], y_big[:n], out_big[:n])
    written = int((~np.isnan(out_big.copy_to_host()[n:])).sum())
    print(f"GPU: no error, and {written} values were written past the end of out.")
except IndexError as e:
    print(f"simulator: IndexError ({str(e)[:80]}...). A GPU would raise nothing.")

# %% [markdown]
# ## 2 · The memory hierarchy
#
# Each thread sees several kinds of memory. From closest to farthest:
#
# * **[Registers](GLOSSARY.md#register)**: a thread's own variables (in `saxpy`: `i`, and the
#   values it loads from `x[i]` and `y[i]`; also small fixed-size `cuda.local.array`s indexed with
#   constants). An instruction reads its operands from registers directly. The SM has a fixed
#   number, shared by all threads on it (part 4). If a kernel needs more than it gets, the
#   compiler moves some values to **[local memory](GLOSSARY.md#local-memory)**: a
#   **[register spill](GLOSSARY.md#register-spill)**. Local memory lives in DRAM behind the
#   caches and shows up as `LDL`/`STL` instructions (part 3).
# * **Shared memory** (`cuda.shared.array`): on the SM, visible to the threads of one block,
#   managed by the program. Lessons 02-08 stage tiles of A and B in it.
# * **L1 cache**: on the SM, in the same storage as shared memory; it keeps recently loaded
#   global data automatically.
# * **L2 cache**: one for the whole GPU, shared by all SMs.
# * **DRAM** (**[HBM](GLOSSARY.md#dram)** on an H100): the GPU's main memory, where global memory
#   (the arrays you pass in) lives. Data moves between DRAM, L2 and L1 in 32-byte
#   **[sectors](GLOSSARY.md#sector)**; a 128-byte **[cache line](GLOSSARY.md#cache-line)** holds
#   four of them ([CUDA C++ Best Practices Guide](https://docs.nvidia.com/cuda/cuda-c-best-practices-guide/index.html#coalesced-access-to-global-memory)).
#
# **[Latency](GLOSSARY.md#latency)** is how long one access takes from issue to result;
# **[bandwidth](GLOSSARY.md#bandwidth)** is how many bytes per second a level can deliver when
# many accesses are in flight at once. The table's first line says where its numbers come from:
# on a GPU, the sizes from the driver and the latencies measured just now by a quick run of the
# benchmarks below; on the simulator, a saved record in `results/` (NVIDIA's documented H100
# sizes when there is none).

# %%
hier = hierarchy.hierarchy()
hier

# %%
hier.figure();

# %% [markdown]
# ### How the latencies are measured: pointer chasing
#
# A single thread follows a chain through an array: `j = chain[j]`. Each load's address is the
# value the previous load returned, so the loads cannot overlap, and the time per step is the
# latency of one load plus the loop's own instructions (the address computation and the loop
# counter). The method does not separate those: they are the same instructions at every
# working set, so they add the same amount to every level. The chain visits its places in
# random order, one per 128-byte line, so every step touches a new line. The size of the array
# decides where the loads are served: a few KiB stay in L1, a few MiB in L2, a working set several
# times the L2 size comes from DRAM. The time is read from the SM's cycle counter (`clock64`, a
# small numba intrinsic in `gemm_lessons/measure/latency.py`) around the loop. The tables give
# nanoseconds too: the cycles at the clock the driver reports, the same conversion for every level.
#
# One more cost hides in the largest working sets. The GPU translates each virtual address into
# a physical one and caches recent translations in **[TLBs](GLOSSARY.md#tlb)**; a random chase
# over hundreds of MiB can miss them, and the translation's time is then part of what the chase
# records as DRAM latency. It is the latency of a *random* load; a streaming access, which walks
# its pages in order, mostly does not pay it (GPU TLBs are measured with this same pointer-chasing
# method by [Mei and Chu](https://arxiv.org/abs/1509.02308)). The kernel's indices are unsigned;
# part 3 shows what numba adds to an access with a signed index.

# %%
# source: gemm_lessons/measure/latency.py  (the package runs this same code; a test keeps the two identical)
@cuda.jit
def chase_global(chain, start, steps, out):
    # One thread follows the chain: each load's address is the value the previous load
    # returned, so the loads cannot overlap.  Indices are uint32: unsigned, so numba has no
    # negative-index wraparound to add (part 3 shows it for a signed one).  out = [where it ended, cycles it took].
    j = start
    t0 = clock64()  # the SM's cycle counter
    for _ in range(steps):
        j = chain[j]
    t1 = clock64()
    out[0] = j
    out[1] = t1 - t0


# %% [markdown]
# A chain of 8 places, 128 bytes apart (32 `uint32` words), and the kernel following it:

# %%
# NBVAL_CHECK_OUTPUT
chain = latency.make_chain(8 * 128, seed=0)
path = [0]
for _ in range(8):
    path.append(int(chain[path[-1]]))
print("word indices visited:", path, "(back at 0: one cycle through all 8)")
res = np.zeros(2, np.int64) if gl.SIMULATOR else cuda.to_device(np.zeros(2, np.int64))
chase_global[1, 1](chain if gl.SIMULATOR else cuda.to_device(chain), np.uint32(0), np.int64(5), res)
ended = int((res if gl.SIMULATOR else res.copy_to_host())[0])
print("after 5 loads the kernel is at word", ended, "- the host says", latency.chase_host(chain, 0, 5))

# %% [markdown]
# **Measured here, or read from a record.** The full measurement (`python -m gemm_lessons.measure.latency`,
# on a GPU) runs the chase at working sets from 4 KiB to several times the L2 size, through shared
# memory too, and saves `results/latency-<device>.json`. On a GPU, the table above and everything
# below were measured just now by a shorter run of the same code (`latency.collect(quick=True)`:
# fewer, shorter launches). On the simulator nothing can be timed: the numbers are read from the
# saved record, if there is one. Each output names its source.

# %%
lat = hier.latency_record
if lat is None:
    display(Markdown("**No latency record yet**: nothing has been measured on a GPU. Run "
                     "`python -m gemm_lessons.measure.latency` on one (it writes `results/latency-<device>.json`), "
                     "and this part shows the curve and the numbers."))
else:
    display(Markdown(latency.summary_markdown(lat)))
    figures.latency_curve(lat)

# %%
if lat is not None:
    lv = latency.levels(lat)
    c = {k: v["cycles_per_load"] for k, v in lv.items()}
    text = [f"On {latency.label(lat)}: a load that hits L1 costs about {c['L1']:.0f} cycles"]
    if "L2" in c:
        text.append(f"one served by L2 about {c['L2']:.0f} ({c['L2'] / c['L1']:.1f}x)")
    if "DRAM" in c:
        text.append(f"one from DRAM about {c['DRAM']:.0f} ({c['DRAM'] / c['L1']:.1f}x)")
    text = ", ".join(text) + (f"; shared memory {lat['shared']['cycles_per_load']:.0f} cycles." if lat.get("shared")
                              else "; shared memory: not in this record.")
    text += (" A kernel that waits for each load before the next one runs at these speeds; part 4 shows "
             "how a GPU keeps busy anyway.")
    display(Markdown(text))

# %% [markdown]
# ## 3 · PTX and SASS: what the compiler made
#
# numba turns the Python kernel into **PTX**, NVIDIA's portable assembly language for a virtual
# machine. PTX is then compiled into **SASS**, the machine code of one GPU generation. On a GPU,
# numba does that when the kernel is first launched, through a CUDA library (nvJitLink where it is
# installed, else the driver's built-in compiler:
# [Programming Guide, just-in-time compilation](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#just-in-time-compilation));
# ahead of time, without a GPU, the CUDA toolkit's assembler [`ptxas`](GLOSSARY.md#ptxas) does the
# same job. The line above the listing below says which way it was made. The lessons count SASS
# instructions because SASS is what runs. In numba:
#
# * `kernel.inspect_asm()`: the PTX; `kernel.inspect_sass()`: the SASS (needs `nvdisasm`);
# * `kernel.get_regs_per_thread()`, `get_local_mem_per_thread()`, `get_shared_mem_per_block()`.
#
# Terms: [PTX](GLOSSARY.md#ptx), [SASS](GLOSSARY.md#sass), [FFMA](GLOSSARY.md#ffma),
# [LDG/STG](GLOSSARY.md#ldg), [LDS/STS](GLOSSARY.md#lds), [LDL/STL](GLOSSARY.md#ldl),
# [.128](GLOSSARY.md#width-128), [BAR.SYNC](GLOSSARY.md#bar-sync).
#
# They need a GPU (or at least the CUDA compiler). On the simulator the listing below is a saved
# record (`results/primer-listing.json`), made earlier from the same kernels; it says how and when.

# %%
how, compiled = listing.listing()
if compiled is None:
    display(Markdown("No compiler listing here: run `python -m gemm_lessons.teaching.primer_listing` on a GPU, or "
                     "`GEMM_LESSONS_SIMULATOR=0 python -m gemm_lessons.teaching.primer_listing --offline` where the "
                     "CUDA compiler is installed."))
else:
    display(Markdown(f"**Listing of `saxpy`**, {how}: made {listing.made_by(how)}."))
    print("PTX (the body, without the parameter loads):")
    print(listing.ptx_body(compiled["saxpy"]["ptx"]))

# %%
if compiled is not None:
    print("SASS, from the first instruction to the last EXIT (the padding after it never runs):")
    print(listing.sass_until_exit(compiled["saxpy"]["sass"]))
    print(f"\nFFMA instructions in this listing: {listing.count(compiled['saxpy']['sass'], 'FFMA')} "
          "(the a*x + y of the kernel, one fused multiply-add)")

# %%
if compiled is not None:
    display(Markdown(listing.explain_opcodes(compiled["saxpy"]["sass"])))

# %% [markdown]
# Read the SASS from the top. The notation: `R2` is a register of the thread; `UR4` a *uniform*
# register, one value for the whole warp; `RZ` a register that always reads 0; `c[0x0][0x210]` a
# word of the constant bank, where the kernel's parameters sit (array addresses and lengths, `a`).
# `P0` is a **[predicate](GLOSSARY.md#predicate)** register, one bit per thread: an instruction
# written `@P0 ...` runs only in the threads whose `P0` is true (`@!P0`: false). The walk-through
# below is made from the listing shown: every quoted line and every count comes from it (another
# compiler version may order or name a few instructions differently).

# %%
if compiled is None:
    display(Markdown("No listing here to walk through (see above)."))
else:
    display(Markdown(listing.saxpy_walkthrough(compiled["saxpy"])))

# %% [markdown]
# ### Shared memory and a barrier
#
# A second kernel: each block reverses its own slice of `THREADS` values. A thread reads a value that
# *another* thread stored, so every store must be done before any read: `cuda.syncthreads()` is
# a **barrier**, every thread of the block waits there until all have arrived.
#
# The barrier stands outside `if t < n`, where every thread of the block reaches it, also those
# of a short last slice that have nothing to store. The Programming Guide allows the barrier in
# conditional code only if the condition is the same for the whole block; where some threads skip
# it, the block may hang or give wrong results
# ([synchronization functions](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#synchronization-functions)).

# %%
from gemm_lessons.kernels.primer import reverse
THREADS = reverse.THREADS  # threads per block = values per slice; a constant when the kernel compiles

# %%
# source: gemm_lessons/kernels/primer/reverse.py  (the package runs this same code; a test keeps the two identical)
@cuda.jit
def reverse_slices(x, out):
    tile = cuda.shared.array(THREADS, float32)  # one array per block, seen by all its threads
    t = cuda.threadIdx.x
    start = cuda.blockIdx.x * THREADS
    n = min(THREADS, x.size - start)  # values in this block's slice (the last one may be short)
    if t < n:
        tile[t] = x[start + t]  # each thread stores one value ...
    cuda.syncthreads()  # ... and waits until every thread of the block has stored its value
    if t < n:
        out[start + t] = tile[n - 1 - t]  # then reads a value another thread stored


# %%
# NBVAL_CHECK_OUTPUT
v = np.arange(300, dtype=np.float32)
v_d = cuda.to_device(v)
r_d = cuda.to_device(np.full(300, np.nan, np.float32))
reverse_slices[(v.size + THREADS - 1) // THREADS, THREADS](v_d, r_d)
print("matches the host:", np.array_equal(r_d.copy_to_host(), reverse.reference(v)))

# %%
if compiled is not None:
    k = compiled["reverse_slices"]
    display(Markdown(
        f"`reverse_slices` ({how}): {k['registers']} registers, {k['local_bytes']} bytes of local memory, "
        f"{k['shared_bytes']} bytes of shared memory per block. Its memory instructions: "
        + ", ".join(f"`{op}` x {n}" for op, n in k["sass_summary"].items())
        + ". `STS` stores to shared memory, `BAR.SYNC` is `cuda.syncthreads()`, `LDS` loads from shared memory."))

# %% [markdown]
# ### Reading the compiler-facts table of the lessons
#
# From lesson 01 on, each lesson ends its "look inside" with a table like this one, for its own
# kernels. The four here are SGEMM kernels of later lessons (the list below says which lesson
# and what each does); on a GPU they are compiled now, on the simulator their facts are read from
# the saved record of `python -m gemm_lessons.runs.bench` in `results/`.

# %%
rungs = {"naive": ladder.SGEMM["naive"], "reg2d": ladder.SGEMM["reg2d"],
         "reg2d_contiguous": ladder.VARIANTS["reg2d_contiguous"], "vec": ladder.SGEMM["vec"]}
display(Markdown("\n".join(f"* `{name}` (lesson {r.lesson}{', a variant' if r.variant else ''}): {r.title}"
                           for name, r in rungs.items())))
try:
    facts = compiler_facts.compiler_facts({name: r.kernel for name, r in rungs.items()},
                                          threads={name: 256 for name in rungs})
except Exception as e:  # the simulator with no benchmark record in results/, or no nvdisasm on a GPU
    facts = None
    display(Markdown(f"No compiler facts here ({type(e).__name__}): {e}"))
facts

# %% [markdown]
# The columns:
#
# * **registers**: per thread. **local bytes (spills)**: local memory per thread; anything but 0
#   means the compiler ran out of registers and keeps values in memory (`LDL`/`STL`).
# * **blocks/SM**: how many blocks of this kernel fit on one SM at once, and the resource that
#   stops the next one (part 4); where two resources allow the same count, both are named
#   (`registers = threads`: either alone would stop it there).
# * **FFMA**: fused multiply-adds *in the code*, not executed: a loop written once but unrolled
#   eight times shows eight.
# * **LDS / STS**: loads from and stores to shared memory, 4 bytes per thread; **LDS.128**: 16
#   bytes per thread in one instruction (`.64`: 8 bytes). Global loads and stores are **LDG** and
#   **STG**, with `.E` for a 64-bit address and the same width suffixes (`LDG.E.128`).
# * **BAR**: barriers (`BAR.SYNC`, from `cuda.syncthreads()`).

# %%
if facts is not None:
    display(Markdown(listing.describe_facts(facts.facts, facts.source)))

# %% [markdown]
# ## 4 · Occupancy, latency hiding, instruction-level parallelism
#
# An SM holds several blocks at once, as long as their registers, shared memory and threads fit:
# these are its **resident** blocks. **Occupancy** is the number of resident warps divided by the
# most an SM can hold. Whichever resource runs out first limits it
# ([blocks/SM](GLOSSARY.md#blocks-per-sm), [occupancy](GLOSSARY.md#occupancy)). The limits
# depend on the [compute capability](GLOSSARY.md#compute-capability); those of 9.0, with where
# each is documented:

# %%
display(Markdown(hierarchy.cc90_limits_markdown()))

# %% [markdown]
# `compiler_facts.blocks_per_sm` does the arithmetic with these compute capability 9.0 limits:
# a warp's registers are rounded up to the allocation unit and come out of one of the SM's four
# quarters (its sub-partitions, 16,384 registers each: the H100's SM has four processing blocks,
# each with a 16,384 x 32-bit register file, by NVIDIA's
# [Hopper architecture in depth](https://developer.nvidia.com/blog/nvidia-hopper-architecture-in-depth/)),
# each block's shared memory gets the
# reserved bytes added, and the smallest of the four counts wins.

# %%
# NBVAL_CHECK_OUTPUT
limits = compiler_facts.SM_LIMITS_CC90
print("per SM, compute capability 9.0:", ", ".join(f"{k} {v:,}" for k, v in limits.items()))
print(f"{'registers':>9} {'shared bytes':>12} {'threads':>7} | {'blocks/SM':>9}  {'limited by':<13} {'warps':>5} {'occupancy':>9}")
for regs, smem, threads in [(24, 0, 256), (64, 8192, 256), (128, 8192, 256), (168, 16384, 256),
                            (32, 49152, 256), (40, 0, 1024)]:
    blocks, by = compiler_facts.blocks_per_sm(regs, smem, threads)
    warps = blocks * threads // 32
    print(f"{regs:>9} {smem:>12,} {threads:>7} | {blocks:>9}  {by:<13} {warps:>5} "
          f"{warps / (limits['threads'] // 32):>9.1%}")

# %% [markdown]
# Why care? Because of latency. Each cycle, the SM's **[warp schedulers](GLOSSARY.md#warp-scheduler)**
# each pick a warp whose next instruction is ready and **[issue](GLOSSARY.md#issue)** it: send it
# to the execution units, for all the warp's threads at once
# ([Programming Guide, multiprocessor level](https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#multiprocessor-level)).
# When a warp's next instruction needs a result that is not there yet (a load from part 2, or
# even an `FFMA`: the tables below measure its latency), that warp waits, and the scheduler
# issues from another warp that is ready. Two sources of ready instructions **hide latency**:
#
# * **more warps** (thread-level parallelism): while one waits, another runs. That is what
#   occupancy buys.
# * **independent instructions in the same warp** (**instruction-level parallelism, ILP**): if a
#   thread has several accumulators, the second `FFMA` does not wait for the first. The
#   register-tiled GEMM kernels of lessons 03-08 are built this way: each thread keeps a whole
#   patch of results in registers (`TM x TN` accumulators, lesson 04), whose `FFMA`s do not depend
#   on each other.
#
# The arithmetic behind both ([Little's law](GLOSSARY.md#littles-law)): to keep a unit that accepts one instruction per
# cycle busy while each result takes `L` cycles, `L` independent instructions must be in flight.
# With one chain of dependent `FFMA`s a warp can start one every `L` cycles; with `L` chains, at
# most one every cycle. The figure is an idealised schematic of that: a warp that issues nothing
# but `FFMA`s, one per cycle at most, each taking exactly `L` cycles; its only measured input is
# `L`. The measurements after it show how close a real warp comes.

# %%
ffma_latency = latency.ffma_latency(lat)  # None without a latency record
L = round(ffma_latency) if ffma_latency else 4
figures.issue_timeline(latency=L, chains=(1, 2, L), label=(
    f"idealised schematic of one warp; its only measured input: the FFMA latency, {L} cycles ({latency.label(lat)})"
    if ffma_latency else f"idealised schematic of one warp, FFMA latency {L} cycles: an illustrative value, nothing measured here yet"));

# %% [markdown]
# The latency measurement covers both effects (kernels in `gemm_lessons/measure/latency.py`): one warp
# running 1, 2, 4 or 8 independent `FFMA` chains, and 1 to 32 warps of one block each running
# a single chain. A **warp-FFMA** is one `FFMA` instruction issued for a whole warp: 32 FFMAs,
# one per thread.

# %%
if lat is None or not lat.get("ffma"):
    display(Markdown("No latency record with FFMA timings yet: the measured tables appear here once "
                     "`python -m gemm_lessons.measure.latency` has run on a GPU."))
else:
    ilp, tlp = lat["ffma"]["ilp"], lat["ffma"]["warps"]
    lines = [f"FFMA timings, {latency.source(lat)}:", "",
             "| chains in one warp | cycles per warp-FFMA | warp-FFMAs per cycle |", "|---:|---:|---:|"]
    lines += [f"| {r['chains']} | {r['cycles_per_ffma']:.2f} | {r['ffma_per_cycle']:.2f} |" for r in ilp]
    lines += ["", "| warps, one chain each | warp-FFMAs per cycle on the SM |", "|---:|---:|"]
    lines += [f"| {r['warps']} | {r['warp_ffma_per_cycle']:.2f} |" for r in tlp]
    best_w = max(tlp, key=lambda r: r["warp_ffma_per_cycle"])
    one, eight = ilp[0], ilp[-1]
    lines += ["", f"One dependent chain: a warp-`FFMA` every {one['cycles_per_ffma']:.2f} cycles, the latency. "
              f"With {eight['chains']} chains the same warp issues one every {eight['cycles_per_ffma']:.2f} cycles: "
              f"{one['cycles_per_ffma'] / eight['cycles_per_ffma']:.1f}x the work from one warp, by ILP alone"
              + (", but still more than the one cycle of the idealised figure above, likely in part because the "
                 "loop's other instructions (its counter and branch) take issue slots too; the measurement records "
                 "no breakdown of the cycles. " if eight["cycles_per_ffma"] > 1.05 else ". ")
              + 
              f"More warps with one chain each reach at most {best_w['warp_ffma_per_cycle']:.2f} warp-FFMAs per cycle "
              f"on the SM (with {best_w['warps']} warps)"]
    units = lat["device"].get("fp32_lanes_per_sm")  # FP32 results per cycle per SM, by compute capability
    if units:
        lines[-1] += (
            f". The SM's FP32 units (NVIDIA's \"CUDA cores\") deliver {units} FP32 multiply-add results per "
            "cycle, by the Programming Guide's [throughput table]"
            "(https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#arithmetic-instructions): "
            f"{units // 32} warp-FFMAs per cycle. The measurement shows how far below that the one-chain warps "
            "stay; it does not show why, since it records no breakdown of their cycles (the loop also runs "
            "other instructions).")
    else:
        lines[-1] += "."
    display(Markdown("\n".join(lines)))

# %% [markdown]
# The same law for memory: to stream data at bandwidth `B` from a memory whose latency is `t`,
# `B x t` bytes must be in flight. For `B`: the bandwidth of `copy_float4`, lesson 00's copy
# kernel (each thread moves 16 bytes per load and per store), as saved by
# `python -m gemm_lessons.runs.bench` in `results/` for the same GPU (lesson 00 measures the same
# kernel again on a GPU; this cell reads the record, so lesson 00 need not have run). For `t`: the DRAM latency of the chase above. Only the reads count: a
# thread that loads a value waits for it to arrive in a register, while a store writes no
# register, so nothing in the thread waits for it to finish (it still takes its share of the
# bandwidth: a copy's GB/s counts the bytes read plus the bytes written, lesson 00's convention, so
# it reads at half that rate). The formula is `latency.bytes_in_flight`.

# %%
bench = None
if lat is not None:
    try:
        bench = results.load(lat["device"]["name"])  # the benchmark record of the same GPU
    except FileNotFoundError:
        pass
if lat is None or bench is None:
    display(Markdown("Little's law needs a latency record and a benchmark record (`python -m gemm_lessons.runs.bench`) "
                     "of the same GPU in `results/`: " + ("no latency record yet." if lat is None else
                     f"there is no benchmark record of {lat['device']['name']}.")))
else:
    try:
        f = latency.bytes_in_flight(lat, bench)
    except ValueError as e:
        display(Markdown(f"Little's law cannot be worked out from these records: {e}."))
    else:
        how_ns = "the chase's cycles at the clock the driver reports; " if lat["device"].get("clock_mhz") else ""
        display(Markdown(
            f"Reading at {f['read_gbs']:,.0f} GB/s (half of the copy's {f['copy_gbs']:,.0f} GB/s, "
            f"{f['copy_shape'][0]} x {f['copy_shape'][1]} floats, recorded on {results.label(bench)}) with a DRAM "
            f"latency of {f['t_ns']:.0f} ns ({how_ns}{latency.source(lat)}) needs at least {f['bytes'] / 2**20:.2f} MiB of "
            f"loads in flight on the whole GPU: {f['per_sm'] / 1024:.1f} KiB per SM ({f['sm_count']} SMs). Even with "
            f"all {f['threads_per_sm']:,} thread slots of every SM filled, that is {f['per_thread']:.1f} bytes, "
            f"{f['loads_per_thread']:.1f} 4-byte loads, waiting per thread at every moment.\n\n"
            "*At least*: the latency is that of one load on an otherwise idle GPU. At full bandwidth the memory "
            "system queues requests and each load takes longer, so more must be in flight. One effect works the "
            "other way: the random chase may include TLB misses that a streaming copy mostly avoids (part 2), and "
            "the record does not separate them. A kernel with fewer resident threads needs more per thread: "
            "several independent loads, or 16-byte loads (`LDG.E.128`, lesson 05)."))

# %% [markdown]
# ## Exercises
#
# ### 00a-launch
# Write a kernel computing `out[i] = 2*x[i] - y[i]` and a function `launch(x, y, out)` that
# launches it by hand with 128 threads per block. The check runs it for several sizes, looks for
# elements never written and for writes past the end of `out`.

# %%
# NBVAL_CHECK_OUTPUT
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


exercises.check("00a-launch", launch)

# %% [markdown]
# ### 00a-occupancy
# A kernel uses 40 registers per thread, 128 threads per block and 57 KiB of shared memory per
# block. How many blocks fit on one SM of compute capability 9.0, and which resource limits it?
# Answer with a pair such as `(2, "threads")`; the resources are named `"registers"`,
# `"shared memory"`, `"threads"` and `"blocks"`. Work it out by hand first, with the limits
# table of part 4.
#
# 57 KiB is more than a block may declare statically, with `cuda.shared.array` (see the limits
# table): such a kernel gets its shared memory as *dynamic* shared memory, whose size is given at
# launch rather than in the kernel's code ([static shared memory](GLOSSARY.md#static-shared) says
# how numba asks for it), with an explicit opt-in (CUDA C++: `cudaFuncSetAttribute`). The occupancy arithmetic is the same either way.

# %%
# NBVAL_CHECK_OUTPUT
### BEGIN SOLUTION: answer = None
answer = (3, "shared memory")
### END SOLUTION
exercises.check("00a-occupancy", answer)

# %% [markdown]
# ## Takeaway
#
# * A launch is `kernel[blocks, threads_per_block](args)`; each thread finds its element with
#   `cuda.grid`, and the grid is rounded up, so every kernel needs a bounds guard.
# * The 32 threads of a warp execute together: most of what follows in the course (coalescing,
#   bank conflicts, `LDS.128`) is about the addresses one warp presents in one instruction.
# * Memory is a hierarchy: registers, shared memory and L1 on the SM, L2 for the whole GPU,
#   DRAM behind it; a load takes longer at each step away from the SM (part 2 measures how much).
# * SASS is what runs: `FFMA` for the arithmetic, `LDG`/`STG` for global memory, `LDS`/`STS` for
#   shared memory, `.128` for 16 bytes at once, `LDL`/`STL` for spills, `BAR.SYNC` for barriers.
# * A GPU hides latency with independent work: other warps (occupancy) and independent
#   instructions within a thread (ILP). The lessons' kernels use both.
#
# Next: [lesson 00](00_setup_and_roofline.ipynb) measures the two ceilings, peak FP32 and copy
# bandwidth; [lesson 01](01_naive.ipynb) writes the first matrix product. Terms:
# [GLOSSARY.md](GLOSSARY.md); further reading by lesson: [REFERENCES.md](REFERENCES.md).
