"""What more than one probe uses: the cp.async C functions, poisoned outputs, timing squares
against cuBLAS, opcode counts, and writing a probe's JSON record.

Probes import this as ``experiments._shared`` (they run as modules from the repository root,
``python3 -m experiments.<name>.<probe>``): no probe imports another, and none edits the module
search path.
"""
import collections
import json
import os
import time

import numpy as np

CP_ASYNC_CU = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cp_async", "cp_async.cu")


def cp_async_functions(waits=(0, 1)):
    """The device functions of cp_async/cp_async.cu, declared for numba (linked when a kernel that
    calls them compiles): {"cp4", "cp16", "commit", "wait<N>" for N in ``waits``}, and the cffi
    FFI whose from_buffer gives the pointers they take."""
    import cffi
    from numba import cuda

    sig = "int32(CPointer(float32), int64, CPointer(float32), int64)"
    out = {"ffi": cffi.FFI(),
           "cp4": cuda.declare_device("cp_async4", sig, link=CP_ASYNC_CU),
           "cp16": cuda.declare_device("cp_async16", sig, link=CP_ASYNC_CU),
           "commit": cuda.declare_device("cp_async_commit", "int32()", link=CP_ASYNC_CU)}
    for n in waits:
        out[f"wait{n}"] = cuda.declare_device(f"cp_async_wait{n}", "int32()", link=CP_ASYNC_CU)
    return out


def opcode_counts(kernel, keep):
    """{opcode: count} of a compiled kernel's SASS (compiler_facts.sass_opcodes) for the opcodes
    whose name before the first '.' is one of ``keep``; ``keep`` entries written with a '.'
    (e.g. "LDS.128") are matched by that base name too."""
    from gemm_lessons.instruments import compiler_facts

    bases = {k.split(".")[0] for k in keep}
    counts = compiler_facts.sass_opcodes(kernel) or {}
    return {op: n for op, n in counts.items() if op.split(".")[0] in bases}


LOOP_GROUPS = (("FFMA", ("FFMA",)), ("LDS", ("LDS",)), ("STS", ("STS",)), ("LDG", ("LDG",)), ("spill", ("STL", "LDL")))


def offline_loop(kernel, max_registers, argtypes=None):
    """A kernel compiled offline for sm_90 (instruments.offline_sass, no GPU): {"resources": what
    ptxas reports, "loop": its main loop's opcode counts, "groups": those sorted by loop_groups}."""
    from gemm_lessons.instruments import offline_sass

    sass, info = offline_sass.compile_sass(kernel, max_registers, argtypes=argtypes)
    loop = offline_sass.main_loop_opcodes(sass)
    return {"resources": offline_sass.ptxas_resources(info), "loop": dict(loop), "groups": loop_groups(loop)}


def loop_groups(counts):
    """SASS opcode counts (offline_sass.main_loop_opcodes) sorted into FFMA, shared loads (LDS),
    shared stores (STS), global loads (LDG), spill accesses (STL, LDL) and the rest ("other")."""
    out = collections.Counter()
    for op, n in counts.items():
        base = op.split(".")[0]
        out[next((g for g, bases in LOOP_GROUPS if base in bases), "other")] += n
    return dict(out)


def poisoned(M, N):
    """An M x N device array of problems.POISON, which check_product reports if any is left."""
    from numba import cuda

    from gemm_lessons.measure.problems import POISON

    return cuda.to_device(np.full((M, N), POISON, np.float32))


def time_squares(runs, sizes, rng, failures):
    """Rows of the record: for each n in ``sizes``, cuBLAS timed back to back, then each of ``runs``
    (name -> run(A, B, C)) checked on a poisoned C against float64 (a sample) and timed back to
    back, then cuBLAS again, each series with the GPU's clock and power sampled while it ran
    ("power"); % of cuBLAS against the mean of its two medians.  Wrong results are appended to
    ``failures``."""
    from numba import cuda

    from gemm_lessons.measure import cublas
    from gemm_lessons.runs.shapes import check_product, random_device_matrix

    def timed(fn):
        t, power = back_to_back_with_power(fn)
        return {**t.__dict__, "power": power}

    rows = []
    for n in sizes:
        A_d, A = random_device_matrix(n, n, rng)
        B_d, B = random_device_matrix(n, n, rng)
        row = {"shape": [n, n, n], "kernels": {}}
        C = cuda.device_array((n, n), np.float32)
        row["cublas_before"] = timed(lambda: cublas.sgemm(A_d, B_d, C))
        for name, run in runs.items():
            C = poisoned(n, n)
            run(A_d, B_d, C)
            ok, err, how = check_product(A, B, C.copy_to_host())
            if not ok:
                failures.append((name, n))
            t = timed(lambda run=run, C=C: run(A_d, B_d, C))
            row["kernels"][name] = dict(correct=ok, rel_error=err, checked=how, back_to_back=t)
        row["cublas_after"] = timed(lambda: cublas.sgemm(A_d, B_d, C))
        ref = (row["cublas_before"]["median_ms"] + row["cublas_after"]["median_ms"]) / 2
        print(f"{n}^3  cuBLAS {row['cublas_before']['median_ms']:.4f} / {row['cublas_after']['median_ms']:.4f} ms",
              flush=True)
        for name, k in row["kernels"].items():
            k["pct_cublas"] = 100 * ref / k["back_to_back"]["median_ms"]
            pw = k["back_to_back"]["power"] or {}
            print(f"   {name:26s} {k['back_to_back']['median_ms']:.4f} ms  {k['pct_cublas']:5.1f}%  ok {k['correct']}"
                  f"  clock {pw.get('clock_mhz')} power {pw.get('power_w')} events {pw.get('events')}", flush=True)
        rows.append(row)
        del A_d, B_d, C
    return rows


