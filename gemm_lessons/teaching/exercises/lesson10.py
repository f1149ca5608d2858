"""Lesson 10's exercise: the next step from a kernel, read from the recorded technique table."""
from gemm_lessons.teaching.exercises.core import _close, exercise


def next_step_answer(record, kernel, size):
    """The technique row (from leaderboard.TECHNIQUES) worth taking next from ``kernel`` at
    ``size``: the largest measured gain above 2 % among the rows that start from ``kernel``,
    as (kernel with it, gain in %), or None."""
    from gemm_lessons.teaching import leaderboard

    rows = [(after, pct) for _, _, before, after, _, _, pct in leaderboard.technique_effects(record, size)
            if before == kernel and pct > 2]
    return max(rows, key=lambda r: r[1]) if rows else None


def next_step_cases(record):
    """(kernel, size) pairs the 10-next-step check asks about: every 'without' kernel of the
    technique table at every recorded size where both sides were timed, except where a kernel of
    one of its rows was host-bound (such a pair compares launch costs, not techniques)."""
    from gemm_lessons.teaching import leaderboard
    from gemm_lessons.records.results import sgemm_rows

    def host_bound(kernel, size):
        return any(r.host_bound for r in sgemm_rows(record, kernel, size))

    cases = []
    for size in sorted({r.size for r in record.sgemm}):
        effects = leaderboard.technique_effects(record, size)
        for before in sorted({b for _, _, b, _, _, _, _ in effects}):
            pairs = [(b, a) for _, _, b, a, _, _, _ in effects if b == before]
            if not any(host_bound(k, size) for pair in pairs for k in pair):
                cases.append((before, size))
    return cases


def next_step_example(record, cases):
    """The case the feedback quotes: one with a gain, at the largest size, from the latest rung,
    or None. ``cases`` come from next_step_cases, which already leaves out host-bound pairs."""
    from gemm_lessons.kernels import ladder

    order = list(ladder.SGEMM) + list(ladder.VARIANTS)

    def latest_first(case):
        kernel, size = case
        return size, order.index(kernel) if kernel in order else -1

    return next((case for case in sorted(cases, key=latest_first, reverse=True)
                 if next_step_answer(record, *case)), None)


@exercise("10-next-step",
          "leaderboard.technique_effects(record, size) already has the rows: yours is to filter them and pick one.",
          "each row is (technique, lesson, without, with, TFLOPS without, TFLOPS with, change in %): which fields say "
          "that a row starts from kernel, and how much it gained?",
          "leaderboard.technique_effects(record, size) lists (technique, lesson, without, with, "
          "TFLOPS without, TFLOPS with, change in %); keep the rows whose 'without' is the kernel "
          "and whose change is above 2 %, and return (with, change) of the largest, or None.",
          answer="next_step",
          defines="next_step(kernel, size): returns (kernel with the technique, change in %) or None, from the "
                  "benchmark record (record = leaderboard.lesson_record())")
def check_next_step(fn):
    from gemm_lessons.records import results
    from gemm_lessons.teaching import leaderboard

    record = leaderboard.lesson_record()
    cases = next_step_cases(record)
    for kernel, size in cases:
        want = next_step_answer(record, kernel, size)
        got = fn(kernel, size)
        if want is None:
            if got is not None:
                return False, (f"next_step({kernel!r}, {size}) returned {got!r}, but no technique from {kernel} "
                               "gained more than 2 % at that size: expected None.")
            continue
        try:
            name, pct = got
            pct = float(pct)
        except (TypeError, ValueError):
            return False, f"next_step({kernel!r}, {size}) returned {got!r}; expected a pair (kernel, change in %)."
        if name != want[0]:
            return False, f"next_step({kernel!r}, {size}) returned {name!r}; the largest measured gain from {kernel} is elsewhere."
        if not _close(pct, want[1], 1e-3):
            return False, f"next_step({kernel!r}, {size}): {name!r} is right, but its change is not {pct:g} %."
    example = next_step_example(record, cases)
    text = ""
    if example:
        name, pct = next_step_answer(record, *example)
        text = f" For example from {example[0]} at {example[1][0]}x{example[1][1]}x{example[1][2]}: {name}, {pct:+.1f} %."
    return True, (f"right for all {len(cases)} (kernel, size) pairs of {results.label(record)}.{text} A measured "
                  "gain on one GPU is a reason to try a technique first, not a promise for another GPU or shape.")
