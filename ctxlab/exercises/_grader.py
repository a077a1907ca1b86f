"""The exact grader behind every chapter exercise.

An :class:`Exercise` is one function a learner writes, a deterministic list of argument tuples
(``cases``, smallest first) and a reference solution. :func:`grade` runs the learner's function on
every case and stops at the first disagreement, which is therefore the *smallest* failing input.

Simplified on purpose: no time limit (a learner's endless loop hangs the cell; interrupt the
kernel), positional arguments only, and the message is plain text so that nbval can compare it
byte for byte: nothing in it depends on memory addresses, timings or random ids.
"""

from __future__ import annotations

import copy
import operator
import reprlib
from dataclasses import dataclass
from typing import Any, Callable, Iterable

__all__ = ["Exercise", "Result", "grade", "by_size", "short", "show_args"]

_SHORT = reprlib.Repr()
_SHORT.maxstring = 70   # characters of a string shown before "..."
_SHORT.maxother = 200   # characters of any other repr (dataclasses, ...) shown before "..."
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxdict = 30  # items shown before "..."
_SHORT.maxlevel = 4


def short(value: Any) -> str:
    """A deterministic repr, cut in the middle when long: strings over 70 characters, lists over 30 items."""
    return _SHORT.repr(value)


def show_args(args: tuple) -> str:
    """The default way an input is shown: ``show_args(("hi", 3))`` → ``"'hi', 3"``."""
    return ", ".join(short(arg) for arg in args)


def by_size(cases: Iterable[tuple], size: Callable[[tuple], Any]) -> list[tuple]:
    """Order argument tuples smallest first by ``size`` and drop repeats (first kept).

    The sort is stable, so cases of equal size keep the order they were generated in; with the
    cases ordered this way the grader's first failing case is the smallest one.
    """
    unique: list[tuple] = []
    seen: set[str] = set()
    for case in cases:
        key = repr(case)  # argument tuples may hold lists, which are unhashable
        if key not in seen:
            seen.add(key)
            unique.append(case)
    return sorted(unique, key=size)


@dataclass(frozen=True)
class Exercise:
    """One graded exercise: the learner writes ``function`` with ``signature``.

    ``cases()`` returns the argument tuples, generated deterministically and ordered smallest
    first; ``reference`` is the model solution; ``same(expected, actual)`` decides agreement
    (``operator.eq`` unless an exercise needs a tolerance); ``show_input`` / ``show_output``
    render an input tuple / a value for the message; ``hints`` go from a nudge to nearly the answer.
    """

    number: int
    title: str
    function: str
    signature: str
    cases: Callable[[], list[tuple]]
    reference: Callable
    same: Callable[[Any, Any], bool] = operator.eq
    show_input: Callable[[tuple], str] = show_args
    hints: tuple[str, ...] = ()
    show_output: Callable[[Any], str] = short


@dataclass
class Result:
    """What :func:`grade` found. ``failing_input`` is ``None`` when every case passed or the
    function is not written yet; ``message`` is the text :func:`ctxlab.exercises.check` prints."""

    exercise: int
    passed: bool
    cases: int
    failing_input: tuple | None
    expected: Any
    actual: Any
    message: str

    def __str__(self) -> str:
        return self.message

    def _ipython_display_(self) -> None:
        # check() has printed the message already; showing the Result as a cell's last value
        # would print it twice. print(result) shows it again on purpose.
        pass


def not_solved_message(ex: Exercise) -> str:
    return (f"not solved yet: write the body of `{ex.function}`, then run this cell again.\n"
            f"hint({ex.number}) gives a hint; show_solution({ex.number}) prints the reference.")


def _raised(error: BaseException, fn: Callable) -> str:
    """``raised ValueError('bad') (line 3 of `fn`)``: the line counts from the ``def`` line, so
    it reads the same in a notebook cell, a script or a test file."""
    text = f"raised {type(error).__name__}({', '.join(short(a) for a in error.args)})"
    code = getattr(fn, "__code__", None)
    line = None
    tb = error.__traceback__
    while tb is not None:  # the innermost frame that runs the learner's own function
        if tb.tb_frame.f_code is code:
            line = tb.tb_lineno - code.co_firstlineno + 1
        tb = tb.tb_next
    name = getattr(fn, "__name__", "your function")
    return f"{text} (line {line} of `{name}`)" if line is not None else text


def _agree(ex: Exercise, expected: Any, actual: Any) -> bool:
    try:
        return bool(ex.same(expected, actual))
    except Exception:  # a learner's value of the wrong type must fail, not crash the grader
        return False


def grade(ex: Exercise, fn: Callable) -> Result:
    """Run ``fn`` on every case of ``ex``; stop at the first (= smallest) failing case.

    Arguments are deep-copied for each call, so a function that mutates its input cannot change
    the next case or the reference's answer. ``NotImplementedError`` on the first case means
    "not written yet" and gets its own message. Errors in the *reference* propagate (a bug in the
    exercise, not in the learner's code).
    """
    cases = ex.cases()
    for index, args in enumerate(cases):
        expected = ex.reference(*copy.deepcopy(args))
        try:
            actual = fn(*copy.deepcopy(args))
        except NotImplementedError as error:
            if index == 0:
                return Result(ex.number, False, len(cases), None, None, None, not_solved_message(ex))
            got = _raised(error, fn)
            actual = error
        except Exception as error:  # the learner's error is a result to report, not a crash
            got = _raised(error, fn)
            actual = error
        else:
            if _agree(ex, expected, actual):
                continue
            got = ex.show_output(actual)
        message = ("✗ failed on the smallest failing input:\n"
                   f"  input: {ex.show_input(args)}\n"
                   f"  expected: {ex.show_output(expected)}\n"
                   f"  got: {got}")
        return Result(ex.number, False, len(cases), args, expected, actual, message)
    return Result(ex.number, True, len(cases), None, None, None, f"✓ passed {len(cases)} cases")
