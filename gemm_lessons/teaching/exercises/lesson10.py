"""Lesson 10's exercise: the next step from a kernel, read from the recorded technique table."""
from gemm_lessons.teaching.exercises.core import _close, exercise


GAIN_PCT = 2  # a gain counts above this: two runs of the same kernel differ by less (lesson 10's lab notes)


def _rows_from(record, kernel, size):
    """(with, change in %) of every technique row that starts from ``kernel`` at ``size``."""
    from gemm_lessons.teaching import leaderboard

    return [(after, pct) for _, _, before, after, _, _, pct in leaderboard.technique_effects(record, size)
            if before == kernel]


def _judge(record, kernel, size, got):
    """None when ``got`` is a right answer of next_step(kernel, size), else what is wrong.  This
    verifies the answer against the rows (a pair from a row that starts from ``kernel``, gained
    more than GAIN_PCT %, and no such row gained more; None when there is none): it does not
    compute the answer, so the package holds no reference answer a student could import."""
    from gemm_lessons.teaching import leaderboard

    call = f"next_step({kernel!r}, {size})"
    gains = [(after, pct) for after, pct in _rows_from(record, kernel, size) if pct > GAIN_PCT]
    if not gains:
        if got is None:
            return None
        return (f"{call} returned {got!r}, but no technique from {kernel} gained more than {GAIN_PCT} % at that "
                "size: expected None.")
    try:
        name, pct = got
        pct = float(pct)
    except (TypeError, ValueError):
        return f"{call} returned {got!r}; expected a pair (kernel, change in %)."
    top = max(p for _, p in gains)
    best = {after for after, p in gains if _close(p, top, 1e-9)}
    if name not in best:
        if name in {t[0] for t in leaderboard.TECHNIQUES}:
            return (f"{call} returned {name!r}: the first element should be the kernel with the technique (the "
                    "row's 'with', e.g. 'dbuf'), not the technique's description.")
        return f"{call} returned {name!r}; the largest measured gain from {kernel} is elsewhere."
    if not _close(pct, top, 1e-3):
        return f"{call}: {name!r} is right, but its change is not {pct:g} %."
    return None


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


def next_step_example(record, cases, next_step):
    """The case the feedback quotes: one with a gain, at the largest size, from the latest rung,
    or None. ``cases`` come from next_step_cases, which already leaves out host-bound pairs;
    ``next_step(kernel, size)`` is the student's function, already checked right on them."""
    from gemm_lessons.kernels import ladder

    order = list(ladder.SGEMM) + list(ladder.VARIANTS)

    def latest_first(case):
        kernel, size = case
        return size, order.index(kernel) if kernel in order else -1

    return next((case for case in sorted(cases, key=latest_first, reverse=True)
                 if next_step(*case)), None)


def next_step_flip(record, cases, next_step):
    """A kernel whose next step changes with the size: (kernel, (size, answer), (size, answer)),
    the smallest asked size with an answer and the largest whose answer names another kernel,
    the first such kernel in ladder order; or None.  ``cases`` come from next_step_cases,
    ``next_step`` is the student's function, already checked right on them."""
    from gemm_lessons.kernels import ladder

    order = list(ladder.SGEMM) + list(ladder.VARIANTS)
    for kernel in sorted({k for k, _ in cases}, key=lambda k: order.index(k) if k in order else len(order)):
        answers = [(size, next_step(kernel, size)) for k, size in sorted(cases) if k == kernel]
        answers = [(size, a) for size, a in answers if a]
        if not answers:
            continue
        first = answers[0]
        other = [(size, a) for size, a in answers if a[0] != first[1][0]]
        if other:
            return kernel, first, other[-1]
    return None


def _flip_text(record, flip):
    """The feedback's sentence on a next step that changes with the size, with the blocks each
    kernel's tile gives at the smaller size against the SM count."""
    from gemm_lessons.model import counting
    from gemm_lessons.teaching import leaderboard

    kernel, (small, (w1, p1)), (large, (w2, p2)) = flip
    dims = lambda s: "x".join(map(str, s))  # noqa: E731
    text = (f" The answer changes with the size: from {kernel}, {w1} ({p1:+.1f} %) at {dims(small)} but {w2} "
            f"({p2:+.1f} %) at {dims(large)}.")
    if kernel in counting.RUNG_TILES and w1 in counting.RUNG_TILES:
        b0, b1 = leaderboard.grid_blocks(kernel, small), leaderboard.grid_blocks(w1, small)
        sms = record.device.sm_count
        if b0 < sms <= b1:
            text += (f" There {kernel}'s tiles give {b0} blocks for {sms} SMs, {w1}'s {b1}: filling the idle SMs "
                     "wins.")
    return text


@exercise("10-next-step",
          "leaderboard.technique_effects(record, size) already has the rows: yours is to filter them and pick one.",
          "each row is (technique, lesson, without, with, TFLOPS without, TFLOPS with, change in %): which fields say "
          "that a row starts from kernel, and how much it gained?",
          "leaderboard.technique_effects(record, size) lists (technique, lesson, without, with, "
          "TFLOPS without, TFLOPS with, change in %); keep the rows whose 'without' is the kernel "
          "and whose change is above 2 %, and return (with, change) of the largest, or None when no row "
          "is left (none starts from the kernel at that size, or none gained more than 2 %).",
          answer="next_step",
          defines="next_step(kernel, size): size is an (M, N, K) tuple; returns (kernel with the technique, "
                  "change in %) or None, from the benchmark record (record = leaderboard.lesson_record())")
def check_next_step(fn):
    from gemm_lessons.records import results
    from gemm_lessons.teaching import leaderboard

    record = leaderboard.lesson_record()
    cases = next_step_cases(record)
    for kernel, size in cases:
        wrong = _judge(record, kernel, size, fn(kernel, size))
        if wrong:
            return False, wrong
    flip = next_step_flip(record, cases, fn)
    example = next_step_example(record, cases, fn)
    text = ""
    if flip:
        text = _flip_text(record, flip)
    elif example:
        name, pct = fn(*example)
        text = f" For example from {example[0]} at {example[1][0]}x{example[1][1]}x{example[1][2]}: {name}, {pct:+.1f} %."
    return True, f"right for all {len(cases)} (kernel, size) pairs of {results.label(record)}.{text}"
