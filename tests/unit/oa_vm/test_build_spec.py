"""``oa_vm.api.build_spec``: what the Python API accepts before anything is created."""

from __future__ import annotations

import pytest

from oa_vm import api
from oa_vm.errors import InvalidInputError


def test_no_cloud_is_chosen_for_the_caller(oa_home: object) -> None:
    with pytest.raises(InvalidInputError, match="no cloud chosen"):
        api.build_spec(name="p", workers=1)


def test_create_pool_without_a_cloud_writes_nothing(oa_home: object) -> None:
    with pytest.raises(InvalidInputError, match="bill by the hour"):
        api.create_pool(name="p", workers=1)
    assert api.list_pools() == []


def test_a_local_spec_is_built(oa_home: object) -> None:
    spec = api.build_spec(name="p", cloud="local", workers=2)
    assert (spec.cloud, spec.workers) == ("local", 2)
