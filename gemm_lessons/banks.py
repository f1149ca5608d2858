"""Shared-memory banks: a model of how many wavefronts a warp-wide access costs, a tracer that
records the shared-memory accesses of any numba kernel on the CUDA simulator, and pictures.

The model (NVIDIA's rules, as the lessons use them): shared memory is 32 banks of 4 bytes; the
word at byte address a lives in bank (a // 4) % 32.  A warp-wide access of 4-byte values is
served in one phase (all 32 lanes), 8-byte values in two phases (lanes 0-15, 16-31), 16-byte
values in four phases (8 lanes each).  Within a phase, lanes reading the same word share it
(broadcast); a phase costs as many wavefronts as the largest number of *distinct* words that
fall into one bank.  An access with no conflict costs one wavefront per phase.
"""
import collections
import linecache
import re
import sys
import threading
from dataclasses import dataclass, field

import numpy as np

from . import _backend

BANKS = 32
WORD = 4
PHASE_LANES = {4: 32, 8: 16, 16: 8}


@dataclass
class Access:
    """Cost of one warp-wide shared-memory instruction."""
    wavefronts: int
    ideal: int
    degree: int  # the n of an n-way conflict: most distinct words in one bank within a phase
    phases: list = field(default_factory=list)  # wavefronts per phase

    @property
    def conflicts(self):
        """Extra wavefronts caused by conflicts (what ncu reports as bank conflicts)."""
        return self.wavefronts - self.ideal


