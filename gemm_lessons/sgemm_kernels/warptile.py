"""Lessons 07 and 08: double buffering, warp tiles, and a generator for a family of kernels.

One template, many kernels: a ``TileConfig`` names the block tile (BM x BN, BK deep), the
warp tile (WM x WN: the part of C one warp of 32 threads computes), the thread tile (TM x TN
results per thread, in 4x4 pieces), the number of shared-memory buffers (stages) and a
register cap.  ``make_kernel(config)`` writes the kernel's source with every k-step spelled
out and compiles it; ``TileConfig.validate`` rejects a configuration that cannot work before
anything is compiled or launched.

What lessons 07 and 08 add to lesson 06's kernel:
  * stages=2 (lesson 07): the next slice of A and B is loaded from global memory into
    registers while the threads compute from one shared buffer, then stored into the other
    buffer; one barrier per slice instead of two.  The two buffers are two *separate* shared
    arrays and the main loop handles two slices per trip, so every shared index is a plain
    expression (a runtime buffer index cost registers and the LDS.128, see dbuf.py).
  * warp tiles (lesson 08): lane l of a warp owns 4x4 pieces at (l // LN, l % LN) of an
    LM x LN grid of lanes, repeated TM/4 x TN/4 times across the warp tile.  For this kernel
    the layout turned out not to matter: with 4 x 8 lanes or lesson 06's 2 x 16, a quarter
    warp of an LDS.128 reads 8 different 16-byte pieces, conflict-free (tracer and sweep agree).
  * loads outside A or B are avoided by one predicated condition per float4 (``guard``; a
    short-circuit ``and`` cost spills, a clamp + select cost instructions: lesson 07).
  * every shared-memory read is an explicit 128-bit load (``load4`` works on shared arrays
    too), so fully unrolled k-steps keep their LDS.128 (NVVM's merging had lost them, lesson 05).
  * the transposed A tile gets ``pad_a`` extra floats per row: the four scalar stores that
    transpose a float4 of A then avoid a 2-way bank conflict (lesson 06's padding; measured
    in 08: no change in speed).
"""
from dataclasses import dataclass, fields

import numpy as np
from numba import cuda, float32

from ..arrays import sgemm_shapes
from ..jit import jit
from ..float4 import load4, require_wide_alignment, store4

STATIC_SHARED_LIMIT = 48 * 1024  # bytes of statically sized shared memory per block


