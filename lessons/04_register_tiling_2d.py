# %% [markdown]
# # 04 · 2-D register tiling: the outer product
#
# **Where we are.** Lesson 03's `reg1d` gives each thread a column of 16 results: a value of B
# loaded from shared memory serves 16 FMAs, but every FMA still loads its own value of A, so 17
# shared-memory loads feed 16 FMAs. The *limiter run* timed and profiled every rung of the
# course on one GPU, and the [limiter model](GLOSSARY.md#limiter-model) found what that costs:

# %%
import gemm_lessons as gl  # first: it chooses the GPU, or numba's CUDA simulator when there is none
from gemm_lessons.model import counting
from gemm_lessons.model.limiter import WHAT
from gemm_lessons.teaching import exercises, figures, limiter_table, measure_step
from gemm_lessons.instruments import compiler_facts
from gemm_lessons.kernels import ladder
from gemm_lessons.core.jit import jit  # cuda.jit that also takes GPU-only options (max_registers) on the simulator
import functools
import numpy as np
from numba import cuda, float32
# %matplotlib inline
print(gl.banner())

prev = limiter_table.why(["reg1d"])  # the limiter run: every rung timed and profiled on one GPU
r = prev.row("reg1d")
print(f"reg1d at 4096^3 on the {prev.device}: {r.measured_ms:.1f} ms, {2 * 4096**3 / r.measured_ms / 1e9:.1f} TFLOPS. "
      f"Binding ceiling: {WHAT[r.binding]}, {r.ceilings_ms[r.binding]:.1f} ms on its own.")

# %% [markdown]
# ## Idea: an 8x8 patch of C per thread
#
# Give each thread a TM x TN patch of C. At each [k-step](GLOSSARY.md#k-step) it loads TM values
# of A (a column of the A slice) and TN values of B (a row of the B slice) into registers and
# forms all TM x TN products: an [outer product](GLOSSARY.md#outer-product), TM + TN loads for
# TM x TN FMAs. This lesson's kernel, `reg2d`, uses the classic shape: a block computes a
# 128x128 tile of C from a 128x8 slice of A and an 8x128 slice of B (BK = 8) at a time, each
# thread 8x8 results, so 16 x 16 = 256 threads per block.

# %%
figures.register_block(BM=128, BN=128, BK=8, TM=8, TN=8);

# %% [markdown]
# An x-by-y patch does 2xy FLOPs from x + y loaded values, a compute-to-memory ratio of
# $$\frac{2xy}{x + y} = \frac{2}{1/x + 1/y}\ \text{FLOP per value loaded.}$$
# For a fixed number of results $xy$ (of accumulators) it is largest when the patch is square;
# a bigger patch raises it too.

# %%
# NBVAL_CHECK_OUTPUT
for x, y in [(1, 1), (16, 1), (4, 4), (16, 4), (8, 8)]:
    print(f"{x:>2} x {y:<2} patch: {x * y:>3} FMAs from {x + y:>2} reads, "
          f"ratio 2/(1/x+1/y) = {counting.compute_to_memory_ratio(x, y):.2f} FLOP per value")


# %% [markdown]
# ## Predict
#
# `reg1d` is the 16 x 1 row above, `reg2d` the 8 x 8: 4.25 times fewer shared loads per FMA.
# Is it 4.25 times faster? A kernel takes as long as its busiest unit needs. The limiter model
# counts, per [warp-FFMA](GLOSSARY.md#warp-fma), the work of each unit of an SM and divides by
# the unit's rate per cycle:
#
# * FP32 lanes: 4 warp-FFMAs per cycle (128 lanes);
# * [issue](GLOSSARY.md#issue): 4 warp-instructions per cycle (one per scheduler), whatever the
#   instruction: an `FFMA`, an `LDS`, or an integer add computing an address;
# * shared memory: 1 [wavefront](GLOSSARY.md#wavefront) per cycle.
#
# The largest of the three, in cycles per warp-FFMA, *binds*: it sets the time. Its inputs are counts, which the
# profiler took for both kernels in the limiter run:

