# %%
# Setup: where the course is not installed (Colab), install it; then say which GPU this is.
import importlib.util, shutil, subprocess, sys
REPOSITORY, BRANCH = '', 'main'  # [tool.gemm-lessons] in the course's pyproject.toml
smi = shutil.which("nvidia-smi")
gpu = subprocess.run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True,
                     text=True).stdout.strip().splitlines() if smi else []
gpu_name, driver = (gpu[0].rsplit(", ", 1) + [""])[:2] if gpu else ("", "")
cc = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                    text=True).stdout.strip().splitlines()[:1] if gpu else []  # older drivers: not a field
cc = cc[0] if cc and cc[0].replace(".", "", 1).isdigit() else ""
if importlib.util.find_spec("gemm_lessons") is None:
    if not REPOSITORY:
        raise ModuleNotFoundError("gemm_lessons is not installed, and this notebook names no repository to install "
                                  "it from: in a clone of the course run  pip install -e .  then restart the kernel")
    major = int(driver.split(".")[0]) if driver.split(".")[0].isdigit() else 0
    # CUDA 13 needs driver 580+ and compute capability 7.5+ (it dropped Maxwell, Pascal and Volta)
    extra = ("[cu13]" if major >= 580 and not (cc and float(cc) < 7.5) else "[cu12]") if gpu_name else ""
    print(f"installing gemm-lessons{extra} from github.com/{REPOSITORY} ({BRANCH}) ...")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                    f"gemm-lessons{extra} @ git+https://github.com/{REPOSITORY}@{BRANCH}"], check=True)
capability = f"compute capability {cc}, " if cc else ""
print(f"GPU: {gpu_name} ({capability}driver {driver})" if gpu_name else
      "No GPU: the lessons run on numba's CUDA simulator, slowly (Colab: Runtime > Change runtime type > T4 GPU).")

# %% [markdown]
# # 00a · Primer: how a GPU runs your kernel
#
# **Where we are.** At the start. This primer defines the course's words on kernels you launch
# yourself. Terms: [glossary](GLOSSARY.md); reading: [REFERENCES.md](REFERENCES.md).

# %%
import gemm_lessons as gl  # first: it chooses the GPU, or numba's CUDA simulator when there is none
from gemm_lessons.teaching import exercises, figures, hierarchy, limiter_table
from gemm_lessons.teaching import primer_listing as listing
from gemm_lessons.instruments import compiler_facts
from gemm_lessons.kernels import ladder
from gemm_lessons.measure import latency
from gemm_lessons.measure.latency import clock64  # the SM's cycle counter, for the latency kernel of part 2
from gemm_lessons.model import limiter
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
# **host**) runs once per **[thread](GLOSSARY.md#thread)**, many at once, each finding its data
# from its own index.
#
# * Threads form **[blocks](GLOSSARY.md#block)**. A block runs on one
#   **[streaming multiprocessor (SM)](GLOSSARY.md#sm)**; its threads share fast **shared memory**
#   and can wait for each other (`cuda.syncthreads()`).
# * A launch's blocks, the **[grid](GLOSSARY.md#grid)**, are independent: any order, any SM,
#   several per SM if resources allow (part 4).
# * A block is cut into **[warps](GLOSSARY.md#warp)** of 32 consecutive threads (`threadIdx.x`
#   fastest). A warp's threads, its **[lanes](GLOSSARY.md#lane)**, execute each instruction
#   together, each on its own data ([SIMT](GLOSSARY.md#simt)).
# * **[Compute capability](GLOSSARY.md#compute-capability)**, the SM design's version, is 9.0 for
#   Hopper (H100, H200).
#
# In numba a kernel is a Python function under `@cuda.jit`. A **[launch](GLOSSARY.md#launch)**
# names the grid in square brackets: `k[blocks, threads](args)`, in 2-D `k[(bx, by), (tx, ty)](args)`.

# %%
gpu = hierarchy.this_gpu()
if gpu is not None:
    print(f"{gpu['name']}{' (a record: no GPU here)' if gpu['simulator'] else ''}: compute capability "
          f"{gpu['compute_capability']}, {gpu['sm_count']} SMs, warp size {gpu['warp_size']}.")

# %% [markdown]
# The grid holds whole blocks, so some threads can index past the end of the data. 1000
# elements, 256 threads per block:

