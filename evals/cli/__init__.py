"""The ``openadapt-evals`` and ``openadapt-eval-flow`` command lines."""
