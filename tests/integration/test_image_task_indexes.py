"""An image build reads WAA's index files out of the WAA image on the builder, once it reports
``built``, over the same SSH: the real :func:`oa_vm.images.follow_builder` against a real
OpenSSH server whose sessions run the shipped remote command under bash, with a ``docker``
holding the WAA image as a folder laid out as WAA's image is
(:mod:`tests.support.docker_images`). Every index file at the top of WAA's task folder is read
(WAA's three, and any other the image holds, as the workers' scoring servers serve them all),
bounded in number and size. Not reading them never fails the build: the image is recorded
without them, in one progress line."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from oa_vm.model import image_records, state
from oa_vm.reach.host_status import INDEX_MAX_BYTES, INDEX_MAX_FILES, WAA_TASKS_DIR
from tests.support.cli import run_cli
from tests.support.docker_images import containers_left, docker_calls, write_docker
from tests.support.host_standins import HostSshServer, running_host
from tests.support.image_builder import IMAGE_ID, building_image
from waa_client.catalog import Catalog

pytestmark = pytest.mark.integration

WAA = "windowsarena/winarena@sha256:" + "0123" * 16
INDEXES = ("test_all", "test_small", "test_custom")
EXTRA = "test_two_domains"
"""An index file beyond WAA's three (a WAA image of one's own may hold more)."""


def _extra_index(waa_data: Path) -> dict[str, list[str]]:
    """Two tasks of each of two domains of WAA's suite, domains out of test_all's order."""
    every = json.loads((waa_data / "test_all.json").read_text(encoding="utf-8"))
    return {"notepad": every["notepad"][:2], "chrome": every["chrome"][-2:]}


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
    (tasks / f"{EXTRA}.json").write_text(json.dumps(_extra_index(waa_data)))
    # a task file and files that are no index: never read as one
    chrome = json.loads((waa_data / "test_all.json").read_text())["chrome"][0]
    shutil.copy(next((waa_data / "examples" / "chrome").glob(f"{chrome}.json")),
                tasks / "examples" / "chrome")
    (tasks / "README.md").write_text("not an index\n")
    (tasks / "settings").mkdir()
    (tasks / "settings" / "test_nested.json").write_text("{}")
    with running_host(tmp_path / "host", only=(), OA_VM_STATE_DIR=str(host_state)) as host:
        docker = write_docker(host.bin_dir, {WAA: image})
        yield host, tasks, docker


def _follow(host: HostSshServer) -> tuple[dict[str, Any], list[str]]:
    """follow_builder on the test host, as create_image calls it; its info and progress."""
    from oa_vm import images

    record, outputs = building_image(host, WAA)
    lines: list[str] = []
    return images.follow_builder(record, outputs, lines.append), lines


def test_the_builder_reports_waas_index_files_from_the_waa_image(
    builder: tuple[HostSshServer, Path, Path], oa_home: Path, waa_data: Path
) -> None:
    host, _tasks, docker = builder
    info, lines = _follow(host)
    assert info["waa_image"] == WAA
    assert info["task_indexes"] == {
        **{name: json.loads((waa_data / f"{name}.json").read_text()) for name in INDEXES},
        EXTRA: _extra_index(waa_data)}
    assert list(info["task_indexes"])[0] == "test_all"  # the workers' main index first
    assert not [line for line in lines if "not recorded" in line], lines
    # read out of the pulled digest, in a container never started, and removed after
    assert f"docker create {WAA} none" in docker_calls(docker)
    assert containers_left(docker) == []


def _not_in_the_image(tasks: Path, docker: Path) -> None:
    write_docker(docker.parent, {})


def _main_missing(tasks: Path, docker: Path) -> None:
    (tasks / "test_all.json").unlink()


def _too_big(tasks: Path, docker: Path) -> None:
    ids = [f"{n:08d}-0000-0000-0000-000000000000-wos" for n in range(INDEX_MAX_BYTES // 40 + 1)]
    (tasks / "test_all.json").write_text(json.dumps({"chrome": ids}))


def _not_an_index(tasks: Path, docker: Path) -> None:
    (tasks / "test_small.json").write_text(json.dumps({"chrome": "not-a-list"}))


def _too_many(tasks: Path, docker: Path) -> None:
    for n in range(INDEX_MAX_FILES):
        (tasks / f"test_more_{n:02d}.json").write_text('{"chrome": []}')


def _no_folder(tasks: Path, docker: Path) -> None:
    shutil.rmtree(tasks)


@pytest.mark.parametrize(("spoil", "said"), [
    (_not_in_the_image, "pull access denied for windowsarena/winarena"),
    (_no_folder, "nothing printed"),
    (_main_missing, "test_all.json is missing from the image"),
    (_too_big, f"test_all.json is not JSON, or cut at {INDEX_MAX_BYTES} bytes"),
    (_not_an_index, "test_small.json: domain 'chrome' must map to a list of task ID strings"),
    (_too_many, f"{WAA_TASKS_DIR} holds more than {INDEX_MAX_FILES} index files"),
], ids=["image not held", "no task folder", "the main index missing", "an index too big",
        "not an index", "too many index files"])
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


def test_an_image_without_one_of_waas_index_files_records_the_others(
    builder: tuple[HostSshServer, Path, Path], oa_home: Path, waa_data: Path
) -> None:
    host, tasks, _docker = builder
    (tasks / "test_custom.json").unlink()
    info, lines = _follow(host)
    assert sorted(info["task_indexes"]) == sorted(["test_all", "test_small", EXTRA])
    assert not [line for line in lines if "not recorded" in line], lines


def test_an_index_file_of_the_image_selects_its_tasks_as_waas_runner_takes_them(
    builder: tuple[HostSshServer, Path, Path], oa_home: Path, waa_data: Path, tmp_path: Path
) -> None:
    # WAA's runner (run.py, --test_all_meta_path evaluation_examples_windows/<name>.json) runs
    # every (domain, task) of the file, in its order: the catalog recorded with the image
    # selects the same, and a sweep bound for the image takes the index's name before a pool.
    host, _tasks, _docker = builder
    info, _ = _follow(host)
    extra = _extra_index(waa_data)
    as_waa_runs = [task_id for domain in extra for task_id in extra[domain]]
    catalog = Catalog.from_indexes(info["task_indexes"], f"image {IMAGE_ID}")
    assert catalog.resolve(EXTRA, live=True) == as_waa_runs
    now = state.utcnow()
    record = image_records.ImageRecord(
        id=IMAGE_ID, cloud="aws", region="us-east-1", state=image_records.READY, size_gb=96,
        created_at=now, licence_expires=now + timedelta(days=90), waa_image=WAA,
        builder_size="m8i.2xlarge", project="oa-vm-aws-images", stack=IMAGE_ID,
        cloud_id="snap-0fedcba9876543210", task_indexes=info["task_indexes"])
    (oa_home / "images").mkdir(parents=True, exist_ok=True)
    (oa_home / "images" / f"{IMAGE_ID}.json").write_text(json.dumps(record.to_json()))
    empty = tmp_path / "empty-path"  # no cloud CLI, no network: a plan asks none
    empty.mkdir()
    plan = run_cli("openadapt-evals", "sweep", "--cloud", "aws", "--agent", "noop", "--tasks",
                   EXTRA, "--plan", home=oa_home,
                   env={"PATH": str(empty), "OA_VM_IP_ECHO_URL": "http://127.0.0.1:9/"})
    assert plan.returncode == 0, plan.stderr
    assert (f"{len(as_waa_runs)} (checked against the task catalog of image {IMAGE_ID})"
            in plan.stdout), plan.stdout
