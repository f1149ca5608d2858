"""gl.sgemm and library.transpose as a library: the public call (api), the device-array calls with a
plan per shape (device_arrays, device_transpose; memory: pointers and aliasing), the rule that picks a plan (dispatch), cheap launches (launch).

The lessons call the device-array functions through this package: ``library.transpose(src, dst)``,
``library.plan_of(A, B)``.  ``help(library.sgemm)``, ``help(library.transpose)`` and
``help(gemm_lessons.sgemm)`` state what each call promises and refuses (shapes, dtypes, layouts,
alignment, aliasing, asynchrony, errors)."""
from gemm_lessons.library.device_arrays import launcher_for, plan_of, run_plan, sgemm
from gemm_lessons.library.device_transpose import transpose

__all__ = ["launcher_for", "plan_of", "run_plan", "sgemm", "transpose"]
