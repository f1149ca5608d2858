# %% [markdown]
# # 00a · Primer: how a GPU runs your kernel
#
# **Where we are.** At the start: no kernel has been measured yet. This primer defines the words
# the lessons use on kernels you launch yourself, in five parts: (1) threads, warps, blocks and
# the grid; (2) the memory hierarchy; (3) PTX and SASS, the compiler's output; (4) occupancy and
# latency hiding; (5) the **limiter model**, which every later lesson uses to say *why* a kernel
# takes the time it does. Every term is in the [glossary](GLOSSARY.md); further reading is in
# [REFERENCES.md](REFERENCES.md).

# %%
import gemm_lessons as gl  # first: it chooses the GPU, or numba's CUDA simulator when there is none
from gemm_lessons.teaching import exercises, figures, hierarchy, limiter_table
from gemm_lessons.teaching import primer_listing as listing
from gemm_lessons.instruments import compiler_facts
from gemm_lessons.kernels import ladder
from gemm_lessons.measure import latency
from gemm_lessons.measure.latency import clock64  # the SM's cycle counter, for the latency kernel of part 2
from gemm_lessons.model.limiter import WHAT
import numpy as np
from numba import cuda, float32
from IPython.display import Markdown, display
# %matplotlib inline
print(gl.banner())

# %% [markdown]
# ## 1 · Threads, warps, blocks, grid
#
# A **[kernel](GLOSSARY.md#kernel)** is a function the GPU (the **device**; the CPU is the
# **host**) runs once per **[thread](GLOSSARY.md#thread)**, many at once. Every thread runs the
# same code and finds its data from its own index.
#
# * Threads are grouped into **[blocks](GLOSSARY.md#block)**. A block runs on one
#   **[streaming multiprocessor (SM)](GLOSSARY.md#sm)**, the GPU's unit of execution. The threads
#   of a block share fast **shared memory** and can wait for each other (`cuda.syncthreads()`).
# * The blocks of one launch form the **[grid](GLOSSARY.md#grid)**. Blocks are independent: they
#   run in any order, on any SM, several at once on one SM if its resources allow (part 4).
# * The hardware cuts each block into **[warps](GLOSSARY.md#warp)** of 32 consecutive threads,
#   `threadIdx.x` counting fastest: in a block 32 threads wide, each `threadIdx.y` is one warp. A
#   warp executes one instruction at a time for its 32 threads (its **[lanes](GLOSSARY.md#lane)**),
#   each on its own data ([SIMT](GLOSSARY.md#simt)).
# * **[Compute capability](GLOSSARY.md#compute-capability)** is the SM design's version: 9.0 for
#   Hopper (H100, H200), whose limits this primer quotes.
#
# In numba a kernel is a Python function under `@cuda.jit`; a **[launch](GLOSSARY.md#launch)**
# names the grid in square brackets:
#
# | | numba | CUDA C++ |
# |---|---|---|
# | launch | `k[blocks, threads](args)`; 2-D: `k[(bx, by), (tx, ty)](args)` | `k<<<blocks, threads>>>(args)` |
# | who am I | `cuda.threadIdx.x`, `cuda.blockIdx.x`, ... | `threadIdx.x`, ... |
# | global index | `cuda.grid(1)`; `x, y = cuda.grid(2)` | `blockIdx.x * blockDim.x + threadIdx.x` |

# %%
gpu = hierarchy.this_gpu()
if gpu is not None:
    print(f"{gpu['name']}{' (a record: no GPU here)' if gpu['simulator'] else ''}: compute capability "
          f"{gpu['compute_capability']}, {gpu['sm_count']} SMs, warp size {gpu['warp_size']}.")

# %% [markdown]
# The grid holds whole blocks, so unless the size divides evenly, some threads get an index past
# the end of the data. A 1-D launch over 1000 elements with 256 threads per block:

# %%
figures.execution_model(n=1000, threads_per_block=256);

# %% [markdown]
# **Work it out.** With 256 threads per block: how many blocks, warps, and threads past the end
# for `n = 1000`, and for `n = 4096`?

# %%
# NBVAL_CHECK_OUTPUT
from gemm_lessons.kernels.primer import saxpy as saxpy_module
for n in (1000, 4096):
    blocks = saxpy_module.blocks_for(n, 256)
    print(f"n = {n}: {blocks} blocks, {blocks * 256 // 32} warps, {blocks * 256 - n} threads past the end")

