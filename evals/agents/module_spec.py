"""``module:Name`` given on a command line (an agent, a benchmark adapter): the one rule that
finds it.

The module is imported as ``python -m`` would find it: the current folder first, then the usual
path (PYTHONPATH, installed packages). The folder is added for the import only, so it does not
shadow anything imported afterwards.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any


def import_module_here(module_name: str) -> Any:
    """Import ``module_name``, looking in the current folder first.

    Raises:
        ImportError: the module cannot be found (or, for any other failure, whatever its
            import raised).
    """
    here = os.getcwd()
    added = here not in sys.path and "" not in sys.path
    if added:
        sys.path.insert(0, here)
    try:
        return importlib.import_module(module_name)
    finally:
        if added:
            sys.path.remove(here)
