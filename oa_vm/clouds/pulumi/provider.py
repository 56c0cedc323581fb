"""What the AWS and Azure providers share: Pulumi programs driven per pool.

A cloud provider here is data (its project, extra, defaults, program module) plus this class.
Nothing heavy is imported at module import: Pulumi and the cloud SDKs load inside methods, so
``oa-vm --help`` and local pools never pay for them.
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from oa_vm.clouds import facts, size_nests
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
from oa_vm.clouds.pulumi import timers
from oa_vm.clouds.pulumi.driver import (
    AutomationEngine,
    Engine,
    EngineError,
    Lister,
    PoolProvisioningError,
    PulumiDriver,
    ensure_passphrase,
    stack_ref,
)
from oa_vm.clouds.pulumi.wait import worker_phase
from oa_vm.cost import cloud_plan
from oa_vm.errors import (
    InvalidInputError,
    OaVmError,
    ProviderUnavailableError,
    ProvisioningError,
)
from oa_vm.kit import timings
from oa_vm.model import image_records, state
from oa_vm.model.stacks import pool_project, stacks_of
from oa_vm.model.state import PoolRecord, PoolState, WorkerRecord, WorkerState
from oa_vm.reach.host_status import ParamikoRunner, RemoteRunner

if TYPE_CHECKING:
    from infra.settings import PoolSettings
    from oa_vm.model.snapshots import SnapshotControl
    from oa_vm.reach.connect import WorkerConnection

ImageLister = Callable[[str | None], list[image_records.ImageRecord]]
"""Asks the cloud account for images tagged ``oa-vm:image`` (of a region; None: the default or
every region), as records (:mod:`oa_vm.model.shared_images`)."""

RAW_IMAGE_PREFIXES = ("snap-", "/subscriptions/")
"""Cloud snapshot IDs accepted by ``--image`` without an oa-vm record (EBS, Azure)."""
IMAGE_FROM_ACCOUNT = "looked-up-in-the-account-at-create"
"""An offline plan's stand-in for an image named by ID that has no local record."""


@dataclass(frozen=True)
class ChosenImage:
    """The image a pool's storage is made from: the cloud's ID and oa-vm's record (if any)."""

    cloud_id: str
    record: image_records.ImageRecord | None = None
    name: str | None = None
    """The oa-vm ID asked for when the record is not known yet (an offline plan)."""

    def describe(self) -> dict[str, Any]:
        """What a plan shows about the image."""
        if self.record is None:
            return {"id": self.name or self.cloud_id, "cloud_id": self.cloud_id}
        return {
            "id": self.record.id,
            "cloud_id": self.record.cloud_id,
            "created": state.format_time(self.record.created_at),
            "licence_expires": state.format_time(self.record.licence_expires),
            "waa_image": self.record.waa_image,
            "base_image": self.record.base_image,
        }


@dataclass(frozen=True)
class CloudInfo:
    """The facts that make one cloud's provider.

    Attributes:
        name: provider name (``aws``/``azure``).
        sdk_module: the Pulumi package that must be importable (the extra).
        program_module: the ``infra`` module with ``pool_program`` and ``offline_lookup``.
        default_size, default_region: used when the spec leaves them out.
        ssh_user: login user on the hosts.
        region_config: stack config key the region is also written to (for the engine's
            default provider), or None.
        check_size: refuses sizes that cannot nest (raises ``ValueError``).
        manual_check: the CLI command listing a pool's resources by tag (``{pool}`` filled in).
        image_module: the ``infra`` module with the image program.
        component_type: the pool component's Pulumi type (for the plan's tree).
        notes: lines every plan of the cloud ends with; ``{pool}`` and ``{resource_group}``
            (the resource group the program declares) are filled in.
        host_timer: the hosts power themselves off at the expiry (a timer cloud-init arms:
            the program's ``HOST_FACTS.guest_poweroff``), set from the expiry tag at every
            boot and re-armed over SSH on a running host when the expiry moves.
    """

    name: str
    sdk_module: str
    program_module: str
    default_size: str
    default_region: str
    ssh_user: str
    region_config: str | None
    check_size: Callable[[str], str]
    manual_check: str
    notes: tuple[str, ...] = field(default_factory=tuple)
    image_module: str = ""
    component_type: str = ""
    host_timer: bool = False

    @property
    def project(self) -> str:
        """The Pulumi project of this cloud's pools."""
        return pool_project(self.name)


