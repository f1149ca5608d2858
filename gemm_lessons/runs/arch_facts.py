"""Compiler facts of every kernel on smaller GPUs than the H100, compiled without a GPU.

The course was measured on an H100 (compute capability 9.0).  A student may open it on a T4
(7.5, Colab's free GPU), an A100 (8.0), an RTX 30xx (8.6) or an RTX 40xx / L4 (8.9).  For
every kernel the lessons and the library launch, with the threads per block they launch it
with, this module records what the compiler makes of it for each of those compute
capabilities, offline, the way numba-cuda compiles a kernel on a GPU: libnvvm makes LTO-IR for
the target and nvJitLink optimises it at link time and assembles it for sm_XY (ptxas inside
it reports registers, stack and spills per thread and static shared memory per block).  A
kernel whose ``lto`` option is off would go as PTX through the ptxas program instead; here
none is.  ``occupancy`` turns the facts into resident blocks per SM with the limits of that
compute capability (``ARCHS``).

    GEMM_LESSONS_SIMULATOR=0 python -m gemm_lessons.runs.arch_facts --write   # compiles everything (an hour or so)
    python -m gemm_lessons.runs.arch_facts                                    # the committed record, as tables

``--write`` writes results/arch-facts.json (the record), results/arch-facts.md (its tables)
and RESULTS.md's "Smaller GPUs" block; ``--rederive`` redoes everything computed from the
compiler's facts (after a change to ``occupancy`` or ``ARCHS``) without compiling; ``--add``
compiles only the kernels the record lacks (a new library kernel), and with ``--refresh NAME...``
those whose code changed, and lists them under ``added``.
tests/runs/test_arch_facts.py checks the record against ``occupancy`` and the kernel list without
compiling anything.

The limits in ``ARCHS`` and their sources (the Programming Guide's "Technical Specifications per Compute Capability",
cuda_occupancy.h): gemm_lessons.model.occupancy.

What this cannot see: a GPU with other library versions (libnvvm, nvJitLink) may compile a
little differently; the record compares its sm_90 facts with those the H100 recorded from its
own compile (``h100_check``).  Compiled as PTX through ptxas instead, 3 of those 21 kernels came
out different (reg2d: 52 bytes of spills where the H100 had none; results/experiments/): link-time
optimisation matters.
"""
import argparse
import inspect
import json
import os
import sys
import time
from dataclasses import dataclass

from gemm_lessons.core import backend, tables
# the occupancy calculator (model/occupancy.py); lesson 09 and the tests read ARCHS and occupancy here
from gemm_lessons.model.occupancy import AMPERE_TUNING_GUIDE, ARCHS, CC_TABLE, KIB, OCCUPANCY_HEADER, occupancy
from gemm_lessons.records import results

RECORD = results.path_for("arch-facts", "")
TABLES = results.path_for("arch-facts-tables", "")
RESULTS_MD = os.path.join(os.path.dirname(results.RESULTS_DIR), "RESULTS.md")
BEGIN, END = "<!-- arch-facts: begin -->", "<!-- arch-facts: end -->"

# --- the kernels --------------------------------------------------------------------------

@dataclass(frozen=True)
class KernelSpec:
    name: str
    group: str          # "rung", "variant", "transpose", "copy", "library", "sweep"
    lesson: str         # the lesson that launches it ("" for the library)
    threads: int        # threads per block its launcher uses
    max_registers: int  # the kernel's register cap (None: the compiler decides)
    build: object       # () -> (numba kernel, its argument types): sweep kernels are made only when compiled


def _ready(kernel, argtypes):
    return lambda: (kernel, tuple(argtypes))


class _Capture:
    """Stands in for a numba kernel in a launcher: records the block instead of launching."""

    def __init__(self, kernel):
        self._kernel, self.launched_with = kernel, None

    def __getattr__(self, name):  # kernel.config, kernel.tile, kernel.block ... of the real one
        return getattr(self._kernel, name)

    def __getitem__(self, launch_config):
        self.launched_with = launch_config[1]
        return lambda *args: None


