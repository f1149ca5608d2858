"""Execute the notebooks on the CUDA simulator and keep only the outputs nbval checks.

    GEMM_LESSONS_SIMULATOR=1 python tools/refresh_outputs.py [notebooks/01_naive.ipynb ...]
Outputs of unmarked cells are cleared (they depend on the machine); with --keep-all every
output is kept (used for notebooks executed on a GPU, see TEACHING.md).

    GEMM_LESSONS_SIMULATOR=1 python tools/refresh_outputs.py --into --cell "block_order.load_record()" NB
executes a copy of NB and writes into NB only the outputs of the cells whose source contains one
of the --cell strings, plus (with --fill-empty) of code cells that have none: for cells rendered
from the records, whose output is the same on the simulator and on a GPU, in a notebook whose
other outputs came from a GPU (say so with --gpu-notebook: recorded numbers in those cells are
then labelled as filled in from the record).
"""
import argparse
import glob
import os
import sys
import time

import nbformat
from nbclient import NotebookClient

from gemm_lessons.core.backend import FILLED_ENV
from gemm_lessons.course.lesson_source import NBVAL_CHECK, tidy_streams
from gemm_lessons.core.progress import TEXT_ENV

HERE = os.path.dirname(os.path.abspath(__file__))
# the notebook kernels import this checkout's gemm_lessons, whatever copy is installed
os.environ["PYTHONPATH"] = os.pathsep.join(
    [os.path.dirname(HERE)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])


class _Client(NotebookClient):
    """nbclient without its stand-in for ipywidgets' Output widget.  That stand-in sends the
    widget's state back to the kernel on the shell channel while the client waits for the cell's
    reply there, a known cause of hangs (jupyter/nbclient#312, a cell with an Output widget); lesson
    06's widget cell stalled in this script on a GPU machine (2026-11-24) while nbval, which has no
    stand-in, ran it in under a second.  Without it, what a widget draws when the cell runs is an
    ordinary output of the cell: a reader without a live kernel sees the picture too."""

    def on_comm_open_jupyter_widget(self, msg):
        return None  # the widget's state is still recorded (NotebookClient.handle_comm_msg)


def _cell_timer(path):
    start = [time.perf_counter()]

    def done(cell, cell_index, **_):
        now = time.perf_counter()
        first = (cell.source.splitlines() or [""])[0][:60]
        print(f"{os.path.basename(path)} cell {cell_index}: {now - start[0]:6.1f} s  {first!r}", file=sys.stderr, flush=True)
        start[0] = now

    return done


def main():
    p = argparse.ArgumentParser()
    p.add_argument("paths", nargs="*")
    p.add_argument("--keep-all", action="store_true")
    p.add_argument("--timeout", type=int, default=1800, help="seconds one cell may run")
    p.add_argument("--into", action="store_true", help="copy outputs of chosen cells only (see --cell, --fill-empty)")
    p.add_argument("--cell", action="append", default=[], help="with --into: a string the cell's source contains")
    p.add_argument("--fill-empty", action="store_true", help="with --into: also code cells without outputs")
    p.add_argument("--gpu-notebook", action="store_true",
                   help="with --into: the notebook was executed on a GPU; recorded numbers in the filled cells "
                        "say they were filled in from the record, not measured in its GPU run")
    args = p.parse_args()
    os.environ[TEXT_ENV] = "1"  # progress bars saved as they ended, not as a widget's first frame
    if args.gpu_notebook:
        os.environ[FILLED_ENV] = "1"  # the kernel inherits it: see _backend.not_measured_why
    paths = args.paths or sorted(glob.glob(os.path.join(os.path.dirname(HERE), "notebooks", "*.ipynb")))
    failed = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        original = nbformat.read(path, as_version=4)
        # interrupt_on_timeout: a cell past --timeout gets a KeyboardInterrupt, whose traceback (in the
        # FAILED line below) shows where it was stuck
        client = _Client(nb, timeout=args.timeout, kernel_name="python3", interrupt_on_timeout=True,
                                resources={"metadata": {"path": os.path.dirname(os.path.abspath(path))}})
        client.on_cell_executed = _cell_timer(path)  # seconds per cell on stderr: which cell a slow run spent on
        try:
            client.execute()
        except Exception as e:  # keep going: report every failing notebook, write none of them
            print(f"FAILED {path}: {e}", file=sys.stderr)
            failed.append(path)
            continue
        if args.into:
            for mine, ran in zip(original.cells, nb.cells):
                chosen = any(x in mine.source for x in args.cell) or (args.fill_empty and not mine.get("outputs"))
                if mine.cell_type == "code" and chosen:
                    count = mine.execution_count or ran.execution_count
                    mine.outputs = ran.outputs
                    mine.execution_count = count
                    for o in mine.outputs:
                        if "execution_count" in o:
                            o.execution_count = count
                    print(f"  {path}: outputs of cell {mine.source.splitlines()[0][:60]!r}")
            nb = original
        elif not args.keep_all:
            for c in nb.cells:
                if c.cell_type == "code" and not c.source.startswith(NBVAL_CHECK):
                    c.outputs = []
                    c.execution_count = None
        nbformat.write(tidy_streams(nb), path)
        print("executed", path)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
