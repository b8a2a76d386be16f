"""Grading progress on stderr: N/M, the time left and the submission at hand.

On a terminal this is rich's progress bar (``rich.progress``); anywhere else (a log
file, CI, a pipe) a bar would only show at the end, so one line is printed per
step instead: ``[3/40] grading alice/<stem>.py as a1 (about 1:02 left)``.
The time left is the mean time per finished step so far times the steps left.
Names are escaped (``graders.safety.safe_text.terminal_text``) and never read as markup.
"""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from graders.safety.safe_text import terminal_text


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class GradingProgress:
    """Progress of ``total`` steps on ``console`` (a context manager).

    ``now(text)`` names the step being worked on; ``advance(text)`` counts one step
    as done (``text``: what was done). ``transient`` removes the bar when done.
    """

    def __init__(self, console: Console, total: int, *, transient: bool = False) -> None:
        self.console, self.total, self.done = console, total, 0
        self.started = time.monotonic()
        self._bar: Progress | None = None
        self._task = None
        if console.is_terminal:
            self._bar = Progress(
                TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TextColumn("ETA"),
                TimeRemainingColumn(), TimeElapsedColumn(),
                TextColumn("{task.fields[now]}", markup=False),
                console=console, transient=transient)

    def __enter__(self) -> GradingProgress:
        if self._bar is not None:
            self._bar.__enter__()
            self._task = self._bar.add_task("grading", total=self.total, now="")
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.__exit__(kind, value, trace)

    def stop(self) -> None:
        """Stop redrawing the bar (before other output, e.g. after Ctrl-C)."""
        if self._bar is not None:
            self._bar.stop()

    def left(self) -> str:
        """The time left, ``"?"`` before the first step is done."""
        if not self.done:
            return "?"
        per_step = (time.monotonic() - self.started) / self.done
        return _clock(per_step * (self.total - self.done))

    def now(self, text: str) -> None:
        """Say which step is being worked on."""
        shown = terminal_text(text)
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, now=shown)
        else:
            self.console.print(Text(f"[{self.done + 1}/{self.total}] {shown} "
                                    f"(about {self.left()} left)"), soft_wrap=True)

    def advance(self, text: str = "") -> None:
        """Count one step as done (``text``: what was done, shown beside the bar or as a
        line)."""
        self.done += 1
        shown = terminal_text(text)
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, advance=1, now=shown)
        elif text:
            self.console.print(Text(f"[{self.done}/{self.total}] {shown} "
                                    f"(about {self.left()} left)"), soft_wrap=True)
