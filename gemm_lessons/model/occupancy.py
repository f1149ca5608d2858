"""The occupancy calculator: resident blocks per SM from a kernel's registers, static shared memory
and threads per block, with the limits of each compute capability (``ARCHS``).

Sources of the limits in ``ARCHS``:
  * CUDA C++ Programming Guide, table "Technical Specifications per Compute Capability"
    (``CC_TABLE``): resident threads, warps and blocks per SM, 64K 32-bit registers per SM and
    per block, 255 registers per thread, shared memory per SM and per block (48 KB static;
    more only as dynamic shared memory with an opt-in, which no kernel here uses).
  * the occupancy calculator header ``cuda_occupancy.h`` shipped with the CUDA toolkit (its
    ``include/`` folder), whose ``cudaOccMaxActiveBlocksPerMultiprocessor`` ``occupancy``
    follows: registers handed out per warp in units of 256, per SM sub-partition (4 per SM);
    shared memory allocated in units of 256 bytes (7.x) or 128 bytes (8.x, 9.x); with the
    default carveout the whole per-SM capacity counts.
  * the shared memory CUDA reserves per block is the per-SM capacity minus the largest block
    the table allows: 1 KB on 8.0, 8.6, 8.9 and 9.0 (the Ampere and Hopper tuning guides: "CUDA
    reserves 1 KB of shared memory per thread block"), none on 7.5 (a block may use all 64 KB).

gemm_lessons.runs.arch_facts applies it to every kernel of the course, compiled offline.
"""
from dataclasses import asdict, dataclass

CC_TABLE = ("https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html"
            "#features-and-technical-specifications-technical-specifications-per-compute-capability")
AMPERE_TUNING_GUIDE = "https://docs.nvidia.com/cuda/ampere-tuning-guide/index.html"
OCCUPANCY_HEADER = "cuda_occupancy.h (CUDA toolkit, include/)"
KIB = 1024


@dataclass(frozen=True)
class Arch:
    """The per-SM limits of one compute capability (see the module doc for the sources)."""
    cc: str                              # "7.5"
    family: str                          # "Turing"
    examples: str                        # GPUs with this compute capability
    max_threads_per_sm: int              # Programming Guide table
    max_blocks_per_sm: int               # Programming Guide table (and cuda_occupancy.h)
    shared_bytes_per_sm: int             # Programming Guide table: the largest carveout
    shared_bytes_per_block_optin: int    # Programming Guide table: dynamic, with the opt-in
    shared_unit: int                     # cuda_occupancy.h: cudaOccSMemAllocationGranularity
    registers_per_sm: int = 65536        # Programming Guide table (all five)
    registers_per_block: int = 65536
    max_registers_per_thread: int = 255
    max_threads_per_block: int = 1024
    static_shared_bytes_per_block: int = 48 * KIB  # a kernel's cuda.shared.array total
    register_unit: int = 256             # cuda_occupancy.h: cudaOccRegAllocationGranularity
    sub_partitions: int = 4              # cuda_occupancy.h: cudaOccSubPartitionsPerMultiprocessor
    warp_size: int = 32

    @property
    def sm(self):
        return "sm_" + self.cc.replace(".", "")

    @property
    def cc_tuple(self):
        return tuple(int(x) for x in self.cc.split("."))

    @property
    def shared_reserved_per_block(self):
        """Bytes CUDA keeps per resident block: per-SM capacity minus the largest block."""
        return self.shared_bytes_per_sm - self.shared_bytes_per_block_optin

    @property
    def max_warps_per_sm(self):
        return self.max_threads_per_sm // self.warp_size

    def to_dict(self):
        return {**asdict(self), "shared_reserved_per_block": self.shared_reserved_per_block,
                "max_warps_per_sm": self.max_warps_per_sm}


