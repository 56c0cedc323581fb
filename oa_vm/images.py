"""Prepared images: plan, build, list and delete the Windows image pools start from.

One image per region is built once (:data:`oa_vm.kit.timings.IMAGE_BUILD`) and reused by every pool
of that region, which then starts warm (:data:`oa_vm.kit.timings.WARM_READY`) instead of installing
Windows on every worker. The build is one Pulumi stack per image (project
``oa-vm-<cloud>-images``) driven through three updates (see :mod:`infra.image_aws`): ``build``
(a builder host with an empty storage volume), ``snapshot`` (once the builder reports ``built``
in its status file), ``keep`` (the builder and its volume deleted, the snapshot kept). Records
live in ``$OA_VM_HOME/images`` (:mod:`oa_vm.model.image_records`).

Nothing prints here; progress goes to a callback, errors are :mod:`oa_vm.errors` types.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from oa_vm.clouds import facts, iso_source, size_nests
from oa_vm.clouds.base import CleanupReport, Plan, PlannedResource, Progress, no_progress
from oa_vm.cost import cloud_plan
from oa_vm.errors import InvalidInputError, ProviderUnavailableError, ProvisioningError
from oa_vm.kit import timings
from oa_vm.model import image_records, state
from oa_vm.model.image_records import ImageRecord

if TYPE_CHECKING:
    from infra.settings import ImageSettings
    from oa_vm.clouds.pulumi.provider import PulumiCloudProvider
    from oa_vm.model.shared_images import ListedImage
    from oa_vm.model.state import SshEndpoint

BUILD_WAIT_S = cloud_plan.BUILD_READY_S * cloud_plan.WAIT_MARGIN
"""How long :func:`follow_builder` waits for the builder to report ``built``."""
BUILDER_TTL = timedelta(seconds=BUILD_WAIT_S + cloud_plan.SNAPSHOT_MAX_S + 30 * 60)
"""The builder's own expiry (it ends itself even if oa-vm is gone): the whole build wait, then
the snapshot stage at its slowest, and half an hour to delete it; a builder that expired
mid-snapshot would lose the build."""

WaitBuilt = Callable[[ImageRecord, Mapping[str, Any], Progress], dict[str, Any]]
"""Follows the builder until its status says ``built``; returns its image info
(``waa_image`` digest..., ``task_indexes`` when read). Raises ``ProvisioningError`` naming the
failed step."""
UploadIso = Callable[[ImageRecord, Mapping[str, Any], Path, Progress], None]
"""Carries a user's local ISO onto the builder (:func:`upload_iso`). Raises
``ProvisioningError``."""


def new_image_id(region: str, now: datetime) -> str:
    """``waa-<region>-<yyyymmdd-hhmm>`` (UTC)."""
    return f"waa-{region.lower()}-{now.astimezone(UTC).strftime('%Y%m%d-%H%M')}"


def cloud_provider(cloud: str) -> PulumiCloudProvider:
    """The provider of ``cloud``, which must build images (aws or azure).

    Raises:
        InvalidInputError: a cloud without images (local pools need none).
    """
    from oa_vm.clouds import get_provider
    from oa_vm.clouds.base import Capability

    provider = get_provider(cloud)
    if Capability.IMAGES not in provider.capabilities:
        raise InvalidInputError(
            f"--cloud {cloud}: images are for cloud pools (aws or azure); local pools need none"
        )
    # The providers declaring IMAGES are the Pulumi ones (tests/unit/providers/
    # test_capabilities.py checks every registered provider's declaration).
    return cast("PulumiCloudProvider", provider)


def image_settings(
    provider: PulumiCloudProvider,
    region: str,
    *,
    size: str | None,
    owner: str,
    public_key: str,
    cidrs: list[str],
    now: datetime,
    plan: bool,
    windows_version: str | None = None,
    iso_bytes: int = 0,
) -> ImageSettings:
    """The image and its builder (one host of the pool program in ``build`` mode).

    ``iso_bytes``: the size of a user's local ISO the builder waits for; its upload's budget
    is added to the builder's life.

    Raises:
        InvalidInputError: a region the cloud lacks, a size that cannot nest, or a bad setting.
    """
    from infra.settings import DEFAULT_WINDOWS_VERSION, ImageSettings, PoolSettings, SettingsError
    from oa_vm.cost.pricing.regions import check_region
    from oa_vm.model import config

    region = check_region(provider.name, region)
    name = new_image_id(region, now)
    try:
        builder = PoolSettings(
            name=name,
            owner=owner,
            workers=1,
            size=provider.info.check_size(size or provider.info.default_size),
            region=region,
            expires_at=now + builder_ttl(iso_bytes),
            ssh_public_key=public_key,
            allowed_cidrs=tuple(cidrs),
            mode="build",
            disk_gb=config.disk_gb(),
            windows_version=windows_version or DEFAULT_WINDOWS_VERSION,
            iso_bytes=iso_bytes,
            iso_timeout_s=iso_source.upload_budget_s(iso_bytes) if iso_bytes else 0,
        )
        return ImageSettings(name=name, builder=builder, created_at=now).validate(
            allow_placeholders=plan
        )
    except (SettingsError, ValueError) as exc:
        raise InvalidInputError(str(exc)) from exc


def builder_ttl(iso_bytes: int = 0) -> timedelta:
    """The builder's own expiry: :data:`BUILDER_TTL`, plus the upload's budget for a local ISO
    of ``iso_bytes`` (the build waits for it before installing)."""
    return BUILDER_TTL + timedelta(seconds=iso_source.upload_budget_s(iso_bytes) if iso_bytes
                                   else 0)


def _image_program(provider: PulumiCloudProvider) -> Any:
    return importlib.import_module(provider.info.image_module)


def _storage_per_month(cloud: str, size_gb: int) -> float:
    billing = facts(cloud).billing
    return round(size_gb * (billing.snapshot_per_gb_month if billing else 0.05), 2)


def plan_image(
    provider: PulumiCloudProvider,
    region: str,
    *,
    size: str | None = None,
    allow_cidrs: list[str] | None = None,
    owner: str = "you",
    iso: str | None = None,
) -> Plan:
    """What ``image-create`` would make and cost, offline (the program under Pulumi's mocks):
    the builder, its storage volume and the snapshot. No engine, credentials, network or files.
    """
    from infra.offline import run_offline
    from infra.settings import CALLER_CIDR_PLACEHOLDER, SSH_KEY_PLACEHOLDER
    from oa_vm.clouds.pulumi.provider import plain_inputs, worker_price

    if iso:
        iso_source.check(iso)
    local = iso_source.local_iso(iso)
    iso_bytes = local.stat().st_size if local else 0
    provider.check_sdk()
    now = state.utcnow()
    cidrs = list(allow_cidrs or []) or [CALLER_CIDR_PLACEHOLDER]
    image = image_settings(
        provider, region, size=size, owner=owner, public_key=SSH_KEY_PLACEHOLDER, cidrs=cidrs,
        now=now, plan=True, iso_bytes=iso_bytes,
    )
    # The snapshot's tags name the digests the builder will report: placeholders in a plan,
    # like the IDs and addresses.
    image = dataclasses.replace(
        image, waa_digest=_planned_digest(image.builder.waa_image),
        base_digest=_planned_digest(image.builder.base_image),
    )
    module = _image_program(provider)
    lookup = importlib.import_module(provider.info.program_module).offline_lookup
    try:
        run = run_offline(
            lambda: module.image_program(image, "snapshot"), lookup,
            project=image_records.project(provider.name), stack=image.name,
        )
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from exc
    custom = [r for r in run.resources if r.custom]
    price, price_note = worker_price(provider.name, region, image.builder.size, False)
    # The builder bills through the snapshot stage too: it is deleted only after the snapshot.
    upload_s = iso_bytes / iso_source.PLANNED_UPLOAD_BYTES_PER_S
    hours = (cloud_plan.BUILD_READY_S + cloud_plan.SNAPSHOT_READY_S + upload_s) / 3600.0
    ttl_h = builder_ttl(iso_bytes).total_seconds() / 3600.0
    monthly = _storage_per_month(provider.name, image.builder.storage_gb)
    notes = [price_note] if price_note else []
    cost = f"${price * hours:.2f} at the listed price" if price is not None else "price unknown"
    notes += [
        f"Windows: {iso_source.describe(iso)}",
        *([iso_source.upload_note(iso_bytes, price)] if iso_bytes else []),
        f"the builder runs about {hours:.1f} h with the snapshot stage ({cost}), "
        f"then is deleted; it ends itself after {ttl_h:g} h whatever happens",
        f"keeping the image costs about ${monthly:.2f}/month "
        f"({image.builder.storage_gb} GB snapshot at most)",
        cloud_plan.disks_note(
            facts(provider.name).billing, image.builder.size, image.builder.disk_gb,
            image.builder.storage_gb
        ),
        "IDs and addresses shown are placeholders until create",
        *unpinned_notes(image.builder.waa_image, image.builder.base_image),
    ]
    return Plan(
        name=image.name,
        kind="image",
        cloud=provider.name,
        region=region,
        size=image.builder.size,
        workers=1,
        price_per_hour=price,
        resources=[PlannedResource(r.type, r.name, plain_inputs(r.inputs)) for r in custom],
        notes=notes,
        tree=cloud_plan.resource_tree(
            image_records.project(provider.name), image.name, [(r.type, r.name) for r in custom],
            (provider.info.component_type, f"{image.name}-builder"),
            top_level=(f"{image.name}-rg", f"{image.name}-image"),
        ),
        machine=cloud_plan.machine(
            provider.name, image.builder.size, image.builder.disk_gb, image.builder.storage_gb
        ),
        image={
            "id": image.name,
            "waa_image": image.builder.waa_image,
            "base_image": image.builder.base_image,
            "licence_expires": state.format_time(image.licence_expires),
            "storage_usd_per_month": monthly,
        },
        not_priced=[
            "the builder's disks while it runs",
            f"the snapshot while kept (about ${monthly:.2f}/month)",
            "downloads into the cloud (free) and the Windows ISO (free evaluation)",
        ],
        max_spend_usd=cloud_plan.max_spend(price, ttl_h),
        ready_in=timings.IMAGE_BUILD.text(),
        bills_after_expiry=[f"the snapshot (about ${monthly:.2f}/month) until oa-vm image-delete"],
        alternatives=cloud_plan.alternatives(provider.name, image.builder.size, region, False,
                                             size_nests),
    )


def create_image(
    provider: PulumiCloudProvider,
    region: str,
    *,
    size: str | None = None,
    allow_cidrs: list[str],
    owner: str,
    wait_built: WaitBuilt | None = None,
    progress: Progress = no_progress,
    iso: str | None = None,
    upload: UploadIso | None = None,
) -> ImageRecord:
    """Build an image: builder up, wait for ``built``, snapshot, builder deleted, image kept.

    The record is written as ``building`` before the first update (so an interrupted build can
    be found and deleted) and ``ready`` at the end. On any failure the image's stack is
    destroyed and the record removed; the error names the failed step. A local ``iso`` is
    uploaded to the builder once it is up (``upload``, :func:`upload_iso` by default), before
    the wait: its bootstrap waits for it before starting Windows' install.

    Raises:
        ProviderUnavailableError: the extra or the engine is missing (nothing written).
        InvalidInputError: a bad size or CIDR.
        ProvisioningError: the build failed (what was made is removed, unless it says so).
    """
    from infra.settings import with_pinned
    from oa_vm.clouds.pulumi.driver import EngineError, classify_failure, ensure_passphrase
    from oa_vm.clouds.pulumi.driver import stack_ref as make_ref
    from oa_vm.model import sshkeys

    if iso:  # refused in one line before anything is made
        iso_source.check(iso)
    provider.check_available()
    now = state.utcnow()
    local = iso_source.local_iso(iso)
    iso_bytes = local.stat().st_size if local else 0
    # dockur's VERSION: a URL of the user's own ISO, else its Microsoft download; a local ISO
    # is bound as dockur's /custom.iso instead, and VERSION is then ignored.
    version = iso_source.builder_url(iso, region, builder_ttl()) if iso and not local else None
    # Validate everything before the first write.
    image_settings(
        provider, region, size=size, owner=owner, public_key="ssh-ed25519 AAAA check",
        cidrs=allow_cidrs, now=now, plan=False, windows_version=version, iso_bytes=iso_bytes,
    )
    image_id = new_image_id(region, now)
    if image_records.record_path(image_id).exists():
        raise InvalidInputError(f"image {image_id!r} exists already; try again in a minute")
    _key_path, public_key = sshkeys.ensure_pool_key(image_id)
    image = image_settings(
        provider, region, size=size, owner=owner, public_key=public_key, cidrs=allow_cidrs,
        now=now, plan=False, windows_version=version, iso_bytes=iso_bytes,
    )
    ensure_passphrase()
    ref = make_ref(image_records.project(provider.name), image.name)
    record = ImageRecord(
        id=image.name, cloud=provider.name, region=region, state=image_records.BUILDING,
        size_gb=image.builder.storage_gb, created_at=now, licence_expires=image.licence_expires,
        waa_image=image.builder.waa_image, base_image=image.builder.base_image,
        builder_size=image.builder.size,
        project=ref.project, stack=ref.stack, owner=owner,
        storage_usd_per_month=_storage_per_month(provider.name, image.builder.storage_gb),
    )
    image_records.save(record)
    module = _image_program(provider)
    config = {provider.info.region_config: region} if provider.info.region_config else {}
    wait = wait_built or follow_builder
    step = "build"
    try:
        progress(f"image {image.name}: starting the builder ({image.builder.size} in {region})")
        outputs = provider.driver.update(
            ref, lambda: module.image_program(image, "build"), config, progress
        )
        if local is not None:
            step = "upload"
            (upload or upload_iso)(record, outputs, local, progress)
        step = "wait"
        info = wait(record, outputs, progress)
        _require_digests(info)
        record.waa_image = info["waa_image"]
        record.base_image = info["base_image"]
        record.task_indexes = info.get("task_indexes")
        # The builder's inputs as the first update resolved them (its AMI: a newer one now would
        # replace the builder), and the digests it really used, for the snapshot's tags.
        image = dataclasses.replace(
            image, builder=with_pinned(image.builder, provider.driver.pinned(ref)),
            waa_digest=info.get("waa_image", ""), base_digest=info.get("base_image", ""),
        )
        step = "snapshot"
        progress(f"image {image.name}: snapshotting the storage volume")
        volume_id = str(outputs["volume_id"])
        outputs = provider.driver.update(
            ref, lambda: module.image_program(image, "snapshot"), config, progress
        )
        step = "keep"
        progress(f"image {image.name}: deleting the builder, keeping the snapshot")
        outputs = provider.driver.update(
            ref, lambda: module.image_program(image, "keep", volume_id), config, progress
        )
    except (EngineError, ProvisioningError, KeyError) as exc:
        reason = classify_failure(str(exc)).reason if isinstance(exc, EngineError) else str(exc)
        _roll_back(provider, ref, record, progress)
        raise ProvisioningError(
            f"building image {image.name} failed at the {step} step: {reason}; what was made has "
            "been removed (see docs/runbook.md, 'Image builds')"
        ) from exc
    record.state = image_records.READY
    record.cloud_id = str(outputs["image_id"])
    record.volume_id = volume_id
    image_records.save(record)
    _forget_builder_key(image.name)
    progress(f"image {image.name} is ready ({record.cloud_id})")
    return record


def unpinned_notes(*refs: str) -> list[str]:
    """One note per image named by a tag, not a digest: what a build of it will use is
    whatever the tag points at on the day, and only the image record says which that was."""
    from infra.settings import is_digest

    return [f"{ref} is a tag, not pinned: the build records the digest it pulls (oa-vm "
            "image-list); pin it as name@sha256:<digest> in infra/settings.py"
            for ref in refs if not is_digest(ref)]


def _planned_digest(ref: str) -> str:
    """A placeholder digest for ``ref`` in a plan (its name, a digest of zeros)."""
    name = ref.split("@", 1)[0]
    if ":" in name.rsplit("/", 1)[-1]:
        name = name.rsplit(":", 1)[0]
    return f"{name}@sha256:{'0' * 64}"


def _require_digests(info: Mapping[str, Any]) -> None:
    """The builder's image info names both images by digest (``bootstrap.sh`` refuses to go on
    without them); a tag name in their place would let the image's tags claim what nobody can
    check, so such a build fails.

    Raises:
        ProvisioningError: an image is missing or not a digest.
    """
    from infra.settings import is_digest

    for key, what in (("waa_image", "WAA"), ("base_image", "dockur/windows")):
        ref = info.get(key, "")
        if not is_digest(ref):
            raise ProvisioningError(
                f"the builder reported {ref or 'nothing'!r} for the {what} image, not a digest "
                "(name@sha256:...); see the builder's log: journalctl -u oa-vm-bootstrap"
            )


def _roll_back(
    provider: PulumiCloudProvider, ref: Any, record: ImageRecord, progress: Progress
) -> None:
    report = provider.driver.destroy(ref, progress)
    if report.left:
        record.state = image_records.FAILED
        record.detail = "left: " + "; ".join(report.left)
        image_records.save(record)
        raise ProvisioningError(
            f"building image {record.id} failed and removing what was made failed too; run "
            f"'oa-vm image-delete {record.id}'"
        )
    image_records.delete(record.id)
    _forget_builder_key(record.id)


def _forget_builder_key(image_id: str) -> None:
    import shutil

    folder = state.pool_dir(image_id)
    if folder.is_dir() and not (folder / "pool.json").exists():
        shutil.rmtree(folder, ignore_errors=True)


def list_images(
    provider: PulumiCloudProvider, region: str | None = None
) -> list[ListedImage]:
    """The images of ``provider``'s cloud (in ``region``, if given): local records and those
    the account holds by their ``oa-vm:image`` tags (a teammate's), each marked where it was
    found; newest first.

    Raises:
        InvalidInputError: ``region`` is not one of the cloud's (before the cloud is asked).
        ProviderUnavailableError: the cloud's CLI (``aws``/``az``) is not installed.
        ProvisioningError: the CLI failed (one line with its last words).
    """
    import subprocess

    from oa_vm.cost.pricing.regions import check_region
    from oa_vm.model.shared_images import merge

    if region is not None:  # as image-create's: a typo is bad input, not the cloud's failure
        region = check_region(provider.name, region)

    cli = facts(provider.name).cli
    if provider.image_lister is None:
        raise ProviderUnavailableError(
            f"listing the images of the {provider.name} account needs the '{cli}' CLI, logged "
            "in; without --cloud, image-list shows this machine's images"
        )
    local = [r for r in image_records.list_records()
             if r.cloud == provider.name and (region is None or r.region == region)]
    try:
        found = provider.image_lister(region)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        from oa_vm.kit.cli_failure import why_it_failed

        raise ProvisioningError(
            f"'{cli}' could not list the account's snapshots: {why_it_failed(exc)}"
        ) from exc
    return merge(local, found)


def delete_image(
    image_id: str, provider: PulumiCloudProvider | None = None, progress: Progress = no_progress
) -> CleanupReport:
    """Delete the image's snapshot (and anything its stack still holds), then its record.

    Pools made from the image are unaffected: their storage volumes are copies.

    Raises:
        ImageNotFoundError: no such image.
    """
    from oa_vm.clouds.pulumi.driver import stack_ref as make_ref

    record = image_records.load(image_records.check_image_id(image_id))
    provider = provider or cloud_provider(record.cloud)
    provider.check_available()
    report = provider.driver.destroy(make_ref(record.project, record.stack), progress)
    if report.left:
        record.detail = "left: " + "; ".join(report.left)
        image_records.save(record)
        return report
    image_records.delete(record.id)
    _forget_builder_key(record.id)
    report.removed.append(f"removed the record of image {record.id!r}")
    return report


def follow_builder(
    record: ImageRecord, outputs: Mapping[str, Any], progress: Progress
) -> dict[str, Any]:
    """Follow the builder over SSH until its status file says ``built`` (the real wait), then
    read WAA's index files out of the WAA image it pulled (:func:`read_task_indexes`).

    The builder is the first of ``outputs["workers"]`` (``public_ip``, ``ssh_user`` and, when
    not 22, ``ssh_port``); its key is the image's own (:func:`oa_vm.model.sshkeys.key_path`).

    Raises:
        ProvisioningError: the builder reported a failed step, or the deadline passed.
    """
    from oa_vm.clouds.pulumi.wait import follow_status

    ssh = _builder_ssh(record, outputs)
    known_hosts = state.pool_dir(record.id) / "known_hosts"
    info: dict[str, Any] = follow_status(
        ssh, known_hosts, name=f"{record.id}-builder", timeout_s=BUILD_WAIT_S,
        progress=progress, want="built",
    )
    info["task_indexes"] = read_task_indexes(ssh, known_hosts, info.get("waa_image", ""),
                                             progress, name=f"image {record.id}")
    return info


def read_task_indexes(
    ssh: SshEndpoint, known_hosts: Path, waa_image: str, progress: Progress, *, name: str
) -> dict[str, dict[str, list[str]]] | None:
    """WAA's index files, every one at the top of its task folder as ``waa_image`` on the
    builder holds them (:func:`oa_vm.reach.host_status.task_indexes_command`: what its
    workers' scoring servers serve), for the image's record: its pools' task IDs and index
    names are then checked before a pool exists. Not reading them does not fail the build
    (the image is as good without them, its pools' selections are checked on the workers):
    one progress line says so, and None.
    """
    from oa_vm.reach.host_status import (
        COMMAND_TIMEOUT_S,
        ParamikoRunner,
        RemoteUnreachableError,
        parse_task_indexes,
        task_indexes_command,
    )

    try:
        done = ParamikoRunner(known_hosts).run(
            ssh, task_indexes_command(waa_image), COMMAND_TIMEOUT_S)
        return parse_task_indexes(done.output)
    except (RemoteUnreachableError, ValueError) as exc:
        progress(f"{name}: WAA's task indexes not recorded ({exc}); its pools' task IDs "
                 "are checked on their workers")
        return None


def _builder_ssh(record: ImageRecord, outputs: Mapping[str, Any]) -> SshEndpoint:
    """The builder's SSH endpoint from the build's outputs, with the image's own key."""
    from oa_vm.model.sshkeys import key_path
    from oa_vm.model.state import SshEndpoint

    workers = list(outputs.get("workers") or [])
    if not workers:
        raise ProvisioningError("the builder's address is missing from the stack outputs")
    worker = workers[0]
    return SshEndpoint(host=str(worker["public_ip"]), port=int(worker.get("ssh_port") or 22),
                       user=str(worker["ssh_user"]), key_path=str(key_path(record.id)))


def upload_iso(
    record: ImageRecord, outputs: Mapping[str, Any], iso: Path, progress: Progress
) -> None:
    """Upload a user's local ISO to the builder over SSH (:mod:`oa_vm.clouds.iso_delivery`),
    with the image's key and known_hosts, whole, within the upload's budget.

    Raises:
        ProvisioningError: the upload failed or ran out of time (one line).
    """
    from oa_vm.clouds.iso_delivery import deliver

    deliver(iso, _builder_ssh(record, outputs), state.pool_dir(record.id) / "known_hosts",
            name=f"{record.id}-builder", progress=progress)
