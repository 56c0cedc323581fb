"""What both worker clients share: a session, timeouts, the retry policy and error mapping.

Policy, stated once:

- Every request has a ``(connect, read)`` timeout; a hung guest must never stall a caller.
- Only idempotent calls are retried, and only on infrastructure failures (unreachable, timed
  out, 502/503/504). A call that changes the guest (execute, setup, evaluate, ...) is never
  repeated automatically: the first attempt may have run, and running it twice is worse than
  reporting the failure.
- requests/urllib3 exceptions never escape: each is mapped into :mod:`waa_client.errors` with
  ``raise ... from``, so callers handle one tree.

Retries follow the project's one policy (:mod:`waa_client.retry`: 0.5 s, doubling, at most
``backoff_max``). Tests turn the waits off with :func:`no_retry_waits` (or a client built with
``backoff_max=0``), so no test sleeps for real.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any, Self, TypeVar
from urllib.parse import urlsplit

import requests
import urllib3

from waa_client import retry
from waa_client.errors import (
    InvalidWorkerUrlError,
    MalformedResponseError,
    NotFoundError,
    RequestRejectedError,
    ServerError,
    WaaError,
    WorkerTimeoutError,
    WorkerUnreachableError,
)
from waa_client.retry import backoff_s, no_retry_waits
from waa_client.transport import LeanSession

__all__ = ["DEFAULT_BACKOFF_MAX", "FENCE_HEADER", "HttpClient", "backoff_s", "no_retry_waits"]

T = TypeVar("T")

_orjson_loads: Callable[[bytes], Any] | None
try:
    from orjson import loads as _orjson_loads
except ImportError:  # optional speed-up
    _orjson_loads = None

DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_READ_TIMEOUT = 60.0
DEFAULT_RETRIES = 3
DEFAULT_BACKOFF_MAX = 8.0
_BODY_SNIPPET = 200
FENCE_HEADER = "X-OA-VM-Fence"
"""The header carrying :attr:`HttpClient.fence_token`: the generation of the pool lease the
caller holds (``oa_vm.model.lease``). A worker that has seen a higher one refuses the request with a
409 before playing it, so a controller that woke from a freeze cannot act in the run that took
its pool over; a server that does not know the header ignores it."""

def _is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, WaaError) and exc.is_infrastructure


class HttpClient:
    """Base of :class:`~waa_client.waa.WaaClient` and :class:`~waa_client.scoring.ScoringClient`.

    Args:
        base_url: ``http://host:port`` of the server (a trailing slash is ignored).
        connect_timeout: Seconds to establish the TCP connection.
        read_timeout: Seconds to wait for the answer (overridable per call where it matters).
        retries: Extra attempts for idempotent calls after an infrastructure failure
            (so at most ``retries + 1`` requests).
        backoff_max: Cap, in seconds, of the exponential wait between attempts; 0 means none.

    Raises:
        InvalidWorkerUrlError: ``base_url`` is not an http(s) URL with a host.
    """

    def __init__(
        self,
        base_url: str,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        backoff_max: float = DEFAULT_BACKOFF_MAX,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidWorkerUrlError(
                f"worker URL {base_url!r} is not an http(s)://host:port URL; pass one like "
                "http://127.0.0.1:5000",
                url=base_url,
            )
        if connect_timeout <= 0 or read_timeout <= 0 or retries < 0 or backoff_max < 0:
            raise ValueError("timeouts must be > 0, retries and backoff_max >= 0")
        self.base_url = base_url.rstrip("/")
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.retries = retries
        self.backoff_max = backoff_max
        # Workers are reached directly or through our own tunnels: a proxy from the environment
        # must never apply, nor ~/.netrc credentials (LeanSession never looks them up). It
        # costs a fraction of the CPU per call of requests, urllib3 or httpcore (measured there).
        self._session = LeanSession()
        self.fence_token: str | None = None
        """Sent as :data:`FENCE_HEADER` with every request when set (a run sets it to its pool
        lease's generation)."""

    # -- lifecycle --------------------------------------------------------------------------------

    def close(self) -> None:
        """Close pooled connections. The client must not be used afterwards."""
        self._session.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_url!r})"

    # -- requests ---------------------------------------------------------------------------------

    def _url(self, path: str) -> str:
        return f"{self.base_url}/{path.lstrip('/')}"

    def _call(self, fn: Callable[[], T], *, idempotent: bool,
              deadline: float | None = None) -> T:
        """Run ``fn`` once, or under the retry policy (:mod:`waa_client.retry`) when the call
        is idempotent (no retry past ``deadline``)."""
        if not idempotent or self.retries == 0:
            return fn()
        return retry.call(fn, attempts=self.retries + 1, retryable=_is_retryable,
                          backoff_max=self.backoff_max, deadline=deadline)

    def _request(
        self,
        method: str,
        path: str,
        *,
        idempotent: bool,
        timeout: float | None = None,
        deadline: float | None = None,
        accept: tuple[int, ...] = (),
        **kwargs: Any,
    ) -> requests.Response:
        """Send one request (retried when ``idempotent``) and return a 2xx response.

        Statuses in ``accept`` are returned too, for the caller to interpret. With a
        ``deadline`` (``time.monotonic()``), or inside :func:`waa_client.retry.deadline_scope`,
        the whole call, retries and waits included, ends by it: each try's timeouts are cut to
        the time left (:func:`waa_client.retry.call`).

        Raises:
            WorkerUnreachableError: Refused, reset, unresolvable (``WorkerTimeoutError`` when
                timed out).
            ServerError: 5xx, with the server's message.
            NotFoundError: 404.
            RequestRejectedError: Any other 4xx.
        """
        url = self._url(path)
        read = self.read_timeout if timeout is None else timeout

        def once() -> requests.Response:
            timeouts = (retry.try_timeout(self.connect_timeout, deadline),
                        retry.try_timeout(read, deadline))
            if min(timeouts) <= 0:
                raise WorkerTimeoutError(f"{method} {url}: not sent, the caller's deadline has "
                                         "passed", url=url)
            response = self._send(method, url, timeouts, **kwargs)
            if response.status_code not in accept:
                raise_for_status(response)
            return response

        return self._call(once, idempotent=idempotent, deadline=deadline)

    def _send(
        self, method: str, url: str, timeout: tuple[float, float], **kwargs: Any
    ) -> requests.Response:
        if self.fence_token is not None:
            kwargs["headers"] = {FENCE_HEADER: self.fence_token}
        try:
            return self._session.request(method, url, timeout=timeout, **kwargs)
        except requests.exceptions.ConnectTimeout as e:
            raise WorkerTimeoutError(
                f"{method} {url}: no connection within {timeout[0]:g}s; check the worker is up "
                "and its tunnel is open",
                url=url,
            ) from e
        except requests.exceptions.ReadTimeout as e:
            raise WorkerTimeoutError(
                f"{method} {url}: no answer within {timeout[1]:g}s; the worker may be hung "
                "(check it, or raise the timeout for slow calls)",
                url=url, sent=True,
            ) from e
        except (
            requests.exceptions.ConnectionError,
            requests.exceptions.ChunkedEncodingError,
        ) as e:
            if _timed_out(e):
                # A timeout while reading the body surfaces as ConnectionError in requests.
                raise WorkerTimeoutError(
                    f"{method} {url}: answer not complete within {timeout[1]:g}s; the worker "
                    "may be hung (check it, or raise the timeout for slow calls)",
                    url=url, sent=True,
                ) from e
            raise WorkerUnreachableError(
                f"{method} {url}: worker unreachable ({_root_cause(e)}); check the worker is up "
                "and its tunnel is open",
                url=url,
            ) from e
        except requests.exceptions.InvalidURL as e:
            raise InvalidWorkerUrlError(f"{method} {url}: invalid URL ({e})", url=url) from e
        except requests.exceptions.RequestException as e:
            raise WorkerUnreachableError(
                f"{method} {url}: request failed ({_root_cause(e)})", url=url
            ) from e



