"""Every command of the three console scripts, read from their Typer apps, so a test over
"every command that takes --X" covers a command added later without being told."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

SCRIPTS = ("oa-vm", "openadapt-evals", "openadapt-eval-flow")


def _apps() -> dict[str, Any]:
    from evals.cli.app import app as evals_app
    from evals.compat.flow.cli import app as flow_app
    from oa_vm.cli.app import app as oa_vm_app

    return {"oa-vm": oa_vm_app, "openadapt-evals": evals_app, "openadapt-eval-flow": flow_app}


def _leaves(command: Any, words: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    subs = getattr(command, "commands", None)
    if not subs:
        yield words, command
        return
    for name, sub in sorted(subs.items()):
        yield from _leaves(sub, (*words, name))


def commands_with(option: str) -> list[tuple[str, tuple[str, ...]]]:
    """``(script, command words)`` of every command that declares ``option`` (``--pool``)."""
    import typer.main

    found = []
    for script, app in _apps().items():
        for words, command in _leaves(typer.main.get_command(app), ()):
            names = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
            if option in names:
                found.append((script, words))
    return found