class _Operand:
    """Enough of a device array for the launchers' checks (no GPU needed): float32,
    C-contiguous, 16-byte aligned."""
    dtype = "float32"

    def __init__(self, rows, cols):
        self.shape = (rows, cols)
        self.__cuda_array_interface__ = {"shape": self.shape, "typestr": "<f4", "data": (0, False),
                                         "strides": None, "version": 3}

    def is_c_contiguous(self):
        return True


def _operand(rows, cols):
    if backend.SIMULATOR:  # the launchers' checks want the simulator's arrays there
        import numpy as np
        from numba import cuda

        return cuda.device_array((rows, cols), np.float32)
    return _Operand(rows, cols)


def launch_threads(rung, n=256):
    """Threads per block ``rung``'s launcher launches its kernel with (at n x n x n; nothing runs)."""
    capture = _Capture(rung.kernel)
    operands = [_operand(n, n) for _ in range(3 if rung.operation == "sgemm" else 2)]
    rung.launch(*operands, kernel=capture)
    block = capture.launched_with
    threads = 1
    for d in (block if isinstance(block, tuple) else (block,)):
        threads *= d
    return threads


def kernel_specs(sweep=True):
    """Every kernel the lessons and the library launch, with its launch threads: the SGEMM rungs
    and variants, the transposes and the copy of lesson 09, gl.sgemm's kernels (every tile size
    and layout of device_arrays.KERNEL_KEYS), library.transpose's (device_transpose.kernel_specs)
    and, with ``sweep``, lesson 08's sweep
    (tuning.lesson_configs(), run on the student's GPU with ``python -m gemm_lessons.runs.tuning``)."""
    from gemm_lessons.core.numba_compat import types

    from gemm_lessons.kernels import device_copy, ladder
    from gemm_lessons.library import device_arrays
    from gemm_lessons.runs import tuning
    from gemm_lessons.kernels.sgemm import warptile

    arr = types.Array(types.float32, 2, "C")
    sgemm = (arr, arr, arr, types.float32, types.float32)

    def cap(kernel):
        return getattr(kernel, "targetoptions", {}).get("max_registers")  # plain cuda.jit on the simulator has none

    specs = []
    for group, table in (("rung", ladder.SGEMM), ("variant", ladder.VARIANTS)):
        specs += [KernelSpec(name, group, r.lesson, launch_threads(r), cap(r.kernel), _ready(r.kernel, sgemm))
                  for name, r in table.items()]
    specs += [KernelSpec(f"transpose_{name}", "transpose", r.lesson, launch_threads(r), cap(r.kernel),
                         _ready(r.kernel, (arr, arr))) for name, r in ladder.TRANSPOSE.items()]
    specs.append(KernelSpec("copy_float4", "copy", "09", inspect.signature(device_copy.copy_kernel).parameters["threads"].default,
                            cap(device_copy.copy_float4), _ready(device_copy.copy_float4, (arr, arr))))
    for kind, tiles, layout in device_arrays.KERNEL_KEYS:
        kernel, argtypes, threads = device_arrays.kernel_spec(kind, tiles, layout)
        name = " ".join(x for x in ["gl.sgemm", kind, tiles, "strided" if layout == "A" else ""] if x)
        specs.append(KernelSpec(name, "library", "", threads, cap(kernel), _ready(kernel, argtypes)))
    from gemm_lessons.library import device_transpose

    specs += [KernelSpec(f"library.transpose {name}", "library", "", threads, cap(kernel),
                         _ready(kernel, (arr, arr))) for name, kernel, threads in device_transpose.kernel_specs()]
    if sweep:  # what tuning.sweep launches: warptile.sgemm with config.threads
        specs += [KernelSpec(f"sweep {cfg.short()}", "sweep", "08", cfg.threads, cfg.max_registers,
                             lambda cfg=cfg: (warptile.kernel_for(cfg), sgemm))
                  for cfg in tuning.lesson_configs()]
    return specs


