"""Rich's progress bar on stderr for the long work of a command, only when stderr is a terminal
(a pipe, a log file or CI gets no bar and no escape codes; ``TERM=dumb`` neither). Rich is
imported only then."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Iterator


def wanted(stream=None) -> bool:
    stream = stream or sys.stderr
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and os.environ.get("TERM") != "dumb"


@contextmanager
def on_terminal() -> Iterator[None]:
    """Steps reported inside the block (``kvplan.progress.track``) drawn as a transient bar on stderr."""
    if not wanted():
        yield
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from kvplan.progress import listening

    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=Console(stderr=True), transient=True, redirect_stdout=False, redirect_stderr=False)

    def listener(items, what, total):
        return bar.track(items, total=total, description=what)

    with bar, listening(listener):
        yield
