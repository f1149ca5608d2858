from nbtools import SETUP, code, md, src

CELLS = [
md("""
# 04 · 2-D register tiling: the outer product

**Where we are.** Lesson 03's threads reuse each `sB` value TM times, but still read one `sA`
value per FMA.
"""),
code(SETUP),
code("""
measure.recorded(["reg1d", "reg2d", "cublas"])
"""),
md("""
## Idea: TM x TN results per thread

Give each thread a TM x TN patch of C. At each k it loads TM values of A (a column of the A
tile) and TN values of B (a row of the B tile) into registers and forms all TM x TN products:
an **outer product**. Reads: TM + TN. FMAs: TM x TN.
"""),
code("""
figures.outer_product(8, 8);
"""),
md("""
**Predict.** For an x-by-y patch the compute-to-memory ratio is
$$\\frac{2xy}{x + y} = \\frac{2}{1/x + 1/y}\\ \\text{FLOP per value read,}$$
largest when the patch is square. The series uses the classic configuration: a 128x128 tile of C
per block, BK = 8, and 8x8 results per thread, so 256 threads per block.
"""),
code("""
for x, y in [(1, 1), (16, 1), (4, 4), (16, 4), (8, 8)]:
    print(f"{x:>2} x {y:<2} patch: {x * y:>3} FMAs from {x + y:>2} reads, "
          f"ratio 2/(1/x+1/y) = {counting.compute_to_memory_ratio(x, y):.2f} FLOP per value")
""", check=True),
md("""
## The kernel

Two choices in this kernel matter more than they look:

* **Where a thread's 64 results lie.** Side by side (an 8x8 square) is the obvious choice, but
  then the 16 threads along a row of the block read `sB` at addresses 8 floats apart, and
  several of them hit the same shared-memory bank (lesson 06 counts them). With `SPREAD`,
  a thread's 8 columns are 16 apart instead, and neighbouring threads read neighbouring words.
  Whether that pays depends on what else limits the kernel: compare `reg2d` with
  `reg2d_contiguous` in the table below.
* **Registers.** 64 accumulators + 16 operands + addresses: left alone, the compiler used more
  than 128 registers per thread, and an SM (65,536 registers) then holds only one 256-thread
  block. `MAX_REGISTERS=128` (numba's `max_registers`, the `__launch_bounds__` / `-maxrregcount`
  of CUDA C++) lets two blocks share an SM.
"""),
src("gemm_lessons/sgemm_kernels/reg2d.py"),
code("""
from gemm_lessons.sgemm_kernels import reg2d

reg2d_default = make_sgemm_reg2d()                          # spread, 128 registers
reg2d_uncapped = make_sgemm_reg2d(MAX_REGISTERS=None)        # spread, registers left to the compiler
reg2d_contiguous = make_sgemm_reg2d(SPREAD=False)           # each thread's 8x8 side by side
gl.check_all(functools.partial(reg2d.sgemm, kernel=reg2d_default), name="reg2d")
"""),
code("""
gl.check_all(functools.partial(reg2d.sgemm, kernel=reg2d_contiguous), name="reg2d contiguous")
"""),
md("""
### Look inside with the bank tracer: spread vs side by side

The tracer runs one block of each layout on the simulator (K = 8). With the 8x8 results side by
side, the 16 threads along a block row read `sB` 8 words apart, and a warp's two rows of
threads read `sA` 64 words apart: both land in few banks. Spread, the same reads are
conflict-free.
"""),
code("""
from gemm_lessons import banks
for name in ("reg2d", "reg2d_contiguous"):
    t = banks.trace_rung(name, (128, 128, 8), merge=False).totals("ld")
    print(f"{name:<17} loads: {t['instructions']} warp instructions, {t['wavefronts']} wavefronts, "
          f"{t['conflicts']} from conflicts")
""", check=True),
code("""
contiguous = banks.trace_rung("reg2d_contiguous", (128, 128, 8), merge=False)
banks.bank_map(contiguous.first("ld", array="a1").addresses, 4, title="reg2d_contiguous: first sB read, warp 0");
"""),
md("""
## Measure
"""),
code("""
table = measure.compare({
    "reg2d": functools.partial(reg2d.sgemm, kernel=reg2d_default),
    "reg2d_uncapped": functools.partial(reg2d.sgemm, kernel=reg2d_uncapped),
    "reg2d_contiguous": functools.partial(reg2d.sgemm, kernel=reg2d_contiguous),
    "reg1d": ladder.SGEMM["reg1d"],
}, size=(4096, 4096, 4096))
table
"""),
md("""
## Look inside: registers, spills, occupancy

`registers` is per thread; `local_bytes` is local memory per thread, which must be 0 (spilled
registers would appear as `LDL`/`STL` instructions). From the register count follows how many
256-thread blocks fit on one SM (65,536 registers per SM, allocated per warp in units of 256:
`inspect_kernel.blocks_per_sm`).
"""),
code("""
kernels = {"reg2d": reg2d_default, "reg2d_uncapped": reg2d_uncapped, "reg2d_contiguous": reg2d_contiguous}
inspect_kernel.compiler_facts(kernels, threads={name: 256 for name in kernels})
"""),
md("""
What to read in the SASS: `FFMA` is the number of FMA instructions in the *code*, not executed:
128 means the compiler unrolled two of the eight k-steps of the slice (2 x 64) and loops over
the rest. Every `sA` and `sB` value still arrives through a 4-byte `LDS`. Lesson 05 widens
those loads and writes the k-loop out in full.
"""),
md("""
## Exercise 04-ratio
Compute the compute-to-memory ratio for an 8x8 patch and for a 16x4 patch (same 64 results).
Answer with a pair.
"""),
code("""
### BEGIN SOLUTION: answer = None
answer = (2 / (1 / 8 + 1 / 8), 2 / (1 / 16 + 1 / 4))
### END SOLUTION
exercises.check("04-ratio", answer)
""", check=True),
md("""
## Takeaway

* The outer product reuses each loaded value in both directions: 8x8 results per thread read
  16 values per 64 FMAs.
* More results per thread means more registers; registers decide how many blocks fit on an SM.
  Capping them (without spilling) is a tuning knob, measured above.
* Which thread owns which results changes how a warp hits shared memory; at this rung the
  4-byte loads and the partly unrolled loop weigh more (see the table). Lesson 05 changes the
  layout of the A tile so the loads can be 16 bytes wide; lesson 06 explains banks.
"""),
]
