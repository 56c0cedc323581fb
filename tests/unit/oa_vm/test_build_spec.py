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


@pytest.mark.parametrize(("given", "message"), [
    ({"name": ""}, "invalid pool name ''"),  # was taken for "no name": a pool named waa-pool
    ({"cloud": "aws", "regions": "us-east-1"}, "--region must be a list of strings"),
    ({"cloud": "aws", "allow_cidrs": "1.2.3.4/32"}, "--allow-cidr must be a list of strings"),
    ({"ttl_hours": "4"}, "--ttl-hours must be a number, not '4'"),
    ({"price_per_hour": "1"}, "--price-per-hour must be a number, not '1'"),
])
def test_the_python_api_refuses_a_value_of_the_wrong_kind(
    oa_home: object, given: dict[str, object], message: str
) -> None:
    """A string where a list is expected was taken letter by letter (regions u, s, -, ...);
    a string where a number is expected raised a TypeError from a comparison."""
    with pytest.raises(InvalidInputError, match=message):
        api.build_spec(**{"name": "p", "cloud": "local", **given})  # type: ignore[arg-type]
    assert api.list_pools() == []
