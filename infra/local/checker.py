"""The simulated worker's checker: getters and metrics over the desktop, WAA's rules on top.

Getters and metrics keep WAA's names and calling conventions where one exists (``vm_file``
returns a file path or ``None``, ``rule`` returns the literal ``rules``, ``exact_match`` compares
with ``rules["expected"]``), so tasks read like WAA's. The combination rules come from
:mod:`infra.scoring_rules` and are not repeated here.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from infra.local import commands, setup_steps
from infra.local.apps import AppError
from infra.local.desktop import Desktop
from infra.scoring_rules import EvaluatorConfigError, Unscorable, Verdict, evaluate


class GetterError(RuntimeError):
    """A getter could not fetch its value (WAA's rules decide what that scores)."""


class MissingFileError(GetterError, FileNotFoundError):
    """A getter found no file: a ``FileNotFoundError``, as WAA's rules single those out."""


class PostconfigError(RuntimeError):
    """A postconfig step failed: the task cannot be scored (an evaluation error)."""


# -- getters -----------------------------------------------------------------------------


def _cfg_str(cfg: Mapping[str, Any], name: str) -> str:
    value = cfg.get(name)
    if not isinstance(value, str) or not value:
        raise GetterError(f"{cfg.get('type')} getter needs a string {name!r}")
    return value


def _vm_file(desktop: Desktop, cfg: Mapping[str, Any]) -> str | None:
    host = desktop.host(_cfg_str(cfg, "path"))
    return str(host) if host.is_file() else None


_TASK_ID: ContextVar[str | None] = ContextVar("oa_vm_checker_task_id", default=None)
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,200}$")


def cache_dir(desktop: Desktop) -> Path:
    """The cache folder of the task being checked (``<worker>/cache/<task id>``), as WAA gives
    each task its own; outside the drive so the agent can never see or change it."""
    task_id = _TASK_ID.get()
    name = task_id if task_id and _SAFE_ID.match(task_id) else "_no_task_id"
    folder = desktop.sandbox.drive.parent / "cache" / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _inline_file(desktop: Desktop, cfg: Mapping[str, Any]) -> str:
    content = cfg.get("content")
    encoded = cfg.get("content_base64")
    if isinstance(encoded, str):
        try:
            data = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise GetterError(f"inline_file: content_base64 is not base64 ({exc})") from exc
    elif isinstance(content, str):
        data = content.encode("utf-8")
    else:
        raise GetterError("inline_file getter needs a string 'content' or 'content_base64'")
    target = cache_dir(desktop) / (hashlib.sha256(data).hexdigest()[:32] + ".bin")
    if not target.is_file():
        target.write_bytes(data)
    return str(target)


def _vm_command_line(desktop: Desktop, cfg: Mapping[str, Any]) -> str:
    """The command's output, as WAA's getter returns it whatever the exit status (a failed
    command prints nothing on its standard output)."""
    command = cfg.get("command")
    if not isinstance(command, str | list):
        raise GetterError("vm_command_line getter needs a 'command'")
    return commands.run(desktop, command).output


