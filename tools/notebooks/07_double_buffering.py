from nbtools import SETUP, code, md, src

CELLS = [
md("""
# 07 · Double buffering: load the next slice while computing this one

**Where we are.** Lesson 06's kernel computes 512 FMAs per thread per slice of K, but every
slice starts the same way: all threads load A and B from global memory, *wait* for it, store
it into shared memory, meet at a barrier, compute, and meet at a barrier again. While they
wait, the FP32 units idle (two blocks per SM can cover for each other only partly).
"""),
code(SETUP),
code("""
measure.recorded(["vec_split", "dbuf", "cublas"])
"""),
md("""
## Idea: two shared buffers

Give the block two shared buffers. While the threads compute from buffer 0, the loads of the
*next* slice are already in flight into registers; after the compute they go into buffer 1,
one barrier, and the roles swap. The global-memory latency now hides behind 512 FMAs, and a
slice needs one barrier instead of two. The price: 8 more registers per thread (the staged
float4s of A and B) and twice the shared memory.
"""),
code("""
figures.double_buffer_timeline();
"""),
md("""
## First attempt: lesson 06's kernel with a buffer index

The obvious way: make each shared array one dimension bigger, `sAT[2, BK, BM]`, and put a
buffer index `buf` in front of every shared index; `buf = 1 - buf` after each slice.

**Predict:** faster than lesson 06?
"""),
src("gemm_lessons/sgemm_kernels/dbuf.py"),
code("""
from gemm_lessons.sgemm_kernels import dbuf
gl.check_all(ladder.VARIANTS["dbuf_indexed"], name="dbuf_indexed",
             shapes=[(68, 44, 36, 1.0, 0.0), (36, 72, 20, 1.5, -0.5)])
"""),
code("""
first = measure.compare({"vec_split": ladder.SGEMM["vec_split"],
                         "dbuf_indexed": ladder.VARIANTS["dbuf_indexed"]}, size=(4096, 4096, 4096))
first
"""),
md("""
Slower. Ask the compiler why: the SASS of the indexed version has far fewer `LDS.128` and
a handful of 4-byte `LDS`: with `buf` a runtime value in every index, NVVM could no longer
prove that four neighbouring shared loads form one aligned 16-byte load (lesson 05's merging),
and the extra index arithmetic costs registers.
"""),
code("""
inspect_kernel.compiler_facts({"vec_split": ladder.SGEMM["vec_split"].kernel,
                               "dbuf_indexed": ladder.VARIANTS["dbuf_indexed"].kernel},
                              threads={"vec_split": 256, "dbuf_indexed": 256})
"""),
md("""
## Second attempt: a generator that leaves the compiler nothing to guess

`gemm_lessons/sgemm_kernels/warptile.py` writes the whole kernel from a `TileConfig`
(lesson 08 explores its other fields). For double buffering it does four things differently:

1. **Two separate shared arrays per tile** (`sA0`, `sA1`, `sB0`, `sB1`), and the main loop
   handles *two* slices per trip (compute from 0 while filling 1, barrier, compute from 1
   while filling 0, barrier). Every shared index is a plain expression again.
2. **Explicit 128-bit shared loads.** `load4` (lesson 05's intrinsic) works on shared arrays
   too, so the generator can write out every k-step of a slice (fully unrolled) without
   relying on the compiler to merge loads.
3. **The next slice's loads come first**, the compute from the current buffer follows, then
   the stores into the other buffer: the loads are in flight during all 8 k-steps.
4. **Guards without real branches.** Loads outside A or B must read zeros. How the condition
   is written matters (measured below): `if row_ok & (k < K):` is one condition, which the
   compiler turns into a *predicated* load; `if row_ok and k < K:` is Python's short-circuit
   `and`, two branches, and with the loads in the middle of unrolled code that costs.
"""),
code("""
from dataclasses import dataclass, fields
from gemm_lessons.float4 import load4, store4
from gemm_lessons.sgemm_kernels.warptile import STATIC_SHARED_LIMIT
"""),
src("gemm_lessons/sgemm_kernels/warptile.py"),
md("""
The rung of this lesson keeps lesson 06's arrangement of threads (a warp covers 16 rows x
128 columns as 2 x 16 lanes, 8x8 results per thread) and adds the second buffer:
"""),
code("""
print(dbuf.DBUF_CONFIG.short(), "|", dbuf.DBUF_CONFIG.threads, "threads,",
      dbuf.DBUF_CONFIG.shared_bytes, "bytes of shared memory")
source = generate_source(dbuf.DBUF_CONFIG)
start = source.index("# prologue")
print(f"{len(source.splitlines())} lines of generated kernel; the main loop begins:\\n")
print("\\n".join(source[start:].splitlines()[:40]))
print("    ...")
""", check=True),
code("""
from gemm_lessons.sgemm_kernels import warptile
my_dbuf = make_kernel(dbuf.DBUF_CONFIG)
gl.check_all(functools.partial(warptile.sgemm, kernel=my_dbuf), name="dbuf",
             shapes=[(68, 44, 36, 1.0, 0.0), (36, 72, 20, 1.5, -0.5), (1, 4, 4, 2.0, 1.0)] if gl.SIMULATOR else
                    [(68, 44, 36, 1.0, 0.0), (516, 1028, 260, -1.0, 0.5), (4, 4, 4, 2.0, 1.0)])
"""),
md("""
## Measure: when double buffering helps, and when it does not

Five kernels from the same generator differ in one thing each: one buffer (two barriers per
slice) or two; the guard around the staging loads written three ways. Lesson 06's kernel is
the baseline. (On a GPU this compiles four big kernels: about a minute.)
"""),
code("""
kernels = {name: ladder.SGEMM.get(name) or ladder.VARIANTS[name]
           for name in ["vec_split", "dbuf_one_buffer", "dbuf", "dbuf_short_circuit", "dbuf_select"]}
table = measure.compare(kernels, size=(4096, 4096, 4096))
table
"""),
code("""
for name, base, what in [("dbuf", "dbuf_one_buffer", "two buffers instead of one"),
                         ("dbuf_short_circuit", "dbuf", "`and` (two branches) instead of `&`"),
                         ("dbuf_select", "dbuf", "clamp + select instead of `if ... & ...`"),
                         ("dbuf", "vec_split", "this lesson's rung against lesson 06")]:
    print(f"{what:<45} {table.speedup(name, base):.2f}x  ({table.source})")
"""),
code("""
inspect_kernel.compiler_facts({name: r.kernel for name, r in kernels.items()},
                              threads={name: 256 for name in kernels})
"""),
md("""
What the two tables say, read together:

* **Two buffers** are the big step, against the same kernel with one buffer: the loads are
  hidden, and one barrier per slice instead of two. The register count stays at the cap of
  128, so two blocks still fit on an SM.
* **The short-circuit guard** (`and`) made the compiler spill (local memory, `LDL`/`STL` in
  the SASS): the two branches split the unrolled code into pieces, and the values staged
  across them no longer fitted in 128 registers. Same idea, very different speed.
* **Clamp + select** avoids the condition entirely but costs a few instructions per load
  (`min`, select); the predicated `if ... & ...` was a little faster.
* **The first attempt** lost `LDS.128`; double buffering is worth nothing if it costs the
  wide loads.

The seeds warned that double buffering written naively can lose to register spills: both
failure modes are in this table, each with the compiler's evidence beside it.
"""),
md("""
## Exercise 07-shared-bytes
How many bytes of shared memory does a block need? Write `shared_bytes(BM, BN, BK, pad_a,
stages)` for the generator's layout: per buffer, the transposed A tile (BK rows of
BM + pad_a floats) and the B tile (BK rows of BN floats).
"""),
code("""
def shared_bytes(BM, BN, BK, pad_a, stages):
    ### BEGIN SOLUTION
    return 4 * stages * BK * (BM + pad_a + BN)
    ### END SOLUTION

exercises.check("07-shared-bytes", shared_bytes)
""", check=True),
md("""
## Takeaway

* Double buffering overlaps the next slice's global loads with this slice's compute, and
  halves the barriers. Measured here it is the largest single step since lesson 05.
* It is fragile: a runtime buffer index cost the 16-byte shared loads, and a short-circuit
  `and` around the loads cost spills. Write the code so the compiler has nothing to guess
  (separate buffers, explicit `load4`, one condition), then confirm in the SASS.
* Next (lesson 08): the other fields of `TileConfig`: how the threads of a warp are laid out
  (warp tiles), the depth of a slice, the register cap, and a sweep that picks the best.
"""),
]
