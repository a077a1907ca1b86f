"""Graded exercises, one per chapter: write one function, then ``check(N, fn)``.

    from ctxlab.exercises import check, hint, show_solution
    def count_message(text, role, name): ...
    check(1, count_message)   # "✓ passed 76 cases", or the smallest input it fails on
    hint(1)                   # the next hint, one level per call
    show_solution(1)          # the reference solution's source

Each exercise lives in a module ``ex0N_topic.py`` that defines ``EXERCISE`` (an
:class:`~ctxlab.exercises._grader.Exercise`); modules are found by name, so adding an exercise
means adding a file. The grader is exact and deterministic: the same function gives the same
message on every run (nbval compares it).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import textwrap
from typing import Callable

from ctxlab.exercises._grader import Exercise, Result, grade

__all__ = ["EXERCISES", "Exercise", "Result", "check", "grade", "hint", "reference", "reset_hints",
           "show_solution"]

_MODULE_NAME = re.compile(r"ex(\d\d)_\w+$")  # ex01_message_tokens -> exercise 1


def _discover() -> dict[int, Exercise]:
    found: dict[int, Exercise] = {}
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        match = _MODULE_NAME.match(module_info.name)
        if not match:
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        exercise = getattr(module, "EXERCISE", None)
        if not isinstance(exercise, Exercise):
            raise TypeError(f"{module.__name__} must define EXERCISE = Exercise(...)")
        if exercise.number != int(match.group(1)) or exercise.number in found:
            raise ValueError(f"{module.__name__}: EXERCISE.number is {exercise.number}; the file name "
                             f"says {int(match.group(1))} (and each number is used once)")
        found[exercise.number] = exercise
    return found


EXERCISES: dict[int, Exercise] = _discover()  # exercise number -> Exercise

_hints_shown: dict[int, int] = {}  # exercise number -> hint levels printed so far in this kernel


def _exercise(n: int) -> Exercise:
    try:
        return EXERCISES[n]
    except KeyError:
        raise KeyError(f"no exercise {n}; the exercises are {sorted(EXERCISES)}") from None


def check(n: int, fn: Callable) -> Result:
    """Grade ``fn`` against exercise ``n``; print the verdict and return the :class:`Result`."""
    result = grade(_exercise(n), fn)
    print(result.message)
    return result


def hint(n: int) -> None:
    """Print the next hint of exercise ``n`` (one level per call); after the last, say so."""
    ex = _exercise(n)
    level = _hints_shown.get(n, 0)
    if level < len(ex.hints):
        _hints_shown[n] = level + 1
        text = textwrap.fill(f"hint {level + 1} of {len(ex.hints)}: {ex.hints[level]}", width=100,
                             subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)
    else:
        text = f"no more hints — show_solution({n}) prints the reference"
    print(text)


def reset_hints(n: int | None = None) -> None:
    """Start the hints of exercise ``n`` (or of all exercises) from level 1 again."""
    if n is None:
        _hints_shown.clear()
    else:
        _hints_shown.pop(n, None)


def reference(n: int) -> Callable:
    """The reference solution of exercise ``n`` (a function)."""
    return _exercise(n).reference


def show_solution(n: int) -> None:
    """Print the source of exercise ``n``'s reference solution."""
    source = inspect.getsource(_exercise(n).reference)
    print(source.rstrip("\n"))
