"""Look inside: what the compiler made of a kernel (registers, local memory, SASS)."""
import collections
import re

from gemm_lessons.core import backend, tables
from gemm_lessons.records import results


def _only(d):
    return next(iter(d.values())) if isinstance(d, dict) else d


def resources(kernel):
    """Registers and local memory per thread, shared memory per block, for the compiled
    specialisation(s) of a numba kernel (run it once first)."""
    if backend.SIMULATOR:
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
    if backend.SIMULATOR:
        return None
    return count_opcodes(_only(kernel.inspect_sass()))


def kernel_facts(kernel):
    """resources(), sass_summary() and main_loop() of one compiled kernel, as one dict (None on
    the simulator)."""
    if backend.SIMULATOR:
        return None
    sass = _only(kernel.inspect_sass())
    return dict(resources(kernel), sass=summarise_opcodes(count_opcodes(sass)), loop=main_loop(sass))


# an instruction line of cuobjdump's or nvdisasm's listing: /*address*/ [@predicate] OPCODE operands ;
_INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)([^;]*);")
_LABEL = re.compile(r"^\s*(\.L\w+):")  # nvdisasm names branch targets: .L_x_1: before the instruction
_TARGET = re.compile(r"(?:0x([0-9a-f]+)|`\((\.L\w+)\))")  # BRA 0x2270 (cuobjdump), BRA `(.L_x_1) (nvdisasm)



def facts_of(kernels_by_name):
    """Registers, local and shared memory and SASS counts of each compiled kernel (name -> facts)."""
    facts = {}
    for name, kernel in kernels_by_name.items():
        try:
            facts[name] = kernel_facts(kernel)
        except Exception as e:  # e.g. not yet compiled
            facts[name] = {"error": repr(e)}
    return facts


def _instructions(sass_text):
    """[(address, opcode, operands)] of a SASS listing, with every branch target written as an address."""
    out, labels, pending = [], {}, []
    for line in sass_text.splitlines():
        label = _LABEL.match(line)
        if label:
            pending.append(label.group(1))
            continue
        m = _INSTRUCTION.search(line)
        if m:
            address = int(m.group(1), 16)
            labels.update({name: address for name in pending})
            pending = []
            out.append((address, m.group(2), m.group(3)))

    def target(operands):
        t = _TARGET.search(operands)
        if not t:
            return None
        return int(t.group(1), 16) if t.group(1) else labels.get(t.group(2))

    return [(a, op, target(rest) if op.startswith("BRA") else None) for a, op, rest in out]


def main_loop(sass_text):
    """The main loop of an SGEMM kernel, from its SASS: the innermost loop (a backward branch
    and the instructions from its target to it) that holds FFMA, and the loop around it.
    {"inner": instructions in the inner loop's body, "inner_FFMA", "inner_LDS" (shared loads
    of any width), "outer_rest": instructions of the outer loop's body outside the inner loop,
    or None when there is no loop around it}; None when no loop holds an FFMA.  These count
    the code, not what runs: one pass of a loop issues its body once."""
    ins = _instructions(sass_text)
    loops = sorted((a - t, t, a) for a, op, t in ins if op.startswith("BRA") and t is not None and t <= a)

    def body(lo, hi):
        return [op for a, op, _ in ins if lo <= a <= hi]

    inner = next(((lo, hi) for _, lo, hi in loops if "FFMA" in [op.split(".")[0] for op in body(lo, hi)]), None)
    if inner is None:
        return None
    ops = body(*inner)
    outer = next(((lo, hi) for _, lo, hi in loops if lo <= inner[0] and inner[1] <= hi and (lo, hi) != inner), None)
    return {"inner": len(ops), "inner_FFMA": sum(op.split(".")[0] == "FFMA" for op in ops),
            "inner_LDS": sum(op.split(".")[0] == "LDS" for op in ops),
            "outer_rest": len(body(*outer)) - len(ops) if outer else None}


