"""Why lesson 03's 64x64 variant of reg1d is no faster than 32x32 shared-memory tiles.

On a GPU, from the repository root (GEMM_LESSONS_SIMULATOR unset):

    python3 -m experiments.reg1d_64x64.probe time DIR/timings.json   # each kernel timed at 4096^3, clock and power
    ncu --clock-control none --print-units base --csv --profile-from-start off \\
        --metrics "$(python3 -m experiments.reg1d_64x64.probe metrics)" \\
        python3 -m experiments.reg1d_64x64.probe run > DIR/ncu.csv     # one profiled launch of each

then anywhere: ``python3 -m experiments.reg1d_64x64.probe predict DIR`` applies the limiter model
(gemm_lessons.model.limiter) with the machine of results/limiter-nvidia-h200.json, the record
lesson 03's Why table reads, to each kernel's profiled work, and writes
DIR/reg1d-64x64-probe-<device>.json.  The profile also holds the warp stall reasons (cycles a warp
waited per instruction issued, by reason).
"""
import json
import os
import sys

KERNELS = ["smem_tile", "reg1d", "reg1d_64x64"]
N = 4096
STALLS = "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio"


def _launchers():
    import numpy as np
    from numba import cuda

    from gemm_lessons.kernels import ladder

    rungs = {**ladder.SGEMM, **ladder.VARIANTS}
    g = np.random.default_rng(0)
    A, B = (cuda.to_device(g.standard_normal((N, N), dtype=np.float32)) for _ in range(2))
    C = cuda.device_array((N, N), np.float32)
    return [lambda k=k: rungs[k](A, B, C) for k in KERNELS]


def time_(path):
    from gemm_lessons.measure.power import PowerSampler
    from gemm_lessons.measure.timing import time_gpu

    out = []
    for k, f in zip(KERNELS, _launchers()):
        with PowerSampler() as s:
            t = time_gpu(f, repeats=30)
        out.append({"kernel": k, "median_ms": t.median_ms, "p10_ms": t.p10_ms, "p90_ms": t.p90_ms,
                    "power": s.summary()})
        print(k, t.median_ms, flush=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


def run():
    from numba import cuda

    launchers = _launchers()
    for f in launchers:  # compile outside the profile
        f()
    cuda.synchronize()
    cuda.profile_start()
    for f in launchers:
        f()
        cuda.synchronize()
    cuda.profile_stop()


def predict(directory, device="NVIDIA H200"):
    from gemm_lessons.model import limiter
    from gemm_lessons.records import results
    from gemm_lessons.runs.limiter import machine_of, work_of

    with open(results.path_for("limiter", device)) as f:
        machine = machine_of(json.load(f))
    with open(os.path.join(directory, "timings.json")) as f:
        timed = {r["kernel"]: r for r in json.load(f)}
    launches = results.ncu_launches(os.path.join(directory, "ncu.csv"))
    assert len(launches) == len(KERNELS), f"{len(launches)} launches profiled, {len(KERNELS)} kernels"
    rows = []
    for name, launch in zip(KERNELS, launches):
        work = work_of(f"sgemm {name}", launch)
        p = limiter.predict(work, machine)
        warp_fmas = work.ffma / 32
        util = {k: launch[m] for k, m in limiter.PROFILER_UNITS.items()}
        stalls = {k.split("stalled_")[1].split("_per_issue")[0]: v for k, v in launch.items()
                  if k.startswith("smsp__average_warps_issue_stalled_") and isinstance(v, float)}
        rows.append({"kernel": name, "ceilings_ms": {c.name: c.seconds * 1e3 for c in p.ceilings},
                     "binding": p.binding, "tail": p.tail, "predicted_ms": p.seconds * 1e3,
                     "measured_ms": timed[name]["median_ms"], "p10_ms": timed[name]["p10_ms"],
                     "p90_ms": timed[name]["p90_ms"], "clock_mhz": timed[name]["power"]["clock_mhz"]["median"],
                     "per_warp_fma": {"instructions": work.warp_instructions / warp_fmas,
                                      "shared_wavefronts": work.shared_wavefronts / warp_fmas},
                     "blocks_per_sm": work.blocks_per_sm,
                     "profiler_utilization_pct": util, "profiler_busiest": limiter.busiest(util),
                     "stalls_per_issue": dict(sorted(stalls.items(), key=lambda kv: -kv[1]))})
        r = rows[-1]
        print(f"{name:12s} binding {r['binding']:7s} predicted {r['predicted_ms']:6.2f} ms, measured "
              f"{r['measured_ms']:6.2f} ms; per warp-FMA {r['per_warp_fma']['instructions']:.2f} instructions, "
              f"{r['per_warp_fma']['shared_wavefronts']:.3f} wavefronts; busiest {r['profiler_busiest']}")
    record = {"command": "python3 -m experiments.reg1d_64x64.probe time / run (under ncu) / predict",
              "device": device, "size": N, "machine": f"results/{os.path.basename(results.path_for('limiter', device))}",
              "kernels": rows}
    path = os.path.join(directory, f"reg1d-64x64-probe-{results.slug(device)}.json")
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
    print("wrote", path)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[0] == "metrics":
        from gemm_lessons.runs.limiter import METRICS
        print(",".join(METRICS + [STALLS]))
    elif argv[0] == "time":
        time_(argv[1])
    elif argv[0] == "run":
        run()
    elif argv[0] == "predict":
        predict(argv[1])


if __name__ == "__main__":
    main()
