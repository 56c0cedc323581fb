"""The one live display: a region of the terminal redrawn in place with ``rich`` (imported only
when one is made), with lines printed above it that stay in the scrollback.

Used by ``oa-vm pool-wait``/``pool-resume``/``pool-repair`` (:mod:`oa_vm.cli.wait_display`) and by
``openadapt-evals run``/``sweep`` (:mod:`evals.report.progress`); each says what to draw (a
``render``
callable, usually :func:`table_view`), this module draws it. Only for a person at a terminal
(:func:`wants_live`); anywhere else the commands print plain lines and no terminal control code.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, TextIO

from oa_vm.kit.lazy import rich_console, rich_live, rich_table, rich_text

REFRESHES_PER_SECOND = 2  # enough for the clocks shown; cheap beside the commands' own work


def wants_live(stream: TextIO | None = None, *, json_out: bool = False) -> bool:
    """A live display only for a person at a terminal: not with ``--json``, not on a ``dumb``
    terminal, and only when standard output (and ``stream``, where the display goes, if given)
    is a terminal, not a pipe or a file."""
    if json_out or os.environ.get("TERM") == "dumb":
        return False
    try:
        return (stream is None or stream.isatty()) and sys.stdout.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream: plain lines
        return False


def table_view(
    head: str, headers: Sequence[str], rows: Iterable[Sequence[str]],
    *, no_wrap: Collection[str] = (),
) -> Any:
    """A line of totals above a borderless table (cells too wide end in an ellipsis; the
    columns in ``no_wrap`` are cut to one line)."""
    table = rich_table.Table(box=None, pad_edge=False, show_edge=False)
    for header in headers:
        table.add_column(header, overflow="ellipsis", no_wrap=header in no_wrap)
    for row in rows:
        table.add_row(*row)
    return rich_console.Group(rich_text.Text(head), table)


def text_view(line: str) -> Any:
    """A single line (what a display shows before its first state)."""
    return rich_text.Text(line)


class LiveRegion:
    """``render()`` redrawn in place on ``stream`` (``rich.live.Live``), from now until
    :meth:`close`.

    Contract: ``render`` is called from rich's refresh thread as well as from :meth:`refresh`,
    so it must read its state under its own lock and return quickly.
    """

    def __init__(self, stream: TextIO, render: Callable[[], Any]) -> None:
        self.console = rich_console.Console(file=stream)
        self._live = rich_live.Live(
            get_renderable=render, console=self.console,
            refresh_per_second=REFRESHES_PER_SECOND, transient=False, redirect_stdout=False,
            redirect_stderr=False,
        )
        self._live.start()

    def print_above(self, line: str, *, soft_wrap: bool = False) -> None:
        """Print ``line`` above the region (which is then drawn again), as plain text."""
        self.console.print(line, markup=False, highlight=False, soft_wrap=soft_wrap)

    def refresh(self) -> None:
        """Draw the region now (not only at the next tick)."""
        self._live.refresh()

    def close(self, *, keep: bool = True) -> None:
        """Draw the last state and stop; ``keep=False`` removes the region from the screen."""
        self._live.transient = not keep
        self._live.refresh()
        self._live.stop()