def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, its causes, and exceptions carried in its args (urllib3 nests them there)."""
    pending: list[BaseException] = [exc]
    seen: set[int] = set()
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        pending.extend(a for a in current.args if isinstance(a, BaseException))
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                pending.append(linked)


def _timed_out(exc: BaseException) -> bool:
    # Not urllib3's TimeoutError base: NewConnectionError (refused) derives from it.
    return any(
        isinstance(e, (TimeoutError, urllib3.exceptions.ReadTimeoutError)) for e in _chain(exc)
    )


def _root_cause(exc: BaseException) -> str:
    """The innermost reason of a requests error, which names the real problem (refused, ...)."""
    innermost = list(_chain(exc))[-1]
    text = str(innermost) or type(innermost).__name__
    return text if len(text) <= _BODY_SNIPPET else text[:_BODY_SNIPPET] + "..."


def server_message(response: requests.Response) -> str:
    """The server's own error text: ``message`` (or ``error``) of a JSON body, else the body."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        for key in ("message", "error", "reason"):
            if isinstance(body.get(key), str) and body[key]:
                return str(body[key])
    text = response.text.strip()
    if not text:
        return response.reason or "no message"
    return text if len(text) <= _BODY_SNIPPET else text[:_BODY_SNIPPET] + "..."


