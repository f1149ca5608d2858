"""Shared-memory banks: how many wavefronts one warp-wide access costs (no GPU needed).

NVIDIA's rules, as the lessons use them: shared memory is 32 banks of 4 bytes; the word at
byte address a lives in bank (a // 4) % 32.  A warp-wide access of 4-byte values is served
in one phase (all 32 lanes), 8-byte values in two phases (lanes 0-15, 16-31), 16-byte values
in four phases (8 lanes each); an 8-byte broadcast (every lane one address) in one (measured).
Within a phase, lanes reading the same word share it
(broadcast); a phase costs as many wavefronts as the largest number of *distinct* words
that fall into one bank.  An access with no conflict costs one wavefront per phase.
"""
import collections
from dataclasses import dataclass, field

BANKS = 32
WORD = 4
PHASE_LANES = {4: 32, 8: 16, 16: 8}


@dataclass
class Access:
    """Cost of one warp-wide shared-memory instruction."""
    wavefronts: int
    ideal: int
    degree: int  # the n of an n-way conflict: most distinct words in one bank within a phase
    phases: list = field(default_factory=list)  # wavefronts per phase

    @property
    def conflicts(self):
        """Extra wavefronts caused by conflicts (what ncu reports as bank conflicts)."""
        return self.wavefronts - self.ideal


def words_of(address, width):
    return [(address + i) // WORD for i in range(0, width, WORD)] if width >= WORD else [address // WORD]


def _paired(addresses):
    """True when lane pairs (n, n^1) or (n, n^2) all use the same address."""
    for step in (1, 2):
        if all(addresses[l] == addresses[l ^ step] for l in range(32)):
            return True
    return False


def _one_pass_8(addresses):
    """An 8-byte access in which every active lane reads the same address (a broadcast) is served
    in one wavefront, not one per half-warp: Nsight Compute counted 1 wavefront per LDS.64 for a
    warp reading one float64 on an H200, where two half-warp phases would cost 2
    (tools/bank_truth.py, results/banks-nvidia-h200.json, "float64 broadcast").  Other accesses
    keep their two phases (lanes 16-31 repeating lanes 0-15, say: not measured)."""
    active = {a for a in addresses if a is not None}
    if len(active) != 1:
        return None
    return Access(1, 1, 1, [1])


def wavefronts(addresses, width=4, paired_loads=False):
    """Cost of one warp-wide access: ``addresses`` are the 32 lanes' byte addresses in lane
    order (None for an inactive lane), ``width`` the bytes each lane reads (4, 8 or 16).

    ``paired_loads`` adds one rule measured with ncu on an H100 (and described by NVIDIA
    staff for Volta/Turing): shared memory returns 128 bytes per wavefront, one register per
    lane, so a 16-byte load normally needs four; but when lanes (n, n^1) or (n, n^2) all share
    their addresses the return is packed two lanes per register and the load needs half as
    many: the 16 distinct lanes are served in two phases of 8."""
    if width not in PHASE_LANES:
        raise ValueError(f"width must be 4, 8 or 16 bytes, got {width}")
    if len(addresses) != 32:
        raise ValueError(f"give 32 addresses (one per lane, None if inactive), got {len(addresses)}")
    for a in addresses:
        if a is not None and a % width:
            raise ValueError(f"address {a} is not a multiple of the access width {width} bytes")
    per = PHASE_LANES[width]
    if width == 8:  # a broadcast: one pass (measured, see _one_pass_8)
        one = _one_pass_8(addresses)
        if one:
            return one
    lanes_of = list(addresses)
    if paired_loads and width == 16 and _paired(addresses):
        step = 1 if all(addresses[l] == addresses[l ^ 1] for l in range(32)) else 2
        lanes_of = [a for l, a in enumerate(addresses) if not l & step]  # one lane per pair
        lanes_of += [None] * 16  # the pairs' partners: already served
        per = 8
    phases = []
    ideal = 0
    for start in range(0, 32, per):
        lanes = [a for a in lanes_of[start:start + per] if a is not None]
        if not lanes:
            continue
        words = {w for a in lanes for w in words_of(a, width)}
        by_bank = collections.Counter(w % BANKS for w in words)
        phases.append(max(by_bank.values()))
        ideal += -(-len(words) // BANKS)  # at least one wavefront per 32 distinct words
    total = sum(phases)
    return Access(total, ideal, max(phases) if phases else 0, phases)


def warp_layout_addresses(shape, tile=8, split=False, row_floats=128, lanes_along="cols", k=0):
    """Byte addresses of a warp's first read of a B-tile row in an outer-product kernel.

    ``shape`` is the warp's layout of threads (rows, cols), e.g. (2, 16) or (4, 8); thread
    column c owns ``tile`` consecutive floats starting at c*tile (or, with ``split``, two
    halves of tile/2 floats, row_floats/2 apart: the 8x8 -> four 4x4 split; the first half is
    returned).  ``lanes_along`` says which way consecutive lanes run: "cols" (lane = r*cols + c)
    or "rows" (lane = c*rows + r).  Threads in the same column read the same address."""
    wr, wc = shape
    if wr * wc != 32:
        raise ValueError("a warp has 32 threads: rows x cols must be 32")
    out = []
    for lane in range(32):
        col = lane % wc if lanes_along == "cols" else lane // wr
        first = col * (tile // 2 if split else tile)
        out.append(4 * (k * row_floats + first))
    return out