class PulumiCloudProvider:
    """A :class:`~oa_vm.clouds.base.Provider` whose pools are Pulumi stacks; a cloud's subclass
    gives its facts (``info``) and its CLI.

    Args:
        engine: the Pulumi engine; the Automation API by default.
        lister: asks the cloud what is still tagged with a pool (None: the cloud's CLI when it
            is on PATH, else cleanup gives the command to check by hand).
        remote: runs readiness commands on workers over SSH (see :mod:`oa_vm.reach.host_status`).
        image_lister: finds the account's tagged images (a teammate's); None: the cloud's CLI
            when it is on PATH, else local records only.
    """

    info: CloudInfo
    cli = ""
    """The cloud's CLI (``aws``, ``az``): asked for images and leftovers when it is on PATH."""
    poll_interval_s = 15.0
    refresh_interval_s = 180.0
    """``pool-wait`` polls every 15 s; a full Pulumi refresh is heavy, so at most this often."""
    capabilities = frozenset({
        Capability.PAUSE, Capability.RESUME, Capability.REPAIR,  # cloud_fleet.CloudFleetOps
        Capability.DRAIN,  # spot_watch*.sh writes the notice into the host's status file
        Capability.CLEAN_RESET,  # infra/worker/reset.sh: QEMU snapshots through the QMP socket
        Capability.IMAGES,  # oa_vm.images: one Pulumi stack per prepared image
        Capability.CLOUD_EXPIRY,  # the program's schedule; CloudFleetOps moves it
    })

    def __init__(
        self,
        engine: Engine | None = None,
        lister: Lister | None = None,
        remote: RemoteRunner | None = None,
        image_lister: ImageLister | None = None,
    ) -> None:
        on_path = bool(self.cli) and shutil.which(self.cli) is not None
        self.image_lister = image_lister or (self.cli_images if on_path else None)
        self.name = self.info.name
        self.engine: Engine = engine or AutomationEngine()
        self.lister = lister
        self._explicit_lister = lister is not None
        self.remote = remote
        self.driver = PulumiDriver(self.engine)
        self._refreshed_at: dict[str, float] = {}

    def cli_images(self, region: str | None) -> list[image_records.ImageRecord]:
        """The account's images tagged ``oa-vm:image`` (of ``region``), asked with the CLI."""
        raise NotImplementedError

    def cli_lister(self, record: PoolRecord) -> Lister | None:
        """What asks the cloud, with its CLI, for what is still tagged with ``record``'s pool."""
        return None

    def fleet_ops(self) -> FleetOps:
        """Pause, resume and repair through the pool's program
        (:class:`~oa_vm.clouds.pulumi.fleet.CloudFleetOps`).

        Raises:
            ProviderUnavailableError: the cloud's extra is not installed.
        """
        self.check_available()
        from oa_vm.clouds.pulumi.fleet import CloudFleetOps

        return CloudFleetOps(self)

    def latest_expiry(self, record: PoolRecord, now: datetime) -> tuple[datetime, str] | None:
        """The latest expiry the cloud's kill switch can keep for a running pool, and the
        rule, one phrase (None: no limit; Azure's daily schedule has one)."""
        return None

    def timer_runner(self, record: PoolRecord) -> RemoteRunner | None:
        """What reaches the pool's hosts to move their power-off timers (``remote`` when set,
        else SSH with the pool's pinned host keys); None when the hosts run no timer."""
        if not self.info.host_timer:
            return None
        if self.remote is not None:
            return self.remote
        from oa_vm.reach.connect import known_hosts_path

        return ParamikoRunner(known_hosts_path(record.name))

    def snapshot_control(
        self, record: PoolRecord, worker: WorkerRecord, connection: WorkerConnection
    ) -> SnapshotControl:
        """``reset.sh`` on the worker's host, over the pool's SSH path (``remote`` when set)."""
        from oa_vm.clouds.pulumi.reset import worker_control
        from oa_vm.reach.connect import known_hosts_path

        return worker_control(worker, self.remote or known_hosts_path(record.name))

    # -- availability --------------------------------------------------------------------------

    def check_sdk(self) -> None:
        """One line naming the missing extra (plans need the SDK, not the engine)."""
        try:
            importlib.import_module(self.info.sdk_module)
        except ImportError as exc:
            raise ProviderUnavailableError(
                f"the {self.name} provider needs its extra ({self.info.sdk_module} is missing): "
                f"pip install 'oa-vm[{self.name}]'"
            ) from exc

    def check_available(self) -> None:
        """One line naming the missing extra or engine; writes nothing."""
        self.check_sdk()
        self.driver.check_engine()

    # -- settings and programs -----------------------------------------------------------------

    def _regions(self, spec: PoolSpec) -> list[str]:
        """The regions to try, each checked against the cloud's (one line naming the closest
        known region for ``mars-1`` or another cloud's region, before any plan is drawn)."""
        from oa_vm.cost.pricing.regions import check_region

        return [check_region(self.name, r) for r in spec.regions] or [self.info.default_region]

    def _size(self, spec: PoolSpec) -> str:
        """The hosts' size: ``--size`` (checked to nest, and to hold ``--workers-per-host``
        guests), else the default, else with several workers per host the smallest size of the
        default's family that holds them.

        Raises:
            InvalidInputError: a size that cannot nest or holds fewer guests than asked.
        """
        from infra.sizes import size_for_workers, size_spec
        from infra.worker.slots import memory_needed_gib, workers_that_fit

        per_host = spec.workers_per_host
        size = spec.size or self.info.default_size
        if spec.size is None and per_host > 1:
            size = size_for_workers(self.name, size, per_host) or size
        try:
            size = self.info.check_size(size)
        except ValueError as exc:
            raise InvalidInputError(str(exc)) from exc
        offer = size_spec(self.name, size)
        if per_host > 1 and offer is not None:
            holds = workers_that_fit(offer.vcpus, offer.memory_gib)
            if holds < per_host:
                bigger = size_for_workers(self.name, size, per_host)
                fix = (f"use --size {bigger}" if bigger
                       else f"use --workers-per-host {max(holds, 1)}")
                raise InvalidInputError(
                    f"{self.name} size {size} ({offer.vcpus} vCPUs, {offer.memory_gib} GiB) holds "
                    f"{holds} of WAA's workers, not {per_host} (they need {4 * per_host} vCPUs "
                    f"and {memory_needed_gib(per_host):g} GiB): {fix}"
                )
        return size

    def hosts(self, spec: PoolSpec) -> int:
        """The machines a pool of ``spec`` runs on (``--workers-per-host`` on each)."""
        from infra.worker.slots import hosts_needed

        return hosts_needed(spec.workers, spec.workers_per_host)

    def program_settings(
        self,
        spec: PoolSpec,
        region: str,
        public_key: str,
        cidrs: list[str],
        *,
        plan: bool,
        image_id: str | None = None,
        disk_gb: int | None = None,
    ) -> PoolSettings:
        """The pool program's settings for ``spec`` in ``region`` (validated; a ``plan`` allows
        placeholders for what only a create resolves). A repair rebuilds them from the record.

        Raises:
            InvalidInputError: a size that cannot nest, or a bad setting.
        """
        from infra.settings import DEFAULT_EGRESS, PoolSettings, SettingsError
        from oa_vm.model import config

        settings = PoolSettings(
            name=spec.name,
            owner=spec.owner,
            workers=self.hosts(spec),
            size=self._size(spec),
            region=region,
            expires_at=spec.expires_at,
            ssh_public_key=public_key,
            allowed_cidrs=tuple(cidrs),
            spot=spec.spot,
            image_id=image_id,
            disk_gb=disk_gb or config.disk_gb(),
            egress=spec.egress or DEFAULT_EGRESS,
            egress_allowlist=spec.egress_allowlist,
            workers_per_host=spec.workers_per_host,
        )
        try:
            return settings.validate(allow_placeholders=plan)
        except SettingsError as exc:
            raise InvalidInputError(str(exc)) from exc

    # -- images --------------------------------------------------------------------------------

    def _candidate_regions(self, spec: PoolSpec) -> list[str]:
        """The regions a create tries: images (and snapshots) are regional, so a named one pins
        the pool to the first region."""
        return self._regions(spec)[:1] if spec.image else self._regions(spec)

    def task_indexes(self, spec: PoolSpec) -> tuple[str, dict[str, dict[str, list[str]]]] | None:
        """The image and WAA's index files its record holds, which the workers of a pool of
        ``spec`` will serve, found offline: the same in every region the create may take the
        pool to (:meth:`choose_image`). None when not known here: no image yet, a raw snapshot
        or a teammate's image (no record), a record without them, or regions that differ."""
        records = [chosen.record for chosen in (
            self.choose_image(spec, region, look_in_account=False)
            for region in self._candidate_regions(spec)) if chosen is not None]
        indexes = [record.task_indexes if record else None for record in records]
        first = records[0] if records else None
        if first is None or indexes[0] is None or any(i != indexes[0] for i in indexes):
            return None
        return first.id, indexes[0]

    def choose_image(
        self, spec: PoolSpec, region: str, *, look_in_account: bool = True
    ) -> ChosenImage | None:
        """The image for a pool in ``region``: ``spec.image``, else the newest ready one there.

        A named image without a local record is looked for in the account by its tags (a
        teammate's, :mod:`oa_vm.model.shared_images`), unless ``look_in_account`` is False (offline
        plans: it is then looked up at create).

        Raises:
            InvalidInputError: the named image is unknown, of another cloud or region, not
                ready, or its Windows licence expired (one line naming ``oa-vm image-create``).
        """
        if spec.image:
            if spec.image.startswith(RAW_IMAGE_PREFIXES):
                wanted = "snap-" if self.name == "aws" else "/subscriptions/"
                if not spec.image.startswith(wanted):
                    raise InvalidInputError(
                        f"--image {spec.image!r} is not a {self.name} snapshot ID; give an "
                        "oa-vm image ID (see 'oa-vm image-list') or one of your "
                        f"{self.name} snapshots"
                    )
                return ChosenImage(spec.image)
            record = self._named_image(image_records.check_image_id(spec.image), region,
                                       look_in_account=look_in_account)
            if record is None:  # an offline plan: the account is asked at create
                return ChosenImage(IMAGE_FROM_ACCOUNT, None, spec.image)
            if (record.cloud, record.region) != (self.name, region):
                raise InvalidInputError(
                    f"image {record.id!r} is in {record.cloud} {record.region}, not "
                    f"{self.name} {region}; pass --region {record.region}, or build one there "
                    f"with 'oa-vm image-create --cloud {self.name} --region {region}'"
                )
            self._check_usable(record)
            return ChosenImage(str(record.cloud_id), record)
        newest = image_records.newest_ready(self.name, region)
        return ChosenImage(str(newest.cloud_id), newest) if newest else None

    def _named_image(
        self, image_id: str, region: str, *, look_in_account: bool
    ) -> image_records.ImageRecord | None:
        """The local record of ``image_id``, else the account's image of that ID in ``region``
        (None: not looked for, offline).

        Raises:
            ImageNotFoundError: neither here nor in the account.
        """
        from oa_vm.model.shared_images import find

        try:
            return image_records.load(image_id)
        except image_records.ImageNotFoundError as exc:
            if self.image_lister is None:
                raise
            if not look_in_account:
                return None
            try:
                found = find(self.image_lister, image_id, region)
            except (OSError, subprocess.SubprocessError, ValueError) as failed:
                from oa_vm.kit.cli_failure import why_it_failed

                raise image_records.ImageNotFoundError(
                    f"{exc}; asking {self.name} for a shared image failed too "
                    f"({why_it_failed(failed)})"
                ) from failed
            if found is None:
                raise image_records.ImageNotFoundError(
                    f"{exc}; nor does the {self.name} account hold an image tagged "
                    f"oa-vm:image={image_id} in {region} (see 'oa-vm image-list --cloud "
                    f"{self.name} --region {region}')"
                ) from None
            return found

    def _check_usable(self, record: image_records.ImageRecord) -> None:
        if record.state != image_records.READY or not record.cloud_id:
            raise InvalidInputError(
                f"image {record.id!r} is {record.state}, not ready; see 'oa-vm image-list', or "
                f"build another with 'oa-vm image-create --cloud {record.cloud} "
                f"--region {record.region}'"
            )
        if record.is_expired():
            raise InvalidInputError(
                f"image {record.id!r} expired on {state.show_time(record.licence_expires)} "
                "(its Windows evaluation licence lasts 90 days); build a new one with "
                f"'oa-vm image-create --cloud {record.cloud} --region {record.region}' "
                f"and remove the old one with 'oa-vm image-delete {record.id}'"
            )

    def no_image_message(self, region: str) -> str:
        """One line: no image in ``region``, and how to get one."""
        return (
            f"no prepared image for {self.name} {region}: build one first with "
            f"'oa-vm image-create --cloud {self.name} --region {region}' "
            f"({timings.IMAGE_BUILD.text()}, once per region), or pass --build-image to build "
            "it now, or --image ID"
        )

    def preflight(self, spec: PoolSpec) -> None:
        """Checks a real create runs before anything is created or recorded: the size, and an
        image for the first region (unless ``--build-image`` will make one).

        Raises:
            InvalidInputError: one line saying what is wrong and what to run.
        """
        self._size(spec)
        region = self._regions(spec)[0]
        if self.choose_image(spec, region) is None and not spec.build_image:
            raise InvalidInputError(self.no_image_message(region))

    def _density_note(self, spec: PoolSpec, region: str, size: str, host_price: float,
                      hosts: int) -> str:
        """The price per worker of several workers per host, against one per host on the
        default size."""
        per_worker = host_price * hosts / spec.workers
        line = (f"{spec.workers} worker(s) on {hosts} {size} host(s), up to "
                f"{spec.workers_per_host} each: ${host_price:.4f}/h per host = "
                f"${per_worker:.4f}/h per worker, ${host_price * hosts:.4f}/h until "
                f"{spec.expires_at.isoformat(timespec='minutes')}")
        single, _ = worker_price(self.name, region, self.info.default_size, spec.spot)
        if single:
            change = (per_worker - single) / single * 100
            line += (f"; one worker per {self.info.default_size} host: ${single:.4f}/h per worker"
                     f" ({'saves' if change < 0 else 'costs'} {abs(change):.0f}%)")
        return line

    def program_module(self) -> Any:
        """The ``infra`` module of this cloud's pool program (imported here, on first use)."""
        return importlib.import_module(self.info.program_module)

    # -- plan ----------------------------------------------------------------------------------

    def plan(self, spec: PoolSpec) -> Plan:
        """Run the real program under Pulumi's mocks: resources with their inputs, and $/hour
        for the whole pool (the record keeps the per-worker figure), the machine, the image,
        what is not priced, the most it can spend, when it is ready, what bills after expiry
        and cheaper alternatives. No engine, no credentials, no network, no files."""
        self.check_sdk()
        from infra.offline import run_offline
        from infra.settings import CALLER_CIDR_PLACEHOLDER, IMAGE_PLACEHOLDER, SSH_KEY_PLACEHOLDER

        regions = self._regions(spec)
        cidrs = list(spec.allow_cidrs) or [CALLER_CIDR_PLACEHOLDER]
        chosen = self.choose_image(spec, regions[0], look_in_account=False)
        image_id = chosen.cloud_id if chosen else IMAGE_PLACEHOLDER
        settings = self.program_settings(
            spec, regions[0], SSH_KEY_PLACEHOLDER, cidrs, plan=True, image_id=image_id
        )
        module = self.program_module()
        try:
            run = run_offline(
                lambda: module.pool_program(settings).workers,
                module.offline_lookup,
                project=self.info.project,
                stack=spec.name,
            )
        except ValueError as exc:
            raise InvalidInputError(str(exc)) from exc
        resources = [
            PlannedResource(type=r.type, name=r.name, inputs=plain_inputs(r.inputs))
            for r in run.resources
            if r.custom
        ]
        price, price_note = worker_price(self.name, regions[0], settings.size, spec.spot)
        notes = [price_note] if price_note else []
        hosts = settings.workers
        total = None if price is None else price * hosts
        hours = (spec.expires_at - state.utcnow()).total_seconds() / 3600.0
        if price is not None and spec.workers_per_host == 1:
            notes.append(
                f"{spec.workers} worker(s) x ${price:.4f}/h = ${price * spec.workers:.4f}/h "
                f"until {spec.expires_at.isoformat(timespec='minutes')}"
            )
        elif price is not None:
            notes.append(self._density_note(spec, regions[0], settings.size, price, hosts))
        if not spec.allow_cidrs:
            notes.append(f"SSH opens to your public IP only ({CALLER_CIDR_PLACEHOLDER} is "
                         "detected at create; or pass --allow-cidr)")
        if len(regions) > 1:
            notes.append(
                f"regions tried in order on capacity or quota errors: {', '.join(regions)}"
            )
        billing = facts(self.name).billing
        notes.append(cloud_plan.disks_note(
            billing, settings.size, settings.disk_gb, settings.storage_gb, hosts,
            spec.workers_per_host,
        ))
        notes.append(describe_egress(settings.egress, settings.egress_allowlist))
        notes.append("IDs and addresses shown are placeholders until create")
        # Notes may name what the program declares: the resource group's real name, read from
        # the recorded resource (Azure pools), not a placeholder.
        group = next((str(r.inputs.get("resourceGroupName")) for r in run.resources
                      if r.type == "azure-native:resources:ResourceGroup"), "")
        notes.extend(note.format(pool=spec.name, resource_group=group or "(none)")
                     for note in self.info.notes)
        if chosen is None:
            ready_in = (
                f"{timings.about(timings.IMAGE_BUILD.typical_s + timings.WARM_READY.typical_s)}"
                f" (estimated; no image in {regions[0]} yet: an image build, "
                f"{timings.IMAGE_BUILD.text()}, then the pool, {timings.WARM_READY.text()})"
            )
            image = {"id": None, "note": self.no_image_message(regions[0])}
        else:
            ready_in = f"{timings.WARM_READY.text()}, warm, from the image"
            image = chosen.describe()
        return Plan(
            name=spec.name,
            cloud=self.name,
            region=regions[0],
            size=settings.size,
            workers=spec.workers,
            price_per_hour=total,
            resources=resources,
            notes=notes,
            tree=cloud_plan.resource_tree(
                self.info.project, spec.name, [(r.type, r.name) for r in run.resources
                                               if r.custom],
                (self.info.component_type, spec.name),
            ),
            machine={**cloud_plan.machine(
                self.name, settings.size, settings.disk_gb, settings.storage_gb
            ), **({"workers_per_host": spec.workers_per_host}
                  if spec.workers_per_host > 1 else {})},
            image=image,
            not_priced=list(billing.not_priced) if billing else [],
            max_spend_usd=cloud_plan.max_spend(total, hours),
            ready_in=ready_in,
            bills_after_expiry=list(billing.bills_after_expiry) if billing else [],
            alternatives=cloud_plan.alternatives(
                self.name, settings.size, regions[0], spec.spot, size_nests
            ),
        )

    # -- create --------------------------------------------------------------------------------

    def create(self, spec: PoolSpec, progress: Progress) -> PoolRecord:
        """Create the stack (region failover included) and return the record, workers listed.

        Raises:
            ProviderUnavailableError: the extra or the engine is missing (checked before any
                file is written).
            InvalidInputError: a size that cannot nest, or a bad setting.
            ProvisioningError: every region failed, or the cloud refused; what was made is gone
                unless the error's ``resources_left`` says otherwise.
        """
        self.check_available()
        self.preflight(spec)  # refuse a bad size or a missing image before anything is written
        chosen_by_region = {region: self.choose_image(spec, region)
                            for region in self._candidate_regions(spec)}
        # Images are regional: only regions holding one can take the pool.
        regions = [r for r, chosen in chosen_by_region.items() if chosen is not None]
        if not regions:
            raise InvalidInputError(self.no_image_message(self._regions(spec)[0]))
        from oa_vm.clouds import netdetect
        from oa_vm.model import sshkeys

        cidrs = list(spec.allow_cidrs)
        if not cidrs:
            cidrs = [netdetect.detect_cidr()]
            progress(f"SSH will be open to {cidrs[0]} only")
        key_path, public_key = sshkeys.ensure_pool_key(spec.name)
        ensure_passphrase()
        module = self.program_module()
        settings_for = {
            region: self.program_settings(
                spec, region, public_key, cidrs, plan=False,
                image_id=chosen_by_region[region].cloud_id,  # type: ignore[union-attr]
            )
            for region in regions
        }

        def program_for(region: str) -> Callable[[], object]:
            return lambda: module.pool_program(settings_for[region])

        def config_for(region: str) -> Mapping[str, str]:
            key = self.info.region_config
            return {key: region} if key else {}

        ref = stack_ref(self.info.project, spec.name)
        try:
            result = self.driver.create(ref, regions, program_for, config_for, progress)
        except PoolProvisioningError as exc:
            if not exc.resources_left:
                raise
            # The rollback failed with machines possibly made: stop them billing before the
            # user reads the error (the cloud's own expiry may not exist yet).
            last = self.last_resort(spec.name, progress, regions)
            if not last:
                raise
            raise PoolProvisioningError(f"{exc}; {last}", resources_left=True) from exc
        settings = settings_for[result.region]
        price, _ = worker_price(self.name, result.region, settings.size, spec.spot)
        from oa_vm.clouds.pulumi.fleet import worker_from_output

        # several workers per host: each its slot's ports on the host, the host's name as host
        workers = [worker_from_output(w, str(key_path))
                   for w in result.outputs.get("workers") or []]
        return PoolRecord(
            name=spec.name,
            cloud=self.name,
            state=PoolState.PROVISIONING,
            created_at=state.utcnow(),
            expires_at=spec.expires_at,
            owner=spec.owner,
            settings={
                "size": settings.size,
                "region": result.region,
                "regions": regions,
                "spot": spec.spot,
                "egress": settings.egress,
                "egress_allowlist": settings.egress_allowlist,
                "workers": spec.workers,
                **({"workers_per_host": spec.workers_per_host}
                   if spec.workers_per_host > 1 else {}),
                "allow_cidrs": cidrs,
                "image": (chosen_by_region[result.region] or ChosenImage("")).describe(),
                "disk_gb": settings.disk_gb,
                "storage_gb": settings.storage_gb,
                "expected_ready_s": cloud_plan.WARM_READY_S,
                "wait_timeout_s": float(cloud_plan.FIRST_POOL_WAIT_S),
            },
            provider_data={
                "project": ref.project,
                "stack": ref.stack,
                "region": result.region,
                "regions_tried": [{"region": r, "reason": why} for r, why in result.tried],
                "recovered": result.notes,
                **({timers.ARMS_AT_BOOT: True} if self.info.host_timer else {}),
            },
            workers=workers,
            # a worker's share of its host: the host's price over the workers it holds
            price_per_hour=None if price is None else price / spec.workers_per_host,
        )

    def last_resort(self, pool: str, progress: Progress,
                    regions: Sequence[str] = ()) -> str:
        """After a create whose rollback failed: stop what was made from billing by other
        means than the stack (in ``regions``, those the create tried), and return one phrase
        saying what is left and the exact command that removes it ('' when the cloud has no
        such means; the error's own line stands). Never raises."""
        del pool, progress, regions
        return ""

    # -- refresh, wait, destroy ----------------------------------------------------------------

    def unrecorded(self, pool: str) -> PoolRecord | None:
        """``pool``'s stack, when its record was removed by hand and the state still holds it
        (:class:`~oa_vm.clouds.base.StateKeeper`): a record to destroy it by, its region read
        from the stack's config. None when there is no such stack.

        Raises:
            ProviderUnavailableError: the state's files hold the stack but the engine that
                removes it is not installed (what to install is said).
        """
        missing = self.engine.missing()
        if missing is not None:
            if pool in stacks_of(self.info.project):
                raise ProviderUnavailableError.for_stack(
                    pool, self.name, f"the Pulumi engine: {missing}")
            return None
        ref = stack_ref(self.info.project, pool)
        if not self.engine.stack_exists(ref):
            return None
        region = self.engine.get_config(ref).get(self.info.region_config or "", "")
        return PoolRecord(name=pool, cloud=self.name, state=PoolState.FAILED,
                          created_at=state.utcnow(),
                          provider_data={"project": self.info.project, "stack": pool,
                                         "region": region, "unrecorded": True})

    def stack_of(self, record: PoolRecord) -> Any:
        """The Pulumi stack holding ``record``'s pool (its project and stack name)."""
        project = str(record.provider_data.get("project") or self.info.project)
        return stack_ref(project, str(record.provider_data.get("stack") or record.name))

    def update_program(
        self, record: PoolRecord, progress: Progress, *, paused: bool | None
    ) -> dict[str, Any]:
        """Run the pool's program again, its settings rebuilt from the record (pause, resume,
        repair and ``pool-extend``, :mod:`oa_vm.clouds.pulumi.fleet`): the image, disk size
        and what the create resolved are kept, so nothing is replaced that the cloud did not
        remove. The program takes ``record.expires_at``, the pool's current expiry: the cloud's
        kill switch and the tags move to it, and so does the user data a new host is created
        with; an existing host keeps its own (:mod:`infra.first_boot`). An older record's
        ``provider_data["program_expires_at"]`` (the creation's expiry, which its user data
        was kept at) is read no more.

        ``paused``: the pool is paused (True: AWS's instances declared stopped; the program told
        its machines are stopped, ``PoolSettings.paused``, so Azure's 24-hour rule does not
        apply to its expiry) or running (False: AWS's declared running); None leaves AWS's
        power state alone. Returns the program's outputs.

        Raises:
            ProvisioningError: the update failed.
        """
        from oa_vm.model import sshkeys

        settings = record.settings
        region = str(record.provider_data.get("region") or settings.get("region") or "")
        expires = record.expires_at
        assert expires is not None, "cloud pools always have an expiry"
        spec = PoolSpec(
            name=record.name, cloud=record.cloud, workers=int(settings.get("workers") or 1),
            workers_per_host=int(settings.get("workers_per_host") or 1),
            owner=record.owner, expires_at=expires, size=settings.get("size"),
            regions=[region], spot=bool(settings.get("spot")),
            allow_cidrs=list(settings.get("allow_cidrs") or []),
            egress=settings.get("egress") or None,
            egress_allowlist=str(settings.get("egress_allowlist") or ""),
        )
        _key_path, public_key = sshkeys.ensure_pool_key(record.name)
        # The image and disk size the pool was created with: a later default would replace
        # every instance.
        image = settings.get("image") or {}
        program_settings = self.program_settings(
            spec, region, public_key, list(spec.allow_cidrs), plan=False,
            image_id=image.get("cloud_id") or None, disk_gb=settings.get("disk_gb"),
        )
        ref = self.stack_of(record)
        # What the create resolved (the AMI above all): a newer one must replace nothing.
        from infra.settings import with_pinned

        program_settings = with_pinned(program_settings, self.driver.pinned(ref))
        indexes = settings.get("worker_indexes")
        if indexes:  # a repair added or retired workers: these numbers, no other
            program_settings = replace(
                program_settings, workers=len(indexes), indexes=tuple(int(i) for i in indexes)
            )
        program_settings = replace(program_settings, paused=paused is True)
        module = self.program_module()
        cloud = record.cloud

        def program() -> object:
            pool = module.pool_program(program_settings)
            if cloud == "aws" and paused is not None:
                from infra.pause import declare_power_states

                declare_power_states(pool, program_settings, paused=paused)
            return pool

        key = self.info.region_config
        config: Mapping[str, str] = {key: region} if key else {}
        try:
            outputs: dict[str, Any] = self.driver.with_recovery(
                ref, progress, lambda: self.engine.up(ref, program, config, progress)
            )
        except EngineError as exc:
            raise ProvisioningError(f"pool {record.name!r}: the update failed: {exc}") from exc
        return outputs

    def refresh(self, record: PoolRecord, *, network: bool = True) -> PoolRecord:
        """Refresh the stack from the cloud; workers whose instance is gone become ``LOST``.

        Within one provider (one ``pool-wait``), at most once per :attr:`refresh_interval_s`:
        the record is returned unchanged in between, and always without ``network``.
        """
        if not network:
            return record
        last = self._refreshed_at.get(record.name)
        if last is not None and time.monotonic() - last < self.refresh_interval_s:
            return record
        self._refreshed_at[record.name] = time.monotonic()
        alive = self.driver.refresh(self.stack_of(record), lambda _line: None)
        for worker in record.workers:
            gone = alive is None or bool(worker.provider_id and worker.provider_id not in alive)
            if gone and worker.state != WorkerState.STOPPED:
                worker.state = WorkerState.LOST
                worker.detail = "the instance no longer exists (expired, evicted or removed)"
        if record.settings.get("spot"):  # AWS's and Azure's watchers write the same status
            self._read_drain_notices(record)
        record.state = state.derive_pool_state(record.workers)
        return record

    def _read_drain_notices(self, record: PoolRecord) -> None:
        """Ready spot workers whose host reports an interruption notice become ``DRAINING``
        (read over SSH from the status file the spot watcher writes; see
        :mod:`oa_vm.reach.drain`)."""
        from oa_vm.reach.drain import mark_draining, notice_from_status, read_status

        for worker in record.workers:
            if worker.state == WorkerState.READY and worker.ssh is not None:
                notice = notice_from_status(read_status(record, worker, self.remote))
                if notice is not None:
                    mark_draining(worker, notice)

    def worker_phase(self, record: PoolRecord, index: int) -> tuple[str, bool]:
        """SSH -> cloud-init -> container -> WAA probe -> scoring probe (see ``cloud_wait``)."""
        return worker_phase(record, index, self.remote)

    def destroy(self, record: PoolRecord, progress: Progress) -> CleanupReport:
        """Refresh, destroy, check the stack is empty, remove it, check the cloud by tag (with
        its CLI when no lister was given and the CLI is on PATH)."""
        if not self._explicit_lister:
            self.lister = self.cli_lister(record) if shutil.which(self.cli) else None
        return self.driver.destroy(
            self.stack_of(record),
            progress,
            lister=self.lister,
            manual_check=self.info.manual_check.format(
                pool=record.name, region=record.provider_data.get("region", "")
            ),
        )


def worker_price(cloud: str, region: str, size: str, spot: bool) -> tuple[float | None, str | None]:
    """$/hour per worker from the price catalog, or None with the reason."""
    try:
        from oa_vm.cost.pricing import hourly_price
    except ImportError:
        return None, "price unknown: the price catalog is not installed"
    try:
        return float(hourly_price(cloud, region, size, spot)), None
    except OaVmError as exc:
        return None, f"price unknown: {exc}"


def plain_inputs(value: Any) -> Any:
    """Mock inputs come back through protobuf: whole floats become ints again for display."""
    if isinstance(value, dict):
        return {k: plain_inputs(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_inputs(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
