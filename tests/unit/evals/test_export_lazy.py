"""The export formats' libraries are imported by the export only: every other command starts as
fast as before."""

from __future__ import annotations

import subprocess
import sys


def test_the_clis_import_neither_inspect_nor_datasets() -> None:
    code = ("import sys, evals.cli.app, oa_vm.cli.app; "
            "print(sorted(m for m in ('inspect_ai', 'datasets', 'pyarrow') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.strip() == "[]"
