"""Write notebooks/NN_*.ipynb from tools/notebooks/NN_*.py (each defines CELLS).

Outputs: cells marked for nbval keep the outputs stored in the existing notebook when their
source is unchanged; run tools/refresh_outputs.py to recompute them on the simulator.
"""
import glob
import importlib.util
import os
import sys

import nbformat

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from nbtools import CHECK, notebook  # noqa: E402

OUT = os.path.join(os.path.dirname(HERE), "notebooks")


def main(names=()):
    """``names``: build only the notebooks whose file name starts with one of them (e.g. 07)."""
    for path in sorted(glob.glob(os.path.join(HERE, "notebooks", "*.py"))):
        if names and not os.path.basename(path).startswith(tuple(names)):
            continue
        spec = importlib.util.spec_from_file_location("nbsrc", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        nb = notebook(mod.CELLS)
        dest = os.path.join(OUT, os.path.basename(path)[:-3] + ".ipynb")
        if os.path.exists(dest):  # keep stored outputs of unchanged checked cells
            old = {c.source: c for c in nbformat.read(dest, as_version=4).cells if c.cell_type == "code"}
            for c in nb.cells:
                if c.cell_type == "code" and c.source.startswith(CHECK) and c.source in old:
                    c.outputs = old[c.source].outputs
                    c.execution_count = old[c.source].execution_count
        nbformat.write(nb, dest)
        print("wrote", dest)


if __name__ == "__main__":
    main(sys.argv[1:])
