"""What every oa-vm console script shares: one-line errors, ``--debug``, Ctrl-C, JSON output.

Known errors (the project's exception trees) print as one line on stderr and exit with their
``exit_code`` (default 1); anything else also prints one line, naming ``--debug``, which shows the
traceback. Ctrl-C exits 130, as shells expect. Under ``--json``, a command that fails before it
printed its document prints the error as one (:func:`oa_vm.kit.error_line.say_failure`).
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from oa_vm.kit.env_knobs import knob_problem
from oa_vm.kit.error_line import one_line, say_failure
from oa_vm.kit.lazy import typer
from oa_vm.kit.redact import redact_text
from oa_vm.kit.stdio import ensure_std_streams, pipe_safe_stdout

EXIT_INTERRUPTED = 130


_typed_args: list[str] | None = None


def was_given(ctx: Any, name: str, *, env: bool = False) -> bool:
    """Whether parameter ``name`` of the click/typer context ``ctx`` was given on the command
    line (or, with ``env``, from the environment) rather than left at its default."""
    source = ctx.get_parameter_source(name)
    # by name: typer vendors click, and its enum is not public
    return source is not None and source.name in (
        ("COMMANDLINE", "ENVIRONMENT") if env else ("COMMANDLINE",))


def typed_name(names: Sequence[str], args: Sequence[str] | None = None) -> str | None:
    """Which of an option's ``names`` the command line used last (``--ttl`` in ``--ttl=2h``), or
    ``None`` when it used none of them (a default; a command line :func:`run_main` did not run).

    Click does not record which alias matched; errors and options that must name the option as
    the user typed it (``--ttl``, not ``--ttl-hours``) read the command line here.
    """
    found = None
    tokens = args if args is not None else _typed_args if _typed_args is not None else ()
    for token in tokens:
        if token == "--":
            break
        for name in names:
            if token == name or (name.startswith("--") and token.startswith(name + "=")):
                found = name
    return found


def typed_values(names: Sequence[str], args: Sequence[str] | None = None) -> list[str]:
    """Every value the command line gave to the option called ``names`` (``--x v``, ``--x=v``,
    ``-xv``), in order; Click keeps only the last of a single-valued option's."""
    tokens = args if args is not None else _typed_args if _typed_args is not None else ()
    values = []
    for i, token in enumerate(tokens):
        if token == "--":
            break
        for name in names:
            if token == name and i + 1 < len(tokens):
                values.append(tokens[i + 1])
            elif token.startswith(name + "=" if name.startswith("--") else name) and (
                    len(token) > len(name)):
                values.append(token[len(name) + name.startswith("--"):])
    return values


def target_option(*names: str, what: str, help: str, **options: Any) -> Any:
    """``typer.Option(*names, help=help, **options)`` for an option naming what its command acts
    on (a pool, an image, a worker, a run folder). Given two different values (``-n a -n b``),
    the command is refused before it runs (exit 2, one line naming both), where Click would keep
    the last silently: one pool paused, the other left billing. The same value twice passes, as
    it asks for one thing. The values are read from the command line :func:`run_main` runs (as
    :func:`typed_name` reads it). Options that only tune (``--ttl``, ``--results-dir``) keep
    Click's last-wins, which shell aliases rely on (``alias up='oa-vm pool-create --ttl 2h'``);
    an option taking several targets is declared ``list[str]`` and refuses a value given twice
    with :func:`oa_vm.kit.validate.twice_problem` (``pool-cleanup --pool``, ``run --pool``)."""
    def one_value(ctx: Any, param: Any, value: Any) -> Any:
        given = list(dict.fromkeys(typed_values([*param.opts, *param.secondary_opts])))
        if len(given) > 1:
            from oa_vm.errors import InvalidInputError

            option = typed_name(param.opts) or param.opts[0]
            raise InvalidInputError(
                f"{option} is given more than once ({', '.join(given)}): {ctx.info_name} takes "
                f"one {what}; run it once for each")
        return value

    return typer.Option(*names, help=help, callback=one_value, **options)


