"""The exercises' registry, ``check`` and ``hint``: a checker registered with ``@exercise(id,
hint, *later_hints)`` returns ``(ok, message)``; ``check`` turns it into Feedback and never raises
(a wrong answer, a missing one, a crashing or endless kernel, a warning: all come back as
feedback).  A failure says what is wrong and where, with the first hint (or, where the checker
returns ``(ok, message, step)``, hint number ``step``: a failure past what the first hint is
about); ``hint(id)`` gives the next one, a step at a time (the session counts, per exercise, how
many it has shown)."""
import contextlib
import inspect
import os
import sys
import sysconfig
import threading
import time
import traceback
import warnings
from dataclasses import dataclass

from gemm_lessons.core import backend


# A student's kernel on the simulator gets this long before the check stops it.
KERNEL_TIME_LIMIT_S = 120.0


class KernelTimeout(Exception):
    """Raised inside a simulated kernel that ran past its time limit."""

_CHECKS = {}  # id: (checker, first hint)
_HINTS = {}  # id: every hint, the most general first (the first is the one in _CHECKS)
_ANSWERS = {}  # id: (the expression the exercise cell checks, what its names are), for gemm_lessons.check
_HINTS_SHOWN = {}  # id: how many of its hints this session has shown (a failure shows the first)
_TECHNIQUE = set()  # ids whose check judges the lesson's technique besides the result
_RESULT = {"right": False}  # set by result_right() while a check runs


def result_right(right=True):
    """Called by a checker once the answer's result is verified right (before it judges the
    technique): the Feedback then has result_ok, even when the technique is missing.  ``False``
    takes it back (a race found after a result that happened to be right)."""
    _RESULT["right"] = bool(right)


@dataclass
class Feedback:
    """A check's verdict.  ``result_ok``: the answer's result is right (for a kernel: C, or out,
    matches the reference), whether or not the lesson's technique is there: a grader can give
    points for the result and for the technique separately (gemm_lessons/course/grading.py)."""
    exercise: str
    ok: bool
    message: str
    result_ok: bool = False

    def __post_init__(self):
        self.result_ok = bool(self.result_ok or self.ok)

    def __bool__(self):
        return self.ok

    def __str__(self):
        return f"{'Correct' if self.ok else 'Not yet'} [{self.exercise}]: {self.message}"

    __repr__ = __str__

    def _repr_markdown_(self):
        return ("✅ " if self.ok else "❌ ") + str(self)


def exercise(exercise_id, hint, *later_hints, answer=None, defines=None, technique=False):
    """Register ``fn(answer) -> (ok, message)`` as the checker for ``exercise_id``.  ``hint``
    and ``later_hints`` are its hints in steps, the most general first and none of them the
    answer: a failure quotes the first (or hint number ``step``, from 1, when the checker returns
    ``(False, message, step)``: the hint for the stage it failed at), ``hint(exercise_id)`` gives
    the next.  ``answer`` is the
    expression the exercise cell passes to check (``"answer"``, ``"my_naive_1d"``,
    ``"make_my_reg2d()"``) and ``defines`` says in one line what its names must be: what a file
    given to ``python -m gemm_lessons.check`` must define.  ``technique``: the check judges the
    lesson's technique besides the result (and calls result_right() once the result is right)."""
    def register(fn):
        _CHECKS[exercise_id] = (fn, hint)
        if technique:
            _TECHNIQUE.add(exercise_id)
        _HINTS[exercise_id] = (hint,) + tuple(later_hints)
        if answer is not None:
            _ANSWERS[exercise_id] = (answer, defines or "")
        return fn
    return register


@dataclass
class Hint:
    """Hint ``step`` of ``total`` for an exercise (step 0: the exercise is unknown)."""
    exercise: str
    step: int
    total: int
    text: str

    def __str__(self):
        if not self.step:
            return f"No hint [{self.exercise}]: {self.text}"
        last = ("This is the last hint." if self.step == self.total
                else f'The next one: exercises.hint("{self.exercise}").')
        return f"Hint {self.step} of {self.total} [{self.exercise}]: {self.text} {last}"

    __repr__ = __str__

    def _repr_markdown_(self):
        return "💡 " + str(self)


