"""Loading Cua-Bench task modules: ``cua-bench:PATH[#N]`` selections, their variants, refusals.

``PATH`` is a task directory (one with ``main.py``), a ``main.py`` itself, or a dataset directory
(a folder of task directories, taken in name order). Each module's ``tasks_config`` for the
split gives its variants, indexed from zero; a variant's task ID is ``<module-dir>/<index>``, and
``#N`` keeps variant ``N`` only. A module that does not load, has no ``tasks_config`` for the
split, or returns anything but a list of tasks is refused in one line naming the file and what
is wrong (:class:`~evals.errors.InvalidRunInputError`), before any pool is touched.

Every load imports the module afresh under a name of its own, so two attempts running at once
(two workers) never share a module's globals (the ``pid`` a minimal module keeps in one).
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.util
import itertools
import re
import sys
import threading
import traceback
import types
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.errors import InvalidRunInputError
from evals.tasks import CUA_PREFIX as PREFIX
from evals.tasks.cua_bench.namespace import DEFAULT_SPLIT, install
from waa_client import inputs

MODULE_FILE = "main.py"
DOMAIN = "cua-bench"
BROWSER_OPERATIONS = ("launch_window", "execute_javascript", "move_window", "close_all_windows",
                      "get_element_rect", "click_element", "right_click_element")
"""The operations of the session (:class:`evals.tasks.cua_bench.session.WorkerSession`) that
go through the worker's browser (``/browser/...``), which only a local pool's workers have: a
module calling one runs on a local pool only (:func:`evals.tasks.kinds.check_runs_on`). Every
method of the session that reaches ``_browser`` or ``_call_browser`` is one (a unit test holds
the two together). Kept here, not with the session, so that reading a module's operations does
not import the session (the WAA client, ``asyncio``)."""
SHELL_OPERATIONS = ("run_command", "shell_command", "read_file", "write_file", "write_bytes",
                    "read_bytes", "file_exists", "directory_exists", "list_dir")
# Cua-Bench's registry of native apps (session.apps.kicad.install(), install_app("godot")),
# which installs and drives real applications on its own VMs: no worker of ours has it.
APP_OPERATIONS = ("apps", "install_app", "launch_app")
# The shell a module's os_type asks for; a pool's workers name the one they have.
SHELL_OF_OS = {"windows": "windows", "win11": "windows", "win10": "windows", "linux": "posix",
               "macos": "posix", "android": "posix", "ios": "posix"}
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_import_lock = threading.Lock()
_counter = itertools.count(1)


@dataclass(frozen=True)
class Variant:
    """One selectable variant of one module."""

    task_id: str
    module_file: Path
    index: int
    split: str
    description: str
    os_type: str
    has_solve: bool
    uses_shell: bool
    browser_operations: tuple[str, ...]
    """The browser operations its module calls (:func:`operations_called`), first seen first."""
    app_operations: tuple[str, ...] = ()
    """The native-app operations its module calls (:data:`APP_OPERATIONS`), which no pool runs."""

    @property
    def domain(self) -> str:
        """The variant's domain in summaries: its module's folder name."""
        return self.task_id.split("/")[0]

    def task_json(self) -> dict[str, Any]:
        """The task as the run's queue and records hold it (no module code: the file path)."""
        return {
            "id": self.task_id,
            "instruction": self.description,
            "domain": self.domain,
            "cua_bench": {
                "module": str(self.module_file), "index": self.index, "split": self.split,
                "os_type": self.os_type, "has_solve": self.has_solve,
                "uses_shell": self.uses_shell,
            },
        }


def _refuse(path: Path, what: str) -> InvalidRunInputError:
    return InvalidRunInputError(f"cua-bench module {path}: {what}")


def parse_selection(selection: str) -> tuple[Path, int | None]:
    """``cua-bench:PATH[#N]`` -> ``(PATH, N or None)``.

    Raises:
        InvalidRunInputError: no path, or ``#N`` is not a variant number.
    """
    body = selection.strip()[len(PREFIX):]
    path_text, sep, number = body.partition("#")
    if not path_text:
        raise InvalidRunInputError(f"--tasks {selection!r}: give a path after {PREFIX} "
                                   "(a task directory with main.py, or a dataset directory)")
    if sep and not number.isdigit():
        raise InvalidRunInputError(f"--tasks {selection!r}: #{number} is not a variant "
                                   "number (#0, #1, ...)")
    return Path(path_text).expanduser(), int(number) if sep else None


