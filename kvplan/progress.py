"""Progress of long work: ``check`` over many deployments, ``fit``'s GPU × TP grid, threshold sweeps.

The library reports its steps to whoever listens, and nobody does by default: a library call
or a piped CLI run pays one context-variable read per loop. The CLI listens only when stderr is
a terminal, and draws the steps there with Rich (``kvplan.report.progress``).
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
# (items, what is being done, how many) -> the same items, reported as they are taken
Listener = Callable[[Iterable, str, "int | None"], Iterable]
_LISTENER: ContextVar[Listener | None] = ContextVar("kvplan_progress", default=None)


def track(items: Iterable[T], what: str, total: int | None = None) -> Iterable[T]:
    """``items`` as they are, each one reported to the listener, if any, as it is taken."""
    listener = _LISTENER.get()
    if listener is None:
        return items
    return listener(items, what, total if total is not None else _len(items))


def _len(items) -> int | None:
    try:
        return len(items)
    except TypeError:
        return None


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Report the steps of the work inside the block to ``listener``."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)
