"""How long does one load take?  Pointer chasing at each level of the memory hierarchy,
and the latency and issue rate of FFMA, measured on the GPU in use.

    python -m gemm_lessons.measure.latency            # on a GPU: writes results/latency-<device>.json

**Loads.** One thread follows a chain: ``j = chain[j]``.  Each load's address is the value the
previous load returned, so no two loads can overlap, and the time per step is the latency of
one load plus the loop's own instructions (the address computation and the loop counter), which
this method does not separate from the load: they are the same instructions at every working
set, so they shift every level by the same amount.  The chain is a random
cycle through ``nodes`` places 128 bytes apart (one per cache line), spread over a working set of
``nodes x 128`` bytes.  A small working set stays in L1 after one pass; one larger than L1 but
smaller than L2 is served by L2; one several times larger than L2 comes from DRAM (HBM on an
H100).  A random chase over hundreds of MiB may also miss the TLBs (the caches of address
translations), and the translation's time is then part of what is recorded as DRAM latency:
it is the latency of a random load, which a streaming access (pages in order) mostly does not
pay.  The same chase through shared memory gives the latency of a shared load.

**Arithmetic.** One warp runs ``acc = acc * a + b`` (one FFMA) in 1, 2, 4 or 8 independent
chains: with one chain every FFMA waits for the previous one (its latency); with enough
independent chains the warp issues one per cycle (instruction-level parallelism).  The same
one-chain loop run by 1 to 32 warps of one block shows the other way to hide a latency: more
warps on the SM.

Cycles come from the SM's cycle counter (PTX ``%clock64``, read through a small numba
intrinsic).  The record also keeps nanoseconds from CUDA events around each launch (the
launch overhead, timed separately, subtracted); for the short L1 runs that subtraction is a
large part of the time, so the tables show nanoseconds as the cycles at the clock the driver
reports (``ns_per_load``), the same conversion for every level and for shared memory.  On
numba's CUDA simulator the kernels run (the tests check their logic at tiny sizes) but nothing
is timed, and the command refuses to run.
"""
import argparse
import datetime
import json
import os
import sys
import time

import numpy as np

from gemm_lessons.core import backend
from gemm_lessons.records import results

NODE_BYTES = 128  # one node per 128-byte cache line: every step of the chase touches a new line
SHARED_WORDS = 4096  # 16 KiB of uint32: the shared-memory chase
FFMA_UNROLL = 8  # FFMAs per chain per loop iteration (written out, so loop overhead is amortised)
FFMA_CHAINS = (1, 2, 4, 8)
FFMA_WARPS = (1, 2, 4, 8, 16, 32)
WARM_MAX_STEPS = 1 << 19  # longest warm-up pass (a full pass when the chain is shorter)

from numba import cuda, float32, uint32  # noqa: E402  (after backend chose GPU or simulator)

# ----------------------------------------------------------------------------- the clock
if backend.SIMULATOR:
    def clock64():
        """Stand-in for the SM cycle counter: nanoseconds of the host (nothing is timed here)."""
        return time.perf_counter_ns()
else:
    from llvmlite import ir
    from gemm_lessons.core.numba_compat import types
    from numba.cuda.extending import intrinsic

    @intrinsic
    def clock64(typingctx):
        """The SM's 64-bit cycle counter (``mov.u64 %r, %clock64``, as CUDA C++'s clock64()).
        The inline assembly is marked as having side effects, so it is neither removed nor
        moved across the loads it brackets."""
        sig = types.int64()

        def codegen(context, builder, sig, args):
            fnty = ir.FunctionType(ir.IntType(64), [])
            asm = ir.InlineAsm(fnty, "mov.u64 $0, %clock64;", "=l", side_effect=True)
            return builder.call(asm, [])

        return sig, codegen


