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
import importlib.abc
import importlib.machinery
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import WAA_DATA

WAA_CLIENT = WAA_DATA / "upstream" / "src" / "win-arena-container" / "client"
WAA_GETTERS = WAA_CLIENT / "desktop_env" / "evaluators" / "getters"

HEAVY_OPTIONAL = frozenset({
    "LnkParse3", "PyPDF2", "acoustid", "borb", "bs4", "cv2", "docx", "easyocr", "fastdtw",
    "fitz", "formulas", "imagehash", "librosa", "lxml", "mutagen", "odf", "openpyxl", "pandas",
    "pdfplumber", "playwright", "pptx", "py7zr", "pydrive", "pypdf", "rapidfuzz", "scipy",
    "skimage", "xmltodict",
})
"""Top-level modules WAA's evaluators import that the dev install does not provide."""

STUBBED: set[str] = set()
"""The modules of :data:`HEAVY_OPTIONAL` actually stubbed in this process (for reports)."""


class _Inert:
    """Stands for anything of a stubbed library: attributes, calls and subclassing work at
    import time; using the result for real is what a test must never do."""

    def __init__(self, name: str = "stub") -> None:
        self._name = name

    def __getattr__(self, name: str) -> _Inert:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Inert(f"{self._name}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> _Inert:
        return _Inert(f"{self._name}()")

    def __getitem__(self, key: Any) -> _Inert:
        return _Inert(f"{self._name}[]")

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        return (object,)

    def __repr__(self) -> str:
        return f"<stand-in for uninstalled {self._name}>"


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Inert(f"{self.__name__}.{name}")


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Provides a stand-in for a :data:`HEAVY_OPTIONAL` module no other finder can import."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        top = fullname.split(".", 1)[0]
        if top not in HEAVY_OPTIONAL:
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            find = getattr(finder, "find_spec", None)
            if find is not None and find(fullname, path, target) is not None:
                return None  # the real library is installed: use it
        STUBBED.add(top)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: Any) -> types.ModuleType:
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


_FINDER = _StubFinder()


def install_stubs() -> None:
    """Put the stand-in finder last on ``sys.meta_path`` (idempotent)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)


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

    Put it (and the project root) on the child's ``PYTHONPATH``; used to run the shipped
    scoring server as a subprocess beside WAA's real ``desktop_env``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    root = Path(__file__).resolve().parents[2]
    (folder / "sitecustomize.py").write_text(
        "import sys\n"
        f"sys.path.append({str(root)!r})\n"
        "from tests.support.waa_upstream import install_stubs\n"
        "install_stubs()\n",
        encoding="utf-8",
    )
    return folder
