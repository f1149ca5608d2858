"""``python -m gemm_lessons.check ID FILE.py``: run an exercise's check on a file; ``--list`` shows
what each exercise's file must define.  Exit status 0 passed, 1 not yet, 2 usage error.

An entry module (tests/test_layers.py's ENTRY_POINTS): the logic lives in
gemm_lessons.teaching.exercises.cli, which is what code should import.  Importing this module
would replace the attribute ``gemm_lessons.check`` (the function ``gl.check``) with the module."""
import sys

from gemm_lessons.teaching.exercises.cli import main

if __name__ == "__main__":
    sys.exit(main())