# %%
figures.execution_model(n=1000, threads_per_block=256);

# %% [markdown]
# **Work it out** on paper before running the next cell. With 256 threads per block: how many
# blocks, warps, and threads past the end for `n = 2500` and `n = 4096`?

# %%
# NBVAL_CHECK_OUTPUT
from gemm_lessons.kernels.primer import saxpy as saxpy_module
for n in (2500, 4096):
    blocks = saxpy_module.blocks_for(n, 256)
    print(f"n = {n}: {blocks} blocks, {blocks * 256 // 32} warps, {blocks * 256 - n} threads past the end")

# %% [markdown]
# ### A first kernel: `out = a*x + y`
#
# One thread per element. The `if`, the **[bounds guard](GLOSSARY.md#bounds-guard)**, stops the
# threads past the end: numba checks no bounds on a GPU.

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
# back. The output starts as NaN, so unwritten elements show.

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
# **Check** against float64, allowing float32 rounding: the GPU computes `a*x + y` as one
# **fused multiply-add**, rounded once.

# %%
# NBVAL_CHECK_OUTPUT
exact = np.float64(a) * x.astype(np.float64) + y.astype(np.float64)
allowed = 2 * np.finfo(np.float32).eps * (np.abs(np.float64(a) * x) + np.abs(y))
print("elements never written:", int(np.isnan(out).sum()))
print("every element within float32 rounding of the exact result:", bool((np.abs(out - exact) <= allowed).all()))

# %% [markdown]
# **Without the guard**, on views of longer buffers, so stray writes hit only our own arrays:

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
# * **[Registers](GLOSSARY.md#register)**: a thread's variables, the instructions' operands. What
#   does not fit **[spills](GLOSSARY.md#register-spill)** to **[local memory](GLOSSARY.md#local-memory)**, in DRAM.
# * **[Shared memory](GLOSSARY.md#shared-memory)** (`cuda.shared.array`): on the SM, one block's,
#   managed by the program.
# * **[L1 cache](GLOSSARY.md#l1)**: on the SM, in shared memory's storage. One
#   **[L2 cache](GLOSSARY.md#l2)** serves all SMs.
# * **[DRAM](GLOSSARY.md#dram)** (here HBM): main memory, home of global
#   memory. Data moves between DRAM, L2 and L1 in 32-byte **[sectors](GLOSSARY.md#sector)**, four
#   to a 128-byte **[cache line](GLOSSARY.md#cache-line)**.
#
# **[Latency](GLOSSARY.md#latency)**: how long one access takes from issue to result;
# **[bandwidth](GLOSSARY.md#bandwidth)**: bytes per second a level delivers with many accesses in
# flight.

# %%
hier = hierarchy.hierarchy()
lat = hier.latency_record
hier.figure(title=f"memory hierarchy of {(hierarchy.this_gpu() or {}).get('name', 'the H100')}, closest to the threads on top "
                  "(latency: cycles of one dependent load)");

# %% [markdown]
# ### Measuring latency: pointer chasing
#
# The kernel below times one thread following a chain whose stops are a cache line apart
# ([pointer chasing](GLOSSARY.md#pointer-chasing)). The array's size picks the level: a few KiB
# stay in L1, a few MiB in L2, more come from DRAM.

# %%
# source: gemm_lessons/measure/latency.py  (the package runs this same code; a test keeps the two identical)
@cuda.jit
def chase_global(chain, start, steps, out):
    # One thread follows the chain: each load's address is the value the previous load
    # returned, so the loads cannot overlap.  out = [where it ended, cycles it took].
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
    ns = (lambda cyc: f" ({cyc / clock * 1e3:.0f} ns)") if clock else (lambda cyc: "")
    print(f"A load served by L1 takes {c['L1']:.0f} cycles{ns(c['L1'])}"
          + (f", by L2 {c['L2']:.0f}{ns(c['L2'])}, {c['L2'] / c['L1']:.1f}x longer" if "L2" in c else "")
          + (f", from DRAM {c['DRAM']:.0f}{ns(c['DRAM'])}, {c['DRAM'] / c['L1']:.0f}x" if "DRAM" in c else "")
          + (f"; shared memory {lat['shared']['cycles_per_load']:.0f} cycles" if lat.get("shared") else "")
          + (f". Nanoseconds at {clock:.0f} MHz." if clock else "."))

