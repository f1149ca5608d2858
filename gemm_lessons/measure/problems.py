"""Random problems, a float64 reference, and a check that catches unwritten elements."""
from dataclasses import dataclass

import numpy as np
from numba import cuda

from gemm_lessons.core import backend
from gemm_lessons.core.array_checks import require_fits_on_device

# A quiet NaN with a payload that no arithmetic produces (arithmetic NaNs carry 0x7fc00000):
# elements still holding it after a run were never written by the kernel.
POISON_BITS = np.uint32(0x7FC0DEAD)
POISON = POISON_BITS.view(np.float32)

EPS32 = float(np.finfo(np.float32).eps)


def tolerance(K):
    """Relative Frobenius error allowed for a float32 sum of K products.  Rounding errors of
    a length-K sum grow like sqrt(K)*eps for random data; an indexing bug gives errors of
    order 1, so a generous factor costs nothing."""
    return 32 * EPS32 * max(1, K) ** 0.5


def random_matrix(rows, cols, rng):
    return rng.uniform(-1.0, 1.0, size=(rows, cols)).astype(np.float32)


class SgemmProblem:
    """Host and device operands of C = alpha*A@B + beta*C, with the float64 answer."""

    def __init__(self, M, N, K, alpha=1.0, beta=0.0, seed=0):
        for name, v in (("M", M), ("N", N), ("K", K)):
            if int(v) != v or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}.")
        self.M, self.N, self.K = int(M), int(N), int(K)
        self.alpha, self.beta = float(alpha), float(beta)
        require_fits_on_device(4 * (M * K + K * N + M * N), f"a {M}x{N}x{K} SGEMM")
        rng = np.random.default_rng(seed)
        self.A = random_matrix(M, K, rng)
        self.B = random_matrix(K, N, rng)
        self.C0 = random_matrix(M, N, rng)
        self.A_d = cuda.to_device(self.A)
        self.B_d = cuda.to_device(self.B)
        self.C_d = cuda.device_array((M, N), dtype=np.float32)
        self._reference = None

    @property
    def reference(self):
        if self._reference is None:
            ref = self.alpha * (self.A.astype(np.float64) @ self.B.astype(np.float64))
            if self.beta != 0:
                ref += self.beta * self.C0.astype(np.float64)
            self._reference = ref
        return self._reference

    def reset_output(self):
        """Before each run: C holds its input when beta != 0 (the kernel must read it), or the
        poison value when beta == 0 (BLAS does not read C then, and neither may we)."""
        if self.beta != 0:
            self.C_d.copy_to_device(self.C0)
        else:
            self.C_d.copy_to_device(np.full((self.M, self.N), POISON, dtype=np.float32))
        return self.C_d

    def run(self, rung):
        rung(self.A_d, self.B_d, self.reset_output(), alpha=self.alpha, beta=self.beta)
        return self.C_d.copy_to_host()

    def __repr__(self):
        return f"SgemmProblem(M={self.M}, N={self.N}, K={self.K}, alpha={self.alpha}, beta={self.beta})"


@dataclass
class CheckResult:
    name: str
    shape: tuple
    alpha: float
    beta: float
    rel_error: float
    tol: float
    unwritten: int
    unexpected_nonfinite: int
    missing_nonfinite: int
    first_bad: tuple = None

    @property
    def passed(self):
        return (self.unwritten == 0 and self.unexpected_nonfinite == 0 and self.missing_nonfinite == 0
                and self.rel_error <= self.tol)

    def __bool__(self):
        return self.passed

    def message(self):
        M, N, K = self.shape
        head = f"{self.name} {M}x{N}x{K} (alpha={self.alpha:g}, beta={self.beta:g})"
        if self.passed:
            return f"PASS {head}: relative error {self.rel_error:.1e} (tolerance {self.tol:.1e})"
        why = []
        if self.unwritten:
            why.append(f"{self.unwritten} of {M * N} elements of C were never written "
                       f"(first at row, col {self.first_bad}): check the guards and the grid size"
                       + ("; with beta == 0 the kernel must not read C either" if self.beta == 0 else ""))
        if self.unexpected_nonfinite:
            why.append(f"{self.unexpected_nonfinite} elements are NaN/Inf where the reference is finite")
        if self.missing_nonfinite:
            why.append(f"{self.missing_nonfinite} elements are finite where the inputs give NaN/Inf "
                       "(NaN and Inf must propagate)")
        if self.rel_error > self.tol:
            where = f" (largest error at row, col {self.first_bad})" if not self.unwritten else ""
            why.append(f"relative error {self.rel_error:.1e} exceeds {self.tol:.1e}{where}")
        return f"FAIL {head}: " + "; ".join(why)

    def __str__(self):
        return self.message()

    def _repr_markdown_(self):
        return ("✅ " if self.passed else "❌ ") + self.message()


def compare(name, result, reference, alpha, beta, K):
    """Compare a float32 result with the float64 reference."""
    M, N = reference.shape
    unwritten_mask = result.view(np.uint32) == POISON_BITS
    ref_finite = np.isfinite(reference)
    res_finite = np.isfinite(result)
    unexpected = int(np.count_nonzero(ref_finite & ~res_finite & ~unwritten_mask))
    missing = int(np.count_nonzero(~ref_finite & res_finite))
    both = ref_finite & res_finite
    with np.errstate(invalid="ignore"):  # inf - inf where both are infinite: masked out anyway
        diff = np.where(both, result.astype(np.float64) - reference, 0.0)
    denom = np.linalg.norm(np.where(ref_finite, reference, 0.0))
    rel = float(np.linalg.norm(diff) / denom) if denom > 0 else float(np.linalg.norm(diff))
    first_bad = None
    if unwritten_mask.any():
        first_bad = tuple(int(i) for i in np.argwhere(unwritten_mask)[0])
    elif both.any():
        first_bad = tuple(int(i) for i in np.unravel_index(np.argmax(np.abs(diff)), diff.shape))
    return CheckResult(name, (M, N, K), alpha, beta, rel, tolerance(K), int(unwritten_mask.sum()),
                       unexpected, missing, first_bad)