def hint(exercise_id, step=None):
    """The next hint for ``exercise_id`` (the first this session has not shown yet; a failed
    check has shown the first), or hint number ``step`` (from 1) again.  After the last, the
    last again.  Never raises: an unknown exercise gets a Hint that lists the known ones."""
    hints = _HINTS.get(exercise_id)
    if not hints:
        return Hint(exercise_id, 0, 0, f"unknown exercise; known: {', '.join(ids())}")
    shown = _HINTS_SHOWN.get(exercise_id, 0)
    step = min(shown + 1 if step is None else max(int(step), 1), len(hints))
    _HINTS_SHOWN[exercise_id] = max(shown, step)
    return Hint(exercise_id, step, len(hints), hints[step - 1])


def _first_hint(exercise_id, step=1):
    """The hint a failure quotes (the first, or hint ``step`` when the checker names the one that
    fits the stage it failed at): with where the next ones are, if there are any."""
    hints = _HINTS.get(exercise_id) or (_CHECKS[exercise_id][1],)
    step = min(max(int(step), 1), len(hints))
    _HINTS_SHOWN[exercise_id] = max(_HINTS_SHOWN.get(exercise_id, 0), step)
    more = len(hints) - step
    return hints[step - 1] + (f' ({more} more hint{"s" if more > 1 else ""}, one at a time: '
                              f'exercises.hint("{exercise_id}").)' if more else "")


def check(exercise_id, answer, time_limit=KERNEL_TIME_LIMIT_S):
    """Check a student's answer; returns Feedback (shown as a green or red line).  On the
    simulator a kernel still running after ``time_limit`` seconds is stopped.  Nothing goes to
    stderr: numba's performance warnings about the check's tiny launches are dropped, other
    warnings raised meanwhile are quoted in the feedback (see _warnings_into_feedback)."""
    with _warnings_into_feedback() as caught:
        feedback = _check(exercise_id, answer, time_limit)
    if caught:
        feedback.message += " (Warned while checking: " + "; ".join(caught) + ")"
    return feedback


def _check(exercise_id, answer, time_limit):
    if exercise_id not in _CHECKS:
        return Feedback(exercise_id, False, f"unknown exercise; known: {', '.join(sorted(_CHECKS))}")
    fn, _ = _CHECKS[exercise_id]
    if answer is None or answer is Ellipsis:
        return Feedback(exercise_id, False,
                        "no answer yet: replace the placeholder with your answer. Hint: " + _first_hint(exercise_id))
    _RESULT["right"] = False
    try:
        ok, message, *step = _with_time_limit(lambda: fn(answer), time_limit)  # a third item: the hint to quote
    except KernelTimeout:
        return Feedback(exercise_id, False,
                        f"stopped after {time_limit:g} s on the simulator: does a loop never end (a loop "
                        "variable that never changes, a while without an exit, a guard that skips "
                        "the increment)? Hint: " + _first_hint(exercise_id))
    except Exception as e:  # a broken kernel or answer must give feedback, not a traceback
        return _raised(exercise_id, e)
    if not ok:
        if not backend.SIMULATOR and "never written" in message and _still_unwritten(answer):
            message += (" Your kernel still has the `raise NotImplementedError` of the part to write: on a GPU"
                        " a raise inside a kernel does not stop it with an error, it just leaves C unwritten.")
        message += " Hint: " + _first_hint(exercise_id, *step[:1])
    return Feedback(exercise_id, ok, message, result_ok=ok or _RESULT["right"])


def _raised(exercise_id, error, what="your answer"):
    """The Feedback for an exception raised by ``what``: its type, its message and where."""
    if _cuda_imported_before_the_simulator(error):  # not the answer's fault: say how to restart
        return Feedback(exercise_id, False, f"{what} could not run: {IMPORT_ORDER}")
    return Feedback(exercise_id, False, f"{what} raised {type(error).__name__}: {error}{_where(error)}. "
                                        f"Hint: {_first_hint(exercise_id)}")


