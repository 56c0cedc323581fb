"""The command language that the simulated worker's ``/execute`` understands.

A real WAA guest runs whatever Python or shell it is sent. The simulated one never runs code: it
accepts one command per request from a small set of verbs (``open notepad``, ``type "text"``,
``save "C:\\...\\a.txt"``, ``set night_light on``, ``timer add 5m "tea"``, ``sleep 2``...), listed
in :data:`VERBS` and documented in ``docs/local-worker.md``.

Words are split like a POSIX shell (``"..."`` and ``'...'`` group words) except that a backslash
is an ordinary character, so Windows paths need no doubling. A command may also be sent as a list
of words, which is not split again.

Errors come in two kinds, as with a real shell: a command that cannot be understood (unknown verb,
wrong arguments, Python or PowerShell code) raises :class:`CommandSyntaxError` (HTTP 400); a
command that runs and fails (file not found, no notepad window) gives ``returncode`` 1 and the
reason in ``error``. A path leaving the sandbox raises :class:`SandboxError` (HTTP 403).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from infra.local import cancel, launcher
from infra.local.apps import (
    Alarm,
    AppError,
    Timer,
    format_duration,
    parse_clock_time,
    parse_duration,
)
from infra.local.arith import (
    ArithmeticInputError,
    calculate,
    date_history_line,
    days_between,
    history_line,
)
from infra.local.desktop import Desktop, app_name
from infra.local.sandbox import HOME, SandboxError

MAX_SLEEP = 30.0
DOC_HINT = ("the simulated worker runs no programs or code: it takes one command of its own "
            "language, a verb and its arguments (open notepad, type 'text', save 'C:\\...\\a.txt'; "
            "docs/local-worker.md)")
SPECIAL_ACTIONS = ("DONE", "FAIL", "WAIT")
_FOREIGN = {"python", "python3", "python.exe", "py", "powershell", "powershell.exe", "pwsh",
            "cmd", "cmd.exe", "bash", "sh"}


class CommandSyntaxError(ValueError):
    """A command the language does not accept (HTTP 400): says what was wrong and the usage."""


@dataclass(frozen=True)
class CommandResult:
    """What ``/execute`` reports: ``output``, ``error`` and a shell-like ``returncode``."""

    output: str = ""
    error: str = ""
    returncode: int = 0

    def to_json(self) -> dict[str, Any]:
        """WAA's ``/execute`` answer."""
        return {
            "status": "success",
            "output": self.output,
            "error": self.error,
            "returncode": self.returncode,
        }


Handler = Callable[[Desktop, list[str]], str]


@dataclass(frozen=True)
class Verb:
    """One verb: its usage line, how many arguments it takes, and what it does."""

    usage: str
    min_args: int
    max_args: int
    run: Handler


def split_command(command: str | Sequence[str]) -> list[str]:
    """Split a command into words (see the module docstring for the quoting rules).

    Raises:
        CommandSyntaxError: unbalanced quotes, an empty command, or a list with non-strings.
    """
    if isinstance(command, str):
        lexer = shlex.shlex(command, posix=True)
        lexer.whitespace_split = True
        lexer.escape = ""  # backslashes belong to Windows paths
        lexer.commenters = ""
        try:
            words = list(lexer)
        except ValueError as exc:
            raise CommandSyntaxError(
                f"cannot split the command ({exc}); quote text with \"...\" or '...'"
            ) from None
    elif isinstance(command, Sequence) and all(isinstance(w, str) for w in command):
        words = list(command)
    else:
        raise CommandSyntaxError("command must be a string or a list of strings")
    if not words:
        raise CommandSyntaxError(f"empty command; {DOC_HINT}")
    return words


def _foreign(words: list[str], original: str | Sequence[str]) -> bool:
    text = original if isinstance(original, str) else " ".join(original)
    return words[0].lower() in _FOREIGN or "pyautogui" in text or "import " in text


def parse(command: str | Sequence[str]) -> tuple[Verb, list[str]]:
    """Check a command against the language: ``(verb, arguments)``.

    Raises:
        CommandSyntaxError: unknown verb, wrong number of arguments, or foreign code.
    """
    words = split_command(command)
    name = words[0]
    if name.upper() in SPECIAL_ACTIONS:
        return VERBS["wait"], []
    verb = VERBS.get(name.lower())
    if verb is None:
        if _foreign(words, command):
            raise CommandSyntaxError(
                f"{name!r}: this worker does not run Python, pyautogui or shell code; {DOC_HINT}"
            )
        raise CommandSyntaxError(_unknown(words))
    args = words[1:]
    if not verb.min_args <= len(args) <= verb.max_args:
        raise CommandSyntaxError(f"{name}: wrong number of arguments; usage: {verb.usage}")
    return verb, args


