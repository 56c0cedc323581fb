"""The ``oa-vm`` command line: the Typer app, its commands, and the fast paths that skip Typer."""
