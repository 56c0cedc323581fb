"""Checks of user input shared by every command, run before any state is touched.

Numbers must be finite and in range (``nan`` compares false with everything, so a plain
``x < 0`` check lets it through, and it later turns ``metadata.json`` into invalid JSON); names
become folder names and cloud tags, so they must be plain names; paths given for folders must not
name files, and paths given to read must name something there is, of the kind asked for
(:func:`read_problem`). Each check returns a problem as one sentence (for callers that gather
several) or raises :class:`~oa_vm.errors.InvalidInputError` (the ``require_*`` forms).
"""

from __future__ import annotations

import math
import os
import re
import stat
from pathlib import Path

from oa_vm.errors import InvalidInputError

# pool-status's fast path imports this module: ``typing`` only for the type checker
# (tests/integration/test_quick_cli.py fails when the fast path loads it).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Hashable, Sequence
    from typing import Literal

    PathKind = Literal["folder", "file", "file or folder"]

PLAIN_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
MAX_PRICE_PER_HOUR_USD = 10_000.0
"""The most a given price per worker-hour may be (``--price-per-hour``): the dearest cloud
machines cost a few hundred dollars an hour, and tests price a worker at $1 a second. A larger
number is a typo, and one near the float's limit turned a pool's price into infinity, printed
as ``$inf`` and written into ``--json`` as ``Infinity``, which is not JSON."""


def twice_problem(option: str, values: Sequence[str], what: str,
                  keys: Sequence[Hashable] | None = None) -> str | None:
    """The one refusal of an option that takes several values and got one of them twice
    (``--pool``, ``--region``, ``--host``): the first repeated value, named as typed; ``keys``
    says when two are the same (``values`` themselves by default). None when none repeats."""
    seen: set[Hashable] = set()
    for value, key in zip(values, keys if keys is not None else values, strict=True):
        if key in seen:
            return f"{option} {value} is given twice; give each {what} once"
        seen.add(key)
    return None


