"""Which regions exist on each cloud, so a plan refuses ``--region mars-1`` (or an Azure region
given for AWS) before it renders anything.

The lists ship with the package (``oa_vm/cost/data/regions.json``, with their sources and date): a
region missing from the price catalog but listed here is real and plans with its price unknown;
a region in neither is refused in one line naming the closest known one. The catalog's regions
count as known too, so a refreshed catalog never refuses a region it prices. Another cloud's
region (``--cloud azure --region eu-west-1``) is answered with this cloud's region in the same
city or nearest to it (``northeurope``, Ireland), from the same file's ``nearest`` table.
"""

from __future__ import annotations

import difflib
import itertools
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from oa_vm.errors import InvalidInputError

SHIPPED_REGIONS = Path(__file__).resolve().parent.parent / "data" / "regions.json"

CLOUD_LABELS = {"aws": "AWS", "azure": "Azure"}


@cache
def _data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SHIPPED_REGIONS.read_text(encoding="utf-8"))
    return data


def _shipped() -> dict[str, tuple[str, ...]]:
    return {cloud: tuple(names) for cloud, names in _data()["regions"].items()}


def nearest_region(cloud: str, other_region: str) -> str | None:
    """The region of ``cloud`` nearest to another cloud's ``other_region`` by the city each is
    in (``azure``, ``eu-west-1`` -> ``northeurope``); None when the table has no entry."""
    table = _data().get("nearest", {}).get(cloud, {})
    found = table.get(other_region.strip().lower())
    return str(found) if found else None


def cloud_regions(cloud: str) -> list[str]:
    """Every region ``cloud`` sells compute in: the shipped list, then any the price catalog
    adds (an unreadable catalog adds none; it is reported where prices are read)."""
    from oa_vm.cost.pricing.catalog import PriceCatalogError, load_catalog

    names = list(_shipped().get(cloud, ()))
    try:
        priced = load_catalog().regions(cloud)
    except (PriceCatalogError, InvalidInputError):
        priced = []
    return list(dict.fromkeys([*names, *priced]))


def closest_region(cloud: str, region: str, *, priced_only: bool = False) -> str:
    """The known region of ``cloud`` whose name is nearest to ``region`` (difflib's ratio),
    among the priced ones only with ``priced_only`` (for another cloud's region that
    :func:`nearest_region` does not know: a name is only a weak hint of the geography).

    Names are compared without their dashes, ``region``'s words in every order: a region is
    "us east" to a person, ``us-east-1`` to AWS and ``eastus`` to Azure; the first listed wins
    a tie (the shipped lists put the most used first)."""
    from oa_vm.cost.pricing.catalog import load_catalog

    known = load_catalog().regions(cloud) if priced_only else cloud_regions(cloud)
    words = re.findall(r"[a-z]+|[0-9]+", region.lower())[:4]  # 24 orders at most
    spellings = {"".join(order) for order in itertools.permutations(words)} or {""}

    def likeness(name: str) -> float:
        plain = re.sub(r"[^a-z0-9]", "", name)
        return max(difflib.SequenceMatcher(None, spelt, plain).ratio() for spelt in spellings)

    return max(known, key=likeness)


def check_region(cloud: str, region: str) -> str:
    """``region`` as the cloud spells it, if ``cloud`` has it.

    Raises:
        InvalidInputError: one line: the region is not one of ``cloud``'s (and which cloud it
            belongs to, when it is another's), the closest known region, and what to pass.
    """
    if cloud not in _shipped():
        return region
    wanted = region.strip().lower()
    known = cloud_regions(cloud)
    if wanted in known:
        return wanted
    label = CLOUD_LABELS.get(cloud, cloud)
    other = next((c for c in _shipped() if c != cloud and wanted in cloud_regions(c)), None)
    if other is not None:
        nearest = nearest_region(cloud, wanted)
        such_as = (f"{nearest} (the nearest to {wanted})" if nearest is not None
                   else closest_region(cloud, wanted, priced_only=True))
        raise InvalidInputError(
            f"--region {region!r} is an {CLOUD_LABELS.get(other, other)} region, not an "
            f"{label} one: pass --cloud {other}, or an {label} region such as {such_as}"
        )
    closest = closest_region(cloud, wanted)
    raise InvalidInputError(
        f"unknown {label} region {region!r} (closest known: {closest}); pass --region with "
        f"an {label} region (the priced ones: 'oa-vm prices --cloud {cloud}')"
    )
