"""Compile an SGEMM kernel to SASS without a GPU and count the instructions that matter.

numba turns the kernel's Python function into PTX through libnvvm (no driver needed), ptxas
(``-arch=sm_90``) assembles it and cuobjdump disassembles it.  Start Python with
GEMM_LESSONS_SIMULATOR=0; ``pip install -e ".[offline-sass]"`` brings the compiler (GET_TOOLS), or
put a CUDA toolkit's bin directory (ptxas, cuobjdump) on PATH.
The GPU's own driver may compile the same PTX slightly differently: a quick look before
spending GPU time, and the check that two versions of a kernel give the same machine code
(tests/kernels/test_sass_equal.py).
"""
import collections
import os
import re
import shutil
import subprocess
import tempfile

from gemm_lessons.core import backend
from gemm_lessons.instruments.compiler_facts import main_loop



def find_tool(name):
    """$NAME (e.g. $PTXAS) when set, else ``name`` on PATH, else the copy pip's CUDA packages put in
    site-packages (nvidia/cu13/bin, nvidia/cuda_nvcc/bin, ...), else the bare name (not found)."""
    if os.environ.get(name.upper()):
        return os.environ[name.upper()]
    if shutil.which(name):
        return shutil.which(name)
    import glob
    import site

    roots = site.getsitepackages() + [site.getusersitepackages()]
    for root in roots:
        for pattern in ("nvidia/cu*/bin", "nvidia/cuda_nvcc/bin", "nvidia/cuda_cuobjdump/bin"):
            for d in sorted(glob.glob(os.path.join(root, pattern)), reverse=True):  # newest CUDA first
                if os.path.isfile(os.path.join(d, name)):
                    return os.path.join(d, name)
    return name


# where to get them.  The extra pins CUDA 13.5.37, the versions tests/data/sass_baseline.json was recorded
# with: libnvvm (nvidia-nvvm: numba's PTX), NVRTC (nvidia-cuda-nvrtc: numba-cuda asks it which GPUs it
# can compile for), ptxas (nvidia-cuda-nvcc), cuobjdump and the nvdisasm it runs (nvidia-cuda-cuobjdump,
# nvidia-cuda-nvdisasm).  A ptxas older than libnvvm rejects its PTX (ptxas 13.0: "Unsupported .version
# 9.5"), hence the pip copies first on PATH.
GET_TOOLS = ('pip install -e ".[offline-sass]" (the CUDA 13.5.37 wheels nvidia-nvvm, nvidia-cuda-nvrtc, '
             "nvidia-cuda-nvcc, nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm) and put site-packages/nvidia/cu13/bin "
             "first on PATH (.ci/run does both), or install the CUDA toolkit and put its bin/ on PATH, or set "
             "$PTXAS / $CUOBJDUMP to the programs")
CUOBJDUMP = find_tool("cuobjdump")
PTXAS = find_tool("ptxas")
# counted by prefix, first match wins: LDS.128 before LDS, LDG.E.128 before LDG.E
OPS = ("FFMA", "LDS.128", "LDS.64", "LDS", "STS.128", "STS", "LDG.E.128", "LDG.E", "STG.E.128", "STG.E",
       "BAR.SYNC", "STL", "LDL")
# an instruction line: /*address*/ (4 or more hex digits) [@predicate] OPCODE...
_OPCODE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)")


def _nvdisasm_found():
    """cuobjdump -sass runs nvdisasm, found beside cuobjdump, on PATH or in $NVDISASM_PATH."""
    beside = os.path.join(os.path.dirname(shutil.which(CUOBJDUMP) or ""), "nvdisasm")
    in_env = os.path.join(os.environ.get("NVDISASM_PATH", ""), "nvdisasm")
    return bool(shutil.which("nvdisasm") or shutil.which(beside) or shutil.which(in_env))


def _first_line(e):
    return str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__


