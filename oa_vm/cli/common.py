"""What every ``oa-vm`` command module prints and asks with (Typer is already loaded there).

Questions go to stderr, so that ``--json`` output on stdout stays parseable when a question is
asked on a terminal; with no terminal nothing is asked and the command refuses in one line.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Annotated

import typer

from oa_vm.errors import InvalidInputError, OaVmError, PoolCommandInterrupted
from oa_vm.kit.clikit import target_option

if TYPE_CHECKING:
    from oa_vm.clouds.base import CleanupReport

NameOpt = Annotated[
    str | None,
    target_option("--pool", "-n", "--name", what="pool",
                  help="Pool name (optional when only one exists)."),
]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]


def echo(line: str) -> None:
    """One line of output."""
    typer.echo(line)


def err(line: str) -> None:
    """One line on stderr (warnings, progress beside JSON)."""
    typer.echo(line, err=True)


@contextlib.contextmanager
def asking(question: str, yes: bool) -> Iterator[None]:
    """Ask before anything that costs money or removes things, once the block has shown what the
    question is about (a plan and its price); ``-y`` skips the question, the block still runs.

    With no terminal to ask on and no ``-y`` the command is refused on entry, before the block
    says anything: that refusal is the one line the command prints.

    Raises:
        InvalidInputError: no terminal to ask on and no ``-y``.
        typer.Abort: the user said no.
    """
    if not yes and not sys.stdin.isatty():
        raise InvalidInputError(f"{question.rstrip('?')}: not asked (no terminal); pass -y")
    yield
    if not yes and not typer.confirm(question, default=False, err=True):
        raise typer.Abort()


def show_removal(report: CleanupReport, what: str) -> None:
    """Print a removal's hints, then what is left (on stderr) and fail naming ``what``.

    Raises:
        OaVmError: something is left.
    """
    for hint in report.hints:
        echo(hint)
    if report.left:
        for item in report.left:
            err(f"left: {item}")
        raise OaVmError(f"{what} was not fully removed; see the lines above")


@contextlib.contextmanager
def interrupt_says(next_steps: Callable[[], str]) -> Iterator[None]:
    """Around a pool command's work: Ctrl-C, SIGTERM and SIGHUP (a closed terminal, a CI job
    cancelled) all stop it as Ctrl-C does, so its own clean-up runs, and end it in one line,
    ``interrupted; <next_steps()>`` (exit 130), asked once the clean-up ran, so it can say what
    is left.

    Raises:
        PoolCommandInterrupted: a stop arrived inside the block.
    """
    from oa_vm.kit.signals import sigterm_as_interrupt

    try:
        with sigterm_as_interrupt((signal.SIGTERM, signal.SIGHUP)):
            yield
    except KeyboardInterrupt:
        raise PoolCommandInterrupted(f"interrupted; {next_steps()}") from None
