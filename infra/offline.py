"""Run a pool program without the Pulumi engine, recording what it would create.

Pulumi's mocks (``pulumi.runtime.set_mocks``) stand in for the engine and the cloud: every
resource the program registers is recorded with its inputs (Pulumi's wire names, as the cloud
provider would receive them), and data-source lookups are answered by a function the caller
gives. This powers offline plans (``oa-vm pool-create --plan``: no engine, no credentials, no
network) and the policy tests.

Values a cloud would compute (IDs, public IPs) are stand-ins: ``<name>-id`` and addresses from
TEST-NET-3 (203.0.113.0/24), which never route on the internet.

A run's record is the same on every run of one program: Pulumi registers resources from
executor threads in whatever order their inputs resolve and the threads are scheduled, so the
record is put in the program's own declaration order (noted as each resource is constructed,
which is synchronous and in program order), stand-in outputs are chosen by that declaration, and
inputs are kept with their keys sorted (the wire's maps carry no order).
"""

from __future__ import annotations

import asyncio
import copy
import threading
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.runtime import settings as pulumi_settings
from pulumi.runtime.mocks import MockMonitor

Lookup = Callable[[str, Mapping[str, Any]], dict[str, Any]]
"""Answers a data-source call: ``(token, args) -> result`` (e.g. ``aws:ec2/getAmi:getAmi``)."""

# Pulumi's runtime settings are process-global: one offline run at a time.
_RUN_LOCK = threading.Lock()


@dataclass
class RecordedResource:
    """One resource the program registered."""

    type: str
    name: str
    inputs: dict[str, Any]
    custom: bool
    custom_timeouts: dict[str, str] = field(default_factory=dict)
    """The resource options' ``custom_timeouts`` as the engine receives them (``create``,
    ``update``, ``delete``: Go durations such as ``2h``; only those set)."""
    ignore_changes: list[str] = field(default_factory=list)
    """The resource options' ``ignore_changes`` as the engine receives them (property paths in
    Pulumi's wire names, e.g. ``osProfile.customData``): what an update keeps as it was."""
    depends_on: list[str] = field(default_factory=list)
    """The URNs of the resources it waits for (its inputs' and its ``depends_on``)."""


@dataclass
class OfflineRun:
    """What a program declared: its resources in the program's declaration order (the same
    on every run; see :meth:`RecordingMocks.in_declaration_order`) and its result."""

    resources: list[RecordedResource] = field(default_factory=list)
    result: Any = None
    exports: dict[str, Any] = field(default_factory=dict)


def _stand_in_outputs(
    type_: str, name: str, index: int, inputs: Mapping[str, Any]
) -> dict[str, Any]:
    """Computed outputs a real create would return, for types whose outputs programs read.

    ``index`` picks the stand-in address: the resource's place in the program's declaration
    order, so one resource gets one address on every run.
    """
    address = f"203.0.113.{10 + index % 240}"
    if type_ == "aws:ec2/instance:Instance":
        devices = [
            {**device, "volumeId": f"vol-{name}-{i}"}
            for i, device in enumerate(inputs.get("ebsBlockDevices") or [])
        ]
        return {"publicIp": address, "arn": f"arn:aws:ec2:offline:instance/{name}",
                "availabilityZone": "zone-chosen-at-create", "ebsBlockDevices": devices}
    if type_ == "aws:iam/role:Role":
        return {"arn": f"arn:aws:iam::offline:role/{name}"}
    if type_ == "azure-native:network:PublicIPAddress":
        return {"ipAddress": address}
    if type_ == "azure-native:logic:Workflow":  # its system-assigned identity
        return {"identity": {**inputs.get("identity", {}), "principalId": f"{name}-principal"}}
    return {}


def _keys_sorted(value: Any) -> Any:
    """``value`` with the keys of every mapping in it sorted (lists keep their order)."""
    if isinstance(value, Mapping):
        return {key: _keys_sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_keys_sorted(item) for item in value]
    return value


