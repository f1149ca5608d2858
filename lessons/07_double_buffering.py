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
# # 07 · Double buffering: load the next slice while computing this one
#
# **Where we are.** Lesson 06's `vec_split`, by the [limiter model](GLOSSARY.md#limiter-model)
# on the [limiter run](GLOSSARY.md#limiter-run):

# %%
import gemm_lessons as gl  # first: it chooses the GPU, or numba's CUDA simulator when there is none
from gemm_lessons.model.limiter import WHAT
from gemm_lessons.teaching import exercises, figures, limiter_table, measure_step, plots
from gemm_lessons.instruments import compiler_facts
from gemm_lessons.kernels import ladder
from gemm_lessons.records import results
from gemm_lessons.core.jit import jit  # cuda.jit that also takes GPU-only options (max_registers) on the simulator
import functools
import numpy as np
from numba import cuda, float32
# %matplotlib inline
print(gl.banner())

prev = limiter_table.why(["vec_split", "dbuf_one_buffer", "cublas"])  # the limiter run: every rung timed and profiled on one GPU
r = prev.row("vec_split")
print(f"vec_split at 4096^3 on the {prev.device}: {r.measured_ms:.2f} ms, {2 * 4096**3 / r.measured_ms / 1e9:.1f} "
      f"TFLOPS. Binding ceiling: {WHAT[r.binding].split(' (')[0]}, {r.ceilings_ms[r.binding]:.2f} ms, "
      f"{r.predicted_ms:.2f} ms with the last, partial wave. Measured/predicted: {r.ratio:.2f}; the "
      f"{limiter_table.SHORT[r.binding]} unit was busy {r.utilization_pct[r.binding]:.0f}% of the cycles.")

# %% [markdown]
# (A [wave](GLOSSARY.md#wave): one round of blocks.) In the other cycles
# every warp was [stalled](GLOSSARY.md#stall-reasons). Per slice of K, the threads load A and B,
# *wait* ([latency](GLOSSARY.md#latency)), store into shared memory, meet at a
# [barrier](GLOSSARY.md#barrier), compute 8 k-steps, and meet again before overwriting the tiles.
#
# ## Idea: two shared buffers
#
# With two shared buffers per tile ([double buffering](GLOSSARY.md#double-buffering)), the
# next slice's loads travel into registers while the threads compute from one buffer, then go
# into the other; one barrier, and the roles swap. The price: twice the shared memory, and
# registers for the next slice.

# %%
figures.double_buffer_timeline();

# %% [markdown]
# *One warp, schematic: one buffer (top), two (bottom).*
#
# Why does one buffer stall, when other warps could issue meanwhile?

