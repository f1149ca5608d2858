"""Look inside: what the compiler made of a kernel (registers, local memory, SASS)."""
import collections
import re

from . import _backend, results, tables


def _only(d):
    return next(iter(d.values())) if isinstance(d, dict) else d


def resources(kernel):
    """Registers and local memory per thread, shared memory per block, for the compiled
    specialisation(s) of a numba kernel (run it once first)."""
    if _backend.SIMULATOR:
        return None
    return {
        "registers": _only(kernel.get_regs_per_thread()),
        "local_bytes": _only(kernel.get_local_mem_per_thread()),
        "shared_bytes": _only(kernel.get_shared_mem_per_block()),
    }


_OPCODE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)")


def count_opcodes(sass_text):
    """Counter of the opcodes in a SASS listing (nvdisasm's or cuobjdump's text)."""
    return collections.Counter(m.group(1) for m in _OPCODE.finditer(sass_text))


def sass_opcodes(kernel):
    """Counter of SASS opcodes (with width suffixes, e.g. LDS.128, LDG.E.128) or None on the simulator."""
    if _backend.SIMULATOR:
        return None
    return count_opcodes(_only(kernel.inspect_sass()))


def kernel_facts(kernel):
    """resources() and sass_summary() of one compiled kernel, as one dict (None on the simulator)."""
    if _backend.SIMULATOR:
        return None
    return dict(resources(kernel), sass=sass_summary(kernel))


def sass_summary(kernel):
    """The counts a lesson talks about: FFMA, shared and global loads/stores by width, local memory."""
    ops = sass_opcodes(kernel)
    if ops is None:
        return None
    return summarise_opcodes(ops)


def summarise_opcodes(ops):
    """Keep the opcodes the lessons talk about from a Counter of SASS opcodes."""
    keep = {}
    for op, n in sorted(ops.items()):
        base = op.split(".")[0]
        if base in ("FFMA", "LDS", "STS", "LDG", "STG", "LDL", "STL", "LD", "ST", "BAR"):
            keep[op] = n
    return keep


# Per-SM limits of compute capability 9.0 (CUDA C Programming Guide, "Technical Specifications
# per Compute Capability"): the occupancy arithmetic of lessons 04 and 06.
SM_LIMITS_CC90 = {"registers": 65536, "shared_bytes": 228 * 1024, "threads": 2048, "blocks": 32,
                  "shared_reserved_per_block": 1024}


def blocks_per_sm(registers, shared_bytes, threads, limits=SM_LIMITS_CC90):
    """(How many blocks fit on one SM, which resource decides): registers are allocated per warp
    in units of 256, so a thread's count is rounded up to a multiple of 8.  The resource is
    "registers", "shared memory", "threads" or "blocks"; where two or more allow the same,
    smallest count, all of them, joined by " = " (``"registers = threads"``: either alone would
    stop at that count)."""
    warps = -(-threads // 32)
    regs_per_warp = -(-registers * 32 // 256) * 256
    by = {
        "registers": limits["registers"] // (regs_per_warp * warps) if registers else limits["blocks"],
        "shared memory": limits["shared_bytes"] // (shared_bytes + limits["shared_reserved_per_block"]),
        "threads": limits["threads"] // threads,
        "blocks": limits["blocks"],
    }
    fits = min(by.values())
    return fits, " = ".join(k for k, v in by.items() if v == fits)


class CompilerFacts:
    """What the compiler made of several kernels, as a table: registers, local memory
    (spills), blocks per SM, and the SASS counts the lessons talk about."""

    COLUMNS = ("FFMA", "LDG.E.128", "LDG.E", "STG.E.128", "STG.E", "LDS.128", "LDS", "STS", "STS.128", "LDL", "STL",
               "BAR.SYNC.DEFER_BLOCKING")

    def __init__(self, facts, source, threads=None):
        self.facts, self.source, self.threads = facts, source, threads or {}

    def __getitem__(self, name):
        return self.facts[name]

    def _repr_markdown_(self):
        cols = [c for c in self.COLUMNS if any(c in (f.get("sass") or {}) for f in self.facts.values())]
        rows = []
        for name, f in self.facts.items():
            bps = ""
            if name in self.threads and f.get("registers"):
                n, by = blocks_per_sm(f["registers"], f.get("shared_bytes", 0), self.threads[name])
                bps = f"{n} ({by})"
            sass = f.get("sass") or {}
            rows.append([name, f.get("registers", ""), f.get("local_bytes", ""), bps, *(sass.get(c, 0) for c in cols)])
        head = ["kernel", "registers", "local bytes (spills)", "blocks/SM",
                *(c.replace(".SYNC.DEFER_BLOCKING", "") for c in cols)]
        return f"Compiler facts ({self.source})\n\n" + tables.markdown(head, rows, "l" + "r" * (len(head) - 1))

    def __repr__(self):
        return self._repr_markdown_()


SGEMM_SIGNATURE = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1], float32, float32)"


def compiler_facts(kernels, threads=None):
    """``kernels``: name -> numba SGEMM kernel (one not launched yet is compiled for float32
    matrices first).  On a GPU the facts come from the compiler; on the simulator from the last ``python -m gemm_lessons.bench`` record (which
    stores them under the same names), labelled with its device and date.  ``threads``
    (name -> threads per block) adds the blocks-per-SM column."""
    if _backend.SIMULATOR:
        record = results.load()
        facts = {name: record.compiler[name] for name in kernels if name in record.compiler}
        return CompilerFacts(facts, "recorded on " + results.label(record), threads)
    for k in kernels.values():
        if not k.overloads:  # never launched in this process: compile it for float32 matrices
            k.compile(SGEMM_SIGNATURE)
    return CompilerFacts({name: kernel_facts(k) for name, k in kernels.items()},
                         "from the compiler on this GPU", threads)
