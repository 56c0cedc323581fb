"""The evals exception tree.

Every error a user of ``openadapt-evals`` can cause or meet derives from :class:`EvalsError`; the
CLI prints its message as one line and exits with ``exit_code``. Messages say what is wrong and
what to do next. Exit codes (documented in ``docs/sweeps.md``): 1 other failure, 2 bad input,
3 stopped at the budget cap.

Errors *inside* a task (an agent that raises, a setup step that fails) are not raised out of a run:
they become that task's final record. The classes below that describe them
(:class:`AgentError`) are raised by agents and caught by the agent loop.
"""

from __future__ import annotations

import os
from collections.abc import Sequence


class EvalsError(Exception):
    """Base of every error ``openadapt-evals`` reports to a user."""

    exit_code = 1


class InvalidRunInputError(EvalsError):
    """A flag, task selection, agent or folder given by the user is not acceptable.

    Raised before anything is dispatched; the run folder is left as it was.
    """

    exit_code = 2


def _listing(items: Sequence[str], limit: int = 20) -> str:
    shown = ", ".join(items[:limit])
    more = len(items) - limit
    return f"{shown} (and {more} more)" if more > 0 else shown


class UnknownAgentError(InvalidRunInputError):
    """``--agent`` names no built-in agent and is not an importable ``module:Class``."""

    def __init__(self, spec: str, known: Sequence[str], reason: str | None = None) -> None:
        self.spec = spec
        self.known = list(known)
        detail = f" ({reason})" if reason else ""
        super().__init__(
            f"unknown agent {spec!r}{detail}; use one of {', '.join(self.known)} "
            "or a third-party agent as 'module:Class'"
        )


class MissingBundlesError(InvalidRunInputError):
    """The replay agent has no workflow bundle for some selected tasks."""

    def __init__(self, folder: str, task_ids: Sequence[str]) -> None:
        self.folder = folder
        self.task_ids = list(task_ids)
        super().__init__(
            f"{len(self.task_ids)} selected task(s) have no {folder}/<task_id>/workflow.json: "
            f"{_listing(self.task_ids)}; add the bundles or narrow --tasks"
        )


class RunExistsError(InvalidRunInputError):
    """A run folder with that name exists and ``--resume`` was not given."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(
            f"run folder {path} already exists; continue it with --resume "
            "or choose another --run-name"
        )


NOT_GIVEN = "(none)"
"""How a refusal shows a setting the run was started without (``evals.run.settings.shown``)."""


class ResumeMismatchError(InvalidRunInputError):
    """``--resume`` was asked with a setting other than the run's own (a task selection, an
    agent, a max steps...; :mod:`evals.run.settings`)."""

    def __init__(self, path: str, option: str, recorded: str, given: str, *,
                 fix: str = "start a new run with another --run-name") -> None:
        self.path = path
        self.option = option
        # the way back, as something to type: not "with --variations '(none)'" or a hash
        if recorded == NOT_GIVEN:
            again = f"resume it without {option}"
        elif recorded.startswith("sha256 "):
            what = option if option.startswith("the ") else f"the {option} file"
            again = f"resume it with {what} it started with ({recorded})"
        else:
            again = f"resume it with {option} {recorded!r}"
        super().__init__(
            f"run {path} was started with {option} {recorded!r}, not {given!r}; {again} "
            f"or {fix}"
        )


class RunLockedError(EvalsError):
    """Another process is running the same run folder right now."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(
            f"run {path} is in use by another openadapt-evals process; wait for it to end "
            "(or stop it), then --resume"
        )


class RunInterrupted(EvalsError):
    """Ctrl-C (or SIGTERM) stopped the run; what finished is kept and ``--resume`` continues."""

    exit_code = 130

    def __init__(self, run_dir: str | None) -> None:
        self.run_dir = run_dir
        # its tasks, agent and settings are the run's own: --resume and its name are enough
        where = (
            f"finished tasks are kept in {run_dir}; continue with --resume --run-name "
            f"{os.path.basename(run_dir)}"
            if run_dir
            else "no task had started"
        )
        super().__init__(f"interrupted; {where}")


class AgentError(EvalsError):
    """An agent could not produce an action (raised by agents; recorded as ``error/agent``)."""


