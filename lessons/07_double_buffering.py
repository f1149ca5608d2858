# %% [markdown]
# # 07 · Double buffering: load the next slice while computing this one
#
# **Where we are.** Lesson 06's kernel computes 512 FMAs per thread per slice of K, but every
# slice starts the same way: all threads load A and B from global memory, *wait* for it, store
# it into shared memory, meet at a barrier, compute, and meet at a barrier again. While they
# wait, the FP32 units idle (two blocks per SM can cover for each other only partly).

# %%
import gemm_lessons as gl  # first: it chooses the GPU, or numba's CUDA simulator when there is none
from gemm_lessons import counting, exercises, figures, inspect_kernel, ladder, measure, plots, results
from gemm_lessons.jit import jit  # cuda.jit that also takes GPU-only options (max_registers) on the simulator
import functools
import numpy as np
from numba import cuda, float32
# %matplotlib inline
print(gl.banner())

# %%
measure.recorded(["vec_split", "dbuf", "cublas"])

# %% [markdown]
# ## Idea: two shared buffers
#
# Give the block two shared buffers. While the threads compute from buffer 0, the loads of the
# *next* slice are already in flight into registers; after the compute they go into buffer 1,
# one barrier, and the roles swap. The global-memory latency now hides behind 512 FMAs, and a
# slice needs one barrier instead of two. The price: 8 more registers per thread (the staged
# float4s of A and B) and twice the shared memory.

# %%
figures.double_buffer_timeline();

# %% [markdown]
# ## First attempt: lesson 06's kernel with a buffer index
#
# The obvious way: make each shared array one dimension bigger, `sAT[2, BK, BM]`, and put a
# buffer index `buf` in front of every shared index; `buf = 1 - buf` after each slice.
#
# **Predict:** faster than lesson 06?

# %%
# source: gemm_lessons/sgemm_kernels/dbuf.py  (the package runs this same code; a test keeps the two identical)
DBUF_TEMPLATE = '''
@cuda.jit
def sgemm_dbuf_indexed(A, B, C, alpha, beta):
    sAT = cuda.shared.array((2, BK, BM), float32)  # two buffers of the transposed A tile
    sB = cuda.shared.array((2, BK, BN), float32)
    tid = cuda.threadIdx.x
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    M, K = A.shape
    N = B.shape[1]
    t_row = (tid // (BN // TN)) * {ROW_SPAN}
    t_col = (tid % (BN // TN)) * {COL_SPAN}
    a_r = tid // (BK // 4)
    a_c = (tid % (BK // 4)) * 4
    b_r = tid // (BN // 4)
    b_c = (tid % (BN // 4)) * 4
{zero}
    # prologue: slice 0 into buffer 0
    x0 = x1 = x2 = x3 = y0 = y1 = y2 = y3 = np.float32(0.0)
    if row0 + a_r < M and a_c < K:
        x0, x1, x2, x3 = load4(A, row0 + a_r, a_c)
    if b_r < K and col0 + b_c < N:
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
        if row0 + a_r < M and nxt + a_c < K:
            x0, x1, x2, x3 = load4(A, row0 + a_r, nxt + a_c)
        if nxt + b_r < K and col0 + b_c < N:
            y0, y1, y2, y3 = load4(B, nxt + b_r, col0 + b_c)
{inner}
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
{store}
'''


def make_sgemm_dbuf_indexed(split=True):
    zero, inner, store, spans = source_parts(split=split, buffer_index="buf, ")
    source = DBUF_TEMPLATE.format(zero=zero, inner=inner, store=store, **spans)
    namespace = dict(cuda=cuda, float32=float32, np=np, load4=load4, store4=store4,
                     BM=BM, BN=BN, BK=BK, TM=TM, TN=TN)
    exec(compile(source, "<sgemm_dbuf_indexed generated>", "exec"), namespace)
    return namespace["sgemm_dbuf_indexed"]


