"""Look inside: what the compiler made of a kernel (registers, local memory, SASS)."""
import collections
import re

from . import _backend


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


def sass_opcodes(kernel):
    """Counter of SASS opcodes (with width suffixes, e.g. LDS.128, LDG.E.128) or None on the simulator."""
    if _backend.SIMULATOR:
        return None
    sass = _only(kernel.inspect_sass())
    return collections.Counter(m.group(1) for m in _OPCODE.finditer(sass))


def sass_summary(kernel):
    """The counts a lesson talks about: FFMA, shared and global loads/stores by width, local memory."""
    ops = sass_opcodes(kernel)
    if ops is None:
        return None
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
    """How many blocks fit on one SM, and which resource decides (registers are allocated
    per warp in units of 256, so a thread's count is rounded up to a multiple of 8)."""
    warps = -(-threads // 32)
    regs_per_warp = -(-registers * 32 // 256) * 256
    by = {
        "registers": limits["registers"] // (regs_per_warp * warps) if registers else limits["blocks"],
        "shared memory": limits["shared_bytes"] // (shared_bytes + limits["shared_reserved_per_block"]),
        "threads": limits["threads"] // threads,
        "blocks": limits["blocks"],
    }
    fits = min(by.values())
    return fits, [k for k, v in by.items() if v == fits][0]
