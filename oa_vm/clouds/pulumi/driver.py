"""Driving the Pulumi engine: one stack per pool, region failover, cleanup, recovery.

State lives in a local file backend (``file://$OA_VM_HOME/pulumi``): no Pulumi Cloud account.
Secrets in that state are encrypted with a passphrase generated once into
``$OA_VM_HOME/pulumi/passphrase`` (mode 0600) and handed to the engine as a file, never on a
command line.

The engine sits behind the small :class:`Engine` protocol. :class:`AutomationEngine` implements
it with Pulumi's Automation API (which runs the ``pulumi`` CLI); tests use a scriptable stand-in.
:class:`PulumiDriver` holds the decisions, so they are tested without the engine:

- create: try each region in turn; a capacity or quota error (InsufficientInstanceCapacity,
  SkuNotAvailable, quota exceeded, ...) removes what was made there and moves on; any other
  error removes what was made and stops. If every region fails, the message lists each region
  and why.
- destroy: refresh (the cloud is the source of truth), destroy, check the stack's state is
  empty, remove the stack, then ask the cloud for anything still tagged with the pool.
  Destroying a pool whose stack is gone succeeds.
- recovery: an update interrupted (Ctrl-C, crash, lost laptop lid) leaves a lock and pending
  operations. A lock held by a process of this machine that no longer runs is removed; pending
  operations are cleared by export / import. Each recovery is reported in one line.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from infra.settings import PINNED_EXPORT
from oa_vm.clouds.base import CleanupReport, Progress
from oa_vm.errors import ProviderUnavailableError, ProvisioningError
from oa_vm.kit import safe_fs
from oa_vm.kit.lazy import pulumi_automation as auto
from oa_vm.model import state
from oa_vm.model.stacks import backend_dir

Program = Callable[[], object]
"""A Pulumi program: declares resources when called (inside the engine)."""

Lister = Callable[[str], list[str]]
"""Asks the cloud what still carries ``oa-vm:pool=<name>``; one line per resource."""

PULUMI_INSTALL_HINT = (
    "the Pulumi engine (the 'pulumi' CLI) is not installed or not on PATH; run "
    "'oa-vm doctor --fix' to install the version matching the installed SDK into the oa-vm "
    "home (or install it yourself: 'curl -fsSL https://get.pulumi.com | sh', then open a new "
    "shell)"
)


def sdk_version() -> str:
    """The version of the installed Pulumi SDK (the CLI installed by oa-vm matches it)."""
    import importlib.metadata

    return importlib.metadata.version("pulumi")


def local_cli_root() -> Path:
    """Where ``oa-vm doctor --fix`` installs the Pulumi CLI: ``$OA_VM_HOME/pulumi-cli/<ver>``."""
    return state.home() / "pulumi-cli" / sdk_version()


def local_cli() -> Path | None:
    """The ``pulumi`` executable oa-vm installed, if it is there."""
    path = local_cli_root() / "bin" / "pulumi"
    return path if path.is_file() and os.access(path, os.X_OK) else None


# --- the engine interface ----------------------------------------------------------------------


@dataclass(frozen=True)
class StackRef:
    """Where one pool's stack lives.

    Attributes:
        project: Pulumi project (``oa-vm-aws``, ``oa-vm-azure``).
        stack: the stack, named after the pool.
        backend_dir: folder of the file backend (``$OA_VM_HOME/pulumi``).
        passphrase_file: the secrets passphrase (0600).
    """

    project: str
    stack: str
    backend_dir: Path
    passphrase_file: Path

    @property
    def backend_url(self) -> str:
        """``file://<backend_dir>``."""
        return f"file://{self.backend_dir}"


@dataclass(frozen=True)
class LockInfo:
    """A lock the file backend holds on a stack (who took it)."""

    path: str
    pid: int | None = None
    host: str | None = None


class EngineError(Exception):
    """The engine failed; ``str(exc)`` is the relevant part of its output."""


class StackLockedError(EngineError):
    """Another update holds the stack's lock (maybe one that died)."""


class PendingOperationsError(EngineError):
    """An earlier update was interrupted and left operations unfinished in the state."""


