"""The worker image's recipe gives the scoring server WAA's Python 3.9 and proves it at build time.

No Docker and no Python 3.9 with WAA's packages here: the test reads the recipe's steps and runs
its build-time import check, the same code, with this machine's Python against WAA's upstream
client (``../shared/waa/upstream``), the heavy libraries WAA's metrics import replaced by inert
modules only where they are not installed (``tests/support/waa_stubs.py``).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.waa_upstream import WAA_CLIENT, stub_pythonpath

ROOT = Path(__file__).resolve().parents[3]
DOCKERFILE = ROOT / "infra" / "worker" / "waa-image" / "Dockerfile"
WAA_PYTHON = "/usr/local/bin/python3.9"


def _steps() -> list[str]:
    """The recipe's instructions, continuation lines joined, comments dropped."""
    steps: list[str] = []
    buffer = ""
    for line in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        if not buffer and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            buffer += line.rstrip()[:-1] + " "
            continue
        steps.append((buffer + line).strip())
        buffer = ""
    return steps


def _import_check() -> tuple[str, str]:
    """The RUN step that imports WAA's evaluators: (its working folder, its Python code)."""
    (step,) = [s for s in _steps() if s.startswith("RUN ") and "desktop_env.evaluators" in s]
    words = shlex.split(step[len("RUN "):])
    assert words[:3] == ["cd", "/client", "&&"], step
    assert words[3] == WAA_PYTHON and words[4] == "-c", step
    return words[1], words[5]


def test_the_recipe_copies_waas_python_and_its_packages() -> None:
    steps = _steps()
    assert "COPY --from=waa /usr/local/bin/python3.9 /usr/local/bin/" in steps
    assert "COPY --from=waa /usr/local/lib/python3.9 /usr/local/lib/python3.9" in steps
    assert "COPY --from=waa /usr/local/lib/libpython3.9*.so* /usr/local/lib/" in steps
    # Never a python3 of its own in /usr/local/bin: it would shadow dockur's python3.
    assert not [s for s in steps if re.search(r"/usr/local/bin/python3?\*?\s", s + " ")
                and "python3.9" not in s]
    assert not [s for s in steps if "/models" in s]
    # The interpreter finds its shared library: ldconfig runs after the copy.
    assert steps.index(next(s for s in steps if "ldconfig" in s)) > steps.index(
        "COPY --from=waa /usr/local/lib/libpython3.9*.so* /usr/local/lib/")


def test_the_recipe_imports_waas_getters_and_metrics_at_build_time() -> None:
    folder, code = _import_check()
    assert folder == "/client"
    assert "desktop_env.evaluators.getters" in code and "desktop_env.evaluators.metrics" in code
    steps = _steps()
    # After WAA's files and its Python are in place, so it checks what the scorer will run.
    check = next(i for i, s in enumerate(steps) if "desktop_env.evaluators" in s)
    assert check > steps.index("COPY --from=waa /client /client")
    assert check > steps.index("COPY --from=waa /usr/local/lib/python3.9 /usr/local/lib/python3.9")


def test_the_same_import_check_passes_against_waas_upstream(tmp_path: Path) -> None:
    if not (WAA_CLIENT / "desktop_env" / "evaluators" / "getters").is_dir():
        pytest.skip("WAA's upstream code not found at ../shared/waa/upstream")
    _, code = _import_check()
    done = subprocess.run([sys.executable, "-c", code], cwd=WAA_CLIENT, capture_output=True,
                          text=True, timeout=300, check=False,
                          env={"PATH": "/usr/bin:/bin",
                               "PYTHONPATH": str(stub_pythonpath(tmp_path / "stubs"))})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("WAA evaluators import on 3.")


def test_the_import_check_fails_when_a_getter_cannot_import(tmp_path: Path) -> None:
    """The check is not a formality: a client whose getters do not import fails it."""
    if not (WAA_CLIENT / "desktop_env").is_dir():
        pytest.skip("WAA's upstream code not found at ../shared/waa/upstream")
    import shutil

    client = tmp_path / "client"
    shutil.copytree(WAA_CLIENT / "desktop_env", client / "desktop_env")
    getters = client / "desktop_env" / "evaluators" / "getters" / "__init__.py"
    getters.write_text("import a_package_waa_never_installed\n" + getters.read_text())
    _, code = _import_check()
    done = subprocess.run([sys.executable, "-c", code], cwd=client, capture_output=True,
                          text=True, timeout=300, check=False,
                          env={"PATH": "/usr/bin:/bin",
                               "PYTHONPATH": str(stub_pythonpath(tmp_path / "stubs"))})
    assert done.returncode != 0
    assert "a_package_waa_never_installed" in done.stderr