# %% [markdown]
# ## 3 · PTX and SASS
#
# numba compiles the kernel to **[PTX](GLOSSARY.md#ptx)**, NVIDIA's portable assembly; the CUDA
# compiler turns PTX into **[SASS](GLOSSARY.md#sass)**, one GPU generation's machine code: what
# runs (`kernel.inspect_asm()`, `kernel.inspect_sass()`). `saxpy`'s working lines:

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
    print(f"\nSASS: {len(work)} of its {len(sass)} instructions (the others: parameters, index, addresses):\n  "
          + "\n  ".join(f"{i['addr']} {i['text']}" for i in work))

# %% [markdown]
# `S2R` reads `threadIdx.x` and `blockIdx.x`. `ISETP` compares `i` with `out.size`, setting the
# **[predicate](GLOSSARY.md#predicate)** `P0`, one bit per thread; `@P0 EXIT` ends the threads
# past the end: the bounds guard. **[`LDG`](GLOSSARY.md#ldg)** loads from global memory (`.E`:
# 64-bit address), `STG` stores, **[`FFMA`](GLOSSARY.md#ffma)** is the fused multiply-add.
#
# ### Shared memory and a barrier
#
# Each block reverses its slice of `THREADS` values through shared memory. A thread reads what
# *another* thread stored, so it first waits for the whole block at a
# **[barrier](GLOSSARY.md#barrier)**, `cuda.syncthreads()`, which every thread must reach: it
# stands outside `if t < n`.

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
# Each lesson shows one; here `naive` (lesson 01), `reg2d_contiguous` (04), `vec` (05):

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
# **blocks/SM**: blocks that fit on one SM at once, and the resource that stops the next (part 4).
# Opcodes are counted *in the code*, not executed. **[`.128`](GLOSSARY.md#width-128)** moves 16
# bytes per thread in one instruction (`.64`: 8; none: 4); [`LDL`/`STL`](GLOSSARY.md#ldl) are
# spills.

# %%
if facts is not None:
    wide = {name: f["sass"].get("LDG.E.128", 0) for name, f in facts.facts.items()}
    spills = {name: f["local_bytes"] for name, f in facts.facts.items() if f["local_bytes"]}
    print((f"vec loads with LDG.E.128 ({wide['vec']} in its code), naive with LDG.E: vec moves 4x the bytes per "
           "load instruction. " if wide["vec"] and not wide["naive"] else
           f"LDG.E.128 in the code: vec {wide['vec']}, naive {wide['naive']}. ")
          + (" ".join(f"{name} spills {b} bytes per thread, hence its LDL and STL." for name, b in spills.items())
             or "No kernel here spills."))

# %% [markdown]
# ## 4 · Occupancy and latency hiding
#
# An SM holds **[resident](GLOSSARY.md#resident)** blocks while their registers, shared memory
# and threads fit. **[Occupancy](GLOSSARY.md#occupancy)**: resident warps over the most an SM can
# hold; the first resource to run out limits it ([blocks/SM](GLOSSARY.md#blocks-per-sm)). Compute
# capability 9.0 ([sources](REFERENCES.md#lesson-00a)):

# %%
# NBVAL_CHECK_OUTPUT
v = {key: value for key, _, value, _ in hierarchy.CC90_LIMITS if key}
print(f"Per SM: {v['registers']:,} registers (handed out per warp, {hierarchy.REGISTER_ALLOCATION_UNIT} at a time), "
      f"{v['shared_bytes']:,} bytes of shared memory ({v['shared_reserved_per_block']:,} reserved per block), "
      f"{v['threads']:,} threads (64 warps), {v['blocks']} blocks. Per block at most: "
      f"{hierarchy.STATIC_SHARED_BYTES_PER_BLOCK:,} bytes of `cuda.shared.array`, "
      f"{hierarchy.OPTIN_SHARED_BYTES_PER_BLOCK:,} of dynamic shared memory with the opt-in.")

# %% [markdown]
# `compiler_facts.blocks_per_sm` rounds a warp's registers up to the allocation unit
# (28 x 32 = 896 becomes 1,024), adds the reserved bytes to each block's shared memory, and takes
# the smallest count (`=`: a tie).

