"""Exercise cells with an automatic, friendly check.

A teacher notebook writes the solution between ``### BEGIN SOLUTION`` and ``### END
SOLUTION`` and ends the cell with ``exercises.check("<id>", answer)``.  ``python -m
gemm_lessons.course.student`` builds the student notebooks, with each solution replaced by a skeleton.
A check never raises: a wrong answer, a missing one or a crashing kernel all come back as
feedback that says what is wrong and where, with a first hint; ``exercises.hint("<id>")`` gives
the next hints, one at a time.

The registry and ``check`` live in ``core``; each lesson's checkers in ``lessonNN`` (a function
named for what it checks, registered under the exercise's id); what the kernel exercises share in
``kernels_01_04`` and ``kernels_05_11``; predict-then-measure in ``predictions``; ``cli``
is ``python -m gemm_lessons.check ID FILE.py``, the same check on a file.  Importing this
package registers every exercise.  No reference answer is importable from here: a check verifies
what the answer must satisfy (lesson 10's, for instance, that the pair is a row's and no row
gained more), and the lessons' solutions live in the teacher notebooks and tests/data/exercises/.
"""
from gemm_lessons.teaching.exercises import (lesson00, lesson00a, lesson01, lesson02, lesson03,  # noqa: F401
                                             lesson04, lesson05, lesson06, lesson07, lesson08,
                                             lesson09, lesson10, lesson11)
from gemm_lessons.teaching.exercises.core import (KERNEL_TIME_LIMIT_S, Feedback, Hint, KernelTimeout, _CHECKS,
                                                  check, exercise, hint, ids, judges_technique, result_right)
from gemm_lessons.teaching.exercises.kernels_01_04 import (launch_1d, launch_reg1d, launch_reg2d, launch_tiled,
                                                           rebuild_kernel, technique_facts)
from gemm_lessons.teaching.exercises.kernels_05_11 import KERNEL_EXERCISES_05_10
from gemm_lessons.teaching.exercises.lesson10 import next_step_cases, next_step_example, next_step_flip
from gemm_lessons.teaching.exercises.lesson11 import KERNEL_EXERCISES_11, launch_split_k, split_k_facts
from gemm_lessons.teaching.exercises.predictions import Prediction, compare_prediction

__all__ = ["KERNEL_TIME_LIMIT_S", "Feedback", "Hint", "KernelTimeout", "check", "exercise", "hint", "ids",
           "judges_technique", "result_right",
           "launch_1d", "launch_tiled", "launch_reg1d", "launch_reg2d", "rebuild_kernel", "technique_facts",
           "KERNEL_EXERCISES_05_10", "KERNEL_EXERCISES_11", "launch_split_k", "split_k_facts",
           "next_step_cases", "next_step_example", "next_step_flip", "Prediction", "compare_prediction"]
