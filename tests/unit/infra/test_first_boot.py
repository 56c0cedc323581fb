"""A host keeps the user data it was created with: every instance and VM both programs declare
(a pool's, a host with several workers', a spot one's, an image builder's) names its user data in
``ignore_changes`` (:mod:`infra.first_boot`), and nothing else of a host follows the rendering.
So a later update after oa-vm was upgraded (its worker files changed) or the expiry moved plans
no replacement of an existing host; ``tests/unit/providers/test_upgraded_rendering.py`` runs
``pool-extend``, pause, resume and repair over such a change."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from infra import first_boot
from infra.offline import OfflineRun, RecordedResource
from infra.settings import PoolSettings
from tests.support.pool_programs import EXPIRES, make_settings, upgrade_worker_files
from tests.unit.infra.conftest import RunAws, RunAzure

HOSTS = {"aws": "aws:ec2/instance:Instance", "azure": "azure-native:compute:VirtualMachine"}
FIRST_BOOT = {"aws": first_boot.AWS_INSTANCE, "azure": first_boot.AZURE_VM}

VARIANTS: dict[str, dict[str, Any]] = {
    "pool": {"workers": 2},
    "spot": {"workers": 2, "spot": True},
    "several-per-host": {"workers": 2, "workers_per_host": 2},
    "image-builder": {"mode": "build", "image_id": None},
}


def _get(inputs: dict[str, Any], path: str) -> Any:
    value: Any = inputs
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _untagged(value: Any) -> Any:
    """``value`` without the tags anywhere in it (an update changes them in place)."""
    if isinstance(value, dict):
        return {k: _untagged(v) for k, v in value.items() if k != "tags"}
    if isinstance(value, list):
        return [_untagged(item) for item in value]
    return value


def _without(inputs: dict[str, Any], paths: tuple[str, ...]) -> Any:
    """``inputs`` less the ``paths`` and the tags."""
    out = _untagged(inputs)
    for path in paths:
        *parents, leaf = path.split(".")
        node: Any = out
        for part in parents:
            node = node[part]
        node.pop(leaf, None)
    return out


def _hosts(cloud: str, run: OfflineRun) -> list[RecordedResource]:
    return sorted((r for r in run.resources if r.type == HOSTS[cloud]), key=lambda r: r.name)


def _run(cloud: str, settings: PoolSettings, run_aws: RunAws, run_azure: RunAzure) -> OfflineRun:
    return run_aws(settings)[0] if cloud == "aws" else run_azure(settings)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("cloud", ["aws", "azure"])
def test_every_host_ignores_changes_to_its_user_data(
    cloud: str, variant: str, run_aws: RunAws, run_azure: RunAzure
) -> None:
    run = _run(cloud, make_settings(cloud, **VARIANTS[variant]), run_aws, run_azure)
    hosts = _hosts(cloud, run)
    assert hosts
    for host in hosts:
        for path in FIRST_BOOT[cloud]:
            assert _get(host.inputs, path), (host.name, path)  # the program sets it ...
            assert path in host.ignore_changes, (host.name, host.ignore_changes)  # ... once


@pytest.mark.parametrize("cloud", ["aws", "azure"])
def test_an_upgrade_and_a_later_expiry_change_a_host_only_in_what_it_ignores_and_its_tags(
    cloud: str, run_aws: RunAws, run_azure: RunAzure, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a host is created from besides its user data does not follow the rendering or the
    expiry, so nothing else would replace it; the user data does change (a new host gets it)."""
    created = make_settings(cloud, workers=2)
    before = _hosts(cloud, _run(cloud, created, run_aws, run_azure))
    upgrade_worker_files(monkeypatch)
    later = replace(created, expires_at=EXPIRES + timedelta(hours=3))
    after = _hosts(cloud, _run(cloud, later, run_aws, run_azure))
    assert [h.name for h in after] == [h.name for h in before]
    for old, new in zip(before, after, strict=True):
        for path in FIRST_BOOT[cloud]:
            assert _get(new.inputs, path) != _get(old.inputs, path)
        assert _without(new.inputs, FIRST_BOOT[cloud]) == _without(old.inputs, FIRST_BOOT[cloud])
