"""The ladder: every kernel of the series, in lesson order, each described once by a Rung.

``SGEMM[name](A, B, C, alpha=1.0, beta=0.0)`` and ``TRANSPOSE[name](src, dst)`` take
float32, C-contiguous numba device arrays and choose their own launch configuration.  A rung
computes the right answer for any positive M, N, K, or raises ValueError naming what it
cannot take; a wrong dtype raises TypeError.  ``VARIANTS`` holds the side-by-side versions a
lesson measures (the wrong mapping, another tile size) that are not steps of the ladder.

A Rung is the one description of a kernel that the benchmark, the sanitizer script, the
convenience ``gemm_lessons.sgemm`` and the tests use: its numba kernel, the launcher that
sizes the grid for it, and whether it moves 16 bytes at a time (``wide``: then K and N, or a
transpose's rows and columns, must be multiples of 4).
"""
import functools
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Callable

from gemm_lessons.kernels import device_copy
from gemm_lessons.kernels.sgemm import dbuf_first_attempt, naive, naive_uncoalesced, reg1d, reg2d, reg2d_unrolled, smem_tile, transposed_a, vec, warptile, wide_loads
from gemm_lessons.kernels.transpose import naive as t_naive, smem_tile as t_tile, wide as t_wide


@dataclass(frozen=True)
class Rung:
    name: str
    lesson: str
    title: str
    launch: Callable       # launch(*arrays, kernel=...): checks the operands, sizes the grid, launches
    kernel: object         # the numba kernel it launches
    wide: bool = False     # 16-byte loads and stores: K and N (rows and columns) multiples of 4
    variant: bool = False  # a version a lesson compares against, not a step of the ladder

    operation: str = "sgemm"  # or "transpose": what the launcher computes

    @property
    def constraint(self):
        """The shapes it takes, in words (the ValueError for other shapes says the same)."""
        if not self.wide:
            return "any positive M, N, K" if self.operation == "sgemm" else "any shape"
        return "K and N multiples of 4" if self.operation == "sgemm" else "rows and columns multiples of 4"

    def __call__(self, *arrays, **scalars):
        return self.launch(*arrays, **scalars, kernel=self.kernel)

    def __repr__(self):
        return f"<rung {self.name}: lesson {self.lesson}, {self.title}>"


def _table(*rungs):
    return OrderedDict((r.name, r) for r in rungs)


def _warptile(name, lesson, title, config, variant=False):
    return Rung(name, lesson, title, warptile.sgemm, warptile.kernel_for(config), wide=True, variant=variant)


SGEMM = _table(
    Rung("naive", "01", "one thread per element of C", naive.sgemm, naive.sgemm_naive),
    Rung("smem_tile", "02", "32x32 shared-memory tiles", smem_tile.sgemm, smem_tile.kernel_for(32)),
    Rung("reg1d", "03", "128x128x8 block, 16 results per thread (1-D register tile)", reg1d.sgemm,
         reg1d.sgemm_reg1d),
    Rung("reg2d", "04", "128x128x8 block, 8x8 results per thread (outer product), 128 registers",
         reg2d.sgemm, reg2d.sgemm_reg2d),
    Rung("vec", "05", "transposed A tile, 128-bit loads, unrolled at compile time", vec.sgemm, vec.sgemm_vec, wide=True),
    Rung("vec_split", "06", "vec with each thread's 8x8 split into four 4x4 (conflict-free LDS.128)",
         vec.sgemm, vec.sgemm_vec_split, wide=True),
    _warptile("dbuf", "07", "two shared buffers: the next slice loads during the compute, one barrier per slice",
              dbuf_first_attempt.DBUF_CONFIG),
    _warptile("warptile", "08", "warp tiles of 4 x 8 lanes, configuration chosen by a sweep", warptile.TileConfig()),
)