class RecordingMocks(pulumi.runtime.Mocks):
    """Mocks that record every registered resource and answer lookups through ``lookup``.

    :meth:`declare` must see every resource as the program constructs it (``run_offline``
    registers it as a stack transformation); the record is then read in that order through
    :meth:`in_declaration_order`.
    """

    def __init__(self, lookup: Lookup) -> None:
        self.lookup = lookup
        self.recorded: list[RecordedResource] = []
        # Registrations run on executor threads: the options the mocks are not given (custom
        # timeouts, ignored changes) are handed over by type and name.
        self.timeouts: dict[tuple[str, str], dict[str, str]] = {}
        self.ignored: dict[tuple[str, str], list[str]] = {}
        self.dependencies: dict[tuple[str, str], list[str]] = {}
        # (type, name) -> place in the program's declaration order, noted on the program's
        # thread before the resource's registration is even scheduled.
        self.declared: dict[tuple[str, str], int] = {}
        self.program_returned = False

    def declare(
        self, args: pulumi.ResourceTransformationArgs
    ) -> pulumi.ResourceTransformationResult | None:
        """Note a resource's place in the declaration order (a stack transformation). Resources
        declared after the program returned (from an ``apply`` callback, whose timing is the
        engine's) get no place: they are ordered after the rest by type and name.

        It drops the resource's aliases (an SDK gives each Azure type one for every earlier API
        version: 29 a VM): they only tie a resource to state kept under an older name, which an
        offline run has none of, nothing records them, and resolving them into URNs was
        nearly half the CPU of a plan of 16 Azure workers. Nothing else changes."""
        if not self.program_returned:
            self.declared.setdefault((args.type_, args.name), len(self.declared))
        if not args.opts.aliases:
            return None
        opts = copy.copy(args.opts)
        opts.aliases = None
        return pulumi.ResourceTransformationResult(args.props, opts)

    def in_declaration_order(self) -> list[RecordedResource]:
        """The recorded resources in the program's declaration order, whatever the order the
        executor threads registered them in; those without a place last, by type and name."""
        last = len(self.declared)
        return sorted(self.recorded,
                      key=lambda r: (self.declared.get((r.type, r.name), last), r.type, r.name))

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        """Record the resource; echo its inputs as its state, plus stand-in computed outputs."""
        inputs = _keys_sorted(dict(args.inputs))
        key = (args.typ, args.name)
        index = self.declared.get(key)
        if index is None:  # not declared by the program's code: a stable stand-in all the same
            index = zlib.crc32(f"{args.typ}::{args.name}".encode())
        # list.append is atomic: executor threads may record at once.
        self.recorded.append(
            RecordedResource(type=args.typ, name=args.name, inputs=inputs, custom=bool(args.custom),
                             custom_timeouts=self.timeouts.pop(key, {}),
                             ignore_changes=self.ignored.pop(key, []),
                             depends_on=self.dependencies.pop(key, []))
        )
        state = {**inputs, **_stand_in_outputs(args.typ, args.name, index, inputs)}
        if args.typ == "azure-native:resources:ResourceGroup":  # a plan shows what uses it
            return f"/subscriptions/offline/resourceGroups/{inputs.get('resourceGroupName')}", state
        return f"{args.name}-id", state

    def call(  # type: ignore[override]
        self, args: pulumi.runtime.MockCallArgs
    ) -> dict[str, Any]:
        """Answer a data-source call (the mock monitor accepts a bare result, no failures)."""
        return self.lookup(args.token, dict(args.args))


def _thread_loop(loops: list[asyncio.AbstractEventLoop]) -> None:
    """Give the calling executor thread an event loop for the run, noted in ``loops`` to be
    closed once the run's threads are done (see :func:`run_offline`).

    Pulumi's mock monitor makes an event loop on each executor thread it is called on (it needs
    one to deserialize resource references) and never closes it. Left open, those loops are
    collected at interpreter exit after their self-pipe sockets, and ``BaseEventLoop.__del__``
    prints an ``Exception ignored ... Invalid file descriptor: -1`` traceback after some plans.
    One loop a thread serves all of the thread's calls (a loop a call cost a plan of 16 Azure
    workers some 90 loops' sockets): the monitor's calls return plain protobuf messages and
    run nothing on it, so nothing is left on it when it is closed.
    """
    try:
        asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:  # an executor thread without a loop (the run's thread has its own)
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        loops.append(loop)  # atomic: executor threads may make theirs at once


