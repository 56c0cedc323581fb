"""The ``oa-vm`` console script's entry point, kept free of heavy imports.

``oa-vm --help`` is what people type most, and rendering it through Typer costs the import of
Typer and Click (several times the interpreter's own start-up). The rendered top-level help is
therefore kept as a snapshot beside this file and printed directly; a test renders the real help
and fails when the snapshot differs, so it cannot drift. ``pool-status`` and ``pool-list`` are
answered without Typer too (:mod:`oa_vm.cli.quick`; ``OA_VM_FAST_PATH=0`` turns that off). Click
wraps help at ``min(terminal width, 80)``, so the snapshot is used only on terminals at least 80
columns wide (or when output is not a terminal); anything else goes through Typer.
"""

from __future__ import annotations

import os
import sys

HELP_SNAPSHOT = os.path.join(os.path.dirname(__file__), "help.txt")
SNAPSHOT_MIN_COLUMNS = 80


def _terminal_columns() -> int:
    """Columns of the terminal Click would wrap for (80 when not a terminal)."""
    if "COLUMNS" in os.environ:
        try:
            return int(os.environ["COLUMNS"])
        except ValueError:
            return SNAPSHOT_MIN_COLUMNS
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns
    except (OSError, ValueError):
        return SNAPSHOT_MIN_COLUMNS


def main() -> None:
    """Print the help snapshot for ``oa-vm --help``; hand everything else to the Typer app."""
    from oa_vm.kit.stdio import ensure_std_streams, pipe_safe_stdout

    ensure_std_streams()  # started with a stream closed (<&-, >&-): the null device instead
    pipe_safe_stdout()  # a reader that goes away (| head -1, | grep -q) ends no command
    if sys.argv[1:] in (["--help"], ["-h"]) and _terminal_columns() >= SNAPSHOT_MIN_COLUMNS:
        try:
            with open(HELP_SNAPSHOT, encoding="utf-8") as handle:
                sys.stdout.write(handle.read())
            return
        except OSError:
            pass  # a broken install: fall back to rendering it
    fast = os.environ.get("OA_VM_FAST_PATH", "1") != "0"  # 0: always through Typer (bench)
    if fast and sys.argv[1:2] and sys.argv[1] in ("pool-status", "pool-list"):
        from oa_vm.cli.quick import try_run

        code = try_run(sys.argv[1:])
        if code is not None:
            sys.stdout.flush()
            sys.exit(code)
    from oa_vm.cli.app import main as cli_main

    cli_main()


def render_help() -> str:
    """The top-level help as the real CLI renders it at 80 columns (what the snapshot must be)."""
    import subprocess

    env = {**os.environ, "COLUMNS": str(SNAPSHOT_MIN_COLUMNS)}
    code = "import sys; sys.argv = ['oa-vm', '--help']; from oa_vm.cli.app import main; main()"
    return subprocess.run(  # fixed argv, no shell
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
        timeout=60,
    ).stdout


def write_help_snapshot() -> None:
    """Regenerate the snapshot after changing the commands: ``python -m oa_vm.cli.entry``."""
    with open(HELP_SNAPSHOT, "w", encoding="utf-8") as handle:
        handle.write(render_help())


if __name__ == "__main__":
    write_help_snapshot()