def _unknown(words: list[str]) -> str:
    """The refusal of an unknown verb: the language, and the verb that does it when the word is
    a program the simulated desktop has (``notepad.exe`` or ``start notepad.exe`` -> ``open
    notepad``; with a path, ``open notepad "PATH"``)."""
    at = 1 if words[0].lower() == "start" and len(words) > 1 else 0
    program, rest = words[at], words[at + 1:]
    app = app_name(program)
    if app is None or len(rest) > 1:
        return f"unknown verb {words[0]!r}; {DOC_HINT}; verbs: {', '.join(sorted(VERBS))}"
    target = program if ":" in program else app  # a settings or clock page stays named
    verb = " ".join(["open", target, *(f'"{word}"' for word in rest)])
    return f"{' '.join(words)!r} runs a program; {DOC_HINT}; to open it: {verb}"


def run(desktop: Desktop, command: str | Sequence[str]) -> CommandResult:
    """Parse and run one command on a desktop.

    Raises:
        CommandSyntaxError: see :func:`parse` (also for bad argument values).
        SandboxError: a path leaves the simulated drive.
    """
    verb, args = parse(command)
    try:
        output = verb.run(desktop, args)
    except (AppError, FileNotFoundError, ArithmeticInputError) as exc:
        return CommandResult(error=str(exc), returncode=1)
    except _UsageError as exc:
        raise CommandSyntaxError(f"{exc}; usage: {verb.usage}") from None
    return CommandResult(output=output)


class _UsageError(ValueError):
    """An argument value the verb does not accept (becomes a CommandSyntaxError)."""


# -- verbs -------------------------------------------------------------------------------


def _open(desktop: Desktop, args: list[str]) -> str:
    target = args[0]
    app = app_name(target)
    if app is not None:
        page = target.split(":", 1)[1] if ":" in target and app in ("settings", "clock") else None
        window = desktop.open_app(app, args[1] if len(args) > 1 else page)
    elif len(args) == 1:
        window = desktop.open_path(target)
    else:
        raise _UsageError(f"unknown app {target!r} (notepad, explorer, settings, clock, calc)")
    return window.title


_KEYS = {"enter": "\n", "return": "\n", "tab": "\t", "space": " "}


def _key(desktop: Desktop, args: list[str]) -> str:
    key = args[0].lower()
    count = _int(args[1], "COUNT", 1, 1000) if len(args) > 1 else 1
    if key in _KEYS:
        desktop.type_text(_KEYS[key] * count)
    elif key == "backspace":
        desktop.backspace(count)
    elif key == "ctrl+s":
        return desktop.save()
    elif key in ("ctrl+a", "delete_all"):
        desktop.clear_text()
    else:
        raise _UsageError(f"unknown key {args[0]!r} (enter, tab, space, backspace, ctrl+s)")
    return ""


def _rename(desktop: Desktop, args: list[str]) -> str:
    if any(c in args[1] for c in "\\/") or args[1] in ("", ".", ".."):
        raise _UsageError(f"{args[1]!r} is not a bare file name")
    return desktop.sandbox.to_guest(desktop.rename(args[0], args[1]))


def _set(desktop: Desktop, args: list[str]) -> str:
    with desktop.lock:
        value: str = _value(lambda text: desktop.settings.set(args[0], text), " ".join(args[1:]))
        desktop.version += 1
    return value


def _value(parser: Callable[[str], Any], text: str) -> Any:
    """Parse an argument value; a bad one is a usage error (400), not a runtime failure."""
    try:
        return parser(text)
    except AppError as exc:
        raise _UsageError(str(exc)) from None


def _timer(desktop: Desktop, args: list[str]) -> str:
    action, rest = args[0].lower(), args[1:]
    clock = desktop.clock
    with desktop.lock:
        desktop.version += 1
        if action == "add" and 1 <= len(rest) <= 2:
            seconds: int = _value(parse_duration, rest[0])
            label = rest[1] if len(rest) > 1 else f"Timer ({format_duration(seconds)})"
            clock.timers.append(Timer(label=label, seconds=seconds))
            return label
        if action in ("pause", "resume", "delete") and len(rest) == 1:
            timer = next((t for t in clock.timers if t.label.lower() == rest[0].lower()), None)
            if timer is None:
                raise AppError(f"no timer labelled {rest[0]!r}")
            if action == "delete":
                clock.timers.remove(timer)
            else:
                timer.running = action == "resume"
            return timer.label
        if action == "clear" and not rest:
            clock.timers.clear()
            return ""
        if action == "list" and not rest:
            return "\n".join(
                f"{t.label}\t{format_duration(t.seconds)}\t{'running' if t.running else 'paused'}"
                for t in clock.timers
            )
    raise _UsageError(f"timer {action}: bad action or arguments")


