"""Loading OpenApps-style task configs: ``openapps:FILE.yaml[#NAME]`` selections, refusals.

A config is a YAML mapping of task names to entries; an entry's ``_target_`` names its class
and its other keys are the class's fields::

    finish_the_report:
      _target_: open_apps.tasks.tasks.MarkToDoDoneTask
      goal: Tick off the item 'Send the report' in the to-do app.
      todo_name: "Send the report"

``_target_`` is one of our built-in classes by name (:data:`~evals.tasks.openapps.builtin.BUILTIN`),
the same written as OpenApps writes it (``open_apps.tasks.tasks.<Class>``: our class of that
name, so an OpenApps file loads unchanged where its apps exist here), or a user's
``package.module:Class`` (a dataclass subclassing :class:`~evals.tasks.openapps.classes.Task`).
Nested entries (``action_task``, ``subtasks``) are built the same way. Every entry is checked
against its class (a missing ``_target_``, an unknown class, an unknown or missing field, a
value of the wrong type) and refused in one line naming the file and the entry
(:class:`~evals.errors.InvalidRunInputError`), before any pool is touched. A ``defaults:`` list
composes sibling files as Hydra does (:func:`compose`). A file larger than
:data:`MAX_BYTES`, or one whose aliases expand to more than :data:`MAX_NODES` nodes, is refused
unread.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from evals.agents.user_code import import_attribute
from evals.errors import InvalidRunInputError
from evals.tasks import OPENAPPS_PREFIX as PREFIX
from evals.tasks.openapps.builtin import BUILTIN, NOT_SIMULATED
from evals.tasks.openapps.classes import Task
from oa_vm.errors import listing
from waa_client import inputs
from waa_client.catalog import check_known
from waa_client.inputs import kind_of

DOMAIN = "openapps"
OPENAPPS_MODULE = "open_apps.tasks.tasks."
MAX_BYTES = 1_000_000
MAX_NODES = 50_000
"""Nodes a config may expand to, aliases followed (a few hundred tasks use a few thousand):
past it the file is an alias bomb, not a task list."""
DEFAULTS_KEY, SELF = "defaults", "_self_"
"""Hydra's composition list and the name of the file's own entries in it."""
IGNORED_KEYS = ("_target_", "_convert_", "_recursive_", "_partial_")
"""Hydra's instantiation keys: ``_target_`` names the class, the others change nothing here."""
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class Entry:
    """One task of a config, built and checked."""

    name: str
    file: Path
    raw: dict[str, Any]
    task: Task

    def task_json(self) -> dict[str, Any]:
        """The task as the run's queue and records hold it (the entry, not the object)."""
        data: dict[str, Any] = {
            "id": self.name, "instruction": self.task.goal, "domain": DOMAIN,
            "openapps": {"file": str(self.file), "name": self.name, "entry": self.raw,
                         "class": type(self.task).__name__},
        }
        solution = self.task.reference_solution()
        if solution is not None:
            data["reference_solution"] = solution
        return data


def parse_selection(selection: str) -> tuple[Path, str | None]:
    """``openapps:FILE.yaml[#NAME]`` -> ``(FILE, NAME or None)``.

    Raises:
        InvalidRunInputError: no file named.
    """
    body = selection.strip()[len(PREFIX):]
    path_text, sep, name = body.partition("#")
    if not path_text:
        raise InvalidRunInputError(f"--tasks {selection!r}: give a YAML file after {PREFIX} "
                                   "(task entries with a _target_ each)")
    if sep and not name:
        raise InvalidRunInputError(f"--tasks {selection!r}: give a task name after '#'")
    return Path(path_text).expanduser(), name or None


class _TextDates(yaml.SafeLoader):
    """YAML's safe loader, except that a date stays the text it was written as: a task's
    ``date: 2026-04-01`` is the string the apps hold, and the entry stays JSON for the queue."""


