"""``FakePulumiEngine``: a stand-in for the Pulumi CLI engine, for tests that cannot reach one.

It implements ``oa_vm.clouds.pulumi.driver.Engine``. ``up`` runs the real pool program under
Pulumi's mocks (``infra.offline``), so the resources and outputs it records are the program's
own; the "cloud" is a dict. Scriptable failures:

- ``missing_reason``: the engine is not installed;
- ``fail_up[region]``: ``up`` in that region fails with that message (after creating part of
  the resources, as a real failed update does);
- ``fail_destroy``: ``destroy`` fails with that message (leaving the resources);
- ``destroy_leaves``: types that ``destroy`` leaves in the state although it reports success
  (as a resource the engine skipped does);
- ``add_lock(stack, pid, host)``: a lock like the file backend's (stale when the pid is dead);
- ``add_pending(stack)``: pending operations an interrupted update left in the state;
- ``lock_before_next = pid``: a lock appears just before the next action (after any check);
- ``vanish(stack, id)``: the cloud deleted a resource behind the engine's back.

``replaced(stack)`` lists the resources the last ``up`` would have replaced or updated (same
name, other inputs), as the engine's diff would show them. As the real engine does, an existing
resource keeps its old value of every input its ``ignore_changes`` names (a new one takes the
program's).

As the real engine's file backend does (Pulumi's diy store, project-scoped layout), each stack
made by ``up`` has its file at ``.pulumi/stacks/<project>/<stack>.json`` under the backend folder,
removed by ``remove_stack``: what :mod:`oa_vm.model.stacks` reads without the engine.

Like the real engine, ``up``/``refresh``/``destroy`` refuse to run while a lock is held
(``StackLockedError``) or pending operations remain (``PendingOperationsError``).
"""

from __future__ import annotations

import copy
import json
import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.offline import Lookup, run_offline
from oa_vm.clouds.base import Progress
from oa_vm.clouds.pulumi.driver import (
    EngineError,
    LockInfo,
    PendingOperationsError,
    Program,
    StackLockedError,
    StackRef,
)

REGION_KEYS = ("aws:region", "azure-native:location")


def dead_pid() -> int:
    """The pid of a process that has exited (for stale locks)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    return proc.pid


@dataclass
class _Stack:
    resources: list[dict[str, Any]] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    locks: list[LockInfo] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    config: dict[str, str] = field(default_factory=dict)
    changed: list[str] = field(default_factory=list)


def _keep_ignored(inputs: dict[str, Any], old: Mapping[str, Any], paths: list[str]) -> None:
    """Put ``old``'s value of each ``paths`` entry (``osProfile.customData``) into ``inputs``,
    as the engine does for an existing resource's ``ignore_changes``."""
    for path in paths:
        *parents, leaf = path.split(".")
        source: Any = old
        target: Any = inputs
        for part in parents:  # both sides hold the path, or the engine has nothing to keep
            source = source.get(part) if isinstance(source, Mapping) else None
            target = target.get(part) if isinstance(target, dict) else None
        if isinstance(source, Mapping) and leaf in source and isinstance(target, dict):
            target[leaf] = copy.deepcopy(source[leaf])


def _stack_file(ref: StackRef) -> Path:
    """Where the file backend keeps ``ref``'s stack."""
    return ref.backend_dir / ".pulumi" / "stacks" / ref.project / f"{ref.stack}.json"


