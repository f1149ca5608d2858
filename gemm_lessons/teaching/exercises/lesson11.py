"""Lesson 11's exercise: split-K, a partial kernel per chunk of k and the reduction.

The student writes both halves of split-K on lesson 01's one-thread-per-element kernel (so that
the split is all there is to read), with the workspace as a 3-D array W[part, row, col] (the
library keeps its parts stacked in a 2-D one): the part of the sum over k that the blocks with
blockIdx.z == z compute, written to W[z], and the reduction that adds the parts into C.  The
check: the answer (C against float64); then the technique: every part of W holds the sum over
its own chunk of k (a kernel that lets one part do all of K and the others write zeros gets C
right and fails here); on the simulator also the access log: each part reads only its chunk of
A and B, and the reduction reads every partial sum once, does not read C when beta == 0, and
reads and writes in coalesced warp-wide accesses (what the model's cost of the reduction
assumes)."""
import collections

import numpy as np

from gemm_lessons.core import backend
from gemm_lessons.teaching.exercises.core import _written_function, exercise, result_right
from gemm_lessons.teaching.exercises.kernels_05_11 import _simulator_only


KERNEL_EXERCISES_11 = ("11-split-k",)
SPLITK_THREADS = (16, 16)  # both kernels' blocks: 16 x 16 threads, x along the columns of C
# M, N, K, alpha, beta, splits: K not a multiple of splits (a shorter last part)
SPLITK_SHAPES = [(19, 37, 50, 1.0, 0.0, 3), (9, 20, 64, 1.5, -0.5, 4)]
SPLITK_LOG_SHAPE = (8, 16, 24, 3)  # M, N, K, splits for the access log