# --- compiling ----------------------------------------------------------------------------

def missing_toolchain():
    """Why kernels cannot be compiled offline here (a sentence), or None."""
    from gemm_lessons.instruments import offline_sass

    if backend.SIMULATOR:
        return ("the CUDA simulator is active: start Python with GEMM_LESSONS_SIMULATOR=0 (no GPU is needed; "
                "numba compiles with libnvvm)")
    try:
        from numba.cuda.cudadrv import nvvm

        nvvm.NVVM()
    except Exception as e:  # noqa: BLE001 (any failure to load libnvvm means: no toolchain)
        return f"libnvvm cannot be loaded through numba ({e}): pip install numba-cuda[cu13]"
    if offline_sass.nvjitlink_version() is None:
        return ("nvJitLink cannot be loaded (numba-cuda compiles kernels through it when it is installed, and so "
                "does this): pip install numba-cuda[cu13], which brings nvidia-nvjitlink")
    return None


def compile_facts(kernel, argtypes, max_registers, arch):
    """The compiler's resources of a numba kernel compiled for ``argtypes`` on ``arch`` (an
    Arch), the way numba-cuda compiles it on a GPU: through nvJitLink with link-time
    optimisation when the kernel's ``lto`` option is on (numba-cuda's default where nvJitLink
    is installed), else its PTX through ptxas."""
    from gemm_lessons.instruments import offline_sass

    if kernel.targetoptions.get("lto"):
        info = offline_sass.lto_link_info(kernel, max_registers, cc=arch.cc_tuple, argtypes=argtypes)
    else:
        _, info = offline_sass.compile_sass(kernel, max_registers, cc=arch.cc_tuple, argtypes=argtypes, sass=False)
    return offline_sass.ptxas_resources(info)


def kernel_row(facts, spec_threads, arch):
    """One kernel on one arch in the record: the compiler's facts and the occupancy they give."""
    occ = occupancy(facts["registers"], facts["shared_bytes"], spec_threads, arch)
    row = dict(facts, blocks_per_sm=occ.blocks, limited_by=occ.limited_by, warps_per_sm=occ.warps_per_sm,
               occupancy_pct=occ.occupancy_pct)
    if occ.problem:
        row["problem"] = occ.problem
    return row


def collect(archs=None, sweep=True, names=None, progress=True, checkpoint=None):
    """The record (a dict): every kernel of kernel_specs() compiled for every arch.
    ``checkpoint``: a JSON file of the facts compiled so far, read at the start and written
    after each kernel, so that an interrupted run goes on where it stopped."""
    from gemm_lessons.instruments import offline_sass
    from gemm_lessons.measure import provenance

    archs = [ARCHS[cc] for cc in (archs or ARCHS)]
    specs = [s for s in kernel_specs(sweep) if not names or s.name in names]
    saved = json.load(open(checkpoint)) if checkpoint and os.path.exists(checkpoint) else {}
    done, kernels = {}, {}
    t0 = time.time()
    for i, spec in enumerate(specs):
        kernel, argtypes = spec.build()
        entry = {"group": spec.group, "lesson": spec.lesson, "threads": spec.threads,
                 "max_registers": spec.max_registers, "argtypes": [str(t) for t in argtypes],
                 "compiled_with": "nvJitLink (LTO)" if kernel.targetoptions.get("lto") else "ptxas", "arch": {}}
        same = []
        for arch in archs:
            key = (id(kernel), argtypes, arch.cc)  # a kernel listed twice is compiled once
            if key not in done:
                facts = saved.get(f"{spec.name}|{arch.cc}") or compile_facts(kernel, argtypes, spec.max_registers, arch)
                done[key] = (spec.name, facts)
            else:
                same.append(done[key][0])
            entry["arch"][arch.cc] = kernel_row(done[key][1], spec.threads, arch)
            saved[f"{spec.name}|{arch.cc}"] = done[key][1]
        if checkpoint:
            with open(checkpoint, "w") as f:
                json.dump(saved, f)
        if same:
            entry["same_kernel_as"] = same[0]
        kernels[spec.name] = entry
        if progress:
            print(f"[{i + 1}/{len(specs)} {time.time() - t0:.0f} s] {spec.name}: "
                  + ", ".join(f"{cc} {r['registers']} regs {r['blocks_per_sm']} blk"
                              for cc, r in entry["arch"].items()), flush=True)
    record = {
        "what": "registers, spills and static shared memory per kernel as the compiler reports them (ptxas -v, "
                "run inside nvJitLink: numba-cuda's own way of compiling a kernel on a GPU), compiled offline, and "
                "the resident blocks per SM they give (gemm_lessons.runs.arch_facts.occupancy), for every kernel at "
                "the threads per block its launcher uses",
        "command": "GEMM_LESSONS_SIMULATOR=0 python -m gemm_lessons.runs.arch_facts --write",
        "date": provenance.now(),
        "git_commit": provenance.git_commit(),
        "versions": offline_sass.versions(),
        "sources": {"limits": CC_TABLE, "allocation rules": OCCUPANCY_HEADER,
                    "reserved shared memory": AMPERE_TUNING_GUIDE},
        "archs": {a.cc: a.to_dict() for a in archs},
        "kernels": kernels,
    }
    record["summary"] = summary(record)
    record["h100_check"] = h100_check(record)
    return record


