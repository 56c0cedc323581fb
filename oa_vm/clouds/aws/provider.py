"""AWS pools: the Pulumi program of :mod:`infra.aws`, driven per pool.

Nothing cloud-related is imported here at module import; ``pulumi`` and ``pulumi_aws`` load
inside the provider's methods.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

from oa_vm.clouds.base import CleanupReport, Progress
from oa_vm.clouds.pulumi.driver import Engine, Lister
from oa_vm.clouds.pulumi.provider import CloudInfo, ImageLister, PulumiCloudProvider
from oa_vm.model.image_records import ImageRecord
from oa_vm.model.state import PoolRecord
from oa_vm.reach.host_status import RemoteRunner

LIST_TIMEOUT_S = 60.0
MANUAL_CHECK = (
    "aws resourcegroupstaggingapi get-resources --region {region} "
    "--tag-filters Key=oa-vm:pool,Values={pool}"
)


def _check_size(size: str) -> str:
    from infra.sizes import check_aws_size

    return check_aws_size(size)


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


class AwsProvider(PulumiCloudProvider):
    """Pools of WAA workers on AWS EC2 (C8i/M8i/R8i with nested virtualization)."""

    def __init__(
        self,
        engine: Engine | None = None,
        lister: Lister | None = None,
        remote: RemoteRunner | None = None,
        image_lister: ImageLister | None = None,
    ) -> None:
        from infra.sizes import AWS_DEFAULT_SIZE

        super().__init__(
            CloudInfo(
                name="aws",
                sdk_module="pulumi_aws",
                program_module="infra.aws",
                default_size=AWS_DEFAULT_SIZE,
                default_region="us-east-1",
                ssh_user="ubuntu",
                region_config="aws:region",
                check_size=_check_size,
                manual_check=MANUAL_CHECK,
                image_module="infra.image_aws",
                component_type="oa-vm:aws:WorkerPool",
                notes=(
                    "at the expiry an EventBridge Scheduler schedule terminates the instances "
                    "(and each worker also powers itself off: shutdown behaviour terminate)",
                    "without a default VPC the pool makes its own (AWS allows 5 VPCs per region "
                    "by default)",
                ),
            ),
            engine=engine,
            lister=lister,
            remote=remote,
            # A teammate's images are found with the CLI when it is installed.
            image_lister=image_lister if image_lister is not None else (
                aws_cli_image_lister if shutil.which("aws") else None
            ),
        )
        self._explicit_lister = lister is not None

    def destroy(self, record: PoolRecord, progress: Progress) -> CleanupReport:
        """Remove the pool; with the ``aws`` CLI on PATH, also ask AWS for leftovers by tag."""
        if not self._explicit_lister:
            region = str(record.provider_data.get("region") or "")
            self.lister = aws_cli_lister(region) if region and shutil.which("aws") else None
        return super().destroy(record, progress)
