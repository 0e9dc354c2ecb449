"""Progress a person can see: one renderer (rich) for every long phase, silenced by ``--quiet``.

A phase reports ``update(done)`` calls; nothing is drawn until it has run ``after`` seconds
(2 s by default), so short phases stay silent, and the bar shows elapsed time and an ETA.
Everything goes to stderr (the decision tables and results stay on stdout).  The CLI's
``--quiet`` (or :func:`quiet`) silences every phase, PyMC's sampling bar included
(:func:`enabled` tells a model whether to ask PyMC for its bar).

>>> from hybridpriv.engine.progress import phase
>>> with phase("counting", total=3) as update:
...     for k in range(3):
...         update(k + 1)
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar

__all__ = ["Phase", "enabled", "interactive", "phase", "quiet"]

_QUIET: ContextVar[bool] = ContextVar("hybridpriv_quiet", default=False)


def enabled() -> bool:
    """Whether progress is shown (not silenced by :func:`quiet`)."""
    return not _QUIET.get()


def interactive(stream=None) -> bool:
    """Whether progress is drawn as a live bar: shown (:func:`enabled`) and ``stream`` (default stderr) is a
    terminal.  Redirected to a file, a phase writes one line when it ends instead of bar frames."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return enabled() and bool(callable(isatty) and isatty())


@contextlib.contextmanager
def quiet(on: bool = True) -> Iterator[None]:
    """Silence (``on=True``) or allow every progress display inside the block."""
    token = _QUIET.set(bool(on))
    try:
        yield
    finally:
        _QUIET.reset(token)


class Phase:
    """A progress display for one phase: call it with the number of units done.

    Parameters
    ----------
    label
        What is being done ("fitting", "evaluating", ...).
    total
        Units to do (``None``: unknown; then only the elapsed time is shown).
    unit
        What a unit is ("datasets", "chunks", ...).
    after
        Seconds before anything is drawn.
    stream
        Where to draw (default ``sys.stderr``).
    """

    def __init__(self, label: str, total: int | None = None, unit: str = "", after: float = 2.0, stream=None) -> None:
        if total is not None and (not isinstance(total, int) or total < 0):
            raise ValueError(f"total must be an integer >= 0 or None, got {total!r}")
        self.label, self.total, self.unit, self.after = label, total, unit, float(after)
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.perf_counter()
        self.done = 0
        self._bar = None
        self._task = None
        self._on = enabled()
        self._live = interactive(self.stream)

    def __call__(self, done: int) -> None:
        self.done = int(done)
        if not self._on or not self._live:
            return
        if self._bar is None:
            if time.perf_counter() - self.start < self.after:
                return
            self._open()
        self._bar.update(self._task, completed=self.done)

    def _open(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        console = Console(file=self.stream, stderr=self.stream is sys.stderr)
        columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn(self.unit), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn()]
        self._bar = Progress(*columns, console=console, transient=False)
        self._bar.start()
        self._task = self._bar.add_task(self.label, total=self.total, completed=self.done)
        # the time already spent before the bar appeared counts (rich starts the clock at add_task)
        self._bar.tasks[0].start_time = self._bar.get_time() - (time.perf_counter() - self.start)

    def close(self) -> None:
        """Finish the display (a last update to ``total`` is drawn if the bar was shown); not on a terminal, one
        line for a phase that ran past ``after`` seconds."""
        seconds = time.perf_counter() - self.start
        if self._on and not self._live and seconds >= self.after:
            if self.total is None and not self.done:  # nothing counted: only the time means something
                line = f"{self.label}: done in {seconds:.1f} s"
            else:
                of = f"/{self.total}" if self.total is not None else ""
                line = f"{self.label}: {self.done}{of} {self.unit} in {seconds:.1f} s".replace("  ", " ")
            print(line, file=self.stream, flush=True)
        if self._bar is not None:
            if self.total is not None:
                self._bar.update(self._task, completed=max(self.done, 0))
            self._bar.stop()
            self._bar = None


@contextlib.contextmanager
def phase(label: str, total: int | None = None, unit: str = "", after: float = 2.0, stream=None
          ) -> Iterator[Callable[[int], None]]:
    """A :class:`Phase` as a context manager: ``with phase("evaluating", 400, "datasets") as update: ...``."""
    p = Phase(label, total, unit, after, stream)
    try:
        yield p
    finally:
        p.close()