def checked_on_nan(fn, C, a, b):
    """Run ``fn`` (which writes the device array C) on C filled with NaN and check C against the
    float64 product of the host arrays ``a`` and ``b`` (runs.shapes.check_product: every element or
    a sample): {"correct", "rel_error", "checked"}."""
    from gemm_lessons.runs.shapes import check_product

    C.copy_to_device(np.full(C.shape, np.float32(np.nan)))
    fn()
    ok, err, how = check_product(a, b, C.copy_to_host())
    return {"correct": ok, "rel_error": err, "checked": how}


def back_to_back_with_power(fn, **kw):
    """(runs.shapes.back_to_back(fn, **kw), the GPU's clock and power sampled while it ran: a
    measure.power.PowerSampler summary, None without NVML)."""
    from gemm_lessons.measure.power import PowerSampler
    from gemm_lessons.runs.shapes import back_to_back

    with PowerSampler() as power:
        t = back_to_back(fn, **kw)
    return t, power.summary()


def timed_back_to_back(calls, order, label, repeats=10, max_s=2.5):
    """Each name of ``order`` (a key of ``calls``, name -> fn()) timed back to back
    (back_to_back_with_power), printed after ``label``: the runs,
    [{"name", "back_to_back_ms", "p10_p90", "power"}]."""
    runs = []
    for name in order:
        t, power = back_to_back_with_power(calls[name], repeats=repeats, max_s=max_s)
        run = {"name": name, "back_to_back_ms": t.median_ms, "p10_p90": [t.p10_ms, t.p90_ms], "power": power}
        runs.append(run)
        pw = run["power"] or {}
        print(f"{label} {name:36s} b2b {t.median_ms:.4f} ms  clock {pw.get('clock_mhz')} power {pw.get('power_w')} "
              f"events {pw.get('events')}", flush=True)
    return runs


def record(kind, fields, t_start=None):
    """A probe's record: ``kind``, the device, date, versions and commit, then ``fields`` (and the
    seconds since ``t_start`` when given)."""
    from gemm_lessons.measure import provenance
    from gemm_lessons.measure.device import device_info

    out = {"kind": kind, "device": device_info().name, "date": provenance.now(), "versions": provenance.versions(),
           "git_commit": provenance.git_commit(), **fields}
    if t_start is not None:
        out["seconds"] = round(time.perf_counter() - t_start, 1)
    return out


def batch_issue_us(fn, calls, batches, warmup=20):
    """Host time per call in µs of ``batches`` batches of ``calls`` calls of ``fn`` issued back to
    back (nothing waits for the GPU inside a batch; a synchronize between batches), sorted."""
    from numba import cuda

    for _ in range(warmup):
        fn()
    cuda.synchronize()
    per = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        per.append((time.perf_counter() - t0) / calls * 1e6)
        cuda.synchronize()
    return sorted(per)


def write_record(name, rec, out, kind="probe", run=None):
    """Write ``rec`` as JSON where results.experiment(name, kind, its device, run) puts it in the
    directory ``out`` (nothing when ``out`` is None: the probe printed what it found); returns the
    path or None.  Keep a record by copying it into experiments/<name>/."""
    from gemm_lessons.records import results

    if not out:
        return None
    path = results.experiment(name, kind, rec["device"], run=run, directory=out)
    os.makedirs(out, exist_ok=True)
    with open(path, "w") as fh:
        json.dump(rec, fh, indent=1)
    print("wrote", path)
    return path