def number_problem(
    option: str,
    value: float | int | None,
    *,
    low: float | None = None,
    high: float | None = None,
    above: float | None = None,
) -> str | None:
    """Why ``value`` is unusable for ``option`` (``None`` if it is fine or absent).

    ``low``/``high`` are inclusive bounds, ``above`` an exclusive lower bound.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):  # the Python API's callers
        return f"{option} must be a number, not {value!r}"
    if not math.isfinite(float(value)):
        return f"{option} must be a finite number, not {value}"
    if above is not None and not value > above:
        return f"{option} must be more than {above:g}, not {value:g}"
    if low is not None and value < low:
        return f"{option} must be at least {low:g}, not {value:g}"
    if high is not None and value > high:
        return f"{option} must be at most {high:g}, not {value:g}"
    return None


def require_number(
    option: str,
    value: float | int | None,
    *,
    low: float | None = None,
    high: float | None = None,
    above: float | None = None,
) -> None:
    """:func:`number_problem`, raised as :class:`InvalidInputError`."""
    problem = number_problem(option, value, low=low, high=high, above=above)
    if problem:
        raise InvalidInputError(problem)


def name_problem(kind: str, name: str | None) -> str | None:
    """Why ``name`` cannot name a folder (``None`` when it is a plain name).

    A plain name is 1-100 letters, digits, ``.``, ``_`` or ``-``, starting with a letter or
    digit: never empty, never a path (``/``, ``..``), so it stays inside its parent folder.
    """
    if name is None:
        return None
    if not PLAIN_NAME_RE.match(name) or name in (".", ".."):
        return (
            f"{kind} {name!r} is not a plain name: use letters, digits, '.', '_' and '-', "
            "starting with a letter or digit"
        )
    return None


def folder_problem(option: str, path: Path | None) -> str | None:
    """A path meant as a folder must not name an existing file."""
    if path is None:
        return None
    if path.exists() and not path.is_dir():
        return f"{option} {path} is a file, not a folder; give a folder path"
    return None


def read_problem(option: str, path: Path, *, kind: PathKind, fix: str) -> str | None:
    """Why ``path``, named by ``option`` as an existing ``kind`` to read, cannot be read
    (``None`` when it can): it does not exist, it is the other kind, or the system refuses to
    open it. One sentence naming ``option``, the path, and ``fix`` (what to give instead).

    The one rule of every option that names something to read (a results folder, a task
    folder, a key, an ISO, a bundle folder, an allow-list): a typo in a path must be a refusal
    (exit 2), never an empty answer. The folder is listed or the file opened, not judged by its
    permission bits, since root reads past them and some file systems refuse even root. A pipe
    or a device is refused (a read of it may never end); what a file holds is the reader's to
    judge.
    """
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return f"{option} {path} does not exist; {fix}"
    except OSError as exc:
        return f"{option} {path} cannot be read ({exc.strerror or exc}); {fix}"
    is_dir = stat.S_ISDIR(info.st_mode)
    if kind == "folder" and not is_dir:
        return f"{option} {path} is a file, not a folder; {fix}"
    if kind == "file" and is_dir:
        return f"{option} {path} is a folder, not a file; {fix}"
    if not is_dir and not stat.S_ISREG(info.st_mode):  # a read of a pipe or device may never end
        return f"{option} {path} is not a regular file (a device or a pipe); {fix}"
    try:
        if is_dir:
            with os.scandir(path):
                pass
        else:
            os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC))
    except OSError as exc:
        return f"{option} {path} cannot be read ({exc.strerror or exc}); {fix}"
    return None


def writable_problem(option: str, path: Path, fix: str | None = None) -> str | None:
    """Why the folder ``path`` given by ``option`` could not be made or written (``None`` if it
    can be): a path under a file, under ``/proc``, on a read-only disk. Checked before anything
    is created for it, so such a path costs a line, not a pool made and removed again.
    ``fix`` says what to do (default: give the option a folder you can write)."""
    from oa_vm.kit.safe_fs import write_problem

    problem = write_problem(path)
    if problem is None:
        return None
    return f"{option}: {problem}; {fix or f'give {option} a folder you can write'}"


def module_spec_problem(option: str, spec: str) -> str | None:
    """Why ``spec`` is not ``package.module:Class`` (``None`` when it is).

    Each part must be a Python identifier: a path (``../../x:Y``), a relative import
    (``.x:Y``) or an empty part never reaches the importer, which would fail with an error
    about packages rather than about what was typed.
    """
    module_name, sep, attr = spec.partition(":")
    parts = [*module_name.split("."), *attr.split(".")]
    if sep and all(part.isidentifier() for part in parts):
        return None
    return (f"{option} {spec!r} is not package.module:Class (dotted Python names, no path); "
            "put the module on PYTHONPATH and name it by its import name")


Schema = dict[str, "tuple[type, ...] | Schema | list[Schema]"]
"""The expected shape of a JSON record: per key, the allowed types; a nested schema for an
object; ``[schema]`` for a list of objects. Keys absent from the record are not checked
(records written by older releases lack some)."""


def record_problem(data: object, schema: Schema, where: str = "") -> str | None:
    """The first field of ``data`` whose type ``schema`` does not allow, as ``field 'a.b' is
    a str, not an object`` (``None`` when every field fits).

    One rule for every record read from disk (``manifest.json``, ``metadata.json``,
    ``summary.json``, ``execution.json``): a hand-edited or damaged record is refused naming
    the field, instead of an ``AttributeError`` far from the file.
    """
    if not isinstance(data, dict):
        return f"{f'field {where!r}' if where else 'the record'} is {_kind(data)}, not an object"
    for key, allowed in schema.items():
        if key not in data:
            continue
        value, name = data[key], f"{where}.{key}" if where else key
        if isinstance(allowed, dict):
            problem = record_problem(value, allowed, name)
        elif isinstance(allowed, list):
            if not isinstance(value, list):
                return f"field {name!r} is {_kind(value)}, not a list"
            problem = next((p for i, item in enumerate(value)
                            if (p := record_problem(item, allowed[0], f"{name}[{i}]"))), None)
        elif (isinstance(value, bool) and bool not in allowed) or not isinstance(value, allowed):
            names = " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in allowed)
            problem = f"field {name!r} is {_kind(value)}, not {names}"
        else:
            problem = None
        if problem:
            return problem
    return None


_TYPE_NAMES = {dict: "an object", list: "a list", str: "text", int: "a whole number",
               float: "a number", bool: "true/false", type(None): "null"}


def _kind(value: object) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)