def _alarm(desktop: Desktop, args: list[str]) -> str:
    action, rest = args[0].lower(), args[1:]
    clock = desktop.clock
    with desktop.lock:
        desktop.version += 1
        if action == "add" and 1 <= len(rest) <= 2:
            hour, minute = _value(parse_clock_time, rest[0])
            label = rest[1] if len(rest) > 1 else "Alarm"
            clock.alarms.append(Alarm(time=f"{hour:02d}:{minute:02d}", label=label))
            return f"{hour:02d}:{minute:02d}"
        if action in ("delete", "on", "off") and len(rest) == 1:
            key = rest[0].lower()
            for alarm in clock.alarms:
                if key in (alarm.label.lower(), alarm.time):
                    if action == "delete":
                        clock.alarms.remove(alarm)
                    else:
                        alarm.enabled = action == "on"
                    return alarm.time
            raise AppError(f"no alarm labelled or set at {rest[0]!r}")
        if action == "clear" and not rest:
            clock.alarms.clear()
            return ""
        if action == "list" and not rest:
            return "\n".join(
                f"{a.time}\t{a.label}\t{'on' if a.enabled else 'off'}" for a in clock.alarms
            )
    raise _UsageError(f"alarm {action}: bad action or arguments")


def _worldclock(desktop: Desktop, args: list[str]) -> str:
    action, rest = args[0].lower(), args[1:]
    clocks = desktop.clock.world_clocks
    with desktop.lock:
        desktop.version += 1
        if action == "add" and len(rest) == 1:
            if rest[0].lower() not in (c.lower() for c in clocks):
                clocks.append(rest[0])
            return rest[0]
        if action == "delete" and len(rest) == 1:
            for city in clocks:
                if city.lower() == rest[0].lower():
                    clocks.remove(city)
                    return city
            raise AppError(f"no world clock for {rest[0]!r}")
        if action == "clear" and not rest:
            clocks.clear()
            return ""
        if action == "list" and not rest:
            return "\n".join(clocks)
    raise _UsageError(f"worldclock {action}: bad action or arguments")


def _calc(desktop: Desktop, args: list[str]) -> str:
    if args[0].lower() == "history" and len(args) == 1:
        return _calc_history(desktop)
    window = desktop.require_active("calc")
    if args[0].lower() == "days":
        if len(args) != 3:
            raise _UsageError("calc days needs two dates")
        days = days_between(args[1], args[2])
        result = str(days)
        with desktop.lock:
            window.display = result
            window.record_dates(date_history_line(args[1], args[2], days))
            desktop.version += 1
        return result
    expression = " ".join(args)
    result = calculate(expression)
    with desktop.lock:
        window.display = result
        window.record(history_line(expression, result))
        desktop.version += 1
    return result


def _calc_history(desktop: Desktop) -> str:
    """The calculator's History pane, one calculation a line, oldest first: read-only, and
    whichever window is active (a checker reads it after the answer was saved in Notepad)."""
    with desktop.lock:
        for window in desktop.windows:
            if window.app == "calc":
                return "\n".join(window.history)
    raise AppError("the calculator is not open (its history is gone when it closes)")


def _clipboard(desktop: Desktop, args: list[str]) -> str:
    with desktop.lock:
        desktop.clipboard = " ".join(args)
        desktop.version += 1
    return ""


def _sleep(desktop: Desktop, args: list[str]) -> str:
    try:
        seconds = float(args[0])
    except ValueError:
        raise _UsageError(f"{args[0]!r} is not a number of seconds") from None
    if not 0 <= seconds <= MAX_SLEEP:
        raise _UsageError(f"sleep takes 0 to {MAX_SLEEP:g} seconds, not {args[0]}")
    cancel.sleep(seconds)  # really waits (benchmarks shape task durations with it); stoppable
    return ""