class AgentOutOfTime(AgentError):
    """An agent's call gave up for the attempt's deadline (:func:`waa_client.retry.deadline_scope`):
    a model API still rate-limiting, or not answering, when the task's time ran out, or whose
    next wait would have passed it (the message says which); the agent loop records it as
    ``error/timeout``, retried as any timeout, not ``error/agent``."""


class BudgetExceeded(EvalsError):
    """The run stopped dispatching at ``--max-cost-usd``; the tasks left were recorded not run."""

    exit_code = 3

    def __init__(self, cap_usd: float, spent_usd: float, not_run: Sequence[str]) -> None:
        self.cap_usd = cap_usd
        self.spent_usd = spent_usd
        self.not_run = list(not_run)
        super().__init__(
            f"stopped at the budget cap ${cap_usd:.4f} (spent ${spent_usd:.4f}); "
            f"{len(self.not_run)} task(s) not run: {_listing(self.not_run)}; "
            "raise --max-cost-usd and --resume to run them"
        )


class AgentFailed(EvalsError):
    """The run went to the end, but the agent raised in most of its tasks (or, with
    ``--fail-on-errors``, in every task that ended in error): the agent's failure, not the pool's.

    Exit code 4, as :class:`RunUnhealthy`: the figures are not a result either way.
    """

    exit_code = 4
    debug_traceback = False
    """``--debug`` printed the agent's own traceback already; the harness's adds nothing."""

    def __init__(self, run_dir: str, what: str) -> None:
        self.run_dir = run_dir
        self.what = what
        # not --rerun-errors: it reruns what was not the agent's fault, and keeps agent errors
        super().__init__(
            f"run {run_dir}: {what}; {where_to_look(run_dir)}; "
            "fix the agent, then run it again under a new --run-name"
        )


class SshPathLost(EvalsError):
    """The SSH server in front of a run's workers (their path) stopped answering for longer
    than the run waits for it (:mod:`evals.run.paths`), and no worker behind another path is
    left: the run stops, no worker blamed, its unfinished tasks left for ``--resume``.

    Exit code 4, as :class:`RunUnhealthy`: the pool was not usable.
    """

    exit_code = 4

    def __init__(self, endpoint: str, workers: Sequence[str], waited: str, last_error: str,
                 run_dir: str) -> None:
        self.endpoint = endpoint
        self.workers = list(workers)
        self.waited = waited
        self.last_error = last_error
        self.run_dir = run_dir
        super().__init__(
            f"SSH endpoint {endpoint} (workers {', '.join(workers)}) did not answer for {waited} "
            f"({last_error}); finished tasks are kept in {run_dir}; once it answers again, "
            f"continue with --resume --run-name {os.path.basename(run_dir)}"
        )


class RunUnhealthy(EvalsError):
    """The run went to the end, but its result is not to be trusted: most tasks ended in error,
    or every worker was lost (or, with ``--fail-on-errors``, any task ended in error).

    Exit code 4, distinct from a crash (1) and a budget stop (3), so CI can tell them apart.
    """

    exit_code = 4

    def __init__(self, run_dir: str, reason: str, *, pool_removed: bool = False) -> None:
        self.run_dir = run_dir
        self.reason = reason
        import shlex
        from pathlib import Path

        # not --resume: the run is finished, and a resume reruns nothing
        path = Path(run_dir)
        rerun = shlex.join(["openadapt-evals", "run", "--rerun-errors", path.name,
                            "--results-dir", str(path.parent)])
        # a sweep removed its pool: the rerun needs one made first ("there are no pools")
        where = ("make a pool ('oa-vm pool-create ...'), then rerun its errors on it: "
                 f"'{rerun} --pool P'" if pool_removed else
                 f"rerun its errors on a healthy pool: '{rerun}' (--pool P to choose the pool)")
        super().__init__(
            f"run {run_dir} is unhealthy: {reason}; see the run page and the workers' logs, "
            f"then {where}"
        )


def where_to_look(run_dir: str) -> str:
    """Where a raising agent's traceback is kept (the hint after
    :func:`evals.results.agent_failures.describe`)."""
    from pathlib import Path

    path = Path(run_dir)
    return (f"see its traceback in {path}/tasks/<task>/execution.json, on the run page "
            f"(`openadapt-evals view {path.name} --results-dir {path.parent}`) or with --debug")
