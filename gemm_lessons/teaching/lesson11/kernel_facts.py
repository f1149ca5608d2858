"""What the compiler made of the library's kernels: the offline compile's facts
(results/arch-facts.json, ``offline_facts``) and the table of lesson 11's section 1 (``compiler_markdown``:
registers, spills, shared memory, blocks per SM and SASS loads by width, compiled now on a GPU, the
calibration's numbers on the simulator).
"""
from gemm_lessons.core import backend, tables
from gemm_lessons.library import dispatch
from gemm_lessons.teaching.lesson11.suite_record import calibration, label


def offline_facts(kernel, cc="9.0"):
    """The offline compile's facts (results/arch-facts.json) of the library kernel ``kernel``
    ("wide 64x128", "wide_split 64x128", ...) for compute capability ``cc``, or None."""
    try:
        from gemm_lessons.runs import arch_facts

        return arch_facts.load()["kernels"][f"gl.sgemm {kernel}"]["arch"][cc]
    except Exception:  # noqa: BLE001 (no record, or no such kernel in it)
        return None


def compiler_markdown(rec, plans=("wide 128x128", "any_shape 128x128", "any_shape 64x64")):
    """What the compiler made of the library's kernels: now on a GPU (registers, local memory,
    shared memory, the driver's blocks per SM, and the SASS's global loads and stores by width),
    the calibration's numbers on the simulator (no SASS)."""
    if backend.SIMULATOR:
        body = []
        for name in plans:
            c = calibration(rec, name) or {}
            body.append([name, c.get("registers", ""), c.get("local_bytes", ""), c.get("shared_bytes", ""),
                         c.get("blocks_per_sm", "")])
        return (f"**Compiler facts of the library's kernels**, recorded on {label(rec)} (the calibration; not compiled "
                "here: CUDA simulator)\n\n"
                + tables.markdown(["kernel, tiles", "registers", "local bytes (spills)", "shared bytes", "blocks/SM"],
                                  body, "lrrrr"))
    from gemm_lessons.library import device_arrays
    from gemm_lessons.measure.device import device_info
    from gemm_lessons.instruments.compiler_facts import sass_summary

    by_name = {str(p): p for p in dispatch.PLANS}
    cols = ["LDG.E.128", "LDG.E", "STG.E.128", "STG.E", "LDS.128", "FFMA"]
    body = []
    for name in plans:
        launcher = device_arrays.launcher_for(by_name[name])
        res = launcher.resources() or {}
        sass = sass_summary(launcher.kernel) or {}
        body.append([name, res.get("registers", ""), res.get("local_bytes", ""), res.get("shared_bytes", ""),
                     launcher.blocks_per_sm(), *(sass.get(c, 0) for c in cols)])
    return (f"**Compiler facts of the library's kernels**, compiled on {device_info().name} now\n\n"
            + tables.markdown(["kernel, tiles", "registers", "local bytes (spills)", "shared bytes", "blocks/SM", *cols],
                              body, "l" + "r" * (4 + len(cols))))
