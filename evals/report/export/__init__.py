"""Runs in other tools' formats: Inspect AI eval logs and trajectory datasets.

Each format's library is an optional extra imported inside the function that writes it
(``oa-vm[inspect]``, ``oa-vm[datasets]``), so ``openadapt-evals --help`` and every other command
start as fast as before; a missing extra fails in one line with the command that installs it.
"""
