"""``openadapt-evals``: list tasks, run and sweep them on a pool, view and compare runs.

Each command lives in its own module under :mod:`evals.cli.commands`; modules import their heavy
dependencies inside the command, so ``openadapt-evals --help`` stays fast.
"""

from __future__ import annotations

from evals.cli.commands.audit import audit_verifier
from evals.cli.commands.compare import compare
from evals.cli.commands.export import export
from evals.cli.commands.mock import mock
from evals.cli.commands.run import run
from evals.cli.commands.runs import runs
from evals.cli.commands.study import app as study_app
from evals.cli.commands.sweep import sweep
from evals.cli.commands.tasks import tasks
from evals.cli.commands.view import view
from evals.extradup.cli import app as extradup_app
from oa_vm.kit.clikit import plain_typer, run_main

app = plain_typer(
    "Run Windows Agent Arena tasks on a pool of workers and score them with WAA's checker.",
    name="openadapt-evals",
    no_args_is_help=True,
)
app.command("tasks", help="List the tasks a selection picks (from a folder or a pool).")(tasks)
app.command("run", help="Run tasks on one or more existing pools.")(run)
app.command("sweep", help="Create a pool, run tasks on it, and remove it afterwards.")(sweep)
app.command("mock", help="Offline quick start: a few local tasks on a local pool.")(mock)
app.command("runs", help="The table across runs: agent, rate with interval, cost, date.")(runs)
app.command("view", help="Write a run's HTML page and print its path.")(view)
app.command("compare", help="Compare two runs task by task.")(compare)
app.command("export", help="Write a run as an Inspect AI log or a trajectory dataset.")(export)
app.command(
    "audit-verifier", help="Check the checkers: replay edited reference solutions."
)(audit_verifier)
app.add_typer(extradup_app, name="extradup")
app.add_typer(study_app, name="study")


from oa_vm.kit.version import add_version_and_short_help  # noqa: E402

add_version_and_short_help(app, "openadapt-evals")


def main() -> None:
    """Console entry point."""
    run_main(app, "openadapt-evals")