def _todo(desktop: Desktop, args: list[str]) -> str:
    action, rest = args[0].lower(), args[1:]
    apps = desktop.apps
    with desktop.lock:
        if action == "list" and not rest:
            return "\n".join(f"[{'x' if t.done else ' '}] {t.title}" for t in apps.todos)
        desktop.version += 1
        if action == "add" and len(rest) == 1:
            return apps.add_todo(rest[0]).title
        if action in ("done", "undone") and len(rest) == 1:
            todo = apps.find_todo(rest[0])
            todo.done = action == "done"
            return todo.title
        if action == "delete" and len(rest) == 1:
            apps.delete_todo(rest[0])
            return rest[0]
    raise _UsageError(f"todo {action}: bad action or arguments")


def _editor(desktop: Desktop, args: list[str]) -> str:
    action, rest = args[0].lower(), args[1:]
    apps = desktop.apps
    with desktop.lock:
        if action == "read" and len(rest) == 1:
            return apps.text(rest[0])
        if action == "files" and not rest:
            return "\n".join(f["path"] for f in apps.state()["codeeditor"]["files"])
        desktop.version += 1
        if action == "write" and len(rest) == 2:
            apps.edit(rest[0], rest[1])
            return ""
        if action == "append" and len(rest) == 2:
            apps.edit(rest[0], apps.text(rest[0]) + rest[1])
            return ""
        if action == "save" and len(rest) == 1:
            apps.save(rest[0])
            return rest[0]
    raise _UsageError(f"editor {action}: bad action or arguments")


def _msg(desktop: Desktop, args: list[str]) -> str:
    if args[0].lower() != "send":
        raise _UsageError(f"msg {args[0]}: bad action or arguments")
    with desktop.lock:
        desktop.version += 1
        desktop.apps.send(args[1], args[2])
    return args[1]


def _calendar(desktop: Desktop, args: list[str]) -> str:
    action, rest = args[0].lower(), args[1:]
    planner = desktop.apps.planner
    with desktop.lock:
        if action == "list" and not rest:
            return "\n".join(f"{e.date}\t{e.title}" for e in planner.events)
        desktop.version += 1
        if action == "add" and len(rest) >= 2:
            details = dict(_field(word) for word in rest[2:])
            return planner.add_event(rest[0], rest[1], **details).title
        if action == "delete" and 1 <= len(rest) <= 2:
            return planner.remove_event(rest[0], rest[1] if len(rest) > 1 else None).title
    raise _UsageError(f"calendar {action}: bad action or arguments")


def _field(word: str) -> tuple[str, str]:
    name, sep, value = word.partition("=")
    if not sep or not name:
        raise _UsageError(f"{word!r} is not FIELD=VALUE")
    return name.lower(), value


def _map(desktop: Desktop, args: list[str]) -> str:
    action, rest = args[0].lower(), args[1:]
    planner = desktop.apps.planner
    with desktop.lock:
        if action == "list" and not rest:
            return "\n".join(f"{p.name}\t{p.latitude}\t{p.longitude}" for p in planner.places)
        desktop.version += 1
        if action == "save" and len(rest) == 3:
            return planner.save_place(*rest).name
        if action == "delete" and len(rest) == 1:
            return planner.remove_place(rest[0]).name
    raise _UsageError(f"map {action}: bad action or arguments")


def _goto(desktop: Desktop, args: list[str]) -> str:
    return launcher.go(desktop, args[0])


def _appstate(desktop: Desktop, args: list[str]) -> str:
    state = desktop.app_state()
    if args:
        if args[0] not in state:
            raise _UsageError(f"no app {args[0]!r} ({', '.join(state)})")
        state = {args[0]: state[args[0]]}
    return json.dumps(state, sort_keys=True)


def _quiet(action: Callable[[Desktop, list[str]], object]) -> Handler:
    """A verb run for its effect alone: it prints nothing."""

    def run(desktop: Desktop, args: list[str]) -> str:
        action(desktop, args)
        return ""

    return run


def _int(text: str, name: str, low: int, high: int) -> int:
    if not text.isdigit() or not low <= int(text) <= high:
        raise _UsageError(f"{name} must be a whole number from {low} to {high}, not {text!r}")
    return int(text)


