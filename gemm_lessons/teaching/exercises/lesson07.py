"""Lesson 07's exercise: double buffering (no race, one barrier per slice, the next slice's loads issued
before the compute and stored into shared memory after it: in flight during the FMAs)."""
from gemm_lessons.core import backend
from gemm_lessons.teaching.exercises.core import exercise, result_right
from gemm_lessons.teaching.exercises.kernels_05_11 import _log_sgemm, _on_gpu, _staged, _result_right, _tile_launcher


def _overlap(events, bars):
    """Where thread 0's slices fail to overlap loads with the compute, from its access log events:
    (epochs whose next-slice global loads come only after the first shared load of the compute,
    [(epoch, line)] of epochs where the loaded slice's shared stores come before the compute's last
    shared load).  Double buffering wants, between two barriers: global loads of A and B, then the
    k-steps' shared loads, then the shared stores of what was loaded (their values arrive during
    the FMAs)."""
    late, early = [], []
    for epoch in range(bars + 1):
        evs = [e for e in events if e.epoch == epoch and e.kind != "sync"]
        loads = [n for n, e in enumerate(evs) if e.kind == "shared" and e.op == "ld"]
        glob = [n for n, e in enumerate(evs) if e.kind == "global" and e.array in ("A", "B") and e.op == "ld"]
        if not loads or not glob:
            continue
        if glob[0] > loads[0]:
            late.append(epoch)
            continue
        stores = [n for n, e in enumerate(evs) if e.kind == "shared" and e.op == "st" and n > glob[0]]
        if stores and stores[0] < loads[-1]:
            early.append((epoch, evs[stores[0]].site[1] if evs[stores[0]].site else None))
    return late, early


@exercise("07-double-buffer",
          "with two shared buffers the block computes from one while the next slice goes into the other: a barrier is "
          "needed only before a buffer is overwritten.",
          "count the barriers: one after the prologue, then one per slice. A race means a buffer is written while a "
          "thread may still read it: during the compute, which buffer does nobody read?",
          "prologue: stage slice 0 into buffer 0, one barrier. Then per slice: start the "
          "next slice's global loads (load_slice), compute from the current buffer, store the "
          "loaded slice into the OTHER buffer, one barrier; swap the buffers' roles.",
          answer="sgemm_ex07", technique=True,
          defines="sgemm_ex07: the @cuda.jit kernel (A, B, C, alpha, beta) of lesson 07's exercise cell, "
                  "double-buffered")
def check_double_buffering(kernel):
    if not backend.SIMULATOR:
        ok, right = _result_right(_tile_launcher("07-double-buffer"), kernel)
        if not ok:
            return False, right

        def barriers(k):
            from gemm_lessons.instruments.compiler_facts import sass_opcodes
            bars = sum(n for op, n in (sass_opcodes(k) or {}).items() if op.startswith("BAR"))
            return True, f"the SASS has {bars} barrier instruction(s)"
        return _on_gpu("07-double-buffer", kernel, right, barriers)
    K = 32
    slices = K // 8
    log = _log_sgemm("07-double-buffer", kernel, 64, 64, K)  # first: a race may or may not spoil a result
    races = log.races()
    ok, right = _result_right(_tile_launcher("07-double-buffer"), kernel)
    if races:
        result_right(False)  # a race: a right result here is luck
        arr, index, epoch, (t1, op1, line1), (t2, op2, line2) = races[0]
        right = ("the result happens to be right here" if ok else right.rstrip("."))
        return False, (right + f"; the access log finds a race: between barriers {epoch} and {epoch + 1}, thread {t1} "
                       f"writes {arr} element {index} (flat index) while thread {t2} {'reads' if op2 == 'ld' else 'writes'} it "
                       f"({len(races)}{'+' if len(races) >= 5 else ''} such word(s) found by the access log). A "
                       "buffer may be refilled only after a barrier that follows the last read of it: store the "
                       "next slice into the buffer nobody computes from.")
    if not ok:
        return False, right
    skipped = _staged(log, 64, 64, K)
    if skipped:
        return False, f"{right}, but {skipped}."
    bars = max(log.barriers().values())
    if bars > slices + 1:
        return False, (right + f", race-free, but with {bars} barriers for {slices} slices (K = {K}): "
                       f"{bars / slices:.1f} per slice. With two buffers one barrier per slice is enough (plus "
                       "one after the prologue): the store into the other buffer needs no barrier before it.")
    late, early = _overlap(log.threads()[0], bars)
    if late:
        return False, (right + ", race-free, one barrier per slice, but the next slice's global loads come "
                       f"after the compute (between barriers {late[0]} and {late[0] + 1}, thread 0): start them "
                       "before the k-steps, so that they are in flight while the FMAs run.")
    if early:
        epoch, line = early[0]
        return False, (right + ", race-free, one barrier per slice, loads issued before the compute, but the "
                       f"loaded slice is stored into shared memory before the k-steps (between barriers {epoch} "
                       f"and {epoch + 1}, thread 0, the store on line {line}): a store needs its load's value, so "
                       "the loads must complete before the FMAs start and nothing is in flight during them. Store "
                       "the next slice after the compute.")
    return True, (right + f"; the access log (one block, K = {K}, {slices} slices) finds no race, {bars} barriers "
                  "(one per slice plus the prologue's), and the next slice's global loads issued before each "
                  "slice's k-steps and stored into shared memory after them: in flight during the FMAs.")