def module_files(path: Path) -> list[Path]:
    """The ``main.py`` of each task directory ``path`` names, in name order.

    Raises:
        InvalidRunInputError: nothing there, or no task directory in it.
    """
    from oa_vm.kit.validate import read_problem

    problem = read_problem("cua-bench path", path, kind="file or folder",
                           fix="give a task module (main.py) or a folder of task directories")
    if problem is not None:
        raise InvalidRunInputError(problem)
    if path.is_file():
        return [path.resolve()]
    if (path / MODULE_FILE).is_file():
        return [(path / MODULE_FILE).resolve()]
    found = sorted(p / MODULE_FILE for p in path.iterdir() if (p / MODULE_FILE).is_file())
    if not found:
        raise InvalidRunInputError(f"cua-bench path {path}: no {MODULE_FILE} in it nor in any "
                                   "folder of it (a task directory holds a main.py)")
    return [p.resolve() for p in found]


def load_module(path: Path) -> types.ModuleType:
    """Import a module file afresh (a name of its own; ``cua_bench`` provided when missing).

    Raises:
        InvalidRunInputError: the file cannot be read or imported (the error's last line).
    """
    install()  # handed to the module's `import cua_bench`; never written anywhere as a package
    name = f"_oa_cua_task_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise _refuse(path, "cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    folder = str(path.parent)
    with _import_lock:  # sys.path is the process's: its sibling files are found while it loads
        sys.path.insert(0, folder)
        try:
            spec.loader.exec_module(module)
        except SyntaxError as exc:
            raise _refuse(path, f"syntax error at line {exc.lineno}: {exc.msg}") from exc
        except Exception as exc:
            raise _refuse(path, f"importing it raised {_describe(exc)}") from exc
        finally:
            with contextlib.suppress(ValueError):
                sys.path.remove(folder)
    return module


def lifecycle(module: types.ModuleType, split: str) -> dict[str, Callable[..., Any]]:
    """The module's decorated functions for ``split``, by kind (``tasks_config``...)."""
    found: dict[str, Callable[..., Any]] = {}
    for value in vars(module).values():
        kind = getattr(value, "_td_type", None)
        if callable(value) and isinstance(kind, str) and getattr(
                value, "_td_split", DEFAULT_SPLIT) == split:
            found.setdefault(kind, value)
    return found


def variants_of(path: Path, split: str = DEFAULT_SPLIT,
                module: types.ModuleType | None = None) -> list[Any]:
    """The tasks ``tasks_config`` returns for ``split`` (the module's own objects), from
    ``module`` when it is loaded already.

    Raises:
        InvalidRunInputError: no ``tasks_config`` for the split, it raised, or it returned
            something other than a list of tasks.
    """
    module = module if module is not None else load_module(path)
    functions = lifecycle(module, split)
    config = functions.get("tasks_config")
    if config is None:
        raise _refuse(path, f"no @cb.tasks_config for the split {split!r}")
    try:
        tasks = config()
    except Exception as exc:
        raise _refuse(path, f"tasks_config raised {_describe(exc)}") from exc
    if not isinstance(tasks, list):
        raise _refuse(path, f"tasks_config returned {type(tasks).__name__}, not a list of "
                      "cb.Task")
    for i, task in enumerate(tasks):
        if not isinstance(getattr(task, "description", None), str):
            raise _refuse(path, f"tasks_config's item {i} is {type(task).__name__}, not a "
                          "cb.Task (with a description)")
    if "evaluate_task" not in functions:
        raise _refuse(path, f"no @cb.evaluate_task for the split {split!r}: nothing would "
                      "score it")
    return tasks