def split_k_chunk(K, splits):
    """k per part: each part sums ceil(K / splits) values of k, the last one what is left."""
    return -(-K // splits)


def launch_split_k(A, B, C, alpha=1.0, beta=0.0, kernels=None, splits=2):
    """11-split-k's launch: ``kernels = (partial, reduce)``; W is a splits x M x N workspace
    (poisoned first, so that unwritten parts show).  partial[(ceil(N/16), ceil(M/16), splits),
    (16, 16)](A, B, W) (the kernel works out its chunk of k from K and gridDim.z), then
    reduce[(ceil(N/16), ceil(M/16)), (16, 16)](W, C, alpha, beta).  Returns W (a device array)."""
    from numba import cuda

    from gemm_lessons.measure.problems import POISON

    partial, reduce = _split_k_pair(kernels)
    M, K = A.shape
    N = B.shape[1]
    W = cuda.to_device(np.full((splits, M, N), POISON, np.float32))
    tx, ty = SPLITK_THREADS
    grid = ((N + tx - 1) // tx, (M + ty - 1) // ty)
    partial[grid + (splits,), (tx, ty)](A, B, W)
    reduce[grid, (tx, ty)](W, C, np.float32(alpha), np.float32(beta))
    return W


def _split_k_pair(answer):
    try:
        partial, reduce = answer
    except (TypeError, ValueError):
        raise TypeError("answer with the pair of kernels: split_k = (sgemm_partial, splitk_reduce)") from None
    return partial, reduce


def held_range(A, B, got):
    """(lo, hi): the range of k, k = lo .. hi - 1, whose sum A[:, lo:hi] @ B[lo:hi] ``got`` holds
    (within float32 rounding), or None when it holds no such sum."""
    from gemm_lessons.measure.problems import tolerance

    K = A.shape[1]
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    prefix = np.zeros((K + 1,) + got.shape)  # prefix[k]: the sum over k' < k
    for k in range(K):
        prefix[k + 1] = prefix[k] + np.outer(A64[:, k], B64[k])
    best = None
    with np.errstate(invalid="ignore", over="ignore"):
        for lo in range(K):
            for hi in range(lo + 1, K + 1):
                want = prefix[hi] - prefix[lo]
                err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
                if np.isfinite(err) and err <= tolerance(hi - lo) and (best is None or err < best[0]):
                    best = (err, lo, hi)
    return None if best is None else best[1:]


def _split_k_parts(A, B, W):
    """(ok, message) of the workspace: part z must hold A[:, chunk z] @ B[chunk z, :]."""
    from gemm_lessons.measure.problems import POISON_BITS, tolerance

    splits = W.shape[0]
    K = A.shape[1]
    chunk = split_k_chunk(K, splits)
    full = A.astype(np.float64) @ B.astype(np.float64)
    for z in range(splits):
        if (W[z].view(np.uint32) == POISON_BITS).any():
            return False, (f"the partial kernel left part {z} of the workspace, W[{z}], unwritten (all of it, or some "
                           f"elements): each part writes its own M x N partial sums")
    dropped = _dropped_remainder(A, B, W)
    if dropped:
        return False, dropped
    for z in range(splits):
        lo, hi = z * chunk, min(K, (z + 1) * chunk)
        got = W[z]
        want = A[:, lo:hi].astype(np.float64) @ B[lo:hi].astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
        if np.isfinite(err) and err <= tolerance(hi - lo):
            continue
        expected = (f"expected k = {lo}..{hi - 1} inclusive (range({lo}, {hi})), chunk = ceil(K / parts) = "
                    f"ceil({K} / {splits}) = {chunk}")
        held = held_range(A, B, got)
        if np.linalg.norm(got - full) <= tolerance(K) * np.linalg.norm(full):
            return False, (f"the partial kernel does not split the work: W[{z}] holds the whole product (every k "
                           f"from 0 to {K - 1}), {expected}")
        if held is not None:
            return False, (f"the partial kernel's chunks are not ceil(K / parts): W[{z}] holds k = {held[0]}.."
                           f"{held[1] - 1}, {expected}")
        what = "zeros" if not got.any() else "no sum over a range of k"
        return False, f"the partial kernel's part {z}, W[{z}], holds {what}, {expected}"
    return True, f"each of the {splits} parts of the workspace holds the sum over its own chunk of {chunk} k"


def _dropped_remainder(A, B, W):
    """A sentence when the parts of W hold consecutive ranges of k from 0 that stop short of K (a
    remainder of K left out, as with chunk = K // parts); else None."""
    splits, K = W.shape[0], A.shape[1]
    held = [held_range(A, B, W[z]) for z in range(splits)]
    if any(h is None for h in held) or held[0][0] != 0:
        return None
    if any(held[z][0] != held[z - 1][1] for z in range(1, splits)) or held[-1][1] >= K:
        return None
    end = held[-1][1]
    return (f"the parts hold k = 0..{end - 1} between them (part {splits - 1} stops at k = {end - 1}), so the last "
            f"{K - end} value(s) of k, k = {end}..{K - 1}, are in no part: a remainder of K = {K} dropped ({K} is not a "
            f"multiple of {splits} parts). With chunk = ceil(K / parts) the last part ends at K")


def _split_k_answer(answer):
    """(ok, message): C right on SPLITK_SHAPES, then each part of W right."""
    from gemm_lessons.measure.problems import SgemmProblem, compare

    failed, done = None, None
    for M, N, K, alpha, beta, splits in SPLITK_SHAPES:
        p = SgemmProblem(M, N, K, alpha, beta, seed=M + N + K)
        W = launch_split_k(p.A_d, p.B_d, p.reset_output(), alpha, beta, answer, splits)
        C = p.C_d.copy_to_host()
        res = compare("your split-K", C, p.reference, alpha, beta, K)
        ok, done = _split_k_parts(p.A, p.B, W.copy_to_host())
        if not res.passed:
            nan = np.isnan(C)
            if nan.any():
                first = tuple(int(v) for v in np.argwhere(nan)[0])
                c_is = (f"C is NaN at {int(nan.sum())} of {C.size} elements (first at row, col {first}; {M}x{N}x{K} "
                        f"in {splits} parts, beta {beta:g}): never written, or computed from reading C when beta == 0 "
                        "(the check fills C with NaN then)")
            else:
                c_is = res.message()
            if ok:
                return False, (f"the result is wrong and the partial sums in W are right, so the reduction is wrong: "
                               f"{c_is}.")
            return False, f"the result is wrong. The partial sums: {done}. C: {c_is}."
        failed = failed or (None if ok else done)
    result_right()
    shapes = " and ".join(f"{M}x{N}x{K} in {s} parts" for M, N, K, _, _, s in SPLITK_SHAPES)
    right = f"the result matches the float64 reference on {shapes} (with alpha and beta)"
    if failed:
        return False, right + ", but " + failed + "."
    return True, right + "; " + done


def split_k_facts(answer):
    """What the access log sees the two kernels of ``answer`` do at SPLITK_LOG_SHAPE (simulator):
    the k of A and of B each part's blocks read, the rows of W they write, and the reduction's
    reads of W and of C, its writes of C and its warp-wide accesses that touch more 32-byte
    sectors than needed (beta == 0)."""
    from gemm_lessons.instruments import access_log

    partial, reduce = _split_k_pair(answer)
    M, N, K, splits = SPLITK_LOG_SHAPE
    chunk = split_k_chunk(K, splits)
    rng = np.random.default_rng(11)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    tx, ty = SPLITK_THREADS
    grid = ((N + tx - 1) // tx, (M + ty - 1) // ty)

    def run_partial(A, B, W):
        partial[grid + (splits,), (tx, ty)](A, B, W)

    log, out = access_log.log(run_partial, dict(A=A, B=B, W=np.zeros((splits, M, N), np.float32)))
    k_read = {z: {"A": set(), "B": set()} for z in range(splits)}
    parts_written = {z: set() for z in range(splits)}
    for e in log.events:
        if e.kind != "global":
            continue
        word, z = e.address // 4, e.block[2]
        if e.array == "A" and e.op == "ld":
            k_read[z]["A"].add(word % K)
        elif e.array == "B" and e.op == "ld":
            k_read[z]["B"].add(word // N)
        elif e.array == "W" and e.op == "st":
            parts_written[z].add(word // (M * N))

    def run_reduce(W, C):
        reduce[grid, (tx, ty)](W, C, np.float32(1.0), np.float32(0.0))

    log2, _ = access_log.log(run_reduce, dict(W=out["W"], C=np.zeros((M, N), np.float32)))
    counts = collections.Counter((e.array, e.op, e.address) for e in log2.events if e.kind == "global")
    uncoalesced = [(i.array, i.op, i.sectors, i.ideal_sectors, i.site[1] if i.site else None)
                   for i in log2.global_instructions() if i.sectors > i.ideal_sectors]
    return {"shape": (M, N, K, splits), "chunk": chunk,
            "k_read": {z: {a: sorted(v) for a, v in d.items()} for z, d in k_read.items()},
            "parts_written": {z: sorted(v) for z, v in parts_written.items()},
            "W_reads": [n for (arr, op, _), n in counts.items() if arr == "W" and op == "ld"],
            "C_reads": sum(n for (arr, op, _), n in counts.items() if arr == "C" and op == "ld"),
            "C_writes": [n for (arr, op, _), n in counts.items() if arr == "C" and op == "st"],
            "uncoalesced": uncoalesced}


def _span(ks):
    return f"k = {ks[0]}..{ks[-1]}" if ks else "no k"


@exercise("11-split-k",
          "two kernels: the partial kernel sums only its part's chunk of k (part z = cuda.blockIdx.z), the reduction "
          "adds the parts. The message says which of the two is wrong.",
          "with cuda.gridDim.z parts, chunk = ceil(K / parts): part z covers k from z * chunk to the smaller of K and "
          "(z + 1) * chunk, less one; the "
          "reduction adds W[0], W[1], ... at its (row, col), then applies alpha and beta.",
          "partial kernel: with parts = cuda.gridDim.z and k_chunk = ceil(K / parts), the blocks "
          "with blockIdx.z == z sum k from z * k_chunk up to min(K, (z + 1) * k_chunk) - 1 and "
          "write W[z, row, col]. Reduction: the same mapping "
          "(threadIdx.x along the columns); total = W[0, row, col] + W[1, row, col] + ... over "
          "W.shape[0] parts, then C = alpha * total, + beta * C only when beta != 0.",
          answer="split_k", technique=True,
          defines="split_k = (sgemm_partial, splitk_reduce): the @cuda.jit kernels (A, B, W) and (W, C, alpha, beta)")
def check_split_k(answer):
    ok, right = _split_k_answer(answer)
    if not ok:
        return False, right
    if not backend.SIMULATOR:
        partial, _ = _split_k_pair(answer)
        sim_ok, m = _simulator_only("11-split-k", partial, name=_answer_name(answer))
        return sim_ok is not False, right + " on this GPU; " + m + "."
    f = split_k_facts(answer)
    M, N, K, splits = f["shape"]
    chunk = f["chunk"]
    where = f"(the access log, {M}x{N}x{K} in {splits} parts)"
    for z in range(splits):
        lo, hi = z * chunk, min(K, (z + 1) * chunk) - 1
        for name in ("A", "B"):
            ks = f["k_read"][z][name]
            if any(k < lo or k > hi for k in ks):
                return False, (right + f", but the partial kernel's blocks of part {z} read {name} at {_span(ks)} {where}: a part "
                               f"must read only its own chunk, k = {lo}..{hi}, or the parts do the same work over "
                               "again.")
        if f["parts_written"][z] not in ([], [z]):
            return False, (right + f", but the partial kernel's blocks of part {z} write W[{f['parts_written'][z]}] {where}: part z "
                           f"owns W[z] only.")
    W_reads, C_writes = f["W_reads"], f["C_writes"]
    if len(W_reads) != splits * M * N or max(W_reads) != 1:
        return False, (right + f", but the reduction reads the workspace's {splits * M * N} partial sums "
                       f"{sum(W_reads)} times in all ({len(W_reads)} different ones, up to {max(W_reads, default=0)} "
                       f"times each) {where}: each partial sum should be read exactly once.")
    if f["C_reads"]:
        return False, (right + f", but with beta == 0 the reduction still reads C ({f['C_reads']} reads {where}): "
                       "BLAS does not read C then (it may hold anything, NaN included), and each read is traffic "
                       "the reduction does not need.")
    if len(C_writes) != M * N or max(C_writes) != 1:
        return False, right + f", but the reduction does not write each element of C exactly once {where}."
    if f["uncoalesced"]:
        arr, op, sectors, ideal, line = f["uncoalesced"][0]
        return False, (right + f", but the reduction's accesses are not coalesced: a warp's "
                       f"{'read of' if op == 'ld' else 'write to'} {arr} (line {line} of your cell) touches {sectors} "
                       f"sectors of 32 bytes where {ideal} would do ({len(f['uncoalesced'])} such warp accesses "
                       f"{where}): let consecutive threads (threadIdx.x) take consecutive columns.")
    return True, (right + f"; the access log ({M}x{N}x{K} in {splits} parts of {chunk} k) sees each part read only "
                  f"its own chunk of A and B, and the reduction read each of the {splits * M * N} partial sums once "
                  f"and wrote each element of C once, without reading C when beta == 0: (splits + 1) x M x N = "
                  f"{(splits + 1) * M * N} floats, in coalesced warp-wide accesses.")


def _answer_name(answer):
    """The name of the notebook variable holding ``answer`` in the cell that defined its kernels."""
    partial, _ = _split_k_pair(answer)
    fn = _written_function(partial)
    for name, value in fn.__globals__.items():
        if value is answer and not name.startswith("_"):
            return name
    return "split_k"