_TextDates.yaml_implicit_resolvers = {
    first: [(tag, rule) for tag, rule in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def read_config(path: Path) -> dict[str, Any]:
    """The file's top-level mapping as written (``defaults:`` not followed; see
    :func:`compose`).

    Raises:
        InvalidRunInputError: missing, too large, not YAML, an alias bomb, not a mapping.
    """
    from oa_vm.kit.validate import read_problem

    problem = read_problem("openapps config", path, kind="file",
                           fix="give a YAML file of task entries")
    if problem is not None:
        raise InvalidRunInputError(problem)
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise InvalidRunInputError(f"openapps config {path}: {size} bytes, more than the "
                                   f"{MAX_BYTES} a task config may have; split it")
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        node = yaml.compose(text, Loader=_TextDates)
        _check_expansion(node, path)
        data = yaml.load(text, Loader=_TextDates)  # a SafeLoader: builds plain data only
    except RecursionError:  # composing is recursive: deeper than Python's limit
        raise InvalidRunInputError(f"openapps config {path} is nested deeper than "
                                   f"{inputs.MAX_DEPTH} levels; flatten it") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InvalidRunInputError(f"openapps config {path}: not valid YAML{line}: "
                                   f"{problem}") from exc
    if data is None:
        raise InvalidRunInputError(f"openapps config {path} is empty: it needs task entries "
                                   "(name: {_target_: ..., goal: ...})")
    if not isinstance(data, dict):
        raise InvalidRunInputError(f"openapps config {path}: the top level is a "
                                   f"{type(data).__name__}, not a mapping of task names to "
                                   "entries")
    return data


def compose(path: Path, _within: tuple[Path, ...] = ()) -> dict[str, tuple[Any, Path]]:
    """Every task entry a config holds, its ``defaults:`` list followed, each with the file
    it came from.

    ``defaults:`` (Hydra's composition list) names sibling files, without ``.yaml``, and
    ``_self_``, the place of the file's own entries (last when not listed). The lists are
    merged in that order, a later entry replacing an earlier one of the same name, and a
    listed file's own ``defaults:`` are followed the same way.

    Raises:
        InvalidRunInputError: see :func:`read_config`; a ``defaults:`` that is not a list of
            names, a listed file that does not exist, a file that lists itself (a cycle).
    """
    data = read_config(path)
    resolved = path.resolve()
    chain = (*_within, resolved)
    names = data.pop(DEFAULTS_KEY, [SELF])
    if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
        raise InvalidRunInputError(f"openapps config {path}: {DEFAULTS_KEY} must be a list of "
                                   f"sibling file names (and {SELF}), not {_shown(names)}")
    if SELF not in names:
        names = [*names, SELF]
    merged: dict[str, tuple[Any, Path]] = {}
    for name in names:
        if name == SELF:
            merged.update({str(k): (v, path) for k, v in data.items()})
            continue
        listed = path.parent / (name if name.endswith((".yaml", ".yml")) else f"{name}.yaml")
        if not listed.is_file():
            raise InvalidRunInputError(f"openapps config {path}: {DEFAULTS_KEY} names "
                                       f"{name!r}, but {listed} does not exist")
        if listed.resolve() in chain:
            cycle = " -> ".join(p.name for p in (*chain, listed.resolve()))
            raise InvalidRunInputError(f"openapps config {path}: {DEFAULTS_KEY} makes a cycle "
                                       f"({cycle}); a file cannot include itself")
        merged.update(compose(listed, chain))
    return merged


def _check_expansion(node: yaml.Node | None, path: Path) -> None:
    """Count the nodes the document expands to (aliases followed) and their depth, and stop
    past either limit without building it: an alias bomb is refused before it costs memory or
    time, and a deep one before building it recurses past Python's limit (the depth rule is
    every document's, :data:`waa_client.inputs.MAX_DEPTH`)."""
    count = 0
    pending: list[tuple[yaml.Node, int]] = [] if node is None else [(node, 0)]
    while pending:
        current, depth = pending.pop()
        count += 1
        if count > MAX_NODES:
            raise InvalidRunInputError(
                f"openapps config {path}: it expands to more than {MAX_NODES} YAML nodes "
                "(aliases followed); a task config this large is refused")
        if depth > inputs.MAX_DEPTH:
            raise InvalidRunInputError(f"openapps config {path} is nested deeper than "
                                       f"{inputs.MAX_DEPTH} levels; flatten it")
        if isinstance(current, yaml.SequenceNode):
            pending.extend((child, depth + 1) for child in current.value)
        elif isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                pending.extend(((key, depth + 1), (value, depth + 1)))


def resolve_target(target: object, where: str) -> type[Task]:
    """The class an entry's ``_target_`` names.

    Raises:
        InvalidRunInputError: not a string, an unknown built-in, a module that does not import,
            a class that is not a Task dataclass.
    """
    known = ", ".join(sorted(BUILTIN))
    if not isinstance(target, str) or not target.strip():
        raise InvalidRunInputError(f"{where}: _target_ must name a task class ({known}, or "
                                   "package.module:Class)")
    name = target.strip().removeprefix(OPENAPPS_MODULE)
    if ":" not in name:
        cls = BUILTIN.get(name)
        if cls is None and name in NOT_SIMULATED:
            raise InvalidRunInputError(f"{where}: {target!r} scores {NOT_SIMULATED[name]}, "
                                       "which the simulated desktop does not have; leave the "
                                       "entry out (or select another entry with #NAME)")
        if cls is None:
            raise InvalidRunInputError(f"{where}: unknown task class {target!r}; built in: "
                                       f"{known} (or your own as package.module:Class)")
        return cls
    found = import_attribute(name, f"{where}: _target_")
    if not (isinstance(found, type) and issubclass(found, Task)
            and dataclasses.is_dataclass(found)):
        raise InvalidRunInputError(f"{where}: {target!r} is not a task class (a dataclass "
                                   "subclassing evals.tasks.openapps.Task)")
    return found


def build(entry: object, where: str) -> tuple[Task, dict[str, Any]]:
    """An entry's task object, its fields checked against its class, and the entry as plain
    data.

    Raises:
        InvalidRunInputError: see the module docstring.
    """
    if not isinstance(entry, dict):
        raise InvalidRunInputError(f"{where}: an entry is a mapping with a _target_, not "
                                   f"{kind_of(entry)}")
    if "_target_" not in entry:
        raise InvalidRunInputError(f"{where}: no _target_ (the task class, e.g. "
                                   "open_apps.tasks.tasks.MarkToDoDoneTask)")
    cls = resolve_target(entry["_target_"], where)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    hints = typing.get_type_hints(cls)
    given = {str(k): v for k, v in entry.items() if k not in IGNORED_KEYS}
    unknown = sorted(set(given) - set(fields))
    if unknown:
        raise InvalidRunInputError(f"{where}: {cls.__name__} has no field {unknown[0]!r} "
                                   f"(its fields: {', '.join(fields)})")
    missing = [n for n, f in fields.items() if n not in given
               and f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING]
    if missing:
        raise InvalidRunInputError(f"{where}: {cls.__name__} needs {missing[0]!r}")
    values: dict[str, Any] = {}
    for name, value in given.items():
        hint = hints[name]
        if _holds_tasks(hint):
            if isinstance(value, list):
                values[name] = [build(v, f"{where}.{name}[{i}]")[0] for i, v in enumerate(value)]
            elif value is None or isinstance(value, dict):
                values[name] = None if value is None else build(value, f"{where}.{name}")[0]
            else:
                raise InvalidRunInputError(f"{where}: {name} must be a task entry, not "
                                           f"{kind_of(value)}")
            continue
        if not _conforms(value, hint):
            raise InvalidRunInputError(f"{where}: {name} must be {_describe(hint)}, not "
                                       f"{kind_of(value)} {_shown(value)}")
        values[name] = value
    try:
        task = cls(**values)
    except Exception as exc:  # a user's class may refuse its values in its own way
        raise InvalidRunInputError(f"{where}: {cls.__name__} refused its fields: "
                                   f"{type(exc).__name__}: {exc}") from exc
    problem = _problem(task)
    if problem:
        raise InvalidRunInputError(f"{where}: {problem}")
    return task, {str(k): v for k, v in entry.items()}


def load_selection(selection: str) -> list[Entry]:
    """Every entry an ``openapps:`` selection names (``defaults:`` followed), built and
    checked.

    Raises:
        InvalidRunInputError: see :func:`compose`, :func:`build`; a name that cannot be a
            task ID.
        waa_client.errors.UnknownTaskError: ``#NAME`` not in the file.
    """
    path, only = parse_selection(selection)
    config = compose(path)
    if only is not None:
        check_known([only], config, source=str(path), hint=f"it has: {listing(list(config))}")
    entries = []
    places: dict[Path, int] = {}  # each file's entries counted, to name one by its place
    for name, (raw, source) in config.items():
        number = places[source] = places.get(source, 0) + 1
        if only is not None and name != only:
            continue
        if not isinstance(raw, dict):  # not a task at all (the wrong file?): the entry is
            # named by its place, its text not shown (``/etc/shadow`` reads as YAML)
            raise InvalidRunInputError(f"openapps config {source}: entry {number} holds "
                                       f"{kind_of(raw)}, not a task (a mapping with a "
                                       "_target_)")
        where = f"openapps config {source}, task {name!r}"
        if not _SAFE_NAME.match(name):
            raise InvalidRunInputError(f"{where}: the name cannot be a task ID (letters, "
                                       "digits, '.', '_', '-')")
        task, plain = build(raw, where)
        if not task.goal.strip():
            raise InvalidRunInputError(f"{where}: no goal (what the agent is asked)")
        entries.append(Entry(name, source.resolve(), plain, task))
    return entries


def _problem(task: Task) -> str | None:
    check = getattr(task, "problem", None)  # a user's class may shadow it with a field
    return check() if callable(check) else None


def _holds_tasks(hint: Any) -> bool:
    args = typing.get_args(hint)
    return (isinstance(hint, type) and issubclass(hint, Task)) or any(
        _holds_tasks(a) for a in args)


_NONE = type(None)


def _conforms(value: Any, hint: Any) -> bool:
    """Whether a YAML value fits a field's annotation (the few types YAML yields: str, bool,
    int, float, lists, mappings, None, unions of them). Written here rather than a validation
    library: these types are all a task field has."""
    if hint is Any or hint is object:
        return True
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_conforms(value, a) for a in typing.get_args(hint))
    if hint is _NONE:
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if origin is list or hint is list:
        args = typing.get_args(hint)
        return isinstance(value, list) and all(_conforms(v, args[0]) for v in value
                                               ) if args else isinstance(value, list)
    if origin is dict or hint is dict:
        args = typing.get_args(hint)
        return isinstance(value, dict) and (not args or all(
            _conforms(k, args[0]) and _conforms(v, args[1]) for k, v in value.items()))
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True


def _describe(hint: Any) -> str:
    if hint is str:
        return "a string"
    if hint is bool:
        return "true or false"
    if hint in (int, float):
        return "a number"
    text = str(hint).replace("typing.", "")
    return text if not isinstance(hint, type) else hint.__name__


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
