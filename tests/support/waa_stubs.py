"""Inert stand-ins for the libraries WAA's evaluators import that the dev install lacks.

Standard library only, so a child Python can load it from its folder alone (see
:func:`tests.support.waa_upstream.stub_pythonpath`). A library is stubbed *only when it
cannot be imported*: when it is installed, the real one is used.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any

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

    # Nothing is an instance of an uninstalled library's class. Libraries that look for an
    # optional one in sys.modules (datasets: ``"pdfplumber" in sys.modules and isinstance(obj,
    # pdfplumber.pdf.PDF)``) meet these stubs in any later test of the same process.
    def __instancecheck__(self, instance: Any) -> bool:
        return False

    def __subclasscheck__(self, subclass: Any) -> bool:
        return False

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
