"""Who may talk to a simulated worker, and how much: its secret URL prefix and its limits.

A worker listens on loopback, where every local user can connect. Its URLs therefore carry a
secret as their first path segment (a capability, ``http://127.0.0.1:PORT/<secret>/probe``):
WAA's own client only appends paths to the base URL it is given, so it keeps working unchanged
when given ``http://127.0.0.1:PORT/<secret>``. A request whose path does not start with the
secret is refused before its body is read or any fault knob counts it.

The limits keep one worker cheap whatever its clients do: bodies over ``max_body`` bytes are
refused with 413 before being read, at most ``max_connections`` connections are served at once
(the next ones get 503 at once, never a thread; a connection counts only once its request line
has shown the secret, see :mod:`infra.local.server`), and a request that has not arrived whole
(line, headers and body) within ``read_timeout`` seconds has its connection closed.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import os
import re
import secrets
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

SECRET_PATTERN = re.compile(r"[A-Za-z0-9_-]{16,128}")
"""A secret is one URL path segment that needs no quoting, long enough not to be guessed."""

# WAA's task files are downloaded from raw.githubusercontent.com, which serves files of at most
# 100 MiB, then uploaded to the guest with /setup/upload: the default leaves room for the
# largest of them plus the multipart envelope.
DEFAULT_MAX_BODY = 128 * 1024 * 1024
DEFAULT_MAX_CONNECTIONS = 32
DEFAULT_READ_TIMEOUT = 60.0


class SecretError(ValueError):
    """A secret (or the file holding it) that cannot be used; the message says what to do."""


def new_secret() -> str:
    """A fresh random secret (160 bits). The ``cap-`` prefix lets logs and messages mask it."""
    return "cap-" + secrets.token_hex(20)


def check_secret(value: str) -> str:
    """``value`` if it can be a secret, else :class:`SecretError`."""
    if not SECRET_PATTERN.fullmatch(value):
        raise SecretError(
            "a worker secret is 16 to 128 characters among A-Z a-z 0-9 _ - "
            "(one URL path segment)"
        )
    return value


def read_secret_file(path: Path) -> str:
    """The secret held in ``path`` (its first line).

    Like ssh with a private key, the file is refused when others may read it, when it is not a
    regular file, or when it is a symbolic link.

    Raises:
        SecretError: the file cannot be read or is not fit to hold a secret.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            raise SecretError(f"the secret file {path} does not exist; give the file holding "
                              "the secret (0600)") from None
        raise SecretError(f"cannot read the secret file {path}: {exc.strerror}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # before fdopen, which raises on a folder
        os.close(fd)
        kind = "a folder, not a file" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise SecretError(f"the secret file {path} is {kind}; give the file holding the "
                          "secret (0600)")
    with os.fdopen(fd, "rb") as handle:
        if info.st_mode & 0o077:
            raise SecretError(
                f"the secret file {path} is readable by others (mode "
                f"{stat.S_IMODE(info.st_mode):04o}); run: chmod 600 {path}"
            )
        raw = handle.read(4096)
    text = raw.decode("ascii", "replace").strip().splitlines()
    try:
        return check_secret(text[0] if text else "")
    except SecretError as exc:
        raise SecretError(f"the secret file {path}: {exc}") from None


@dataclass(frozen=True)
class Capability:
    """The secret prefix a worker requires (``secret=None``: none, see ``--no-auth``)."""

    secret: str | None

    @property
    def prefix(self) -> str:
        """What goes between ``host:port`` and the endpoint path: ``/<secret>`` or nothing."""
        return "" if self.secret is None else f"/{self.secret}"

    def strip(self, path: str) -> str | None:
        """The endpoint path below the prefix, or None when the prefix is missing or wrong.

        The first segment is compared with the secret in constant time (digests of both, so
        not even the secret's length shows in the timing).
        """
        if self.secret is None:
            return path
        if not path.startswith("/"):
            return None
        head, _, rest = path[1:].partition("/")
        given = hashlib.sha256(head.encode("utf-8", "surrogateescape")).digest()
        wanted = hashlib.sha256(self.secret.encode("ascii")).digest()
        if not hmac.compare_digest(given, wanted):
            return None
        return "/" + rest

    def redact(self, text: str) -> str:
        """``text`` with the secret masked (for log lines, which quote request lines)."""
        return text if self.secret is None else text.replace(self.secret, "***")


@dataclass(frozen=True)
class Limits:
    """How much one worker serves: body bytes, open connections, seconds of client silence."""

    max_body: int = DEFAULT_MAX_BODY
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    read_timeout: float = DEFAULT_READ_TIMEOUT

    def __post_init__(self) -> None:
        if self.max_body < 0:
            raise ValueError("the body size limit must be 0 or more bytes")
        if self.max_connections < 1:
            raise ValueError("the connection limit must be at least 1")
        if not 0 < self.read_timeout < 86400:
            raise ValueError("the read timeout must be more than 0 seconds and under a day")


FENCE_HEADER = "X-OA-VM-Fence"
"""The request header that carries the caller's pool-lease generation (:meth:`Guard.fence`).
The client side names it ``waa_client.FENCE_HEADER``: the worker and its client are
independent packages, and a test holds the two names equal."""


class Guard:
    """What one worker's two servers share: its capability, its limits and its open connections.

    The WAA server and the scoring server of a worker count against the same connection limit,
    as they share one desktop (and one process's threads).
    """

    def __init__(self, capability: Capability, limits: Limits) -> None:
        self.capability = capability
        self.limits = limits
        self._slots = threading.BoundedSemaphore(limits.max_connections)
        self._fence = 0
        self._fence_lock = threading.Lock()

    def fence(self, token: str | None) -> str | None:
        """Admit a request carrying pool-lease generation ``token`` (``X-OA-VM-Fence``), or say
        why not: once a request of generation N came, one of a lower generation is an earlier
        lease holder's, sent after its pool was taken over (it woke from a freeze between its
        own check and this request), and is refused unplayed. A request without the header
        (``oa-vm`` commands, direct use) is admitted and moves nothing."""
        if token is None:
            return None
        try:
            generation = int(token)
        except ValueError:
            return f"the fence header {token[:40]!r} is not a lease generation"
        with self._fence_lock:
            if generation < self._fence:
                return (f"fenced: this request comes from an earlier holder of the pool's lease "
                        f"(generation {generation}; generation {self._fence} drives this worker "
                        "now)")
            self._fence = generation
        return None

    def try_open(self) -> bool:
        """Take a connection slot; False (at once) when all are taken."""
        return self._slots.acquire(blocking=False)

    def close(self) -> None:
        """Give back the slot of a connection that ended."""
        self._slots.release()
