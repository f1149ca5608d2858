from nbtools import SETUP, code, md, src

CELLS = [
md("""
# 09 · Matrix transpose: the memory-bound twin

SGEMM lives on the right of the roofline: it does hundreds of FLOP per byte, and the lessons
were about feeding the FP32 units. A transpose does **no arithmetic at all**: every element is
read once and written once. Its only measure is bandwidth (bytes read + written per second),
its ceiling a plain copy, and its yardstick cuBLAS `sgeam`. The same tools apply: coalescing
(lesson 01), shared-memory tiles (02), bank conflicts and padding (06), wide accesses (05).
"""),
code(SETUP),
code("""
from gemm_lessons import banks
from gemm_lessons.transpose import naive as t_naive, smem_tile as t_tile, wide as t_wide
measure.compare_transpose({}, shape=(8192, 8192))  # the ceilings: copy and cuBLAS
"""),
md("""
## Naive: one of the two sides is always strided

`dst[c, r] = src[r, c]`. With `threadIdx.x` along the columns of `src`, a warp reads 128
contiguous bytes but writes 32 floats a whole row of `dst` apart: 32 sectors for 128 useful
bytes. Swapping the mapping only moves the problem to the reads.
"""),
src("gemm_lessons/transpose/naive.py"),
code("""
from gemm_lessons.problems import check_transpose_all
check_transpose_all(functools.partial(t_naive.transpose, kernel=transpose_naive), name="naive")
"""),
md("""
## Through a shared-memory tile

A block reads a 32x32 tile with coalesced row reads into shared memory, then writes it out
with coalesced row writes to `dst`, reading the tile **by columns**. Global memory is now
happy both ways; shared memory is not: a column of a `[32][32]` float tile lies in one bank.
With one float of padding per row (`[32][33]`), row l starts in bank l and the column read is
conflict-free. The tracer shows both, on the kernel itself.
"""),
src("gemm_lessons/transpose/smem_tile.py"),
code("""
for pad in (0, 1):
    check = check_transpose_all(functools.partial(t_tile.transpose, kernel=make_transpose_tile(32, 32, pad)),
                                name=f"tile pad={pad}")
    print(check)
""", check=True),
code("""
unpadded = banks.trace_rung("transpose:smem_tile", (32, 32), merge=False)
padded = banks.trace_rung("transpose:smem_padded", (32, 32), merge=False)
for name, t in [("tile[32][32]", unpadded), ("tile[32][33]", padded)]:
    ld = t.totals("ld")
    print(f"{name}: {ld['instructions']} column reads, {ld['wavefronts']} wavefronts, "
          f"worst {t.first('ld').cost.degree}-way")
""", check=True),
code("""
import matplotlib.pyplot as plt
fig, ax = plt.subplots(2, 1, figsize=(12, 7))
banks.bank_map(unpadded.first("ld").addresses, 4, ax=ax[0], title="column read of tile[32][32]", rows=8)
banks.bank_map(padded.first("ld").addresses, 4, ax=ax[1], title="column read of tile[32][33]", rows=8)
plt.tight_layout()
"""),
md("""
## More work per thread, wider accesses

* **32x8 threads** for a 32x32 tile: each thread moves 4 elements. Fewer, fuller threads; more
  independent loads in flight per thread before the barrier.
* **Wide**: a 64x64 tile moved by 16x16 threads, each reading four float4 along `src` rows
  (`LDG.128`) and writing four float4 along `dst` rows (`STG.128`), gathering each float4 from
  a column of the padded tile. Rows must start on 16-byte boundaries, so rows and columns must
  be multiples of 4 (ValueError otherwise). The gathering reads hit 2-way conflicts (a thread
  reads 4 consecutive tile rows; 16 threads span 64 rows = 2 rows per bank): the ncu table in
  lesson 06 confirms it, and the measurement decides whether it matters.
"""),
code("""
from gemm_lessons.float4 import load4, store4  # lesson 05's 16-byte load/store intrinsics
"""),
src("gemm_lessons/transpose/wide.py"),
code("""
check_transpose_all(functools.partial(t_wide.transpose, kernel=make_transpose_wide()), name="wide",
                    shapes=[(68, 44), (128, 132), (4, 8), (100, 4)])
"""),
md("""
## Measure

All rungs, cuBLAS `sgeam` and the float4 copy, on the same 8192x8192 matrix (256 MiB read and
256 MiB written per call), in one run. Short kernels are timed in batches of
back-to-back calls so that Python's launch overhead is not counted.
"""),
code("""
table = measure.compare_transpose(dict(ladder.TRANSPOSE), shape=(8192, 8192))
table
"""),
code("""
best = max(ladder.TRANSPOSE, key=table.gbs)
print(f"best rung: {best}, {table.gbs(best):,.0f} GB/s = {100 * table.gbs(best) / table.gbs('cublas_sgeam'):.0f}% "
      f"of cuBLAS sgeam and {100 * table.gbs(best) / table.gbs('copy_float4'):.0f}% of the copy ({table.source})")
"""),
md("""
## Exercise 09-bytes
How many bytes does transposing a 8192 x 4096 float32 matrix move (read + written)?
"""),
code("""
### BEGIN SOLUTION: answer = None
answer = counting.transpose_bytes(8192, 4096)
### END SOLUTION
exercises.check("09-bytes", answer)
""", check=True),
md("""
## Takeaway

* Memory-bound kernels are judged in bytes per second against a copy: no FLOPS to hide behind.
* A shared-memory tile makes both sides coalesced; padding makes the column read conflict-free;
  more elements per thread and 16-byte accesses keep more bytes in flight.
* The tracer, the model and the profiler agree on the bank conflicts (lesson 06).
"""),
]