VARIANTS = _table(
    Rung("naive_uncoalesced", "01", "threadIdx.x along rows of C (uncoalesced)", naive_uncoalesced.sgemm,
         naive_uncoalesced.sgemm_naive_uncoalesced, variant=True),
    Rung("smem_tile16", "02", "16x16 shared-memory tiles", functools.partial(smem_tile.sgemm, tile=16),
         smem_tile.kernel_for(16), variant=True),
    Rung("reg1d_64x64", "03", "64x64x8 block, 8 results per thread", reg1d.sgemm, reg1d.kernel_for(64, 64, 8, 8),
         variant=True),
    Rung("reg2d_uncapped", "04", "reg2d without the register cap", reg2d.sgemm,
         reg2d.kernel_for(MAX_REGISTERS=None), variant=True),
    Rung("reg2d_contiguous", "04", "reg2d with each thread's 8x8 results side by side", reg2d.sgemm,
         reg2d.kernel_for(SPREAD=False), variant=True),
    # lesson 05 in steps, from reg2d_contiguous to vec, one change each (kernels/sgemm/reg2d_unrolled.py, ...)
    Rung("reg2d_unrolled", "05", "reg2d_contiguous with its loops written out at compile time (static_range)",
         reg2d_unrolled.sgemm, reg2d_unrolled.sgemm_reg2d_unrolled, variant=True),
    Rung("transposed_a", "05", "reg2d_unrolled with the A tile stored transposed, both tiles read by LDS.128", transposed_a.sgemm,
         transposed_a.sgemm_transposed_a, variant=True),
    Rung("wide_loads", "05", "transposed_a with 16-byte global loads (LDG.128); vec without 16-byte stores",
         wide_loads.sgemm, wide_loads.sgemm_wide_loads, wide=True, variant=True),
    Rung("vec_unrolled_k", "05", "vec with the k-loop written out as well", vec.sgemm, vec.sgemm_vec_unrolled_k,
         wide=True, variant=True),
    Rung("dbuf_indexed", "07", "double buffering as lesson 06 + a runtime buffer index (the first attempt)",
         dbuf_first_attempt.sgemm_indexed, dbuf_first_attempt.sgemm_dbuf_indexed, wide=True, variant=True),
    _warptile("dbuf_one_buffer", "07", "dbuf with one shared buffer (two barriers per slice, no prefetch)",
              replace(dbuf_first_attempt.DBUF_CONFIG, stages=1), variant=True),
    _warptile("dbuf_short_circuit", "07", "dbuf with `if row_ok and k < K:` around each global load (two branches)",
              replace(dbuf_first_attempt.DBUF_CONFIG, guard="and"), variant=True),
    _warptile("dbuf_select", "07", "dbuf with clamped loads and a select instead of an if",
              replace(dbuf_first_attempt.DBUF_CONFIG, guard="select"), variant=True),
)

def _transpose(name, title, launch, kernel, wide=False):
    return Rung(name, "09", title, launch, kernel, wide=wide, operation="transpose")


TRANSPOSE = _table(
    _transpose("naive", "coalesced reads, strided writes", t_naive.transpose, t_naive.transpose_naive),
    _transpose("smem_tile", "32x32 shared tile, 32x32 threads (column reads: 32-way conflicts)",
               t_tile.transpose, t_tile.kernel_for()),
    _transpose("smem_padded", "the [32][33] padded tile", t_tile.transpose, t_tile.kernel_for(PAD=1)),
    _transpose("smem_padded_32x8", "padded tile, 32x8 threads, 4 rows each", t_tile.transpose,
               t_tile.kernel_for(ROWS=8, PAD=1)),
    _transpose("wide", "64x64 padded tile, 16-byte loads and stores", t_wide.transpose, t_wide.kernel_for(),
               wide=True),
)


def compiled_kernels():
    """name -> numba kernel of every SGEMM rung and variant, every transpose ("transpose_" +
    name) and the float4 copy: what the benchmark reports compiler facts for."""
    kernels = {name: r.kernel for name, r in {**SGEMM, **VARIANTS}.items()}
    kernels.update({f"transpose_{name}": r.kernel for name, r in TRANSPOSE.items()})
    kernels["copy_float4"] = device_copy.copy_float4
    return kernels