def missing_toolchain():
    """Why kernels cannot be compiled offline here (a sentence naming everything missing and how to
    get it), or None when they can."""
    missing = []
    if backend.SIMULATOR:
        missing.append("numba's CUDA simulator is active (start Python with GEMM_LESSONS_SIMULATOR=0)")
    missing += [f"{tool} was not found" for tool in (PTXAS, CUOBJDUMP) if shutil.which(tool) is None]
    if shutil.which(CUOBJDUMP) and not _nvdisasm_found():
        missing.append("nvdisasm (which cuobjdump -sass runs) was not found beside cuobjdump or on PATH")
    if not backend.SIMULATOR:  # the simulator's numba.cuda has neither
        def libnvvm():
            from numba.cuda.cudadrv import nvvm

            nvvm.NVVM()

        def nvrtc():
            from numba.cuda.cudadrv import nvrtc

            nvrtc.get_supported_ccs()

        for name, load in (("libnvvm", libnvvm), ("NVRTC", nvrtc)):
            try:
                load()
            except Exception as e:  # noqa: BLE001 (any failure to load it means: no toolchain)
                missing.append(f"{name} cannot be loaded through numba ({_first_line(e)})")
    return f"{'; '.join(missing)}. Get them: {GET_TOOLS}" if missing else None