# %%
m = limiter_table.machine()
n = limiter_table.counts("dbuf_one_buffer")  # what the profiler counted in one launch at 4096^3
warp_slices = (4096 // 128) ** 2 * 8 * (4096 // 8)  # blocks x 8 warps x 512 slices
per_slice = n["warp_instructions"] / warp_slices
wait = m.dram_latency_ns * m.clock_mhz / 1e3
print(f"A DRAM load takes {m.dram_latency_ns:.0f} ns, {wait:,.0f} cycles; a scheduler's 4 warps (2 blocks x 8 warps, "
      f"4 schedulers) hold {4 * per_slice:,.0f} instructions of compute per slice, plenty to cover it. But with one "
      f"buffer, every warp of a block waits at the barrier for the block's slowest load: only the other block's "
      f"warps can issue.")

# %% [markdown]
# They cover the wait only when the two blocks wait at different times, which nothing arranges.
#
# ## Predict
#
# A second buffer keeps each slice's loads, stores and FMAs and removes one barrier:

# %%
print(f"One barrier fewer is {100 / per_slice:.2f}% of the {per_slice:.0f} instructions per warp per slice.")

# %% [markdown]
# No ceiling moves; only stall time, which the model does not count, can shrink.
#
# **Your prediction:** how many times as fast as its one-buffer twin `dbuf_one_buffer` (built
# below) is `dbuf` at 4096^3?

# %%
my_speedup = None  # your prediction: replace None with a number (for example 1.1)

# %% [markdown]
# The model's answer:

# %%
r1, best = prev.row("dbuf_one_buffer"), prev.row("cublas").ratio
print(f"Model: about 1.0x, as a second buffer moves no ceiling, while the stalls stay. With no stall at all, dbuf_one_buffer would run at its prediction, "
      f"{r1.ratio:.2f}x faster; cuBLAS, the closest, runs at {best:.2f} x its prediction: {r1.ratio / best:.2f}x "
      f"is a realistic best.")

# %% [markdown]
# ## First attempt: a buffer index
#
# `vec_split` with a buffer index `buf` in front of every shared index, flipped after each
# slice. Shared reads are written element by element: with a constant
# index the compiler merges them into `LDS.128` (Lab notes). With a runtime `buf`?

# %%
from gemm_lessons.core.float4 import load4, store4  # lesson 05's 16-byte loads and stores
from gemm_lessons.kernels.sgemm.vec import BK, BM, BN, THREADS, TM, TN  # lesson 05's tile sizes
from gemm_lessons.core.unroll import expanded_source, static, static_range, unrolled  # lesson 05's unrolling

# %%
# source: gemm_lessons/kernels/sgemm/dbuf_first_attempt.py  (the package runs this same code; a test keeps the two identical)
GAP = BM // 2  # lesson 06's split: a thread's 8x8 results are four 4x4 pieces, 64 rows (columns) apart
assert BM == BN and TM == TN == 8


@cuda.jit
@unrolled
def sgemm_dbuf_indexed(A, B, C, alpha, beta):
    sAT = cuda.shared.array((2, BK, BM), float32)  # two buffers of the transposed A tile
    sB = cuda.shared.array((2, BK, BN), float32)
    tid = cuda.threadIdx.x
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    M, K = A.shape
    N = B.shape[1]
    t_row = (tid // (BN // TN)) * 4
    t_col = (tid % (BN // TN)) * 4
    a_r = tid // (BK // 4)
    a_c = (tid % (BK // 4)) * 4
    b_r = tid // (BN // 4)
    b_c = (tid % (BN // 4)) * 4
    acc = cuda.local.array((TM, TN), float32)  # registers: indexed by constants only
    a = cuda.local.array(TM, float32)
    b = cuda.local.array(TN, float32)
    for i in static_range(TM):
        for j in static_range(TN):
            acc[i, j] = np.float32(0.0)
    # prologue: slice 0 into buffer 0
    x0 = x1 = x2 = x3 = y0 = y1 = y2 = y3 = np.float32(0.0)
    if (row0 + a_r < M) & (a_c < K):
        x0, x1, x2, x3 = load4(A, row0 + a_r, a_c)
    if (b_r < K) & (col0 + b_c < N):
        y0, y1, y2, y3 = load4(B, b_r, col0 + b_c)
    sAT[0, a_c + 0, a_r] = x0
    sAT[0, a_c + 1, a_r] = x1
    sAT[0, a_c + 2, a_r] = x2
    sAT[0, a_c + 3, a_r] = x3
    sB[0, b_r, b_c + 0] = y0
    sB[0, b_r, b_c + 1] = y1
    sB[0, b_r, b_c + 2] = y2
    sB[0, b_r, b_c + 3] = y3
    cuda.syncthreads()
    buf = 0
    for k0 in range(0, K, BK):
        nxt = k0 + BK
        # the next slice's global loads start now and land in registers during the compute
        x0 = x1 = x2 = x3 = y0 = y1 = y2 = y3 = np.float32(0.0)
        if (row0 + a_r < M) & (nxt + a_c < K):
            x0, x1, x2, x3 = load4(A, row0 + a_r, nxt + a_c)
        if (nxt + b_r < K) & (col0 + b_c < N):
            y0, y1, y2, y3 = load4(B, nxt + b_r, col0 + b_c)
        for k in range(BK):  # lesson 06's k-step read element by element, the buffer index in front of each
            for i in static_range(TM):
                a[i] = sAT[buf, k, t_row + (i % 4 + i // 4 * GAP)]
            for j in static_range(TN):
                b[j] = sB[buf, k, t_col + (j % 4 + j // 4 * GAP)]
            for i in static_range(TM):
                for j in static_range(TN):
                    acc[i, j] += a[i] * b[j]
        if nxt < K:  # into the buffer nobody reads during this slice
            sAT[1 - buf, a_c + 0, a_r] = x0
            sAT[1 - buf, a_c + 1, a_r] = x1
            sAT[1 - buf, a_c + 2, a_r] = x2
            sAT[1 - buf, a_c + 3, a_r] = x3
            sB[1 - buf, b_r, b_c + 0] = y0
            sB[1 - buf, b_r, b_c + 1] = y1
            sB[1 - buf, b_r, b_c + 2] = y2
            sB[1 - buf, b_r, b_c + 3] = y3
        cuda.syncthreads()  # one barrier: the new buffer is complete, the old one free
        buf = 1 - buf
    for i in static_range(TM):
        row = row0 + t_row + (i % 4 + i // 4 * GAP)
        if row < M:
            for j in static_range(0, TN, 4):
                col = col0 + t_col + j // 4 * GAP
                if col < N:
                    if beta == 0:
                        store4(C, row, col, alpha * acc[i, j], alpha * acc[i, j + 1],
                               alpha * acc[i, j + 2], alpha * acc[i, j + 3])
                    else:
                        o0, o1, o2, o3 = load4(C, row, col)
                        store4(C, row, col, alpha * acc[i, j] + beta * o0, alpha * acc[i, j + 1] + beta * o1,
                               alpha * acc[i, j + 2] + beta * o2, alpha * acc[i, j + 3] + beta * o3)


# %%
from gemm_lessons.kernels.sgemm import dbuf_first_attempt as dbuf
# the kernel of the cell above (edit it, run both cells: the check uses your version, and on a
# GPU the timing and the compiler facts too), launched like the package's
my_dbuf_indexed = functools.partial(dbuf.sgemm_indexed, kernel=sgemm_dbuf_indexed)
gl.check_all(my_dbuf_indexed, name="dbuf_indexed",
             shapes=[(68, 44, 36, 1.0, 0.0), (36, 72, 20, 1.5, -0.5)])


# %% [markdown]
# What the compiler made of it ([compiler facts](GLOSSARY.md#compiler-facts): SASS counts, not
# lesson 06's profiler counts):

# %%
import os
path = results.course_path("experiment", "lesson07")  # lesson 07's own GPU record where one exists, else the bench record
rec07 = results.read(path) if os.path.exists(path) else results.load()
first_facts = compiler_facts.compiler_facts({"vec_split": ladder.SGEMM["vec_split"].kernel,
                                             "dbuf_indexed": sgemm_dbuf_indexed},
                                            threads={"vec_split": 256, "dbuf_indexed": 256}, record=rec07, loops=True)
first_facts


# %%
def per_ffma(loop, BK=8):
    """Instructions the main loop issues per FFMA: the k-step loop BK times, the rest of the slice loop once."""
    return (BK * loop["inner"] + loop["outer_rest"]) / (BK * loop["inner_FFMA"])


fv, fi = first_facts["vec_split"], first_facts["dbuf_indexed"]
wide = {name: f["sass"].get("LDS.128", 0) for name, f in (("vec_split", fv), ("dbuf_indexed", fi))}
narrow = fi["sass"].get("LDS", 0)
print(f"Registers: {fv['registers']} -> {fi['registers']}. " + (
      f"With `buf` a runtime value in every shared index, the compiler keeps {wide['dbuf_indexed']} of vec_split's "
      f"{wide['vec_split']} LDS.128 and uses {narrow} four-byte LDS for the rest (a constant index keeps all four: "
      "Lab notes)." if narrow else f"Every shared load stays 16 bytes wide ({wide['dbuf_indexed']} LDS.128)."))
if fv.get("loop") and fi.get("loop"):
    ipf_v, ipf_i = per_ffma(fv["loop"]), per_ffma(fi["loop"])
    issue_i = r.ceilings_ms["issue"] * ipf_i / ipf_v
    print(f"The last two columns are the main loop: the k-step loop, run 8 times per slice, and the rest of the loop "
          f"over slices. It issues {ipf_i:.2f} instructions per FFMA against vec_split's {ipf_v:.2f}: the issue ceiling "
          f"{'rises' if issue_i > r.ceilings_ms['issue'] else 'goes'} from {r.ceilings_ms['issue']:.2f} to "
          f"{issue_i:.2f} ms. " + (f"To win, the second buffer must remove more than {issue_i - r.ceilings_ms['issue']:.2f} "
                                   "ms of stalls." if issue_i > r.ceilings_ms["issue"] else "It wins even at equal stalls."))
else:  # this record has no main-loop counts: its shared loads still price the k-step
    extra = 8 * (wide["dbuf_indexed"] + narrow - wide["vec_split"])
    base = limiter_table.counts("vec_split")["warp_instructions"] / warp_slices
    print(f"Per k-step, {wide['dbuf_indexed'] + narrow} shared loads instead of {wide['vec_split']}: {extra} more "
          f"instructions per warp per slice than vec_split's {base:.0f} (+{100 * extra / base:.0f}%), more of the "
          "binding work." if extra > 0 else "")

# %% [markdown]
# ## Second attempt: leave the compiler nothing to guess
#
# `make_kernel(config)` (editable in the Lab notes) builds a kernel for a
# `TileConfig` with **separate buffers** (two slices per trip), so
# every shared index is a plain expression; **explicit `load4`**, every k-step written out; and
# **loads first**: `compute_and_stage` starts the next slice's loads, runs the 8 k-steps, then
# stores into the other buffer. The main loop, one buffer and two:

# %%
import textwrap
from dataclasses import replace
from gemm_lessons.core.lesson_cells import region
from gemm_lessons.kernels.sgemm import warptile
from gemm_lessons.kernels.sgemm.warptile import TileConfig, make_kernel  # the Lab notes' copy replaces these when run
lines = region("gemm_lessons/kernels/sgemm/warptile.py").splitlines()
start = next(i for i, line in enumerate(lines) if "if static(STAGES == 1):" in line)
end = next(i for i in range(start, len(lines)) if lines[i].strip().startswith("for i in static_range(TM):"))
print(textwrap.dedent("\n".join(lines[start:end])))

# %% [markdown]
# `stages=1` gives `dbuf_one_buffer` (one buffer, one slice per trip). The
# [rung](GLOSSARY.md#rung), with its 16 x 128 [warp tile](GLOSSARY.md#warp-tile), capped at 128
# registers:

# %%
# NBVAL_CHECK_OUTPUT
print(dbuf.DBUF_CONFIG.short(), "|", dbuf.DBUF_CONFIG.threads, "threads,",
      dbuf.DBUF_CONFIG.shared_bytes, "bytes of shared memory")

# %%
my_dbuf = make_kernel(dbuf.DBUF_CONFIG)  # edit make_kernel in the Lab notes, run that cell, and what follows uses your version
gl.check_all(functools.partial(warptile.sgemm, kernel=my_dbuf), name="dbuf",
             shapes=[(68, 44, 36, 1.0, 0.0), (36, 72, 20, 1.5, -0.5), (1, 4, 4, 2.0, 1.0)] if gl.SIMULATOR else
                    [(68, 44, 36, 1.0, 0.0), (516, 1028, 260, -1.0, 0.5), (4, 4, 4, 2.0, 1.0)])

# %% [markdown]
# The second buffer's price, from the compiler (counts in the code, not runs: Lab notes):

# %%
my_one_buffer = make_kernel(replace(dbuf.DBUF_CONFIG, stages=1))
twin_facts = compiler_facts.compiler_facts({"dbuf_one_buffer": my_one_buffer, "dbuf": my_dbuf},
                                           threads={"dbuf_one_buffer": 256, "dbuf": 256}, record=rec07)
f1, f2 = twin_facts["dbuf_one_buffer"], twin_facts["dbuf"]
display(twin_facts)
print(f"Shared memory: {f1['shared_bytes']:,} -> {f2['shared_bytes']:,} bytes per block.")

# %% [markdown]
# ## Measure
#
# Both attempts, the twin and `vec_split`:

# %%
configs = {"dbuf_one_buffer": replace(dbuf.DBUF_CONFIG, stages=1), "dbuf": dbuf.DBUF_CONFIG,
           "dbuf_short_circuit": replace(dbuf.DBUF_CONFIG, guard="and"),
           "dbuf_select": replace(dbuf.DBUF_CONFIG, guard="select")}
my_kernels = {"vec_split": ladder.SGEMM["vec_split"].kernel, "dbuf_indexed": sgemm_dbuf_indexed,
              "dbuf_one_buffer": my_one_buffer, "dbuf": my_dbuf,
              **{name: make_kernel(configs[name]) for name in ("dbuf_short_circuit", "dbuf_select")}}
kernels = {"vec_split": ladder.SGEMM["vec_split"], "dbuf_indexed": my_dbuf_indexed,
           **{name: functools.partial(warptile.sgemm, kernel=my_kernels[name]) for name in configs}}
everything = measure_step.compare(kernels, size=(4096, 4096, 4096), record=rec07)
main_rows = ("vec_split", "dbuf_indexed", "dbuf_one_buffer", "dbuf", "cublas")
table = replace(everything, rows=[row for row in everything.rows if row.kernel in main_rows])
display(table)
GUARD_CHANGE = "2026-11-28"  # the day vec_split and the first attempt got their one-condition guards
if gl.SIMULATOR and str(rec07.date)[:10] < GUARD_CHANGE:
    print(f"This run ({str(rec07.date)[:10]}) timed older vec_split and first-attempt code, guarding loads with "
          "Python's `if a and b:` (two branches), not the `&` shown above (Lab notes: what that guard costs dbuf).")

# %%
exercises.compare_prediction(my_speedup, table.speedup("dbuf", "dbuf_one_buffer"),
                             "dbuf vs dbuf_one_buffer, two buffers vs one, at 4096^3 (times as fast)", table.source)

# %% [markdown]
# Each change, credited by the pair differing in it:

# %%
for name, base, what in [("dbuf_indexed", "vec_split", "second buffer, runtime index (first attempt)"),
                         ("dbuf_one_buffer", "vec_split", "rewrite as make_kernel, one buffer"),
                         ("dbuf", "dbuf_one_buffer", "second buffer, same code"),
                         ("dbuf", "vec_split", "the rung against lesson 06")]:
    print(f"{what:<45} {name} vs {base}: {table.speedup(name, base):.2f}x")

# %% [markdown]
# ## Why: the limiter model
#
# Measured: this run, not the limiter run. The rewrite's changes (Lab notes) lower
# `dbuf_one_buffer`'s issue ceiling.

# %%
why = limiter_table.why(["vec_split", "dbuf_one_buffer", "dbuf", "cublas"], measured=table, decimals=2)
why

# %%
rv, r1, r2, rc = (why.row(rung) for rung in ("vec_split", "dbuf_one_buffer", "dbuf", "cublas"))
short, b = limiter_table.SHORT, r1.binding
stall = {x.rung: x.measured_ms - x.predicted_ms for x in (rv, r1, r2)}
print("Measured minus predicted is time lost to stalls (the model assumes the binding unit busy every cycle): "
      + ", ".join(f"{name} {ms:.2f} ms" for name, ms in stall.items()) + ".")
print(f"The rewrite (vec_split -> dbuf_one_buffer) {'cut' if r1.ceilings_ms[b] < rv.ceilings_ms[b] else 'raised'} "
      f"the {short[b]} ceiling from {rv.ceilings_ms[b]:.2f} to {r1.ceilings_ms[b]:.2f} ms: the model predicts "
      f"{rv.predicted_ms / r1.predicted_ms:.2f}x, measured {rv.measured_ms / r1.measured_ms:.2f}x.")
moved = max(abs(r2.ceilings_ms[k] / r1.ceilings_ms[k] - 1) for k in ("fp32", "issue", "shared"))
below = min(r2.ceilings_ms[b] / r2.ceilings_ms[k] for k in ("l2", "dram"))
n1, n2 = (limiter_table.counts(x)["warp_instructions"] for x in ("dbuf_one_buffer", "dbuf"))
u1, u2 = r1.utilization_pct[b], r2.utilization_pct[b]
print(f"The second buffer moved no binding ceiling (FP32, issue, shared: at most {100 * moved:.0f}%); the L2 and DRAM "
      f"bytes, which depend on cache hits, {'rose' if r2.ceilings_ms['dram'] > r1.ceilings_ms['dram'] else 'changed'} "
      f"but stay {below:.0f}x below the {short[b]} ceiling. Predicted {r1.predicted_ms / r2.predicted_ms:.2f}x, "
      f"measured {r1.measured_ms / r2.measured_ms:.2f}x. Why: at {n2 / n1:.2f}x the instructions, the {short[b]} unit "
      f"was busy {u1:.0f}% -> {u2:.0f}% of the cycles ({u2 / u1:.2f}x); stalls {stall['dbuf_one_buffer']:.2f} -> "
      f"{stall['dbuf']:.2f} ms.")
if not (r1.measured_here and r2.measured_here):
    print(f"(Times marked * are the limiter run's; the Measure table's run gives "
          f"{table.speedup('dbuf', 'dbuf_one_buffer'):.2f}x for the same pair.)")
if fv.get("loop") and fi.get("loop"):  # the first attempt is not in the limiter run: its compiler facts price it
    print(f"The first attempt: {ipf_i / ipf_v:.2f}x vec_split's instructions per FFMA predicts {ipf_v / ipf_i:.2f}x "
          f"its speed at equal stalls; measured {table.speedup('dbuf_indexed', 'vec_split'):.2f}x.")
else:
    print(f"The first attempt (not in the limiter run), {table.speedup('dbuf_indexed', 'vec_split'):.2f}x vs vec_split: "
          "its narrower shared loads add instructions, the binding work.")

# %% [markdown]
# ## Exercise 07-double-buffer: write the double-buffered main loop
#
# Lesson 06's exercise kernel with **two** buffers per tile and three helpers:
#
# * `load_slice(k0)`: global memory -> registers (zeros outside A and B: a `k0` past `K`
#   loads nothing);
# * `store_slice(sA, sB)`: registers -> that buffer;
# * `compute(sA, sB)`: the slice's BK k-steps from that buffer.
#
# Write the main loop: a prologue putting slice 0 into buffer 0; then per slice, start the next
# slice's loads, compute from the current buffer, store into the *other*, and **one**
# `cuda.syncthreads()`. Do two slices per trip, buffer 0 then buffer 1: no runtime buffer
# index. The check tests the result and traces one block for a
# [race](GLOSSARY.md#data-race), extra barriers and late loads.

# %%
import numpy as np
from numba import cuda, float32
from gemm_lessons.teaching import exercises
from gemm_lessons.core.float4 import load4, store4
from gemm_lessons.core.unroll import static_range, unrolled

BM, BN, BK, TM, TN = 64, 64, 8, 8, 8  # the check launches ceil(N/64) x ceil(M/64) blocks of 64 threads
THREADS = (BM // TM) * (BN // TN)     # 64
A_LOADS = BM * BK // 4 // THREADS     # 2 float4s of A per thread per slice, A_STEP rows apart
A_STEP = THREADS // (BK // 4)
B_LOADS = BK * BN // 4 // THREADS     # 2 float4s of B, B_STEP rows apart
B_STEP = THREADS // (BN // 4)
A_ROW = BM + 4                        # padded rows of the transposed A tile (exercise 06)


@cuda.jit
@unrolled
def sgemm_ex07(A, B, C, alpha, beta):
    sAT0 = cuda.shared.array((BK, A_ROW), float32)  # buffer 0
    sB0 = cuda.shared.array((BK, BN), float32)
    sAT1 = cuda.shared.array((BK, A_ROW), float32)  # buffer 1
    sB1 = cuda.shared.array((BK, BN), float32)
    tid = cuda.threadIdx.x
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    M, K = A.shape
    N = B.shape[1]
    tc = tid % (BN // TN)
    t_row = (tid // (BN // TN)) * TM
    a_r = tid // (BK // 4)
    a_c = (tid % (BK // 4)) * 4
    b_r = tid // (BN // 4)
    b_c = (tid % (BN // 4)) * 4
    acc = cuda.local.array((TM, TN), float32)
    a = cuda.local.array(TM, float32)
    b = cuda.local.array(TN, float32)
    xa = cuda.local.array((A_LOADS, 4), float32)  # a slice on its way from global to shared memory
    xb = cuda.local.array((B_LOADS, 4), float32)
    for i in static_range(TM):
        for j in static_range(TN):
            acc[i, j] = np.float32(0.0)

    def col_of(j):  # exercise 06's split: 4 columns in each half of the tile
        return tc * 4 + j % 4 + j // 4 * (BN // 2)

    def load_slice(k0):  # global -> registers (zeros outside A and B)
        for p in static_range(A_LOADS):
            xa[p, 0] = xa[p, 1] = xa[p, 2] = xa[p, 3] = np.float32(0.0)
            if (row0 + a_r + p * A_STEP < M) & (k0 + a_c < K):  # `&`, not `and`: one condition, no branch
                xa[p, 0], xa[p, 1], xa[p, 2], xa[p, 3] = load4(A, row0 + a_r + p * A_STEP, k0 + a_c)
        for q in static_range(B_LOADS):
            xb[q, 0] = xb[q, 1] = xb[q, 2] = xb[q, 3] = np.float32(0.0)
            if (k0 + b_r + q * B_STEP < K) & (col0 + b_c < N):
                xb[q, 0], xb[q, 1], xb[q, 2], xb[q, 3] = load4(B, k0 + b_r + q * B_STEP, col0 + b_c)

    def store_slice(sA, sB):  # registers -> one buffer
        for p in static_range(A_LOADS):
            for d in static_range(4):
                sA[a_c + d, a_r + p * A_STEP] = xa[p, d]
        for q in static_range(B_LOADS):
            store4(sB, b_r + q * B_STEP, b_c, xb[q, 0], xb[q, 1], xb[q, 2], xb[q, 3])

    def compute(sA, sB):  # the BK k-steps of one slice, from one buffer
        for k in static_range(BK):
            for i in static_range(TM):
                a[i] = sA[k, t_row + i]
            for j in static_range(TN):
                c = col_of(j)
                b[j] = sB[k, c]
            for i in static_range(TM):
                for j in static_range(TN):
                    acc[i, j] += a[i] * b[j]

    ### BEGIN SOLUTION: pass
    load_slice(0)  # prologue: slice 0 into buffer 0
    store_slice(sAT0, sB0)
    cuda.syncthreads()
    for k0 in range(0, K, 2 * BK):  # two slices per trip: the buffers' roles are fixed in each half
        load_slice(k0 + BK)  # the next slice's loads are in flight during the compute
        compute(sAT0, sB0)
        store_slice(sAT1, sB1)  # into the buffer nobody reads in this slice
        cuda.syncthreads()  # buffer 1 complete, buffer 0 free
        if k0 + BK >= K:
            break
        load_slice(k0 + 2 * BK)
        compute(sAT1, sB1)
        store_slice(sAT0, sB0)
        cuda.syncthreads()
    ### END SOLUTION
    for i in static_range(TM):
        row = row0 + t_row + i
        for j in static_range(TN):
            c = col_of(j)
            col = col0 + c
            if row < M and col < N:
                if beta == 0:
                    C[row, col] = alpha * acc[i, j]
                else:
                    C[row, col] = alpha * acc[i, j] + beta * C[row, col]


exercises.check("07-double-buffer", sgemm_ex07)

# %% [markdown]
# ## Takeaway
#
# * Double buffering moves no ceiling; it removes stall time, so the binding unit is busy more
#   of the cycles.
# * Credit a technique's speedup only against a twin differing in it alone
#   (`dbuf_one_buffer` against `dbuf`).
# * A runtime buffer index cost 16-byte shared loads, hence instructions.
#   Leave the compiler nothing to guess (separate buffers, explicit `load4`); check the SASS.
# * Next: lesson 08 sweeps `TileConfig`'s other fields.

# %% [markdown]
# ## Sources and further reading
#
# * Source articles [[4]](REFERENCES.md#seed-003), [[5]](REFERENCES.md#seed-004)
#   ([what each covers](REFERENCES.md#source-articles)); [read next](REFERENCES.md#lessons-07-08).
# * Terms: the [glossary](GLOSSARY.md) and the [primer](00a_primer.ipynb).

# %% [markdown]
# ## Lab notes
#
# **`make_kernel`, whole.** The package's code behind the excerpt above. Edit it, run the two
# cells below, then rerun the cells from the Check of `dbuf` on: they use your version.

# %%
from dataclasses import dataclass, fields
from numba import boolean, int64
from gemm_lessons.kernels.sgemm.warptile import STATIC_SHARED_LIMIT


# %%
# source: gemm_lessons/kernels/sgemm/warptile.py  (the package runs this same code; a test keeps the two identical)
@dataclass(frozen=True)
class TileConfig:
    BM: int = 128  # block tile: BM x BN of C per block, BK-deep slices of A and B
    BN: int = 128
    BK: int = 8
    WM: int = 32   # warp tile: WM x WN of C per warp
    WN: int = 64
    TM: int = 8    # thread tile: TM x TN of C per thread, in 4x4 pieces
    TN: int = 8
    stages: int = 2          # shared buffers: 1 (two barriers per slice) or 2 (one barrier)
    pad_a: int = 4           # extra floats per row of the transposed A tile (multiple of 4)
    spread: bool = False     # stage the next slice float4 by float4 through the compute
    guard: str = "if"        # how loads outside A and B are avoided: "if", "select" or "and"
    max_registers: int = 128  # register cap per thread (None: the compiler decides)
    group_m: int = 1         # block order: 1 row-major; G > 1 groups of G tile rows (block_order.py)
    split_k: bool = False    # block z sums only its part of k into rows z*M.. of C (gl.sgemm, lesson 11)
    ragged_c: bool = False   # C written one float at a time, up to C's own width (gl.sgemm, lesson 11)

    @property
    def lanes(self):  # (LM, LN): how the 32 lanes of a warp tile the warp tile
        return self.WM // self.TM, self.WN // self.TN

    @property
    def threads(self):
        return (self.BM // self.WM) * (self.BN // self.WN) * 32

    @property
    def shared_bytes(self):
        return 4 * self.stages * self.BK * (self.BM + self.pad_a + self.BN)

    def grid(self, M, N):
        """The launch's blocks for an M x N result: (tile columns, tile rows); with group_m = G > 1,
        (G rows of a group, tile columns, groups), so that blocks in the order of their linear
        index walk G tile rows column by column (block_order.py), without a division."""
        tiles_m, tiles_n = (M + self.BM - 1) // self.BM, (N + self.BN - 1) // self.BN
        if self.group_m == 1:
            return tiles_n, tiles_m
        return self.group_m, tiles_n, (tiles_m + self.group_m - 1) // self.group_m

    def validate(self):
        """ValueError naming the first rule the configuration breaks (checked before compiling)."""
        rules = [
            (all(isinstance(getattr(self, f.name), int) and getattr(self, f.name) > 0
                 for f in fields(self) if f.name not in ("pad_a", "max_registers", "spread", "guard", "split_k",
                                                                  "ragged_c")),
             "sizes must be positive integers"),
            (self.TM % 4 == 0 and self.TN % 4 == 0, "TM and TN must be multiples of 4 (4x4 pieces)"),
            (self.BK % 4 == 0, "BK must be a multiple of 4 (A is read 4 floats at a time along k)"),
            (self.pad_a >= 0 and self.pad_a % 4 == 0, "pad_a must be 0, 4, 8, ... (keeps LDS.128 aligned)"),
            (self.BM % self.WM == 0 and self.BN % self.WN == 0, "warp tiles must tile the block tile"),
            (self.WM % self.TM == 0 and self.WN % self.TN == 0, "thread tiles must tile the warp tile"),
            (self.lanes[0] * self.lanes[1] == 32,
             f"a warp has 32 lanes, but (WM/TM) x (WN/TN) = {self.lanes[0]} x {self.lanes[1]}"),
            (self.threads <= 1024, f"{self.threads} threads per block; the limit is 1024"),
            (self.stages in (1, 2), "stages must be 1 or 2"),
            (self.guard in GUARDS, f"guard must be one of {GUARDS}"),
            ((self.BM * self.BK // 4) % self.threads == 0 and self.threads % (self.BK // 4) == 0,
             f"the {self.BM}x{self.BK} A tile must split evenly into float4s over {self.threads} threads"),
            ((self.BK * self.BN // 4) % self.threads == 0 and self.threads % (self.BN // 4) == 0,
             f"the {self.BK}x{self.BN} B tile must split evenly into float4s over {self.threads} threads"),
            (self.shared_bytes <= STATIC_SHARED_LIMIT,
             f"{self.shared_bytes} bytes of shared memory; a block may have {STATIC_SHARED_LIMIT}"),
            (self.TM * self.TN <= 128, "more than 128 results per thread cannot stay in registers"),
            (self.max_registers is None or 64 <= self.max_registers <= 255,
             "max_registers must be None or 64..255"),
            (not (self.split_k and self.group_m > 1), "split_k and group_m > 1 both need the grid's z"),
        ]
        for ok, message in rules:
            if not ok:
                raise ValueError(f"invalid TileConfig {self.short()}: {message}")
        return self

    def short(self):
        return (f"{self.BM}x{self.BN}x{self.BK} warp {self.WM}x{self.WN} thread {self.TM}x{self.TN} "
                f"stages {self.stages} pad {self.pad_a} regs {self.max_registers}"
                + (" spread" if self.spread and self.stages == 2 else "")
                + ("" if self.guard == "if" else f" guard {self.guard}")
                + ("" if self.group_m == 1 else f" group {self.group_m}")
                + (" split_k" if self.split_k else "") + (" ragged_c" if self.ragged_c else ""))


GUARDS = ("if", "select", "and")


def make_kernel(cfg):
    """Compile the kernel for ``cfg`` (validated first); the result remembers its config."""
    cfg.validate()
    BM, BN, BK, WM, WN, TM, TN = cfg.BM, cfg.BN, cfg.BK, cfg.WM, cfg.WN, cfg.TM, cfg.TN
    LM, LN = cfg.lanes
    A_ROW = BM + cfg.pad_a                 # a row of the transposed A tile, padded
    A_LOADS = BM * BK // 4 // cfg.threads  # float4s of the A tile each thread stages per slice,
    A_STEP = cfg.threads // (BK // 4)      #   A_STEP rows apart
    B_LOADS = BK * BN // 4 // cfg.threads  # ... and of the B tile, B_STEP rows apart
    B_STEP = cfg.threads // (BN // 4)
    STAGES, GUARD, GROUP_M, SPLIT_K, RAGGED_C = cfg.stages, cfg.guard, cfg.group_m, cfg.split_k, cfg.ragged_c

    def load_at(u):  # the k-step before which staged float4 u (A's first, then B's) is loaded
        return u * BK // (A_LOADS + B_LOADS) if cfg.spread else 0

    def store_at(u):  # ... and stored into shared memory (BK: after the last k-step)
        return min(load_at(u) + BK // 2, BK) if cfg.spread else BK

    @jit(max_registers=cfg.max_registers)
    @unrolled
    def sgemm_warptile(A, B, C, alpha, beta):
        sA0 = cuda.shared.array((BK, A_ROW), float32)  # A tile, transposed: sA0[k, m]
        if static(STAGES == 2):
            sA1 = cuda.shared.array((BK, A_ROW), float32)
        sB0 = cuda.shared.array((BK, BN), float32)
        if static(STAGES == 2):
            sB1 = cuda.shared.array((BK, BN), float32)
        tid = cuda.threadIdx.x
        if static(GROUP_M == 1):  # row-major: block (x, y) computes tile (row y, column x)
            row0 = cuda.blockIdx.y * BM
            col0 = cuda.blockIdx.x * BN
        else:  # grouped: block (x, y, z) computes row x of group z in tile column y
            row0 = (cuda.blockIdx.z * GROUP_M + cuda.blockIdx.x) * BM
            col0 = cuda.blockIdx.y * BN
        M, K = A.shape
        N = B.shape[1]
        k_begin, k_end, c_row0 = 0, K, 0  # the k this block sums; its first row of C
        if static(SPLIT_K):  # block z: its chunk of k (a multiple of BK), into rows z*M.. of C (lesson 11)
            chunk = (K + cuda.gridDim.z * BK - 1) // (cuda.gridDim.z * BK) * BK
            k_begin = cuda.blockIdx.z * chunk
            k_end = min(K, k_begin + chunk)
            c_row0 = cuda.blockIdx.z * M
        if static(GROUP_M > 1):
            if row0 >= M:  # a last group with fewer rows: this block has no tile
                return
        warp, lane = tid // 32, tid % 32
        a_base = (warp // (BN // WN)) * WM + (lane // LN) * 4   # this thread's first row in the tile
        b_base = (warp % (BN // WN)) * WN + (lane % LN) * 4     # ... and first column
        a_r = tid // (BK // 4)          # the float4s of the A tile this thread stages:
        a_c = (tid % (BK // 4)) * 4     #   rows a_r + i * A_STEP, columns a_c..a_c+3
        b_r = tid // (BN // 4)          # ... and of the B tile: rows b_r + j * B_STEP
        b_c = (tid % (BN // 4)) * 4
        # registers (local arrays indexed by constants only): rows of A and the columns of B
        # inside the matrix (outside ones are read clamped to the last row or float4, see
        # load_float4), the thread's TM x TN results, one k-step's fragments of A and B, and
        # the float4s on their way from global to shared memory
        a_ok = cuda.local.array(A_LOADS, boolean)
        a_row = cuda.local.array(A_LOADS, int64)
        for i in static_range(A_LOADS):
            a_ok[i] = row0 + a_r + i * A_STEP < M
            a_row[i] = min(row0 + a_r + i * A_STEP, M - 1)
        b_ok = col0 + b_c < N  # N is a multiple of 4: a float4 is wholly in or out
        b_col = min(col0 + b_c, N - 4)
        acc = cuda.local.array((TM, TN), float32)
        for i in static_range(TM):
            for j in static_range(TN):
                acc[i, j] = np.float32(0.0)
        a = cuda.local.array(TM, float32)
        b = cuda.local.array(TN, float32)
        xa = cuda.local.array((A_LOADS, 4), float32)
        xb = cuda.local.array((B_LOADS, 4), float32)

        def load_float4(X, row, col, inside_mn, inside_k, safe_row, safe_col):
            """X[row, col:col+4], or zeros where the float4 lies outside X: past M (A) or N (B)
            or past K.  GUARD "if": one condition, so ptxas can predicate the load instead of
            branching (the fastest in lesson 08's sweep); "select": the address is
            clamped into the matrix and the value replaced by 0 outside it, no condition around
            the load at all; "and": Python's short-circuit ``and`` is two branches."""
            if static(GUARD == "select"):
                ok = inside_mn & inside_k
                v0, v1, v2, v3 = load4(X, safe_row, safe_col)
                v0 = v0 if ok else np.float32(0.0)
                v1 = v1 if ok else np.float32(0.0)
                v2 = v2 if ok else np.float32(0.0)
                v3 = v3 if ok else np.float32(0.0)
            else:
                v0 = v1 = v2 = v3 = np.float32(0.0)
                if static(GUARD == "and"):
                    if inside_mn and inside_k:
                        v0, v1, v2, v3 = load4(X, row, col)
                elif inside_mn & inside_k:
                    v0, v1, v2, v3 = load4(X, row, col)
            return v0, v1, v2, v3

        def load_a(i, k0):  # global -> registers: A's float4 i of the slice starting at k0
            xa[i, 0], xa[i, 1], xa[i, 2], xa[i, 3] = load_float4(
                A, row0 + a_r + i * A_STEP, k0 + a_c, a_ok[i], k0 + a_c < k_end, a_row[i], min(k0 + a_c, K - 4))

        def load_b(j, k0):
            xb[j, 0], xb[j, 1], xb[j, 2], xb[j, 3] = load_float4(
                B, k0 + b_r + j * B_STEP, col0 + b_c, b_ok, k0 + b_r + j * B_STEP < k_end,
                min(k0 + b_r + j * B_STEP, K - 1), b_col)

        def store_a(i, sA):  # registers -> shared: A transposed, four scalar stores
            for d in static_range(4):
                sA[a_c + d, a_r + i * A_STEP] = xa[i, d]

        def store_b(j, sB):  # ... B as one float4
            store4(sB, b_r + j * B_STEP, b_c, xb[j, 0], xb[j, 1], xb[j, 2], xb[j, 3])

        def stage(k0, sA, sB):  # the slice starting at k0, all at once: global -> registers -> shared
            for i in static_range(A_LOADS):
                load_a(i, k0)
            for j in static_range(B_LOADS):
                load_b(j, k0)
            for i in static_range(A_LOADS):
                store_a(i, sA)
            for j in static_range(B_LOADS):
                store_b(j, sB)

        def k_step(sA, sB, k):  # TM/4 + TN/4 LDS.128 (4x4 pieces, LM*4 rows and LN*4 columns apart), TM*TN FFMA
            for p in static_range(TM // 4):
                a[4 * p], a[4 * p + 1], a[4 * p + 2], a[4 * p + 3] = load4(sA, k, a_base + p * LM * 4)
            for q in static_range(TN // 4):
                b[4 * q], b[4 * q + 1], b[4 * q + 2], b[4 * q + 3] = load4(sB, k, b_base + q * LN * 4)
            for i in static_range(TM):
                for j in static_range(TN):
                    acc[i, j] += a[i] * b[j]

        def compute_and_stage(sA, sB, k0, sA_next, sB_next):
            """BK k-steps from sA, sB while the slice starting at k0 travels global -> registers ->
            sA_next, sB_next: all loads before the first k-step and all stores after the last, or
            (spread) float4 by float4 through the slice, each store half a slice after its load,
            so fewer registers hold staged values at any time."""
            for k in static_range(BK + 1):
                for u in static_range(A_LOADS + B_LOADS):
                    if static(load_at(u) == k):
                        if static(u < A_LOADS):
                            load_a(u, k0)
                        else:
                            load_b(u - A_LOADS, k0)
                    if static(store_at(u) == k):
                        if static(u < A_LOADS):
                            store_a(u, sA_next)
                        else:
                            store_b(u - A_LOADS, sB_next)
                if static(k < BK):
                    k_step(sA, sB, k)

        if static(STAGES == 1):
            for k0 in range(k_begin, k_end, BK):
                stage(k0, sA0, sB0)
                cuda.syncthreads()
                for k in static_range(BK):
                    k_step(sA0, sB0, k)
                cuda.syncthreads()
        else:
            stage(k_begin, sA0, sB0)  # prologue: the first slice into buffer 0
            cuda.syncthreads()
            for k0 in range(k_begin, k_end, 2 * BK):
                compute_and_stage(sA0, sB0, k0 + BK, sA1, sB1)  # from buffer 0; the next slice into buffer 1
                cuda.syncthreads()  # buffer 1 full; everyone is done with buffer 0
                if k0 + BK >= k_end:
                    break
                compute_and_stage(sA1, sB1, k0 + 2 * BK, sA0, sB0)
                cuda.syncthreads()
        for i in static_range(TM):
            row = row0 + a_base + (i // 4 * LM * 4 + i % 4)  # 4x4 pieces, LM*4 rows apart
            if row < M:
                row += c_row0  # split_k: block z's rows of the workspace
                if static(RAGGED_C):  # one float at a time, columns checked against C's width
                    for j in static_range(TN):
                        col = col0 + b_base + (j // 4 * LN * 4 + j % 4)
                        if col < C.shape[1]:
                            if beta == 0:
                                store1(C, row, col, alpha * acc[i, j])
                            else:
                                store1(C, row, col, alpha * acc[i, j] + beta * load1(C, row, col))
                else:  # float4 by float4 (N a multiple of 4, C aligned)
                    for j in static_range(0, TN, 4):
                        col = col0 + b_base + j // 4 * LN * 4
                        if col < N:
                            if beta == 0:
                                store4(C, row, col, alpha * acc[i, j], alpha * acc[i, j + 1],
                                       alpha * acc[i, j + 2], alpha * acc[i, j + 3])
                            else:
                                o0, o1, o2, o3 = load4(C, row, col)
                                store4(C, row, col, alpha * acc[i, j] + beta * o0, alpha * acc[i, j + 1] + beta * o1,
                                       alpha * acc[i, j + 2] + beta * o2, alpha * acc[i, j + 3] + beta * o3)

    sgemm_warptile.config = cfg
    return sgemm_warptile


# %% [markdown]
# **The load guard, written three ways.** Loads outside A or B must read zeros. `dbuf` writes
# the condition as one expression, `if a & b:`, which the compiler can turn into a
# [predicated](GLOSSARY.md#predicate) load. `dbuf_short_circuit` writes Python's `if a and b:`:
# two branches, in the middle of unrolled code. `dbuf_select` clamps the address into the
# matrix and replaces the value by 0 outside it, with no branch around the load. The same run
# as the Measure table, and their compiler facts:

# %%
guards = replace(everything, rows=[row for row in everything.rows
                                   if row.kernel in ("dbuf", "dbuf_short_circuit", "dbuf_select")])
guard_facts = compiler_facts.compiler_facts({name: my_kernels[name] for name in ("dbuf", "dbuf_short_circuit",
                                                                                "dbuf_select")},
                                            threads={name: 256 for name in my_kernels}, record=rec07)
display(guards, guard_facts)
local_ops = {name: sum(n for op, n in (f.get("sass") or {}).items() if op.startswith(("LDL", "STL")))
             for name, f in guard_facts.facts.items()}  # every width, LDL.64 and LDL.LU.64 included
spilled = [f"{name} ({n} LDL/STL, wider forms included)" for name, n in local_ops.items() if n]
print("Spilled to local memory: " + (", ".join(spilled) if spilled else "none") + ". "
      + "; ".join(f"{name} vs dbuf: {everything.speedup(name, 'dbuf'):.2f}x" for name in ("dbuf_short_circuit",
                                                                                           "dbuf_select")) + ".")

# %% [markdown]
# Source article [[4]](REFERENCES.md#seed-003) warns that double buffering written naively can
# lose to register spills. Here the second buffer spilled nothing; the short-circuit guard did.
#
# **Reading the FFMA columns.** Like every instruction column, they count instructions in the
# code, not how often they run:
# `vec_split`'s 128 are one k-step's 64 in its loop plus 64 in the `beta != 0` epilogue (the
# code after the main loop that writes C); `dbuf_one_buffer` has a slice's 8 k-steps written
# out (8 x 64) plus those 64, `dbuf` the two slices of a trip (16 x 64) plus 64. Every kernel
# does the same FMAs.
#
# **The two attempts differ in more than their buffers.** Besides separate arrays and explicit
# `load4`, `dbuf` writes out every k-step, pads the transposed A tile by 4 floats, caps
# registers at 128, places a thread's two 4-row pieces 8 rows apart (`vec_split`: 64), and
# handles two slices per trip. The first attempt against the second is therefore no controlled
# comparison (a pair differing in one thing); the twins `dbuf_one_buffer` and `dbuf` are one,
# and `vec_split` against `dbuf_one_buffer` credits the rewrite as a whole. Why the rewrite
# stalls more than `vec_split` (the Why table's stall times) these records do not show.
#
# **What the runtime index costs.** Compiled offline (ptxas for sm_90, no GPU;
# `tests/kernels/test_sass_equal.py`), the first attempt with its buffer index made a constant
# (a probe that reads buffer 0 and writes buffer 1) keeps all four `LDS.128`, its k-step is 16
# instructions shorter, and its registers are the same. So the runtime index, not the
# element-by-element reads, costs the 16-byte loads; the extra registers come with the
# double-buffered schedule.
#
# **Across sizes.** The recorded benchmark timed every rung at four square sizes in one run;
# `vec_split` against `dbuf` shows the rewrite and the second buffer together:

# %%
plots.rung_versus_size("dbuf");

# %% [markdown]
# **What numba compiles.** `static_range` writes every k-step out; the start of `dbuf`'s main loop:

# %%
lines = expanded_source(my_dbuf).splitlines()
start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("for k0 in range("))
print(f"numba compiles {len(lines)} lines once every static_range loop is written out; the main loop begins:\n")
print("\n".join(lines[start:start + 24]))
print("    ...")