# %% [markdown]
# ### A first kernel: `out = a*x + y`
#
# One thread per element. The `if` is the **[bounds guard](GLOSSARY.md#bounds-guard)**: it stops
# the threads past the end. numba checks no bounds on a GPU.

# %%
# source: gemm_lessons/kernels/primer/saxpy.py  (the package runs this same code; a test keeps the two identical)
@cuda.jit
def saxpy(a, x, y, out):
    i = cuda.grid(1)  # this thread's index in the whole grid: blockIdx.x * blockDim.x + threadIdx.x
    if i < out.size:  # the grid holds whole blocks, so it can reach past the end: those threads do nothing
        out[i] = a * x[i] + y[i]


# %% [markdown]
# **Launch it by hand.** `cuda.to_device` copies a NumPy array into the GPU's
# **[global memory](GLOSSARY.md#global-memory)**; `copy_to_host` waits for the kernel and copies
# back. The output starts as NaN, so an element no thread wrote would show.

# %%
n = 1000
rng = np.random.default_rng(0)
x = rng.standard_normal(n).astype(np.float32)
y = rng.standard_normal(n).astype(np.float32)
a = np.float32(2.5)

x_d, y_d = cuda.to_device(x), cuda.to_device(y)
out_d = cuda.to_device(np.full(n, np.nan, np.float32))
threads = 256
blocks = (n + threads - 1) // threads  # rounded up: every element gets a thread
saxpy[blocks, threads](a, x_d, y_d, out_d)  # the launch
out = out_d.copy_to_host()

# %% [markdown]
# **Check** against a float64 result, allowing float32 rounding. The GPU computes `a*x + y` as
# one **fused multiply-add** (one rounding; part 3 finds it in the machine code).

# %%
# NBVAL_CHECK_OUTPUT
exact = np.float64(a) * x.astype(np.float64) + y.astype(np.float64)
allowed = 2 * np.finfo(np.float32).eps * (np.abs(np.float64(a) * x) + np.abs(y))
print("elements never written:", int(np.isnan(out).sum()))
print("every element within float32 rounding of the exact result:", bool((np.abs(out - exact) <= allowed).all()))

# %% [markdown]
# **Without the guard**, on views of longer buffers (so nothing outside our own arrays is hit):

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
    print(f"simulator: IndexError ({str(e)[:60]}...). A GPU raises nothing and writes past the end.")

# %% [markdown]
# ## 2 · The memory hierarchy
#
# From closest to the threads to farthest:
#
# * **[Registers](GLOSSARY.md#register)**: a thread's own variables; instructions read their
#   operands from them. A kernel that needs more than it gets keeps some values in
#   **[local memory](GLOSSARY.md#local-memory)**, in DRAM: a **[spill](GLOSSARY.md#register-spill)**.
# * **[Shared memory](GLOSSARY.md#shared-memory)** (`cuda.shared.array`): on the SM, seen by the
#   threads of one block, managed by the program.
# * **[L1 cache](GLOSSARY.md#l1)**: on the SM, in the same storage as shared memory; it keeps
#   recently loaded global data.
# * **[L2 cache](GLOSSARY.md#l2)**: one for the whole GPU, shared by all SMs.
# * **[DRAM](GLOSSARY.md#dram)** (HBM): the GPU's main memory, where global memory lives. Data
#   moves between DRAM, L2 and L1 in 32-byte **[sectors](GLOSSARY.md#sector)**.
#
# **[Latency](GLOSSARY.md#latency)** is how long one access takes from issue to result;
# **[bandwidth](GLOSSARY.md#bandwidth)** is how many bytes per second a level delivers when many
# accesses are in flight.

# %%
hier = hierarchy.hierarchy()
lat = hier.latency_record
hier.figure(title=f"memory hierarchy of {(hierarchy.this_gpu() or {}).get('name', 'the H100')}, closest to the threads on top "
                  "(latency: cycles of one dependent load)");

# %% [markdown]
# ### How the latencies are measured: pointer chasing
#
# One thread follows a chain, `j = chain[j]`: each load's address is what the previous load
# returned, so loads cannot overlap and each step takes one load's latency
# ([pointer chasing](GLOSSARY.md#pointer-chasing)). The array's size decides where loads are
# served: a few KiB stay in L1, a few MiB in L2, several times the L2 size comes from DRAM.

