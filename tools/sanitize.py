"""Run every registered kernel once at awkward sizes and check the result (for compute-sanitizer).

    compute-sanitizer --tool memcheck python3 tools/sanitize.py
    compute-sanitizer --tool racecheck python3 tools/sanitize.py
    ... python3 tools/sanitize.py dbuf warptile      # only these kernels
    ... python3 tools/sanitize.py any_wide            # kernels/library/transpose_any_wide.py alone (also library_transpose)
    ... python3 tools/sanitize.py few_rows            # kernels/library/transpose_few_rows.py alone
    ... python3 tools/sanitize.py pairs               # kernels/library/transpose_pairs.py alone
    ... python3 tools/sanitize.py grouped             # lesson 08's grouped block orders (GROUP_M 4, 8, 16)
    ... python3 tools/sanitize.py library_plans       # gl.sgemm's plans: wide and any-shape, split, padded
    ... python3 tools/sanitize.py library_split       # the wide kernel's split plans only (2 and 3 parts)
                                                      # (SANITIZE_TILES="128x64 64x64": those tiles only)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import gemm_lessons  # noqa: E402,F401  (chooses GPU or simulator first)
from gemm_lessons.kernels import ladder
from gemm_lessons.measure import problems  # noqa: E402

SGEMM_SIZES = [(1, 1, 1), (127, 129, 131), (1000, 1, 17), (1025, 1023, 33)]
WIDE_SGEMM_SIZES = [(1, 4, 4), (127, 132, 136), (1000, 4, 16), (1025, 1024, 36)]
T_SIZES = [(1, 1), (127, 129), (1000, 1), (1025, 1023)]
WIDE_T_SIZES = [(4, 4), (128, 132), (1000, 4), (1024, 1020)]

only = set(sys.argv[1:])
failed = 0
for name, rung in {**ladder.SGEMM, **ladder.VARIANTS}.items():
    if only and name not in only:
        continue
    sizes = WIDE_SGEMM_SIZES if rung.wide else SGEMM_SIZES
    for M, N, K in sizes:
        for alpha, beta in ((1.0, 0.0), (1.5, -0.5)):
            res = problems.check(rung, M, N, K, alpha, beta, name=name)
            failed += not res.passed
            print(res.message(), flush=True)
for name, rung in ladder.TRANSPOSE.items():
    if only:
        break
    sizes = WIDE_T_SIZES if rung.wide else T_SIZES
    for R, C in sizes:
        res = problems.check_transpose(rung, R, C, name=name)
        failed += not res.passed
        print(res.message(), flush=True)
if not only or "grouped" in only:  # lesson 08's grouped block orders (TileConfig.group_m)
    from gemm_lessons.teaching import block_order  # noqa: E402

    for name, rung in block_order.rungs(block_order.GROUPS).items():
        for M, N, K in WIDE_SGEMM_SIZES:
            res = problems.check(rung, M, N, K, 1.5, -0.5, name=name)
            failed += not res.passed
            print(res.message(), flush=True)
if not only or "library_transpose" in only:  # both kernels of library.transpose, every side alignment
    import numpy as np  # noqa: E402
    from numba import cuda  # noqa: E402
    from gemm_lessons.library import device_transpose  # noqa: E402

    for R, C in T_SIZES + WIDE_T_SIZES + [(130, 63), (63, 130), (132, 66), (20, 130)]:  # the last two: pairs
        src = np.random.default_rng(R * C).random((R, C), dtype=np.float32)
        dst = cuda.to_device(np.full((C, R), np.nan, np.float32))
        device_transpose.transpose(cuda.to_device(src), dst)
        ok = np.array_equal(dst.copy_to_host(), src.T)
        failed += not ok
        print(f"library_transpose {R}x{C}: {'ok' if ok else 'WRONG'}", flush=True)
if not only or "library_plans" in only or "library_split" in only or "library_padded" in only:
    # gl.sgemm's plans (library_split: wide split-K only; library_padded: the padded plans only)
    from gemm_lessons.library import dispatch, device_arrays  # noqa: E402

    def plan_runner(plan):
        return lambda A, B, C, alpha=1.0, beta=0.0: device_arrays.run_plan(plan, A, B, C, alpha, beta)

    # SANITIZE_TILES="128x64 64x64": only those tile sizes (a call on the GPU machine has 10 minutes)
    for tiles in os.environ.get("SANITIZE_TILES", "").split() or dispatch.TILES:
        plans = (dispatch.Plan("wide", tiles), dispatch.Plan("wide", tiles, 3), dispatch.Plan("any_shape", tiles),
                 dispatch.Plan("any_shape", tiles, 3), dispatch.Plan("padded", tiles), dispatch.Plan("padded", tiles, 3))
        if only == {"library_split"}:  # the wide kernel split in 2 and 3, then splitk_reduce_wide.py
            plans = (dispatch.Plan("wide", tiles, 2), dispatch.Plan("wide", tiles, 3))
        if only == {"library_padded"}:  # B (and A) padded, the wide kernel into C (ragged_c) or split
            plans = (dispatch.Plan("padded", tiles), dispatch.Plan("padded", tiles, 3))
        for plan in plans:
            for M, N, K in WIDE_SGEMM_SIZES if plan.kernel == "wide" else SGEMM_SIZES:
                res = problems.check(plan_runner(plan), M, N, K, 1.5, -0.5, name=str(plan))
                failed += not res.passed
                print(res.message(), flush=True)
# kernels/library/transpose_any_wide.py and transpose_aligned_stores.py: 16-byte accesses on every shape
for module_name in [m for m in ("any_wide", "aligned_stores") if not only or m in only]:
    import importlib  # noqa: E402

    import numpy as np  # noqa: E402
    from numba import cuda  # noqa: E402

    module = importlib.import_module(f"gemm_lessons.kernels.library.transpose_{module_name}")
    # odd sides (rows starting mid-float4, ragged segment ends), a cut-short last float4
    # (rows * cols % 4 != 0), edge tiles of every width, and aligned shapes
    for R, C in T_SIZES + WIDE_T_SIZES + [(130, 63), (63, 130), (65, 67), (3, 5), (1, 4097)]:
        for tile, threads_rows in ((64, 16), (64, 8)):
            src = np.random.default_rng(R * C).random((R, C), dtype=np.float32)
            dst = cuda.to_device(np.full((C, R), np.nan, np.float32))
            module.transpose(cuda.to_device(src), dst, TILE=tile, ROWS=threads_rows)
            ok = np.array_equal(dst.copy_to_host(), src.T)
            failed += not ok
            print(f"{module_name} {tile}x{threads_rows} {R}x{C}: {'ok' if ok else 'WRONG'}", flush=True)


def offset_check(label, transpose, R, C, offset):
    """transpose(src, dst) on a random R x C src, both arrays ``offset`` floats into fresh buffers
    (measure.problems.check_transpose): True when dst is exactly src.T and nothing else was written."""
    from gemm_lessons.measure import problems

    res = problems.check_transpose(transpose, R, C, seed=R * C, name=label, offset=offset)
    print(f"{res.message()} (offset {offset})", flush=True)
    return res.passed


# kernels/library/transpose_few_rows.py: every row count it takes, a ragged last block, src and dst off 16 bytes
if not only or "few_rows" in only:
    from gemm_lessons.kernels.library import transpose_few_rows  # noqa: E402

    for R in range(1, transpose_few_rows.MAX_ROWS + 1):
        for C, offset in ((1, 0), (transpose_few_rows.COLS + 3, 0), (1023, 1)):
            failed += not offset_check("few_rows", transpose_few_rows.transpose, R, C, offset)
# kernels/library/transpose_pairs.py: even sides, ragged edge tiles, src and dst 8 but not 16 bytes in
if not only or "pairs" in only:
    import functools  # noqa: E402

    from gemm_lessons.kernels.library import transpose_pairs  # noqa: E402

    for R, C in [(2, 2), (128, 130), (130, 128), (1026, 1022)]:
        for offset, (tile, threads_rows) in ((0, (64, 16)), (2, (64, 16)), (0, (64, 8))):
            pairs = functools.partial(transpose_pairs.transpose, TILE=tile, ROWS=threads_rows)
            failed += not offset_check(f"pairs {tile}x{threads_rows}", pairs, R, C, offset)
print(f"{failed} failed checks")
sys.exit(1 if failed else 0)
