"""``python -m gemm_lessons.check ID FILE.py``: an exercise's check, run on a file (for teachers,
and graders such as otter-grader or Gradescope).

FILE.py defines what the exercise cell defines (``--list`` says what, one line per exercise): a
number, a pair, a kernel, a launch function, a function that builds the kernel.  The file runs
as a script would (its own imports; ``__name__`` is not ``"__main__"``), then the expression the
cell passes to ``exercises.check`` (``answer``, ``my_naive_1d``, ``make_my_reg2d()``, ...) is
evaluated in its namespace and checked by the same check, which prints the same feedback as the
cell's text.  Exit status: 0 when the check passes, 1 when it does not (a wrong answer, a file or
an answer that raises), 2 for a usage error (an unknown id, a missing file, a file that does not
define the expected names: the message names them)."""
import argparse
import ast
import os
import sys
import tokenize

from gemm_lessons.teaching.exercises import core

PASSED, FAILED, USAGE = 0, 1, 2
PROG = "python -m gemm_lessons.check"


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def _parser():
    p = _Parser(prog=PROG, description="Run an exercise's check on a file that defines what the exercise cell "
                                       "defines; print the cell's feedback; exit 0 (passed), 1 (not yet) or 2 "
                                       "(usage error).")
    p.add_argument("id", nargs="?", help="the exercise, e.g. 01-kernel (--list shows them all)")
    p.add_argument("file", nargs="?", help="the Python file with the answer")
    p.add_argument("--list", action="store_true", help="list every exercise and what its file must define")
    p.add_argument("--time-limit", type=float, default=core.KERNEL_TIME_LIMIT_S, metavar="SECONDS",
                   help="on the simulator, stop a kernel after this long; 0: never (default %(default)g)")
    return p


def answer_names(exercise_id):
    """The names the file must define for ``exercise_id``: those of the expression its cell checks."""
    expression, _ = core._ANSWERS[exercise_id]
    names = [n.id for n in ast.walk(ast.parse(expression, mode="eval")) if isinstance(n, ast.Name)]
    return list(dict.fromkeys(names))


def listing():
    """One line per exercise: its id and what a file for it must define."""
    width = max(map(len, core.ids()))
    return "\n".join(f"{i:<{width}}  {core._ANSWERS[i][1] if i in core._ANSWERS else '(not checkable from a file)'}"
                     for i in core.ids())


def run_file(path):
    """The namespace of ``path`` run as a script (its folder first on sys.path, as ``python FILE``
    has it); raises what the file raises."""
    path = os.path.abspath(path)
    with tokenize.open(path) as f:  # the encoding its coding line names, else UTF-8
        source = f.read()
    namespace = {"__name__": "__exercise__", "__file__": path, "__builtins__": __builtins__}
    folder = os.path.dirname(path)
    sys.path.insert(0, folder)
    try:
        exec(compile(source, path, "exec"), namespace)
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
    return namespace


def check_file(exercise_id, path, time_limit=core.KERNEL_TIME_LIMIT_S):
    """Feedback of ``exercise_id``'s check on the answer ``path`` defines.  Raises UsageError for
    an unknown exercise, a missing file or missing names."""
    if exercise_id not in core._CHECKS:
        raise UsageError(f"unknown exercise {exercise_id!r}; known: {', '.join(core.ids())} (--list says what "
                         "each file must define)")
    if exercise_id not in core._ANSWERS:
        raise UsageError(f"exercise {exercise_id} cannot be checked from a file")
    if not os.path.isfile(path):
        raise UsageError(f"{path}: no such file")
    if path.endswith(".ipynb"):
        raise UsageError(f"{path} is a notebook: give a .py file (jupytext --to py, or jupyter nbconvert "
                         "--to script)")
    expression, defines = core._ANSWERS[exercise_id]
    try:
        namespace = run_file(path)
    except (Exception, SystemExit) as e:  # the student's file: feedback, not a traceback
        return core._raised(exercise_id, e, what=f"your file {os.path.basename(path)}")
    missing = [n for n in answer_names(exercise_id) if n not in namespace]
    if missing:
        raise UsageError(f"{path} does not define {', '.join(missing)}; exercise {exercise_id} checks "
                         f"{expression}, so the file must define {defines}")
    try:
        answer = eval(compile(expression, f"<the answer of {exercise_id}>", "eval"), namespace)
    except Exception as e:
        return core._raised(exercise_id, e, what=expression)
    return core.check(exercise_id, answer, time_limit=time_limit)


def main(argv=None):
    """The command line; returns the exit status (0 passed, 1 not yet, 2 usage error)."""
    try:
        args = _parser().parse_args(argv)
        if args.list:
            if args.id or args.file:
                raise UsageError("--list takes no exercise or file")
            print(listing())
            return PASSED
        if not (args.id and args.file):
            raise UsageError("give an exercise id and a file (or --list)")
        feedback = check_file(args.id, args.file, args.time_limit)
    except UsageError as e:
        print(f"usage: {PROG} ID FILE.py  |  {PROG} --list\n{PROG}: error: {e}", file=sys.stderr)
        return USAGE
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else USAGE
    print(feedback, flush=True)
    return PASSED if feedback.ok else FAILED