# %%
from gemm_lessons.sgemm_kernels import dbuf
gl.check_all(ladder.VARIANTS["dbuf_indexed"], name="dbuf_indexed",
             shapes=[(68, 44, 36, 1.0, 0.0), (36, 72, 20, 1.5, -0.5)])

# %%
first = measure.compare({"vec_split": ladder.SGEMM["vec_split"],
                         "dbuf_indexed": ladder.VARIANTS["dbuf_indexed"]}, size=(4096, 4096, 4096))
first

# %% [markdown]
# Slower. Ask the compiler why: the SASS of the indexed version has far fewer `LDS.128` and
# a handful of 4-byte `LDS`: with `buf` a runtime value in every index, NVVM could no longer
# prove that four neighbouring shared loads form one aligned 16-byte load (lesson 05's merging),
# and the extra index arithmetic costs registers.

# %%
inspect_kernel.compiler_facts({"vec_split": ladder.SGEMM["vec_split"].kernel,
                               "dbuf_indexed": ladder.VARIANTS["dbuf_indexed"].kernel},
                              threads={"vec_split": 256, "dbuf_indexed": 256})

# %% [markdown]
# ## Second attempt: a generator that leaves the compiler nothing to guess
#
# `gemm_lessons/sgemm_kernels/warptile.py` writes the whole kernel from a `TileConfig`
# (lesson 08 explores its other fields). For double buffering it does four things differently:
#
# 1. **Two separate shared arrays per tile** (`sA0`, `sA1`, `sB0`, `sB1`), and the main loop
#    handles *two* slices per trip (compute from 0 while filling 1, barrier, compute from 1
#    while filling 0, barrier). Every shared index is a plain expression again.
# 2. **Explicit 128-bit shared loads.** `load4` (lesson 05's intrinsic) works on shared arrays
#    too, so the generator can write out every k-step of a slice (fully unrolled) without
#    relying on the compiler to merge loads.
# 3. **The next slice's loads come first**, the compute from the current buffer follows, then
#    the stores into the other buffer: the loads are in flight during all 8 k-steps.
# 4. **Guards without real branches.** Loads outside A or B must read zeros. How the condition
#    is written matters (measured below): `if row_ok & (k < K):` is one condition, which the
#    compiler turns into a *predicated* load; `if row_ok and k < K:` is Python's short-circuit
#    `and`, two branches, and with the loads in the middle of unrolled code that costs.

# %%
from dataclasses import dataclass, fields
from gemm_lessons.float4 import load4, store4
from gemm_lessons.sgemm_kernels.warptile import STATIC_SHARED_LIMIT


# %%
# source: gemm_lessons/sgemm_kernels/warptile.py  (the package runs this same code; a test keeps the two identical)
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


# %% [markdown]
# The rung of this lesson keeps lesson 06's arrangement of threads (a warp covers 16 rows x
# 128 columns as 2 x 16 lanes, 8x8 results per thread) and adds the second buffer:

# %%
# NBVAL_CHECK_OUTPUT
print(dbuf.DBUF_CONFIG.short(), "|", dbuf.DBUF_CONFIG.threads, "threads,",
      dbuf.DBUF_CONFIG.shared_bytes, "bytes of shared memory")
source = generate_source(dbuf.DBUF_CONFIG)
start = source.index("# prologue")
print(f"{len(source.splitlines())} lines of generated kernel; the main loop begins:\n")
print("\n".join(source[start:].splitlines()[:40]))
print("    ...")

# %%
from gemm_lessons.sgemm_kernels import warptile
my_dbuf = make_kernel(dbuf.DBUF_CONFIG)
gl.check_all(functools.partial(warptile.sgemm, kernel=my_dbuf), name="dbuf",
             shapes=[(68, 44, 36, 1.0, 0.0), (36, 72, 20, 1.5, -0.5), (1, 4, 4, 2.0, 1.0)] if gl.SIMULATOR else
                    [(68, 44, 36, 1.0, 0.0), (516, 1028, 260, -1.0, 0.5), (4, 4, 4, 2.0, 1.0)])