class FakePulumiEngine:
    """A scriptable in-memory engine; see the module docstring.

    Args:
        lookup: answers the program's data-source calls (as a region would).
    """

    def __init__(self, lookup: Lookup) -> None:
        self.lookup = lookup
        self.stacks: dict[str, _Stack] = {}
        self.calls: list[tuple[str, str]] = []
        self.missing_reason: str | None = None
        self.fail_up: dict[str, str] = {}
        self.fail_destroy: str | None = None
        self.destroy_leaves: set[str] = set()
        self.lock_before_next: int | None = None
        self._lock_seq = 0

    # -- scripting -----------------------------------------------------------------------------

    def add_lock(self, stack: str, pid: int, host: str | None = None) -> LockInfo:
        """Hold a lock on ``stack`` as if process ``pid`` on ``host`` took it."""
        self._lock_seq += 1
        lock = LockInfo(path=f"/locks/{stack}/{self._lock_seq}.json", pid=pid,
                        host=host or socket.gethostname())
        self.stacks.setdefault(stack, _Stack()).locks.append(lock)
        return lock

    def add_pending(self, stack: str) -> None:
        """Leave a pending create, as an update killed mid-flight does."""
        self.stacks.setdefault(stack, _Stack()).pending.append(
            {"type": "creating", "resource": {"urn": f"urn:pulumi:{stack}::p::aws:ec2/instance:"
                                                     f"Instance::{stack}-w0",
                                              "type": "aws:ec2/instance:Instance"}}
        )

    def vanish(self, stack: str, resource_id: str) -> None:
        """The cloud removed ``resource_id`` (an expired or evicted instance)."""
        self.stacks[stack].resources = [
            r for r in self.stacks[stack].resources if r.get("cloud_id") != resource_id
        ]

    def live_resources(self, stack: str) -> list[dict[str, Any]]:
        """What the fake cloud holds for ``stack`` (each with the ``inputs`` it was made with)."""
        return list(self.stacks.get(stack, _Stack()).resources)

    def replaced(self, stack: str) -> list[str]:
        """Names of the resources whose inputs the last ``up`` changed (a replacement or an
        in-place update in a real engine)."""
        return list(self.stacks[stack].changed)

    def live_types(self, stack: str) -> list[str]:
        """The types of the cloud resources the fake cloud holds for ``stack`` (providers and
        components left out)."""
        return sorted(
            r["type"] for r in self.live_resources(stack)
            if r["custom"] and not r["type"].startswith("pulumi:providers:")
        )

    # -- Engine --------------------------------------------------------------------------------

    def missing(self) -> str | None:
        """The scripted reason, or None."""
        return self.missing_reason

    def stack_exists(self, ref: StackRef) -> bool:
        """Whether the stack was created (and not removed)."""
        self.calls.append(("stack_exists", ref.stack))
        return ref.stack in self.stacks

    def _guard(self, ref: StackRef) -> _Stack:
        stack = self.stacks.setdefault(ref.stack, _Stack())
        if self.lock_before_next is not None:  # a lock taken between a check and an action
            self.add_lock(ref.stack, self.lock_before_next)
            self.lock_before_next = None
        if stack.locks:
            raise StackLockedError(
                f"the stack is currently locked by {len(stack.locks)} lock(s)"
            )
        if stack.pending:
            raise PendingOperationsError(
                "the current deployment has 1 resource(s) with pending operations"
            )
        return stack

    def up(
        self, ref: StackRef, program: Program, config: Mapping[str, str], on_line: Progress
    ) -> dict[str, Any]:
        """Run the program under mocks; record its resources as created."""
        region = next((config[k] for k in REGION_KEYS if k in config), "?")
        self.calls.append(("up", region))
        stack = self._guard(ref)
        stack.config.update(config)  # as ``set_all_config``: other keys stay
        _stack_file(ref).parent.mkdir(parents=True, exist_ok=True)
        _stack_file(ref).write_text(json.dumps({"version": 3, "checkpoint": {"stack": ref.stack}}))
        run = run_offline(program, self.lookup, project=ref.project, stack=ref.stack)
        created: list[dict[str, Any]] = [
            {
                "urn": f"urn:pulumi:{ref.stack}::{ref.project}::{r.type}::{r.name}",
                "type": r.type,
                "custom": r.custom,
                "id": f"{r.name}-id" if r.custom else None,
                "cloud_id": f"{r.name}-id",
                "inputs": copy.deepcopy(r.inputs),
                "outputs": {"tags": r.inputs.get("tags")},
            }
            # by name, as a cloud lists them (not the program's declaration order)
            for r in sorted(run.resources, key=lambda r: (r.name, r.type))
        ]
        for res in created:
            on_line(f"+  {res['type']} {res['urn'].rsplit('::', 1)[-1]} creating")
        if region in self.fail_up:
            stack.resources = created[: max(1, len(created) // 2)]
            raise EngineError(
                f"error: update failed\n  {self.fail_up[region]}\n"
            )
        before = {r["urn"]: r["inputs"] for r in stack.resources}
        ignored = {f"urn:pulumi:{ref.stack}::{ref.project}::{r.type}::{r.name}": r.ignore_changes
                   for r in run.resources}
        for res in created:
            if res["urn"] in before:
                _keep_ignored(res["inputs"], before[res["urn"]], ignored[res["urn"]])
        stack.changed = [
            r["urn"].rsplit("::", 1)[-1] for r in created
            if r["urn"] in before and before[r["urn"]] != r["inputs"]
        ]
        stack.resources = created
        stack.outputs = copy.deepcopy(run.exports)
        return copy.deepcopy(run.exports)

    def refresh(self, ref: StackRef, on_line: Progress) -> None:
        """The fake cloud is the truth already: nothing to reconcile."""
        self.calls.append(("refresh", ref.stack))
        self._guard(ref)
        on_line(f"refreshing {ref.stack}")

    def destroy(self, ref: StackRef, on_line: Progress) -> None:
        """Delete every resource, unless scripted to fail."""
        self.calls.append(("destroy", ref.stack))
        stack = self._guard(ref)
        if self.fail_destroy:
            raise EngineError(f"error: destroy failed\n  {self.fail_destroy}\n")
        for res in reversed(stack.resources):
            if res["type"] not in self.destroy_leaves:
                on_line(f"-  {res['type']} deleted")
        stack.resources = [r for r in stack.resources if r["type"] in self.destroy_leaves]
        stack.outputs = {}

    def remove_stack(self, ref: StackRef) -> None:
        """Forget the stack (refused while it holds resources, as ``pulumi stack rm`` is)."""
        self.calls.append(("remove_stack", ref.stack))
        if self.stacks.get(ref.stack, _Stack()).resources:
            raise EngineError("stack still has resources; use --force")
        self.stacks.pop(ref.stack, None)
        _stack_file(ref).unlink(missing_ok=True)

    def export_deployment(self, ref: StackRef) -> dict[str, Any]:
        """The state in the shape ``pulumi stack export`` prints."""
        stack = self.stacks[ref.stack]
        deployment: dict[str, Any] = {
            "resources": [
                {k: v for k, v in r.items() if k not in ("cloud_id", "inputs")}
                for r in stack.resources
            ]
        }
        if stack.pending:
            deployment["pending_operations"] = copy.deepcopy(stack.pending)
        return {"version": 3, "deployment": deployment}

    def import_deployment(self, ref: StackRef, deployment: Mapping[str, Any]) -> None:
        """Take the pending operations from ``deployment`` (resources are kept as they are)."""
        self.calls.append(("import", ref.stack))
        body = deployment.get("deployment") or {}
        self.stacks[ref.stack].pending = list(body.get("pending_operations") or [])

    def get_config(self, ref: StackRef) -> dict[str, str]:
        """The stack's config."""
        self.calls.append(("get_config", ref.stack))
        return dict(self.stacks[ref.stack].config)

    def set_config(self, ref: StackRef, values: Mapping[str, str]) -> None:
        """Add or overwrite config values (the stack must exist, as the CLI's does)."""
        self.calls.append(("set_config", ref.stack))
        self.stacks[ref.stack].config.update(values)

    def locks(self, ref: StackRef) -> list[LockInfo]:
        """Locks held on the stack."""
        return list(self.stacks.get(ref.stack, _Stack()).locks)

    def remove_lock(self, ref: StackRef, lock: LockInfo) -> None:
        """Drop one lock."""
        self.calls.append(("remove_lock", ref.stack))
        self.stacks[ref.stack].locks.remove(lock)