def load_selection(selection: str, split: str = DEFAULT_SPLIT) -> list[Variant]:
    """Every variant a ``cua-bench:`` selection names.

    Raises:
        InvalidRunInputError: see :func:`parse_selection`, :func:`module_files`,
            :func:`variants_of`; a module folder whose name cannot be a task ID; ``#N`` past
            the last variant.
    """
    path, only = parse_selection(selection)
    files = module_files(path)
    if only is not None and len(files) > 1:
        raise InvalidRunInputError(f"--tasks {selection!r}: #N picks a variant of one task "
                                   "directory, not of a dataset")
    variants: list[Variant] = []
    for file in files:
        folder = file.parent.name
        if not _SAFE_NAME.match(folder):
            raise _refuse(file, f"its folder name {folder!r} cannot be part of a task ID "
                          "(letters, digits, '.', '_', '-')")
        source = inputs.read_text(file, what="the Cua-Bench task module")  # bounded, regular
        module = load_module(file)  # refuses a syntax error: the parse below cannot fail
        called = operations_called(source, (*SHELL_OPERATIONS, *BROWSER_OPERATIONS,
                                            *APP_OPERATIONS))
        functions = lifecycle(module, split)
        for index, task in enumerate(variants_of(file, split, module)):
            if only is not None and index != only:
                continue
            computer = getattr(task, "computer", None) or {}
            setup = computer.get("setup_config", {}) if isinstance(computer, dict) else {}
            os_type = str(setup.get("os_type", "") if isinstance(setup, dict) else "").lower()
            variants.append(Variant(
                task_id=f"{folder}/{index}", module_file=file, index=index, split=split,
                description=str(task.description), os_type=os_type,
                has_solve="solve_task" in functions,
                uses_shell=any(op in SHELL_OPERATIONS for op in called),
                browser_operations=tuple(op for op in called if op in BROWSER_OPERATIONS),
                app_operations=tuple(op for op in called if op in APP_OPERATIONS),
            ))
        if only is not None and not variants:
            raise InvalidRunInputError(f"--tasks {selection!r}: {file} has no variant #{only} "
                                       f"for the split {split!r}")
    return variants


def operations_called(source: str, names: Collection[str]) -> tuple[str, ...]:
    """The session operations of ``names`` a module's source reads as an attribute, of any
    receiver (``session.x``, ``s.x``, ``self.session.x``), in source order, each once: decided
    by parsing, so a name in a string or a comment is no call. One the parse cannot see
    (``getattr(session, name)``) is not found; on a worker without it the operation says so."""
    nodes = [n for n in ast.walk(ast.parse(source))
             if isinstance(n, ast.Attribute) and n.attr in names]
    nodes.sort(key=lambda n: (n.lineno, n.col_offset))
    return tuple(dict.fromkeys(n.attr for n in nodes))


def apps_problem(variants: list[Variant]) -> str | None:
    """Why no pool can run these variants, or None: a module driving Cua-Bench's native apps
    (``session.apps.kicad.install()``), which exist on Cua-Bench's own VMs only."""
    lacking = [v for v in variants if v.app_operations]
    if not lacking:
        return None
    first = lacking[0]
    return (f"cua-bench module {first.module_file}: it calls session.{first.app_operations[0]} "
            "(Cua-Bench's native apps, installed and driven on Cua-Bench's own VMs), which "
            f"oa-vm's workers do not have ({len(lacking)} variant(s)); no pool runs it")


def shell_problem(variants: list[Variant], worker_shell: str,
                  pool: str | None = None) -> str | None:
    """Why the pool's workers (``None``: a plan with no pool yet, so any pool's) cannot run
    these variants' shell operations, or None.

    A module that uses ``run_command``, ``read_file``... needs the shell of its
    ``computer.setup_config.os_type``; WAA workers and simulated ones have Windows'
    (``windows``), so no other pool would do.
    """
    lacking = [v for v in variants if v.uses_shell
               and SHELL_OF_OS.get(v.os_type, worker_shell) != worker_shell]
    if not lacking:
        return None
    first = lacking[0]
    workers = "every pool's workers" if pool is None else f"pool {pool!r}'s workers"
    return (f"cua-bench module {first.module_file}: it runs shell and file operations for "
            f"os_type {first.os_type!r}, and {workers} have a {worker_shell} shell only "
            f"({len(lacking)} variant(s)); set os_type to 'windows' and use Windows paths")


def module_hashes(files: list[Path]) -> dict[str, str]:
    """SHA-256 of every file of each module's folder (its main.py, its pages, its helpers)."""
    hashes: dict[str, str] = {}
    for file in files:
        folder = file.parent
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            if "__pycache__" in path.parts:
                continue
            key = f"{folder.name}/{path.relative_to(folder).as_posix()}"
            hashes[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def module_traceback(exc: BaseException, module_file: Path, limit: int = 20_000) -> str:
    """The traceback of an exception a module raised, from the module's own frames on."""
    tb = exc.__traceback__
    while tb is not None and Path(tb.tb_frame.f_code.co_filename) != module_file:
        tb = tb.tb_next
    text = "".join(traceback.format_exception(type(exc), exc, tb or exc.__traceback__))
    return text if len(text) <= limit else text[: limit // 4] + "\n...\n" + text[-limit // 2:]