# %% [markdown]
# ## Measure: when double buffering helps, and when it does not
#
# Five kernels from the same generator differ in one thing each: one buffer (two barriers per
# slice) or two; the guard around the staging loads written three ways. Lesson 06's kernel is
# the baseline. (On a GPU this compiles four big kernels: about a minute.)

# %%
kernels = {name: ladder.SGEMM.get(name) or ladder.VARIANTS[name]
           for name in ["vec_split", "dbuf_one_buffer", "dbuf", "dbuf_short_circuit", "dbuf_select"]}
table = measure.compare(kernels, size=(4096, 4096, 4096))
table

# %%
for name, base, what in [("dbuf", "dbuf_one_buffer", "two buffers instead of one"),
                         ("dbuf_short_circuit", "dbuf", "`and` (two branches) instead of `&`"),
                         ("dbuf_select", "dbuf", "clamp + select instead of `if ... & ...`"),
                         ("dbuf", "vec_split", "this lesson's rung against lesson 06")]:
    print(f"{what:<45} {table.speedup(name, base):.2f}x  ({table.source})")

# %%
inspect_kernel.compiler_facts({name: r.kernel for name, r in kernels.items()},
                              threads={name: 256 for name in kernels})


# %% [markdown]
# What the two tables say, read together:
#
# * **Two buffers** are the big step, against the same kernel with one buffer: the loads are
#   hidden, and one barrier per slice instead of two. The register count stays at the cap of
#   128, so two blocks still fit on an SM.
# * **The short-circuit guard** (`and`) made the compiler spill (local memory, `LDL`/`STL` in
#   the SASS): the two branches split the unrolled code into pieces, and the values staged
#   across them no longer fitted in 128 registers. Same idea, very different speed.
# * **Clamp + select** avoids the condition entirely but costs a few instructions per load
#   (`min`, select); the predicated `if ... & ...` was a little faster.
# * **The first attempt** lost `LDS.128`; double buffering is worth nothing if it costs the
#   wide loads.
#
# The seeds warned that double buffering written naively can lose to register spills: both
# failure modes are in this table, each with the compiler's evidence beside it.

# %% [markdown]
# ## Exercise 07-shared-bytes
# How many bytes of shared memory does a block need? Write `shared_bytes(BM, BN, BK, pad_a,
# stages)` for the generator's layout: per buffer, the transposed A tile (BK rows of
# BM + pad_a floats) and the B tile (BK rows of BN floats).

# %%
# NBVAL_CHECK_OUTPUT
def shared_bytes(BM, BN, BK, pad_a, stages):
    ### BEGIN SOLUTION
    return 4 * stages * BK * (BM + pad_a + BN)
    ### END SOLUTION

exercises.check("07-shared-bytes", shared_bytes)

# %% [markdown]
# ## Takeaway
#
# * Double buffering overlaps the next slice's global loads with this slice's compute, and
#   halves the barriers. Measured here it is the largest single step since lesson 05.
# * It is fragile: a runtime buffer index cost the 16-byte shared loads, and a short-circuit
#   `and` around the loads cost spills. Write the code so the compiler has nothing to guess
#   (separate buffers, explicit `load4`, one condition), then confirm in the SASS.
# * Next (lesson 08): the other fields of `TileConfig`: how the threads of a warp are laid out
#   (warp tiles), the depth of a slice, the register cap, and a sweep that picks the best.

# %% [markdown]
# ## Sources and further reading
#
# * The source articles this lesson re-tells and tests: [[4]](REFERENCES.md#seed-003), [[5]](REFERENCES.md#seed-004) (their origins and what each
#   covers are in [REFERENCES.md](REFERENCES.md#source-articles)).
# * What to read next: [REFERENCES.md, lesson 07](REFERENCES.md#lessons-07-08).
# * Terms: the [glossary](GLOSSARY.md); the execution model and the compiler-facts table are
#   introduced in the [primer](00a_primer.ipynb).