# %%
# NBVAL_CHECK_OUTPUT
max_warps = compiler_facts.SM_LIMITS_CC90["threads"] // 32
print(f"{'registers':>9} {'shared bytes':>12} {'threads':>7} | {'blocks/SM':>9}  {'limited by':<19} {'warps':>5} {'occupancy':>9}")
for regs, smem, threads in [(24, 0, 256), (28, 0, 256), (64, 8192, 256), (128, 8192, 256), (32, 49152, 256),
                            (40, 0, 1024)]:
    blocks, by = compiler_facts.blocks_per_sm(regs, smem, threads)
    warps = blocks * threads // 32
    print(f"{regs:>9} {smem:>12,} {threads:>7} | {blocks:>9}  {by:<19} {warps:>5} {warps / max_warps:>9.1%}")

# %% [markdown]
# Why care? Latency. Each cycle, each of the SM's four
# **[warp schedulers](GLOSSARY.md#warp-scheduler)** **[issues](GLOSSARY.md#issue)** the next
# instruction of a ready warp, skipping warps that wait for a result (a load, even an `FFMA`).
# Latency **[hides](GLOSSARY.md#latency-hiding)** behind **more warps** (occupancy) or
# **independent instructions in one warp** (**[ILP](GLOSSARY.md#ilp)**: with several
# accumulators, one `FFMA` need not wait for another).
#
# A **[warp-FFMA](GLOSSARY.md#warp-fma)**, one `FFMA` for a whole warp, takes a scheduler's 32
# FP32 lanes for one cycle: 4 per SM per cycle. **[Little's law](GLOSSARY.md#littles-law)**: a
# unit that accepts one instruction per cycle, each result taking `L` cycles, needs `L`
# independent instructions in flight. The ideal, one warp issuing only `FFMA`s:

# %%
ffma_latency = latency.ffma_latency(lat)  # None without a latency record
L = round(ffma_latency) if ffma_latency else 4
figures.issue_timeline(latency=L, chains=(1, 2, L), label=(
    f"ideal: one warp, nothing but FFMAs, FFMA latency {L} cycles (measured on {latency.label(lat)})"
    if ffma_latency else f"ideal: one warp, nothing but FFMAs, FFMA latency {L} cycles (an illustrative value)"));

# %% [markdown]
# **Measured**: a loop of `acc = acc * a + b`, 1-8 independent chains in one warp or one chain
# in each of 1-32 warps, plus the loop's counter, compare and branch.
# Two ceilings: **latency** (`L`, one chain's cycles per `FFMA`) and **issue** (one instruction
# per scheduler per cycle, counted in the loop's SASS).

# %%
if lat is not None and lat.get("ffma") and compiled is not None:
    ilp, tlp = lat["ffma"]["ilp"], lat["ffma"]["warps"]
    Lc = ilp[0]["cycles_per_ffma"]  # one chain: a warp-FFMA every L cycles
    loop = {r["chains"]: compiled[listing.ffma_name(r["chains"])]["loop"] for r in ilp}  # the compiled main loop
    per_ffma = {c: lp["instructions"] / lp["FFMA"] for c, lp in loop.items()}  # instructions issued per FFMA
    cap = 4 / per_ffma[1]  # warp-FFMAs per cycle that 4 schedulers allow, one chain per warp
    row = lambda head, vals: f"| {head} | " + " | ".join(f"{v:.2f}" for v in vals) + " |"  # noqa: E731
    display(Markdown("\n".join([
        "| chains in one warp | " + " | ".join(str(r["chains"]) for r in ilp) + " |", "|---" * (len(ilp) + 1) + "|",
        row("measured, cycles per warp-FFMA", [r["cycles_per_ffma"] for r in ilp]),
        row("model: max(L / chains, instructions / FFMA)", [max(Lc / r["chains"], per_ffma[r["chains"]]) for r in ilp]),
        "",
        "| warps, one chain each | " + " | ".join(str(r["warps"]) for r in tlp) + " |", "|---" * (len(tlp) + 1) + "|",
        row("measured, warp-FFMAs per cycle on the SM", [r["warp_ffma_per_cycle"] for r in tlp]),
        row("model: min(warps / L, 4 x FFMA / instructions)", [min(r["warps"] / Lc, cap) for r in tlp])])))
    w16, w32 = (next(r["warp_ffma_per_cycle"] for r in tlp if r["warps"] == w) for w in (16, 32))
    print(f"The one-chain loop issues {loop[1]['instructions']} instructions per {loop[1]['FFMA']} FFMAs: four "
          f"schedulers allow {cap:.2f} warp-FFMAs per cycle, {cap / 4:.0%} of the lanes' 4. 16 and 32 warps reach "
          f"{w16:.2f} and {w32:.2f}" + (" (the rate levels off)" if abs(w32 / w16 - 1) < 0.1 else "")
          + f", {w32 / cap:.0%} of the issue ceiling"
          + (": like part 5's kernels, busy only part of the time." if w32 / cap < 0.95 else "."))

