"""Timing with CUDA events: warm-up, many repeats, median and spread.

On the simulator nothing is timed: a Python-thread emulation says nothing about a GPU, so
``time_gpu`` returns NOT_MEASURED instead of a misleading number.
"""
from dataclasses import dataclass, field

import numpy as np

from . import _backend


class _NotMeasured:
    reason = "not measured (CUDA simulator: no GPU)"

    def __bool__(self):
        return False

    def __repr__(self):
        return self.reason

    __str__ = __repr__


NOT_MEASURED = _NotMeasured()


@dataclass
class Timing:
    """Milliseconds per call over ``len(samples)`` timed calls."""
    samples: list = field(repr=False)

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
                f"p90={self.p90_ms:.4f}, n={len(self.samples)})")


def time_gpu(fn, *, warmup=3, repeats=20, max_seconds=10.0):
    """Time ``fn()`` (which launches GPU work) with CUDA events, one pair per call.

    ``warmup`` calls first (compilation, clocks, caches), then up to ``repeats`` timed calls,
    fewer if they would take longer than ``max_seconds`` in all (at least 5)."""
    if _backend.SIMULATOR:
        return NOT_MEASURED
    from numba import cuda

    for _ in range(warmup):
        fn()
    cuda.synchronize()
    start, end = cuda.event(timing=True), cuda.event(timing=True)
    samples = []
    spent = 0.0
    for i in range(repeats):
        start.record()
        fn()
        end.record()
        end.synchronize()
        ms = cuda.event_elapsed_time(start, end)
        samples.append(ms)
        spent += ms * 1e-3
        if spent > max_seconds and i >= 4:
            break
    return Timing(samples)


def gflops(flop, timing):
    return timing.rate(flop) / 1e9 if timing else None


def gbs(nbytes, timing):
    return timing.rate(nbytes) / 1e9 if timing else None