# %%
# source: gemm_lessons/measure/latency.py  (the package runs this same code; a test keeps the two identical)
@cuda.jit
def chase_global(chain, start, steps, out):
    # One thread follows the chain: each load's address is the value the previous load
    # returned, so the loads cannot overlap.  Indices are uint32: unsigned, so numba has no
    # negative-index wraparound to add (the primer's lab notes show it for a signed one).
    # out = [where it ended, cycles it took].
    j = start
    t0 = clock64()  # the SM's cycle counter
    for _ in range(steps):
        j = chain[j]
    t1 = clock64()
    out[0] = j
    out[1] = t1 - t0


# %%
if lat is None:
    print("No latency record: run `python -m gemm_lessons.measure.latency` on a GPU.")
else:
    figures.latency_curve(lat)
    c = {k: v["cycles_per_load"] for k, v in latency.levels(lat).items()}
    clock = lat["device"].get("clock_mhz")
    ns = (lambda cyc: f" ({cyc / clock * 1e3:.0f} ns at {clock:.0f} MHz)") if clock else (lambda cyc: "")
    print(f"A load served by L1 takes {c['L1']:.0f} cycles{ns(c['L1'])}"
          + (f", by L2 {c['L2']:.0f}{ns(c['L2'])}, {c['L2'] / c['L1']:.1f}x longer" if "L2" in c else "")
          + (f", from DRAM {c['DRAM']:.0f}{ns(c['DRAM'])}, {c['DRAM'] / c['L1']:.0f}x" if "DRAM" in c else "")
          + (f"; shared memory {lat['shared']['cycles_per_load']:.0f} cycles" if lat.get("shared") else "")
          + ". A thread that waits for each load before the next runs at these speeds.")

# %% [markdown]
# ## 3 · PTX and SASS: what the compiler made
#
# numba compiles the Python kernel to **[PTX](GLOSSARY.md#ptx)**, NVIDIA's portable assembly
# language; a CUDA compiler library then turns PTX into **[SASS](GLOSSARY.md#sass)**, the machine
# code of one GPU generation, which the lessons count because it is what runs. In numba,
# `kernel.inspect_asm()` gives the PTX, `kernel.inspect_sass()` the SASS. The lines of `saxpy` that
# do its work (on the simulator, from a saved listing):

# %%
how, compiled = listing.listing()
if compiled is None:
    print("No compiler listing: run `python -m gemm_lessons.teaching.primer_listing` on a GPU.")
else:
    k = compiled["saxpy"]
    ptx = [l.strip() for l in listing.ptx_body(k["ptx"]).splitlines()
           if l.strip().startswith(("ld.global", "fma.rn", "st.global"))]
    sass = listing.instructions(k["sass"])
    work = [i for i in sass if i["base"] in ("S2R", "ISETP", "EXIT", "LDG", "FFMA", "STG")]
    print("PTX:\n  " + "\n  ".join(ptx))
    print(f"\nSASS: {len(work)} of its {len(sass)} instructions (the others read the kernel's parameters "
          "and compute the index and the addresses):\n  " + "\n  ".join(f"{i['addr']} {i['text']}" for i in work))

