"""``python -m evals``: the ``openadapt-evals`` command (``oa-vm smoke`` runs its task so)."""

from evals.cli.app import main

main()