IMPORT_ORDER = ("numba.cuda was imported before gemm_lessons chose numba's CUDA simulator (there is no GPU "
                "here), so numba looked for a GPU. Restart the kernel and run the notebook from its first "
                "cells: `import gemm_lessons` must come before `from numba import cuda`.")


def _cuda_imported_before_the_simulator(error):
    """Whether ``error`` is numba's "no CUDA" error in a process where gemm_lessons chose the
    simulator but numba.cuda had been imported before it (a cell run alone after a restart)."""
    return (backend.SIMULATOR and type(error).__name__ == "CudaSupportError"
            and backend.cuda_imported_without_simulator())


# not the student's code: this package (gemm_lessons/), the standard library, installed packages
_LIBRARY_DIRS = tuple(os.path.join(os.path.normcase(os.path.abspath(d)), "") for d in {
    os.path.dirname(os.path.dirname(os.path.dirname(__file__))), *(sysconfig.get_paths()[k] for k in
                                                                   ("stdlib", "platstdlib", "purelib", "platlib"))})


def _where(error):
    """Where an exception was raised, as ' (line N of name)': the innermost line of the student's
    own code (a notebook cell, a file) in the traceback, past the simulator's and this package's
    frames; else the innermost line.  '' for a syntax error (its message says where) or no
    traceback."""
    if isinstance(error, SyntaxError):
        return ""
    tb = traceback.extract_tb(error.__traceback__)
    if not tb:
        return ""
    theirs = [f for f in tb if not f.filename.startswith("<frozen") and "site-packages" not in f.filename
              and f.filename != "<string>"  # code generated by a library (dataclasses, namedtuple)
              and (f.filename.startswith("<")  # exec'd code: a cell, say
                   or not os.path.normcase(os.path.abspath(f.filename)).startswith(_LIBRARY_DIRS))]
    frame = (theirs or tb)[-1]
    return f" (line {frame.lineno} of {frame.name})"


def _written_function(kernel):
    """The Python function a student wrote: under numba's kernel and @unrolled's expansion."""
    fn = getattr(kernel, "py_func", kernel)
    return getattr(fn, "__unrolled_from__", fn)


def on_simulator(kernel, expression, what, name=None, timeout=KERNEL_TIME_LIMIT_S):
    """The value of ``expression`` evaluated on the CUDA simulator in a child process (from a GPU:
    the access log and the bank tracer are simulator-only), where ``kernel`` is the student's
    kernel made again by running the cell (or file) that defined it, its ``exercises.check(...)``
    lines left out, and taken by ``name`` (default: the kernel's own).  The expression may use
    ``evidence``, ``exercises``, ``importlib`` and the modules ``kernels_01_04``, ``kernels_05_11``,
    ``lesson09``; its value must be JSON.  Raises LookupError when the cell's source is not found
    and RuntimeError when the child fails."""
    import linecache

    from gemm_lessons.instruments.simulator_process import run_on_simulator

    fn = _written_function(kernel)
    filename = fn.__code__.co_filename
    text = "".join(linecache.getlines(filename))
    if not text:
        raise LookupError(f"the source of the cell that defined {fn.__name__} was not found")
    text = "\n".join(line for line in text.splitlines() if not line.startswith("exercises.check("))
    code = ("import importlib, json, linecache\nfrom gemm_lessons.teaching import exercises\n"
            "from gemm_lessons.teaching.exercises import evidence, kernels_01_04, kernels_05_11, lesson09\n"
            f"text = {text!r}\nlinecache.cache[{filename!r}] = (len(text), None, text.splitlines(True), {filename!r})\n"
            f"ns = {{}}\nexec(compile(text, {filename!r}, 'exec'), ns)\nkernel = ns[{(name or fn.__name__)!r}]\n"
            f"print(json.dumps({expression}))")
    return run_on_simulator(code, what, timeout=timeout)


def _still_unwritten(answer):
    """Whether a kernel's Python source still holds the skeleton's NotImplementedError."""
    try:
        return "NotImplementedError" in inspect.getsource(_written_function(answer))
    except (OSError, TypeError):
        return False


def ids():
    return sorted(_CHECKS)


def judges_technique(exercise_id):
    """Whether ``exercise_id``'s check judges a technique besides the result."""
    return exercise_id in _TECHNIQUE


