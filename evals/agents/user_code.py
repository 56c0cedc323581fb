"""A user's own code named on the command line or in a config: ``package.module:name``.

One rule for every place that takes such a name (a task class, a reward function): the module
is imported as Python imports it (``PYTHONPATH``, installed packages), and any failure is one
line saying what was named and why it could not be used.
"""

from __future__ import annotations

import importlib

from evals.errors import InvalidRunInputError


def import_attribute(spec: str, what: str) -> object:
    """The object ``package.module:name`` names.

    Args:
        spec: ``package.module:name``.
        what: What the object is for, in the message (``--reward``, ``_target_``...).

    Raises:
        InvalidRunInputError: not of that form, the module does not import, no such name.
    """
    module_name, sep, name = spec.strip().partition(":")
    if not sep or not module_name or not name.isidentifier():
        raise InvalidRunInputError(f"{what} {spec!r}: write it as package.module:name")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # the user's module: any failure to import is theirs
        raise InvalidRunInputError(f"{what} {spec!r}: cannot import {module_name!r}: "
                                   f"{type(exc).__name__}: {exc}") from exc
    if not hasattr(module, name):
        raise InvalidRunInputError(f"{what} {spec!r}: {module_name} has no {name!r}")
    return getattr(module, name)