def add_missing(record, checkpoint=None, refresh=()):
    """(the record with every kernel of kernel_specs() it lacks, and those named in ``refresh``
    (kernels whose code changed), compiled and put in, in kernel_specs()' order, and their names).
    The other kernels keep their facts and the record its date; ``added`` lists when each was
    compiled, with which toolchain."""
    names = [s.name for s in kernel_specs()]
    unknown = set(refresh) - set(names)
    if unknown:
        raise ValueError(f"no kernel named {sorted(unknown)}; the kernels are those of kernel_specs()")
    missing = [n for n in names if n not in record["kernels"] or n in refresh]
    if not missing:
        return record, []
    new = collect(list(record["archs"]), names=missing, checkpoint=checkpoint)
    out = json.loads(json.dumps(record))
    out["kernels"] = {n: new["kernels"][n] if n in missing else record["kernels"][n]
                      for n in names if n in record["kernels"] or n in missing}
    out.setdefault("added", []).append({"date": new["date"], "git_commit": new["git_commit"],
                                        "versions": new["versions"], "kernels": missing})
    out["summary"] = summary(out)
    out["h100_check"] = h100_check(out)
    return out, missing


FACTS = ("registers", "stack_bytes", "spill_store_bytes", "spill_load_bytes", "shared_bytes", "barriers")


def rederive(record):
    """The record with everything computed from the compiler's facts done again: blocks per SM
    (occupancy, with ARCHS as they are now), the summary, the H100 comparison.  Compiles
    nothing; a record equal to its rederive() agrees with ``occupancy`` and ``ARCHS``."""
    out = json.loads(json.dumps(record))
    out["archs"] = {cc: ARCHS[cc].to_dict() for cc in record["archs"]}
    for k in out["kernels"].values():
        for cc, row in k["arch"].items():
            k["arch"][cc] = kernel_row({f: row[f] for f in FACTS}, k["threads"], ARCHS[cc])
    out["summary"] = summary(out)
    out["h100_check"] = h100_check(out)
    return out


def summary(record):
    """Per arch: kernels that cannot launch (0 blocks per SM) and kernels that spill."""
    out = {}
    for cc in record["archs"]:
        rows = {name: k["arch"][cc] for name, k in record["kernels"].items() if cc in k["arch"]}
        out[cc] = {"do_not_fit": sorted(n for n, r in rows.items() if r["blocks_per_sm"] == 0),
                   "spill": sorted(n for n, r in rows.items() if r["spill_store_bytes"] or r["spill_load_bytes"])}
    return out