def _performance_warning_classes():
    """numba's NumbaPerformanceWarning classes (numba-cuda has its own besides numba's)."""
    classes = []
    for module in ("numba.core.errors", "numba.cuda.core.errors"):
        try:
            classes.append(__import__(module, fromlist=["NumbaPerformanceWarning"]).NumbaPerformanceWarning)
        except (ImportError, AttributeError):
            pass
    return classes


@contextlib.contextmanager
def _warnings_into_feedback(limit=3):
    """Collect the warnings raised inside the block instead of printing them, and yield them as
    a list of "Category: message" lines (at most ``limit``, each once).

    A check's output must not go to stderr: in an nbgrader notebook the check runs in a graded
    cell, and nbgrader gives 0 points to a cell that wrote to stderr.  numba's performance
    warnings ("Grid size 1 will likely result in GPU under-utilization due to low occupancy",
    a host array copied to the device) are about the check's own deliberately tiny launches,
    so they are dropped; anything else (numba compiling the student's kernel, say) is worth
    reading, so it goes into the feedback.  The caller's filters still apply (``ignore`` stays
    ignored); the performance warnings are dropped even after ``warnings.resetwarnings()``
    undid the filter gemm_lessons/__init__.py installs."""
    caught = []
    with warnings.catch_warnings(record=True) as records:
        for category in _performance_warning_classes():
            warnings.simplefilter("ignore", category)
        warnings.filterwarnings("ignore", message=r".*Grid size .* will likely result in GPU under-utilization")
        try:
            yield caught
        finally:
            for w in records:
                line = f"{w.category.__name__}: {w.message}"
                if line not in caught and len(caught) < limit:
                    caught.append(line)


def _with_time_limit(fn, seconds):
    """Run fn(); on the simulator, kernel threads started meanwhile are stopped with KernelTimeout
    once ``seconds`` have passed.  A watchdog thread raises it in each of them (CPython's
    PyThreadState_SetAsyncExc, at their next bytecode), so nothing is traced while the kernel runs:
    a line tracer doubled the time of every check.  The simulator then aborts the block and
    raises KernelTimeout in fn's thread; any kernel thread still running after that is stopped
    too (left spinning, it would slow every later check of the session)."""
    if not backend.SIMULATOR or not seconds:
        return fn()
    import ctypes

    before = set(threading.enumerate())
    done, fired = threading.Event(), threading.Event()

    def started_since():
        """The threads started since fn began that are inside their run() (an exception raised in a
        thread still starting up would leave Thread.start() waiting for it forever)."""
        frames = sys._current_frames()
        return [t for t in threading.enumerate() if t not in before and t is not watchdog and _in_run(frames.get(t.ident))]

    def stop(threads):
        for t in threads:
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(t.ident), ctypes.py_object(KernelTimeout))

    def watch():
        if done.wait(seconds):
            return
        fired.set()
        while not done.is_set():  # until fn returns: the simulator starts new threads for each block
            stop(started_since())
            done.wait(0.05)

    watchdog = threading.Thread(target=watch, name="gemm-lessons-time-limit", daemon=True)
    watchdog.start()
    try:
        return fn()
    finally:
        done.set()
        watchdog.join()
        deadline = time.monotonic() + 10
        while fired.is_set() and (running := started_since()) and time.monotonic() < deadline:
            stop(running)
            time.sleep(0.01)


def _in_run(frame):
    """Whether a thread whose innermost frame is ``frame`` is inside its run(): below threading's
    _bootstrap and _bootstrap_inner, the next frame out is run."""
    names = []
    while frame is not None:
        names.append(frame.f_code.co_name)
        frame = frame.f_back
    return names[-3:] == ["run", "_bootstrap_inner", "_bootstrap"]


def _close(a, b, rel=1e-6):
    return abs(a - b) <= rel * max(1.0, abs(b))


def _number(ans, expected, what):
    try:
        value = float(ans)
    except (TypeError, ValueError):
        return False, f"expected a number for {what}, got {ans!r}."
    if _close(value, expected, 1e-3):
        return True, f"{what} = {expected:,.6g}."
    return False, f"{value:,.6g} is not {what}."
