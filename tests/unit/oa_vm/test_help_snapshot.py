"""The ``oa-vm --help`` snapshot printed by the fast entry point equals the real help."""

from __future__ import annotations

import os
import subprocess
import sys

from oa_vm.cli import entry


def test_snapshot_matches_rendered_help() -> None:
    with open(entry.HELP_SNAPSHOT, encoding="utf-8") as handle:
        snapshot = handle.read()
    assert snapshot == entry.render_help(), (
        "oa_vm/cli/help.txt is stale: regenerate it with 'python -m oa_vm.cli.entry'"
    )


def test_fast_path_prints_snapshot_without_importing_typer() -> None:
    code = (
        "import sys; sys.argv = ['oa-vm', '--help']\n"
        "from oa_vm.cli.entry import main; main()\n"
        "print('TYPER' if 'typer' in sys.modules else 'LIGHT', file=sys.stderr)\n"
    )
    env = {**os.environ, "COLUMNS": "120"}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60,
        check=True,
    )
    assert proc.stderr.strip() == "LIGHT"
    assert proc.stdout.startswith("Usage: oa-vm")


def test_narrow_terminal_goes_through_typer() -> None:
    code = (
        "import sys; sys.argv = ['oa-vm', '--help']\n"
        "from oa_vm.cli.entry import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('TYPER' if 'typer' in sys.modules else 'LIGHT', file=sys.stderr)\n"
    )
    env = {**os.environ, "COLUMNS": "60"}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60,
        check=True,
    )
    assert proc.stderr.strip().splitlines()[-1] == "TYPER"