def _is_waa_error(response: requests.Response) -> bool:
    """The body is the WAA server's own error answer, ``{"status": "error", "message": ...}``."""
    try:
        body = response.json()
    except ValueError:
        return False
    return (isinstance(body, dict) and body.get("status") == "error"
            and isinstance(body.get("message"), str))


def raise_for_status(response: requests.Response) -> None:
    """Map a non-2xx answer into the error tree (2xx passes through)."""
    status = response.status_code
    if 200 <= status < 300:
        return
    url = response.url
    method = response.request.method if response.request is not None else "request"
    message = server_message(response)
    where = f"{method} {url}"
    if status >= 500:
        hint = (
            "the worker or its tunnel is not ready; retry later or on another worker"
            if status in (502, 503, 504)
            else "see the worker's log"
        )
        raise ServerError(f"{where}: server error {status}: {message} ({hint})",
                          url=url, status=status, endpoint_answered=_is_waa_error(response))
    if status == 404:
        raise NotFoundError(f"{where}: not found (404): {message}", url=url, status=status)
    if status >= 400:
        raise RequestRejectedError(
            f"{where}: request rejected ({status}): {message}", url=url, status=status
        )
    raise MalformedResponseError(
        f"{where}: unexpected status {status}: {message}", url=url, status=status
    )


def _loads(content: bytes) -> Any:
    """JSON from bytes: ``orjson`` when installed (a 273 KB observation in 0.1 ms rather than
    0.2 to 0.3), the standard library for what orjson refuses (NaN, huge integers, UTF-16)."""
    if _orjson_loads is not None:
        try:
            return _orjson_loads(content)
        except ValueError:
            pass  # the standard parser decides: it accepts a little more, or raises
    return json.loads(content)


def json_body(response: requests.Response) -> Any:
    """Parse a JSON body, mapping anything else to :class:`MalformedResponseError`."""
    try:
        return _loads(response.content)
    except (ValueError, json.JSONDecodeError) as e:
        snippet = response.text[:80]
        raise malformed(response, f"expected JSON, got {snippet!r}; is this URL the right server?"
                        ) from e


def json_object(response: requests.Response) -> dict[str, Any]:
    """Parse a JSON object body (a dict), mapping anything else to MalformedResponseError."""
    body = json_body(response)
    if not isinstance(body, dict):
        raise malformed(response, f"expected a JSON object, got {type(body).__name__}; is this "
                        "URL the right server?")
    return body


def malformed(response: requests.Response, problem: str) -> MalformedResponseError:
    """The error for a 2xx ``response`` that is not what was expected: ``METHOD URL: problem``."""
    return MalformedResponseError(f"{response.request.method} {response.url}: {problem}",
                                  url=response.url, status=response.status_code)