def _debug_requested(argv: list[str]) -> bool:
    return "--debug" in argv or os.environ.get("OA_VM_DEBUG") == "1"


def debug_requested() -> bool:
    """Whether this command was given ``--debug`` (or ``OA_VM_DEBUG=1``): a command that has
    more to show than its error's traceback (an agent's, kept in a record) shows it then."""
    return _debug_requested(sys.argv[1:])


PROJECT_PACKAGES = ("oa_vm", "waa_client", "evals", "infra")


def _is_known(exc: BaseException, known: tuple[type[BaseException], ...]) -> bool:
    """An error of the project's trees: reported as one line without a traceback.

    Matching by defining package, besides ``known``, spares the CLI from importing every
    package's error module (and its dependencies) at start-up.
    """
    module = type(exc).__module__.split(".")[0]
    return isinstance(exc, known) or module in PROJECT_PACKAGES


class RedactingFormatter(logging.Formatter):
    """A log formatter whose lines (exception text included) pass :func:`redact_text`."""

    def format(self, record: logging.LogRecord) -> str:
        """The formatted line, credentials masked."""
        return redact_text(super().format(record))


class _StderrNow(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to the standard error of the moment (as Python's last-resort handler does), not
    to the one it was made with, which a later command in the same process may have closed; and
    a line it cannot write is dropped, never reported by ``logging`` with its arguments
    unmasked."""

    def emit(self, record: logging.LogRecord) -> None:
        """Write ``record`` to the current ``sys.stderr``."""
        self.stream = sys.stderr
        super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:
        """Drop the line: stderr is where it would have said so."""


def _log_redacted() -> None:
    """Log lines go to stderr as Python's last-resort handler prints them (warnings and worse),
    through the one redaction (:mod:`oa_vm.kit.redact`)."""
    root = logging.getLogger()
    if any(isinstance(h.formatter, RedactingFormatter) for h in root.handlers):
        return
    handler = _StderrNow(sys.stderr)
    handler.setFormatter(RedactingFormatter("%(message)s"))
    handler.setLevel(logging.WARNING)
    root.addHandler(handler)


def run_main(
    app: Callable[..., Any], prog: str, known: tuple[type[BaseException], ...] = ()
) -> NoReturn:
    """Run a Typer/Click ``app`` with the project's error policy, then exit.

    ``--debug`` may appear anywhere on the command line; it is removed before the app parses the
    arguments, so every sub-command accepts it.
    """
    ensure_std_streams()  # started with a stream closed (<&-, >&-): the null device instead
    argv = sys.argv[1:]
    debug = _debug_requested(argv)
    pipe_safe_stdout()
    _log_redacted()
    args = [a for a in argv if a != "--debug"]
    global _typed_args
    _typed_args = args
    command = typer.main.get_command(app) if isinstance(app, typer.Typer) else app
    _refuse_blank_values(command, prog, args)
    knob = knob_problem()
    if knob is not None:  # a bad timing knob: refused before the command, not ignored in it
        _failed(f"{prog}: error: ", knob, EXIT_USAGE)
    _finite_floats(command)
    try:
        # Outside standalone mode Click returns (not raises) the code of an Exit, Ctrl-C's
        # included, so the returned value is the exit status.
        returned = command(args=args, prog_name=prog, standalone_mode=False)
    except KeyboardInterrupt:
        _failed(f"{prog}: ", "interrupted", EXIT_INTERRUPTED)
    except SystemExit:
        raise
    except BaseException as exc:  # the one place every error is turned into a line
        _report(exc, prog, known, debug)
    code = returned if isinstance(returned, int) else 0
    if code == EXIT_INTERRUPTED:
        _failed(f"{prog}: ", "interrupted", code)
    sys.exit(code)


EXIT_USAGE = 2


def blank_value_problem(args: Sequence[str]) -> str | None:
    """Why ``args`` cannot be run as typed: a value that is empty or only spaces (``--name ""``,
    ``--results-dir=``, a blank argument), or ``None``.

    No option of the console scripts means anything by an empty value, and several would
    otherwise read it as "not given" and fall back to a default (a pool named ``waa-pool``, the
    current folder as the results folder): refused, as a typo would be.
    """
    for i, token in enumerate(args):
        if token == "--":
            break
        option, equals, value = token.partition("=")
        if token.startswith("--") and equals and not value.strip():
            return f"{option} was given an empty value; give one or leave {option} out"
        if token.strip():
            continue
        before = args[i - 1] if i else ""
        if before.startswith("-") and "=" not in before:
            return f"{before} was given an empty value; give one or leave {before} out"
        return "an argument is empty; give a value or leave it out"
    return None


def _command_path(command: Any, prog: str, args: Sequence[str]) -> str:
    """``oa-vm pool-create``: the program and the sub-commands ``args`` name."""
    path = [prog]
    for token in args:
        commands = getattr(command, "commands", None)
        if isinstance(commands, dict) and token in commands:
            command = commands[token]
            path.append(token)
        elif not token.startswith("-"):
            break
    return " ".join(path)


def _refuse_blank_values(command: Any, prog: str, args: Sequence[str]) -> None:
    """Exit 2 with one line when :func:`blank_value_problem` finds an empty value."""
    problem = blank_value_problem(args)
    if problem is not None:
        where = _command_path(command, prog, args)
        _failed(f"{prog}: error: ", f"{problem} (see '{where} --help')", EXIT_USAGE)


def _finite_floats(command: Any) -> None:
    """Make every option and argument of ``command`` and its sub-commands refuse ``nan`` and
    ``inf`` where it takes a number, naming the option (Python's ``float()``, and so the
    number options, take both).

    A limit of ``inf`` means no limit and ``nan`` compares false with everything, so either
    would pass a range check written as ``x < 0`` and end in a record as invalid JSON; one rule
    here, run on the parsed value, covers every number option, those added later too.
    """
    for param in getattr(command, "params", ()):
        if getattr(param, "_finite", False):
            continue
        given = param.callback

        def finite(ctx: Any, par: Any, value: Any, given: Any = given) -> Any:
            values = value if isinstance(value, tuple | list) else (value,)
            for number in values:
                if isinstance(number, float) and not math.isfinite(number):
                    raise typer.BadParameter(f"must be a finite number, not {number}", ctx, par)
            return given(ctx, par, value) if given is not None else value

        param.callback = finite
        param._finite = True
    for sub in (getattr(command, "commands", None) or {}).values():
        _finite_floats(sub)


def _report(
    exc: BaseException, prog: str, known: tuple[type[BaseException], ...], debug: bool
) -> NoReturn:
    if isinstance(exc, typer.Abort):
        _failed(f"{prog}: ", "aborted", EXIT_INTERRUPTED)
    if isinstance(exc, typer.Exit):
        sys.exit(exc.exit_code)
    show = getattr(exc, "show", None)
    if callable(show) and hasattr(exc, "exit_code") and not _is_known(exc, known):
        # Click's usage errors ('abc' is not a valid integer...): one line and a pointer to
        # --help instead of Click's multi-line box.
        message = _as_typed(exc, _typed_args or [])
        # Point at the help of the command that was mistyped, not only the program's.
        command = getattr(getattr(exc, "ctx", None), "command_path", None) or prog
        _failed(f"{prog}: error: ", f"{message} (see '{command} --help')", int(exc.exit_code))
    if debug and getattr(exc, "debug_traceback", True):
        # a traceback quotes messages and URLs (a worker's capability): masked like the line;
        # an error whose evidence the command printed itself (an agent's own traceback) says
        # so with debug_traceback = False, so --debug shows one traceback, not the harness's too
        print(redact_text("".join(traceback.format_exception(exc))), end="", file=sys.stderr)
    if _is_known(exc, known):
        message = redact_text(str(exc))
        # an error naming one item a line keeps its lines; any other is one line, whatever a
        # quoted value held
        _failed(f"{prog}: error: ", message, int(getattr(exc, "exit_code", 1)),
                by_line=getattr(exc, "by_line", False))
    _failed(f"{prog}: unexpected error: ", f"{type(exc).__name__}: {redact_text(str(exc))} "
            "(run again with --debug for details)", 1)


def _failed(prefix: str, message: str, code: int, *, by_line: bool = False) -> NoReturn:
    """Exit ``code`` saying ``prefix + message`` as one line on stderr (a line for each line of
    a ``by_line`` message) and, under ``--json`` before any document, as the JSON error
    (:func:`oa_vm.kit.error_line.say_failure`)."""
    parts = message.split("\n") if by_line else [message]
    line = "\n".join(one_line(part) for part in [prefix + parts[0], *parts[1:]])
    json_out = "--json" in (_typed_args or ()) and not getattr(sys.stdout, "written", False)
    sys.exit(say_failure(line, message, code, json_out=json_out))


_NOT_A = {"Input should be a valid integer": "a whole number",
          "Input should be a valid number": "a number"}
_BOUND = re.compile(r"Input should be (greater|less) than( or equal to)? (\S+)$")
"""A range check's wording (``--workers`` of ``mock``, ``--runs``), said as every other bound
is: ``--workers must be at most 16, not 99``."""
_BOUND_WORDS = {("greater", True): "at least", ("less", True): "at most",
                ("greater", False): "more than", ("less", False): "less than"}


def _typed_value(name: str, args: Sequence[str]) -> str | None:
    """The value given last to option ``name`` on the command line (``--x v`` or ``--x=v``)."""
    values = typed_values([name], args)
    return values[-1] if values else None


def _as_typed(exc: BaseException, args: Sequence[str]) -> str:
    """A usage error's message naming the option as the user typed it: ``--ttl must be at most
    365d, not 9999d`` (a sentence of the option's parser, which starts ``must``/``needs``), or
    ``--ttl: 'soon' is not a duration ...``, where Click would name every alias
    (``Invalid value for '--ttl' / '--ttl-hours': ...``)."""
    param = getattr(exc, "param", None)
    names = [*getattr(param, "opts", ()), *getattr(param, "secondary_opts", ())]
    message = str(getattr(exc, "message", ""))
    if not names or not message or getattr(exc, "param_hint", None) is not None:
        return exc.format_message() if hasattr(exc, "format_message") else str(exc)
    typed = typed_name(names, args) or names[0]
    value = _typed_value(typed, args)
    for phrase, kind in _NOT_A.items():  # the type checks' wording, said of the typed value
        if message.startswith(phrase):
            message = f"must be {kind}" + (f", not {value!r}" if value is not None else "")
    bound = _BOUND.match(message)
    if bound is not None:
        side, equal, limit = bound.groups()
        message = f"must be {_BOUND_WORDS[side, bool(equal)]} {limit}" + (
            f", not {value}" if value is not None else "")
    if message.startswith(("must ", "needs ")):
        return f"{typed} {message}"
    return f"{typed}: {message}"


def print_json(data: Any) -> None:
    """Print ``data`` as indented JSON on stdout (what ``--json`` flags emit)."""
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def plain_typer(help: str, **options: Any) -> typer.Typer:
    """A Typer app as every command group of the console scripts is made: no shell completion,
    no Rich markup, no Rich tracebacks (errors are one line, :func:`run_main`)."""
    return typer.Typer(help=help, add_completion=False, pretty_exceptions_enable=False,
                       rich_markup_mode=None, **options)
