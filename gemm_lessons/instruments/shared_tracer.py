"""The shared-memory tracer: run any numba kernel on the CUDA simulator, record every
shared-memory access of one block, regroup them into warp-wide instructions and cost each one
with the bank model (gemm_lessons.instruments.bank_model).  tools/bank_truth.py checks the
totals against Nsight Compute's counters on a GPU (lesson 06).
"""
import collections
import linecache
import re
import sys
import threading
from dataclasses import dataclass

import numpy as np
from numba import cuda
from numba.np import numpy_support

from gemm_lessons.core import backend
from gemm_lessons.kernels import ladder
from gemm_lessons.measure.problems import random_matrix
from gemm_lessons.instruments.bank_model import wavefronts
from gemm_lessons.instruments.simulator_process import run_on_simulator

@dataclass
class Instruction:
    """One warp-wide shared-memory instruction as the tracer reconstructed it."""
    warp: int
    op: str  # "ld" or "st"
    array: str
    site: tuple  # (file, line) of the access in the kernel source
    addresses: list  # byte address per lane (None: inactive)
    width: int = 4
    source: str = None  # the text of the kernel's source line at ``site``, as traced

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
    arrays: dict  # the kernel's name for each shared array -> (shape, itemsize, base byte offset)

    def __repr__(self):  # short: a whole trace holds thousands of instructions
        ld, st = self.totals("ld"), self.totals("st")
        return (f"<Trace of block {self.block[:2]}: {ld['instructions']:,} loads ({ld['wavefronts']:,} wavefronts, "
                f"ideal {ld['ideal']:,}), {st['instructions']:,} stores ({st['wavefronts']:,} wavefronts, "
                f"ideal {st['ideal']:,}); shared arrays {', '.join(self.arrays) or 'unnamed'}>")

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
            r = rows.setdefault(key, {"line": i.site[1], "source": i.source, "op": i.op, "array": i.array,
                                      "width": i.width, "instructions": 0, "wavefronts": 0, "ideal": 0,
                                      "degree": 0})
            r["instructions"] += 1
            r["wavefronts"] += c.wavefronts
            r["ideal"] += c.ideal
            r["degree"] = max(r["degree"], c.degree)
        return list(rows.values())

    def first(self, op="ld", array=None, warp=0):
        for i in self.instructions:
            if i.op == op and i.warp == warp and array in (None, i.array):
                return i
        raise LookupError(f"no {op} instruction on {array or 'any array'} in warp {warp}")

    def _repr_markdown_(self):
        """One row per access in the kernel's source (keyed by the line's text: the line number
        is one of the package's file, which a notebook does not show), then the totals."""
        lines = ["| kernel line | op | array | bytes | instructions | wavefronts | ideal | worst n-way |",
                 "|---|---|---|---:|---:|---:|---:|---:|"]
        for r in self.by_site():
            where = ("`" + r["source"].replace("|", "\\|") + "`") if r["source"] else f"line {r['line']}"
            lines.append(f"| {where} | {r['op']} | {r['array']} | {r['width']} | {r['instructions']} | "
                         f"{r['wavefronts']} | {r['ideal']} | {r['degree']} |")
        for op in ("ld", "st"):
            t = self.totals(op)
            lines.append(f"| **total** | {op} | | | {t['instructions']} | {t['wavefronts']} | {t['ideal']} | |")
        return "\n".join(lines)


def _vector_helpers():
    """The simulator's float4.py helpers (their code objects) -> (elements one call moves, how
    to find the element it starts at from the helper's frame): load4/store4 (4 elements from
    [row, col]), load4_flat/store4_flat (4 from flat element i), load1/store1 and
    load1_flat/store1_flat (1).  On a GPU the 4-element helpers compile to one LDS.128 or
    STS.128 each; on the simulator they make four scalar accesses, which the tracer records as
    that one 16-byte access, at the kernel's line that called the helper."""
    from gemm_lessons.core import float4

    def first_2d(frame, arr):
        return int(np.ravel_multi_index((int(frame.f_locals["row"]), int(frame.f_locals["col"])), arr.shape))

    def first_flat(frame, arr):
        return int(frame.f_locals["i"])

    helpers = {"load4": (4, first_2d), "store4": (4, first_2d), "load4_flat": (4, first_flat),
               "store4_flat": (4, first_flat), "load1": (1, first_2d), "store1": (1, first_2d),
               "load1_flat": (1, first_flat), "store1_flat": (1, first_flat)}
    return {getattr(float4, name).__code__: rule for name, rule in helpers.items()
            if hasattr(getattr(float4, name), "__code__")}


