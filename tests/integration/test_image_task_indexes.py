"""An image build reads WAA's index files out of the WAA image on the builder, once it reports
``built``, over the same SSH: the real :func:`oa_vm.images.follow_builder` against a real
OpenSSH server whose sessions run the shipped remote command under bash, with a ``docker``
holding the WAA image as a folder laid out as WAA's image is
(:mod:`tests.support.docker_images`). Not reading them never fails the build: the image is
recorded without them, in one progress line."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from oa_vm.model import image_records, sshkeys, state
from oa_vm.reach.host_status import INDEX_MAX_BYTES, WAA_TASKS_DIR
from tests.support.docker_images import containers_left, docker_calls, write_docker
from tests.support.host_standins import HostSshServer, running_host

pytestmark = pytest.mark.integration

WAA = "windowsarena/winarena@sha256:" + "0123" * 16
INDEXES = ("test_all", "test_small", "test_custom")


@pytest.fixture
def builder(tmp_path: Path, waa_data: Path) -> Iterator[tuple[HostSshServer, Path, Path]]:
    """A builder that reported ``built`` from :data:`WAA`, whose Docker holds that image with
    WAA's task folder (its index files copied from WAA's data); the host, the image's task
    folder and the stand-in's state."""
    host_state = tmp_path / "host-state"
    host_state.mkdir()
    (host_state / "status").write_text("state=done\nstep=built\nmessage=ready to snapshot\n")
    (host_state / "image-info").write_text(
        f"waa_image={WAA}\nbase_image=dockurr/windows@sha256:4567\nbuilt=2026-12-01T10:40:00Z\n")
    image = tmp_path / "waa-image"
    tasks = image / WAA_TASKS_DIR.lstrip("/")
    (tasks / "examples" / "chrome").mkdir(parents=True)
    for name in INDEXES:
        shutil.copy(waa_data / f"{name}.json", tasks / f"{name}.json")
    with running_host(tmp_path / "host", only=(), OA_VM_STATE_DIR=str(host_state)) as host:
        docker = write_docker(host.bin_dir, {WAA: image})
        yield host, tasks, docker


def _follow(host: HostSshServer) -> tuple[dict[str, Any], list[str]]:
    """follow_builder on the test host, as create_image calls it; its info and progress."""
    from oa_vm import images

    image_id = "waa-us-east-1-20261201-0900"
    key = sshkeys.key_path(image_id)
    key.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(host.client_key, key)
    key.chmod(0o600)
    now = state.utcnow()
    record = image_records.ImageRecord(
        id=image_id, cloud="aws", region="us-east-1", state=image_records.BUILDING, size_gb=96,
        created_at=now, licence_expires=now + timedelta(days=90), waa_image=WAA,
        builder_size="m8i.2xlarge", project="oa-vm-aws-images", stack=image_id,
    )
    outputs = {"workers": [{"public_ip": host.host, "ssh_port": host.port,
                            "ssh_user": host.user}]}
    lines: list[str] = []
    return images.follow_builder(record, outputs, lines.append), lines


def test_the_builder_reports_waas_index_files_from_the_waa_image(
    builder: tuple[HostSshServer, Path, Path], oa_home: Path, waa_data: Path
) -> None:
    host, _tasks, docker = builder
    info, lines = _follow(host)
    assert info["waa_image"] == WAA
    assert info["task_indexes"] == {
        name: json.loads((waa_data / f"{name}.json").read_text()) for name in INDEXES}
    assert not [line for line in lines if "not recorded" in line], lines
    # read out of the pulled digest, in a container never started, and removed after
    assert f"docker create {WAA} none" in docker_calls(docker)
    assert containers_left(docker) == []


def _not_in_the_image(tasks: Path, docker: Path) -> None:
    write_docker(docker.parent, {})


def _one_missing(tasks: Path, docker: Path) -> None:
    (tasks / "test_custom.json").unlink()


def _too_big(tasks: Path, docker: Path) -> None:
    ids = [f"{n:08d}-0000-0000-0000-000000000000-wos" for n in range(INDEX_MAX_BYTES // 40 + 1)]
    (tasks / "test_all.json").write_text(json.dumps({"chrome": ids}))


def _not_an_index(tasks: Path, docker: Path) -> None:
    (tasks / "test_small.json").write_text(json.dumps({"chrome": "not-a-list"}))


@pytest.mark.parametrize(("spoil", "said"), [
    (_not_in_the_image, "pull access denied for windowsarena/winarena"),
    (_one_missing, "test_custom.json is missing from the image, or not JSON"),
    (_too_big, "test_all.json is missing from the image, or not JSON"),  # cut at the bound
    (_not_an_index, "test_small.json: domain 'chrome' must map to a list of task ID strings"),
], ids=["image not held", "an index missing", "an index too big", "not an index"])
def test_indexes_not_read_are_not_recorded_and_the_build_goes_on(
    builder: tuple[HostSshServer, Path, Path], oa_home: Path, spoil: Any, said: str
) -> None:
    host, tasks, docker = builder
    spoil(tasks, docker)
    info, lines = _follow(host)
    assert info["waa_image"] == WAA and info["task_indexes"] is None
    missed = [line for line in lines if "not recorded" in line]
    assert len(missed) == 1 and said in missed[0], lines
    assert missed[0].startswith("image waa-us-east-1-20261201-0900: WAA's task indexes not "
                                "recorded (") and missed[0].endswith(
        "its pools' task IDs are checked on their workers"), missed[0]
    assert containers_left(docker) == []