# %% [markdown]
# `S2R` reads `threadIdx.x` (`SR_TID.X`) and `blockIdx.x` (`SR_CTAID.X`). `ISETP` compares `i`
# with `out.size` (in two halves: `i` has 64 bits) and sets the
# **[predicate](GLOSSARY.md#predicate)** `P0`, one bit per thread; `@P0 EXIT` ends the threads past
# the end: the bounds guard. **[`LDG`](GLOSSARY.md#ldg)** loads from global memory (`.E`: 64-bit
# address), `STG` stores, and **[`FFMA`](GLOSSARY.md#ffma)** is the fused multiply-add `a*x + y`.
#
# ### Shared memory and a barrier
#
# Each block reverses its slice of `THREADS` values through shared memory. A thread reads a value
# *another* thread stored, so all stores must finish first: `cuda.syncthreads()` is a
# **[barrier](GLOSSARY.md#barrier)** where each thread of the block waits for all the others. All
# must reach it, so it stands outside `if t < n`.

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
r_d = cuda.to_device(np.full(300, np.nan, np.float32))
reverse_slices[(v.size + THREADS - 1) // THREADS, THREADS](cuda.to_device(v), r_d)
print("matches the host:", np.array_equal(r_d.copy_to_host(), reverse.reference(v)))

# %%
if compiled is not None:
    ops = compiled["reverse_slices"]["sass_summary"]
    print("reverse_slices:", ", ".join(f"{op} x {n}" for op, n in ops.items()))

# %% [markdown]
# `STS` and `LDS` store to and load from shared memory ([LDS, STS](GLOSSARY.md#lds));
# [`BAR.SYNC`](GLOSSARY.md#bar-sync) is the barrier.
#
# ### The compiler-facts table
#
# Each lesson shows a table like this one for its kernels. Here, three SGEMM kernels: `naive`
# (lesson 01), `reg2d_contiguous` (lesson 04) and `vec` (lesson 05):

# %%
rungs = {"naive": ladder.SGEMM["naive"], "reg2d_contiguous": ladder.VARIANTS["reg2d_contiguous"],
         "vec": ladder.SGEMM["vec"]}
try:
    facts = compiler_facts.compiler_facts({name: r.kernel for name, r in rungs.items()},
                                          threads={name: 256 for name in rungs})
except Exception as e:  # the simulator with no benchmark record in results/, or no nvdisasm on a GPU
    facts = None
    print(f"No compiler facts here ({type(e).__name__}): {e}")
facts

# %% [markdown]
# **registers**: per thread. **local bytes (spills)**: anything but 0 means values kept in local
# memory ([`LDL`/`STL`](GLOSSARY.md#ldl)). **blocks/SM**: how many blocks fit on one SM at once,
# and the resource that stops the next one (part 4). The opcode columns count instructions *in the
# code*, not executed: a loop unrolled eight times shows eight. **[`.128`](GLOSSARY.md#width-128)**
# moves 16 bytes per thread in one instruction (`.64`: 8 bytes; no suffix: 4). Compare `naive`'s
# `LDG.E` with `vec`'s `LDG.E.128`, and the local bytes of `reg2d_contiguous` with the others'.

# %% [markdown]
# ## 4 · Occupancy, latency hiding, instruction-level parallelism
#
# An SM holds several blocks at once (its **[resident](GLOSSARY.md#resident)** blocks) as long as
# their registers, shared memory and threads fit. **[Occupancy](GLOSSARY.md#occupancy)** is the
# number of resident warps over the most an SM can hold; whichever resource runs out first limits
# it ([blocks/SM](GLOSSARY.md#blocks-per-sm)). The compute capability 9.0 limits
# (sources in [REFERENCES.md](REFERENCES.md#lesson-00a)):

# %%
# NBVAL_CHECK_OUTPUT
for key, what, value, source in hierarchy.CC90_LIMITS:
    print(f"{what}: {value:,}")

# %% [markdown]
# `compiler_facts.blocks_per_sm` does the arithmetic: a warp's registers are rounded up to the
# allocation unit, each block's shared memory gets the reserved bytes added, and the smallest
# count wins.

# %%
# NBVAL_CHECK_OUTPUT
max_warps = compiler_facts.SM_LIMITS_CC90["threads"] // 32
print(f"{'registers':>9} {'shared bytes':>12} {'threads':>7} | {'blocks/SM':>9}  {'limited by':<13} {'warps':>5} {'occupancy':>9}")
for regs, smem, threads in [(24, 0, 256), (64, 8192, 256), (128, 8192, 256), (32, 49152, 256), (40, 0, 1024)]:
    blocks, by = compiler_facts.blocks_per_sm(regs, smem, threads)
    warps = blocks * threads // 32
    print(f"{regs:>9} {smem:>12,} {threads:>7} | {blocks:>9}  {by:<13} {warps:>5} {warps / max_warps:>9.1%}")

# %% [markdown]
# Why care? Because of latency. Each cycle, each of the SM's four
# **[warp schedulers](GLOSSARY.md#warp-scheduler)** picks a warp whose next instruction is ready
# and **[issues](GLOSSARY.md#issue)** it. A warp waiting for a result (a load, or even an `FFMA`)
# is skipped. Two sources of ready instructions **[hide latency](GLOSSARY.md#latency-hiding)**:
# **more warps** (what occupancy buys), and **independent instructions in one warp**
# (**[ILP](GLOSSARY.md#ilp)**): with several accumulators, the second `FFMA` need not wait for the
# first. The register-tiled kernels of lessons 03-08 use both.
#
# **[Little's law](GLOSSARY.md#littles-law)**: to keep a unit busy that accepts one instruction per
# cycle while each result takes `L` cycles, `L` independent instructions must be in flight. A
# schematic of one warp, then the measurement:

# %%
ffma_latency = latency.ffma_latency(lat)  # None without a latency record
L = round(ffma_latency) if ffma_latency else 4
figures.issue_timeline(latency=L, chains=(1, 2, L), label=(
    f"schematic of one warp; FFMA latency {L} cycles, measured on {latency.label(lat)}"
    if ffma_latency else f"schematic of one warp, FFMA latency {L} cycles (an illustrative value)"));

# %%
if lat is not None and lat.get("ffma"):
    ilp, tlp = lat["ffma"]["ilp"], lat["ffma"]["warps"]
    one, many, w1, wn = ilp[0], ilp[-1], tlp[0], tlp[-1]
    display(Markdown("\n".join([
        "| independent chains in one warp | " + " | ".join(str(r["chains"]) for r in ilp) + " |",
        "|---" * (len(ilp) + 1) + "|",
        "| cycles per warp-FFMA | " + " | ".join(f"{r['cycles_per_ffma']:.2f}" for r in ilp) + " |", "",
        f"One chain: a warp-`FFMA` every {one['cycles_per_ffma']:.2f} cycles, its latency; {many['chains']} chains: "
        f"{one['cycles_per_ffma'] / many['cycles_per_ffma']:.1f}x the work from the same warp. {wn['warps']} warps "
        f"of one chain each: {wn['warp_ffma_per_cycle']:.2f} warp-FFMAs per cycle on the SM, "
        f"{wn['warp_ffma_per_cycle'] / w1['warp_ffma_per_cycle']:.1f}x one warp."])))

# %% [markdown]
# A **[warp-FFMA](GLOSSARY.md#warp-fma)** is one `FFMA` for a whole warp (32 FFMAs); the SM's 128
# FP32 lanes could complete 4 per cycle (why these loops stay below: Lab notes). The same law for memory: streaming at bandwidth `B` from a
# memory of latency `t` needs `B x t` bytes on their way at every moment. With part 5's numbers:

# %%
rec = limiter_table.record()
m = rec["model"]["machine"]
per_sm = m["dram_gbs"] * m["dram_latency_ns"] / m["sm_count"]  # GB/s x ns = bytes
per_thread = per_sm / compiler_facts.SM_LIMITS_CC90["threads"]
print(f"{m['dram_gbs']:,.0f} GB/s x {m['dram_latency_ns']:.0f} ns = {per_sm * m['sm_count'] / 1e6:.2f} MB in flight "
      f"({rec['device']['name']}): {per_sm / 1e3:.1f} KB per SM, {per_thread:.1f} bytes for each of the "
      f"{compiler_facts.SM_LIMITS_CC90['threads']:,} threads a full SM holds"
      + (": more than one 4-byte load per thread at every moment." if per_thread > 4 else "."))

# %% [markdown]
# A kernel with fewer bytes in flight gets a smaller share of the bandwidth; 16-byte loads
# (lesson 05) and several loads per thread keep more.
#
# ## 5 · The limiter model
#
# Each unit of the GPU has a peak rate. What a kernel asks of a unit, divided by that rate, is the
# least time the kernel can take: a **ceiling**. The kernel takes at least its largest ceiling,
# the **binding** one, which names its **limiter** ([limiter model](GLOSSARY.md#limiter-model)).
# Six ceilings:
#
# | ceiling | the least time it allows |
# |---|---|
# | FP32 | FFMAs / (SMs x 128 lanes x clock) |
# | issue | warp-instructions / (SMs x 4 schedulers x clock) |
# | shared | shared-memory [wavefronts](GLOSSARY.md#wavefront) / (SMs x 1 per cycle x clock); a wavefront serves 32 banks x 4 bytes |
# | L2 | bytes through L2 / L2 bandwidth (measured) |
# | DRAM | bytes to and from DRAM / DRAM bandwidth (measured with a copy) |
# | latency | the DRAM ceiling / the fraction of the `B x t / SMs` bytes (part 4) the kernel keeps in flight per SM (at most 1) |
#
# The clock is the SM clock the GPU held while the kernels ran.
#
# The prediction is the binding ceiling, stretched when the last [wave](GLOSSARY.md#wave) of
# blocks leaves SMs idle ([tail](GLOSSARY.md#tail-effect)). The profiler,
# [Nsight Compute](GLOSSARY.md#ncu), counts the instructions, wavefronts and bytes, and reports how
# busy each unit was (% of its peak). Its **busiest unit** should be the binding one; below 60% on
# every unit, its word is "latency". The record: one H200 run that timed and profiled every rung.

# %%
print(f"The model's machine ({rec['device']['name']}, {rec['date'][:10]}): {m['sm_count']} SMs at "
      f"{m['clock_mhz']:,.0f} MHz, DRAM {m['dram_gbs']:,.0f} GB/s, L2 {m['l2_gbs']:,.0f} GB/s, "
      f"DRAM latency {m['dram_latency_ns']:.0f} ns.")

# %% [markdown]
# **Predict.** Lesson 00's copy kernel reads an 8192 x 8192 float32 matrix and writes it
# elsewhere, 16 bytes per load and store, no arithmetic. Which ceiling binds, and how many ms does
# it take? Count the bytes; use the machine above.

# %%
my_copy_ms = None  # your prediction, in ms

# %%
t = limiter_table.why(["copy"], kind="transpose")
t

# %%
row = t.row("copy")
figures.limiter_bars(row, title=f"limiter model of the 8192 x 8192 copy ({t.device})");
exercises.compare_prediction(my_copy_ms, row.measured_ms, "the copy's time, ms",
                             f"measured in the limiter run on {t.device}, {t.date}")

# %% [markdown]
# **Why.** Computed from the table:

# %%
nbytes = 2 * 8192 * 8192 * 4
counted = row.ceilings_ms["dram"] * 1e-3 * m["dram_gbs"] * 1e9  # the DRAM bytes the profiler counted
top = row.ceilings_ms[row.binding]
runner_up = max((n for n in row.ceilings_ms if row.ceilings_ms[n] < top), key=row.ceilings_ms.get)
tie = [n for n in row.ceilings_ms if n != row.binding and np.isclose(row.ceilings_ms[n], top)]
binding = (" (the binding ceiling)" if row.binding == "dram" else
           f"; the binding ceiling is {limiter_table.SHORT[row.binding]}, {top:.3f} ms")
print(f"The copy moves {nbytes / 1e6:,.0f} MB; the profiler counted {counted / 1e6:,.0f} MB of DRAM traffic: "
      f"{row.ceilings_ms['dram']:.3f} ms at {m['dram_gbs']:,.0f} GB/s{binding}. The next, {WHAT[runner_up]}, "
      f"allows {row.ceilings_ms[runner_up]:.3f} ms"
      + ("; the latency ceiling equals the DRAM one: the copy keeps enough bytes in flight" if tie == ["latency"] else "")
      + f". With the tail the model predicts {row.predicted_ms:.3f} ms; the copy took {row.measured_ms:.3f} ms, "
      f"{row.ratio:.2f}x. The profiler's busiest unit: {limiter_table.SHORT[row.busiest]}, {row.busiest_pct:.0f}% of "
      "its peak" + (", the unit the model names." if row.agrees else f", not the {limiter_table.SHORT[row.binding]} "
                    "the model names."))

# %% [markdown]
# The model's DRAM bandwidth is this copy's own rate, so here it must agree. The SGEMM kernels
# did not set the ceilings, and take longer than predicted: the model assumes the binding unit
# busy 100% of the time.

# %%
sg = limiter_table.why(["naive", "naive_uncoalesced", "smem_tile", "smem_tile16", "reg1d", "reg2d", "vec",
                        "vec_split", "dbuf_one_buffer", "dbuf", "warptile", "cublas"])
same = [r for r in sg.rows if r.agrees]
busy = [r.busiest_pct for r in same]
ratio = [r.ratio for r in same]
print(f"In {len(same)} of the record's {len(sg.rows)} SGEMM kernels the profiler's busiest unit is the binding one. "
      f"It is busy {min(busy):.0f}-{max(busy):.0f}% of the time, and measured/predicted is "
      f"{min(ratio):.2f}-{max(ratio):.2f}: the rest of the time the warps stall (at barriers, on a "
      "dependent result, on loads not hidden).")

# %% [markdown]
# ## Exercises
#
# ### 00a-launch
# Write a kernel computing `out[i] = 2*x[i] - y[i]` and a function `launch(x, y, out)` that
# launches it with 128 threads per block. The check tries several sizes, looking for elements
# never written and writes past the end.

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
# Answer with a pair such as `(2, "threads")`; the resources are `"registers"`,
# `"shared memory"`, `"threads"` and `"blocks"`. Work it out by hand with the limits of part 4.

# %%
# NBVAL_CHECK_OUTPUT
### BEGIN SOLUTION: answer = None
answer = (3, "shared memory")
### END SOLUTION
exercises.check("00a-occupancy", answer)

# %% [markdown]
# ## Takeaway
#
# * `kernel[blocks, threads](args)` launches whole blocks, so every kernel needs a bounds guard.
#   A warp's 32 threads run each instruction together.
# * Registers, shared memory and L1 sit on the SM, L2 serves all SMs, DRAM is behind it: each step
#   away costs more cycles per load.
# * SASS is what runs: `FFMA` computes, `LDG`/`STG` and `LDS`/`STS` move global and shared data,
#   `.128` moves 16 bytes, `LDL`/`STL` mean spills, `BAR.SYNC` is a barrier.
# * Latency is hidden by more warps (occupancy) and independent instructions (ILP); Little's law
#   says how much must be in flight.
# * A kernel takes at least its largest ceiling (FP32, issue, shared wavefronts, L2, DRAM,
#   latency): the binding one is the limiter, and the profiler's busiest unit confirms it.
#
# Next: [lesson 00](00_setup_and_roofline.ipynb) measures peak FP32 and copy bandwidth;
# [lesson 01](01_naive.ipynb) writes the first matrix product.
#
# ## Sources
#
# The memory spaces follow section 1.1 of source article [3] ([REFERENCES.md](REFERENCES.md#seed-002));
# NVIDIA's guides and the benchmark papers: [lesson 00a](REFERENCES.md#lesson-00a).

# %% [markdown]
# ## Lab notes
#
# * **Records.** On the simulator, the latencies come from `results/latency-<device>.json`
#   (`python -m gemm_lessons.measure.latency`), the listing from `results/primer-listing.json`
#   (`python -m gemm_lessons.teaching.primer_listing`), the compiler facts from a bench record,
#   and part 5 from `results/limiter-nvidia-h200.json` (`python -m gemm_lessons.runs.limiter`). On a
#   GPU, parts 2-4 measure and compile now, with a shorter latency run (`latency.collect(quick=True)`);
#   part 5 always reads the limiter record.
#   A cell whose first line is `# NBVAL_CHECK_OUTPUT` has an output the tests compare with the
#   saved one ([nbval](GLOSSARY.md#nbval)).
# * **The rest of the SASS.** `saxpy` compiles to a few dozen instructions;
#   `listing.sass_until_exit(compiled["saxpy"]["sass"])` prints them all. Most compute addresses:
#   numba's index is a signed 64-bit integer, and for each array access it adds NumPy's
#   wraparound for negative indices (`x[-1]` is `x[len(x) - 1]`): a sign shift (`SHF`), a mask
#   (`LOP3`) and an add (`IADD3`, `IMAD.X`). `listing.saxpy_walkthrough` reads it line by line.
# * **L1 and shared memory** share 256 KiB per SM; the driver picks the split (the carveout) per
#   kernel, up to 228 KiB of shared memory.
# * **The latency ceiling** counts a block's loads as in flight half of its life (it loads, then
#   stores): `LATENCY_DUTY` in `gemm_lessons/model/limiter.py`.
# * **DRAM latency** is that of a random chase on an idle GPU. A chase over hundreds of MiB can
#   also miss the GPU's address-translation caches ([TLB](GLOSSARY.md#tlb)), and that time is part
#   of what it records; a streaming access mostly avoids it. Under full bandwidth, requests queue
#   and each load takes longer, so Little's law's bytes in flight are a lower bound.
# * **The copy's DRAM bytes.** The profiler counts less DRAM traffic than the 537 MB the copy reads
#   and writes; the record does not say where the rest went (the L2 writes back to DRAM lazily, so
#   written data still in L2 when the kernel ends is one candidate, not checked).
# * **FFMA rates.** With 8 chains one warp still issues less than one `FFMA` per cycle, and 32
#   one-chain warps stay below the 4 warp-FFMAs per cycle of the FP32 lanes (the full sweep:
#   `lat["ffma"]`). The loop's counter
#   and branch take issue slots too, and the many-warp rate is taken from the first warp's start to
#   the last one's end; the record holds no breakdown of the cycles.
