"""Lesson 08's exercise: warp tiles (each warp reads WM + WN floats of shared memory per k-step)."""
import collections
import re
import traceback

from gemm_lessons.core import backend
from gemm_lessons.teaching.exercises.core import exercise
from gemm_lessons.teaching.exercises.kernels_05_11 import _log_sgemm, _staged, _on_gpu, _result_right, _tile_launcher


@exercise("08-warp-tile",
          "per k-step a warp should read only WM values of A and WN of B: its 32 lanes must cover one compact WM x WN "
          "region of the block tile, not rows spread over the whole tile.",
          "first find warp w's region (the warp tiles numbered row by row, BN // WN of them across), then place lane "
          "l inside it on the LM x LN grid of lanes.",
          "warp w owns columns (w % (BN // WN)) * WN .. + WN of the block tile and rows "
          "(w // (BN // WN)) * WM .. + WM; inside it, lane l sits at row l // LN, column l % LN "
          "of the LM x LN grid, and its 4x4 pieces repeat LM * 4 rows and LN * 4 columns apart.",
          answer="sgemm_ex08", technique=True,
          defines="sgemm_ex08: the @cuda.jit kernel (A, B, C, alpha, beta) of lesson 08's exercise cell, with warp "
                  "tiles")
def check_warp_tiles(kernel):
    """The hint a failure quotes fits its kind: 1 (compact warp tiles) for warps that are not
    32x64 tiles or a wrong result; 2 (warp w's region) for two warps writing the same outputs;
    3 (where a lane's pieces lie) for pieces that overlap, run past the tile or conflict."""
    try:
        ok, right = _result_right(_tile_launcher("08-warp-tile"), kernel)
    except IndexError as e:  # the simulator's bounds check: a row or column past the block tile
        return False, _past_the_tile(e), 3
    if not ok:
        overlap = _overlapping_writes(kernel) if backend.SIMULATOR else None
        return (False, *overlap) if overlap else (False, right)
    if not backend.SIMULATOR:
        return _on_gpu("08-warp-tile", kernel, right)  # the technique: the tracer, in a child process
    BK, WM, WN = 8, 32, 64
    log = _log_sgemm("08-warp-tile", kernel, 32, 128, BK)
    skipped = _staged(log, 32, 128, BK)
    if skipped:
        return False, f"{right}, but {skipped}."
    trace = log.shared_trace(merge=("ld", "st"))
    footprints = {}
    for ins in trace.instructions:
        if ins.op == "ld":
            shape, itemsize, base = trace.arrays[ins.array]
            words = footprints.setdefault(ins.warp, set())
            words.update((ins.array, (a - base) // 4 + d) for a in ins.addresses if a is not None
                         for d in range(ins.width // 4))
    per_step = {w: len(s) / BK for w, s in footprints.items()}
    if any(v != WM + WN for v in per_step.values()):
        got = ", ".join(f"warp {w}: {v:g}" for w, v in sorted(per_step.items()))
        return False, (right + f", but the warps are not {WM}x{WN} warp tiles: per k-step a warp should read "
                       f"{WM} values of A and {WN} of B, {WM + WN} distinct floats of shared memory; the tracer "
                       f"counts {got}. (The given layout, dbuf's 2 x 16 lanes from lessons 06 and 07, "
                       "reads 16 + 128 = 144.)"), 1
    conflicts = trace.totals("ld")["conflicts"]
    if conflicts:
        return False, (right + f", the warp tiles are right, but the shared loads have {conflicts} extra "
                       "wavefronts from bank conflicts: are a thread's 4x4 pieces LN * 4 columns apart, so "
                       "that 8 neighbouring lanes read 128 contiguous bytes?"), 3
    return True, (right + f"; the tracer sees each warp read {WM + WN} distinct floats of shared memory per "
                  f"k-step ({WM} of A, {WN} of B: a {WM}x{WN} warp tile, against 144 for 2 x 16 lanes), "
                  "with no bank conflicts.")


def _past_the_tile(error, BM=32, BN=128):
    """The diagnosis of the simulator's IndexError: the array indexed past its end (from the
    statement that raised it), the simulator's words, and the ranges row_of and col_of must keep
    to.  No line number: the kernel that ran is @unrolled's expansion, whose lines are not the
    student's."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename.startswith("<unrolled")]
    name = re.search(r"(\w+)\[", frames[-1].line or "") if frames else None
    where = f" {name.group(1)}" if name else " an array"
    return (f"the kernel indexed{where} past its end ({error}): a result row or column lies outside the block "
            f"tile. row_of(i) must stay within 0..{BM - 1} and col_of(j) within 0..{BN - 1} for i, j = 0..7, "
            "every warp and every lane.")


def _overlapping_writes(kernel, BM=32, BN=128, WN=64):
    """The diagnosis of a wrong result in which two threads of one block write the same element
    of C (so others are never written): which threads, which element, and where to look, with
    the hint that fits (2: two warps; 3: two lanes of one warp); None when every element is
    written once at most."""
    log = _log_sgemm("08-warp-tile", kernel, BM, BN, 8)
    writers = collections.defaultdict(set)
    for e in log.events:
        if e.kind == "global" and e.op == "st" and e.array == "C":
            writers[e.address // 4].add(e.thread)
    twice = sorted(w for w, threads in writers.items() if len(threads) > 1)
    if not twice:
        return None
    row, col = divmod(twice[0], BN)
    t0, t1 = sorted(writers[twice[0]])[:2]
    never = BM * BN - len(writers)
    text = (f"the result is wrong: threads {t0} (warp {t0 // 32}) and {t1} (warp {t1 // 32}) both write C[{row}, {col}] "
            f"of the block's {BM} x {BN} tile; {len(twice)} elements are written by more than one thread and {never} "
            "by none. ")
    if t0 // 32 != t1 // 32:
        return text + (f"Two warps compute the same outputs: does warp w's region start at its own offset "
                       f"(columns (w % (BN // WN)) * WN, rows (w // (BN // WN)) * WM)?"), 2
    return text + "Two lanes of one warp compute the same outputs: do the lanes' 4x4 pieces overlap?", 3
