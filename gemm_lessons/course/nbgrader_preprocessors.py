"""nbgrader's generate_assignment with the course's own skeletons (imported by the
nbgrader_config.py that ``python -m gemm_lessons.course.nbgrader_course`` writes; needs nbgrader).

nbgrader replaces every ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` region with one stub
for the whole course (``raise NotImplementedError()``).  The lessons write a skeleton per region
after the marker (``### BEGIN SOLUTION: answer = None``, ``: pass``, ``: return tc * TN + j``),
which ``python -m gemm_lessons.course.student`` puts in its place; SkeletonSolutions makes nbgrader do
the same, so a released notebook's code is the student notebook's code.
"""
from nbgrader import utils
from nbgrader.converters import GenerateAssignment
from nbgrader.preprocessors import ClearSolutions

from gemm_lessons.course.student import BEGIN, strip_solutions


class SkeletonSolutions(ClearSolutions):
    """ClearSolutions that puts the skeleton after ``### BEGIN SOLUTION:`` in each region of a
    code cell (gemm_lessons.course.student.strip_solutions) and leaves markdown alone unless it is a
    solution cell."""

    def _replace_solution_region(self, cell, language):
        if cell.cell_type != "code":  # text mentioning the markers stays, as in gemm_lessons.course.student
            return super()._replace_solution_region(cell, language) if utils.is_solution(cell) else False
        if BEGIN not in cell.source:
            return False
        try:
            cell.source = strip_solutions(cell.source)
        except ValueError as e:
            self.log.error("%s. Cell contents are: \n%s", e, cell.source)
            raise RuntimeError(str(e)) from None
        return True


def use_skeletons(c):
    """In an nbgrader config ``c``: generate_assignment runs SkeletonSolutions in place of
    ClearSolutions (the rest of nbgrader's pipeline unchanged)."""
    default = list(GenerateAssignment.class_traits()["preprocessors"].default())
    if ClearSolutions not in default:
        raise RuntimeError("this nbgrader's generate_assignment has no ClearSolutions step to replace")
    c.GenerateAssignment.preprocessors = [SkeletonSolutions if p is ClearSolutions else p for p in default]
