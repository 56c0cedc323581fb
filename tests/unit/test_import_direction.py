"""The import contracts of ``pyproject.toml`` (``[tool.importlinter]``) hold: the layers
(``evals -> oa_vm -> waa_client``, ``oa_vm -> infra``; ``waa_client`` and ``infra`` independent),
``evals`` never importing ``infra``, ``evals`` reaching ``oa_vm`` only through its face, its
errors and its kit (and only ``evals.cli`` sharing ``oa_vm.cli``), only the reference's API using
``evals.compat``, and no import cycle between sibling modules anywhere in the four packages (none
ignored)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_import_contracts_are_kept() -> None:
    linter = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run(  # fixed argv, no shell
        [str(linter), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=240,
        stdin=subprocess.DEVNULL, check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "6 kept, 0 broken" in done.stdout
    assert "ignore_imports" not in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
