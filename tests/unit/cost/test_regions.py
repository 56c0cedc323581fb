"""The shipped region lists and the table of nearest regions across the two clouds."""

from __future__ import annotations

import json

import pytest

from oa_vm.cost.pricing.regions import SHIPPED_REGIONS, check_region, nearest_region
from oa_vm.errors import InvalidInputError


def test_every_region_of_one_cloud_has_a_nearest_known_region_of_the_other() -> None:
    data = json.loads(SHIPPED_REGIONS.read_text(encoding="utf-8"))
    regions = data["regions"]
    for target, other in (("azure", "aws"), ("aws", "azure")):
        table = data["nearest"][target]
        assert sorted(table) == sorted(regions[other]), f"{other} regions without a {target} one"
        unknown = {r for r in table.values() if r not in regions[target]}
        assert unknown == set(), f"not {target} regions: {unknown}"


@pytest.mark.parametrize(("cloud", "given", "nearest"), [
    ("azure", "eu-west-2", "uksouth"),  # London
    ("azure", "ap-northeast-3", "japanwest"),  # Osaka
    ("aws", "germanywestcentral", "eu-central-1"),  # Frankfurt
    ("aws", "brazilsouth", "sa-east-1"),  # Sao Paulo
])
def test_another_clouds_region_is_answered_with_the_one_in_its_city(
    cloud: str, given: str, nearest: str
) -> None:
    assert nearest_region(cloud, given) == nearest
    with pytest.raises(InvalidInputError, match=f"such as {nearest} \\(the nearest to {given}\\)"):
        check_region(cloud, given)
    assert nearest_region(cloud, "mars-1") is None
