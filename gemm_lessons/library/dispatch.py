"""Which kernel gl.sgemm launches for a shape: a rule made of measured numbers.

cuBLAS is not one kernel but hundreds, and a heuristic that picks one per call.  gl.sgemm has
a handful of plans (``PLANS``), each with the tile sizes of ``TILES``:

  * ``wide``: lesson 08's warptile kernel (16-byte accesses: K and N multiples of 4, C-contiguous
    16-byte-aligned arrays), whole or with K split over 2..16 blocks (split-K, whose partial sums
    kernels/library/splitk_reduce_wide.py adds up, 16 bytes at a time);
  * ``any_shape``: kernels/library/sgemm_any_shape.py (scalar, predicated global loads: any shape, any
    alignment, strided rows), whole or split the same way (its parts added by splitk_reduce.py);
  * ``padded``: where the wide kernel may not run, a copy of B with zeros around it (sides
    multiples of 4, kernels/library/pad_copy.py), and of A when K is not a multiple of 4 (both
    from one launch, pad_copy_pair.py), then the wide kernel from them straight into C, one float
    at a time (warptile's ``ragged_c``), or split the same way (its parts added by
    splitk_reduce_padded.py).

``choose`` picks the plan with the smallest estimated time under ``Model``:

    time = sum over waves of (blocks on the busiest SM) x (FLOP of one block) / (that SM's rate)
           + for split-K: the reduction's bytes / bandwidth + one more launch
           + for padded: the copies' bytes / bandwidth + one launch

where a wave is every SM holding as many blocks as fit (``blocks_per_sm``), a full SM's rate is
the kernel's whole-GPU rate on a large square problem divided by the SMs, and an SM holding
fewer blocks (in a last, partly filled wave) runs at a rate between that and the measured rate
of a lone block (``Speed.sm_rate``; without that measurement, 1/blocks_per_sm of a full SM's,
so that a partly filled wave costs as much as a full one).  What the formula
captures is the tail effect: a 256 x 12288 x 12288 product has 192 blocks of 128x128 for 132
SMs holding 2 each, so a quarter of the GPU idles while the one wave runs; smaller tiles or
split-K give more, shorter blocks.  It ignores what it cannot know cheaply (L2 reuse, the
clock), so it is a ranking of plans, not a prediction to quote.

The numbers in ``PROVISIONAL`` are the last rung's measured rate and occupancy (results/
tuning-*.json, 4096^3 on an H100) and guesses for the rest: **provisional** until
``python -m gemm_lessons.runs.shapes`` has measured them on the GPU in use (it times every tile size
of both kernels at a large square, reads their occupancy from the compiler, and writes them to
results/shapes-<device>.json), after which ``model()`` uses the measured ones.  The same run
times every plan on every shape of its suite and records where ``choose`` disagrees with the
fastest measured plan.
"""
import functools
import json
import os
from dataclasses import asdict, dataclass, field, replace

from gemm_lessons.kernels.sgemm.warptile import TileConfig

# Tile sizes, largest first: the last rung (lesson 08's sweep winner), and three smaller ones
# for problems whose 128x128 grid leaves SMs idle.
TILES = {
    "128x128": TileConfig(),
    "64x128": TileConfig(BM=64, max_registers=None),  # 128 threads; 85% of cuBLAS in the sweep
    # its mirror, for a narrow C (N = 64: a 64x128 tile would be half empty); warp tiles 64 x 32
    "128x64": TileConfig(BN=64, WM=64, WN=32, max_registers=None),
    # 64 threads, 8x8 results each; no register cap: capped at 128 the any-shape kernel, which
    # stages 16 scalars per thread here, spilled 288 bytes (offline SASS, sm_90)
    "64x64": TileConfig(BM=64, BN=64, WM=32, WN=64, max_registers=None),
}
KERNELS = ("wide", "any_shape")  # the kernels the calibration times (padded runs the wide one)
SPLITS = (1, 2, 3, 4, 6, 8, 12, 16)


