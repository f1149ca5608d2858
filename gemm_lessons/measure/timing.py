"""Timing with CUDA events: warm-up, many repeats, median and spread.

On the simulator nothing is timed: a Python-thread emulation says nothing about a GPU, so
``time_gpu`` returns NOT_MEASURED instead of a misleading number.
"""
import time
from dataclasses import dataclass, field

import numpy as np

from gemm_lessons.core import backend


class _NotMeasured:
    reason = "not measured (CUDA simulator: no GPU)"

    def __bool__(self):
        return False

    def __repr__(self):
        return self.reason

    __str__ = __repr__


NOT_MEASURED = _NotMeasured()


def range_order(before, after):
    """+1 when the whole ``after`` range (p10, p90) lies above ``before``'s, -1 when it lies below,
    0 when the two overlap: the one rule by which the lessons call a timed change faster or
    slower (lesson 08's single changes, lesson 10's effects)."""
    (b10, b90), (a10, a90) = before, after
    return 1 if a10 > b90 else (-1 if a90 < b10 else 0)


@dataclass
class Timing:
    """Milliseconds per call: ``samples`` each average ``batch`` back-to-back calls."""
    samples: list = field(repr=False)
    batch: int = 1
    host_ms: float = 0.0  # median time the host took to issue one call

    @property
    def host_bound(self):
        """True when issuing a call took the host at least 80% as long as the GPU took to run it:
        then the GPU may have waited for the host between calls (it did if the host was the
        slower of the two), and the timing may overstate the kernel's time.  Why the host was
        slow is not measured: Python's launch overhead for a kernel, the call itself for a
        driver copy."""
        return self.host_ms >= 0.8 * self.median_ms

    @property
    def median_ms(self):
        return float(np.median(self.samples))

    @property
    def p10_ms(self):
        return float(np.percentile(self.samples, 10))

    @property
    def p90_ms(self):
        return float(np.percentile(self.samples, 90))

    @property
    def spread(self):
        """(p90 - p10) / median: the relative width of the middle 80% of samples."""
        return (self.p90_ms - self.p10_ms) / self.median_ms

    def rate(self, work):
        """work units per second at the median (e.g. FLOP -> FLOP/s), with p10/p90 bounds."""
        return work / (self.median_ms * 1e-3)

    def __repr__(self):
        return (f"Timing(median={self.median_ms:.4f} ms, p10={self.p10_ms:.4f}, "
                f"p90={self.p90_ms:.4f}, n={len(self.samples)}, batch={self.batch})")


def time_gpu(fn, *, warmup=3, warmup_seconds=0.3, repeats=20, max_seconds=10.0, min_sample_ms=1.0):
    """Time ``fn()`` (which launches GPU work) with CUDA events.

    Warm-up first (compilation, clocks, caches): at least ``warmup`` calls and at least
    ``warmup_seconds`` of GPU work (a few calls of a short kernel left the clocks low: a 1024^3
    SGEMM showed a p10 five times below its median on an H100).  Then ``repeats`` samples (fewer if
    they would take longer than ``max_seconds`` in all, at least 3).  A sample is one event
    pair around a batch of back-to-back calls, divided by the batch size: the batch is 1 for
    calls of ``min_sample_ms`` or more, larger for short ones.  One untimed call is queued
    before the start event, so the GPU is already busy when timing starts and the host's
    launch overhead (tens of microseconds per call in Python) overlaps the GPU's work.  If the
    host cannot issue calls as fast as the GPU finishes them, the GPU idles between kernels
    and the timing measures Python, not the kernel: ``Timing.host_bound`` says so."""
    if backend.SIMULATOR:
        return NOT_MEASURED
    from numba import cuda

    for _ in range(warmup):
        fn()
    cuda.synchronize()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < warmup_seconds:
        for _ in range(10):
            fn()
        cuda.synchronize()
    start, end = cuda.event(timing=True), cuda.event(timing=True)

    issue_ms = []

    def sample(batch):
        fn()  # queued before the start event: the GPU is busy when timing starts
        start.record()
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        issue_ms.append((time.perf_counter() - t0) * 1e3 / batch)
        end.record()
        end.synchronize()
        return cuda.event_elapsed_time(start, end) / batch

    first = sample(1)
    batch = max(1, min(100, int(min_sample_ms / max(first, 1e-3))))
    issue_ms.clear()
    samples = []
    spent = 0.0
    for i in range(repeats):
        ms = sample(batch)
        samples.append(ms)
        spent += ms * batch * 1e-3
        if spent > max_seconds and i >= 2:
            break
    return Timing(samples, batch, float(np.median(issue_ms)))


def gflops(flop, timing):
    return timing.rate(flop) / 1e9 if timing else None


def gbs(nbytes, timing):
    return timing.rate(nbytes) / 1e9 if timing else None
