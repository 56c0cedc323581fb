"""Fixtures for the pool programs: an offline run of each cloud's program."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from infra import aws as infra_aws
from infra import azure as infra_azure
from infra.offline import OfflineRun, run_offline
from infra.settings import PoolSettings
from tests.support.pool_programs import AwsLookups

RunAws = Callable[..., tuple[OfflineRun, AwsLookups]]
RunAzure = Callable[..., OfflineRun]


@pytest.fixture
def run_aws() -> RunAws:
    """Run the AWS program offline: ``run_aws(settings, lookups=None) -> (run, lookups)``."""

    def run(settings: PoolSettings, lookups: AwsLookups | None = None) -> tuple[OfflineRun, Any]:
        lookups = lookups or AwsLookups()
        result = run_offline(lambda: infra_aws.pool_program(settings).workers, lookups)
        return result, lookups

    return run


@pytest.fixture
def run_azure() -> RunAzure:
    """Run the Azure program offline: ``run_azure(settings) -> run``."""

    def run(settings: PoolSettings) -> OfflineRun:
        return run_offline(
            lambda: infra_azure.pool_program(settings).workers, infra_azure.offline_lookup
        )

    return run
