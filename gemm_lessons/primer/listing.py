"""What the compiler made of the primer's kernels: PTX, SASS, registers, local memory.

    python -m gemm_lessons.primer.listing                         # on a GPU
    GEMM_LESSONS_SIMULATOR=0 python -m gemm_lessons.primer.listing --offline   # no GPU needed

On a GPU the kernels are compiled for that GPU through numba (``inspect_asm``,
``inspect_sass``, ``get_regs_per_thread``).  ``--offline`` compiles them for sm_90 (Hopper)
on a machine with the CUDA compiler tools but no GPU: numba makes the PTX (through libNVVM),
``ptxas`` assembles it and ``cuobjdump`` disassembles it.  Either way the result goes to
results/primer-listing.json, which the primer shows when it runs on the simulator.
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile

from .. import _backend, inspect_kernel, results

RECORD = results.path_for("primer-listing", "")
SIGNATURES = {
    "saxpy": "void(float32, float32[::1], float32[::1], float32[::1])",
    "reverse_slices": "void(float32[::1], float32[::1])",
}
_ENCODING = re.compile(r"\s*/\* 0x[0-9a-f]{16} \*/")


def kernels():
    from . import reverse, saxpy

    return {"saxpy": saxpy.saxpy, "reverse_slices": reverse.reverse_slices}


def clean_sass(text):
    """Keep the instruction lines of a SASS listing (drop the binary encodings and headers)."""
    out = []
    for line in text.splitlines():
        line = _ENCODING.sub("", line).rstrip()
        if re.match(r"\s*/\*[0-9a-f]{4,}\*/", line):
            out.append(line.strip())
    return "\n".join(out)


def _from_gpu():
    from numba import cuda

    found = {}
    for name, k in kernels().items():
        k.compile(SIGNATURES[name])
        sass = inspect_kernel._only(k.inspect_sass())
        counts = inspect_kernel.count_opcodes(sass)
        found[name] = dict(inspect_kernel.resources(k), sass_summary=inspect_kernel.summarise_opcodes(counts),
                           sass_counts=dict(counts), ptx=inspect_kernel._only(k.inspect_asm()),
                           sass=clean_sass(sass))
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    cc = ".".join(map(str, dev.compute_capability))
    return found, f"compiled on {name} (compute capability {cc}) by numba", {"device": name}


def _tool(name):
    return os.environ.get(name.upper(), name)


def _from_tools(cc=(9, 0)):
    from numba import cuda

    arch = f"sm_{cc[0]}{cc[1]}"
    version = subprocess.run([_tool("ptxas"), "--version"], capture_output=True, text=True).stdout.strip()
    found = {}
    for name, k in kernels().items():
        ptx, _ = cuda.compile_ptx(k.py_func, SIGNATURES[name], cc=cc)
        with tempfile.TemporaryDirectory() as d:
            with open(f"{d}/k.ptx", "w") as f:
                f.write(ptx)
            info = subprocess.run([_tool("ptxas"), f"-arch={arch}", "-v", f"{d}/k.ptx", "-o", f"{d}/k.cubin"],
                                  capture_output=True, text=True, check=True).stderr
            sass = subprocess.run([_tool("cuobjdump"), "-sass", f"{d}/k.cubin"], capture_output=True,
                                  text=True, check=True).stdout
        counts = inspect_kernel.count_opcodes(sass)
        smem = re.search(r"(\d+) bytes smem", info)
        found[name] = {"registers": int(re.search(r"Used (\d+) registers", info).group(1)),
                       "local_bytes": int(re.search(r"(\d+) bytes stack frame", info).group(1)),
                       "shared_bytes": int(smem.group(1)) if smem else 0,
                       "sass_summary": inspect_kernel.summarise_opcodes(counts), "sass_counts": dict(counts),
                       "ptx": ptx, "sass": clean_sass(sass)}
    last = version.splitlines()[-1] if version else "ptxas (version unknown)"
    return found, (f"compiled offline for {arch} without a GPU (numba-cuda's libNVVM, then {last}); "
                   "the GPU's own driver may schedule a few instructions differently"), {"target": arch}


SASS_REFERENCE = "https://docs.nvidia.com/cuda/cuda-binary-utilities/index.html#instruction-set-reference"
# What the opcodes of the primer's listings do (NVIDIA's instruction set reference, SASS_REFERENCE,
# gives one line for each; the suffixes after the first dot are variants: widths, types, modes).
MEANINGS = {
    "LDC": "load a constant: the kernel's parameters (array pointers, sizes, `a`) sit in a constant bank",
    "ULDC": "load a constant into a *uniform* register, one value shared by the whole warp",
    "S2R": "read a special register: `SR_TID.X` is `threadIdx.x`, `SR_CTAID.X` is `blockIdx.x`",
    "S2UR": "read a special register into a uniform register",
    "CS2R": "read a special register pair, e.g. the cycle counter `SR_CLOCKLO` (`clock64`)",
    "IMAD": "integer multiply-add; also serves as move and add (`.WIDE`: 64-bit result)",
    "IADD3": "add three integers",
    "VIADD": "integer add",
    "LEA": "shift and add: base address + index x 4 bytes (`.HI`: the upper 32 bits)",
    "SHF": "funnel shift (in these kernels: the sign of an index, for numba's negative-index support)",
    "LOP3": "any logic function of three inputs (`.LUT` gives its truth table)",
    "SEL": "pick one of two values by a predicate",
    "MOV": "copy a value",
    "IMNMX": "integer minimum or maximum",
    "VIMNMX": "integer minimum or maximum",
    "ISETP": "compare integers and set a predicate register (`P0`)",
    "EXIT": "end the thread (with `@P0` in front: only where `P0` is true)",
    "BRA": "branch (the `BRA` to itself after `EXIT` is padding that never runs)",
    "NOP": "no operation: padding to the end of the code",
    "LDG": "load from global memory (`.E`: 64-bit address; `.128`: 16 bytes per thread)",
    "STG": "store to global memory",
    "LDS": "load from shared memory (`.128`: 16 bytes per thread)",
    "STS": "store to shared memory",
    "LDL": "load from local memory: a spilled register coming back",
    "STL": "store to local memory: a register spilled",
    "BAR": "barrier: `cuda.syncthreads()`",
    "FFMA": "FP32 fused multiply-add `d = a*b + c`, one rounding: 2 floating-point operations",
    "FADD": "FP32 add",
    "FMUL": "FP32 multiply",
}


def ptx_body(ptx):
    """The instructions of a PTX kernel, without the declarations and the parameter loads
    (whose operands are numba's long mangled names)."""
    body = ptx[ptx.index("{", ptx.index(".entry")) + 1:]
    keep = []
    for line in body.splitlines():
        t = line.strip()
        if not t or t.startswith((".reg", "ld.param", "}", "//")):
            continue
        keep.append(line.rstrip())
    return "\n".join(keep)


def sass_until_exit(sass):
    """The SASS lines up to the last EXIT (the rest is padding)."""
    lines = sass.splitlines()
    last = max((i for i, l in enumerate(lines) if re.search(r"\bEXIT\b", l)), default=len(lines) - 1)
    return "\n".join(lines[:last + 1])


def explain_opcodes(sass):
    """A markdown table: each opcode of a listing (in order of first appearance), how often it
    occurs, what it does."""
    counts, order = {}, []
    for m in inspect_kernel._OPCODE.finditer(sass):
        base = m.group(1).split(".")[0]
        if base not in counts:
            order.append(base)
        counts[base] = counts.get(base, 0) + 1
    lines = ["| opcode | count | what it does |", "|---|---:|---|"]
    for op in order:
        meaning = MEANINGS.get(op, f"see NVIDIA's [instruction set reference]({SASS_REFERENCE})")
        lines.append(f"| `{op}` | {counts[op]} | {meaning} |")
    return "\n".join(lines)


def load(path=RECORD):
    """The recorded listing, or None."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def listing():
    """(source sentence, {kernel: facts with ptx and sass}): compiled now on a GPU, else the
    record; (None, None) on the simulator without a record."""
    if not _backend.SIMULATOR:
        found, how, _ = _from_gpu()
        return how + " just now", found
    rec = load()
    if rec is None:
        return None, None
    return f"recorded: {rec['how']}, {rec['date'][:10]}", rec["kernels"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--offline", action="store_true", help="compile for sm_90 with ptxas, no GPU needed")
    p.add_argument("--out", default=RECORD)
    args = p.parse_args(argv)
    if _backend.SIMULATOR:
        sys.exit("the CUDA simulator compiles nothing: run on a GPU, or with GEMM_LESSONS_SIMULATOR=0 --offline "
                 "where libNVVM, ptxas and cuobjdump are installed")
    import numba
    import numba_cuda

    found, how, where = _from_tools() if args.offline else _from_gpu()
    record = {"how": how, "kernels": found, **where,
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "versions": {"numba": numba.__version__, "numba_cuda": numba_cuda.__version__},
              "command": "python -m gemm_lessons.primer.listing " + " ".join(argv if argv is not None else sys.argv[1:])}
    with open(args.out, "w") as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.write("\n")
    for name, k in found.items():
        print(f"{name}: {k['registers']} registers, {k['local_bytes']} bytes local, {k['sass_summary']}")
    print("wrote", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