def check(rung, M=67, N=45, K=33, alpha=1.0, beta=0.0, seed=0, name=None):
    """Run ``rung(A, B, C, alpha=, beta=)`` on a random MxNxK problem and compare with float64."""
    problem = SgemmProblem(M, N, K, alpha, beta, seed)
    result = problem.run(rung)
    label = name or getattr(rung, "name", getattr(rung, "__name__", "kernel"))
    return compare(label, result, problem.reference, alpha, beta, K)


# Non-square shapes that do not divide any tile size, plus beta != 0: small enough for the
# simulator, awkward enough to catch missing guards.
SIM_SHAPES = [(67, 45, 33, 1.0, 0.0), (33, 70, 19, 1.5, -0.5)]
GPU_SHAPES = SIM_SHAPES + [(1, 1, 1, 1.0, 0.0), (127, 129, 131, 1.0, 0.0),
                           (1000, 1, 17, 2.0, 1.0), (513, 1031, 257, -1.0, 0.5)]


class CheckReport(list):
    """The CheckResults of several shapes; true when all passed."""

    @property
    def passed(self):
        return all(r.passed for r in self)

    def __bool__(self):
        return self.passed

    def summary(self):
        """One line when every shape passed (the same length on a GPU, which checks more shapes, as
        on the simulator); else the failures, one line each, and how many shapes passed."""
        if self.passed and self:
            worst = max(self, key=lambda r: r.rel_error / r.tol)
            shapes = ", ".join("x".join(map(str, r.shape)) for r in self)
            return (f"PASS {self[0].name} on {len(self)} shapes ({shapes}; beta = 0 and not): largest relative "
                    f"error {worst.rel_error:.1e}, {worst.tol / max(worst.rel_error, 1e-300):,.0f} times under "
                    "its tolerance")
        failed = [r.message() for r in self if not r.passed]
        return "\n".join(failed + [f"({len(self) - len(failed)} of {len(self)} shapes passed)"])

    def _repr_markdown_(self):
        return ("✅ " if self.passed else "❌ ") + self.summary().replace("\n", "\n\n")

    def __repr__(self):
        return self.summary()


def check_all(rung, shapes=None, seed=0, name=None):
    """Check a rung on several awkward shapes (a few on the simulator, more on a GPU)."""
    if shapes is None:
        shapes = SIM_SHAPES if backend.SIMULATOR else GPU_SHAPES
    return CheckReport(check(rung, M, N, K, alpha, beta, seed, name) for M, N, K, alpha, beta in shapes)


@dataclass
class TransposeCheck:
    name: str
    shape: tuple
    unwritten: int
    wrong: int
    first_bad: tuple = None
    before: int = 0  # floats written in front of dst (checked when dst starts inside a larger buffer)

    @property
    def passed(self):
        return self.unwritten == 0 and self.wrong == 0 and self.before == 0

    def __bool__(self):
        return self.passed

    def message(self):
        R, C = self.shape
        head = f"{self.name} {R}x{C} -> {C}x{R}"
        if self.passed:
            return f"PASS {head}: every element in place"
        why = []
        if self.unwritten:
            why.append(f"{self.unwritten} elements never written (first at row, col {self.first_bad})")
        if self.wrong:
            why.append(f"{self.wrong} elements hold the wrong value")
        if self.before:
            why.append(f"{self.before} floats written in front of dst")
        return f"FAIL {head}: " + "; ".join(why)

    __str__ = message

    def _repr_markdown_(self):
        return ("✅ " if self.passed else "❌ ") + self.message()


def check_transpose(rung, rows=67, cols=45, seed=0, name=None, offset=0):
    """Run ``rung(src, dst)`` on a random rows x cols matrix; a transpose must be exact.  With
    ``offset``, src and dst start that many floats into larger buffers (offset 1: off every 16-byte
    boundary), and the floats in front of dst must stay as they were."""
    require_fits_on_device(8 * (rows * cols + offset), f"a {rows}x{cols} transpose")
    src = random_matrix(rows, cols, np.random.default_rng(seed))
    s_buf = cuda.to_device(np.concatenate([np.zeros(offset, np.float32), src.ravel()]))
    d_buf = cuda.to_device(np.full(offset + rows * cols, POISON, dtype=np.float32))
    rung(s_buf[offset:].reshape(rows, cols), d_buf[offset:].reshape(cols, rows))
    whole = d_buf.copy_to_host()
    out = whole[offset:].reshape(cols, rows)
    unwritten = out.view(np.uint32) == POISON_BITS
    wrong = ~unwritten & (out != src.T)
    bad = np.argwhere(unwritten | wrong)
    label = name or getattr(rung, "name", getattr(rung, "__name__", "kernel"))
    return TransposeCheck(label, (rows, cols), int(unwritten.sum()), int(wrong.sum()),
                          tuple(int(i) for i in bad[0]) if len(bad) else None,
                          int((whole[:offset].view(np.uint32) != POISON_BITS).sum()))


TRANSPOSE_SHAPES = [(67, 45), (32, 96), (1, 7), (100, 4)]


def check_transpose_all(rung, shapes=None, name=None):
    shapes = shapes or TRANSPOSE_SHAPES
    return CheckReport(check_transpose(rung, r, c, name=name) for r, c in shapes)
