"""Start-up laziness in one place: the heavy third-party modules, imported on first use.

``oa-vm --help``, ``pool-status`` and ``pool-list`` start in tens of milliseconds, and
``import oa_vm``/``import evals`` must stay cheap; Pulumi, Typer, Rich, Pillow or a model SDK
each cost more. A module imports a stand-in from here at its top (``from oa_vm.kit.lazy import
requests``); the module is imported at the first attribute read, looked up in ``sys.modules``
at each read as a function-level ``import`` would be (a test's fake module is seen). The type
checker sees the real modules. :func:`load` imports one now, for a caller that words a missing
extra itself. ``tests/unit/test_lazy_imports.py`` fails on a third-party import inside a
function elsewhere in ``oa_vm`` and ``evals`` (``waa_client`` and ``infra``, below ``oa_vm``,
keep their few).
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing is not loaded at run time (start-up time)
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any, TypeVar

    import anthropic
    import ijson
    import numpy
    import openai
    import PIL as pil
    import psutil
    import pulumi.automation as pulumi_automation
    import rapidfuzz.fuzz as rapidfuzz_fuzz
    import requests
    import semver
    import typer
    from cryptography.hazmat.primitives import serialization as crypto_serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519 as crypto_ed25519
    from inspect_ai import log as inspect_ai_log
    from inspect_ai import model as inspect_ai_model
    from inspect_ai import scorer as inspect_ai_scorer
    from inspect_ai import tool as inspect_ai_tool
    from PIL import Image as pil_image
    from PIL import ImageDraw as pil_draw
    from rich import console as rich_console
    from rich import live as rich_live
    from rich import table as rich_table
    from rich import text as rich_text
    from scipy import special as scipy_special

    M = TypeVar("M", bound=ModuleType)


class LazyModule:
    """Stands for the module ``name`` until an attribute is read from it."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self.name), attr)


def load(module: M) -> M:
    """The real module behind a stand-in, imported now (``ImportError`` if it is missing); a
    real module is returned as it is."""
    if isinstance(module, LazyModule):
        real: M = importlib.import_module(module.name)
        return real
    return module


if not TYPE_CHECKING:
    anthropic = LazyModule("anthropic")
    crypto_ed25519 = LazyModule("cryptography.hazmat.primitives.asymmetric.ed25519")
    crypto_serialization = LazyModule("cryptography.hazmat.primitives.serialization")
    ijson = LazyModule("ijson")
    inspect_ai_log = LazyModule("inspect_ai.log")
    inspect_ai_model = LazyModule("inspect_ai.model")
    inspect_ai_scorer = LazyModule("inspect_ai.scorer")
    inspect_ai_tool = LazyModule("inspect_ai.tool")
    numpy = LazyModule("numpy")
    openai = LazyModule("openai")
    pil = LazyModule("PIL")
    pil_draw = LazyModule("PIL.ImageDraw")
    pil_image = LazyModule("PIL.Image")
    psutil = LazyModule("psutil")
    pulumi_automation = LazyModule("pulumi.automation")
    rapidfuzz_fuzz = LazyModule("rapidfuzz.fuzz")
    requests = LazyModule("requests")
    rich_console = LazyModule("rich.console")
    rich_live = LazyModule("rich.live")
    rich_table = LazyModule("rich.table")
    rich_text = LazyModule("rich.text")
    scipy_special = LazyModule("scipy.special")
    semver = LazyModule("semver")
    typer = LazyModule("typer")

__all__ = ["LazyModule", "anthropic", "crypto_ed25519", "crypto_serialization", "ijson",
           "inspect_ai_log", "inspect_ai_model", "inspect_ai_scorer", "inspect_ai_tool", "load",
           "numpy", "openai", "pil", "pil_draw", "pil_image", "psutil", "pulumi_automation",
           "rapidfuzz_fuzz", "requests", "rich_console", "rich_live", "rich_table", "rich_text",
           "scipy_special", "semver", "typer"]