class _TracedShared:
    """Stands in for a shared array on the simulator and records every element access, with its
    width in bytes: the element's size (4 for float32, 8 for float64), or 16 for an access made
    through one of float4.py's 16-byte helpers (recorded once, at its first element)."""

    def __init__(self, recorder, name, array, base):
        self._rec, self._name, self._a, self._base = recorder, name, array, base
        self.shape, self.dtype = array.shape, array.dtype

    def _flat(self, idx):
        idx = idx if isinstance(idx, tuple) else (idx,)
        return int(np.ravel_multi_index(tuple(int(i) for i in idx), self._a.shape))

    def _record(self, op, idx, frame):
        flat = self._flat(idx)
        width = self._a.itemsize
        helper = self._rec.vector_helpers.get(frame.f_code)
        if helper is not None:  # a float4.py helper: one access of all its elements, at the kernel's line
            elements, first = helper
            if elements > 1 and flat != first(frame, self._a):
                return  # the 2nd-4th elements of a 16-byte access: recorded with the 1st
            width *= elements
            frame = frame.f_back
        self._rec.record(op, self._name, self._base + flat * self._a.itemsize, frame, width)

    def __getitem__(self, idx):
        self._record("ld", idx, sys._getframe(1))
        return self._a[idx]

    def __setitem__(self, idx, value):
        self._record("st", idx, sys._getframe(1))
        self._a[idx] = value


class _Recorder:
    def __init__(self, only_block, vector_helpers=None):
        self.only_block = only_block
        self.events = []  # (block, thread_id, seq, op, array, site, address, width in bytes)
        self.lock = threading.Lock()
        self.seq = collections.defaultdict(int)
        self.arrays = {}
        self.next_base = 0
        self.vector_helpers = vector_helpers or {}

    def record(self, op, name, address, frame, width=4):
        t = threading.current_thread()
        block = tuple(t.blockIdx) if hasattr(t, "blockIdx") else (0, 0, 0)
        if self.only_block is not None and block != self.only_block:
            return
        tid = getattr(t, "thread_id", 0)
        site = (frame.f_code.co_filename, frame.f_lineno)
        with self.lock:
            key = (block, tid)
            self.seq[key] += 1
            self.events.append((block, tid, self.seq[key], op, name, site, address, width))


def _variable_name(frame, default, taken):
    """``sB`` for a kernel line ``sB = cuda.shared.array(...)``, else ``default``."""
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    m = re.match(r"\s*(\w+)\s*=\s*cuda\.shared\.array\b", line)
    return m.group(1) if m and m.group(1) not in taken else default