def _clock_timers(desktop: Desktop, cfg: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every timer; ``fields`` (optional) keeps only those keys (``["seconds", "running"]``
    when the task names no label)."""
    timers: list[dict[str, Any]] = desktop.clock.as_dict()["timers"]
    fields = cfg.get("fields")
    if isinstance(fields, list):
        return [{k: t[k] for k in fields if k in t} for t in timers]
    return timers


def _exists_in_folder(desktop: Desktop, cfg: Mapping[str, Any]) -> float:
    folder = _cfg_str(cfg, "folder_name").rstrip("\\/")
    return 1.0 if desktop.host(folder + "\\" + _cfg_str(cfg, "file_name")).is_file() else 0.0


def _list_directory(desktop: Desktop, cfg: Mapping[str, Any]) -> list[str]:
    """The folder's names; with ``recursive`` every file below it instead, as sorted paths
    relative to it (``Downloads\\invoice.txt``), so a file moved to another folder instead of
    deleted is still seen."""
    path = _cfg_str(cfg, "path")
    if not cfg.get("recursive"):
        return desktop.list_names(path)
    root = desktop.host(path)
    if not root.is_dir():
        raise GetterError(f"folder not found: {path}")
    return sorted(("\\".join(p.relative_to(root).parts) for p in root.rglob("*") if p.is_file()),
                  key=str.lower)


def _settings_value(desktop: Desktop, cfg: Mapping[str, Any]) -> Any:
    key = _cfg_str(cfg, "key")
    values = desktop.settings.as_dict()
    if key not in values:
        raise GetterError(f"unknown setting {key!r}; known: {', '.join(values)}")
    return values[key]


def _settings(desktop: Desktop, cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Every setting by key, native types: a task that expects one setting changed compares
    them all, so a run that also flips another one (collateral damage) scores 0."""
    return desktop.settings.as_dict()


def _timer_started(desktop: Desktop, cfg: Mapping[str, Any]) -> str:
    wanted = sum(int(cfg.get(k, 0)) * m for k, m in (("hours", 3600), ("minutes", 60),
                                                    ("seconds", 1)))
    found = any(t.running and t.seconds == wanted for t in desktop.clock.timers)
    return "True" if found else "False"


def _notepad_state(desktop: Desktop, cfg: Mapping[str, Any]) -> list[dict[str, Any]]:
    with desktop.lock:
        return [
            {"title": w.title, "path": w.path, "text": w.text, "saved": not w.dirty}
            for w in reversed(desktop.windows)
            if w.app == "notepad"
        ]


def _calc_display(desktop: Desktop, cfg: Mapping[str, Any]) -> str | None:
    """The calculator's display, or ``None`` when it is closed (a value the metric scores 0,
    as WAA's getters answer ``None`` for what they cannot find, rather than an error)."""
    return next((w.display for w in desktop.windows if w.app == "calc"), None)


def _active_title(desktop: Desktop, cfg: Mapping[str, Any]) -> str | None:
    active = desktop.active
    return active.title if active else None


GETTERS: dict[str, Callable[[Desktop, Mapping[str, Any]], Any]] = {
    "rule": lambda d, cfg: cfg.get("rules"),
    "vm_file": _vm_file,
    "vm_file_text": lambda d, cfg: d.read_file(_cfg_str(cfg, "path")).decode("utf-8", "replace"),
    "inline_file": _inline_file,
    "vm_command_line": _vm_command_line,
    "vm_file_exists_in_vm_folder": _exists_in_folder,
    "list_directory": _list_directory,
    "settings_value": _settings_value,
    "settings": _settings,
    "night_light_state": lambda d, cfg: [d.settings.night_light, d.settings.night_light_start,
                                         d.settings.night_light_end],
    "clock_timers": _clock_timers,
    "clock_alarms": lambda d, cfg: d.clock.as_dict()["alarms"],
    "world_clocks": lambda d, cfg: list(d.clock.world_clocks),
    "check_if_timer_started": _timer_started,
    "notepad_state": _notepad_state,
    "calc_display": _calc_display,
    "clipboard": lambda d, cfg: d.clipboard,
    "active_window_title": _active_title,
    "vm_active_window_title": _active_title,
    "desktop_state": lambda d, cfg: d.snapshot(),
}
"""Getter types, by WAA-style name: each takes the desktop and the getter config."""


def get_value(desktop: Desktop, cfg: Mapping[str, Any]) -> Any:
    """Resolve one getter config (``{"type": ..., ...}``) on a desktop.

    Raises:
        GetterError: unknown type or the value cannot be fetched (scores 0 under WAA's rules).
    """
    if not isinstance(cfg, Mapping):
        raise GetterError("a getter config must be an object with a 'type'")
    getter = GETTERS.get(str(cfg.get("type")))
    if getter is None:
        raise Unscorable(f"unknown getter type {cfg.get('type')!r}")
    try:
        return getter(desktop, cfg)
    except FileNotFoundError as exc:
        raise MissingFileError(str(exc)) from exc
    except (AppError, commands.CommandSyntaxError, ValueError) as exc:
        raise GetterError(str(exc)) from exc


# -- metrics -----------------------------------------------------------------------------


def _expected(rules: Any) -> Any:
    if not isinstance(rules, Mapping) or "expected" not in rules:
        raise EvaluatorConfigError("this metric needs a rule getter with rules.expected")
    return rules["expected"]


def exact_match(result: Any, rules: Any) -> float:
    """1 if ``result == rules["expected"]``."""
    return 1.0 if result == _expected(rules) else 0.0


def is_in_list(result: Any, rules: Any) -> float:
    """1 if ``rules["expected"]`` is an element (or substring) of ``result``."""
    expected = _expected(rules)
    return 1.0 if result is not None and expected in result else 0.0


def match_in_list(result: Any, rules: Any) -> float:
    """1 if ``result`` is one of the values listed in ``rules["expected"]``."""
    return 1.0 if result in _expected(rules) else 0.0


def check_include_exclude(result: Any, rules: Any) -> float:
    """1 if every ``rules["include"]`` string is in ``result`` and no ``rules["exclude"]`` one."""
    if result is None:
        return 0.0
    if not isinstance(rules, Mapping):
        raise EvaluatorConfigError("check_include_exclude needs rules with include/exclude")
    include, exclude = rules.get("include", []), rules.get("exclude", [])
    ok = all(r in result for r in include) and all(r not in result for r in exclude)
    return 1.0 if ok else 0.0


def _normalise(text: str, *, ignore_blanks: bool, ignore_case: bool) -> str:
    if ignore_blanks:
        text = re.sub(r"\s+", " ", text).strip()
    return text.lower() if ignore_case else text


def compare_text_file(
    path1: str | None, path2: str | None, *, ignore_blanks: bool = False, ignore_case: bool = False
) -> float:
    """1 if two text files hold the same text (WAA's options: ignore_blanks, ignore_case)."""
    if not path1 or not path2:
        return 0.0
    texts = [
        _normalise(
            Path(p).read_text(encoding="utf-8", errors="replace"),
            ignore_blanks=ignore_blanks,
            ignore_case=ignore_case,
        )
        for p in (path1, path2)
    ]
    return 1.0 if texts[0] == texts[1] else 0.0


def check_list(path: str | None, rules: Any) -> float:
    """WAA's ``check_list``: 1 if each ``rules["expect"]`` regex matches some line of the file
    and no ``rules["unexpect"]`` regex matches any line (``"one name per line"`` is an
    ``unexpect`` of two words on a line)."""
    if not path:
        return 0.0
    if not isinstance(rules, Mapping):
        raise EvaluatorConfigError("check_list needs rules with expect/unexpect regex lists")
    expect = [re.compile(p) for p in rules.get("expect", [])]
    unexpect = [re.compile(p) for p in rules.get("unexpect", [])]
    found = [False] * len(expect)
    clean = True
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    for line in text.splitlines(keepends=True):
        found = [f or r.search(line) is not None for f, r in zip(found, expect, strict=True)]
        clean = clean and all(r.search(line) is None for r in unexpect)
    return 1.0 if all(found) and clean else 0.0


def literal_match(result: Any, expected: Any, *, ignore_case: bool = False) -> float:
    """1 if ``result == expected`` (strings compared without case when ``ignore_case``)."""
    if ignore_case and isinstance(result, str) and isinstance(expected, str):
        return 1.0 if result.lower() == expected.lower() else 0.0
    return 1.0 if result == expected else 0.0


def file_exists(result: Any) -> float:
    """1 if ``result`` (a path from ``vm_file``) names an existing file."""
    return 1.0 if isinstance(result, str) and Path(result).is_file() else 0.0


def compare_files(path1: str | None, path2: str | None) -> float:
    """1 if two files hold the same bytes (a copied picture, not a text file of that name)."""
    if not path1 or not path2:
        return 0.0
    return 1.0 if Path(path1).read_bytes() == Path(path2).read_bytes() else 0.0


METRICS: dict[str, Callable[..., float]] = {fn.__name__: fn for fn in (
    exact_match, is_in_list, match_in_list, check_include_exclude, compare_text_file,
    literal_match, file_exists, compare_files, check_list,
)}
"""Metrics, by WAA name: ``metric(result, expected?, **options) -> float``."""

FILE_METRICS = frozenset({"compare_text_file", "file_exists", "compare_files", "check_list"})
"""Metrics whose positional arguments are host paths: each must stay inside the sandbox."""


def metric(name: str) -> Callable[..., float]:
    """The metric called ``name``, wrapped so a bad call is reported as a task bug.

    Raises:
        KeyError: unknown metric (``infra.scoring_rules`` reports it).
    """
    fn = METRICS[name]

    def checked(*args: Any, **kwargs: Any) -> float:
        try:
            return fn(*args, **kwargs)
        except EvaluatorConfigError:
            raise
        except (TypeError, ValueError, OSError) as exc:
            raise EvaluatorConfigError(f"metric {name} could not run: {exc}") from exc

    return checked


def confined_metric(desktop: Desktop, name: str) -> Callable[..., float]:
    """:func:`metric`, refusing (as an evaluation error) any path argument of a file metric
    that resolves outside the worker's drive and the task's cache folder, so a ``rule`` path
    such as ``/etc/passwd`` is never read on the host."""
    fn = metric(name)
    if name not in FILE_METRICS:
        return fn
    roots = [desktop.sandbox.drive.resolve(), cache_dir(desktop).resolve()]

    def checked(*args: Any, **kwargs: Any) -> float:
        for arg in args:
            if isinstance(arg, str | Path):
                resolved = Path(arg).resolve()
                if not any(resolved.is_relative_to(root) for root in roots):
                    raise Unscorable(f"{name}: path {str(arg)!r} is outside the worker's sandbox")
        return fn(*args, **kwargs)

    return checked


def evaluate_task(desktop: Desktop, task: Mapping[str, Any], last_action: str | None) -> Verdict:
    """Score a task on a desktop: postconfig, then WAA's rules.

    Raises:
        PostconfigError: a postconfig step failed.
        EvaluatorConfigError: the task's evaluator block is malformed.
    """
    evaluator = task.get("evaluator")
    if not isinstance(evaluator, Mapping):
        raise EvaluatorConfigError("the task has no 'evaluator' object")
    postconfig = evaluator.get("postconfig") or []
    if not isinstance(postconfig, list):
        raise EvaluatorConfigError("evaluator.postconfig must be a list of steps")
    for index, result in enumerate(setup_steps.run_steps(desktop, postconfig)):
        if not result.ok:
            raise PostconfigError(f"postconfig step {index} ({result.type}) failed: {result.error}")
    task_id = task.get("id")
    token = _TASK_ID.set(task_id if isinstance(task_id, str) else None)
    try:
        return evaluate(
            evaluator,
            last_action,
            get_value=lambda cfg: get_value(desktop, cfg),
            metric=lambda name: confined_metric(desktop, name),
            getter_exists=lambda kind: kind in GETTERS,
        )
    finally:
        _TASK_ID.reset(token)