def h100_check(record):
    """The offline sm_90 facts next to those the H100 benchmark recorded from its driver's
    compile (results/<H100>.json, ``compiler``): kernels that agree, any that do not, and those
    compiled again (``--refresh``) after that benchmark, whose code changed since: not compared."""
    try:
        bench = results.load(results.REFERENCE_DEVICE)
    except FileNotFoundError:
        return None
    later = {n for entry in record.get("added", []) if entry["date"] > bench.date for n in entry["kernels"]}
    same, differ, changed = [], {}, []
    for name, k in record["kernels"].items():
        h = (bench.compiler or {}).get(name)
        mine = k["arch"].get("9.0")
        if not h or "registers" not in h or mine is None:
            continue
        if name in later:
            changed.append(name)
            continue
        a = (h["registers"], h["shared_bytes"], h["local_bytes"])
        b = (mine["registers"], mine["shared_bytes"], mine["stack_bytes"])
        if a == b:
            same.append(name)
        else:
            differ[name] = {"recorded (registers, shared, local bytes)": list(a),
                            "offline (registers, shared, stack bytes)": list(b)}
    return {"recorded": f"{bench.device.name}, {bench.date[:10]}", "same": same, "differ": differ,
            "changed_since": changed}


# --- the record, as tables ----------------------------------------------------------------

def load(path=RECORD):
    with open(path) as f:
        return json.load(f)


def _cell(r):
    spill = f", spills {r['spill_store_bytes']}/{r['spill_load_bytes']} B" if r["spill_store_bytes"] or \
        r["spill_load_bytes"] else ""
    if r["blocks_per_sm"] == 0:
        return f"**does not fit** ({r.get('problem', '')})"
    return f"{r['registers']} r{spill}: {r['blocks_per_sm']} ({r['occupancy_pct']:.0f}%, {'/'.join(r['limited_by'])})"


GROUPS = [("rung", "SGEMM rungs"), ("variant", "SGEMM variants the lessons compare"),
          ("transpose", "transposes (lesson 09)"), ("copy", "the copy (lesson 09's ceiling)"),
          ("library", "gl.sgemm's kernels (library)"), ("sweep", "lesson 08's sweep (python -m gemm_lessons.runs.tuning)")]