# %% [markdown]
# Little's law holds for memory too: streaming `B` bytes per second when each load takes `t` (the
# DRAM latency) needs `B x t` bytes in flight, shared among the SMs; with less, a kernel gets that
# fraction of the copy rate. A thread that loads, then stores waits on its loads about half its
# life, so the model counts resident threads x bytes each loads x 0.5 in flight per SM. Checked
# on two kernels of later lessons, a copy and a transpose:

# %%
mach = limiter_table.machine()
need = mach.in_flight_needed_per_sm  # B x t / SMs, bytes
copy = limiter_table.work("copy", kind="transpose")  # part 5's copy: 16 bytes loaded per thread
kept = limiter.LATENCY_DUTY * copy.in_flight_per_sm
pad = limiter_table.why(["copy", "smem_padded"], kind="transpose")
print(f"B x t = {mach.dram_gbs:,.0f} GB/s x {mach.dram_latency_ns:.0f} ns = "
      f"{mach.dram_gbs * mach.dram_latency_ns / 1e6:.2f} MB, {need:,.0f} bytes per SM. "
      f"Part 5's copy: {copy.in_flight_per_sm // 16:,} resident threads x 16 B x {limiter.LATENCY_DUTY} = {kept:,.0f} bytes "
      + ("per SM, enough." if kept >= need else f"per SM, {kept / need:.0%} of it.")
      + f" Lesson 09's smem_padded loads 4 B per thread: the rule gives it "
      f"{limiter.latency_fraction(limiter_table.work('smem_padded', kind='transpose'), mach):.0%} of the copy rate; "
      f"it measured {pad.row('copy').measured_ms / pad.row('smem_padded').measured_ms:.0%}.")

# %% [markdown]
# ## 5 · The limiter model
#
# A kernel's demand on a GPU unit over the unit's peak rate is the least time the kernel can
# take: a **ceiling**. The largest, the **binding** one, names the kernel's **limiter**
# ([limiter model](GLOSSARY.md#limiter-model)); clock: the SM clock held during the run.
#
# | ceiling | the least time it allows |
# |---|---|
# | FP32 | FFMAs / (SMs x 128 lanes x clock) |
# | issue | warp-instructions / (SMs x 4 schedulers x clock) |
# | shared | shared-memory [wavefronts](GLOSSARY.md#wavefront) / (SMs x 1 per cycle x clock) |
# | L2 | L2 bytes / L2 bandwidth (measured) |
# | DRAM | DRAM bytes / DRAM bandwidth (a copy's, measured) |
# | latency | the DRAM ceiling / min(1, bytes in flight per SM x 0.5 / (`B x t` / SMs)) |
#
# A **wavefront** is one pass of shared memory (lesson 02 details it). The prediction is the
# binding ceiling, stretched when the last [wave](GLOSSARY.md#wave) of blocks leaves SMs idle
# ([tail](GLOSSARY.md#tail-effect)). The profiler, [Nsight Compute](GLOSSARY.md#ncu), counts
# instructions, wavefronts and bytes, and how busy each unit was. Its **busiest unit** should be
# the binding one; when no unit is 60% busy, the table says "latency": the warps mostly wait. The
# record times and profiles every [rung](GLOSSARY.md#rung) (kernel version) of the SGEMM ladder on
# an H200, with its own DRAM latency.

# %%
print(f"The model's machine ({mach.name}, {limiter_table.record()['date'][:10]}): {mach.sm_count} SMs at "
      f"{mach.clock_mhz:,.0f} MHz, DRAM {mach.dram_gbs:,.0f} GB/s, L2 {mach.l2_gbs:,.0f} GB/s, "
      f"DRAM latency {mach.dram_latency_ns:.0f} ns.")

