"""Same-run speed and compiler facts of the rewritten lessons 05-08 kernels against the
generated (string-template) kernels they replaced.

    python3 tools/compare_rewrite.py .legacy [--sizes 4096 8192] [--out results/]

``.legacy`` holds the old modules as a package ``legacy_kernels`` (vec.py, dbuf.py,
warptile.py as of the commit in .legacy/COMMIT, with their package imports made absolute).
Every pair is timed on the same inputs in one process, next to cuBLAS, and checked against it.
"""
import argparse
import datetime
import json
import os
import sys
from dataclasses import replace

import numpy as np

import gemm_lessons  # noqa: F401  (chooses the GPU before numba.cuda is imported)
from gemm_lessons.core import backend
from gemm_lessons.measure import cublas, problems, provenance
from gemm_lessons.instruments import compiler_facts
from gemm_lessons.kernels import ladder
from gemm_lessons.records import results
from gemm_lessons.model.counting import sgemm_flops
from gemm_lessons.measure.timing import time_gpu
from numba import cuda

PAIRS = ["vec", "vec_split", "vec_unrolled_k", "dbuf_indexed", "dbuf", "dbuf_one_buffer",
         "dbuf_short_circuit", "dbuf_select", "warptile"]


def legacy_rungs(legacy):
    """name -> (launch, kernel) of the generated kernels."""
    vec, dbuf, warptile = legacy.vec, legacy.dbuf, legacy.warptile

    def config(cfg):
        k = warptile.kernel_for(cfg)
        return (lambda A, B, C: warptile.sgemm(A, B, C, kernel=k)), k

    return {
        "vec": (lambda A, B, C: vec.sgemm(A, B, C, kernel=vec.sgemm_vec), vec.sgemm_vec),
        "vec_split": (lambda A, B, C: vec.sgemm(A, B, C, kernel=vec.sgemm_vec_split), vec.sgemm_vec_split),
        "vec_unrolled_k": (lambda A, B, C: vec.sgemm(A, B, C, kernel=vec.sgemm_vec_unrolled_k),
                           vec.sgemm_vec_unrolled_k),
        "dbuf_indexed": (lambda A, B, C: dbuf.sgemm_indexed(A, B, C), dbuf.sgemm_dbuf_indexed),
        "dbuf": config(dbuf.DBUF_CONFIG),
        "dbuf_one_buffer": config(replace(dbuf.DBUF_CONFIG, stages=1)),
        "dbuf_short_circuit": config(replace(dbuf.DBUF_CONFIG, guard="and")),
        "dbuf_select": config(replace(dbuf.DBUF_CONFIG, guard="select")),
        "warptile": config(warptile.TileConfig()),
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("legacy", help="folder holding the legacy_kernels package")
    p.add_argument("--sizes", type=int, nargs="*", default=[4096, 8192])
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--out", default=results.RESULTS_DIR)
    args = p.parse_args(argv)
    if backend.SIMULATOR:
        sys.exit("this compares speeds: run it on a machine with a CUDA GPU")
    sys.path.insert(0, os.path.abspath(args.legacy))
    import legacy_kernels.dbuf
    import legacy_kernels.vec
    import legacy_kernels.warptile

    old = legacy_rungs(legacy_kernels)
    new = {**ladder.SGEMM, **ladder.VARIANTS}
    rng = np.random.default_rng(5)
    rows = []
    facts = {}
    for s in args.sizes:
        A = cuda.to_device(problems.random_matrix(s, s, rng))
        B = cuda.to_device(problems.random_matrix(s, s, rng))
        C = cuda.device_array((s, s), np.float32)
        cublas.sgemm(A, B, C)
        ref = C.copy_to_host()
        t = time_gpu(lambda: cublas.sgemm(A, B, C), repeats=args.repeats)
        cub = sgemm_flops(s, s, s) / t.median_ms / 1e6
        rows.append({"kernel": "cublas", "which": "cuBLAS", "size": s, "gflops": cub})
        for name in PAIRS:
            for which, fn in (("generated", old[name][0]), ("rewritten", lambda A, B, C, r=new[name]: r(A, B, C))):
                C.copy_to_device(np.full((s, s), problems.POISON, np.float32))
                t = time_gpu(lambda: fn(A, B, C), repeats=args.repeats)
                out = C.copy_to_host()
                err = float(np.linalg.norm(out.astype(np.float64) - ref) / np.linalg.norm(ref))
                flop = sgemm_flops(s, s, s)
                rows.append({"kernel": name, "which": which, "size": s, "median_ms": t.median_ms,
                             "gflops": flop / t.median_ms / 1e6, "gflops_p10": flop / t.p90_ms / 1e6,
                             "gflops_p90": flop / t.p10_ms / 1e6, "pct_cublas": 100 * flop / t.median_ms / 1e6 / cub,
                             "rel_error_vs_cublas": err, "correct": bool(np.isfinite(out).all() and err < 1e-4),
                             "host_bound": t.host_bound})
                print(f"{s:>6} {name:<20} {which:<10} {rows[-1]['gflops'] / 1e3:7.2f} TFLOPS "
                      f"{rows[-1]['pct_cublas']:6.1f}% cuBLAS  err {err:.1e}", flush=True)
    for name in PAIRS:
        facts[name] = {"generated": compiler_facts.kernel_facts(old[name][1]),
                       "rewritten": compiler_facts.kernel_facts(new[name].kernel)}
    ratios = {}
    for s in args.sizes:
        for name in PAIRS:
            g, r = ([x["gflops"] for x in rows if x["size"] == s and x["kernel"] == name and x["which"] == w][0]
                    for w in ("generated", "rewritten"))
            ratios[f"{name}@{s}"] = r / g
    record = {"what": __doc__.splitlines()[0], "device": gemm_lessons.device_info().as_dict(),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "versions": provenance.versions(), "git_commit": provenance.git_commit(),
              "legacy_commit": open(os.path.join(args.legacy, "COMMIT")).read().strip(),
              "rows": rows, "rewritten_over_generated": ratios, "compiler": facts}
    path = results.path_for("rewrite", record["device"]["name"], directory=args.out)
    with open(path, "w") as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.write("\n")
    worst = min(ratios.values())
    print(f"rewritten / generated: {min(ratios.values()):.4f} .. {max(ratios.values()):.4f}; wrote {path}")
    return 0 if worst >= 0.99 and all(r.get("correct", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