class Engine(Protocol):
    """What oa-vm needs from the Pulumi engine. Every method acts on one stack.

    Errors are raised as :class:`EngineError` (or its subclasses); the message carries the
    engine's words (e.g. the cloud's error code), which :func:`classify_failure` reads.
    """

    def missing(self) -> str | None:
        """None when the engine can run here; else one line saying what is missing and how
        to install it. Must not write anything."""
        ...

    def stack_exists(self, ref: StackRef) -> bool:
        """Whether the backend holds the stack."""
        ...

    def up(
        self, ref: StackRef, program: Program, config: Mapping[str, str], on_line: Progress
    ) -> dict[str, Any]:
        """Create or select the stack, set ``config``, run ``program``; return the outputs."""
        ...

    def refresh(self, ref: StackRef, on_line: Progress) -> None:
        """Bring the stack's state in line with what the cloud really holds."""
        ...

    def destroy(self, ref: StackRef, on_line: Progress) -> None:
        """Delete every resource in the stack (the stack itself stays)."""
        ...

    def remove_stack(self, ref: StackRef) -> None:
        """Forget the (empty) stack."""
        ...

    def export_deployment(self, ref: StackRef) -> dict[str, Any]:
        """The stack's state: ``{"version": 3, "deployment": {"resources": [...], ...}}``."""
        ...

    def import_deployment(self, ref: StackRef, deployment: Mapping[str, Any]) -> None:
        """Replace the stack's state with ``deployment`` (as exported)."""
        ...

    def locks(self, ref: StackRef) -> list[LockInfo]:
        """Locks currently held on the stack."""
        ...

    def get_config(self, ref: StackRef) -> dict[str, str]:
        """The stack's config, ``{"<namespace>:<key>": value}`` (empty for a new stack)."""
        ...

    def set_config(self, ref: StackRef, values: Mapping[str, str]) -> None:
        """Add or overwrite these config values of the (existing) stack; others stay."""
        ...

    def remove_lock(self, ref: StackRef, lock: LockInfo) -> None:
        """Delete one lock (only ever called for a lock whose process is gone)."""
        ...


PINNED_PREFIX = "oa-vm:pinned-"
"""Stack config keys of the values a program resolved at create (``oa-vm:pinned-ami``...)."""


# --- pure decisions ----------------------------------------------------------------------------

