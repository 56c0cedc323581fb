"""The waa_client exception tree.

Every error this package raises derives from :class:`WaaError` and carries data (``url``,
``status``, ``message``) so callers can decide without parsing text. The one question a sweep
asks of an error is :attr:`WaaError.is_infrastructure`: True means "the worker or the path to it
failed" (release the task, try elsewhere); False means "the worker answered and said no" (record
the outcome). Messages say what is wrong and what to do next, so a CLI can print them as one line.

``exit_code`` follows the project's CLI convention: 1 for failures met while working, 2 for bad
input (a selection naming unknown tasks, a key file with wrong permissions, a malformed index).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

INFRASTRUCTURE_STATUSES = frozenset({502, 503, 504})


class WaaError(Exception):
    """Base of every error raised by waa_client.

    Attributes:
        message: What went wrong, in one line.
        url: The URL (or ``ssh://`` address) involved, when there is one.
        status: The HTTP status the server answered with, when it answered.
        is_infrastructure: True when the failure is in the worker's reachability rather than
            in what it answered; such failures are worth retrying on another worker.
        exit_code: Exit status a CLI should use when this error ends it.
    """

    is_infrastructure: bool = False
    exit_code: int = 1

    def __init__(self, message: str, *, url: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.url = url
        self.status = status


# --- HTTP: the worker's WAA server and scoring server -------------------------------------------


class WorkerUnreachableError(WaaError):
    """No answer from the worker: connection refused or reset, name not resolved, timed out."""

    is_infrastructure = True


class WorkerTimeoutError(WorkerUnreachableError):
    """The worker did not connect or answer within the timeout.

    Attributes:
        sent: True when the time ran out waiting for the answer to a request already sent (a
            read timeout: the worker took the request and was still at it), False when no
            connection was made. What it means is the caller's to decide: a hung worker and
            an action that takes longer than the timeout both look like this.
    """

    def __init__(
        self, message: str, *, url: str | None = None, status: int | None = None,
        sent: bool = False,
    ) -> None:
        super().__init__(message, url=url, status=status)
        self.sent = sent


class ServerError(WaaError):
    """The server answered 5xx; ``message`` is the server's own when its JSON body had one.

    502/503/504 come from whatever stands in front of the server (a tunnel, a proxy, a server
    still starting), so they count as infrastructure; any other 5xx is the server failing at the
    request itself.
    """

    def __init__(
        self,
        message: str,
        *,
        url: str | None = None,
        status: int | None = None,
        endpoint_answered: bool = False,
    ) -> None:
        super().__init__(message, url=url, status=status)
        self.is_infrastructure = status in INFRASTRUCTURE_STATUSES
        #: True when the body was the WAA server's own JSON error answer
        #: (``{"status": "error", "message": ...}``): the endpoint ran and reported a failure
        #: (on ``/execute_windows``, the agent's code raising), rather than the server failing.
        self.endpoint_answered = endpoint_answered


class RequestRejectedError(WaaError):
    """The server answered 4xx: the request itself is wrong (unknown task, bad parameters)."""


class NotFoundError(RequestRejectedError):
    """The server answered 404: the task, file or window asked for does not exist."""


class SetupFailedError(RequestRejectedError):
    """The scoring server's ``/setup`` answered 422: a setup step failed.

    Attributes:
        results: The server's per-step results, ``[{"type", "status", "error"?}]``.
    """

    def __init__(
        self,
        message: str,
        *,
        url: str | None = None,
        status: int | None = 422,
        results: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(message, url=url, status=status)
        self.results: list[dict[str, Any]] = results or []


class MalformedResponseError(WaaError):
    """The server answered 2xx with something that is not the expected JSON or PNG."""


class InvalidWorkerUrlError(WaaError):
    """A base URL given to a client is not an ``http(s)://host[:port]`` URL."""

    exit_code = 2


# --- SSH tunnels -------------------------------------------------------------------------------


class TunnelError(WaaError):
    """Base of SSH tunnel errors."""


class KeyFileError(TunnelError):
    """The pool's private key file is missing, unreadable, not a key, or too open."""

    exit_code = 2

    def __init__(self, message: str, *, path: Path) -> None:
        super().__init__(message)
        self.path = path


class HostKeyMismatchError(TunnelError):
    """The worker offered a host key different from the one remembered for it.

    Never accepted silently: either the worker was recreated at the same address (remove the
    remembered key, as the message says) or something is intercepting the connection.
    """

    def __init__(
        self, message: str, *, host: str, known_fingerprint: str, offered_fingerprint: str
    ) -> None:
        super().__init__(message, url=f"ssh://{host}")
        self.host = host
        self.known_fingerprint = known_fingerprint
        self.offered_fingerprint = offered_fingerprint


class SshUnreachableError(TunnelError):
    """The SSH port cannot be reached, or the SSH session could not be set up or was lost."""

    is_infrastructure = True


class SshAuthenticationError(TunnelError):
    """The SSH server refused the pool's key."""


class TunnelNotStartedError(TunnelError):
    """A tunnel's local URLs were asked for before ``start()``."""


# --- Task catalog ------------------------------------------------------------------------------


class CatalogError(WaaError):
    """A task folder, index file, task file or selection is not usable."""

    exit_code = 2


class InputError(CatalogError):
    """A file or argument the user gave is unusable as input: not a regular file, too large,
    not UTF-8, a JSON/YAML document with a duplicate key, an alias or deep nesting, or an ID
    that cannot name a folder (see :mod:`waa_client.inputs`)."""


class _TaskIdsError(CatalogError):
    """A selection error that lists every task ID at fault in ``task_ids``."""

    def __init__(self, message: str, *, task_ids: list[str]) -> None:
        super().__init__(message)
        self.task_ids = task_ids


class UnknownTaskError(_TaskIdsError):
    """A selection names task IDs the catalog does not hold; ``task_ids`` lists every one."""


class SyntheticTaskError(_TaskIdsError, ValueError):
    """A live selection names synthetic IDs (``notepad_1``, ``mock_*``); lists every one.

    Also the reference tool's error of that name (a ``ValueError``, made from one task ID:
    ``SyntheticTaskError("notepad_1")``, with ``task_id``), so code written for it catches
    and raises it unchanged.
    """

    def __init__(self, message: str, *, task_ids: list[str] | None = None) -> None:
        if task_ids is None:  # the reference's form: the one synthetic task ID
            task_ids = [message]
            message = (f"task ID {message!r} names a mock/toy task, not a WAA task: a live "
                       "worker runs real WAA task IDs; use WAAMockAdapter for synthetic tasks")
        super().__init__(message, task_ids=task_ids)

    @property
    def task_id(self) -> str:
        """The first synthetic ID (the reference's error names one)."""
        return self.task_ids[0]