def words_of(address, width):
    return [(address + i) // WORD for i in range(0, width, WORD)] if width >= WORD else [address // WORD]


def _paired(addresses):
    """True when lane pairs (n, n^1) or (n, n^2) all use the same address."""
    for step in (1, 2):
        if all(addresses[l] == addresses[l ^ step] for l in range(32)):
            return True
    return False


def wavefronts(addresses, width=4, paired_loads=False):
    """Cost of one warp-wide access: ``addresses`` are the 32 lanes' byte addresses in lane
    order (None for an inactive lane), ``width`` the bytes each lane reads (4, 8 or 16).

    ``paired_loads`` adds one rule measured with ncu on an H100 (and described by NVIDIA
    staff for Volta/Turing): shared memory returns 128 bytes per wavefront, one register per
    lane, so a 16-byte load normally needs four; but when lanes (n, n^1) or (n, n^2) all share
    their addresses the return is packed two lanes per register and the load needs half as
    many: the 16 distinct lanes are served in two phases of 8."""
    if width not in PHASE_LANES:
        raise ValueError(f"width must be 4, 8 or 16 bytes, got {width}")
    if len(addresses) != 32:
        raise ValueError(f"give 32 addresses (one per lane, None if inactive), got {len(addresses)}")
    for a in addresses:
        if a is not None and a % width:
            raise ValueError(f"address {a} is not a multiple of the access width {width} bytes")
    per = PHASE_LANES[width]
    lanes_of = list(addresses)
    if paired_loads and width == 16 and _paired(addresses):
        step = 1 if all(addresses[l] == addresses[l ^ 1] for l in range(32)) else 2
        lanes_of = [a for l, a in enumerate(addresses) if not l & step]  # one lane per pair
        lanes_of += [None] * 16  # the pairs' partners: already served
        per = 8
    phases = []
    ideal = 0
    for start in range(0, 32, per):
        lanes = [a for a in lanes_of[start:start + per] if a is not None]
        if not lanes:
            continue
        words = {w for a in lanes for w in words_of(a, width)}
        by_bank = collections.Counter(w % BANKS for w in words)
        phases.append(max(by_bank.values()))
        ideal += -(-len(words) // BANKS)  # at least one wavefront per 32 distinct words
    total = sum(phases)
    return Access(total, ideal, max(phases) if phases else 0, phases)


# ------------------------------------------------------------------------------------ tracer
@dataclass
class Instruction:
    """One warp-wide shared-memory instruction as the tracer reconstructed it."""
    warp: int
    op: str  # "ld" or "st"
    array: str
    site: tuple  # (file, line) of the access in the kernel source
    addresses: list  # byte address per lane (None: inactive)
    width: int = 4

    @property
    def cost(self):
        """Wavefronts by the documented rules (quarter-warp phases for 16-byte accesses)."""
        return wavefronts(self.addresses, self.width)

    @property
    def measured_cost(self):
        """Wavefronts with the packed-return rule for paired 16-byte loads (see wavefronts)."""
        return wavefronts(self.addresses, self.width, paired_loads=self.op == "ld")


@dataclass
class Trace:
    instructions: list
    block: tuple
    arrays: dict  # name -> (shape, itemsize, base byte offset)
    names: dict = field(default_factory=dict)  # name -> the kernel's variable, e.g. "a0" -> "sAT"

    def totals(self, op=None, rule="documented"):
        """Instructions, wavefronts, ideal wavefronts and conflicts, for loads ("ld"),
        stores ("st") or both; ``rule`` "documented" or "paired" (see wavefronts)."""
        ins = [i for i in self.instructions if op is None or i.op == op]
        costs = [i.cost if rule == "documented" else i.measured_cost for i in ins]
        return {"instructions": len(ins), "wavefronts": sum(c.wavefronts for c in costs),
                "ideal": sum(c.ideal for c in costs), "conflicts": sum(c.conflicts for c in costs)}

    def by_site(self):
        """Per source line: op, width, instruction count, wavefronts, worst conflict degree."""
        rows = collections.OrderedDict()
        for i in self.instructions:
            key = (i.site[1], i.op, i.array, i.width)
            c = i.cost
            r = rows.setdefault(key, {"line": i.site[1], "op": i.op, "array": i.array, "width": i.width,
                                      "instructions": 0, "wavefronts": 0, "ideal": 0, "degree": 0})
            r["instructions"] += 1
            r["wavefronts"] += c.wavefronts
            r["ideal"] += c.ideal
            r["degree"] = max(r["degree"], c.degree)
        return list(rows.values())

    def first(self, op="ld", array=None, warp=0):
        for i in self.instructions:
            if i.op == op and i.warp == warp and array in (None, i.array, self.names.get(i.array)):
                return i
        raise LookupError(f"no {op} instruction on {array or 'any array'} in warp {warp}")

    def _repr_markdown_(self):
        lines = ["| line | op | array | bytes | instructions | wavefronts | ideal | worst n-way |",
                 "|---:|---|---|---:|---:|---:|---:|---:|"]
        for r in self.by_site():
            lines.append(f"| {r['line']} | {r['op']} | {r['array']} | {r['width']} | {r['instructions']} | "
                         f"{r['wavefronts']} | {r['ideal']} | {r['degree']} |")
        for op in ("ld", "st"):
            t = self.totals(op)
            lines.append(f"| **total** | {op} | | | {t['instructions']} | {t['wavefronts']} | {t['ideal']} | |")
        return "\n".join(lines)


class _TracedShared:
    """Stands in for a shared array on the simulator and records every element access."""

    def __init__(self, recorder, name, array, base):
        self._rec, self._name, self._a, self._base = recorder, name, array, base
        self.shape, self.dtype = array.shape, array.dtype

    def _address(self, idx):
        idx = idx if isinstance(idx, tuple) else (idx,)
        flat = np.ravel_multi_index(tuple(int(i) for i in idx), self._a.shape)
        return self._base + int(flat) * self._a.itemsize

    def __getitem__(self, idx):
        self._rec.record("ld", self._name, self._address(idx), sys._getframe(1))
        return self._a[idx]

    def __setitem__(self, idx, value):
        self._rec.record("st", self._name, self._address(idx), sys._getframe(1))
        self._a[idx] = value


class _Recorder:
    def __init__(self, only_block):
        self.only_block = only_block
        self.events = []  # (block, thread_id, seq, op, array, site, address)
        self.lock = threading.Lock()
        self.seq = collections.defaultdict(int)
        self.arrays = {}
        self.names = {}
        self.next_base = 0

    def record(self, op, name, address, frame):
        t = threading.current_thread()
        block = tuple(t.blockIdx) if hasattr(t, "blockIdx") else (0, 0, 0)
        if self.only_block is not None and block != self.only_block:
            return
        tid = getattr(t, "thread_id", 0)
        site = (frame.f_code.co_filename, frame.f_lineno)
        with self.lock:
            key = (block, tid)
            self.seq[key] += 1
            self.events.append((block, tid, self.seq[key], op, name, site, address))


def trace(launch, block=(0, 0, 0), merge=("ld", "st")):
    """Run ``launch()`` (which launches a kernel) on the simulator and trace the shared-memory
    accesses of one block.  Shared arrays are named a0, a1, ... in order of creation and laid
    out one after another from byte 0, each starting on a 128-byte (bank 0) boundary;
    ``Trace.names`` gives the kernel's own name for each (the variable on the allocation's line).

    Accesses are grouped into warp-wide instructions: the n-th time each lane of a warp
    executes the same access (same line, array and op) is one instruction.  For the ops in
    ``merge`` ("ld", "st"; False for none), runs of 2 or 4 instructions in which every lane
    touches consecutive, aligned words are merged into one 8- or 16-byte access, as the
    compiler can do (LDS.64/LDS.128, STS.64/STS.128).  Whether it did is in the SASS: pass the
    ops it merged."""
    if not _backend.SIMULATOR:
        raise RuntimeError("the tracer runs kernels on the CUDA simulator: start Python with "
                           "GEMM_LESSONS_SIMULATOR=1 (on a GPU machine, use a second process).")
    from numba.cuda.simulator import kernelapi

    rec = _Recorder(tuple(block) + (0,) * (3 - len(block)))
    original = kernelapi.FakeCUDAShared.array
    allocations = {}  # (shared-memory object, file, line of the kernel) -> traced array

    def traced_array(self, shape, dtype, alignment=None):
        # like the simulator, one allocation per source line of the kernel (per launch)
        frame = sys._getframe(1)
        key = (id(self), frame.f_code.co_filename, frame.f_lineno)
        if key not in allocations:
            from numba.np import numpy_support

            if not isinstance(dtype, np.dtype) and not isinstance(dtype, type):
                dtype = numpy_support.as_dtype(dtype)
            arr = np.empty(shape, dtype)
            name = f"a{len(rec.arrays)}"
            base = rec.next_base
            rec.next_base += -(-arr.nbytes // 128) * 128
            rec.arrays[name] = (arr.shape, arr.itemsize, base)
            assigned = re.match(r"\s*(\w+)\s*=", linecache.getline(frame.f_code.co_filename, frame.f_lineno))
            if assigned:
                rec.names[name] = assigned.group(1)
            allocations[key] = _TracedShared(rec, name, arr, base)
        return allocations[key]

    kernelapi.FakeCUDAShared.array = traced_array
    try:
        launch()
    finally:
        kernelapi.FakeCUDAShared.array = original
    return Trace(_group(rec.events, set(merge or ())), rec.only_block, rec.arrays, rec.names)


def _group(events, merge):
    groups = collections.OrderedDict()
    occurrence = collections.defaultdict(int)
    # The k-th access a lane makes on a source line (same array, same op) pairs with the k-th
    # of every other lane of its warp.  (Bytecode offsets would separate two accesses on one
    # line, but Python's adaptive interpreter reports different offsets for the same access.)
    for block, tid, seq, op, name, site, address in sorted(events, key=lambda e: (e[1], e[2])):
        warp, lane = divmod(tid, 32)
        n_key = (tid, site, op, name)
        occurrence[n_key] += 1
        gkey = (warp, site, op, name, occurrence[n_key])
        g = groups.setdefault(gkey, {"order": seq, "addresses": [None] * 32})
        g["order"] = min(g["order"], seq)
        g["addresses"][lane] = address
    ordered = sorted(groups.items(), key=lambda kv: (kv[0][0], kv[1]["order"]))
    ins = [Instruction(k[0], k[2], k[3], k[1], v["addresses"]) for k, v in ordered]
    return _merge_wide(ins, merge) if merge else ins


def _mergeable(run, width):
    first = run[0]
    if any(i.warp != first.warp or i.op != first.op or i.array != first.array for i in run):
        return False
    for lane in range(32):
        addrs = [i.addresses[lane] for i in run]
        if any(a is None for a in addrs):
            if any(a is not None for a in addrs):
                return False
            continue
        if addrs[0] % width or any(addrs[t] != addrs[0] + 4 * t for t in range(len(run))):
            return False
    return any(a is not None for a in first.addresses)


def _merge_wide(ins, ops):
    """Merge runs of the same warp, op and array (in program order, other arrays' accesses in
    between are allowed) whose lanes touch 4 (or 2) consecutive, aligned words."""
    streams = collections.defaultdict(list)
    for n, x in enumerate(ins):
        streams[(x.warp, x.op, x.array)].append(n)
    position = {n: (key, p) for key, lst in streams.items() for p, n in enumerate(lst)}
    used, out = set(), []
    for n, x in enumerate(ins):
        if n in used:
            continue
        key, p = position[n]
        stream = streams[key]
        for count, width in ((4, 16), (2, 8)) if x.op in ops else ():
            run = [ins[m] for m in stream[p:p + count]]
            if len(run) == count and _mergeable(run, width):
                out.append(Instruction(x.warp, x.op, x.array, x.site, list(x.addresses), width))
                used.update(stream[p:p + count])
                break
        else:
            out.append(x)
            used.add(n)
    return out


# ------------------------------------------------------------------------------------ pictures
def bank_map(addresses, width=4, ax=None, title=None, rows=None):
    """Draw one warp-wide access: 32 banks across, 128-byte rows down, each touched word
    labelled with its lane(s) and coloured by phase; words that conflict are outlined red."""
    import matplotlib.pyplot as plt

    cost = wavefronts(addresses, width)
    per = PHASE_LANES[width]
    cells = collections.defaultdict(list)  # (row, bank) -> lanes
    for lane, a in enumerate(addresses):
        if a is None:
            continue
        for w in words_of(a, width):
            cells[(w // BANKS, w % BANKS)].append(lane)
    row_ids = sorted({r for r, _ in cells})
    if rows is not None:
        row_ids = row_ids[:rows]
    if ax is None:
        _, ax = plt.subplots(figsize=(12, 0.45 * len(row_ids) + 1.2))
    conflict = set()
    for start in range(0, 32, per):
        words = collections.defaultdict(set)
        for lane in range(start, start + per):
            a = addresses[lane]
            if a is not None:
                for w in words_of(a, width):
                    words[w % BANKS].add(w)
        for bank, ws in words.items():
            if len(ws) > 1:
                conflict.update((w // BANKS, bank, start) for w in ws)
    cmap = plt.get_cmap("tab10")
    for y, r in enumerate(row_ids):
        for bank in range(BANKS):
            lanes = cells.get((r, bank))
            if not lanes:
                ax.add_patch(plt.Rectangle((bank, y), 1, 1, fc="white", ec="0.85"))
                continue
            phase = lanes[0] // per
            red = any((r, bank, s) in conflict for s in range(0, 32, per))
            ax.add_patch(plt.Rectangle((bank, y), 1, 1, fc=cmap(phase % 10), alpha=0.45,
                                       ec="red" if red else "0.5", lw=2 if red else 0.5))
            label = ",".join(str(l) for l in lanes[:3]) + ("…" if len(lanes) > 3 else "")
            ax.text(bank + 0.5, y + 0.5, label, ha="center", va="center", fontsize=6)
    ax.set_xlim(0, BANKS)
    ax.set_ylim(len(row_ids), 0)
    ax.set_xticks(np.arange(BANKS) + 0.5)
    ax.set_xticklabels(range(BANKS), fontsize=6)
    ax.set_yticks(np.arange(len(row_ids)) + 0.5)
    ax.set_yticklabels([f"bytes {128 * r}-" for r in row_ids], fontsize=6)
    ax.set_xlabel("bank")
    head = title or "warp access"
    ax.set_title(f"{head}: {width}-byte loads, {len(cost.phases)} phase(s), {cost.wavefronts} wavefronts "
                 f"(ideal {cost.ideal}), worst {cost.degree}-way", fontsize=9, loc="left")
    return ax


def warp_layout_addresses(shape, tile=8, split=False, row_floats=128, lanes_along="cols", k=0):
    """Byte addresses of a warp's first read of a B-tile row in an outer-product kernel.

    ``shape`` is the warp's layout of threads (rows, cols), e.g. (2, 16) or (4, 8); thread
    column c owns ``tile`` consecutive floats starting at c*tile (or, with ``split``, two
    halves of tile/2 floats, row_floats/2 apart: the 8x8 -> four 4x4 split; the first half is
    returned).  ``lanes_along`` says which way consecutive lanes run: "cols" (lane = r*cols + c)
    or "rows" (lane = c*rows + r).  Threads in the same column read the same address."""
    wr, wc = shape
    if wr * wc != 32:
        raise ValueError("a warp has 32 threads: rows x cols must be 32")
    out = []
    for lane in range(32):
        col = lane % wc if lanes_along == "cols" else lane // wr
        first = col * (tile // 2 if split else tile)
        out.append(4 * (k * row_floats + first))
    return out


def explorer():
    """A small widget: warp shape, access width and padding -> bank map of a B-tile read."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    shape = w.Dropdown(options=[("2 x 16", (2, 16)), ("4 x 8", (4, 8)), ("8 x 4", (8, 4))],
                       value=(2, 16), description="warp")
    width = w.Dropdown(options=[("LDS.32", 4), ("LDS.64", 8), ("LDS.128", 16)], value=16,
                       description="load")
    along = w.Dropdown(options=[("lanes along columns", "cols"), ("lanes along rows", "rows")],
                       value="cols", description="lanes")
    split = w.Checkbox(value=False, description="split 8 -> 4+4")
    pad = w.IntSlider(value=0, min=0, max=8, description="pad (floats)")
    out = w.Output()

    def draw(*_):
        with out:
            out.clear_output(wait=True)
            addrs = warp_layout_addresses(shape.value, split=split.value, row_floats=128 + pad.value,
                                          lanes_along=along.value, k=1)
            if width.value > 4:  # wide loads need aligned addresses: padding may break that
                addrs = [a if a % width.value == 0 else None for a in addrs]
            bank_map(addrs, width.value, title=f"warp {shape.value[0]}x{shape.value[1]}")
            plt.show()

    for c in (shape, width, along, split, pad):
        c.observe(draw, "value")
    draw()
    return w.VBox([w.HBox([shape, width, along]), w.HBox([split, pad]), out])


def _rung_launch(name, shape, seed=0):
    from numba import cuda

    from . import ladder
    from .problems import random_matrix

    rng = np.random.default_rng(seed)
    if name.startswith("transpose:"):
        rung = ladder.TRANSPOSE[name.split(":", 1)[1]]
        R, C = shape
        src, dst = cuda.to_device(random_matrix(R, C, rng)), cuda.device_array((C, R), np.float32)
        return lambda: rung(src, dst)
    rung = {**ladder.SGEMM, **ladder.VARIANTS}[name]
    M, N, K = shape
    A, B = cuda.to_device(random_matrix(M, K, rng)), cuda.to_device(random_matrix(K, N, rng))
    C = cuda.device_array((M, N), np.float32)
    return lambda: rung(A, B, C)


def trace_rung(name, shape, merge=("ld",)):
    """Trace block 0 of a ladder kernel: an SGEMM rung or variant by name with shape (M, N, K),
    or "transpose:<name>" with shape (rows, cols).  On a machine with a GPU the tracing runs in
    a child process on the simulator, so notebooks can call it anywhere."""
    if _backend.SIMULATOR:
        return trace(_rung_launch(name, shape), merge=merge)
    code = ("import json, gemm_lessons.banks as b; "
            f"t = b.trace_rung({name!r}, {tuple(shape)!r}, {tuple(merge or ())!r}); "
            "print(json.dumps([[[i.warp, i.op, i.array, list(i.site), i.addresses, i.width] "
            "for i in t.instructions], t.names]))")
    rows, names = _backend.run_on_simulator(code, "tracing")
    ins = [Instruction(w, op, arr, tuple(site), addrs, width) for w, op, arr, site, addrs, width in rows]
    return Trace(ins, (0, 0, 0), {}, names)
