"""python -m gemm_lessons.runs.limiter: the limiter model's inputs and its check on a GPU.

    python -m gemm_lessons.runs.limiter measure [--out DIR]   # the GPU's ceilings and every case timed,
                                                             # with clock and power -> limiter-<device>.json
    ncu --clock-control none --print-units base --csv \\
        --metrics $(python -m gemm_lessons.runs.limiter metrics) \\
        python -m gemm_lessons.runs.limiter run > ncu-limiter-<device>.csv   # one launch per case
    python -m gemm_lessons.runs.limiter predict [--out DIR]   # the model against the measurement (no GPU needed)

``measure`` records the machine (SMs; the SM clock NVML read while the kernels ran; a float4 copy's
rate through DRAM; the DRAM latency of a dependent load chain) and
times every case (CASES: the SGEMM rungs at 4096^3, the transposes at 8192^2) with the SM clock,
power and clock-event reasons sampled during its timing.  ``predict`` reads that record and the
profile: the profiler counts each case's work (gemm_lessons.model.limiter.Work) and rates the L2's
peak (a copy of L2-resident arrays is too short to time with events), the model predicts
its time from the machine, and the record gets, per case, every ceiling's time, the prediction,
the measurement, the binding ceiling and the profiler's busiest unit.
"""
import argparse
import json
import os
import statistics
import sys

SGEMM_SIZE = 4096
TRANSPOSE_SIZE = 8192
SGEMM_CASES = ["naive", "naive_uncoalesced", "smem_tile", "smem_tile16", "reg1d", "reg2d", "vec", "vec_split",
               "dbuf_one_buffer", "dbuf", "warptile"]
TRANSPOSE_CASES = ["naive", "smem_tile", "smem_padded", "smem_padded_32x8", "wide"]
# bytes each thread of a transpose loads before it stores (Little's law: what an SM keeps in flight)
TRANSPOSE_LOAD_BYTES = {"naive": 4, "smem_tile": 4, "smem_padded": 4, "smem_padded_32x8": 16, "wide": 64,
                        "copy": 16}
DRAM_CHASE_BYTES = 1 << 30  # a dependent chain through 1 GiB: every load from DRAM

UTILIZATION = ["sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
               "smsp__issue_active.avg.pct_of_peak_sustained_active",
               "l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed",
               "lts__t_sectors.avg.pct_of_peak_sustained_elapsed",
               "dram__throughput.avg.pct_of_peak_sustained_elapsed"]
METRICS = ["gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second", "smsp__inst_executed.sum",
           "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
           "lts__t_bytes.sum", "dram__bytes_read.sum", "dram__bytes_write.sum", "launch__grid_size",
           "launch__block_size", "launch__occupancy_limit_blocks", "launch__occupancy_limit_registers",
           "launch__occupancy_limit_shared_mem", "launch__occupancy_limit_warps"] + UTILIZATION


def cases():
    """[(case name, kind, rung name)] in the order ``run`` launches them."""
    return ([(f"sgemm {n}", "sgemm", n) for n in SGEMM_CASES] + [("sgemm cublas", "sgemm", "cublas")]
            + [(f"transpose {n}", "transpose", n) for n in TRANSPOSE_CASES]
            + [("transpose cublas_sgeam", "transpose", "cublas_sgeam"), ("copy", "copy", "copy")])


def _launchers():
    """case name -> (f() launching it once, bytes or FLOP it moves/does, unit)."""
    import numpy as np
    from numba import cuda

    from gemm_lessons.kernels import device_copy, ladder
    from gemm_lessons.measure import cublas, problems

    rng = np.random.default_rng(0)
    n = SGEMM_SIZE
    A = cuda.to_device(problems.random_matrix(n, n, rng))
    B = cuda.to_device(problems.random_matrix(n, n, rng))
    C = cuda.device_array((n, n), np.float32)
    t = TRANSPOSE_SIZE
    src = cuda.to_device(problems.random_matrix(t, t, rng))
    dst = cuda.device_array((t, t), np.float32)
    rungs = {**ladder.SGEMM, **ladder.VARIANTS}
    out = {}
    for case, kind, name in cases():
        if kind == "sgemm":
            fn = cublas.sgemm if name == "cublas" else rungs[name]
            out[case] = (lambda fn=fn: fn(A, B, C), 2 * n ** 3, "FLOP")
        elif kind == "transpose":
            fn = cublas.transpose if name == "cublas_sgeam" else ladder.TRANSPOSE[name]
            out[case] = (lambda fn=fn: fn(src, dst), 8 * t * t, "B")
        else:
            out[case] = (lambda: device_copy.copy_kernel(src, dst), 8 * t * t, "B")
    return out