def versions():
    """numba, numba-cuda, NVVM, ptxas and nvJitLink versions (what the counts depend on)."""
    import importlib.metadata

    import numba
    from numba.cuda.cudadrv import nvvm

    try:
        ptxas = subprocess.run([PTXAS, "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:  # not installed: nvJitLink alone compiles numba's LTO kernels
        ptxas = ""
    return {"numba": numba.__version__, "numba-cuda": importlib.metadata.version("numba-cuda"),
            "nvvm": ".".join(map(str, nvvm.NVVM().get_version())),
            "ptxas": next((line for line in ptxas.splitlines() if "release" in line), ptxas or None),
            "nvjitlink": nvjitlink_version()}


def compile_sass(kernel, max_registers=None, cc=(9, 0), argtypes=None, sass=True):
    """(SASS text, ptxas -v output) of a numba kernel compiled for ``argtypes`` (numba types;
    default: an SGEMM kernel's float32 matrices and scalars) and compute capability ``cc``: numba
    makes PTX for that cc, ptxas assembles it for sm_XY.  ``sass=False`` skips the disassembly
    (the SASS text is then None: cuobjdump is not needed)."""
    from numba import cuda, types

    if argtypes is None:
        arr = types.Array(types.float32, 2, "C")
        argtypes = (arr, arr, arr, types.float32, types.float32)
    ptx, _ = cuda.compile_ptx(kernel.py_func, types.void(*argtypes), cc=cc)
    arch = f"sm_{cc[0]}{cc[1]}"
    with tempfile.TemporaryDirectory() as d:
        with open(f"{d}/k.ptx", "w") as f:
            f.write(ptx)
        opts = ["-maxrregcount", str(max_registers)] if max_registers else []
        run = subprocess.run([PTXAS, f"-arch={arch}", "-v", *opts, f"{d}/k.ptx", "-o", f"{d}/k.cubin"],
                             capture_output=True, text=True)
        if run.returncode:  # e.g. a ptxas older than the PTX numba's libnvvm wrote
            raise RuntimeError(f"{PTXAS} -arch={arch} failed for {kernel.__name__}: {run.stderr.strip()}")
        info = run.stderr
        text = None
        if sass:
            dump = subprocess.run([CUOBJDUMP, "-sass", f"{d}/k.cubin"], capture_output=True, text=True)
            if dump.returncode:  # e.g. no nvdisasm beside cuobjdump or on PATH
                raise RuntimeError(f"{CUOBJDUMP} -sass failed for {kernel.__name__}: {dump.stderr.strip()}")
            text = dump.stdout
    return text, info


def lto_link_info(kernel, max_registers=None, cc=(9, 0), argtypes=None):
    """The ptxas report (``-v`` lines) of a numba kernel compiled the way numba-cuda compiles it
    on a GPU when nvJitLink is installed (the kernel's ``lto`` option, then the default): libnvvm
    makes LTO-IR for ``cc``, nvJitLink optimises it at link time and assembles it for sm_XY.
    Needs no GPU.  This, not PTX through ptxas, reproduces the registers and spills the H100
    recorded (results/arch-facts.json, h100_check)."""
    from cuda.core import Linker, LinkerOptions, ObjectCode
    from numba import cuda, types

    if argtypes is None:
        arr = types.Array(types.float32, 2, "C")
        argtypes = (arr, arr, arr, types.float32, types.float32)
    ltoir, _ = cuda.compile(kernel.py_func, types.void(*argtypes), cc=cc, output="ltoir", device=False, abi="numba")
    options = LinkerOptions(arch=f"sm_{cc[0]}{cc[1]}", link_time_optimization=True, max_register_count=max_registers,
                            verbose=True)
    linker = Linker(ObjectCode.from_ltoir(ltoir, name=kernel.__name__), options=options)
    linker.link("cubin")
    return linker.get_info_log()


def nvjitlink_version():
    """nvJitLink's version as "13.0", or None when it cannot be loaded."""
    try:
        from cuda.bindings import nvjitlink

        return ".".join(map(str, nvjitlink.version()))
    except Exception:  # noqa: BLE001 (not installed, or no library behind the bindings)
        return None


def ptxas_resources(info):
    """What ``ptxas -v`` reports for the kernel (the entry function) in ``info``: registers,
    stack frame and spill bytes per thread, static shared memory and barriers per block."""
    # the lines after "Compiling entry function" belong to the kernel; a device function
    # that was not inlined gets lines of its own before or after them
    entry = info.split("Compiling entry function", 1)
    if len(entry) != 2:
        raise ValueError(f"no entry function in the ptxas output:\n{info}")
    text = entry[1].split("Compiling entry function", 1)[0]

    def number(pattern, default=None):
        m = re.search(pattern, text)
        if m is None and default is None:
            raise ValueError(f"ptxas output without {pattern!r}:\n{info}")
        return int(m.group(1)) if m else default

    return {"registers": number(r"Used (\d+) registers"),
            "stack_bytes": number(r"(\d+) bytes stack frame"),
            "spill_store_bytes": number(r"(\d+) bytes spill stores"),
            "spill_load_bytes": number(r"(\d+) bytes spill loads"),
            "shared_bytes": number(r"(\d+) bytes smem", 0),  # absent when the kernel has none
            "barriers": number(r"used (\d+) barriers", 0)}


def main_loop_opcodes(sass):
    """Counter of the opcodes (predicates dropped) between the target of the first backward
    branch and that branch: the main loop of an SGEMM kernel, whose order the compiler may
    schedule differently while the instructions stay the same."""
    ins = [(int(m.group(1), 16), m.group(2).strip()) for m in re.finditer(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", sass)]
    for address, text in ins:
        target = re.search(r"\bBRA (0x[0-9a-f]+)", text)
        if target and int(target.group(1), 16) < address:
            start = int(target.group(1), 16)
            return collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", t).split()[0]
                                       for a, t in ins if start <= a <= address)
    return collections.Counter()


def sass_facts(kernel, max_registers=None):
    """Registers, spill bytes, counts of OPS and of all instructions ("all"), and the main loop
    (``loop``: inspect_kernel.main_loop)."""
    sass, info = compile_sass(kernel, max_registers)
    counts = collections.Counter()
    for line in sass.splitlines():
        m = _OPCODE.search(line)
        if m:
            op = m.group(1)
            for name in OPS:
                if op == name or op.startswith(name + "."):
                    counts[name] += 1
                    break
            counts["all"] += 1
    regs = int(re.search(r"Used (\d+) registers", info).group(1))
    spill = int(re.search(r"(\d+) bytes spill stores", info).group(1))
    return dict(regs=regs, spill_bytes=spill, **{op: counts[op] for op in OPS + ("all",)},
                loop=main_loop(sass))
