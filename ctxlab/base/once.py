"""Values a frozen object works out once from its fields, kept in spare slots that are not fields.

``Message.tool_calls`` and ``Message.call_ids`` are read millions of times in a replay (1.7 million in one on
a 20 MB session) and used to build a tuple at every read. ``functools.cached_property`` needs a ``__dict__``,
and a materialised ``__dict__`` costs ~900 bytes a message (75 MB on a 200 MB transcript), so ``Message`` is a
slotted dataclass that inherits two spare slots (:func:`spare_slots`) and its two properties are
:class:`once`: worked out on first read, then read back from the slot. A spare slot is not a field: ``==``,
``hash``, ``repr``, ``dataclasses.replace`` / ``asdict`` / ``fields``, copying and pickling ignore it (a copy
made by ``replace``, ``copy`` or ``pickle`` works the value out again). Plumbing for chapter 02 (issue 18).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def spare_slots(*names: str) -> type:
    """A base class holding only the slots ``names``, for a ``@dataclass(frozen=True, slots=True)`` class:
    ``class Message(spare_slots("_call_ids")): ...``. Its instances get no ``__dict__``."""
    return type("SpareSlots", (), {"__slots__": names, "__doc__": f"Spare slots {', '.join(names)} (not fields)."})


class once(Generic[T]):  # lower case: a decorator, like functools.cached_property
    """A read-only property worked out once per object and kept in the spare slot ``_<name>``
    (:func:`spare_slots`): ``@once`` over ``def call_ids(self): ...``. Stored with ``object.__setattr__``,
    which a frozen dataclass allows; the function must depend on the object's fields only."""

    def __init__(self, make: Callable[[Any], T]) -> None:
        self.make, self.slot, self.__doc__ = make, "_" + make.__name__, make.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, obj: Any, owner: type | None = None) -> T:
        if obj is None:
            return self  # type: ignore[return-value] - the class attribute, for help() and the docs
        try:
            return getattr(obj, self.slot)
        except AttributeError:  # the first read
            value = self.make(obj)
            object.__setattr__(obj, self.slot, value)
            return value