def _copy_gbs(side, repeats=200):
    """GB/s (bytes read + written) of the float4 copy on side x side float32 arrays, back to back."""
    import numpy as np
    from numba import cuda

    from gemm_lessons.kernels import device_copy
    from gemm_lessons.measure.timing import time_gpu

    src = cuda.to_device(np.ones((side, side), np.float32))
    dst = cuda.device_array((side, side), np.float32)
    t = time_gpu(lambda: device_copy.copy_kernel(src, dst), repeats=repeats)
    return 8 * side * side / (t.median_ms * 1e-3) / 1e9


def measure(out_dir):
    from gemm_lessons.measure import latency, provenance
    from gemm_lessons.measure.device import device_info
    from gemm_lessons.measure.power import PowerSampler
    from gemm_lessons.measure.timing import time_gpu
    from gemm_lessons.records import results

    dev = device_info()
    rows = []
    with PowerSampler() as whole:
        launchers = _launchers()
        for case, (fn, amount, unit) in launchers.items():
            with PowerSampler() as s:
                t = time_gpu(fn, repeats=30)
            rows.append({"case": case, "median_ms": t.median_ms, "p10_ms": t.p10_ms, "p90_ms": t.p90_ms,
                         "rate": amount / (t.median_ms * 1e-3) / (1e12 if unit == "FLOP" else 1e9),
                         "rate_unit": "TFLOPS" if unit == "FLOP" else "GB/s", "power": s.summary()})
            print(f"{case:28s} {t.median_ms:9.4f} ms  {rows[-1]['rate']:9.2f} {rows[-1]['rate_unit']}", flush=True)
        dram_gbs = _copy_gbs(TRANSPOSE_SIZE, repeats=50)
        chase = latency.measure_global([DRAM_CHASE_BYTES], progress=None)[0]
    held = [r["power"]["clock_mhz"]["median"] for r in rows if r.get("power")]
    record = {
        "command": "python -m gemm_lessons.runs.limiter measure", "date": provenance.now(),
        "device": dev.as_dict(), "git_commit": provenance.git_commit(), "versions": provenance.versions(),
        "machine": {
            "sm_count": dev.sm_count, "fp32_lanes_per_sm": dev.fp32_lanes_per_sm,
            "clock_mhz": statistics.median(held) if held else dev.clock_mhz,
            "clock_source": "NVML: median of the cases' median SM clocks while timed" if held
            else "the driver's boost clock (NVML not available)",
            "dram_gbs": dram_gbs, "dram_gbs_source": f"measured: float4 copy {TRANSPOSE_SIZE}^2, read + written",
            "l2_gbs": None, "l2_gbs_source": "read off the profile by predict (l2_peak_gbs)",
            "dram_latency_ns": chase["ns_per_load"], "dram_latency_cycles": chase["cycles_per_load"],
            "dram_latency_source": f"measured: dependent loads through {DRAM_CHASE_BYTES >> 20} MiB",
        },
        "power_whole_run": whole.summary(), "power_unavailable": whole.unavailable,
        "timings": rows,
    }
    path = results.path_for("limiter", dev.name, directory=out_dir)
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
    print("wrote", path)


def run():
    """Each case launched once (after one warm-up launch each, so that compiling stays outside)."""
    from numba import cuda

    launchers = _launchers()
    for fn, _, _ in launchers.values():
        fn()
    cuda.synchronize()
    from numba.cuda import profile_start, profile_stop
    profile_start()
    for case, (fn, _, _) in launchers.items():
        fn()
        cuda.synchronize()
        print("launched", case, file=sys.stderr)
    profile_stop()


def machine_of(record):
    from gemm_lessons.model.limiter import DOCUMENTED, Machine

    m = record["machine"]
    sources = {k[:-len("_source")]: v for k, v in m.items() if k.endswith("_source")}
    sources.update({k: v[1] for k, v in DOCUMENTED.items()})
    return Machine(record["device"]["name"], m["sm_count"], m["clock_mhz"], m["dram_gbs"], m["l2_gbs"],
                   m["dram_latency_ns"], m["fp32_lanes_per_sm"] or 128, sources=sources)


def work_of(case, launch):
    """The model's Work of one profiled launch (ncu's counters, base units)."""
    from gemm_lessons.model.limiter import Work

    block = int(launch["launch__block_size"])
    per_sm = int(min(launch[k] for k in ("launch__occupancy_limit_blocks", "launch__occupancy_limit_registers",
                                         "launch__occupancy_limit_shared_mem", "launch__occupancy_limit_warps")))
    in_flight = None
    kind, _, name = case.partition(" ")
    name = name or kind
    if kind in ("transpose", "copy") and name in TRANSPOSE_LOAD_BYTES:
        in_flight = TRANSPOSE_LOAD_BYTES[name] * block * per_sm
    return Work(ffma=launch["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"],
                warp_instructions=launch["smsp__inst_executed.sum"],
                shared_wavefronts=launch["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"],
                l2_bytes=launch["lts__t_bytes.sum"],
                dram_bytes=launch["dram__bytes_read.sum"] + launch["dram__bytes_write.sum"],
                blocks=int(launch["launch__grid_size"]), blocks_per_sm=per_sm, in_flight_per_sm=in_flight)