def busiest_loop(sass_text, op="FFMA"):
    """The loop of a SASS listing (a backward branch and the instructions from its target to it)
    that holds the most ``op`` instructions: {"instructions": its body's instructions, the branch
    included, op: how many of them are ``op``}; None when no loop holds one.  A loop the compiler
    unrolled has a main body and a short remainder loop: this picks the main one, which is what
    runs nearly every pass.  nvdisasm's labels or cuobjdump's addresses: both are read."""
    ins = _instructions(sass_text)
    best = None
    for a, branch, t in ins:
        if not (branch.startswith("BRA") and t is not None and t <= a):
            continue
        ops = [o for b, o, _ in ins if t <= b <= a]
        n = sum(o.split(".")[0] == op for o in ops)
        if n and (best is None or n > best[op]):
            best = {"instructions": len(ops), op: n}
    return best


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
    """(How many blocks fit on one SM, which resource decides). Registers are allocated per warp
    in units of 256 (a thread's count is rounded up to a multiple of 8), from one of the SM's
    four quarters (sub-partitions, 16,384 registers each on 9.0), and a warp cannot straddle
    two: at 172 registers a warp takes 5,632, so 2 warps fit per quarter, 8 per SM, where one
    pool of 65,536 would hold 11 (gemm_lessons.model.occupancy does the same for other
    compute capabilities).  The resource is "registers", "shared memory", "threads" or
    "blocks"; where two or more allow the same, smallest count, all of them, joined by " = "
    (``"registers = threads"``: either alone would stop at that count)."""
    warps = -(-threads // 32)
    regs_per_warp = -(-registers * 32 // 256) * 256
    by = {  # registers: whole warps per quarter (4 per SM), then whole blocks
        "registers": limits["registers"] // 4 // regs_per_warp * 4 // warps if registers else limits["blocks"],
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

    def __init__(self, facts, source, threads=None, loops=False):
        self.facts, self.source, self.threads, self.loops = facts, source, threads or {}, loops

    def __getitem__(self, name):
        return self.facts[name]

    def _repr_markdown_(self):
        cols = [c for c in self.COLUMNS if any(c in (f.get("sass") or {}) for f in self.facts.values())]
        loops = self.loops and any(f.get("loop") for f in self.facts.values())  # older records have none
        rows = []
        for name, f in self.facts.items():
            bps = ""
            if name in self.threads and f.get("registers"):
                n, by = blocks_per_sm(f["registers"], f.get("shared_bytes", 0), self.threads[name])
                bps = f"{n} ({by})"
            sass = f.get("sass") or {}
            loop = f.get("loop") or {}
            rows.append([name, f.get("registers", ""), f.get("local_bytes", ""), bps, *(sass.get(c, 0) for c in cols),
                         *([f"{loop['inner']} ({loop['inner_FFMA']} FFMA)" if loop else "",
                            "" if loop.get("outer_rest") is None else loop["outer_rest"]] if loops else [])])
        head = ["kernel", "registers", "local bytes (spills)", "blocks/SM",
                *(c.replace(".SYNC.DEFER_BLOCKING", "") for c in cols),
                *(["inner loop: instructions", "loop around it: other instructions"] if loops else [])]
        return f"Compiler facts ({self.source})\n\n" + tables.markdown(head, rows, "l" + "r" * (len(head) - 1))

    def __repr__(self):
        return self._repr_markdown_()


SGEMM_SIGNATURE = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1], float32, float32)"


def compiler_facts(kernels, threads=None, record=None, loops=False):
    """``kernels``: name -> numba SGEMM kernel (one not launched yet is compiled for float32
    matrices first).  On a GPU the facts come from the compiler; on the simulator from a bench
    record (``record``, by default the last ``python -m gemm_lessons.runs.bench`` one, which stores
    them under the same names), labelled with its device and date.  ``threads`` (name ->
    threads per block) adds the blocks-per-SM column, ``loops`` two columns from main_loop: the
    instructions of the innermost loop holding FFMA, and the other instructions of the loop around it."""
    if backend.SIMULATOR:
        record = record or results.load()
        facts = {name: record.compiler[name] for name in kernels if name in record.compiler}
        why = f" ({backend.not_measured_why()})" if backend.filled_from_record() else ""
        return CompilerFacts(facts, "recorded on " + results.label(record) + why, threads, loops)
    for k in kernels.values():
        if not k.overloads:  # never launched in this process: compile it for float32 matrices
            k.compile(SGEMM_SIGNATURE)
    return CompilerFacts({name: kernel_facts(k) for name, k in kernels.items()},
                         "from the compiler on this GPU", threads, loops)