@dataclass(frozen=True)
class Plan:
    kernel: str  # "wide" (warptile.py, needs aligned K and N), "any_shape" or "padded"
    tiles: str  # a key of TILES
    split: int = 1  # blocks along K (wide and any_shape); > 1 adds the reduction kernel

    @property
    def config(self):
        return TILES[self.tiles]

    def grid(self, M, N):
        c = self.config
        return (N + c.BN - 1) // c.BN, (M + c.BM - 1) // c.BM, self.split

    def k_chunk(self, K):
        """k per block along z: a multiple of BK, so only the last block has a ragged end."""
        bk = self.config.BK
        return -(-(-(-K // self.split)) // bk) * bk

    def __str__(self):
        return f"{self.kernel} {self.tiles}" + (f" split {self.split}" if self.split > 1 else "")


PLANS = ([Plan("wide", t, s) for t in TILES for s in SPLITS]
         + [Plan("any_shape", t, s) for t in TILES for s in SPLITS]
         + [Plan("padded", t, s) for t in TILES for s in SPLITS])


def padded_sides(N, K):
    """(N4, K4): N and K rounded up to multiples of 4, the padded plan's workspace sides."""
    return (N + 3) // 4 * 4, (K + 3) // 4 * 4


def padded_copy_floats(M, N, K):
    """Floats the padded plan's copies read and write besides the product: B (K x N) into K4 x N4,
    and A (M x K) into M x K4 when K is not a multiple of 4 (an aligned, C-contiguous A with K a
    multiple of 4 is read as it is; C is written by the kernel itself)."""
    N4, K4 = padded_sides(N, K)
    return K * N + K4 * N4 + (M * K + M * K4 if K % 4 else 0)


PADDED_COPY_LAUNCHES = 1  # B's copy, or A's and B's together (pad_copy_pair.py): one launch either way


@dataclass(frozen=True)
class Speed:
    gflops: float  # whole-GPU rate on a large square problem
    blocks_per_sm: int  # resident blocks per SM (registers, shared memory, threads)
    measured: bool = False
    # whole-GPU rate when every SM holds one block (a grid of exactly `sms` blocks, measured by
    # python -m gemm_lessons.runs.shapes); None: not measured, and a lone block is assumed to get
    # 1/blocks_per_sm of its SM, as in a full wave
    lone_gflops: float | None = None

    def sm_rate(self, blocks, sms):
        """FLOP/s of one SM holding ``blocks`` (1 .. blocks_per_sm) of these blocks: the measured
        full rate, the lone rate, and a straight line between them (an assumption)."""
        full = self.gflops * 1e9 / sms
        lone = (self.lone_gflops * 1e9 / sms) if self.lone_gflops else full / self.blocks_per_sm
        if self.blocks_per_sm <= 1:
            return full
        return lone + (full - lone) * (min(blocks, self.blocks_per_sm) - 1) / (self.blocks_per_sm - 1)


# kernel/tiles -> Speed.  Measured: wide 128x128 (the last rung, 49.0 TFLOPS at 4096^3, 2 blocks
# per SM, results/tuning-nvidia-h100-80gb-hbm3.json) and 64x128 (44.1 TFLOPS with guard
# "select", 3 blocks per SM, same sweep).  Guessed: 64x64 and the any-shape kernel (its scalar
# loads: 4x the load instructions, a few per 512 FFMAs: guessed at 90% of wide).
PROVISIONAL = {
    "wide/128x128": Speed(49000.0, 2),
    "wide/64x128": Speed(44000.0, 3),
    "wide/64x64": Speed(35000.0, 6),
    "any_shape/128x128": Speed(44000.0, 2),
    "any_shape/64x128": Speed(39600.0, 3),
    "any_shape/64x64": Speed(31500.0, 4),  # 217 registers (offline SASS): 4 blocks of 64 threads
    "wide/128x64": Speed(44000.0, 3),  # guessed: 64x128's numbers
    "any_shape/128x64": Speed(39600.0, 3),
}


@dataclass(frozen=True)
class Model:
    """The numbers ``choose`` ranks plans with (see the module doc)."""
    sms: int = 132
    speeds: dict = field(default_factory=lambda: dict(PROVISIONAL))
    bandwidth_gbs: float = 3000.0  # DRAM bytes per second the reduction moves at (H100: ~3 TB/s copy)
    launch_us: float = 5.0  # one more kernel launch on the GPU's side
    min_k_per_split: int = 128  # a block along K sums at least this many k (16 slices of 8)
    source: str = "provisional (see gemm_lessons.library.dispatch: not measured on this GPU)"

    def speed(self, plan):
        kernel = "wide" if plan.kernel == "padded" else plan.kernel
        return self.speeds[f"{kernel}/{plan.tiles}"]

    def estimate_s(self, plan, M, N, K):
        """Seconds the model gives ``plan`` for an M x N x K product (a ranking, see the doc)."""
        if plan.kernel == "padded":  # the wide kernel on the padded sides, plus the copies
            N4, K4 = padded_sides(N, K)
            return self.estimate_s(Plan("wide", plan.tiles, plan.split), M, N4, K4) + self.padding_s(M, N, K)
        c, s = plan.config, self.speed(plan)
        gx, gy, splits = plan.grid(M, N)
        blocks = gx * gy * splits
        full_waves, rest = divmod(blocks, s.blocks_per_sm * self.sms)
        block_flop = 2.0 * c.BM * c.BN * plan.k_chunk(K)
        t = full_waves * s.blocks_per_sm * block_flop / s.sm_rate(s.blocks_per_sm, self.sms)
        if rest:  # a partly filled wave: its busiest SM holds ceil(rest / sms) blocks
            b = -(-rest // self.sms)
            t += b * block_flop / s.sm_rate(b, self.sms)
        if splits > 1:
            t += 4.0 * M * N * (splits + 2) / (self.bandwidth_gbs * 1e9) + self.launch_us * 1e-6
        return t

    def padding_s(self, M, N, K):
        """What the padded plan adds to the wide kernel: its copies' bytes at the copy bandwidth
        and their launch (``PADDED_COPY_LAUNCHES``)."""
        return (4.0 * padded_copy_floats(M, N, K) / (self.bandwidth_gbs * 1e9)
                + PADDED_COPY_LAUNCHES * self.launch_us * 1e-6)

    def to_dict(self):
        return {**asdict(self), "speeds": {k: asdict(v) for k, v in self.speeds.items()}}

    @classmethod
    def from_dict(cls, d):
        d = dict(d)
        d["speeds"] = {**PROVISIONAL, **{k: Speed(**v) for k, v in d.get("speeds", {}).items()}}
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


def candidates(M, N, K, wide, model=None):
    """The plans that can run M x N x K: when ``wide`` (K and N multiples of 4, C-contiguous
    16-byte-aligned arrays) the wide kernel's (the any-shape kernel would do the same with more
    load instructions), else the any-shape kernel's and the padded ones; split-K into s parts only
    where K >= s * ``model.min_k_per_split`` (below that the partial sums' traffic and the second
    launch cannot pay; after rounding to BK the last part may get fewer) and the last part is not
    empty."""
    min_k = (model or _model_now()).min_k_per_split
    out = []
    for p in PLANS:
        if (p.kernel == "wide") != wide:
            continue
        if p.split > 1 and (K < p.split * min_k or p.k_chunk(K) * (p.split - 1) >= K):
            continue
        out.append(p)
    return out


def choose(M, N, K, wide, model=None):
    """The plan gl.sgemm launches for an M x N x K product (``wide``: see ``candidates``).

    The candidate with the smallest ``model.estimate_s`` (ties: the first in PLANS order, i.e.
    larger tiles, no split).  The model's numbers, ``min_k_per_split`` included, are
    provisional until measured on this GPU (module doc; ``model().source`` says which).
    """
    model = model or _model_now()
    return min(candidates(M, N, K, wide, model), key=lambda p: model.estimate_s(p, M, N, K))


_MODEL = {}


def _model_now():
    if "model" not in _MODEL:
        _MODEL["model"] = load_model()
    return _MODEL["model"]


def model():
    """The Model in use: the one measured on this GPU (results/shapes-<device>.json) if there
    is one, else the provisional one."""
    return _model_now()


def set_model(m):
    """Use ``m`` from now on (None: look for a measured one again); clears choose's memo."""
    _MODEL.clear()
    if m is not None:
        _MODEL["model"] = m
    plan_for.cache_clear()
    for forget in _FORGET:  # gl.sgemm remembers each shape's plan: choose again
        forget()


_FORGET = []  # what remembers plans made by plan_for (library.device_arrays registers its cache)


def forget_on_new_model(clear):
    """Call ``clear`` whenever set_model changes the model (a cache of plans registers here)."""
    _FORGET.append(clear)


@functools.lru_cache(maxsize=4096)
def plan_for(M, N, K, wide):
    """``choose`` with the model in use, remembered per shape (gl.sgemm calls this every time)."""
    return choose(M, N, K, wide)


def load_model(path=None):
    """The model recorded for this GPU by python -m gemm_lessons.runs.shapes, else the provisional
    one (with this GPU's number of SMs); on the simulator, the one recorded on
    results.COURSE_DEVICE, else on results.REFERENCE_DEVICE (results.course_path)."""
    from gemm_lessons.core import backend

    base = Model()
    if path is None:
        if backend.SIMULATOR:  # no GPU: the reference GPU's recorded model, so that plans match the lessons'
            from gemm_lessons.records import results

            device = results.course_device("shapes")
            path = results.path_for("shapes", device)
            model = load_model(path) if os.path.exists(path) else base
            if any(s.measured for s in model.speeds.values()):  # not the provisional fallback
                model = replace(model, source=f"{model.source} on the {device} "
                                              "(recorded; the CUDA simulator has no GPU of its own)")
            return model
        try:
            from gemm_lessons.records import results
            from gemm_lessons.measure.device import device_info

            info = device_info()
            base = replace(base, sms=info.sm_count or base.sms)
            path = results.path_for("shapes", info.name)
        except Exception:  # noqa: BLE001 (no device information: the provisional model as it is)
            return base
    if not os.path.exists(path):
        return base
    try:
        with open(path) as f:
            d = json.load(f).get("model")
        return Model.from_dict(d) if d else base
    except (OSError, ValueError, TypeError) as e:
        return replace(base, source=f"provisional ({path} unreadable: {e})")