def limits_table(record):
    archs = list(record["archs"].values())
    rows = [["examples", *(a["examples"] for a in archs)],
            ["resident threads (warps) per SM", *(f"{a['max_threads_per_sm']} ({a['max_warps_per_sm']})" for a in archs)],
            ["resident blocks per SM", *(a["max_blocks_per_sm"] for a in archs)],
            ["32-bit registers per SM / per block / per thread",
             *(f"{a['registers_per_sm']} / {a['registers_per_block']} / {a['max_registers_per_thread']}" for a in archs)],
            ["shared memory per SM (KiB)", *(a["shared_bytes_per_sm"] // KIB for a in archs)],
            ["shared memory per block: static / dynamic opt-in (KiB)",
             *(f"{a['static_shared_bytes_per_block'] // KIB} / {a['shared_bytes_per_block_optin'] // KIB}" for a in archs)],
            ["shared memory reserved per block (bytes)", *(a["shared_reserved_per_block"] for a in archs)],
            ["allocation units: registers per warp / shared bytes",
             *(f"{a['register_unit']} / {a['shared_unit']}" for a in archs)]]
    return tables.markdown(["limit", *(f"{a['cc']} ({a['family']})" for a in archs)], rows,
                           "l" + "r" * len(archs))


def kernels_table(record, group=None, names=None, archs=None):
    archs = archs or list(record["archs"])
    rows = []
    for name, k in record["kernels"].items():
        if (group and k["group"] != group) or (names and name not in names):
            continue
        shared = {k["arch"][cc]["shared_bytes"] for cc in archs}
        rows.append([name, k["lesson"], k["threads"], "/".join(map(str, sorted(shared))),
                     *(_cell(k["arch"][cc]) for cc in archs)])
    return tables.markdown(["kernel", "lesson", "threads", "shared B", *archs], rows, "llrr" + "l" * len(archs))


def _versions_line(record):
    v = record["versions"]
    return (f"Compiled offline on {record['date'][:10]} (commit {str(record['git_commit'])[:12]}): numba-cuda "
            f"{v.get('numba-cuda')}, numba {v.get('numba')}, NVVM IR {v.get('nvvm')}, nvJitLink {v.get('nvjitlink')} "
            f"(kernels with numba's lto option: all here), ptxas {v.get('ptxas')} (the others)."
            + "".join(f" {', '.join(names)} {'was' if len(names) == 1 else 'were'} compiled later ({when})."
                      for when, names in _added(record).items()))


def _added(record):
    """{when (and the toolchain, where it differs): [kernel names]} of the kernels compiled after the
    record: a label per kernel in older records, the record's ``added`` list since (--add, --refresh;
    a kernel compiled twice counts at its last)."""
    last = {}
    for name, k in record["kernels"].items():
        if k.get("added"):
            last[name] = f"{k['added']}, the same toolchain"
    for entry in record.get("added", []):
        ptxas = entry["versions"].get("ptxas")
        tools = "the same toolchain" if ptxas == record["versions"].get("ptxas") else f"ptxas {ptxas}"
        for name in entry["kernels"]:
            last[name] = f"{entry['date'][:10]}, commit {str(entry['git_commit'])[:7]}, {tools}"
    out = {}
    for name in record["kernels"]:
        if name in last:
            out.setdefault(last[name], []).append(name)
    return out


def fits_sentence(record):
    bad = {cc: s["do_not_fit"] for cc, s in record["summary"].items() if s["do_not_fit"]}
    n = len(record["kernels"])
    if not bad:
        return (f"All {n} kernels fit on every compute capability recorded ({', '.join(record['archs'])}): "
                "at least one block per SM, nothing over a launch limit.")
    return "Kernels that cannot launch: " + "; ".join(f"{cc}: {', '.join(v)}" for cc, v in bad.items()) + "."


def markdown(record):
    """results/arch-facts.md: the limits, then every kernel on every arch."""
    lines = ["# Compiler facts per compute capability", "",
             "Generated by `python -m gemm_lessons.runs.arch_facts --write` from `results/arch-facts.json`; do not edit.",
             "", _versions_line(record), "",
             f"Limits: [CUDA C++ Programming Guide, Technical Specifications per Compute Capability]({CC_TABLE}); "
             f"allocation units and rules: `{OCCUPANCY_HEADER}` (`cudaOccMaxActiveBlocksPerMultiprocessor`, which "
             "`gemm_lessons.runs.arch_facts.occupancy` follows); reserved shared memory: per-SM capacity minus the "
             f"largest block ([Ampere tuning guide]({AMPERE_TUNING_GUIDE}): 1 KB per block).", "",
             limits_table(record), "",
             "Each cell: registers per thread (r), spill stores/loads in bytes per thread when the compiler reports any, "
             "then resident blocks per SM (resident warps as % of the SM's maximum, and what limits it). "
             "\"shared B\": static shared memory per block.", "",
             fits_sentence(record), ""]
    spills = {cc: s["spill"] for cc, s in record["summary"].items() if s["spill"]}
    if spills:
        lines += ["Kernels that spill: " + "; ".join(f"{cc}: {', '.join(v)}" for cc, v in spills.items())
                  + ".", ""]
    for group, title in GROUPS:
        if any(k["group"] == group for k in record["kernels"].values()):
            lines += [f"## {title}", "", kernels_table(record, group), ""]
    check = record.get("h100_check")
    if check:
        n = len(check["same"]) + len(check["differ"]) + len(check.get("changed_since", []))
        lines += ["## Offline sm_90 against the H100's own compile", "",
                  f"Registers, shared memory and local memory of the {n} kernels "
                  f"the H100 benchmark recorded ({check['recorded']}): {len(check['same'])} the same offline"
                  + (", these differ: " + "; ".join(f"{n} {d}" for n, d in check["differ"].items()) if check["differ"]
                     else "") + "."
                  + (f" Not compared: {', '.join(check['changed_since'])}, compiled again after their code changed "
                     "(the H100's facts are of the code before)." if check.get("changed_since") else ""), ""]
    return "\n".join(lines)


SUMMARY_RUNGS = ["naive", "smem_tile", "reg1d", "reg2d", "vec", "vec_split", "dbuf", "warptile",
                "transpose_smem_padded_32x8", "transpose_wide"]
SUMMARY_ARCHS = ["7.5", "8.0", "9.0"]


def summary_block(record):
    """RESULTS.md's "Smaller GPUs" numbers: the ladder on a T4 (7.5) and an A100 (8.0), next to
    the H100's 9.0, from the record."""
    text = [BEGIN,
            f"{fits_sentence(record)} Blocks per SM at the lessons' launch configurations (cell: registers, "
            f"spills if any: blocks per SM (% of the SM's warps, limit)); every kernel, the library's and the "
            f"sweep's included, with the limits used, in `results/arch-facts.md`. "
            + _versions_line(record), "",
            kernels_table(record, names=SUMMARY_RUNGS, archs=SUMMARY_ARCHS), END]
    return "\n".join(text)


def current_summary_block(path=RESULTS_MD):
    text = open(path).read()
    if BEGIN not in text:
        return None
    return BEGIN + text.split(BEGIN, 1)[1].split(END, 1)[0] + END


def write(record):
    with open(RECORD, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    with open(TABLES, "w") as f:
        f.write(markdown(record))
    old = current_summary_block()
    if old is not None:
        text = open(RESULTS_MD).read().replace(old, summary_block(record))
        with open(RESULTS_MD, "w") as f:
            f.write(text)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write", action="store_true", help="compile everything and write the record, tables and RESULTS.md block")
    p.add_argument("--no-sweep", action="store_true", help="leave out lesson 08's 21 sweep configurations")
    p.add_argument("--only", nargs="*", help="compile only these kernels (printed, not written)")
    p.add_argument("--arch", nargs="*", choices=list(ARCHS), help="compute capabilities (default: all)")
    p.add_argument("--checkpoint", metavar="JSON", help="keep the facts compiled so far here; a rerun resumes")
    p.add_argument("--add", action="store_true",
                   help="compile only the kernels the record lacks (a new library kernel) and add them; "
                        "the others keep their facts")
    p.add_argument("--refresh", nargs="+", default=(), metavar="NAME",
                   help="with --add: compile these kernels again too (their code changed)")
    p.add_argument("--rederive", action="store_true",
                   help="recompute blocks per SM, tables and RESULTS.md block from the record's compiler facts "
                        "(after a change to occupancy or ARCHS; compiles nothing)")
    args = p.parse_args(argv)
    if args.rederive:
        write(rederive(load()))
        print("rewrote", os.path.relpath(RECORD), os.path.relpath(TABLES), "and the RESULTS.md block")
        return 0
    if args.add:
        why_not = missing_toolchain()
        if why_not:
            sys.exit(f"cannot compile offline: {why_not}")
        record, added = add_missing(load(), checkpoint=args.checkpoint, refresh=args.refresh)
        if added:
            write(record)
        print("added", added or "nothing: the record has every kernel")
        return 0
    if not args.write and args.only is None:
        record = load()
        print(markdown(record))
        return 0
    why_not = missing_toolchain()
    if why_not:
        sys.exit(f"cannot compile offline: {why_not}")
    record = collect(args.arch, sweep=not args.no_sweep, names=args.only, checkpoint=args.checkpoint)
    if args.write and not args.only:
        write(record)
        print("wrote", os.path.relpath(RECORD), os.path.relpath(TABLES), "and the RESULTS.md block")
    else:
        print(json.dumps(record["kernels"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
