"""AWS pools: the Pulumi program of :mod:`infra.aws`, driven per pool.

Nothing cloud-related is imported here at module import; ``pulumi`` and ``pulumi_aws`` load
inside the provider's methods.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Sequence
from typing import Any

from infra.sizes import AWS_DEFAULT_SIZE, check_aws_size
from oa_vm.clouds.base import Progress
from oa_vm.clouds.pulumi.driver import Lister
from oa_vm.clouds.pulumi.provider import CloudInfo, PulumiCloudProvider
from oa_vm.model.image_records import ImageRecord
from oa_vm.model.state import PoolRecord

LIST_TIMEOUT_S = 60.0
MANUAL_CHECK = (
    "aws resourcegroupstaggingapi get-resources --region {region} "
    "--tag-filters Key=oa-vm:pool,Values={pool}"
)


def aws_cli_json(region: str, args: list[str]) -> Any:
    """``aws ARGS --region R --output json``, parsed (fixed argv, no shell).

    Raises:
        subprocess.CalledProcessError, subprocess.TimeoutExpired: the CLI failed or hung.
    """
    done = subprocess.run(
        ["aws", *args, "--region", region, "--output", "json"],
        capture_output=True, text=True, timeout=LIST_TIMEOUT_S, check=True,
    )
    return json.loads(done.stdout or "{}")


def aws_cli_image_lister(region: str | None) -> list[ImageRecord]:
    """The account's own snapshots tagged ``oa-vm:image`` in ``region`` (the default region
    when None: EBS snapshots are regional), as image records."""
    from oa_vm.model.shared_images import aws_snapshots

    where = region or "us-east-1"
    data = aws_cli_json(where, ["ec2", "describe-snapshots", "--owner-ids", "self",
                                "--filters", "Name=tag-key,Values=oa-vm:image"])
    return aws_snapshots(data, where)


def aws_cli_lister(region: str) -> Lister:
    """Lists what AWS still holds tagged ``oa-vm:pool=<pool>`` in ``region`` with the ``aws`` CLI.

    Terminated instances keep their tags for up to an hour, so instances are asked of EC2 with
    a state filter; every other resource comes from the tagging API.
    """

    def run(args: list[str]) -> Any:
        return aws_cli_json(region, args)

    def lister(pool: str) -> list[str]:
        tagged = run(["resourcegroupstaggingapi", "get-resources",
                      "--tag-filters", f"Key=oa-vm:pool,Values={pool}"])
        arns = [
            str(item.get("ResourceARN"))
            for item in (tagged.get("ResourceTagMappingList") or [])
            if ":instance/" not in str(item.get("ResourceARN"))
        ]
        live = run(["ec2", "describe-instances", "--filters",
                    f"Name=tag:oa-vm:pool,Values={pool}",
                    "Name=instance-state-name,Values=pending,running,stopping,stopped"])
        for reservation in live.get("Reservations") or []:
            for instance in reservation.get("Instances") or []:
                arns.append(f"instance {instance.get('InstanceId')} "
                            f"({instance.get('State', {}).get('Name')})")
        return arns

    return lister


LIVE_STATES = "Name=instance-state-name,Values=pending,running,stopping,stopped"


def terminate_by_tag(pool: str, regions: Sequence[str], progress: Progress) -> str:
    """AWS's kill switch after a create whose rollback failed: terminate every instance tagged
    ``oa-vm:pool=<pool>`` in ``regions`` with the ``aws`` CLI, found by the tag rather than the
    stack (whose rollback just failed), and return one phrase: what was terminated, what is
    left, and the exact command that removes it; or, when they could not be terminated, the
    exact command that does. Never raises.

    Terminate, not stop: the pool failed and holds nothing to resume (its Windows disk is a
    separate volume, copied from the image, which termination leaves for ``pool-cleanup``); a
    one-time spot instance cannot be stopped at all; and a stopped instance still bills its
    root volume. The pool's EventBridge expiry schedule, made in the same failed update, may
    not exist, and the host's own power-off at the expiry may be hours away.
    """
    remove = f"'oa-vm pool-cleanup --pool {pool}'"
    where = list(regions) or ["us-east-1"]

    def find(region: str) -> str:
        return (f"aws ec2 describe-instances --region {region} --filters "
                f"Name=tag:oa-vm:pool,Values={pool} {LIVE_STATES} --query "
                "Reservations[].Instances[].InstanceId --output text")

    by_hand = ("the instances may still be running and billing; terminate them now with "
               + " and ".join(f"'aws ec2 terminate-instances --region {r} --instance-ids "
                              f"$({find(r)})'" for r in where)
               + f", then remove the rest with {remove}")
    if shutil.which("aws") is None:
        return f"{by_hand} (no 'aws' CLI here to do it)"
    ended: list[str] = []
    try:
        for region in where:
            live = aws_cli_json(region, ["ec2", "describe-instances", "--filters",
                                         f"Name=tag:oa-vm:pool,Values={pool}", LIVE_STATES])
            ids = [str(i.get("InstanceId")) for r in live.get("Reservations") or []
                   for i in r.get("Instances") or []]
            if ids:
                progress(f"last resort: terminating {len(ids)} instance(s) tagged "
                         f"oa-vm:pool={pool} in {region}")
                aws_cli_json(region, ["ec2", "terminate-instances", "--instance-ids", *ids])
                ended += ids
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        from oa_vm.kit.cli_failure import why_it_failed

        return f"{by_hand} (terminating failed: {why_it_failed(exc)})"
    stopped = (f"terminated {len(ended)} instance(s) tagged oa-vm:pool={pool} "
               f"({', '.join(ended)}), so none bills for compute" if ended
               else f"AWS holds no running instance tagged oa-vm:pool={pool}")
    return (f"{stopped}; left: the pool's storage volumes, network and expiry schedule (the "
            f"volumes bill until removed); remove them with {remove}")


class AwsProvider(PulumiCloudProvider):
    """Pools of WAA workers on AWS EC2 (C8i/M8i/R8i with nested virtualization)."""

    info = CloudInfo(
        name="aws",
        sdk_module="pulumi_aws",
        program_module="infra.aws",
        default_size=AWS_DEFAULT_SIZE,
        default_region="us-east-1",
        ssh_user="ubuntu",
        region_config="aws:region",
        check_size=check_aws_size,
        manual_check=MANUAL_CHECK,
        image_module="infra.image_aws",
        component_type="oa-vm:aws:WorkerPool",
        host_timer=True,  # infra.aws.HOST_FACTS.guest_poweroff
        notes=(
            "at the expiry an EventBridge Scheduler schedule terminates the instances "
            "(and each worker also powers itself off: shutdown behaviour terminate)",
            "without a default VPC the pool makes its own (AWS allows 5 VPCs per region "
            "by default)",
        ),
    )
    cli = "aws"

    def cli_images(self, region: str | None) -> list[ImageRecord]:
        """A teammate's images, found with the ``aws`` CLI."""
        return aws_cli_image_lister(region)

    def cli_lister(self, record: PoolRecord) -> Lister | None:
        """:func:`aws_cli_lister` in the pool's region."""
        region = str(record.provider_data.get("region") or "")
        return aws_cli_lister(region) if region else None

    def last_resort(self, pool: str, progress: Progress,
                    regions: Sequence[str] = ()) -> str:
        """AWS's kill switch after a failed rollback: :func:`terminate_by_tag` in the regions
        the create tried."""
        return terminate_by_tag(pool, regions, progress)
