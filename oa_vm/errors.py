"""The oa-vm exception tree.

Every error a user can cause or meet derives from :class:`OaVmError`; the CLI prints its message
as one line and exits with ``exit_code`` (tracebacks only with ``--debug``). Messages say what is
wrong and what to do next.
"""

from __future__ import annotations

from pathlib import Path

# typing is not imported at run time (pool-status's fast path loads this module); mypy reads
# this as typing's.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeVar

    _E = TypeVar("_E", bound="OaVmError")

NO_POOLS_MESSAGE = "there are no pools; create one with 'oa-vm pool-create'"
"""The hint of every error met when no pool exists (:class:`PoolNotFoundError`)."""

LISTED = 8
"""The most names an error lists (known runs, pools, workers...): the rest are counted."""


def listing(names: list[str] | tuple[str, ...] | set[str], most: int = LISTED) -> str:
    """``names`` for an error message, comma-separated: at most ``most`` of them, then how many
    more there are (``a, b, c and 37 more``), so a folder of a thousand runs still makes a
    line one can read."""
    shown = list(names)
    if len(shown) <= most:
        return ", ".join(shown)
    return f"{', '.join(shown[:most])} and {len(shown) - most} more"


class OaVmError(Exception):
    """Base of every error oa-vm reports to a user."""

    exit_code = 1
    by_line = False
    """True for a message that names one item a line (every refused host at once): the CLI
    prints each of its lines as one readable line, instead of the whole as one."""


def line_by_line(error: _E) -> _E:
    """``error``, marked to be printed a line for each line of its message (see ``by_line``)."""
    error.by_line = True
    return error


class InvalidInputError(OaVmError):
    """A flag, argument or file given by the user is not acceptable."""

    exit_code = 2


class PoolNotFoundError(InvalidInputError):
    """No record for the named pool (``name``), or no pool at all (``name`` is ``None``).

    Bad input (exit 2) wherever a pool is looked up, with one wording: the pools there are,
    or :data:`NO_POOLS_MESSAGE`.
    """

    def __init__(self, name: str | None, known: list[str] | None = None) -> None:
        self.name = name
        self.known = known or []
        hint = f"known pools: {listing(self.known)}" if self.known else NO_POOLS_MESSAGE
        super().__init__(hint if name is None else f"no pool named {name!r} ({hint})")


class PoolExistsError(InvalidInputError):
    """A pool with that name already exists: bad input (exit 2), refused before anything is
    made, as a run folder that exists (``evals.errors.RunExistsError``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(
            f"a pool named {name!r} already exists; pick another --pool, "
            f"or remove it first with 'oa-vm pool-cleanup --pool {name}'"
        )


class AmbiguousPoolError(InvalidInputError):
    """``--pool`` was left out while several pools exist: bad input (exit 2), as a pool
    named wrongly is."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        super().__init__(f"several pools exist ({listing(names)}); choose one with --pool")


class CorruptRecordError(OaVmError):
    """A pool record exists but cannot be read. Nothing is deleted."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(
            f"pool record {path} is unreadable: {reason}; fix or move the file by hand "
            "(oa-vm leaves it untouched)"
        )

    @property
    def pool(self) -> str:
        """The pool the record is of (its folder's name)."""
        return self.path.parent.name


class RecordMissingError(CorruptRecordError):
    """A pool's folder still holds its local workers' folders, but its record is gone (removed
    by hand): listed and named wherever the pool is, so its workers never run unseen, and
    ``pool-cleanup`` stops whatever runs from the folder."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.reason = f"no record ({path.name} was removed)"
        pool = path.parent.name
        OaVmError.__init__(
            self, f"pool folder {path.parent} has no record ({path.name} was removed) but holds "
            f"its workers' folders; stop them and remove it with 'oa-vm pool-cleanup --pool "
            f"{pool}'"
        )


class StackWithoutRecordError(CorruptRecordError):
    """A cloud pool's folder is gone (removed by hand) but oa-vm's Pulumi state still holds its
    stack, so what it made may still bill until its expiry: listed wherever pools are, and
    ``pool-cleanup --pool NAME`` destroys it (:class:`oa_vm.clouds.base.StateKeeper`)."""

    def __init__(self, path: Path, pool: str, cloud: str) -> None:
        self.path = path
        self.cloud = cloud
        self._pool = pool
        self.reason = f"no record (its {cloud} stack remains)"
        OaVmError.__init__(
            self, f"pool {pool!r} has no record, but oa-vm's {cloud} state still holds its "
            f"stack ({path}): what it made may still bill; remove it with 'oa-vm pool-cleanup "
            f"--pool {pool}'"
        )

    @property
    def pool(self) -> str:
        """The pool the stack is of (its name)."""
        return self._pool


class ProviderUnavailableError(OaVmError):
    """A provider cannot run here (missing extra, missing engine, not implemented)."""

    @classmethod
    def for_stack(cls, pool: str, cloud: str, missing: str) -> ProviderUnavailableError:
        """The state holds ``pool``'s stack (its record removed by hand), but what removes it
        (``missing``: the engine, the provider) cannot run here: said as such, never as a pool
        that does not exist."""
        return cls(f"pool {pool!r} has no record, but oa-vm's {cloud} state still holds its "
                   f"stack; removing it takes {missing}")


class ProvisioningError(OaVmError):
    """The cloud (or the local process launcher) failed to create what was asked."""


class PoolCommandInterrupted(OaVmError):
    """Ctrl-C, SIGTERM or SIGHUP stopped a pool command once its own clean-up ran; the line
    names the pool and what to do next (wait again, or remove what is left)."""

    exit_code = 130


class PoolNotReadyError(OaVmError):
    """Workers did not become ready in time, or the pool is not usable."""


class WorkerAccessError(PoolNotReadyError):
    """A worker's host refuses us in a way waiting cannot mend (the pool's key refused, a changed
    host key, an unusable key file): ``pool-wait`` and image builds stop at once, naming the
    worker and what to do, instead of polling until their timeout.

    Attributes:
        worker: the worker's name (empty until the wait that raised it names it).
    """

    def __init__(self, message: str, *, worker: str = "") -> None:
        super().__init__(message)
        self.worker = worker


class WaitTimeoutError(PoolNotReadyError):
    """``pool-wait`` ran out of time; the message names each stuck worker and where it is."""


class PoolBusyError(OaVmError):
    """Another run holds the pool's lease (one run per pool: runs would share the desktops)."""

    def __init__(self, name: str, holder: str) -> None:
        self.name = name
        self.holder = holder
        super().__init__(
            f"pool {name!r} is in use by {holder}; wait for that run to end, pass "
            "--wait-for-pool 30m to wait, or use another pool"
        )


class PoolInUseError(PoolBusyError):
    """An ``oa-vm`` operation that would pull the workers from under a run (``pool-pause``,
    ``pool-cleanup``, ``pool-repair --worker``) was refused: a live run holds the pool's lease.
    Nothing was changed."""

    _VERBS = {"pool-pause": "pause the pool", "pool-cleanup": "remove the pool",
              "pool-repair": "replace the named workers"}

    def __init__(self, name: str, holder: str, operation: str) -> None:
        self.name = name
        self.holder = holder
        self.operation = operation
        verb = self._VERBS.get(operation, "change the pool")
        # PoolBusyError's message tells a run to wait; this one tells a pool operation what
        # to do, so the base's __init__ is skipped on purpose.
        OaVmError.__init__(
            self,
            f"pool {name!r} is in use by {holder}; wait for it to end, or pass --force to "
            f"{verb} anyway (its tasks fail)",
        )