# %%
work = {rung: limiter_table.counts(rung) for rung in ("reg1d", "reg2d")}  # one launch at 4096^3 each
for rung, n in work.items():
    print(f"{rung}: {n['warp_instructions'] / n['warp_ffma']:.2f} warp-instructions and "
          f"{n['shared_wavefronts'] / n['warp_ffma']:.2f} shared wavefronts per warp-FFMA")
print(f"(a k-step of reg2d holds 64 FFMA and 16 LDS, {80 / 64:.2f} instructions per FFMA: the rest is "
      "index arithmetic, staging the slices, barriers and the loops' counters)")

# %% [markdown]
# `reg2d`'s wavefronts are its 16 conflict-free loads per 64 FMAs (0.25) plus the stores that
# stage the slices. **Your prediction:** work out each rung's cycles per warp-FFMA for the three
# units, find the binding one, and predict how many times faster `reg2d` runs than `reg1d` at
# 4096^3.

# %%
my_speedup = None  # your prediction: replace None with a number (for example 2.5)

# %% [markdown]
# The model's own answer:

# %%
binding = {}
for rung, n in work.items():
    cycles = {"FP32": 1 / n["ffma_per_cycle"],
              "issue": n["warp_instructions"] / n["warp_ffma"] / n["issue_per_cycle"],
              "shared": n["shared_wavefronts"] / n["warp_ffma"] / n["wavefronts_per_cycle"]}
    binding[rung] = max(cycles.items(), key=lambda kv: kv[1])
    print(f"{rung}: cycles per warp-FFMA " + ", ".join(f"{k} {v:.2f}" for k, v in cycles.items())
          + f" -> {binding[rung][0]} binds")
model_speedup = binding["reg1d"][1] / binding["reg2d"][1]
fewer = {k: work["reg1d"][k] / work["reg2d"][k] for k in ("shared_wavefronts", "warp_instructions")}
print(f"Model: reg2d {model_speedup:.2f}x as fast as reg1d. Wavefronts fall {fewer['shared_wavefronts']:.1f}x, "
      f"so shared memory stops binding; instructions fall only {fewer['warp_instructions']:.2f}x, and issue binds.")

# %% [markdown]
# ## The kernel
#
# Each slice, the 256 threads stage the A and B slices in shared memory, then run BK = 8 k-steps
# of the outer product. Two choices in it matter:
#
# * **Registers.** 64 accumulators, 16 operands and the addresses: left alone, the compiler
#   may give each thread more than 128 [registers](GLOSSARY.md#register), and an SM (65,536
#   registers) then holds only one 256-thread block. `MAX_REGISTERS=128` caps them
#   ([max_registers](GLOSSARY.md#max-registers), CUDA C++'s `__maxnreg__`) so that two blocks
#   fit: 2 x 256 x 128 = 65,536. `reg2d_uncapped` is the same kernel without the cap.
# * **Where a thread's results lie.** With `SPREAD`, a thread's 8 rows lie 16 apart, as do its 8
#   columns, not side by side as in the figure: the threads of a warp then read neighbouring
#   shared-memory words, without [bank conflicts](GLOSSARY.md#bank-conflict) (lesson 06). The
#   Lab notes look at the side-by-side layout, `reg2d_contiguous`.