# %% [markdown]
# **Predict.** A copy kernel (lesson 00 times it) copies an 8192 x 8192 float32 matrix, 16 bytes
# per load and store. Which ceiling binds, and how many ms? Count the bytes; use the machine above.

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
# **Why**, from the table:

# %%
nbytes = 2 * 8192 * 8192 * 4  # read + written
top = row.ceilings_ms[row.binding]
tie = [n for n in row.ceilings_ms if n != row.binding and np.isclose(row.ceilings_ms[n], top)]
c = limiter_table.counts("copy")
l2_mb = row.ceilings_ms["l2"] * 1e-3 * mach.l2_gbs * 1e3  # the bytes the profiler counted at the L2, MB
print(f"Binding: {WHAT[row.binding]}, {top:.3f} ms"
      + ("; latency allows the same, so the copy keeps enough bytes in flight" if tie == ["latency"] else "")
      + f". With the tail the model predicts {row.predicted_ms:.3f} ms; the copy took {row.measured_ms:.3f} ms, {row.ratio:.2f}x. The profiler's "
      f"busiest unit: {limiter_table.SHORT[row.busiest]}, {row.busiest_pct:.0f}% of its peak"
      + (", the unit the model names." if row.agrees else f", not the {limiter_table.SHORT[row.binding]} the model names.")
      + f" (Ceilings use the profiler's counts: {c['shared_wavefronts']:,.0f} shared wavefronts in a kernel without "
      f"shared memory; {l2_mb:,.0f} MB through the L2 for {nbytes / 1e6:,.0f} MB read and written.)")

# %% [markdown]
# The model's DRAM bandwidth is this copy's own rate, so the two must agree. The table divides the
# bytes the profiler counted at DRAM, a few percent under a count by hand. The SGEMM kernels you
# will meet rung by rung:

# %%
sg = limiter_table.why(["naive", "naive_uncoalesced", "smem_tile", "smem_tile16", "reg1d", "reg2d", "vec",
                        "vec_split", "dbuf_one_buffer", "dbuf", "warptile", "cublas"])
same = [r for r in sg.rows if r.agrees]
busy = [r.busiest_pct for r in same]
ratio = [r.ratio for r in same]
other = [r for r in sg.rows if not r.agrees]
print(f"In {len(same)} of the record's {len(sg.rows)} SGEMM kernels the profiler's busiest unit is the binding one. "
      f"It is busy {min(busy):.0f}-{max(busy):.0f}% of the time, and measured/predicted is "
      f"{min(ratio):.2f}-{max(ratio):.2f}: the rest of the time the warps stall (at barriers, on a "
      "dependent result, on loads not hidden)."
      + "".join(f" In {r.rung} the model names {limiter_table.SHORT[r.binding]}, the profiler "
                f"{limiter_table.SHORT[r.busiest]}, and measured/predicted is {r.ratio:.1f}"
                + (": lesson 01 explains why." if r.rung == "naive_uncoalesced" else ".") for r in other))

# %% [markdown]
# ## Exercises
#
# ### 00a-launch
# Write a kernel computing `out[i] = 2*x[i] - y[i]` and a function `launch(x, y, out)` that
# launches it with 128 threads per block. The check tries several sizes: every element written,
# none past the end, 128 threads per block.

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
# A kernel uses 40 registers per thread, 128 threads per block and 57 KiB of
# [*dynamic* shared memory](GLOSSARY.md#static-shared) per block, opted in (above 48 KiB a kernel
# must raise its own limit). How many blocks
# fit on one SM, and which resource limits it? Answer a pair such as `(2, "threads")`, naming
# `"registers"`, `"shared memory"`, `"threads"` or `"blocks"`. Work it out by hand with part 4's
# limits.

# %%
# NBVAL_CHECK_OUTPUT
### BEGIN SOLUTION: answer = None
answer = (3, "shared memory")
### END SOLUTION
exercises.check("00a-occupancy", answer)

