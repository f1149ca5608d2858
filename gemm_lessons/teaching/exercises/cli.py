"""``python -m gemm_lessons.check ID FILE.py``: an exercise's check, run on a file (for teachers,
and graders such as otter-grader or Gradescope).

FILE.py defines what the exercise cell defines (``--list`` says what, one line per exercise): a
number, a pair, a kernel, a launch function, a function that builds the kernel.  The file runs
as a script would (its own imports; ``__name__`` is not ``"__main__"``), then the expression the
cell passes to ``exercises.check`` (``answer``, ``my_naive_1d``, ``make_my_reg2d()``, ...) is
evaluated in its namespace and checked by the same check, which prints the same feedback as the
cell's text (``--json``: as JSON, with ``result_ok`` besides ``ok``, for graders that give points
for the result and the technique separately).  What the file does to this package's modules
(redefining ``exercises.check``, replacing a checker, patching a class) and to numpy's is undone
before the check runs: only the answer it defines is checked.  Exit status: 0 when the check passes, 1 when it does not (a wrong answer, a file or
an answer that raises), 2 for a usage error (an unknown id, a missing file, a file that does not
define the expected names: the message names them)."""
import argparse
import ast
import json
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
    p.add_argument("--json", action="store_true",
                   help="print the feedback as one JSON object: exercise, ok, result_ok (the result is right, "
                        "with or without the technique), message")
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


def _guarded_modules():
    """The modules whose state a file could change to fool the check: this package's, numpy's."""
    return [m for name, m in list(sys.modules.items()) if m is not None and (
        name == "gemm_lessons" or name.startswith("gemm_lessons.") or name in ("numpy", "numpy.linalg"))]


def _snapshot():
    """Each guarded module's globals, the contents of its dicts and the attributes of its classes."""
    state = []
    for m in _guarded_modules():
        names = dict(vars(m))
        dicts = {k: dict(v) for k, v in names.items() if type(v) is dict}
        classes = {k: dict(vars(v)) for k, v in names.items()
                   if isinstance(v, type) and getattr(v, "__module__", None) == m.__name__}
        state.append((m, names, dicts, classes))
    return state


def _restore(state):
    """Undo what running a file did to the guarded modules (see _snapshot): a file that redefines
    ``exercises.check``, replaces a checker in the registry or patches a class changes nothing."""
    for m, names, dicts, classes in state:
        now = vars(m)
        for k, v in names.items():
            if now.get(k, _MISSING) is not v:
                setattr(m, k, v)
        for k, contents in dicts.items():
            d = names[k]
            if len(d) != len(contents) or any(d.get(key, _MISSING) is not v for key, v in contents.items()):
                names[k].clear()
                names[k].update(contents)
        for k, attrs in classes.items():
            cls = names[k]
            for a in [a for a in vars(cls) if a not in attrs]:
                try:
                    delattr(cls, a)
                except (AttributeError, TypeError):
                    pass
            for a, v in attrs.items():
                if vars(cls).get(a, _MISSING) is not v:
                    try:
                        setattr(cls, a, v)
                    except (AttributeError, TypeError):
                        pass


_MISSING = object()


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
    import gemm_lessons.teaching.exercises  # noqa: F401  (every module the check uses, loaded before the file runs)

    state = _snapshot()
    try:
        namespace = run_file(path)
    except (Exception, SystemExit) as e:  # the student's file: feedback, not a traceback
        return core._raised(exercise_id, e, what=f"your file {os.path.basename(path)}")
    finally:
        _restore(state)
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
    if args.json:
        print(json.dumps({"exercise": feedback.exercise, "ok": feedback.ok, "result_ok": feedback.result_ok,
                          "message": feedback.message}), flush=True)
    else:
        print(feedback, flush=True)
    return PASSED if feedback.ok else FAILED