# ----------------------------------------------------------------------------- kernels
# lesson-cell: begin
@cuda.jit
def chase_global(chain, start, steps, out):
    # One thread follows the chain: each load's address is the value the previous load
    # returned, so the loads cannot overlap.  out = [where it ended, cycles it took].
    j = start
    t0 = clock64()  # the SM's cycle counter
    for _ in range(steps):
        j = chain[j]
    t1 = clock64()
    out[0] = j
    out[1] = t1 - t0
# lesson-cell: end


@cuda.jit
def chase_shared(chain, start, steps, out):
    """Copy ``chain`` (at most SHARED_WORDS entries) into shared memory, then chase it there."""
    s = cuda.shared.array(SHARED_WORDS, uint32)
    for i in range(chain.shape[0]):
        s[i] = chain[i]
    cuda.syncthreads()
    j = start
    t0 = clock64()
    for _ in range(steps):
        j = s[j]
    t1 = clock64()
    out[0] = j
    out[1] = t1 - t0


def make_ffma(chains, unroll=FFMA_UNROLL):
    """A kernel in which every thread runs ``chains`` independent FFMA chains for
    ``steps x unroll`` steps; lane 0 of each warp records its start and end cycle."""

    @cuda.jit
    def ffma(ab, steps, out, clocks):
        acc = cuda.local.array(chains, float32)
        a = ab[0]
        b = ab[1]
        tid = cuda.threadIdx.x
        for c in range(chains):
            acc[c] = ab[2] + float32(c)
        t0 = clock64()
        for _ in range(steps):
            for u in range(unroll):
                for c in range(chains):
                    acc[c] = acc[c] * a + b
        t1 = clock64()
        s = float32(0.0)
        for c in range(chains):
            s += acc[c]
        out[tid] = s  # keeps every chain alive
        if tid % 32 == 0:
            clocks[tid // 32, 0] = t0
            clocks[tid // 32, 1] = t1

    ffma.chains = chains
    ffma.unroll = unroll
    return ffma


_FFMA_KERNELS = {}


def ffma_kernel(chains):
    if chains not in _FFMA_KERNELS:
        _FFMA_KERNELS[chains] = make_ffma(chains)
    return _FFMA_KERNELS[chains]


# ----------------------------------------------------------------------------- chains (host)
def make_chain(working_set_bytes, node_bytes=NODE_BYTES, seed=0):
    """A uint32 array of ``working_set_bytes`` in which the words at multiples of
    ``node_bytes`` form one random cycle through all nodes (each holds the index of the next
    node's word); the other words are 0 and never visited."""
    words = working_set_bytes // 4
    stride = node_bytes // 4
    nodes = words // stride
    if nodes < 2:
        raise ValueError(f"a working set of {working_set_bytes} bytes holds fewer than 2 nodes of {node_bytes}")
    if words > 2**32:
        raise ValueError("indices are uint32: the working set must stay below 16 GiB")
    order = np.random.default_rng(seed).permutation(nodes).astype(np.uint64)
    chain = np.zeros(words, np.uint32)
    chain[order * stride] = (np.roll(order, -1) * stride).astype(np.uint32)
    return chain


def chase_host(chain, start, steps):
    """The index the chase reaches after ``steps`` loads (the reference for the kernels)."""
    j = int(start)
    for _ in range(steps):
        j = int(chain[j])
    return j


def cycle_length(chain, start=0):
    """How many steps it takes the chase to come back to ``start``."""
    j, n = int(chain[start]), 1
    while j != start:
        j, n = int(chain[j]), n + 1
    return n


def nodes_of(chain, node_bytes=NODE_BYTES):
    return chain.size // (node_bytes // 4)


# ----------------------------------------------------------------------------- running them
def _events_ms(launch):
    """Run ``launch()`` between two CUDA events; milliseconds (None on the simulator)."""
    if backend.SIMULATOR:
        launch()
        return None
    start, end = cuda.event(), cuda.event()
    start.record()
    launch()
    end.record()
    end.synchronize()
    return cuda.event_elapsed_time(start, end)


def _device(a):
    return a if backend.SIMULATOR else cuda.to_device(a)


def _host(a):
    return a if backend.SIMULATOR else a.copy_to_host()


def run_global_chase(chain_d, start, steps, out=None):
    """One launch of the global chase from index ``start``: (last index, cycles, milliseconds;
    None on the simulator).  ``out`` (2 int64 on the device) may be passed to keep allocation
    out of the timed region."""
    out = _device(np.zeros(2, np.int64)) if out is None else out
    start, steps = np.uint32(start), np.int64(steps)
    ms = _events_ms(lambda: chase_global[1, 1](chain_d, start, steps, out))
    o = _host(out)
    return int(o[0]), int(o[1]), ms


def run_shared_chase(chain, steps, start=0):
    """One launch of the shared-memory chase: (last index, cycles)."""
    if chain.size > SHARED_WORDS:
        raise ValueError(f"the shared chain holds at most {SHARED_WORDS} words")
    out = _device(np.zeros(2, np.int64))
    chase_shared[1, 1](_device(chain), np.uint32(start), np.int64(steps), out)
    o = _host(out)
    return int(o[0]), int(o[1])


def run_ffma(chains, warps, steps, ab=(0.999, 0.001, 1.0)):
    """(per-thread results, clocks[warp] = (start, end)) of one launch of ``warps`` warps."""
    kernel = ffma_kernel(chains)
    ab = np.array(ab, np.float32)
    d_out = _device(np.zeros(32 * warps, np.float32))
    d_clocks = _device(np.zeros((warps, 2), np.int64))
    kernel[1, 32 * warps](_device(ab), np.int64(steps), d_out, d_clocks)
    return _host(d_out), _host(d_clocks)


def ffma_reference(chains, steps, unroll=FFMA_UNROLL, ab=(0.999, 0.001, 1.0)):
    """What one thread of the FFMA kernel computes, in float32 on the host (no fused
    multiply-add here, so the GPU's value may differ in the last bits)."""
    a, b, x0 = (np.float32(v) for v in ab)
    s = np.float32(0.0)
    for c in range(chains):
        acc = x0 + np.float32(c)
        for _ in range(steps * unroll):
            acc = np.float32(acc * a + b)
        s = np.float32(s + acc)
    return s


def _launch_overhead_ms(chain_d, out, repeats=5):
    """Milliseconds the events see for a launch that does no load (numba's launch included)."""
    return float(np.median([run_global_chase(chain_d, 0, 0, out)[2] for _ in range(repeats)]))


def measure_global(sizes, steps=16384, repeats=5, progress=print):
    """For each working set in ``sizes`` (bytes): warm up with one pass of the chase (at most
    WARM_MAX_STEPS loads), then time ``repeats`` launches of ``steps`` loads each, every launch
    going on where the last one stopped.  Rows with cycles and nanoseconds per load."""
    rows = []
    for size in sizes:
        chain = make_chain(size)
        nodes = nodes_of(chain)
        chain_d = _device(chain)
        out = _device(np.zeros(2, np.int64))
        warm = min(nodes, WARM_MAX_STEPS)
        j, _, _ = run_global_chase(chain_d, 0, warm, out)
        overhead = 0.0 if backend.SIMULATOR else _launch_overhead_ms(chain_d, out)
        cycles, ns = [], []
        for _ in range(repeats):
            j_next, c, ms = run_global_chase(chain_d, j, steps, out)
            cycles.append(c / steps)
            if ms is not None:
                ns.append(max(ms - overhead, 0.0) * 1e6 / steps)
            j = j_next
        row = {"bytes": int(size), "nodes": int(nodes), "warm_steps": int(warm), "steps": int(steps),
               "cycles_per_load": float(np.median(cycles)), "cycles_runs": [round(c, 2) for c in cycles],
               "ns_per_load": float(np.median(ns)) if ns else None, "launch_overhead_ms": overhead,
               "last_index": int(j)}
        rows.append(row)
        if progress:
            progress(f"  global chase {_size(size):>8}: {row['cycles_per_load']:7.1f} cycles"
                     + (f", {row['ns_per_load']:6.1f} ns" if row["ns_per_load"] else "") + " per load")
        del chain_d
    return rows


def measure_shared(words=SHARED_WORDS, steps=16384, repeats=5, node_bytes=4):
    """The chase through shared memory: a random cycle over ``words`` consecutive words."""
    chain = make_chain(4 * words, node_bytes=node_bytes)
    cycles = [run_shared_chase(chain, steps)[1] / steps for _ in range(repeats)]
    return {"words": int(words), "steps": int(steps), "cycles_per_load": float(np.median(cycles)),
            "cycles_runs": [round(c, 2) for c in cycles]}


def measure_ffma(chains_list=FFMA_CHAINS, warps_list=FFMA_WARPS, steps=8192, repeats=3):
    """Cycles per FFMA of one warp with 1-8 independent chains, and warp-FFMAs per cycle of
    one SM with 1-32 warps running one chain each."""
    ilp = []
    for chains in chains_list:
        per = []
        for _ in range(repeats):
            _, clocks = run_ffma(chains, 1, steps)
            per.append((clocks[0, 1] - clocks[0, 0]) / (steps * FFMA_UNROLL * chains))
        ilp.append({"chains": chains, "cycles_per_ffma": float(np.median(per)),
                    "ffma_per_cycle": float(1 / np.median(per))})
    tlp = []
    for warps in warps_list:
        rate = []
        for _ in range(repeats):
            _, clocks = run_ffma(1, warps, steps)
            elapsed = clocks[:, 1].max() - clocks[:, 0].min()
            rate.append(warps * steps * FFMA_UNROLL / elapsed)
        tlp.append({"warps": warps, "warp_ffma_per_cycle": float(np.median(rate))})
    return {"unroll": FFMA_UNROLL, "steps": steps, "ilp": ilp, "warps": tlp}


def default_sizes(l2_bytes):
    """Working sets from 4 KiB up, x4 each time, to the first one at least 4x the L2 size."""
    sizes, s = [], 4 * 1024
    top = 4 * (l2_bytes or 50 * 2**20)
    while True:
        sizes.append(s)
        if s >= top:
            return sizes
        s *= 4


def levels(record):
    """Pick one working set per level: L1 = the smallest; L2 = the largest at most a quarter of
    L2 and at least 4 x 256 KiB (more than any L1 holds); DRAM = the smallest at least 4 x L2."""
    rows = record["global"]
    l2 = record["limits"].get("l2_bytes") or 50 * 2**20
    pick = {"L1": rows[0]}
    l2_rows = [r for r in rows if 4 * 256 * 1024 <= r["bytes"] <= l2 // 4]
    if l2_rows:
        pick["L2"] = l2_rows[-1]
    dram = [r for r in rows if r["bytes"] >= 4 * l2]
    if dram:
        pick["DRAM"] = dram[0]
    return pick


def _size(b):
    for unit, n in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= n:
            return f"{b / n:.4g} {unit}"
    return f"{b} B"


# ----------------------------------------------------------------------------- records
def record_path(device_name, directory=None):
    """results/latency-<device>.json"""
    return results.path_for("latency", device_name, directory=directory or results.RESULTS_DIR)


def load(device=None, directory=None):
    """The newest latency record (of ``device`` if given), or None when there is none."""
    paths = results.files("latency", directory or results.RESULTS_DIR)
    if device is not None:
        paths = [p for p in paths if p == record_path(device, directory)]
    records = []
    for path in paths:
        with open(path) as f:
            records.append(json.load(f))
    return max(records, key=lambda r: r["date"]) if records else None


def label(record):
    """'NVIDIA H100 80GB HBM3, 2026-11-23' for a latency record."""
    return f"{record['device']['name']}, {record['date'][:10]}"


def ns_per_load(record, row):
    """Nanoseconds per load of one row (a global working set, or the shared-memory row): its
    cycles at the clock the driver reports for the record's GPU, so that every level is
    converted alike; without a clock in the record, the events' nanoseconds (or None)."""
    clock = (record.get("device") or {}).get("clock_mhz")
    if clock and row.get("cycles_per_load"):
        return row["cycles_per_load"] / clock * 1e3
    return row.get("ns_per_load")


def summary_rows(record):
    """One row per level (L1, L2, DRAM, shared) with cycles and nanoseconds per load."""
    rows = []
    for name, r in levels(record).items():
        rows.append({"level": name, "working set": _size(r["bytes"]), "cycles": r["cycles_per_load"],
                     "ns": ns_per_load(record, r)})
    if record.get("shared"):
        rows.append({"level": "shared memory", "working set": _size(4 * record["shared"]["words"]),
                     "cycles": record["shared"]["cycles_per_load"], "ns": ns_per_load(record, record["shared"])})
    return rows


def source(record):
    """Where a latency record's numbers come from, in words: measured just now by the notebook's
    quick run, or read from the file ``python -m gemm_lessons.measure.latency`` wrote."""
    if record.get("quick"):
        return f"measured just now on {record['device']['name']} by a quick run in this notebook"
    path = os.path.join("results", os.path.basename(record_path(record["device"]["name"])))
    return f"measured on {label(record)} by `python -m gemm_lessons.measure.latency`, read from the saved record `{path}`"


def ffma_latency(record):
    """Cycles per FFMA of one warp running one dependent chain (the FFMA's latency), or None."""
    if not record or not (record.get("ffma") or {}).get("ilp"):
        return None
    return next((r["cycles_per_ffma"] for r in record["ffma"]["ilp"] if r["chains"] == 1), None)


def bytes_in_flight(record, bench):
    """Little's law for reading from DRAM: bytes in flight = read bandwidth x latency.

    ``record``: a latency record with a DRAM working set timed in nanoseconds; ``bench``: a
    BenchRecord (results.load) of the same GPU with a ``copy_float4`` row.  A copy's GB/s count
    the bytes read and the bytes written, equal halves, so it reads at half its rate.  Returns a
    dict of the numbers, or raises ValueError saying what is missing."""
    dram = levels(record).get("DRAM")
    if not dram or not ns_per_load(record, dram):
        raise ValueError("the latency record has no DRAM working set timed")
    if bench.device.name != record["device"]["name"]:
        raise ValueError(f"the bandwidth record is of {bench.device.name}, the latency record of "
                         f"{record['device']['name']}: not the same GPU")
    copies = [r for r in (bench.bandwidth or []) if r.kernel == "copy_float4" and r.gbs]
    if not copies:
        raise ValueError(f"the bandwidth record of {bench.device.name} has no copy_float4 row")
    lm = record.get("limits") or {}
    if not lm.get("sm_count") or not lm.get("max_threads_per_sm"):
        raise ValueError("the latency record has no SM count or threads per SM")
    copy = max(copies, key=lambda r: r.rows * r.cols)  # the largest copy measured
    read_gbs = copy.gbs / 2
    t_ns = ns_per_load(record, dram)
    in_flight = read_gbs * t_ns  # GB/s x ns = bytes
    per_sm = in_flight / lm["sm_count"]
    return {"copy_gbs": copy.gbs, "copy_shape": (copy.rows, copy.cols), "read_gbs": read_gbs, "t_ns": t_ns,
            "working_set": dram["bytes"], "bytes": in_flight, "sm_count": lm["sm_count"], "per_sm": per_sm,
            "threads_per_sm": lm["max_threads_per_sm"], "per_thread": per_sm / lm["max_threads_per_sm"],
            "loads_per_thread": per_sm / lm["max_threads_per_sm"] / 4}


def summary_markdown(record):
    clock = record["device"].get("clock_mhz")
    head = f"ns per load (the cycles at {clock:.0f} MHz)" if clock else "ns per load (CUDA events)"
    lines = [f"Latency of one dependent load, {source(record)}:", "",
             f"| level | working set | cycles per load | {head} |", "|---|---:|---:|---:|"]
    for r in summary_rows(record):
        ns = f"{r['ns']:.0f}" if r["ns"] is not None else ""
        lines.append(f"| {r['level']} | {r['working set']} | {r['cycles']:.0f} | {ns} |")
    return "\n".join(lines)


def device_limits():
    from gemm_lessons.measure.device import device_limits as limits

    return limits()


def _versions_or_less(versions):
    """bench's version record; without cuBLAS (nvmath-python missing) the rest of it."""
    try:
        return versions()
    except Exception as e:  # this benchmark needs no cuBLAS
        import platform

        import numba

        v = {"python": platform.python_version(), "numpy": np.__version__, "numba": numba.__version__,
             "cublas": f"not recorded ({type(e).__name__})"}
        try:
            import numba_cuda

            v["numba_cuda"] = numba_cuda.__version__
            v["cuda_driver"] = ".".join(map(str, cuda.cudadrv.driver.driver.get_version()))
        except Exception:
            pass
        return v


def collect(steps=16384, repeats=5, quick=False, progress=print):
    """Every measurement of this module on the current GPU, as a record (a dict).  ``quick``
    (the primer, on a GPU) times fewer, shorter launches and skips the warp sweep's largest
    sizes: a few seconds instead of the full run."""
    from gemm_lessons.measure import provenance
    from gemm_lessons.measure.device import device_info

    if quick:
        steps, repeats = 4096, 3
    t0 = time.time()
    info = device_info()
    limits = device_limits()
    record = {
        "device": info.as_dict(), "limits": limits,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": _versions_or_less(provenance.versions), "git_commit": provenance.git_commit(),
        "node_bytes": NODE_BYTES, "quick": quick,
    }
    if not quick:
        record["nvidia_smi_before"] = provenance.nvidia_smi()
    record["global"] = measure_global(default_sizes(limits["l2_bytes"]), steps, repeats, progress=progress)
    record["shared"] = measure_shared(steps=steps, repeats=repeats)
    record["ffma"] = measure_ffma(steps=2048 if quick else 8192, repeats=repeats)
    if progress:
        progress(f"  shared chase: {record['shared']['cycles_per_load']:.1f} cycles per load")
        for r in record["ffma"]["ilp"]:
            progress(f"  FFMA, {r['chains']} chain(s) in one warp: {r['cycles_per_ffma']:.2f} cycles per FFMA")
        for r in record["ffma"]["warps"]:
            progress(f"  FFMA, {r['warps']:>2} warp(s), one chain each: "
                     f"{r['warp_ffma_per_cycle']:.2f} warp-FFMAs per cycle")
    if not quick:
        record["nvidia_smi_after"] = provenance.nvidia_smi()
    record["seconds"] = round(time.time() - t0, 1)
    return record


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=16384, help="dependent loads per timed launch")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", default=None, help="JSON file (default results/latency-<device>.json)")
    args = p.parse_args(argv)
    if backend.SIMULATOR:
        sys.exit("python -m gemm_lessons.measure.latency times loads on the GPU, and this machine runs numba's "
                 "CUDA simulator (no GPU found, or GEMM_LESSONS_SIMULATOR=1): nothing would be measured. "
                 "Run it on a machine with a CUDA GPU; the primer shows the recorded results/latency-*.json.")
    limits = device_limits()
    print(f"{limits['sm_count']} SMs, L2 {_size(limits['l2_bytes'])}, "
          f"shared memory {_size(limits['shared_bytes_per_sm'])} per SM")
    record = collect(args.steps, args.repeats)
    record["command"] = "python -m gemm_lessons.measure.latency " + " ".join(argv if argv is not None else sys.argv[1:])
    out = args.out or record_path(record["device"]["name"])
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.write("\n")
    print(summary_markdown(record))
    print(f"wrote {out} in {record['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
