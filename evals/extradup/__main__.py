"""``python -m evals.extradup kill-scan``: the same command as ``openadapt-evals extradup``."""

from evals.extradup.cli import main

main()