def trace(launch, block=(0, 0, 0), merge=("ld", "st")):
    """Run ``launch()`` (which launches a kernel) on the simulator and trace the shared-memory
    accesses of one block.  Shared arrays carry the kernel's own names (the variable on the
    line that allocates them; a0, a1, ... in order of creation where the line has none) and
    are laid out one after another from byte 0, each starting on a 128-byte (bank 0) boundary.

    Accesses are grouped into warp-wide instructions: the n-th time each lane of a warp
    executes the same access (same line, array and op) is one instruction.  Each access is as
    wide as the array's elements (4 bytes for float32, 8 for float64: costed by the bank
    model's rule for that width), or 16 bytes through float4.py's load4/store4 helpers (one
    LDS.128/STS.128 on a GPU, whatever ``merge`` says).  For the ops in ``merge`` ("ld", "st";
    False for none), runs of 2 or 4 instructions in which every lane touches consecutive,
    aligned elements are merged into one 8- or 16-byte access, as the compiler can do
    (LDS.64/LDS.128, STS.64/STS.128).  Whether it did is in the SASS: pass the ops it merged."""
    if not backend.SIMULATOR:
        raise RuntimeError("the tracer runs kernels on the CUDA simulator: start Python with "
                           "GEMM_LESSONS_SIMULATOR=1 (on a GPU machine, use a second process).")
    from numba.cuda.simulator import kernelapi  # simulator mode only

    rec = _Recorder(tuple(block) + (0,) * (3 - len(block)), _vector_helpers())
    original = kernelapi.FakeCUDAShared.array
    allocations = {}  # (shared-memory object, file, line of the kernel) -> traced array

    lock = threading.Lock()  # the block's threads allocate at the same time: one array per line

    def traced_array(self, shape, dtype, alignment=None):
        # like the simulator, one allocation per source line of the kernel (per launch)
        frame = sys._getframe(1)
        key = (id(self), frame.f_code.co_filename, frame.f_lineno)
        with lock:
            if key not in allocations:
                if not isinstance(dtype, np.dtype) and not isinstance(dtype, type):
                    dtype = numpy_support.as_dtype(dtype)
                arr = np.empty(shape, dtype)
                name = _variable_name(frame, default=f"a{len(rec.arrays)}", taken=rec.arrays)
                base = rec.next_base
                rec.next_base += -(-arr.nbytes // 128) * 128
                rec.arrays[name] = (arr.shape, arr.itemsize, base)
                allocations[key] = _TracedShared(rec, name, arr, base)
            return allocations[key]

    kernelapi.FakeCUDAShared.array = traced_array
    try:
        launch()
    finally:
        kernelapi.FakeCUDAShared.array = original
    return Trace(_group(rec.events, set(merge or ())), rec.only_block, rec.arrays)


def _code_of(filename, lineno):
    """The code of one source line, without its comment (None where the source is not found)."""
    text = re.sub(r"\s+#[^'\"]*$", "", linecache.getline(filename, lineno).strip())
    return text or None


def _group(events, merge):
    """Events (block, thread, seq, op, array, site, byte address[, width in bytes: 4 if absent])
    -> warp-wide Instructions, each with the width of its accesses."""
    groups = collections.OrderedDict()
    occurrence = collections.defaultdict(int)
    # The k-th access a lane makes on a source line (same array, same op, same width) pairs with
    # the k-th of every other lane of its warp.  (Bytecode offsets would separate two accesses on
    # one line, but Python's adaptive interpreter reports different offsets for the same access.)
    for block, tid, seq, op, name, site, address, *rest in sorted(events, key=lambda e: (e[1], e[2])):
        width = rest[0] if rest else 4
        warp, lane = divmod(tid, 32)
        n_key = (tid, site, op, name, width)
        occurrence[n_key] += 1
        gkey = (warp, site, op, name, width, occurrence[n_key])
        g = groups.setdefault(gkey, {"order": seq, "addresses": [None] * 32})
        g["order"] = min(g["order"], seq)
        g["addresses"][lane] = address
    ordered = sorted(groups.items(), key=lambda kv: (kv[0][0], kv[1]["order"]))
    ins = [Instruction(k[0], k[2], k[3], k[1], v["addresses"], k[4], source=_code_of(*k[1])) for k, v in ordered]
    return _merge_wide(ins, merge) if merge else ins


def _mergeable(run, width):
    first = run[0]
    if any(i.warp != first.warp or i.op != first.op or i.array != first.array or i.width != first.width
           for i in run):
        return False
    for lane in range(32):
        addrs = [i.addresses[lane] for i in run]
        if any(a is None for a in addrs):
            if any(a is not None for a in addrs):
                return False
            continue
        if addrs[0] % width or any(addrs[t] != addrs[0] + first.width * t for t in range(len(run))):
            return False
    return any(a is not None for a in first.addresses)


def _merge_wide(ins, ops):
    """Merge runs of the same warp, op, array and width (in program order, other arrays'
    accesses in between are allowed) whose lanes touch consecutive, aligned elements: 4 (or 2)
    4-byte ones, or 2 8-byte ones, into one 16-byte (or 8-byte) access.  16-byte accesses (the
    float4.py helpers') are left as they are."""
    streams = collections.defaultdict(list)
    for n, x in enumerate(ins):
        streams[(x.warp, x.op, x.array, x.width)].append(n)
    position = {n: (key, p) for key, lst in streams.items() for p, n in enumerate(lst)}
    used, out = set(), []
    for n, x in enumerate(ins):
        if n in used:
            continue
        key, p = position[n]
        stream = streams[key]
        wider = [(width // x.width, width) for width in (16, 8) if width // x.width >= 2]
        for count, width in wider if x.op in ops else ():
            run = [ins[m] for m in stream[p:p + count]]
            if len(run) == count and _mergeable(run, width):
                out.append(Instruction(x.warp, x.op, x.array, x.site, list(x.addresses), width, x.source))
                used.update(stream[p:p + count])
                break
        else:
            out.append(x)
            used.add(n)
    return out


def _rung_launch(name, shape, seed=0):
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
    if backend.SIMULATOR:
        return trace(_rung_launch(name, shape), merge=merge)
    code = ("import json, gemm_lessons.instruments.shared_tracer as b; "
            f"t = b.trace_rung({name!r}, {tuple(shape)!r}, {tuple(merge or ())!r}); "
            "print(json.dumps([[i.warp, i.op, i.array, list(i.site), i.addresses, i.width, i.source] "
            "for i in t.instructions]))")
    rows = run_on_simulator(code, "tracing")
    ins = [Instruction(w, op, arr, tuple(site), addrs, width, source)
           for w, op, arr, site, addrs, width, source in rows]
    return Trace(ins, (0, 0, 0), {})
