"""Lesson 05's exercises: which float4 a thread stages, and the transposed A tile (16-byte shared loads)."""
import collections

from gemm_lessons.core import backend
from gemm_lessons.kernels.sgemm import vec
from gemm_lessons.teaching.exercises.core import _written_function, exercise
from gemm_lessons.teaching.exercises.kernels_05_11 import (_log_sgemm, _staged, _on_gpu, _result_right, _sass_lds_report,
                                                           _sites, _tile_launcher)


STAGE_BK = 16  # 05-stage-a's slice of A: 128 x 16, two float4s per thread (vec's is 128 x 8, one)


@exercise("05-stage-a",
          "256 threads, a 128 x 16 slice: 4 float4s per row, 512 in all, two per thread. Return (row, first column) "
          "of float4 number p (0 or 1) of thread tid.",
          "number the float4s of the slice in row order. In one load instruction (one p) the 256 threads should take "
          "whole rows, for example 256 neighbouring float4s, and the other p the next 256. Row and place in the row "
          "then follow from a division and a remainder.",
          "the column counts floats, not float4s: a float4's place in its row times 4; p = 1 starts 256 float4s "
          "(64 rows) further on.",
          answer="stage_a",
          defines="stage_a(tid, p): returns (row, first column) of float4 p (0 or 1) of the 128x16 slice of A that "
                  "thread tid stages")
def check_float4_staging(ans):
    rows, per_row = vec.BM, STAGE_BK // 4  # float4s in a row of the slice
    loads = rows * per_row // vec.THREADS  # float4s per thread
    got = {}
    for p in range(loads):
        for tid in range(vec.THREADS):
            try:
                value = ans(tid, p)
            except TypeError as e:
                if "argument" in str(e):
                    return False, f"stage_a(tid, p) takes two arguments, the thread and which of its float4s: {e}."
                raise
            try:
                got[tid, p] = tuple(int(v) for v in value)
                assert len(got[tid, p]) == 2
            except (TypeError, ValueError, AssertionError):
                return False, f"for tid={tid}, p={p} stage_a returns {value!r}: return a pair (row, first column)."
    for p in range(loads):
        for tid in range(vec.THREADS):
            # say what is wrong and why, never what the right pair is (that would be the answer)
            row, col = got[tid, p]
            where = f"for tid={tid}, p={p} stage_a returns {(row, col)}"
            if col % 4 or not 0 <= col < STAGE_BK:
                first = got[tid - tid % per_row, p][0]  # the row of the thread that starts tid's group of four
                if 0 <= col < per_row and row == first:
                    why = ("the column counts floats, not float4s: the first column of a float4 is a multiple of 4 "
                           f"(0, 4, 8 or 12 in a row of {STAGE_BK} floats)")
                else:
                    why = f"a float4 starts at a column that is a multiple of 4, below {STAGE_BK}"
                return False, f"{where}: {why}.", 3
            if not 0 <= row < rows:
                return False, f"{where}: the slice has rows 0 to {rows - 1}.", 2
            if tid % per_row == 0 and col:
                return False, (f"{where}: threads {tid} to {tid + per_row - 1} can read one whole row of the slice "
                               f"({per_row} float4s), so the first of them should start a row: rows of A lie "
                               "apart in memory, and a float4 group that spans two of them splits the load."), 2
            if tid % per_row:
                before = got[tid - 1, p]
                apart = (row * per_row + col // 4) - (before[0] * per_row + before[1] // 4)
                if apart != 1:
                    return False, (f"{where}: in one load instruction (p={p}) threads {tid - 1} and {tid} take "
                                   f"float4s {apart} apart in row order; neighbouring threads should take "
                                   f"neighbouring float4s of a row ({per_row} per row), so that a warp's load "
                                   "reads whole rows of the slice (coalescing, lesson 01)."), 2
    staged = collections.Counter(got.values())
    if len(staged) != rows * per_row:
        twice = next(pair for pair, n in staged.items() if n > 1)
        return False, (f"{staged[twice]} loads stage the float4 at {twice}, and {rows * per_row - len(staged)} "
                       f"float4s of the slice are never staged: the two loads of a thread (p = 0 and 1) must "
                       "take different rows."), 2
    return True, (f"every float4 of the 128x{STAGE_BK} slice of A is staged exactly once, each by one 16-byte load, "
                  "and each load instruction reads whole rows.")


def _reads_with_load4(kernel, array):
    """Whether the kernel's code reads ``array`` with load4.  The trace cannot tell: the simulator
    runs load4 as four 4-byte reads, which the tracer merges like any neighbouring reads."""
    import ast
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(_written_function(kernel))))
    except (OSError, TypeError, SyntaxError):  # no source to read: no note
        return True
    return any(isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", None)) == "load4"
               and n.args and isinstance(n.args[0], ast.Name) and n.args[0].id == array for n in ast.walk(tree))


@exercise("05-transpose-a",
          "two pieces, and they must agree: where the staged values go in sAT, and where the k-step reads them. "
          "sAT[k, m] holds element (m, k) of the A tile.",
          "x_d comes from tile row a_r + p * A_STEP and slice column a_c + d; transposing swaps the two. In the "
          "k-step the thread needs tile rows t_row + i at column k.",
          "x_d is element (m, a_c + d) of the A tile, with m = a_r + p * A_STEP: transposed, it "
          "goes to row a_c + d, column m of sAT. In the k-step a thread's 8 values of A are "
          "then 8 neighbouring columns of row k of sAT: two load4(sAT, k, ...), as for B.",
          answer="sgemm_ex05", technique=True,
          defines="sgemm_ex05: the @cuda.jit kernel (A, B, C, alpha, beta) of lesson 05's exercise cell (64 x 64 "
                  "tiles, 64 threads)")
def check_transposed_a_tile(kernel):
    ok, right = _result_right(_tile_launcher("05-transpose-a"), kernel)
    if not ok:
        return False, right
    if not backend.SIMULATOR:
        return _on_gpu("05-transpose-a", kernel, right, _sass_lds_report)
    log = _log_sgemm("05-transpose-a", kernel, 64, 64, 8)
    skipped = _staged(log, 64, 64, 8)
    if skipped:
        return False, f"{right}, but {skipped} (the transposed A tile)."
    trace = log.shared_trace(merge=("ld",))
    narrow = [i for i in trace.instructions if i.op == "ld" and i.width != 16]
    if narrow:
        return False, (right + ", but the technique is missing: not every shared load can be a 16-byte LDS.128 "
                       f"(the tracer, one block: {_sites(trace, lambda i: i.op == 'ld')}). A thread's 8 values "
                       "of A must be neighbours in shared memory, starting at a multiple of 4 floats: the "
                       "transposed tile.")
    note = ("" if _reads_with_load4(kernel, "sAT") else
            " Your k-step reads sAT element by element, and the tracer merged the reads: write them with load4, so "
            "that the 16-byte width does not depend on the compiler (the Lab notes show it leaving such reads as "
            "four LDS).")
    return True, (right + "; every shared load of the k-step can be a 16-byte access (the tracer, one block: "
                  f"{_sites(trace, lambda i: i.op == 'ld')}): the transposed A tile works. (The tracer judges the "
                  "layout; on a GPU this check also reports how many LDS.128 the compiler made of it.)" + note)
