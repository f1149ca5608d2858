"""``python -m gemm_lessons.site [--teacher | --student] [--out DIR]``: the course website.

An entry module (tests/test_layers.py's ENTRY_POINTS), the short name for
``python -m gemm_lessons.course.site``, where the logic and its options are documented."""
import sys

from gemm_lessons.course.site import main

if __name__ == "__main__":
    sys.exit(main())