def l2_peak_gbs(launches, busy_pct=20):
    """(GB/s, where it comes from): the L2's peak as Nsight Compute rates it, from the launches that
    kept it at least ``busy_pct``% busy (their bytes per second over their % of peak; a copy of
    L2-resident arrays timed with events is dominated by the launch)."""
    peaks = [launch["lts__t_bytes.sum"] / (launch["gpu__time_duration.sum"] * 1e-9) / 1e9
             / (launch[UTILIZATION[3]] / 100) for launch in launches if launch[UTILIZATION[3]] >= busy_pct]
    if not peaks:
        raise SystemExit(f"no profiled launch kept the L2 {busy_pct}% busy: its peak cannot be read off the profile")
    return statistics.median(peaks), (f"Nsight Compute: the median of lts__t_bytes per second over "
                                      f"{UTILIZATION[3]} of the {len(peaks)} launches at least {busy_pct}% busy")


def predict(out_dir, device=None):
    from gemm_lessons.model import limiter
    from gemm_lessons.records import results

    if device is None:  # the one device measured in out_dir (else the reference GPU)
        measured = results.files("limiter", out_dir)
        path = measured[0] if len(measured) == 1 else results.path_for("limiter", results.REFERENCE_DEVICE, directory=out_dir)
    else:
        path = results.path_for("limiter", device, directory=out_dir)
    with open(path) as f:
        record = json.load(f)
    name = record["device"]["name"]
    launches = results.ncu_launches(results.path_for("ncu-limiter", name, directory=out_dir))
    names = [c for c, _, _ in cases()]
    if len(launches) != len(names):
        sys.exit(f"the profile has {len(launches)} launches, the cases are {len(names)}: profile again")
    record["machine"]["l2_gbs"], record["machine"]["l2_gbs_source"] = l2_peak_gbs(launches)
    machine = machine_of(record)
    timed = {r["case"]: r for r in record["timings"]}
    rows = []
    for case, launch in zip(names, launches):
        p = limiter.predict(work_of(case, launch), machine)
        util = {k: launch[m] for k, m in limiter.PROFILER_UNITS.items()}
        measured = timed[case]["median_ms"] * 1e-3
        rows.append({"case": case, "kernel": launch["kernel"][:80],
                     "ceilings_ms": {c.name: c.seconds * 1e3 for c in p.ceilings},
                     "binding": p.binding, "waves": p.waves, "tail": p.tail, "predicted_ms": p.seconds * 1e3,
                     "measured_ms": measured * 1e3, "measured_over_predicted": measured / p.seconds,
                     "profiler_utilization_pct": util, "profiler_busiest": limiter.busiest(util),
                     "profiled_ms": launch["gpu__time_duration.sum"] / 1e6,  # ns
                     "profiled_clock_mhz": launch["sm__cycles_elapsed.avg.per_second"] / 1e6})
    record["model"] = {"machine": {k: getattr(machine, k) for k in ("sm_count", "clock_mhz", "dram_gbs", "l2_gbs",
                                                                      "dram_latency_ns", "fp32_lanes_per_sm",
                                                                      "issue_per_sm_cycle",
                                                                      "shared_wavefronts_per_sm_cycle")},
                       "sources": machine.sources, "latency_duty": limiter.LATENCY_DUTY, "busy_pct": limiter.BUSY,
                       "cases": rows}
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
    print(f"{'case':26s} {'binding':>8s} {'busiest':>8s} {'predicted':>10s} {'measured':>10s} {'ratio':>6s}")
    for r in rows:
        print(f"{r['case']:26s} {r['binding']:>8s} {r['profiler_busiest']:>8s} {r['predicted_ms']:10.4f} "
              f"{r['measured_ms']:10.4f} {r['measured_over_predicted']:6.2f}")
    print("wrote", path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("step", choices=["measure", "metrics", "run", "predict"])
    p.add_argument("--out", default=None, help="the results directory (default: the repo's results/)")
    p.add_argument("--device", default=None, help="predict: the device whose records to read")
    args = p.parse_args(argv)
    if args.step == "metrics":
        print(",".join(METRICS))
        return 0
    from gemm_lessons.records import results

    out = args.out or results.RESULTS_DIR
    if args.step == "predict":
        predict(out, args.device)
        return 0
    from gemm_lessons.core import backend  # (python -m imported the package first: it chose GPU or simulator)

    if backend.SIMULATOR:
        sys.exit(f"python -m gemm_lessons.runs.limiter {args.step} needs a GPU (this machine runs the CUDA simulator)")
    if args.step == "measure":
        os.makedirs(out, exist_ok=True)
        measure(out)
    else:
        run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
