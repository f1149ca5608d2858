"""How long numba takes to compile the unrolled kernels (lessons 05-08), with and without
@unrolled's register arrays (one variable per element of a constant-indexed local array), and
whether the machine code is the same.

    GEMM_LESSONS_SIMULATOR=0 python -m experiments.compile_time.compile_time [--out experiments/compile_time/]
    (from the repository root; the table, text for people, is kept in experiments/compile_time/)

Needs numba's libnvvm and, for the SASS comparison, ptxas and cuobjdump on PATH (no GPU).  Each
kernel is expanded again from its undecorated function both ways and compiled to PTX
(numba's typing and lowering, then NVVM); the seconds are wall-clock on this machine, one
compile each, in a fresh process per compile so that nothing is cached.
"""
import argparse
import concurrent.futures
import datetime
import multiprocessing
import os
import platform
import time

KERNELS = ["vec", "vec_unrolled_k", "dbuf", "warptile"]


def _compile(name, scalarize):
    import gemm_lessons  # noqa: F401
    from numba import cuda, types

    from gemm_lessons.kernels import ladder
    from gemm_lessons.instruments import offline_sass
    from gemm_lessons.core import unroll

    if not scalarize:
        unroll._RegisterArrays.scalarize = lambda self, node: None
    kernel = ladder.compiled_kernels()[name]
    original = kernel.py_func.__unrolled_from__
    fn = unroll.unrolled(original)
    arr = types.Array(types.float32, 2, "C")
    t0 = time.perf_counter()
    ptx, _ = cuda.compile_ptx(fn, types.void(arr, arr, arr, types.float32, types.float32), cc=(9, 0))
    seconds = time.perf_counter() - t0
    facts = None
    if offline_sass.missing_toolchain() is None:
        cap = getattr(getattr(kernel, "config", None), "max_registers", None)
        facts = offline_sass.sass_facts(type("Kernel", (), {"py_func": fn}), max_registers=cap)
    return name, scalarize, seconds, facts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=None, help="write the table to <out>/compile-time-<host>.txt")
    parser.add_argument("--kernels", nargs="*", default=KERNELS, choices=KERNELS)
    args = parser.parse_args()
    jobs = [(name, s) for name in args.kernels for s in (False, True)]
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=min(len(jobs), os.cpu_count() or 1),
                                                mp_context=ctx) as pool:
        done = list(pool.map(_compile, *zip(*jobs)))
    rows = {(n, s): (sec, f) for n, s, sec, f in done}
    import numba
    lines = [f"numba compile time (typing + lowering + NVVM, to PTX for sm_90), {datetime.date.today()}, "
             f"host {platform.node() or '?'} ({os.cpu_count()} CPUs, {len(jobs)} compiles in parallel), "
             f"numba {numba.__version__}",
             "", f"{'kernel':16} {'arrays s':>9} {'variables s':>12} {'speed-up':>9}  same SASS"]
    for name in args.kernels:
        (t_arr, f_arr), (t_var, f_var) = rows[(name, False)], rows[(name, True)]
        same = "n/a (no ptxas)" if f_arr is None else ("yes" if f_arr == f_var else f"NO: {f_arr} vs {f_var}")
        lines.append(f"{name:16} {t_arr:9.1f} {t_var:12.1f} {t_arr / t_var:8.1f}x  {same}")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, f"compile-time-{platform.node() or 'host'}.txt"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
