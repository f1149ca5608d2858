"""What the compiler made of the primer's kernels: PTX, SASS, registers, local memory.

    python -m gemm_lessons.teaching.primer_listing                         # on a GPU
    GEMM_LESSONS_SIMULATOR=0 python -m gemm_lessons.teaching.primer_listing --offline   # no GPU needed
    ... --offline --add ffma1 ffma2       # compile only these and add them to the record

On a GPU the kernels are compiled for that GPU through numba (``inspect_asm``,
``inspect_sass``, ``get_regs_per_thread``).  ``--offline`` compiles them for sm_90 (Hopper)
on a machine with the CUDA compiler tools but no GPU: numba makes the PTX (through libNVVM),
``ptxas`` assembles it and ``cuobjdump`` disassembles it.  Either way the result goes to
results/primer-listing.json, which the primer shows when it runs on the simulator.  Besides the
primer's own kernels it holds the FFMA loops of the latency benchmark (``ffma1`` ... ``ffma8``),
whose main loop (``loop``: instructions and FFMAs per pass) part 4 uses.
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile

from gemm_lessons.core import backend
from gemm_lessons.instruments import compiler_facts
from gemm_lessons.records import results

RECORD = results.path_for("primer-listing", "")
SIGNATURES = {
    "saxpy": "void(float32, float32[::1], float32[::1], float32[::1])",
    "reverse_slices": "void(float32[::1], float32[::1])",
}
# the FFMA loops of part 4 (gemm_lessons.measure.latency: one warp, 1-8 independent chains), as they launch
FFMA_SIGNATURE = "void(float32[::1], int64, float32[::1], int64[:, ::1])"


def ffma_name(chains):
    """The listing's name of the latency benchmark's FFMA kernel with ``chains`` chains: "ffma4"."""
    return f"ffma{chains}"
_ENCODING = re.compile(r"\s*/\* 0x[0-9a-f]{16} \*/")


def kernels():
    from gemm_lessons.kernels.primer import reverse, saxpy
    from gemm_lessons.measure import latency

    found = {"saxpy": saxpy.saxpy, "reverse_slices": reverse.reverse_slices}
    found.update({ffma_name(c): latency.ffma_kernel(c) for c in latency.FFMA_CHAINS})
    return found


def _signature(name):
    return SIGNATURES.get(name, FFMA_SIGNATURE)


def clean_sass(text):
    """Keep the addressed lines of a SASS listing (drop the binary encodings and headers), from
    the first instruction to the last ``EXIT`` (``sass_until_exit``): the disassembler also
    prints the cubin's data sections (``.byte``, ``.word``, ``.string`` lines of ELF and
    ``.nv.info`` metadata) with addresses, and the padding after the code."""
    out = []
    for line in text.splitlines():
        line = _ENCODING.sub("", line).rstrip()
        if re.match(r"\s*/\*[0-9a-f]{4,}\*/", line):
            out.append(line.strip())
    return sass_until_exit("\n".join(out))


def _from_gpu(names=None):
    from numba import cuda

    found = {}
    for name, k in kernels().items():
        if names and name not in names:
            continue
        k.compile(_signature(name))
        raw = compiler_facts._only(k.inspect_sass())
        sass = clean_sass(raw)
        counts = compiler_facts.count_opcodes(sass)  # the code's instructions, not the padding after it
        found[name] = dict(compiler_facts.resources(k), sass_summary=compiler_facts.summarise_opcodes(counts),
                           sass_counts=dict(counts), ptx=compiler_facts._only(k.inspect_asm()),
                           sass=sass, loop=compiler_facts.busiest_loop(raw))  # raw: its branch labels
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    cc = ".".join(map(str, dev.compute_capability))
    return found, f"compiled on {name} (compute capability {cc}) by numba", {"device": name}


def _tool(name):
    return os.environ.get(name.upper(), name)


def _from_tools(cc=(9, 0), names=None):
    from numba import cuda

    arch = f"sm_{cc[0]}{cc[1]}"
    version = subprocess.run([_tool("ptxas"), "--version"], capture_output=True, text=True).stdout.strip()
    found = {}
    for name, k in kernels().items():
        if names and name not in names:
            continue
        ptx, _ = cuda.compile_ptx(k.py_func, _signature(name), cc=cc)
        with tempfile.TemporaryDirectory() as d:
            with open(f"{d}/k.ptx", "w") as f:
                f.write(ptx)
            info = subprocess.run([_tool("ptxas"), f"-arch={arch}", "-v", f"{d}/k.ptx", "-o", f"{d}/k.cubin"],
                                  capture_output=True, text=True, check=True).stderr
            raw = subprocess.run([_tool("cuobjdump"), "-sass", f"{d}/k.cubin"], capture_output=True,
                                 text=True, check=True).stdout
        sass = clean_sass(raw)
        counts = compiler_facts.count_opcodes(sass)  # the code's instructions, not the padding after it
        smem = re.search(r"(\d+) bytes smem", info)
        found[name] = {"registers": int(re.search(r"Used (\d+) registers", info).group(1)),
                       "local_bytes": int(re.search(r"(\d+) bytes stack frame", info).group(1)),
                       "shared_bytes": int(smem.group(1)) if smem else 0,
                       "sass_summary": compiler_facts.summarise_opcodes(counts), "sass_counts": dict(counts),
                       "ptx": ptx, "sass": sass, "loop": compiler_facts.busiest_loop(raw)}
    last = version.splitlines()[-1] if version else "ptxas (version unknown)"
    return found, (f"compiled offline for {arch} without a GPU (numba-cuda's libNVVM, then {last}); "
                   "the GPU's own driver may schedule a few instructions differently"), {"target": arch}


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


# an instruction line: /*address*/, an optional predicate, an opcode (data lines start with a dot:
# ".byte", ".word", ".string", ".short", ".dword")
_INSTRUCTION = re.compile(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?[A-Z][A-Z0-9_.]*")


def sass_until_exit(sass):
    """The code of a SASS listing: the lines from its first instruction to its last EXIT.  Before
    the first instruction a whole-cubin disassembly holds data (ELF and ``.nv.info`` metadata,
    lines such as ``/*0000*/ .byte 0x04, 0x2f``); after the last EXIT comes padding (a ``BRA`` to
    itself and ``NOP``s) that never runs.  A listing that is already trimmed comes back as it is."""
    lines = sass.splitlines()
    code = [i for i, l in enumerate(lines) if _INSTRUCTION.match(l)]
    if not code:
        return ""
    first = code[0]
    last = max((i for i in code if re.search(r"\bEXIT\b", lines[i])), default=code[-1])
    return "\n".join(lines[first:last + 1])


_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s*(?:(@!?U?P[T0-9]+)\s+)?([A-Z][A-Z0-9_.]*)\s*([^;]*)")


def instructions(sass):
    """The instructions of a SASS listing up to its last EXIT: dicts with addr, pred (``@P0`` or
    None), op (with suffixes), base (without them), operands (a list of strings) and text."""
    out = []
    for line in sass_until_exit(sass).splitlines():
        m = _LINE.search(line)
        if not m:
            continue
        addr, pred, op, rest = m.groups()
        operands = [o.strip() for o in rest.split(",") if o.strip()]
        out.append({"addr": f"/*{addr}*/", "pred": pred, "op": op, "base": op.split(".")[0],
                    "operands": operands, "text": " ".join(filter(None, [pred, op, ", ".join(operands)]))})
    return out


def count(sass, base):
    """How many instructions of one base opcode (``"FFMA"``) the listing holds up to its last EXIT."""
    return sum(i["base"] == base for i in instructions(sass))


def _reg(operand):
    """The register an operand names (``R2`` of ``R2.reuse`` or ``R2.64``), else the operand."""
    return operand.split(".")[0]


def saxpy_walkthrough(facts):
    """The SASS of ``saxpy`` read from the top, as markdown: every sentence is made from the
    listing in ``facts`` (a kernel of ``listing()``: its "sass" and "ptx"), quoting its lines and
    counting its instructions, and a step the listing does not show in the expected form is
    said to be missing rather than described."""
    ins = instructions(facts["sass"])
    ptx = facts.get("ptx") or ""
    code = lambda i: f"`{i['text']}`"  # noqa: E731
    where = lambda i: i["addr"]  # noqa: E731
    out = []

    # 1. the thread's index
    special = {}
    for i in ins:
        if i["base"] == "S2R" and len(i["operands"]) == 2:
            special[i["operands"][1]] = i
    tid, cta = special.get("SR_TID.X"), special.get("SR_CTAID.X")
    wide = None
    if tid and cta:
        t, c = _reg(tid["operands"][0]), _reg(cta["operands"][0])
        wide = next((i for i in ins if i["op"] == "IMAD.WIDE"
                     and {t, c} <= {_reg(o) for o in i["operands"][1:]}), None)
        out.append(f"**The index.** {code(tid)} ({where(tid)}) and {code(cta)} ({where(cta)}) read two special "
                   f"registers: `SR_TID.X` is `threadIdx.x`, `SR_CTAID.X` is `blockIdx.x` (CTA, cooperative thread "
                   "array, is NVIDIA's name for a block).")
        sign = next((i for i in ins if i["op"] == "SHF.R.S32.HI" and i["operands"][-1:] == [t]
                     and ins.index(i) < (ins.index(wide) if wide else len(ins))), None)
        if wide:
            factor = wide["operands"][2]
            const = next((i for i in ins[:ins.index(wide)] if i["base"] in ("ULDC", "LDC")
                          and _reg(i["operands"][0]) == factor), None)
            blockdim = (f"`{factor}`, loaded from the constant bank by {code(const)} ({where(const)}), is "
                        "`blockDim.x` (the PTX's `%ntid.x`, the other factor of its `mul.wide`)"
                        if const and "%ntid.x" in ptx else f"`{factor}` holds the block size")
            dest = _reg(wide["operands"][0])
            pair = f"`{dest}`:`R{int(dest[1:]) + 1}`" if dest[1:].isdigit() else f"`{dest}` and the next register"
            text = (f"{code(wide)} ({where(wide)}) computes `blockIdx.x * blockDim.x + threadIdx.x` as a 64-bit "
                    f"integer in the register pair {pair}: that is `i`; {blockdim}.")
            if sign:
                text += (f" Before it, {code(sign)} ({where(sign)}) makes the upper 32 bits of `threadIdx.x` as a "
                         "signed 64-bit number (all ones if it were negative, else 0; the PTX's `cvt.s64.s32`).")
            out[-1] += " " + text
        else:
            out[-1] += (" This listing computes `i` without an `IMAD.WIDE` of those two registers: read its first "
                        "lines with the opcode table above.")
    else:
        out.append("This listing does not read `SR_TID.X` and `SR_CTAID.X` with `S2R`: read its first lines with "
                   "the opcode table above.")

    # 2. the guard
    exit_at = next((k for k, i in enumerate(ins) if i["base"] == "EXIT" and i["pred"]), None)
    if exit_at is not None:
        guard = ins[exit_at]
        compares = [i for i in ins[:exit_at] if i["base"] == "ISETP"]
        pred = guard["pred"].lstrip("@!")
        cmp_text = " and ".join(code(i) for i in compares)
        sense = "false" if guard["pred"].startswith("@!") else "true"
        text = (f"**The guard.** {cmp_text} compare `i` with `out.size` (a parameter, in the constant bank) and set "
                f"the predicate register `{pred}`: one bit per thread. ")
        if len(compares) == 2 and compares[1]["op"].endswith(".EX") and ".U32" in compares[0]["op"]:
            text += ("Two instructions because `i` has 64 bits: the first compares the lower halves (unsigned, "
                     "`.U32`), the second the upper halves (`.EX`) together with the first's result. ")
        text += (f"{code(guard)} ({where(guard)}) then ends every thread for which `{pred}` is {sense}: "
                 "`if i < out.size`.")
        out.append(text)
        body = ins[exit_at + 1:]
    else:
        out.append("This listing has no `EXIT` under a predicate: the guard takes another form here.")
        body = ins

    # 3. negative indices and addresses
    n = {b: sum(i["base"] == b for i in body) for b in ("SHF", "LOP3", "IADD3", "IMAD", "LEA", "LDG", "STG")}
    arrays = n["LDG"] + n["STG"]
    ands = [i for i in body if i["op"] == "LOP3.LUT" and "0xc0" in i["operands"]]
    ptx_wrap = ptx.count("and.b64") if "shr.s64" in ptx else 0
    if n["SHF"] and ands and n["IADD3"]:
        of = f" of the {n['LOP3']} `LOP3`" if len(ands) != n["LOP3"] else ""
        out.append(
            f"**Negative indices.** Next come instructions that numba adds to each of the {arrays} array accesses "
            f"(the counts are for all of them together): `SHF.R.S32.HI` (x {n['SHF']}) copies the sign bit of `i` "
            "into every bit, all ones if `i` is negative and 0 otherwise; `LOP3.LUT` with truth table `0xc0`, "
            f"a AND b (x {len(ands)}{of}: each array, each 32-bit half), turns that into the array's length where "
            f"`i` is negative and 0 otherwise; `IADD3` (x {n['IADD3']}) and `IMAD.X` (x "
            f"{sum(i['op'] == 'IMAD.X' for i in body)}, the upper halves with the carry) add it to `i`. This is "
            "numba's wraparound for negative indices, as in NumPy (`x[-1]` is `x[len(x) - 1]`): it adds the "
            "array's length when an index is negative"
            + (f"; in the PTX, `shr.s64 ..., 63` then `and.b64` (x {ptx_wrap}, one per array) and `add.s64`"
               if ptx_wrap else "")
            + ". Here `i` is never negative, but the index is a signed integer and the compilers kept the "
              "wraparound.")
    lea = [i for i in body if i["base"] == "LEA"]
    if lea:
        out.append(f"**Addresses.** `LEA` and `LEA.HI.X` (x {len(lea)} together) compute each address, the array's "
                   "start + index x 4 bytes, in two 32-bit halves.")

    # 4. the arithmetic
    loads = [i for i in body if i["base"] == "LDG"]
    ffma = [i for i in body if i["base"] == "FFMA"]
    stores = [i for i in body if i["base"] == "STG"]
    parts = []
    if loads:
        # which load is which: the FFMA multiplies x[i] (its first source) and adds y[i] (its last)
        role = {}
        if len(ffma) == 1 and len(ffma[0]["operands"]) == 4:
            _, times, _, plus = (_reg(o) for o in ffma[0]["operands"])
            role = {times: "`x[i]`", plus: "`y[i]`"}
        named = [(i, role.get(_reg(i["operands"][0]))) for i in loads]
        if len(loads) == 2 and all(r for _, r in named) and named[0][1] != named[1][1]:
            parts.append(" and ".join(f"{code(i)} loads {r}" for i, r in named)
                         + " (the `FFMA` below multiplies `x[i]` by `a` and adds `y[i]`: that tells the two apart)")
        else:
            parts.append(" and ".join(code(i) for i in loads) + " are the loads of `x[i]` and `y[i]`")
    if ffma:
        parts.append(" and ".join(code(i) for i in ffma) + " computes `a*x + y` in one fused multiply-add")
    if stores:
        parts.append(" and ".join(code(i) for i in stores) + " stores it")
    if parts:
        ptx_ops = [op for op in ("ld.global", "fma.rn", "st.global") if op in ptx]
        out.append("**The work.** " + "; ".join(parts) + (
            f": the PTX's {', '.join(f'`{op}`' for op in ptx_ops)}." if ptx_ops else "."))
    out.append(f"`FFMA` in this listing: {len(ffma)}; `FMUL` and `FADD`: "
               f"{sum(i['base'] in ('FMUL', 'FADD') for i in ins)}.")
    return "\n\n".join(out)


def load(path=RECORD):
    """The recorded listing, or None.  Each kernel's "sass" is trimmed to its code
    (``sass_until_exit``): a record made before clean_sass trimmed holds the whole cubin's
    disassembly, data sections and padding included."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        rec = json.load(f)
    for k in rec.get("kernels", {}).values():
        if k.get("sass"):
            k["sass"] = sass_until_exit(k["sass"])
    return rec


