"""The ``ssh`` provider: a pool's workers on Linux hosts the user names (``--host``).

The plan comes first: every host is probed over SSH (``infra/worker/host_probe.sh``, read only),
each host's facts and how many workers fit are shown, and a host that cannot take its workers is
refused in one line of its own (unreachable, already in another pool, no KVM, no root, too
little memory, too few CPUs, a worker's port taken) before anything is changed anywhere; a host
whose image cache holds no prepared image is planned to build it first. The price is zero
unless ``--price-per-hour`` gives one per worker: the hosts are the user's.

A create then, on each host over SSH (:mod:`.install`): claims it for the pool, installs what is
missing, writes the worker files, starts the expiry timer the host itself runs and the same
bootstrap a cloud worker runs, once per slot (:mod:`infra.worker.slots`), after building the
host's prepared image into its cache where there is none (the cloud image builder's
``bootstrap.sh build``, followed here until done; later pools reuse it). A worker's record
names its host (``host``: ``user@host:port``) and its slot (``provider_id``); everything after
that reads the slot's own status file and container over SSH. Cleanup is
``host_pool.sh release``: the host's own software and its image cache stay (``--purge``
removes the cache).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from infra.worker import own_host, slots
from infra.worker.slots import memory_per_worker_gib
from oa_vm.clouds import iso_source
from oa_vm.clouds.base import (
    Capability,
    CleanupReport,
    FleetOps,
    Plan,
    PlannedResource,
    PoolSpec,
    Progress,
)
from oa_vm.clouds.egress import describe as describe_egress
from oa_vm.clouds.hosts.facts import HostAddress, fit, refusal
from oa_vm.clouds.hosts.probe import ProbeResult, probe_hosts
from oa_vm.errors import InvalidInputError, ProvisioningError, line_by_line
from oa_vm.kit import timings
from oa_vm.kit.error_line import host_words
from oa_vm.kit.validate import twice_problem
from oa_vm.model import state
from oa_vm.model.state import PoolRecord, SshEndpoint, WorkerRecord
from oa_vm.reach.host_status import (
    ParamikoRunner,
    RemoteCommands,
    RemoteRunner,
    RemoteUnreachableError,
    slot_commands,
)

if TYPE_CHECKING:
    from oa_vm.model.snapshots import SnapshotControl
    from oa_vm.reach.connect import WorkerConnection

INSTALLS = ("docker.io (unless docker or podman is there)", "socat", "qemu-utils",
            "curl and python3 (when missing)",
            "the worker files in /opt/oa-vm", "the oa-vm-* systemd units and the expiry timer")
"""What a create would add to each host (the host's own software is left as it is)."""


def hosts_failed(pool: str, hosts: int, failed: list[tuple[HostAddress, str]]
                 ) -> ProvisioningError:
    """The error of a create that failed on ``failed`` hosts (each with its problem, in one
    line), once every host of ``pool`` was released: one line for one host; for several, a
    first line saying how many of the ``hosts`` failed, then one line per host (as the plan's
    refusals name every host at once). A problem quoting a host's output of several lines is
    put on its host's line, its lines joined by ``; ``."""
    lines = [f"host {address}: " + host_words(problem, most=None) for address, problem in failed]
    if len(lines) == 1:
        return ProvisioningError(f"{lines[0]}; nothing of pool {pool} is left on the other hosts")
    return line_by_line(ProvisioningError(
        f"pool {pool} failed on {len(lines)} of {hosts} hosts; nothing of it is left on any "
        "host:\n" + "\n".join(lines)))


def host_addresses(spec: PoolSpec) -> list[HostAddress]:
    """The spec's ``--host`` values, parsed.

    Raises:
        InvalidInputError: none given, a malformed one, or the same host twice.
    """
    if not spec.hosts:
        raise InvalidInputError("--cloud ssh needs at least one --host user@host[:port]")
    addresses: list[HostAddress] = []
    for text in spec.hosts:
        try:
            addresses.append(HostAddress.parse(text))
        except ValueError as exc:
            raise InvalidInputError(str(exc)) from exc
    # one host however it is written (user@host, host:22, HOST, [0:0::1])
    if twice := twice_problem("--host", list(spec.hosts), "host",
                              [a.identity for a in addresses]):
        raise InvalidInputError(twice)
    return addresses


RUN_TIMEOUT_S = 120.0
"""Seconds an install, a release or a container command may go without output (installing
docker.io on a host that lacks it prints nothing for a while)."""


def _silence_allowed(action: str) -> float:
    """How long a container command may go without output: a pause's ``docker stop`` prints
    nothing while Windows shuts down, up to the container's stop timeout (and a margin:
    :func:`infra.worker.units.container_stop_s`); cut sooner, the pause reads as failed."""
    if action != "stop":
        return RUN_TIMEOUT_S
    from infra.worker.units import container_stop_s

    return max(RUN_TIMEOUT_S, float(sum(container_stop_s())))


def slot_of(worker: WorkerRecord) -> slots.WorkerSlot:
    """The slot a worker holds on its host (its record's ``provider_id``: ``w0``, ``w1``...)."""
    name = worker.provider_id or "w0"
    return slots.slot(int(name.removeprefix("w")))


class SshHostsProvider:
    """Pools on the user's own KVM hosts; see the module docstring."""

    name = "ssh"
    capabilities: frozenset[Capability] = frozenset(
        {Capability.PAUSE, Capability.RESUME, Capability.REPAIR, Capability.CLEAN_RESET,
         Capability.HOST_EXPIRY})
    poll_interval_s = 5.0
    """pool-wait's pause between passes: a host's status is one SSH command away."""

    def runner(self, record: PoolRecord) -> RemoteRunner:
        """How commands reach the pool's hosts: the project's SSH runner with the pool's pinned
        host keys (trusted on first use at create)."""
        from oa_vm.reach.connect import known_hosts_path

        return ParamikoRunner(known_hosts_path(record.name))

    def fleet_ops(self) -> FleetOps:
        """Pause, resume and repair: the workers' containers, stopped, started or restarted
        over SSH (:class:`HostFleetOps`)."""
        return HostFleetOps(self)

    def snapshot_control(
        self, record: PoolRecord, worker: WorkerRecord, connection: WorkerConnection
    ) -> SnapshotControl:
        """``reset.sh --slot <slot>`` on the worker's host, over SSH (as a cloud worker's)."""
        from oa_vm.clouds.pulumi.reset import worker_control

        return worker_control(worker, self.runner(record), slot=slot_of(worker).name)

    def move_expiry(self, record: PoolRecord, progress: Progress) -> None:
        """Rewrite each host's expiry timer for ``record.expires_at`` (one SSH command per
        host); a host that does not answer, or is no longer the pool's, is said."""
        from oa_vm.clouds.hosts.install import expiry_command

        if record.expires_at is None:
            return
        runner = self.runner(record)
        for host, workers in record.by_host().items():
            ssh = workers[0].ssh
            if ssh is None:
                continue
            try:
                done = runner.run(ssh, expiry_command(record.name, record.expires_at),
                                  RUN_TIMEOUT_S)
                problem = "" if done.status == 0 else host_words(done.output)
            except RemoteUnreachableError as exc:
                problem = f"it does not answer ({exc})"
            if problem:
                progress(f"host {host}: its expiry timer was not moved: {problem}; when it "
                         f"answers, run: oa-vm pool-extend --pool {record.name} --by 1m")

    def check_available(self) -> None:
        """Nothing to install on this machine: SSH is the project's own (paramiko)."""

    def preflight(self, spec: PoolSpec) -> None:
        """The plan's refusals, before anything is shown or written (see :meth:`plan`)."""
        self.plan(spec)

    def plan(self, spec: PoolSpec) -> Plan:
        """Probe every host (read only) and plan ``spec.workers_per_host`` workers on each.

        Unlike the clouds' plans, this one contacts the hosts: what they can take is theirs to
        say. Each host's key is trusted on first use for the probe only.

        Raises:
            InvalidInputError: no ``--host`` or ``--ssh-key``; or one line per host that cannot
                take its workers (all hosts are probed first, so every refusal is said at once).
        """
        return self._survey(spec)[0]

    def _survey(self, spec: PoolSpec) -> tuple[Plan, list[ProbeResult]]:
        addresses = host_addresses(spec)
        if not spec.ssh_key:
            raise InvalidInputError("--cloud ssh needs --ssh-key PATH (the key that logs in to "
                                    "every --host)")
        per_host = spec.workers_per_host
        source = "dockur's download of Windows"
        if spec.iso:
            iso_source.check(spec.iso)
            local = iso_source.local_iso(spec.iso)
            if local is None:
                raise InvalidInputError(f"--iso {spec.iso}: your own hosts build from an ISO "
                                        "file here (a path), uploaded to each over SSH")
            source = f"your ISO {spec.iso} ({local.stat().st_size / 1e9:.1f} GB, uploaded over SSH)"
        with tempfile.TemporaryDirectory(prefix="oa-vm-probe-") as folder:
            results = probe_hosts(addresses, Path(spec.ssh_key).expanduser(),
                                  Path(folder) / "known_hosts")
        refusals: list[str] = []
        notes: list[str] = []
        resources: list[PlannedResource] = []
        for result in results:
            if result.facts is None:
                refusals.append(refusal(result.address, [result.error]))
                continue
            fitted = fit(result.facts, per_host, pool=spec.name)
            if fitted.problems:
                refusals.append(refusal(result.address, fitted.problems))
                continue
            notes.append(f"host {result.address}: {result.facts.describe()}; "
                         f"{per_host} worker(s) of {memory_per_worker_gib():g} GiB each")
            if not result.facts.image_cache:
                notes.append(f"host {result.address}: this pool first builds its prepared image "
                             f"into {own_host.IMAGE_CACHE_DIR} from {source} "
                             f"({timings.IMAGE_BUILD.text()}); later pools on it reuse it")
            for s in slots.host_slots(per_host):
                resources.append(PlannedResource(
                    type="ssh:worker", name=f"{spec.name}-{result.address.label}-{s.name}",
                    inputs={"host": str(result.address), "container": s.container,
                            "storage": s.storage_dir, "guest_ip": s.guest_ip,
                            "ports": [s.waa_port, s.vnc_port, s.scoring_port]},
                ))
        if refusals:
            raise line_by_line(InvalidInputError("\n".join(refusals)))
        workers = per_host * len(addresses)
        price = (spec.price_per_hour or 0.0) * workers
        notes.append(describe_egress(spec.egress, spec.egress_allowlist) + " (keyed on the "
                     "pool's containers: your own containers on docker0 pass untouched)"
                     if spec.egress else "egress: not filtered: the guest reaches what your "
                     "host's network reaches (--egress none|allowlist:FILE|web|open sets a mode)")
        notes.append("installs on each host: " + ", ".join(
            (*INSTALLS, "nftables (for --egress)") if spec.egress else INSTALLS))
        notes.append("expiry is enforced by a timer on each host (it stops and removes the "
                     "pool's containers at the expiry even if this machine is gone)")
        notes.append("cleanup removes what the pool added and keeps the image cache "
                     "(/var/lib/oa-vm/image-cache) unless --purge")
        notes.append("price: your own hosts cost nothing here" if not spec.price_per_hour
                     else f"price: ${spec.price_per_hour:g}/h per worker, as given")
        builds = any(r.facts and not r.facts.image_cache for r in results)
        plan = Plan(cloud=self.name, region=None, size=None, workers=workers,
                    price_per_hour=price, resources=resources, notes=notes, name=spec.name,
                    ready_in=timings.IMAGE_BUILD.text() if builds else None)
        return plan, results

    def create(self, spec: PoolSpec, progress: Progress) -> PoolRecord:
        """Install ``spec.workers_per_host`` workers on every host (see the module docstring)
        and return the record; the workers then boot (``pool-wait`` follows each slot).

        Raises:
            InvalidInputError: the plan's refusals (one line each, nothing changed on any host).
            ProvisioningError: an install or an image build failed (the build's failing step
                and its words), or a built host's workers did not start; the hosts already
                installed are released. An install stops at its first failure (no further host
                is changed); the builds and the starts are each tried on every host first and
                every host that failed is named (:func:`hosts_failed`).
        """
        from oa_vm.clouds import iso_delivery
        from oa_vm.clouds.hosts.install import (
            BECOME_ROOT,
            CLAIMED_ELSEWHERE,
            ROOT,
            install_command,
            release_command,
            start_command,
        )
        from oa_vm.clouds.pulumi.wait import follow_status
        from oa_vm.reach.connect import known_hosts_path

        _plan, results = self._survey(spec)
        iso = iso_source.local_iso(spec.iso)
        size = iso.stat().st_size if iso else 0
        unit = own_host.build_unit(size, iso_source.upload_budget_s(size) if iso else 0)
        key = str(Path(spec.ssh_key or "").expanduser().resolve())
        record = PoolRecord(
            name=spec.name, cloud=self.name, state=state.PoolState.PROVISIONING,
            created_at=state.utcnow(), expires_at=spec.expires_at, owner=spec.owner,
            settings={"hosts": [str(r.address) for r in results],
                      "workers_per_host": spec.workers_per_host, "workers": spec.workers,
                      **({"egress": spec.egress, "egress_allowlist": spec.egress_allowlist}
                         if spec.egress else {})},
            price_per_hour=spec.price_per_hour or 0.0,
        )
        runner = self.runner(record)
        installed: list[SshEndpoint] = []
        building: list[tuple[HostAddress, SshEndpoint]] = []

        def give_up(failed: list[tuple[HostAddress, SshEndpoint, str]]) -> ProvisioningError:
            """Release every host installed so far and each failed one; the error names every
            failed host (:func:`hosts_failed`)."""
            for other in [*installed, *(ssh for _, ssh, _ in failed if ssh not in installed)]:
                try:  # what was made goes: the hosts installed so far are released
                    released = runner.run(other, release_command(spec.name), RUN_TIMEOUT_S)
                    problem = "" if released.status in (0, CLAIMED_ELSEWHERE) else (
                        f"the release failed (exit {released.status})")
                except RemoteUnreachableError:
                    problem = "did not answer the release"
                if problem:
                    progress(f"host {other} {problem}; run: "
                             f"oa-vm pool-cleanup --name {spec.name}")
            return hosts_failed(spec.name, len(results),
                                [(address, problem) for address, _, problem in failed])

        def built(address: HostAddress, ssh: SshEndpoint) -> str:
            """``""`` once the image build on the host is done, else why not, in one line (its
            step, its words and where its log is)."""
            commands = RemoteCommands(cloud_init="echo 'status: done'", unit=own_host.BUILD_UNIT,
                                      status_file=ROOT + own_host.BUILD_STATUS)
            try:
                follow_status(ssh, known_hosts_path(spec.name), name=f"host {address}: image "
                              "build", timeout_s=timings.deadline_s(timings.IMAGE_BUILD),
                              progress=progress, runner=runner, commands=commands,
                              poll_s=self.poll_interval_s)
            except ProvisioningError as exc:
                return str(exc).removeprefix(f"host {address}: ")
            return ""

        for result in results:
            address = result.address
            ssh = SshEndpoint(host=address.host, port=address.port, user=address.user,
                              key_path=key)
            build = result.facts is not None and not result.facts.image_cache
            progress(f"host {address}: claiming it for pool {spec.name} and "
                     + (f"building its prepared image ({timings.IMAGE_BUILD.text()})" if build
                        else f"starting {spec.workers_per_host} worker(s)"))
            command = install_command(spec.name, address.user, spec.expires_at,
                                      spec.workers_per_host, unit if build else "",
                                      spec.egress, spec.egress_allowlist)
            try:
                done = runner.run(ssh, command, RUN_TIMEOUT_S)
                problem = "" if done.status == 0 else (
                    "it serves another pool now" if done.status == CLAIMED_ELSEWHERE
                    else f"the install failed (exit {done.status}): {host_words(done.output)}")
            except RemoteUnreachableError as exc:
                problem = f"unreachable: {exc}"
            if problem:
                raise give_up([(address, ssh, problem)])  # no further host is changed
            installed.append(ssh)
            for s in slots.host_slots(spec.workers_per_host):
                record.workers.append(WorkerRecord(
                    name=f"{spec.name}-{address.label}-{address.port}-{s.name}",
                    state=state.WorkerState.BOOTING, host=str(address), ssh=ssh,
                    remote_waa_port=s.waa_port, remote_scoring_port=s.scoring_port,
                    provider_id=s.name, phase="installed",
                ))
            state.save(record)  # an interrupted create leaves a record pool-cleanup releases
            if build:
                building.append((address, ssh))
            if build and iso:  # the build waits for it in its iso step
                try:
                    iso_delivery.deliver(iso, ssh, known_hosts_path(spec.name),
                                         name=f"host {address}", progress=progress)
                except ProvisioningError as exc:
                    raise give_up([(address, ssh, str(exc).removeprefix(f"host {address}: "))]
                                  ) from exc
        # Every build ends (built or failed) before any host is released: a host that built its
        # image keeps it for the next pool even when another host's build failed; every failed
        # build is named at once, so one rerun can follow every fix.
        failed = [(address, ssh, problem) for address, ssh in building
                  if (problem := built(address, ssh))]
        if failed:
            raise give_up(failed)
        not_started: list[tuple[HostAddress, SshEndpoint, str]] = []
        for address, ssh in building:
            progress(f"host {address}: image built into {own_host.IMAGE_CACHE_DIR}; starting "
                     f"{spec.workers_per_host} worker(s)")
            try:
                started = runner.run(ssh, BECOME_ROOT + start_command(spec.workers_per_host),
                                     RUN_TIMEOUT_S)
                problem = "" if started.status == 0 else host_words(started.output)
            except RemoteUnreachableError as exc:
                problem = f"unreachable: {exc}"
            if problem:  # the other hosts are still tried: each one's failure is said
                not_started.append((address, ssh, f"its workers did not start: {problem}"))
        if not_started:
            raise give_up(not_started)
        return record

    def refresh(self, record: PoolRecord, *, network: bool = True) -> PoolRecord:
        """Ask each host for its workers' containers (one SSH command per host): a ready
        worker whose container is gone or stopped, or whose host does not answer, is ``LOST``
        (``pool-repair`` restarts it once its host answers). Paused workers are left alone.
        Without ``network`` the record is returned as it is."""
        if not network:
            return record
        from oa_vm.clouds.hosts.install import containers_status_command

        runner = self.runner(record)
        for host, workers in record.by_host().items():
            live = [w for w in workers if w.state == state.WorkerState.READY]
            if not live or live[0].ssh is None:
                continue
            try:
                done = runner.run(live[0].ssh,
                                  containers_status_command([slot_of(w) for w in live]),
                                  RUN_TIMEOUT_S)
            except RemoteUnreachableError as exc:
                for worker in live:
                    worker.state, worker.detail = (state.WorkerState.LOST,
                                                   f"host {host} does not answer: {exc}")
                continue
            found = dict(line.partition("=")[::2] for line in done.output.splitlines())
            for worker in live:
                status = found.get(slot_of(worker).container, "").strip()
                if not status.startswith("Up"):
                    worker.state = state.WorkerState.LOST
                    worker.detail = f"container {slot_of(worker).container} on {host}: " + (
                        status or "gone")
        record.state = state.derive_pool_state(record.workers)
        return record

    def worker_phase(self, record: PoolRecord, index: int) -> tuple[str, bool]:
        """One readiness pass over worker ``index``: its slot's status file and container on
        its host, then WAA's and the scoring server's probes through its tunnel (the same steps
        as a cloud worker's, :func:`oa_vm.clouds.pulumi.wait.worker_phase`)."""
        from oa_vm.clouds.pulumi.wait import worker_phase

        worker = record.workers[index]
        return worker_phase(record, index, runner=self.runner(record),
                            commands=slot_commands(slot_of(worker)))

    def destroy(self, record: PoolRecord, progress: Progress) -> CleanupReport:
        """``host_pool.sh release`` on every host of the pool (idempotent: a host released
        already has nothing of the pool). A host that does not answer is reported as left,
        with the command to run again. ``record.settings["purge"]`` also removes the image
        cache."""
        from oa_vm.clouds.hosts.install import CLAIMED_ELSEWHERE, release_command

        report = CleanupReport()
        runner = self.runner(record)
        purge = bool(record.settings.get("purge"))
        for host, workers in record.by_host().items():
            ssh = workers[0].ssh
            if ssh is None:
                continue
            try:
                done = runner.run(ssh, release_command(record.name, purge=purge), RUN_TIMEOUT_S)
            except RemoteUnreachableError as exc:
                report.left.append(f"host {host}: pool {record.name}'s workers ({exc})")
                report.hints.append(f"when {host} answers again: oa-vm pool-cleanup --name "
                                    f"{record.name}")
                continue
            if done.status == CLAIMED_ELSEWHERE:
                report.hints.append(f"host {host} serves another pool now; left as it is")
                continue
            if done.status != 0:
                report.left.append(f"host {host}: the release failed (exit {done.status}): "
                                   f"{host_words(done.output)}")
                continue
            for line in done.output.splitlines():
                kind, _, what = line.partition(": ")
                if kind == "removed":
                    report.removed.append(f"{host}: {what}")
                elif kind == "kept":
                    report.hints.append(f"{host}: kept {what}")
            progress(f"host {host}: released from pool {record.name}")
        return report


class HostFleetOps:
    """Pause, resume and repair of a pool on the user's own hosts, over SSH; each host's
    workers in one command (:func:`oa_vm.clouds.hosts.install.containers_command`)."""

    def __init__(self, provider: SshHostsProvider) -> None:
        self.provider = provider

    def _each_host(self, record: PoolRecord, action: str, chosen: list[WorkerRecord],
                   progress: Progress) -> list[WorkerRecord]:
        """Run ``action`` on ``chosen``'s containers, host by host; returns the workers whose
        host did it (a host that does not answer is said, and its workers left as they are)."""
        from oa_vm.clouds.hosts.install import containers_command

        runner = self.provider.runner(record)
        done: list[WorkerRecord] = []
        for host, workers in record.by_host().items():
            mine = [w for w in workers if w in chosen and w.ssh is not None]
            if not mine or mine[0].ssh is None:
                continue
            command = containers_command(action, [slot_of(w) for w in mine])
            try:
                result = runner.run(mine[0].ssh, command, _silence_allowed(action))
            except RemoteUnreachableError as exc:
                progress(f"host {host} does not answer ({exc}); its workers are left as they "
                         "are")
                continue
            if result.status != 0:
                progress(f"host {host}: {action} failed: {host_words(result.output)}")
                continue
            done += mine
        return done

    def pause(self, record: PoolRecord, progress: Progress) -> PoolRecord:
        """Stop every worker's container and scoring units; the storage stays."""
        for worker in self._each_host(record, "stop", list(record.workers), progress):
            worker.state, worker.phase, worker.detail = state.WorkerState.PAUSED, "paused", None
        record.state = state.derive_pool_state(record.workers)
        return record

    def resume(self, record: PoolRecord, progress: Progress) -> list[str]:
        """Start the paused workers' containers again; pool-wait follows them."""
        paused = [w for w in record.workers if w.state == state.WorkerState.PAUSED]
        started = self._each_host(record, "start", paused, progress)
        for worker in started:
            worker.state, worker.phase, worker.detail = state.WorkerState.BOOTING, "resumed", None
        record.state = state.derive_pool_state(record.workers)
        return [w.name for w in started]

    def repair(self, record: PoolRecord, progress: Progress, names: list[str] | None) -> list[str]:
        """Restart the lost workers' (or ``names``') containers through their slot's
        bootstrap, from the same storage; a host that does not answer is said and its workers
        stay lost. Returns the workers restarted."""
        record = self.provider.refresh(record)
        chosen = [w for w in record.workers
                  if (w.name in names if names else w.state == state.WorkerState.LOST)]
        restarted = self._each_host(record, "restart", chosen, progress)
        for worker in restarted:
            worker.state, worker.phase, worker.detail = (state.WorkerState.BOOTING,
                                                         "restarted", None)
        record.state = state.derive_pool_state(record.workers)
        return [w.name for w in restarted]
