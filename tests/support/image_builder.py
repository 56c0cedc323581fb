"""An image build at the point ``oa_vm.images.follow_builder`` takes it over, its builder being
a test host (:func:`tests.support.host_standins.running_host`)."""

from __future__ import annotations

import shutil
from datetime import timedelta
from typing import Any

from oa_vm.model import image_records, sshkeys, state
from tests.support.host_standins import HostSshServer

IMAGE_ID = "waa-us-east-1-20261201-0900"


def building_image(
    host: HostSshServer, waa_image: str = "windowsarena/winarena:latest",
) -> tuple[image_records.ImageRecord, dict[str, Any]]:
    """An image record as ``create_image`` writes it, its key where the image's key lives, and
    the build stage's outputs pointing at ``host``."""
    key = sshkeys.key_path(IMAGE_ID)
    key.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(host.client_key, key)
    key.chmod(0o600)
    now = state.utcnow()
    record = image_records.ImageRecord(
        id=IMAGE_ID, cloud="aws", region="us-east-1", state=image_records.BUILDING, size_gb=96,
        created_at=now, licence_expires=now + timedelta(days=90), waa_image=waa_image,
        builder_size="m8i.2xlarge", project="oa-vm-aws-images", stack=IMAGE_ID,
    )
    outputs = {"workers": [{"name": f"{IMAGE_ID}-builder-w0", "public_ip": host.host,
                            "ssh_port": host.port, "ssh_user": host.user,
                            "instance_id": "i-0builder"}]}
    return record, outputs