# %%
# source: gemm_lessons/kernels/sgemm/reg2d.py  (the package runs this same code; a test keeps the two identical)
def make_sgemm_reg2d(BM=128, BN=128, BK=8, TM=8, TN=8, SPREAD=True, MAX_REGISTERS=128):
    """BM x BN tile of C per block, TM x TN results per thread.  With SPREAD, a thread's
    TM rows are BM//TM apart and its TN columns BN//TN apart (instead of side by side), so
    that the threads of a warp read neighbouring shared-memory words (lesson 06 says why).
    MAX_REGISTERS caps registers per thread so that two 256-thread blocks fit on an SM."""
    THREADS = (BM // TM) * (BN // TN)
    A_LOADS = BM * BK // THREADS  # values of the A tile each thread stages
    B_LOADS = BK * BN // THREADS
    ACC = TM * TN  # array shapes must be compile-time constants: computed here
    ROW_STEP = BM // TM if SPREAD else 1
    COL_STEP = BN // TN if SPREAD else 1
    ROW_SPAN = 1 if SPREAD else TM
    COL_SPAN = 1 if SPREAD else TN

    @jit(max_registers=MAX_REGISTERS)  # cuda.jit; the cap is dropped on the simulator
    def sgemm_reg2d(A, B, C, alpha, beta):
        sA = cuda.shared.array((BM, BK), float32)
        sB = cuda.shared.array((BK, BN), float32)
        acc = cuda.local.array(ACC, float32)
        a_reg = cuda.local.array(TM, float32)
        b_reg = cuda.local.array(TN, float32)
        for i in range(ACC):
            acc[i] = 0.0
        tid = cuda.threadIdx.x
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        M, K = A.shape
        N = B.shape[1]
        # this thread owns rows t_row + i*ROW_STEP and columns t_col + j*COL_STEP of the tile
        t_row = (tid // (BN // TN)) * ROW_SPAN
        t_col = (tid % (BN // TN)) * COL_SPAN
        for k0 in range(0, K, BK):
            for l in range(A_LOADS):  # consecutive threads stage consecutive values
                idx = tid + l * THREADS
                r, c = idx // BK, idx % BK
                sA[r, c] = A[row0 + r, k0 + c] if row0 + r < M and k0 + c < K else np.float32(0.0)
            for l in range(B_LOADS):
                idx = tid + l * THREADS
                r, c = idx // BN, idx % BN
                sB[r, c] = B[k0 + r, col0 + c] if k0 + r < K and col0 + c < N else np.float32(0.0)
            cuda.syncthreads()
            for k in range(BK):
                for i in range(TM):  # a column of the A tile and a row of the B tile ...
                    a_reg[i] = sA[t_row + i * ROW_STEP, k]
                for j in range(TN):
                    b_reg[j] = sB[k, t_col + j * COL_STEP]
                for i in range(TM):  # ... make TM*TN products from TM+TN shared reads
                    for j in range(TN):
                        acc[i * TN + j] += a_reg[i] * b_reg[j]
            cuda.syncthreads()
        for i in range(TM):
            row = row0 + t_row + i * ROW_STEP
            for j in range(TN):
                col = col0 + t_col + j * COL_STEP
                if row < M and col < N:
                    if beta == 0:
                        C[row, col] = alpha * acc[i * TN + j]
                    else:
                        C[row, col] = alpha * acc[i * TN + j] + beta * C[row, col]

    sgemm_reg2d.tile = (BM, BN, BK, TM, TN)
    return sgemm_reg2d


# %%
from gemm_lessons.kernels.sgemm import reg2d

reg2d_default = make_sgemm_reg2d()                          # spread, 128 registers
reg2d_uncapped = make_sgemm_reg2d(MAX_REGISTERS=None)        # spread, registers left to the compiler
reg2d_contiguous = make_sgemm_reg2d(SPREAD=False)           # each thread's 8x8 side by side (Lab notes)
gl.check_all(functools.partial(reg2d.sgemm, kernel=reg2d_default), name="reg2d")

# %% [markdown]
# ## Registers and local memory
#
# The [compiler facts](GLOSSARY.md#compiler-facts): `registers` per thread; `local bytes` per
# thread, where anything but 0 would mean the compiler ran out of registers and
# [spilled](GLOSSARY.md#register-spill) values to local memory; the
# [blocks per SM](GLOSSARY.md#blocks-per-sm) the registers allow; and SASS counts in the code.

# %%
kernels = {"reg2d": reg2d_default, "reg2d_uncapped": reg2d_uncapped, "reg1d": ladder.SGEMM["reg1d"].kernel}
threads = {"reg2d": 256, "reg2d_uncapped": 256, "reg1d": 1024}
facts = compiler_facts.compiler_facts(kernels, threads=threads)
facts

# %%
warps = {name: compiler_facts.blocks_per_sm(f["registers"], f.get("shared_bytes", 0), threads[name])[0]
         * threads[name] // 32 for name, f in facts.facts.items()}
spills = [name for name, f in facts.facts.items() if f.get("local_bytes")]
print("Resident warps per SM: " + ", ".join(f"{name} {w}" for name, w in warps.items()) + ". "
      + (f"Spilled to local memory: {', '.join(spills)}." if spills else "Local memory: 0 bytes in all three, no spill."))

# %% [markdown]
# The SASS counts are instructions in the code, not executed: the loop body is one k-step, 16
# `LDS` and 64 `FFMA`; the other 64 `FFMA` compute `alpha * acc + beta * C` after the loop.

# %% [markdown]
# ## Measure

# %%
table = measure_step.compare({
    "reg2d": functools.partial(reg2d.sgemm, kernel=reg2d_default),
    "reg2d_uncapped": functools.partial(reg2d.sgemm, kernel=reg2d_uncapped),
    "reg2d_contiguous": functools.partial(reg2d.sgemm, kernel=reg2d_contiguous),
    "reg1d": ladder.SGEMM["reg1d"],
}, size=(4096, 4096, 4096))
table

# %%
exercises.compare_prediction(my_speedup, table.speedup("reg2d", "reg1d"), "reg2d vs reg1d at 4096^3 (times faster)",
                             table.source)

# %% [markdown]
# ## Why: the limiter model
#
# Each rung's ceilings (the time each unit alone would need), the binding one, the prediction
# against the measurement, and the profiler's busiest unit in the limiter run:

# %%
why = limiter_table.why(["reg1d", "reg2d", "cublas"], measured=table)
why

# %%
r1, r2, rc = (why.row(rung) for rung in ("reg1d", "reg2d", "cublas"))
short = limiter_table.SHORT
print(f"reg1d: {short[r1.binding]}-bound ({r1.ceilings_ms[r1.binding]:.1f} ms). The outer product cuts the shared "
      f"ceiling to {r2.ceilings_ms['shared']:.1f} ms, and {short[r2.binding]} binds instead "
      f"({r2.ceilings_ms[r2.binding]:.1f} ms): predicted {r1.predicted_ms / r2.predicted_ms:.2f}x, "
      f"measured {r1.measured_ms / r2.measured_ms:.2f}x"
      + ("." if r1.measured_here and r2.measured_here else " (in the limiter run)."))
agree = [r.rung for r in (r1, r2) if r.agrees]
print("The profiler's busiest unit is the model's binding one for "
      + (" and ".join(agree) if agree else "neither rung") + ".")
print(f"Measured/predicted: {r1.ratio:.2f} (reg1d), {r2.ratio:.2f} (reg2d). The model assumes the binding unit "
      f"busy every cycle; the profiler found it {r1.utilization_pct[r1.binding]:.0f}% and "
      f"{r2.utilization_pct[r2.binding]:.0f}% busy. The other cycles are stalls: warps waiting at barriers, for "
      "loads, for the previous FFMA's result.")
ipf = {rung: limiter_table.counts(rung) for rung in ("reg2d", "cublas")}
ipf = {rung: n["warp_instructions"] / n["warp_ffma"] for rung, n in ipf.items()}
print(f"cuBLAS is {short[rc.binding]}-bound too, at {ipf['cublas']:.2f} instructions per FFMA against "
      f"reg2d's {ipf['reg2d']:.2f}.")

# %% [markdown]
# So the next rungs must cut instructions: lesson 05 replaces four 4-byte loads by one 16-byte
# load. The register cap is outside the model: `reg2d_uncapped` runs the same code, so the
# same instructions, from the warps its registers leave room for.

# %%
ratio, w_cap, w_un = table.speedup("reg2d_uncapped", "reg2d"), warps["reg2d"], warps["reg2d_uncapped"]
print(f"reg2d_uncapped ran {ratio:.2f}x as fast as reg2d, with {w_un} warps per SM against {w_cap}"
      + (": with fewer warps, a scheduler more often finds none ready to issue while the others wait for "
         "their global loads (the profiler's stalls, in the Lab notes)." if ratio < 1 and w_un < w_cap else "."))

# %% [markdown]
# ## Exercises
#
# ### 04-ratio
# Compute the compute-to-memory ratio for an 8x4 patch and for a 32x1 patch (the same 32
# results, neither of them in the table above). Answer with a pair.

# %%
# NBVAL_CHECK_OUTPUT
### BEGIN SOLUTION: answer = None
answer = (2 / (1 / 8 + 1 / 4), 2 / (1 / 32 + 1 / 1))
### END SOLUTION
exercises.check("04-ratio", answer)

# %% [markdown]
# ### 04-kernel: the outer product
# A small version of the kernel above: a 32 x 32 tile with BK = 8 and 64 threads, each thread's
# TM x TN = 4 x 4 results side by side (rows `t_row` .. `t_row + 3` and columns `t_col` ..
# `t_col + 3` of the tile), the accumulators in a 2-D local array `acc[i, j]`. The staging is
# given. Write the products of one [slice](GLOSSARY.md#k-step): for each `k`, fill the registers `a_reg` and `b_reg`
# from shared memory, then update all TM x TN accumulators from registers.
#
# The check runs your kernel against the float64 reference, then on the simulator counts its
# global reads and traces its shared-memory loads: at most TM + TN = 8 per k-step for its
# 16 FMAs.

# %%
# NBVAL_CHECK_OUTPUT
def make_my_reg2d(BM=32, BN=32, BK=8, TM=4, TN=4):
    THREADS = (BM // TM) * (BN // TN)
    A_LOADS, B_LOADS = BM * BK // THREADS, BK * BN // THREADS  # values of each tile a thread stages

    @cuda.jit
    def my_reg2d(A, B, C, alpha, beta):
        sA = cuda.shared.array((BM, BK), float32)
        sB = cuda.shared.array((BK, BN), float32)
        acc = cuda.local.array((TM, TN), float32)
        a_reg = cuda.local.array(TM, float32)
        b_reg = cuda.local.array(TN, float32)
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = 0.0
        tid = cuda.threadIdx.x
        row0, col0 = cuda.blockIdx.y * BM, cuda.blockIdx.x * BN
        M, K = A.shape
        N = B.shape[1]
        t_row = (tid // (BN // TN)) * TM  # this thread owns rows t_row .. t_row + TM - 1
        t_col = (tid % (BN // TN)) * TN  # and columns t_col .. t_col + TN - 1 of the tile
        for k0 in range(0, K, BK):
            for l in range(A_LOADS):
                idx = tid + l * THREADS
                r, c = idx // BK, idx % BK
                sA[r, c] = A[row0 + r, k0 + c] if row0 + r < M and k0 + c < K else np.float32(0.0)
            for l in range(B_LOADS):
                idx = tid + l * THREADS
                r, c = idx // BN, idx % BN
                sB[r, c] = B[k0 + r, col0 + c] if k0 + r < K and col0 + c < N else np.float32(0.0)
            cuda.syncthreads()
            ### BEGIN SOLUTION
            for k in range(BK):
                for i in range(TM):
                    a_reg[i] = sA[t_row + i, k]
                for j in range(TN):
                    b_reg[j] = sB[k, t_col + j]
                for i in range(TM):
                    for j in range(TN):
                        acc[i, j] += a_reg[i] * b_reg[j]
            ### END SOLUTION
            cuda.syncthreads()
        for i in range(TM):
            for j in range(TN):
                row, col = row0 + t_row + i, col0 + t_col + j
                if row < M and col < N:
                    C[row, col] = alpha * acc[i, j] + (beta * C[row, col] if beta != 0 else np.float32(0.0))

    my_reg2d.tile = (BM, BN, BK, TM, TN)  # the check's launch reads the tile shape from here
    return my_reg2d


exercises.check("04-kernel", make_my_reg2d())

# %% [markdown]
# ## Takeaway
#
# * The outer product reuses each loaded value in both directions: an 8x8 patch per thread reads
#   16 values per 64 FMAs, a ratio $2/(1/x + 1/y)$ = 8 FLOP per value.
# * Four times fewer shared loads did not make the kernel four times faster: shared memory
#   stopped binding, and instruction issue took over. The limiter model says which unit binds
#   next, from counts of instructions and wavefronts.
# * `reg2d` issues far more instructions per FFMA than cuBLAS; lesson 05 cuts them.
# * Registers per thread decide how many blocks, hence warps, an SM holds. A cap
#   (`max_registers`) trades registers for warps; the compiler facts show whether it spilled,
#   and the measurement what the warps were worth.

# %% [markdown]
# ## Sources and further reading
#
# * The source articles this lesson re-tells and tests: [[1]](REFERENCES.md#seed-000), [[3]](REFERENCES.md#seed-002), [[5]](REFERENCES.md#seed-004) (their origins and what each
#   covers are in [REFERENCES.md](REFERENCES.md#source-articles)).
# * What to read next: [REFERENCES.md, lesson 04](REFERENCES.md#lessons-02-04).
# * Terms: the [glossary](GLOSSARY.md); the execution model and the compiler-facts table are
#   introduced in the [primer](00a_primer.ipynb).

# %% [markdown]
# ## Lab notes
#
# **Spread vs side by side.** The [bank tracer](GLOSSARY.md#bank-tracer) runs one block of each
# layout on the simulator (K = 8) and counts the wavefronts of its shared-memory loads. Side by
# side, the 16 threads along a block row read `sB` 8 words apart and a warp's two rows of
# threads read `sA` 64 words apart: both land in few [banks](GLOSSARY.md#bank).

# %%
# NBVAL_CHECK_OUTPUT
from gemm_lessons.instruments import shared_tracer
for name in ("reg2d", "reg2d_contiguous"):
    t = shared_tracer.trace_rung(name, (128, 128, 8), merge=False).totals("ld")
    print(f"{name:<17} loads: {t['instructions']} warp instructions, {t['wavefronts']} wavefronts, "
          f"{t['conflicts']} from conflicts")

# %%
side = compiler_facts.compiler_facts({"reg2d_contiguous": reg2d_contiguous}, threads={"reg2d_contiguous": 256})
f = side.facts["reg2d_contiguous"]
wf = {name: sum(shared_tracer.trace_rung(name, (128, 128, 8), merge=False).totals(op)["wavefronts"] for op in ("ld", "st"))
      for name in ("reg2d", "reg2d_contiguous")}
shared_ms = why.row("reg2d").ceilings_ms["shared"] * wf["reg2d_contiguous"] / wf["reg2d"]
print(f"Scaled by the traced wavefronts (loads and stores), reg2d_contiguous's shared ceiling would be {shared_ms:.1f} ms "
      f"against reg2d's issue ceiling of {why.row('reg2d').ceilings_ms['issue']:.1f} ms. It has {f['registers']} "
      f"registers and {f['local_bytes']} bytes of local memory per thread (LDL x {f['sass'].get('LDL', 0)}, "
      f"STL x {f['sass'].get('STL', 0)} in its code), and ran {table.speedup('reg2d_contiguous', 'reg2d'):.2f}x "
      f"as fast as reg2d ({table.source}).")

# %% [markdown]
# Lesson 05 starts from the side-by-side layout, because 16-byte loads need a thread's values
# to be neighbours; lesson 06 removes its conflicts.
#
# **The register cap, through the profiler.** [Nsight Compute](GLOSSARY.md#ncu)'s counters of
# `reg2d` and `reg2d_uncapped`: achieved [occupancy](GLOSSARY.md#occupancy) (warps resident on
# average against the most an SM holds) and [stall reasons](GLOSSARY.md#stall-reasons).

# %%
prof04 = gl.profile({"reg2d": functools.partial(reg2d.sgemm, kernel=reg2d_default),
                     "reg2d_uncapped": functools.partial(reg2d.sgemm, kernel=reg2d_uncapped)},
                    size=(4096, 4096, 4096), lesson="04")
prof04

# %%
if all(prof04.counters.get(n) for n in ("reg2d", "reg2d_uncapped")):
    occ = {n: prof04.value(n, "occupancy") for n in ("reg2d", "reg2d_uncapped")}
    waits = {n: dict(prof04.top_stalls(n, 10)).get("long_scoreboard", 0) for n in ("reg2d", "reg2d_uncapped")}
    print(f"Achieved occupancy {occ['reg2d_uncapped']:.1f}% (uncapped) against {occ['reg2d']:.1f}%; warps waiting "
          f"on global memory (long scoreboard) {waits['reg2d_uncapped']:.0f}% of their cycles against "
          f"{waits['reg2d']:.0f}% ({prof04.source}).")
    extra = prof04.value("reg2d", "shared_ld_conflicts")
    if extra:  # the tracer finds none in reg2d's addresses (above)
        print(f"The profiler also counted {extra:,.0f} bank conflicts in reg2d, {extra / (1024 * 512):.2f} per block "
              "and slice, which its addresses do not explain (lesson 06 meets such extras too).")
else:
    print(f"No counters for both kernels ({prof04.source}).")