def listing():
    """(source sentence, {kernel: facts with ptx and sass}): compiled now on a GPU, else (on the
    simulator, or where compiling fails) the record; (None, None) without either.  A kernel added to
    the record later (``--add``) carries its own "how" and "date"."""
    failed = ""
    if not backend.SIMULATOR:
        try:
            found, how, _ = _from_gpu()
            return how + " just now", found
        except Exception as e:  # e.g. no nvdisasm for inspect_sass: fall back to the record
            failed = f" (compiling here failed: {type(e).__name__}: {str(e)[:120]})"
    rec = load()
    if rec is None:
        return None, None
    return f"recorded: {rec['how']}, {rec['date'][:10]}{failed}", rec["kernels"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--offline", action="store_true", help="compile for sm_90 with ptxas, no GPU needed")
    p.add_argument("--out", default=RECORD)
    p.add_argument("--add", nargs="+", metavar="KERNEL",
                   help="compile only these kernels and add them to the record at --out, each with its own "
                        "how, date, versions and command (the record's other kernels stay as they are)")
    args = p.parse_args(argv)
    if backend.SIMULATOR:
        sys.exit("the CUDA simulator compiles nothing: run on a GPU, or with GEMM_LESSONS_SIMULATOR=0 --offline "
                 "where libNVVM, ptxas and cuobjdump are installed")
    import numba
    import numba_cuda

    unknown = set(args.add or ()) - set(kernels())
    if unknown:
        sys.exit(f"no such kernel: {', '.join(sorted(unknown))}; the listing's kernels: {', '.join(kernels())}")
    found, how, where = _from_tools(names=args.add) if args.offline else _from_gpu(names=args.add)
    made = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "versions": {"numba": numba.__version__, "numba_cuda": numba_cuda.__version__},
            "command": "python -m gemm_lessons.teaching.primer_listing " + " ".join(argv if argv is not None else sys.argv[1:])}
    if args.add:
        with open(args.out) as f:
            record = json.load(f)
        for name, k in found.items():
            record["kernels"][name] = dict(k, how=how, **where, **made)
    else:
        record = {"how": how, "kernels": found, **where, **made}
    with open(args.out, "w") as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.write("\n")
    for name, k in found.items():
        print(f"{name}: {k['registers']} registers, {k['local_bytes']} bytes local, {k['sass_summary']}")
    print("wrote", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