# lesson-cell: begin
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

    @property
    def lanes(self):  # (LM, LN): how the 32 lanes of a warp tile the warp tile
        return self.WM // self.TM, self.WN // self.TN

    @property
    def threads(self):
        return (self.BM // self.WM) * (self.BN // self.WN) * 32

    @property
    def shared_bytes(self):
        return 4 * self.stages * self.BK * (self.BM + self.pad_a + self.BN)

    def validate(self):
        """ValueError naming the first rule the configuration breaks (checked before compiling)."""
        rules = [
            (all(isinstance(getattr(self, f.name), int) and getattr(self, f.name) > 0
                 for f in fields(self) if f.name not in ("pad_a", "max_registers", "spread", "guard")),
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
        ]
        for ok, message in rules:
            if not ok:
                raise ValueError(f"invalid TileConfig {self.short()}: {message}")
        return self

    def short(self):
        return (f"{self.BM}x{self.BN}x{self.BK} warp {self.WM}x{self.WN} thread {self.TM}x{self.TN} "
                f"stages {self.stages} pad {self.pad_a} regs {self.max_registers}"
                + (" spread" if self.spread and self.stages == 2 else "")
                + ("" if self.guard == "if" else f" guard {self.guard}"))


TEMPLATE = '''
@jit(max_registers=MAX_REGISTERS)
def sgemm_warptile(A, B, C, alpha, beta):
{shared}
    tid = cuda.threadIdx.x
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    M, K = A.shape
    N = B.shape[1]
    warp, lane = tid // 32, tid % 32
    a_base = (warp // (BN // WN)) * WM + (lane // LN) * 4   # this thread's first row in the tile
    b_base = (warp % (BN // WN)) * WN + (lane % LN) * 4     # ... and first column
    a_r = tid // (BK // 4)          # the float4s of the A tile this thread stages:
    a_c = (tid % (BK // 4)) * 4     #   rows a_r + i * A_STEP, columns a_c..a_c+3
    b_r = tid // (BN // 4)          # ... and of the B tile: rows b_r + j * B_STEP
    b_c = (tid % (BN // 4)) * 4
{row_ok}
{zero}
{main_loop}
{store}
'''


def _units(cfg):
    """The float4s a thread stages per slice: ("A", i) for i < A_LOADS, then ("B", j)."""
    n_a = cfg.BM * cfg.BK // 4 // cfg.threads
    n_b = cfg.BK * cfg.BN // 4 // cfg.threads
    return [("A", i) for i in range(n_a)] + [("B", j) for j in range(n_b)]


GUARDS = ("if", "select", "and")


def _load(unit, k0, guard="if"):
    """Global -> registers for one float4 of the slice starting at k0, zeros outside A or B.

    guard="if": ``if row_ok & (k < K): load`` -- one condition, so ptxas can predicate the
    load instead of branching (the fastest on an H100, lesson 08's sweep).
    guard="select": the address is clamped into the matrix and the value replaced by 0
    outside it: no condition around the load at all.
    guard="and": ``if row_ok and k < K:`` -- Python's short-circuit ``and`` is two branches."""
    kind, i = unit
    if kind == "A":
        v, row, col, row_ok = f"x_{i}", f"row0 + a_r + {i} * A_STEP", f"{k0} + a_c", f"a_ok_{i}"
        clamped = f"load4(A, a_row_{i}, min({col}, K - 4))"
        in_k = f"{col} < K"
    else:
        v, row, col, row_ok = f"y_{i}", f"{k0} + b_r + {i} * B_STEP", "col0 + b_c", "b_ok"
        clamped = f"load4(B, min({row}, K - 1), b_col)"
        in_k = f"{row} < K"
    if guard == "select":
        return [f"ok = {row_ok} & ({in_k})", f"{v}_0, {v}_1, {v}_2, {v}_3 = {clamped}"] + \
               [f"{v}_{d} = {v}_{d} if ok else np.float32(0.0)" for d in range(4)]
    cond = f"{row_ok} & ({in_k})" if guard == "if" else f"{row_ok} and {in_k}"
    return [f"if {cond}:", f"    {v}_0, {v}_1, {v}_2, {v}_3 = load4({kind}, {row}, {col})", "else:",
            f"    {v}_0 = {v}_1 = {v}_2 = {v}_3 = np.float32(0.0)"]


def _store(unit, buf):
    """Registers -> shared buffer ``buf``: A transposed (four scalar stores), B as one float4."""
    kind, i = unit
    if kind == "A":
        return [f"sA{buf}[a_c + {d}, a_r + {i} * A_STEP] = x_{i}_{d}" for d in range(4)]
    return [f"store4(sB{buf}, b_r + {i} * B_STEP, b_c, y_{i}_0, y_{i}_1, y_{i}_2, y_{i}_3)"]


def _compute(cfg, buf, before=None):
    """BK k-steps from shared buffer ``buf``, written out: TM/4 + TN/4 LDS.128 and TM*TN FFMA
    each.  ``before[k]``: lines to put in front of k-step k (k == BK: after the last one)."""
    before = before or {}
    LM, LN = cfg.lanes
    out = []
    for k in range(cfg.BK):
        out += before.get(k, [])
        for p in range(cfg.TM // 4):
            a = ", ".join(f"a_{4 * p + d}" for d in range(4))
            out.append(f"{a} = load4(sA{buf}, {k}, a_base + {p * LM * 4})")
        for q in range(cfg.TN // 4):
            b = ", ".join(f"b_{4 * q + e}" for e in range(4))
            out.append(f"{b} = load4(sB{buf}, {k}, b_base + {q * LN * 4})")
        out += [f"c_{i}_{j} += a_{i} * b_{j}" for i in range(cfg.TM) for j in range(cfg.TN)]
    return out + before.get(cfg.BK, [])


def _compute_and_stage(cfg, buf, k0, into):
    """Compute from ``buf`` while the slice at ``k0`` travels global -> registers -> ``into``.
    Staged all at once (loads before the first k-step, stores after the last), or, with
    cfg.spread, float4 by float4 through the slice, each store half a slice after its load,
    so fewer registers hold staged values at any time."""
    units = _units(cfg)
    before = {}
    for u, unit in enumerate(units):
        at = (u * cfg.BK) // len(units) if cfg.spread else 0
        store_at = min(at + cfg.BK // 2, cfg.BK) if cfg.spread else cfg.BK
        before.setdefault(at, []).extend(_load(unit, k0, cfg.guard))
        before.setdefault(store_at, []).extend(_store(unit, into))
    return _compute(cfg, buf, before)


def _indent(lines, n):
    return "\n".join(" " * n + line for line in lines)


def generate_source(cfg):
    cfg.validate()
    LM, LN = cfg.lanes
    bufs = range(cfg.stages)
    shared = [f"sA{s} = cuda.shared.array((BK, A_ROW), float32)  # A tile, transposed" for s in bufs]
    shared += [f"sB{s} = cuda.shared.array((BK, BN), float32)" for s in bufs]
    row_ok = []
    for kind, i in _units(cfg):
        if kind == "A":  # rows outside A are read clamped to the last row, then zeroed
            row_ok += [f"a_ok_{i} = row0 + a_r + {i} * A_STEP < M",
                       f"a_row_{i} = min(row0 + a_r + {i} * A_STEP, M - 1)"]
    row_ok += ["b_ok = col0 + b_c < N  # N is a multiple of 4: a float4 is wholly in or out",
               "b_col = min(col0 + b_c, N - 4)"]
    zero = [f"c_{i}_{j} = np.float32(0.0)" for i in range(cfg.TM) for j in range(cfg.TN)]
    stage_all = [line for unit in _units(cfg) for line in _load(unit, "k0", cfg.guard)] + \
        [line for unit in _units(cfg) for line in _store(unit, 0)]
    if cfg.stages == 1:
        loop = (["for k0 in range(0, K, BK):"]
                + _indent(stage_all + ["cuda.syncthreads()"] + _compute(cfg, 0) + ["cuda.syncthreads()"],
                          4).split("\n"))
    else:
        loop = (["# prologue: slice 0 into buffer 0", "k0 = 0"] + stage_all
                + ["cuda.syncthreads()", "for k0 in range(0, K, 2 * BK):"]
                + _indent(["# compute from buffer 0 while the next slice goes into buffer 1"]
                          + _compute_and_stage(cfg, 0, "k0 + BK", 1)
                          + ["cuda.syncthreads()  # buffer 1 full; everyone is done with buffer 0",
                             "if k0 + BK >= K:", "    break"]
                          + _compute_and_stage(cfg, 1, "k0 + 2 * BK", 0)
                          + ["cuda.syncthreads()"], 4).split("\n"))
    store = []
    for p in range(cfg.TM // 4):
        for d in range(4):
            i = 4 * p + d
            row = f"row0 + a_base + {p * LM * 4 + d}"
            store.append(f"if {row} < M:")
            for q in range(cfg.TN // 4):
                col = f"col0 + b_base + {q * LN * 4}"
                c = [f"c_{i}_{4 * q + e}" for e in range(4)]
                store += [f"    if {col} < N:",
                          "        if beta == 0:",
                          f"            store4(C, {row}, {col}, " + ", ".join(f"alpha * {v}" for v in c) + ")",
                          "        else:",
                          f"            o0, o1, o2, o3 = load4(C, {row}, {col})",
                          f"            store4(C, {row}, {col}, "
                          + ", ".join(f"alpha * {v} + beta * o{e}" for e, v in enumerate(c)) + ")"]
    return TEMPLATE.format(shared=_indent(shared, 4), row_ok=_indent(row_ok, 4), zero=_indent(zero, 4),
                           main_loop=_indent(loop, 4), store=_indent(store, 4))


def make_kernel(cfg):
    """Compile the kernel for ``cfg`` (validated first); the result remembers its config."""
    LM, LN = cfg.lanes
    constants = dict(BM=cfg.BM, BN=cfg.BN, BK=cfg.BK, WM=cfg.WM, WN=cfg.WN, LN=LN,
                     A_ROW=cfg.BM + cfg.pad_a,  # a shared array's shape must be a constant
                     A_STEP=cfg.threads // (cfg.BK // 4), B_STEP=cfg.threads // (cfg.BN // 4),
                     MAX_REGISTERS=cfg.max_registers)
    namespace = dict(cuda=cuda, float32=float32, np=np, jit=jit, load4=load4, store4=store4, **constants)
    exec(compile(generate_source(cfg), f"<sgemm_warptile {cfg.short()}>", "exec"), namespace)
    kernel = namespace["sgemm_warptile"]
    kernel.config = cfg
    return kernel
# lesson-cell: end


_kernels = {}


def kernel_for(cfg):
    """One compiled kernel per configuration (compiling takes seconds)."""
    if cfg not in _kernels:
        _kernels[cfg] = make_kernel(cfg)
    return _kernels[cfg]


def sgemm(A, B, C, alpha=1.0, beta=0.0, config=TileConfig(), kernel=None):
    """Launch the kernel for ``config`` (or ``kernel``, one made by make_kernel, with its own config)."""
    M, N, K = sgemm_shapes(A, B, C)
    require_wide_alignment(("A", A), ("B", B), ("C", C))
    if kernel is None:
        kernel = kernel_for(config)
    config = kernel.config
    grid = ((N + config.BN - 1) // config.BN, (M + config.BM - 1) // config.BM)
    kernel[grid, config.threads](A, B, C, np.float32(alpha), np.float32(beta))