VERBS: dict[str, Verb] = {
    "open": Verb("open APP [PATH] | open PATH", 1, 2, _open),
    "close": Verb("close [WINDOW_TITLE]", 0, 1, lambda d, a: d.close(a[0] if a else None).title),
    "activate": Verb("activate WINDOW_TITLE", 1, 1, lambda d, a: d.activate(a[0]).title),
    "type": Verb('type "TEXT"', 1, 1000, _quiet(lambda d, a: d.type_text(" ".join(a)))),
    "key": Verb("key enter|tab|space|backspace|ctrl+s|ctrl+a [COUNT]", 1, 2, _key),
    "clear": Verb("clear", 0, 0, _quiet(lambda d, a: d.clear_text())),
    "save": Verb('save ["C:\\...\\name.txt"]', 0, 1, lambda d, a: d.save(a[0] if a else None)),
    "mkdir": Verb('mkdir "C:\\...\\folder"', 1, 1, _quiet(lambda d, a: d.make_folder(a[0]))),
    "write": Verb('write "C:\\...\\file" ["CONTENT"]', 1, 2,
                  _quiet(lambda d, a: d.write_file(a[0], a[1] if len(a) > 1 else ""))),
    "append": Verb('append "C:\\...\\file" "CONTENT"', 2, 2,
                   _quiet(lambda d, a: d.write_file(a[0], a[1], append=True))),
    "read": Verb('read "C:\\...\\file"', 1, 1,
                 lambda d, a: d.read_file(a[0]).decode("utf-8", errors="replace")),
    "ls": Verb('ls ["C:\\...\\folder"]', 0, 1,
               lambda d, a: "\n".join(d.list_names(a[0] if a else HOME))),
    "exists": Verb('exists "C:\\...\\path"', 1, 1, lambda d, a: str(d.host(a[0]).exists())),
    "move": Verb('move "SOURCE" "DESTINATION"', 2, 2,
                 lambda d, a: d.sandbox.to_guest(d.move(a[0], a[1]))),
    "copy": Verb('copy "SOURCE" "DESTINATION"', 2, 2,
                 lambda d, a: d.sandbox.to_guest(d.copy(a[0], a[1]))),
    "rename": Verb('rename "C:\\...\\path" NEW_NAME', 2, 2, _rename),
    "delete": Verb('delete "C:\\...\\path"', 1, 1, _quiet(lambda d, a: d.delete(a[0]))),
    "set": Verb("set SETTING VALUE", 2, 3, _set),
    "get": Verb("get SETTING", 1, 1, lambda d, a: str(_value(d.settings.get, a[0]))),
    "timer": Verb('timer add DURATION ["LABEL"] | pause|resume|delete LABEL | list | clear',
                  1, 3, _timer),
    "alarm": Verb('alarm add TIME ["LABEL"] | on|off|delete LABEL_OR_TIME | list | clear',
                  1, 3, _alarm),
    "worldclock": Verb('worldclock add|delete "CITY" | list | clear', 1, 2, _worldclock),
    "calc": Verb('calc EXPRESSION | calc days YYYY-MM-DD YYYY-MM-DD | calc history',
                 1, 100, _calc),
    "clipboard": Verb('clipboard "TEXT"', 1, 1000, _clipboard),
    "paste": Verb("paste", 0, 0, _quiet(lambda d, a: d.type_text(d.clipboard))),
    "sleep": Verb("sleep SECONDS (0 to 30)", 1, 1, _sleep),
    "echo": Verb('echo "TEXT"', 0, 1000, lambda d, a: " ".join(a)),
    "windows": Verb("windows", 0, 0, lambda d, a: "\n".join(d.titles())),
    "todo": Verb('todo add|done|undone|delete "TITLE" | todo list', 1, 2, _todo),
    "editor": Verb('editor write|append FILE "TEXT" | editor save FILE | editor read FILE | '
                   "editor files", 1, 3, _editor),
    "msg": Verb('msg send "TO" "TEXT"', 3, 3, _msg),
    "calendar": Verb('calendar add "TITLE" YYYY-MM-DD [description=|location=|url=|invitees='
                     '"TEXT"]... | calendar delete "TITLE" [YYYY-MM-DD] | calendar list',
                     1, 7, _calendar),
    "map": Verb('map save "NAME" LATITUDE LONGITUDE | map delete "NAME" | map list', 1, 4, _map),
    "goto": Verb("goto start_page|todo|calendar|messages|map|codeeditor", 1, 1, _goto),
    "appstate": Verb("appstate [todo|codeeditor|messenger|calendar|map|settings|clock|_url]",
                     0, 1, _appstate),
    "wait": Verb("WAIT | DONE | FAIL (no-ops)", 0, 0, lambda d, a: ""),
}
"""The verbs, by name; a verb that is one expression on the desktop is written inline."""

__all__ = [
    "VERBS",
    "CommandResult",
    "CommandSyntaxError",
    "SandboxError",
    "parse",
    "run",
    "split_command",
]
