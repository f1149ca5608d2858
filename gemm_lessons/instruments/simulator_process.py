"""Run a simulator-only instrument from a machine with a GPU: in a child Python process with
GEMM_LESSONS_SIMULATOR=1 (numba picks its backend once per process, at import)."""
import json
import os
import subprocess
import sys


def run_on_simulator(code, what, timeout=900):
    """Run ``code`` in a child Python on the CUDA simulator (for simulator-only tools such as
    the tracers, called from a GPU machine) and return the JSON its last output line prints."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                         env={**os.environ, "GEMM_LESSONS_SIMULATOR": "1"})
    if out.returncode != 0:
        raise RuntimeError(f"{what} on the simulator failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])
