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
