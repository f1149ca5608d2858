"""``python -m gemm_lessons.check ID FILE.py``: run an exercise's check on a file; ``--list`` shows
what each exercise's file must define.  Exit status 0 passed, 1 not yet, 2 usage error.

An entry module (tests/test_layers.py's ENTRY_POINTS): the logic lives in
gemm_lessons.teaching.exercises.cli, which is what code should import.

Importing this module (``import gemm_lessons.check``, as a tool that imports every module does)
makes Python set the package's attribute ``gemm_lessons.check`` to this module, where the
package had put the function ``gl.check`` (measure.problems.check).  So that both keep working,
the module is callable: ``gl.check(...)`` calls that function whichever of the two the attribute
holds, and ``gemm_lessons.check.main`` is the command line."""
import sys
import types

from gemm_lessons.measure.problems import check as _check_function
from gemm_lessons.teaching.exercises.cli import main


class _CallableModule(types.ModuleType):
    """This module, callable as gl.check (measure.problems.check)."""

    def __call__(self, *args, **kwargs):
        return _check_function(*args, **kwargs)


__wrapped__ = _check_function  # inspect.signature(gl.check) and help() see the function's
if __name__ == "__main__":
    sys.exit(main())
else:
    sys.modules[__name__].__class__ = _CallableModule