_CAPACITY = re.compile(
    r"InsufficientInstanceCapacity|InsufficientCapacity|InsufficientHostCapacity|"
    r"InstanceTypeNotOffered|SkuNotAvailable|ZonalAllocationFailed|AllocationFailed|"
    r"OverconstrainedAllocationRequest|SpotMaxPriceTooLow|capacity-not-available|"
    r"Unsupported: Your requested instance type|not supported in your requested Availability Zone",
    re.IGNORECASE,
)
_QUOTA = re.compile(
    r"VcpuLimitExceeded|MaxSpotInstanceCountExceeded|InstanceLimitExceeded|VpcLimitExceeded|"
    r"AddressLimitExceeded|QuotaExceeded|PublicIPCountLimitReached|"
    r"exceeding approved \S+ quota|quota exceeded|exceeds? (?:the )?quota|"
    r"OperationNotAllowed[^\n]*quota",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Failure:
    """Why an update failed: ``kind`` is ``capacity``, ``quota`` or ``other``."""

    kind: str
    reason: str

    @property
    def try_elsewhere(self) -> bool:
        """Capacity and quota are per region: another region may have room."""
        return self.kind in ("capacity", "quota")


def _excerpt(text: str, match: re.Match[str] | None) -> str:
    """The line of ``text`` holding ``match`` (else its last non-empty line), trimmed."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if match is not None:
        for line in lines:
            if match.group(0) in line:
                return line[:240]
        return match.group(0)
    return (lines[-1] if lines else "unknown error")[:240]


def classify_failure(message: str) -> Failure:
    """Read an engine error: capacity, quota, or something else (pure)."""
    capacity = _CAPACITY.search(message)
    if capacity:
        return Failure("capacity", _excerpt(message, capacity))
    quota = _QUOTA.search(message)
    if quota:
        return Failure("quota", _excerpt(message, quota))
    return Failure("other", _excerpt(message, None))


def state_resources(deployment: Mapping[str, Any]) -> list[str]:
    """Cloud resources in an exported state, as ``type name`` (providers and components and
    the stack itself left out: they bill nothing and need no cleanup)."""
    resources = (deployment.get("deployment") or {}).get("resources") or []
    out: list[str] = []
    for res in resources:
        kind = str(res.get("type", ""))
        if not res.get("custom", True) or kind.startswith("pulumi:"):
            continue
        name = str(res.get("urn", "")).rsplit("::", 1)[-1]
        ident = res.get("id")
        out.append(f"{kind} {name}" + (f" ({ident})" if ident else ""))
    return out


def resource_ids(deployment: Mapping[str, Any]) -> set[str]:
    """IDs of the resources in an exported state."""
    resources = (deployment.get("deployment") or {}).get("resources") or []
    return {str(r["id"]) for r in resources if r.get("id")}


def without_pending_operations(deployment: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A copy of ``deployment`` with its pending operations removed, and what they were."""
    copy = {**deployment, "deployment": dict(deployment.get("deployment") or {})}
    pending = copy["deployment"].pop("pending_operations", None) or []
    described = []
    for op in pending:
        res = op.get("resource") or {}
        name = str(res.get("urn", "")).rsplit("::", 1)[-1] or "?"
        described.append(f"{op.get('type', 'operation')} {res.get('type', '')} {name}".strip())
    return copy, described


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


def is_stale(lock: LockInfo, *, host: str | None = None) -> bool | None:
    """True if the lock's process is gone, False if it runs, None if it cannot be told
    (taken on another machine)."""
    here = host or socket.gethostname()
    if lock.pid is None or (lock.host and lock.host != here):
        return None
    return not _pid_alive(lock.pid)


# --- the passphrase ----------------------------------------------------------------------------


def passphrase_path() -> Path:
    """The secrets passphrase file."""
    return backend_dir() / "passphrase"


def ensure_passphrase() -> Path:
    """Create the passphrase once (random, 0600) and return its path.

    Created exclusively: two commands racing both end up with the same file. Losing it makes
    the stacks' secrets unreadable, so it is never rewritten.
    """
    path = passphrase_path()
    safe_fs.ensure_dir(path.parent)  # 0700 whatever the umask; refuses a symlink or a squatter
    safe_fs.create_once(path, (secrets.token_urlsafe(32) + "\n").encode("utf-8"))
    return path


def stack_ref(project: str, pool: str) -> StackRef:
    """The stack of ``pool`` in ``project`` under the current oa-vm home (no side effects)."""
    return StackRef(
        project=project, stack=pool, backend_dir=backend_dir(), passphrase_file=passphrase_path()
    )


# --- the driver --------------------------------------------------------------------------------


@dataclass
class CreateResult:
    """Where the pool landed and what the stack exported."""

    region: str
    outputs: dict[str, Any]
    tried: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class PoolProvisioningError(ProvisioningError):
    """Creation failed. ``resources_left`` says whether cleanup must still look for leftovers."""

    def __init__(self, message: str, *, resources_left: bool = False) -> None:
        super().__init__(message)
        self.resources_left = resources_left


class PulumiDriver:
    """The decisions around the engine (failover, rollback, recovery, cleanup checks).

    Args:
        engine: the engine (the Automation API, or a stand-in in tests).
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def check_engine(self) -> None:
        """Raise ``ProviderUnavailableError`` (one line) when the engine is missing."""
        missing = self.engine.missing()
        if missing:
            raise ProviderUnavailableError(missing)

    # -- recovery ------------------------------------------------------------------------------

    def recover(self, ref: StackRef, progress: Progress) -> list[str]:
        """Clear what an interrupted update left behind; return one line per thing cleared.

        Raises:
            ProvisioningError: the lock belongs to a running process, or to another machine
                (the message says whom to wait for or which file to delete).
        """
        notes: list[str] = []
        for lock in self.engine.locks(ref):
            stale = is_stale(lock)
            if stale is False:
                raise ProvisioningError(
                    f"pool {ref.stack!r} is being changed by another oa-vm command "
                    f"(pid {lock.pid}); wait for it to finish and try again"
                )
            if stale is None:
                raise ProvisioningError(
                    f"pool {ref.stack!r} is locked by an update started on {lock.host or '?'} "
                    f"(pid {lock.pid}); if that command is no longer running, delete "
                    f"{lock.path} and try again"
                )
            self.engine.remove_lock(ref, lock)
            note = (
                f"recovered: removed the lock left by an interrupted update (pid {lock.pid})"
            )
            notes.append(note)
            progress(note)
        if self.engine.stack_exists(ref):
            deployment = self.engine.export_deployment(ref)
            cleaned, pending = without_pending_operations(deployment)
            if pending:
                self.engine.import_deployment(ref, cleaned)
                note = (
                    f"recovered: cleared {len(pending)} operation(s) an interrupted update left "
                    f"unfinished ({'; '.join(pending)}); a refresh follows, and cleanup checks "
                    "the cloud by tag for anything half-made"
                )
                notes.append(note)
                progress(note)
        return notes

    def with_recovery(self, ref: StackRef, progress: Progress, action: Callable[[], Any]) -> Any:
        """Run ``action``; if the engine reports a lock or pending operations, recover once
        and run it again."""
        try:
            return action()
        except (StackLockedError, PendingOperationsError):
            self.recover(ref, progress)
            return action()

    # -- pinned inputs -------------------------------------------------------------------------

    def pinned(self, ref: StackRef) -> dict[str, str]:
        """What the stack pinned at create (``{"ami": ..., "size": ...}``; empty: no stack, or
        one made before pinning). Later updates build their program from these."""
        if not self.engine.stack_exists(ref):
            return {}
        config = self.engine.get_config(ref)
        return {
            key.removeprefix(PINNED_PREFIX): value
            for key, value in config.items() if key.startswith(PINNED_PREFIX) and value
        }

    def _pin(self, ref: StackRef, outputs: Mapping[str, Any]) -> None:
        """Keep the program's ``pinned`` output in the stack's config: resolved once, never
        overwritten (a value already pinned stays, whatever the program resolved now)."""
        values = outputs.get(PINNED_EXPORT)
        if not isinstance(values, Mapping):
            return
        known = self.pinned(ref)
        new = {
            f"{PINNED_PREFIX}{key}": str(value)
            for key, value in values.items() if value and key not in known
        }
        if new:
            self.engine.set_config(ref, new)

    # -- create --------------------------------------------------------------------------------

    def create(
        self,
        ref: StackRef,
        regions: list[str],
        program_for: Callable[[str], Program],
        config_for: Callable[[str], Mapping[str, str]],
        progress: Progress,
    ) -> CreateResult:
        """Bring the pool up in the first region that has room.

        Raises:
            PoolProvisioningError: every region failed, or a non-capacity error happened; what
                was made is removed first (``resources_left`` if that removal failed too).
        """
        if not regions:
            raise ProvisioningError("no region to create the pool in; pass --region")
        notes = self.recover(ref, progress)
        tried: list[tuple[str, str]] = []
        for region in regions:
            progress(f"creating pool {ref.stack!r} in {region}")

            def up(region: str = region) -> dict[str, Any]:
                return self.engine.up(ref, program_for(region), config_for(region), progress)

            try:
                outputs = self.with_recovery(ref, progress, up)
            except EngineError as exc:
                failure = classify_failure(str(exc))
                progress(f"{region}: {failure.reason}")
                self._roll_back(ref, region, progress)
                tried.append((region, failure.reason))
                if not failure.try_elsewhere:
                    self._forget(ref)
                    raise PoolProvisioningError(
                        f"creating pool {ref.stack!r} failed in {region}: {failure.reason}; "
                        "what was made there has been removed"
                    ) from exc
                continue
            self._pin(ref, outputs)
            return CreateResult(region=region, outputs=dict(outputs), tried=tried, notes=notes)
        self._forget(ref)
        summary = "; ".join(f"{region}: {reason}" for region, reason in tried)
        raise PoolProvisioningError(
            f"no region could hold pool {ref.stack!r} (tried {len(tried)}: {summary}); "
            "try other regions with --region a,b,c, another --size, or ask the cloud for more "
            "quota; nothing was left running"
        )

    def _roll_back(self, ref: StackRef, region: str, progress: Progress) -> None:
        progress(f"removing what was made in {region}")
        try:
            self.engine.destroy(ref, progress)
        except EngineError as exc:
            raise PoolProvisioningError(
                f"creating pool {ref.stack!r} failed in {region}, and removing what was made "
                f"failed too ({classify_failure(str(exc)).reason}); run "
                f"'oa-vm pool-cleanup --pool {ref.stack}' (see docs/runbook.md)",
                resources_left=True,
            ) from exc

    def _forget(self, ref: StackRef) -> None:
        with contextlib.suppress(EngineError):
            if self.engine.stack_exists(ref):
                self.engine.remove_stack(ref)

    # -- update (image stages) ------------------------------------------------------------------

    def update(
        self,
        ref: StackRef,
        program: Program,
        config: Mapping[str, str],
        progress: Progress,
    ) -> dict[str, Any]:
        """One ``up`` of ``program`` on an existing or new stack, recovering from an interrupted
        update first; no rollback (the caller decides what a failure means).

        Raises:
            EngineError: the update failed.
            ProvisioningError: the stack is locked by a running command.
        """
        self.recover(ref, progress)
        outputs = self.with_recovery(
            ref, progress, lambda: self.engine.up(ref, program, config, progress)
        )
        self._pin(ref, outputs)
        return dict(outputs)

    # -- refresh -------------------------------------------------------------------------------

    def refresh(self, ref: StackRef, progress: Progress) -> set[str] | None:
        """Refresh the stack; the IDs of the resources that still exist (None: no stack)."""
        if not self.engine.stack_exists(ref):
            return None
        self.recover(ref, progress)
        self.with_recovery(ref, progress, lambda: self.engine.refresh(ref, progress))
        return resource_ids(self.engine.export_deployment(ref))

    # -- destroy -------------------------------------------------------------------------------

    def destroy(
        self,
        ref: StackRef,
        progress: Progress,
        *,
        lister: Lister | None = None,
        manual_check: str = "",
    ) -> CleanupReport:
        """Remove everything the stack holds, then the stack; idempotent.

        Args:
            ref: the pool's stack.
            progress: one line per step.
            lister: asks the cloud for anything still tagged with the pool (None: skipped, and
                ``manual_check`` is given as a hint instead).
            manual_check: the command that lists the pool's resources by tag, for hints.
        """
        report = CleanupReport()
        if self.engine.stack_exists(ref):
            self.recover(ref, progress)
            progress(f"refreshing pool {ref.stack!r} from the cloud")
            self.with_recovery(ref, progress, lambda: self.engine.refresh(ref, progress))
            before = state_resources(self.engine.export_deployment(ref))
            progress(f"destroying {len(before)} resource(s)")
            try:
                self.with_recovery(ref, progress, lambda: self.engine.destroy(ref, progress))
            except EngineError as exc:
                after = state_resources(self.engine.export_deployment(ref))
                report.removed = [r for r in before if r not in after]
                report.left = after
                report.hints.append(
                    f"destroy failed ({classify_failure(str(exc)).reason}); run "
                    f"'oa-vm pool-cleanup --pool {ref.stack}' again"
                    + (f", or check by hand: {manual_check}" if manual_check else "")
                )
                return report
            after = state_resources(self.engine.export_deployment(ref))
            report.removed = [r for r in before if r not in after]
            if after:
                report.left = after
                report.hints.append(
                    f"the stack still holds {len(after)} resource(s); run "
                    f"'oa-vm pool-cleanup --pool {ref.stack}' again"
                )
                return report
            self.engine.remove_stack(ref)
            progress(f"removed stack {ref.project}/{ref.stack}")
        else:
            progress(f"no stack for pool {ref.stack!r}: nothing to destroy")
        if lister is None:
            if manual_check:
                report.hints.append(f"to double-check nothing is left: {manual_check}")
            return report
        try:
            left = lister(ref.stack)
        except Exception as exc:  # a failed check must not hide that the destroy succeeded
            from oa_vm.kit.cli_failure import why_it_failed

            report.hints.append(
                f"could not ask the cloud for leftovers ({why_it_failed(exc)}); "
                f"check by hand: {manual_check}"
            )
            return report
        if left:
            report.left.extend(left)
            report.hints.append(
                "the cloud still lists resources tagged with this pool (recently deleted ones "
                f"can linger a few minutes); check with: {manual_check}"
            )
        return report


# --- the real engine: Pulumi's Automation API --------------------------------------------------


class AutomationEngine:
    """:class:`Engine` over Pulumi's Automation API and the ``pulumi`` CLI it runs."""

    def missing(self) -> str | None:
        """None when ``pulumi`` is on PATH or installed in the oa-vm home."""
        return None if shutil.which("pulumi") or local_cli() else PULUMI_INSTALL_HINT

    def _env(self, ref: StackRef) -> dict[str, str]:
        return {
            "PULUMI_BACKEND_URL": ref.backend_url,
            "PULUMI_CONFIG_PASSPHRASE_FILE": str(ref.passphrase_file),
            "PULUMI_SKIP_UPDATE_CHECK": "true",
        }

    def _workspace_options(self, ref: StackRef) -> Any:
        work_dir = ref.backend_dir / "projects" / ref.project
        safe_fs.ensure_dir(work_dir, root=ref.backend_dir)
        installed = None if shutil.which("pulumi") else local_cli()
        return auto.LocalWorkspaceOptions(
            work_dir=str(work_dir),
            pulumi_command=(
                auto.PulumiCommand(root=str(installed.parent.parent)) if installed else None
            ),
            env_vars=self._env(ref),
            secrets_provider="passphrase",
            project_settings=auto.ProjectSettings(
                name=ref.project,
                runtime="python",
                backend=auto.ProjectBackend(url=ref.backend_url),
            ),
        )

    def _stack(self, ref: StackRef, program: Program | None = None) -> Any:
        def inline() -> None:
            if program is not None:
                program()

        return auto.create_or_select_stack(
            stack_name=ref.stack,
            project_name=ref.project,
            program=inline,
            opts=self._workspace_options(ref),
        )

    def _call(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except auto.ConcurrentUpdateError as exc:
            raise StackLockedError(str(exc)) from exc
        except auto.CommandError as exc:
            text = str(exc)
            if "pending operations" in text or "interrupted while" in text:
                raise PendingOperationsError(text) from exc
            raise EngineError(text) from exc

    def stack_exists(self, ref: StackRef) -> bool:
        """Whether the backend lists the stack."""
        workspace = auto.LocalWorkspace(**vars(self._workspace_options(ref)))
        stacks = self._call(workspace.list_stacks)
        return any(s.name.split("/")[-1] == ref.stack for s in stacks)

    def up(
        self, ref: StackRef, program: Program, config: Mapping[str, str], on_line: Progress
    ) -> dict[str, Any]:
        """``pulumi up`` of ``program``; returns the stack's outputs as plain values."""
        stack = self._stack(ref, program)
        stack.set_all_config({k: auto.ConfigValue(value=v) for k, v in config.items()})
        result = self._call(lambda: stack.up(on_output=on_line, color="never"))
        return {key: out.value for key, out in result.outputs.items()}

    def refresh(self, ref: StackRef, on_line: Progress) -> None:
        """``pulumi refresh --yes``."""
        stack = self._stack(ref)
        self._call(lambda: stack.refresh(on_output=on_line, color="never"))

    def destroy(self, ref: StackRef, on_line: Progress) -> None:
        """``pulumi destroy --yes``."""
        stack = self._stack(ref)
        self._call(lambda: stack.destroy(on_output=on_line, color="never"))

    def remove_stack(self, ref: StackRef) -> None:
        """``pulumi stack rm``."""
        stack = self._stack(ref)
        self._call(lambda: stack.workspace.remove_stack(ref.stack))

    def export_deployment(self, ref: StackRef) -> dict[str, Any]:
        """``pulumi stack export``."""
        stack = self._stack(ref)
        exported = self._call(stack.export_stack)
        return {"version": exported.version, "deployment": exported.deployment}

    def import_deployment(self, ref: StackRef, deployment: Mapping[str, Any]) -> None:
        """``pulumi stack import``."""
        stack = self._stack(ref)
        value = auto.Deployment(
            version=deployment.get("version", 3), deployment=deployment.get("deployment")
        )
        self._call(lambda: stack.import_stack(value))

    def get_config(self, ref: StackRef) -> dict[str, str]:
        """``pulumi config --json`` of the stack."""
        stack = self._stack(ref)
        config = self._call(stack.get_all_config)
        return {key: str(item.value) for key, item in config.items()}

    def set_config(self, ref: StackRef, values: Mapping[str, str]) -> None:
        """``pulumi config set-all``."""
        stack = self._stack(ref)
        self._call(lambda: stack.set_all_config(
            {key: auto.ConfigValue(value=value) for key, value in values.items()}
        ))

    def locks(self, ref: StackRef) -> list[LockInfo]:
        """The lock files of this stack, with the pid and host that wrote them."""
        import json

        found: list[LockInfo] = []
        # The file backend keeps one JSON file per lock under .pulumi/locks/<org>/<project>/<stack>.
        root = ref.backend_dir / ".pulumi" / "locks"
        if not root.is_dir():
            return found
        for path in root.glob(f"**/{ref.project}/{ref.stack}/*.json"):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = {}
            pid = data.get("pid")
            found.append(
                LockInfo(
                    path=str(path),
                    pid=int(pid) if isinstance(pid, int) else None,
                    host=data.get("hostname"),
                )
            )
        return found

    def remove_lock(self, ref: StackRef, lock: LockInfo) -> None:
        """Delete one lock file."""
        with contextlib.suppress(FileNotFoundError):
            Path(lock.path).unlink()