class RecordingMonitor(MockMonitor):
    """The mock monitor, also handing each registration's ``customTimeouts`` and
    ``ignoreChanges`` to the mocks (Pulumi's own mock monitor drops the resource options it
    does not pass on), and keeping the event loops its calls need on executor threads
    (:func:`_thread_loop`) for :meth:`close_loops`."""

    def __init__(self, mocks: RecordingMocks) -> None:
        super().__init__(mocks)
        self.recording = mocks
        self.loops: list[asyncio.AbstractEventLoop] = []

    def close_loops(self) -> None:
        """Close the executor threads' loops (once those threads are done)."""
        for loop in self.loops:
            loop.close()

    def RegisterResource(self, request: Any) -> Any:
        """Note the request's custom timeouts and ignored changes, then register as the mock
        monitor does."""
        timeouts = request.customTimeouts
        key = (request.type, request.name)
        self.recording.timeouts[key] = {
            name: value for name in ("create", "update", "delete")
            if (value := getattr(timeouts, name, ""))
        }
        self.recording.ignored[key] = list(request.ignoreChanges)
        self.recording.dependencies[key] = list(request.dependencies)
        _thread_loop(self.loops)
        return super().RegisterResource(request)  # type: ignore[no-untyped-call]

    def Invoke(self, request: Any) -> Any:
        """A data-source call, as the mock monitor answers it, on the thread's loop."""
        _thread_loop(self.loops)
        return super().Invoke(request)  # type: ignore[no-untyped-call]

    def ReadResource(self, request: Any) -> Any:
        """A resource read, as the mock monitor answers it, on the thread's loop."""
        _thread_loop(self.loops)
        return super().ReadResource(request)  # type: ignore[no-untyped-call]


def run_offline(
    program: Callable[[], Any],
    lookup: Lookup,
    *,
    project: str = "oa-vm",
    stack: str = "offline",
) -> OfflineRun:
    """Run ``program`` under mocks and return what it declared.

    Args:
        program: declares resources; may return a value or an ``Output`` (resolved into
            :attr:`OfflineRun.result`); what it ``pulumi.export``-s lands in
            :attr:`OfflineRun.exports`.
        lookup: answers every data-source call the program makes.
        project, stack: names the program sees through ``pulumi.get_project()``/``get_stack()``.

    Raises:
        Exception: whatever the program raises (e.g. a setting it refuses).
    """
    mocks = RecordingMocks(lookup)
    monitor = RecordingMonitor(mocks)
    holder: dict[str, Any] = {}

    def body() -> Any:
        pulumi.runtime.register_stack_transformation(mocks.declare)
        try:
            value = program()
        finally:
            mocks.program_returned = True
        root = pulumi_settings.get_root_resource()
        exported = dict(getattr(root, "outputs", {}) or {})
        return pulumi.Output.all(
            pulumi.Output.from_input(value), pulumi.Output.from_input(exported)
        ).apply(lambda resolved: holder.update(result=resolved[0], exports=resolved[1]))

    def run() -> None:
        pulumi_settings.ROOT.set(None)
        pulumi.runtime.set_mocks(
            mocks, project=project, stack=stack, preview=False, monitor=monitor
        )
        try:
            pulumi.runtime.test(body)()  # type: ignore[no-untyped-call]
        finally:
            pulumi_settings.reset_options()

    with _RUN_LOCK:
        try:
            _on_own_loop(run)
        finally:  # its executor's threads are done: their loops go too
            monitor.close_loops()
    return OfflineRun(
        resources=mocks.in_declaration_order(),
        result=holder.get("result"),
        exports=dict(holder.get("exports") or {}),
    )


def _on_own_loop(run: Callable[[], None]) -> None:
    """Call ``run`` on a thread of its own with an event loop of its own, and close that loop
    and its executor's threads once ``run`` returns (re-raising what it raised).

    Pulumi's runtime uses the calling thread's event loop and leaves it open; on the caller's
    thread that loop would stay for the interpreter to collect at exit (the traceback
    :func:`_thread_loop` describes), and closing or unsetting it there would break a caller
    that uses Pulumi's runtime itself afterwards. A thread of its own leaves the caller's
    loop as it was.
    """
    failure: list[BaseException] = []

    def target() -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            run()
        except BaseException as exc:  # handed to the caller's thread
            failure.append(exc)
        finally:
            loop.run_until_complete(loop.shutdown_default_executor())
            asyncio.set_event_loop(None)
            loop.close()

    # A daemon: Ctrl-C during a plan ends the process without waiting for the program.
    thread = threading.Thread(target=target, name="oa-vm-offline-run", daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
