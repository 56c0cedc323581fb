"""Import WAA's own ``desktop_env`` from ``../shared/waa/upstream`` (never copied here).

WAA's evaluator package imports every getter and metric module at once, and those import
document, media and browser libraries. The project's dev extras install what WAA's environment,
controllers and the getters/metrics the tests run need (``gymnasium``, ``requests``,
``requests-toolbelt``, ``tqdm``, ``psutil``, ``PIL``). The libraries in :data:`HEAVY_OPTIONAL`
are not installed (OCR models with torch, audio analysis, browsers, office formats): each is
replaced by an inert stand-in module *only when it cannot be imported*, so that importing
``desktop_env`` works. No getter or metric the tests run touches them; one that did would get a
stand-in object and fail loudly.

Usage::

    from tests.support.waa_upstream import load_desktop_env
    desktop_env = load_desktop_env()   # skips the test when upstream is absent
"""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path

import pytest

from tests.conftest import WAA_DATA
from tests.support.waa_stubs import HEAVY_OPTIONAL, STUBBED, install_stubs

WAA_CLIENT = WAA_DATA / "upstream" / "src" / "win-arena-container" / "client"
WAA_GETTERS = WAA_CLIENT / "desktop_env" / "evaluators" / "getters"

__all__ = ["HEAVY_OPTIONAL", "STUBBED", "WAA_CLIENT", "WAA_GETTERS", "install_stubs",
           "load_desktop_env", "stub_pythonpath"]


def load_desktop_env() -> types.ModuleType:
    """WAA's ``desktop_env.envs.desktop_env`` module; skips the test if upstream is absent."""
    if not (WAA_CLIENT / "desktop_env" / "envs" / "desktop_env.py").is_file():
        pytest.skip("WAA's upstream code not found at ../shared/waa/upstream")
    if str(WAA_CLIENT) not in sys.path:
        sys.path.insert(0, str(WAA_CLIENT))
    install_stubs()
    loaded = sys.modules.get("desktop_env")
    if loaded is not None and not str(getattr(loaded, "__file__", "")).startswith(
        str(WAA_CLIENT)
    ):
        for name in [n for n in sys.modules if n == "desktop_env" or n.startswith("desktop_env.")]:
            del sys.modules[name]
    return importlib.import_module("desktop_env.envs.desktop_env")


def stub_pythonpath(folder: Path) -> Path:
    """A folder whose ``sitecustomize.py`` installs the same stand-ins in a child Python.

    Put it on the child's ``PYTHONPATH``; used to run the shipped
    scoring server as a subprocess beside WAA's real ``desktop_env``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    support = Path(__file__).resolve().parent
    # Only this folder is added, not the project root: the child must not import ``infra``
    # (the shipped scoring server is tested as loose files).
    (folder / "sitecustomize.py").write_text(
        "import sys\n"
        f"sys.path.append({str(support)!r})\n"
        "import waa_stubs\n"
        "waa_stubs.install_stubs()\n",
        encoding="utf-8",
    )
    return folder
