"""python -m gemm_lessons.runs.power: the SM clock and the power each rung runs at, launched back to
back for a few seconds, read through NVML (results/power-<device>.json).

The bench and the limiter run sample NVML while they time a kernel, but their window also holds the
kernel's first call (numba compiles it then, with the GPU idle) and lasts well under a second for a
fast rung, while NVML's power reading on Ampere and newer GPUs (GA100 excepted) is an average over
the last second (NVML's documentation of nvmlDeviceGetPowerUsage).  Here each kernel is compiled and
warmed first, then launched back to back for ``SECONDS``; only the samples taken after the first
``SETTLE_S`` count, when the one-second average holds nothing but this kernel.

    python -m gemm_lessons.runs.power [--out DIR] [--seconds S]

``measure`` needs a GPU; ``summarize`` (the arithmetic on the samples) and ``load`` do not.
"""
import argparse
import json
import os
import statistics
import sys

SIZE = (4096, 4096, 4096)
SECONDS = 4.0     # each kernel, back to back
SETTLE_S = 1.5    # samples before this are left out: NVML's power is a one-second average
INTERVAL_S = 0.05


def kernels():
    """The rungs of the ladder, in order, then cuBLAS: what ``measure`` runs by default."""
    from gemm_lessons.kernels import ladder

    return list(ladder.SGEMM) + ["cublas"]


def summarize(samples, settle_s=SETTLE_S, power_limit_w=None):
    """The steady part of one kernel's samples, ``samples`` = [(seconds since its first timed
    launch, SM clock MHz, power W, clock-event bit mask)], as a dict: SM clock median and minimum,
    power median and maximum, the reasons NVML gave for holding the clock back (gpu_idle left out),
    and how many samples counted.  None when no sample is left after ``settle_s``."""
    from gemm_lessons.measure.power import event_names

    kept = [s for s in samples if s[0] >= settle_s]
    if not kept:
        return None
    clocks, watts = [s[1] for s in kept], [s[2] for s in kept]
    mask = 0
    for s in kept:
        mask |= s[3]
    return {"samples": len(kept), "clock_mhz": {"median": statistics.median(clocks), "min": min(clocks)},
            "power_w": {"median": round(statistics.median(watts), 1), "max": round(max(watts), 1)},
            "power_limit_w": power_limit_w, "events": [n for n in event_names(mask) if n != "gpu_idle"]}


def measure(names=None, size=SIZE, seconds=SECONDS, settle_s=SETTLE_S, progress=print):
    """Each of ``names`` (rungs of the ladder or "cublas") at ``size``, back to back for ``seconds``
    after one warm call: a row per kernel with ``summarize``'s facts, the calls made and the
    TFLOPS they averaged (wall clock, first timed launch to the last one's end), and every sample
    (``trace``: seconds, SM clock MHz, watts, clock-event bit mask)."""
    import time

    import numpy as np
    from numba import cuda

    from gemm_lessons.kernels import ladder
    from gemm_lessons.measure import cublas, problems
    from gemm_lessons.measure.power import PowerSampler

    M, N, K = size
    rng = np.random.default_rng(0)
    A = cuda.to_device(problems.random_matrix(M, K, rng))
    B = cuda.to_device(problems.random_matrix(K, N, rng))
    C = cuda.device_array((M, N), np.float32)
    rungs = {**ladder.SGEMM, **ladder.VARIANTS}
    rows = []
    for name in names or kernels():
        fn = cublas.sgemm if name == "cublas" else rungs[name]
        fn(A, B, C)  # compiles it (numba) and starts cuBLAS: outside the samples
        cuda.synchronize()
        sampler = PowerSampler(interval_s=INTERVAL_S)
        calls = 0
        with sampler:
            start = time.perf_counter()
            while time.perf_counter() - start < seconds:
                for _ in range(8):
                    fn(A, B, C)
                calls += 8
                cuda.synchronize()  # keeps the queue short, so the loop ends when the GPU does
            wall = time.perf_counter() - start
        t0 = sampler.samples[0][0] if sampler.samples else 0.0
        facts = summarize([(t - t0, *rest) for t, *rest in sampler.samples], settle_s, sampler.power_limit_w)
        row = {"kernel": name, "calls": calls, "seconds": wall, "tflops": 2 * M * N * K * calls / wall / 1e12,
               "power": facts, "trace": [[round(t - t0, 3), *rest] for t, *rest in sampler.samples]}
        if facts is None:
            row["unavailable"] = sampler.unavailable or "no sample after the settling time"
        rows.append(row)
        if progress:
            p = facts or {}
            progress(f"{name:10s} {row['tflops']:6.2f} TFLOPS  clock {p.get('clock_mhz')}  W {p.get('power_w')}  "
                     f"events {p.get('events')}")
    return rows


def load(device=None, directory=None):
    """The recorded clock-and-power run of ``device`` (default: the newest there is), a dict, or None."""
    from gemm_lessons.records import results

    directory = directory or results.RESULTS_DIR
    paths = ([results.path_for("power", device, directory=directory)] if device
             else results.files("power", directory))
    paths = [p for p in paths if os.path.exists(p)]
    if not paths:
        return None
    with open(paths[-1]) as f:
        return json.load(f)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=None, help="the results directory (default: the repo's results/)")
    p.add_argument("--seconds", type=float, default=SECONDS, help="seconds of back-to-back launches per kernel")
    args = p.parse_args(argv)
    from gemm_lessons.core import backend

    if backend.SIMULATOR:
        sys.exit("python -m gemm_lessons.runs.power needs a GPU (this machine runs the CUDA simulator)")
    from gemm_lessons.measure import provenance
    from gemm_lessons.measure.device import device_info
    from gemm_lessons.records import results

    dev = device_info()
    rows = measure(seconds=args.seconds)
    record = {"command": "python -m gemm_lessons.runs.power", "date": provenance.now(), "device": dev.as_dict(),
              "git_commit": provenance.git_commit(), "versions": provenance.versions(),
              "size": list(SIZE), "seconds": args.seconds, "settle_s": SETTLE_S, "interval_s": INTERVAL_S,
              "rows": rows}
    out = args.out or results.RESULTS_DIR
    os.makedirs(out, exist_ok=True)
    path = results.path_for("power", dev.name, directory=out)
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
    print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