ARCHS = {a.cc: a for a in [
    Arch("7.5", "Turing", "T4 (Colab), RTX 20xx, GTX 16xx", max_threads_per_sm=1024, max_blocks_per_sm=16,
         shared_bytes_per_sm=64 * KIB, shared_bytes_per_block_optin=64 * KIB, shared_unit=256),
    Arch("8.0", "Ampere", "A100, A30", max_threads_per_sm=2048, max_blocks_per_sm=32,
         shared_bytes_per_sm=164 * KIB, shared_bytes_per_block_optin=163 * KIB, shared_unit=128),
    Arch("8.6", "Ampere", "RTX 30xx, A10, A40, RTX A6000", max_threads_per_sm=1536, max_blocks_per_sm=16,
         shared_bytes_per_sm=100 * KIB, shared_bytes_per_block_optin=99 * KIB, shared_unit=128),
    Arch("8.9", "Ada", "RTX 40xx, L4, L40S", max_threads_per_sm=1536, max_blocks_per_sm=24,
         shared_bytes_per_sm=100 * KIB, shared_bytes_per_block_optin=99 * KIB, shared_unit=128),
    Arch("9.0", "Hopper", "H100, H200, GH200", max_threads_per_sm=2048, max_blocks_per_sm=32,
         shared_bytes_per_sm=228 * KIB, shared_bytes_per_block_optin=227 * KIB, shared_unit=128),
]}


def _round_up(x, unit):
    return -(-x // unit) * unit


@dataclass
class Occupancy:
    blocks: int                  # resident blocks per SM (0: the kernel cannot be launched)
    limited_by: list             # the resources that give ``blocks`` (ties listed together)
    by: dict                     # resource -> blocks that resource alone allows
    warps_per_sm: int = 0
    occupancy_pct: float = 0.0   # resident warps / the SM's maximum
    problem: str = None          # why 0 blocks fit, in words


def occupancy(registers, shared_bytes, threads, arch):
    """Resident blocks per SM for a kernel with ``registers`` per thread, ``shared_bytes`` of
    static shared memory per block, launched with ``threads`` per block, on ``arch`` (an Arch
    or "7.5").  cuda_occupancy.h's cudaOccMaxActiveBlocksPerMultiprocessor without dynamic
    shared memory, with the default carveout and cache preference."""
    a = ARCHS[arch] if isinstance(arch, str) else arch
    warps = -(-threads // a.warp_size)
    problems = []
    if threads > a.max_threads_per_block:
        problems.append(f"{threads} threads per block; at most {a.max_threads_per_block}")
    if registers > a.max_registers_per_thread:
        problems.append(f"{registers} registers per thread; at most {a.max_registers_per_thread}")
    by = {"threads": a.max_warps_per_sm // warps}
    # registers: each warp gets registers x 32 rounded up to the unit, within one of the SM's
    # 4 sub-partitions; the launch check assumes a block's warps spread over all 4
    per_warp = _round_up(registers * a.warp_size, a.register_unit)
    if per_warp == 0:
        pass  # no registers: no limit from them (INT_MAX in cuda_occupancy.h)
    elif per_warp * _round_up(warps, a.sub_partitions) > a.registers_per_block:
        by["registers"] = 0
        problems.append(f"{per_warp * _round_up(warps, a.sub_partitions)} registers per block (allocated); "
                        f"at most {a.registers_per_block}")
    else:
        warps_per_sub = a.registers_per_sm // a.sub_partitions // per_warp
        by["registers"] = warps_per_sub * a.sub_partitions // warps
    # shared memory: static + reserved, rounded up to the unit, out of the largest carveout
    allocated = _round_up(shared_bytes + a.shared_reserved_per_block, a.shared_unit)
    if shared_bytes > a.static_shared_bytes_per_block:
        by["shared memory"] = 0
        problems.append(f"{shared_bytes} bytes of static shared memory; at most {a.static_shared_bytes_per_block}")
    elif allocated:  # none (no shared memory, nothing reserved): no limit from it
        by["shared memory"] = a.shared_bytes_per_sm // allocated
    by["blocks"] = a.max_blocks_per_sm
    blocks = 0 if problems else min(by.values())
    limited = [k for k, v in by.items() if v == blocks] if not problems else \
        [k for k, v in by.items() if v == 0] or ["launch limits"]
    warps_per_sm = blocks * warps
    return Occupancy(blocks, limited, by, warps_per_sm, round(100.0 * warps_per_sm / a.max_warps_per_sm, 1),
                     "; ".join(problems) or (None if blocks else "no block fits"))