# %% [markdown]
# ## Takeaway
#
# * A launch runs whole blocks, so every kernel needs a bounds guard. A warp's 32 threads run
#   each instruction together.
# * Registers, shared memory and L1 sit on the SM; L2 and DRAM are farther and slower.
# * SASS is what runs: `FFMA`; `LDG`/`STG`, `LDS`/`STS` (global, shared); `.128` (16 bytes);
#   `LDL`/`STL` (spills).
# * Occupancy and ILP hide latency; Little's law says how much must be in flight; every
#   instruction takes an issue slot.
# * A kernel takes at least its largest ceiling, the limiter; the profiler's busiest unit usually
#   confirms it.
#
# Next: [lesson 00](00_setup_and_roofline.ipynb), the roofline; [lesson 01](01_naive.ipynb), the
# first matrix product.
#
# ## Sources
#
# Source article [3], section 1.1 ([REFERENCES.md](REFERENCES.md#seed-002)), for the memory spaces;
# NVIDIA's guides and benchmark papers: [lesson 00a](REFERENCES.md#lesson-00a).

# %% [markdown]
# ## Lab notes
#
# * **Records.** On the simulator, the latencies come from `results/latency-<device>.json`
#   (`python -m gemm_lessons.measure.latency`), the listings from `results/primer-listing.json`
#   (`python -m gemm_lessons.teaching.primer_listing`; the FFMA loops' entries were compiled
#   offline for sm_90, each says how), the compiler facts from a bench record, and part 5 from
#   `results/limiter-nvidia-h200.json` (`python -m gemm_lessons.runs.limiter`). On a GPU, parts 2-4
#   measure and compile now, with a shorter latency run (`latency.collect(quick=True)`); part 5
#   always reads the limiter record. A cell whose first line is `# NBVAL_CHECK_OUTPUT` has an
#   output the tests compare with the saved one ([nbval](GLOSSARY.md#nbval)).
# * **The rest of the SASS.** `saxpy` compiles to a few dozen instructions;
#   `listing.sass_until_exit(compiled["saxpy"]["sass"])` prints them all. Most compute addresses:
#   numba's index is a signed 64-bit integer, and for each array access it adds NumPy's
#   wraparound for negative indices (`x[-1]` is `x[len(x) - 1]`): a sign shift (`SHF`), a mask
#   (`LOP3`) and an add (`IADD3`, `IMAD.X`). `listing.saxpy_walkthrough` reads it line by line.
#   The pointer chase indexes with uint32, unsigned, so numba adds no wraparound to its loads.
#   The index's 64 bits are also why `ISETP` compares `i` with `out.size` in two halves.
# * **Indexes.** `cuda.grid(1)` is a thread's global index, `blockIdx.x * blockDim.x + threadIdx.x`;
#   in 2-D, `x, y = cuda.grid(2)`. In CUDA C++ a launch is `k<<<blocks, threads>>>(args)`, a
#   thread reads `threadIdx.x`, `blockIdx.x`, ..., and computes its global index itself.
# * **L1 and shared memory** share 256 KiB per SM; the driver picks the split (the carveout) per
#   kernel, up to 228 KiB of shared memory. HBM, high-bandwidth memory, is DRAM stacked beside
#   the chip.
# * **The pointer chase** makes each load's address the value the previous load returned, so
#   the loads cannot overlap and each step takes one load's latency. Near a level's size (for L1,
#   256 KiB per SM, shared with shared memory), loads are served partly by each level.
# * **`S2R`** reads `threadIdx.x` as `SR_TID.X` and `blockIdx.x` as `SR_CTAID.X`.
# * **Wavefronts in detail.** In one wavefront shared memory's 32 [banks](GLOSSARY.md#bank)
#   (4-byte words) each serve one word to the lanes of one [phase](GLOSSARY.md#phase): the whole
#   warp for 4-byte loads, a quarter of it for 16-byte ones.
# * **DRAM latency** is that of a random chase on an idle GPU. A chase over hundreds of MiB can
#   also miss the GPU's address-translation caches ([TLB](GLOSSARY.md#tlb)), and that time is part
#   of what it records; a streaming access mostly avoids it. Under full bandwidth, requests queue
#   and each load takes longer, so Little's law's bytes in flight are a lower bound.
# * **FFMA rates.** Part 4's FFMA loops are `gemm_lessons.measure.latency`'s. The many-warp rate runs from the first warp's start to the last one's end.
#   Where the measurement falls short of part 4's two ceilings, what takes the rest of the cycles
#   is not measured here.
