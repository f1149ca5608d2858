"""Lesson 05's exercises: which float4 a thread stages, and the transposed A tile (16-byte shared loads)."""
from gemm_lessons.core import backend
from gemm_lessons.kernels.sgemm import vec
from gemm_lessons.teaching.exercises.core import exercise
from gemm_lessons.teaching.exercises.kernels_05_11 import (_log_sgemm, _staged, _on_gpu, _result_right, _sass_lds_report,
                                                           _sites, _tile_launcher)


@exercise("05-stage-a",
          "256 threads, a 128 x 8 tile: 2 float4 per row. "
          "Return (row, first column) of the float4 that thread tid stages.",
          "number the float4s of the tile in row order and give float4 number tid to thread tid: its row and its "
          "place in the row follow from a division and a remainder.",
          "the answer's column counts floats, not float4s: a float4's place in its row times 4.",
          answer="stage_a",
          defines="stage_a(tid): returns (row, first column) of the float4 of the 128x8 A tile thread tid stages")
def check_float4_staging(ans):

    per_row = vec.BK // 4  # float4s in a row of the tile
    for tid in range(vec.THREADS):
        want = (tid // per_row, (tid % per_row) * 4)
        try:
            got = tuple(int(v) for v in ans(tid))
            assert len(got) == 2
        except (TypeError, ValueError, AssertionError):
            return False, f"for tid={tid} stage_a returns {ans(tid)!r}: return a pair (row, first column)."
        if got == want:
            continue
        # say which part is wrong and why, never what the right pair is (that would be the answer)
        row, col = got
        if col % 4 or not 0 <= col < vec.BK:
            if 0 <= col < per_row and row == want[0]:
                why = ("the column counts floats, not float4s: the first column of a float4 is a multiple of 4 "
                       f"(0 or 4 in a row of {vec.BK} floats)")
            else:
                why = f"a float4 starts at a column that is a multiple of 4, below {vec.BK}"
            return False, f"for tid={tid} stage_a returns {got}: {why}.", 3
        if not 0 <= row < vec.BM:
            return False, f"for tid={tid} stage_a returns {got}: the tile has rows 0 to {vec.BM - 1}.", 2
        which = "the row" if col == want[1] else ("the column" if row == want[0] else "both the row and the column")
        verb = "are" if which.startswith("both") else "is"
        return False, (f"for tid={tid} stage_a returns {got}: {which} {verb} wrong. "
                       f"Neighbouring threads should take neighbouring float4s of a row ({per_row} per row) before "
                       "moving to the next row."), 2
    covered = {tuple(ans(t)) for t in range(vec.THREADS)}
    if len(covered) != vec.BM * vec.BK // 4:
        return False, "some float4 of the tile are staged twice and others never."
    return True, "every float4 of the 128x8 A tile is staged exactly once, each by one 16-byte load."


@exercise("05-transpose-a",
          "two pieces, and they must agree: where the staged values go in sAT, and where the k-step reads them. "
          "sAT[k, m] holds element (m, k) of the A tile.",
          "x_d comes from tile row a_r + p * A_STEP and slice column a_c + d; transposing swaps the two. In the "
          "k-step the thread needs tile rows t_row + i at column k.",
          "x_d is element (m, a_c + d) of the A tile, with m = a_r + p * A_STEP: transposed, it "
          "goes to row a_c + d, column m of sAT. In the k-step a thread's 8 values of A are "
          "then 8 neighbouring columns of row k of sAT.",
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
    return True, (right + "; every shared load of the k-step is a 16-byte access (the tracer, one block: "
                  f"{_sites(trace, lambda i: i.op == 'ld')}): the transposed A tile works. (The tracer judges the "
                  "layout; on a GPU this check also reports how many LDS.128 the compiler made of it.)")
