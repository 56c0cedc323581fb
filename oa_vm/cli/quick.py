"""``oa-vm pool-status`` and ``oa-vm pool-list`` without Typer, for a fast start.

These two are what people (and scripts polling a pool) run most after ``--help``; going through
Typer costs the import of Typer, Click and their dependencies, several times the interpreter's
own start-up. :func:`try_run` answers the plain forms of the two commands
(``[--name NAME | -n NAME | --pool NAME | --name=NAME | --pool=NAME] [--json] [--debug]``) with
the same API calls and the same output (:mod:`oa_vm.cli.pool_views`) as the Typer commands; any
other form (``--help``, ``--refresh``, a typo, a pool named twice) returns None and the caller
hands the command to Typer, which owns the usage messages.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence

from oa_vm.errors import PoolNotFoundError

# typing is not imported at run time (start-up time); mypy reads this as typing's.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from oa_vm.errors import CorruptRecordError
    from oa_vm.model.state import PoolRecord

PROG = "oa-vm"
COMMANDS = ("pool-status", "pool-list")


def parse(argv: Sequence[str]) -> tuple[str, str | None, bool, bool] | None:
    """``(command, name, json, debug)`` for a plain form of the two commands, else None."""
    if not argv or argv[0] not in COMMANDS:
        return None
    command, rest = argv[0], list(argv[1:])
    name: str | None = None
    as_json = debug = False
    while rest:
        token = rest.pop(0)
        if token == "--json":
            as_json = True
        elif token == "--debug":
            debug = True
        elif command != "pool-status" or name is not None:
            return None  # a pool named twice: the full path's rule (clikit.target_option)
        elif token in ("--name", "-n", "--pool") and rest:
            name = rest.pop(0)
            if name.startswith("-"):
                return None
        elif token.startswith(("--name=", "--pool=")):
            name = token.partition("=")[2]
        else:
            return None
    if name is not None:
        from oa_vm.kit.validate import name_problem

        if name_problem("pool", name):
            return None  # the full path words the error, with every other validation
    return command, name, as_json, debug


def _pool_status(name: str | None) -> PoolRecord:
    """:func:`oa_vm.api.pool_status`, without loading the provider when nothing changed."""
    from oa_vm.model import state
    from oa_vm.model.stacks import backend_dir

    names = state.list_names()
    if name is None and not names and not backend_dir().is_dir():  # no record, no cloud state:
        raise PoolNotFoundError(None)  # api.resolve_name's answer, before the facts' imports
    from oa_vm.clouds import facts, load_pool, pool_names
    from oa_vm.clouds.local.proc_check import record_is_current

    if name is not None:
        state.validate_pool_name(name)  # as api.resolve_name: "" is refused, not "the only pool"
    else:
        names = pool_names()  # a stack whose record was removed by hand is a pool too
    if name is not None or len(names) == 1:
        record = load_pool(names[0] if name is None else name)
        if not facts(record.cloud).simulated or record_is_current(record):
            return record
    from oa_vm import api

    return api.pool_status(name)  # refreshes, and words the errors (no pool, several pools)


def _list_pools() -> list[PoolRecord | CorruptRecordError]:
    """:func:`oa_vm.api.list_pools`, without loading the provider when nothing changed."""
    from oa_vm.clouds import every_pool, facts
    from oa_vm.model.state import PoolRecord

    items = list(every_pool())
    if not items:
        return items
    from oa_vm.clouds.local.proc_check import record_is_current

    if all(not isinstance(i, PoolRecord) or not facts(i.cloud).simulated or record_is_current(i)
           for i in items):
        return items
    from oa_vm import api

    return api.list_pools()


def print_json(data: Any) -> None:
    """As :func:`oa_vm.kit.clikit.print_json` (which would load the traceback module)."""
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def try_run(argv: Sequence[str]) -> int | None:
    """Run ``argv`` if it is a plain form of a fast command; the exit status, or None."""
    parsed = parse(argv)
    if parsed is None:
        return None
    command, name, as_json, debug = parsed
    from oa_vm.kit.env_knobs import knob_problem

    knob = knob_problem()
    if knob is not None:  # refused as run_main refuses it, for every command alike
        return _failed("error: ", knob, 2, as_json)
    debug = debug or os.environ.get("OA_VM_DEBUG") == "1"
    try:
        if command == "pool-status":
            record = _pool_status(name)  # no pool: refused before the views' imports
            from oa_vm.cli import pool_views

            if as_json:
                print_json(pool_views.status_json(record))
            else:
                print(pool_views.status_text(record))
        else:
            items = _list_pools()
            from oa_vm.cli import pool_views

            for line in pool_views.unreadable_lines(items):
                print(line, file=sys.stderr)
            if as_json:
                print_json(pool_views.list_json(items))
            else:
                print(pool_views.list_text(items))
    except KeyboardInterrupt:
        return _failed("", "interrupted", 130, as_json)
    except Exception as exc:  # the same one-line policy as oa_vm.kit.clikit
        if debug:
            import traceback

            traceback.print_exception(exc)
        from oa_vm.kit.redact import redact_text

        module = type(exc).__module__.split(".")[0]
        message = redact_text(str(exc))
        if module in ("oa_vm", "waa_client", "evals", "infra"):
            return _failed("error: ", message, int(getattr(exc, "exit_code", 1)), as_json)
        return _failed("unexpected error: ", f"{type(exc).__name__}: {message} (run again "
                       "with --debug for details)", 1, as_json)
    return 0


def _failed(prefix: str, message: str, code: int, as_json: bool) -> int:
    """As ``clikit``'s failure rule: one line on stderr (and the JSON error under ``--json``).
    The rule's module is imported only here: it compiles patterns, and start-up never fails."""
    from oa_vm.kit.error_line import one_line, say_failure

    return say_failure(one_line(f"{PROG}: {prefix}{message}"), message, code, json_out=as_json)
