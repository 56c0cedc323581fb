"""``--version`` and ``-h`` for the project's Typer apps (``oa-vm``, ``openadapt-evals``)."""

# No ``from __future__ import annotations`` here: the option's callback is a local function, and
# Typer evaluates the annotation where the function is defined.
from typing import Annotated

import typer

DISTRIBUTION = "oa-vm"


def package_version() -> str:
    """The installed version of the project (``unknown`` when not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"


def add_version_and_short_help(app: typer.Typer, prog: str) -> None:
    """Give ``app`` a ``--version`` option and ``-h`` beside ``--help`` (every subcommand too:
    Click passes the help option names down to sub-contexts)."""
    settings = dict(app.info.context_settings or {})
    settings["help_option_names"] = ["-h", "--help"]
    app.info.context_settings = settings

    def show(value: bool) -> None:
        if value:
            typer.echo(f"{prog} {package_version()}")
            raise typer.Exit()

    @app.callback()
    def _root(
        version: Annotated[
            bool,
            typer.Option("--version", callback=show, is_eager=True,
                         help="Print the version and exit."),
        ] = False,
    ) -> None:
        pass
