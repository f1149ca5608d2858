"""The ladder: every kernel of the series, in lesson order.

``SGEMM[name](A, B, C, alpha=1.0, beta=0.0)`` and ``TRANSPOSE[name](src, dst)`` take
float32, C-contiguous numba device arrays and choose their own launch configuration.  A rung
computes the right answer for any positive M, N, K, or raises ValueError naming what it
cannot take; a wrong dtype raises TypeError.  ``VARIANTS`` holds the side-by-side versions a
lesson measures (the wrong mapping, another tile size) that are not steps of the ladder.
"""
import functools
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

from dataclasses import replace

from .sgemm_kernels import dbuf, naive, naive_uncoalesced, reg1d, reg2d, smem_tile, vec, warptile
from .transpose import naive as t_naive, smem_tile as t_tile, wide as t_wide


@dataclass(frozen=True)
class Rung:
    name: str
    lesson: str
    title: str
    fn: Callable
    constraint: str = "any positive M, N, K"
    kernel: object = None  # the numba kernel it launches (for the compiler facts in bench)

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def __repr__(self):
        return f"<rung {self.name}: lesson {self.lesson}, {self.title}>"


def _table(*rungs):
    return OrderedDict((r.name, r) for r in rungs)


WIDE = "K and N multiples of 4"

SGEMM = _table(
    Rung("naive", "01", "one thread per element of C", naive.sgemm, kernel=naive.sgemm_naive),
    Rung("smem_tile", "02", "32x32 shared-memory tiles", smem_tile.sgemm, kernel=smem_tile.kernel_for(32)),
    Rung("reg1d", "03", "128x128x8 block, 16 results per thread (1-D register tile)", reg1d.sgemm,
         kernel=reg1d.sgemm_reg1d),
    Rung("reg2d", "04", "128x128x8 block, 8x8 results per thread (outer product), 128 registers",
         reg2d.sgemm, kernel=reg2d.sgemm_reg2d),
    Rung("vec", "05", "transposed A tile, 128-bit loads, unrolled at compile time", vec.sgemm, WIDE,
         kernel=vec.sgemm_vec),
    Rung("vec_split", "06", "vec with each thread's 8x8 split into four 4x4 (conflict-free LDS.128)",
         functools.partial(vec.sgemm, kernel=vec.sgemm_vec_split), WIDE, kernel=vec.sgemm_vec_split),
    Rung("dbuf", "07", "two shared buffers: the next slice loads during the compute, one barrier per slice",
         dbuf.sgemm, WIDE, kernel=warptile.kernel_for(dbuf.DBUF_CONFIG)),
    Rung("warptile", "08", "warp tiles of 4 x 8 lanes, configuration chosen by a sweep",
         warptile.sgemm, WIDE, kernel=warptile.kernel_for(warptile.TileConfig())),
)

VARIANTS = _table(
    Rung("naive_uncoalesced", "01", "threadIdx.x along rows of C (uncoalesced)", naive_uncoalesced.sgemm,
         kernel=naive_uncoalesced.sgemm_naive_uncoalesced),
    Rung("smem_tile16", "02", "16x16 shared-memory tiles", smem_tile.sgemm_tile16, kernel=smem_tile.kernel_for(16)),
    Rung("reg1d_64x64", "03", "64x64x8 block, 8 results per thread",
         functools.partial(reg1d.sgemm, kernel=reg1d.kernel_for(64, 64, 8, 8)), kernel=reg1d.kernel_for(64, 64, 8, 8)),
    Rung("reg2d_uncapped", "04", "reg2d without the register cap",
         functools.partial(reg2d.sgemm, kernel=reg2d.kernel_for(MAX_REGISTERS=None)),
         kernel=reg2d.kernel_for(MAX_REGISTERS=None)),
    Rung("reg2d_contiguous", "04", "reg2d with each thread's 8x8 results side by side",
         functools.partial(reg2d.sgemm, kernel=reg2d.kernel_for(SPREAD=False)), kernel=reg2d.kernel_for(SPREAD=False)),
    Rung("vec_unrolled_k", "05", "vec with the k-loop written out as well",
         functools.partial(vec.sgemm, kernel=vec.sgemm_vec_unrolled_k), WIDE, kernel=vec.sgemm_vec_unrolled_k),
    Rung("dbuf_indexed", "07", "double buffering as lesson 06 + a runtime buffer index (the first attempt)",
         dbuf.sgemm_indexed, WIDE, kernel=dbuf.sgemm_dbuf_indexed),
    Rung("dbuf_one_buffer", "07", "dbuf with one shared buffer (two barriers per slice, no prefetch)",
         functools.partial(warptile.sgemm, config=replace(dbuf.DBUF_CONFIG, stages=1)), WIDE,
         kernel=warptile.kernel_for(replace(dbuf.DBUF_CONFIG, stages=1))),
    Rung("dbuf_short_circuit", "07", "dbuf with `if row_ok and k < K:` around each global load (two branches)",
         functools.partial(warptile.sgemm, config=replace(dbuf.DBUF_CONFIG, guard="and")), WIDE,
         kernel=warptile.kernel_for(replace(dbuf.DBUF_CONFIG, guard="and"))),
    Rung("dbuf_select", "07", "dbuf with clamped loads and a select instead of an if",
         functools.partial(warptile.sgemm, config=replace(dbuf.DBUF_CONFIG, guard="select")), WIDE,
         kernel=warptile.kernel_for(replace(dbuf.DBUF_CONFIG, guard="select"))),
)

TRANSPOSE = _table(
    Rung("naive", "09", "coalesced reads, strided writes", t_naive.transpose),
    Rung("smem_tile", "09", "32x32 shared tile, 32x32 threads (column reads: 32-way conflicts)",
         t_tile.transpose_unpadded),
    Rung("smem_padded", "09", "the [32][33] padded tile", t_tile.transpose_padded),
    Rung("smem_padded_32x8", "09", "padded tile, 32x8 threads, 4 rows each", t_tile.transpose_padded_32x8),
    Rung("wide", "09", "64x64 padded tile, 16-byte loads and stores", t_wide.transpose,
         "rows and columns multiples of 4"),
)
