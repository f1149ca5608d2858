"""The any-shape and wide 128x128 kernels' main loops, instruction by instruction, compiled offline
(no GPU): what the any-shape kernel's extra instructions per FFMA are.

    GEMM_LESSONS_SIMULATOR=0 python3 -m experiments.shape_classes.sass_loop [--out DIR]
    -> DIR/sass-loop-offline.json (kept in experiments/shape_classes/)
    GEMM_LESSONS_SIMULATOR=0 python3 -m experiments.shape_classes.sass_loop --interior [--out DIR]
    -> DIR/sass-loop-interior-offline.json: the any-shape kernel and ragged_kernels.make_interior,
       and make_grouped (grouped_wide: with wide_inside; grouped_a_wide: with a_wide), 128x128 and 64x64 (their first loop is the
       unpredicated one)

Each kernel is compiled as gl.sgemm launches it (gemm_lessons.library.device_arrays.kernel_spec:
C-contiguous arrays, the 128-register cap) for sm_90 through ptxas (instruments/offline_sass;
the pip CUDA compiler of the offline-sass extra first on PATH); the main loop is the code between
the first backward branch and its target (offline_sass.main_loop_opcodes: two slices of BK = 8,
1,024 FFMAs per thread).  Its opcodes are sorted into FFMA, shared loads (LDS), shared stores
(STS), global loads (LDG), spill accesses (STL, LDL) and the rest (address arithmetic,
predicates, constants, moves, the barrier and the branch).
"""
import argparse
import sys

from experiments._shared import offline_loop, write_record


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--out")
    p.add_argument("--interior", action="store_true", help="the any-shape and interior kernels, 128x128 and 64x64")
    args = p.parse_args(argv)
    from gemm_lessons.instruments import offline_sass
    from gemm_lessons.library import device_arrays, dispatch
    from gemm_lessons.measure import provenance

    why = offline_sass.missing_toolchain()
    if why:
        sys.exit(f"cannot compile offline: {why}")
    rec = {"kind": "sass-loop-offline", "device": "none (compiled offline)", "date": provenance.now(), "git_commit": provenance.git_commit(),
           "versions": offline_sass.versions(), "arch": "sm_90", "kernels": {}}
    jobs = [(kind, "128x128") for kind in ("any_shape", "wide")]
    if args.interior:
        jobs = [(kind, tiles) for tiles in ("128x128", "64x64") for kind in ("any_shape", "interior", "grouped", "grouped_wide", "grouped_a_wide")]
    for kind, tiles in jobs:
        kernel, argtypes, threads = device_arrays.kernel_spec("any_shape" if kind != "wide" else kind, tiles, "C")
        if kind in ("interior", "grouped", "grouped_wide", "grouped_a_wide"):  # launched as the any-shape kernel: same arguments and cap
            from . import ragged_kernels
            cfg = dispatch.TILES[tiles]
            kernel = (ragged_kernels.make_interior(cfg) if kind == "interior" else
                      ragged_kernels.make_grouped(cfg, wide_inside=kind == "grouped_wide", a_wide=kind == "grouped_a_wide"))
            argtypes = argtypes + ragged_kernels.extra_argtypes()  # W, counters (fixup's; ignored)
        rec["kernels"][f"{kind} {tiles}"] = offline_loop(kernel, kernel.targetoptions.get("max_registers"), argtypes)
        print(kind, tiles, rec["kernels"][f"{kind} {tiles}"]["groups"], flush=True)
    write_record("shape_classes", rec, args.out, kind="sass_interior" if args.interior else "sass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
