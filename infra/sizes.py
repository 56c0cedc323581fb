"""Which instance sizes can run WAA (a KVM guest inside the host: nested virtualization).

AWS exposes nested virtualization only on 8th-generation Intel families (C8i, M8i, R8i and their
flex variants) through ``cpu_options.nested_virtualization``, or on bare metal (``.metal``).
Azure nests on the Intel/AMD D-series v3/v5 families with security type Standard. A size outside
these lists would boot, then fail 30 minutes later when the container finds no ``/dev/kvm``:
refusing it up front is cheaper.

Azure sizes are checked against a list of sizes that exist (a pattern would admit names such
as ``Standard_D8a_v5`` that Azure does not sell, and a create would then fail over from region to
region for nothing), each with the disk type it can use: sizes without ``s`` in their name
(``Standard_D8_v5``) cannot attach Premium SSD, so they get Standard SSD.
"""

from __future__ import annotations

AWS_DEFAULT_SIZE = "m8i.2xlarge"
AZURE_DEFAULT_SIZE = "Standard_D8s_v5"

AWS_NESTED_FAMILIES = ("c8i", "m8i", "r8i", "c8i-flex", "m8i-flex", "r8i-flex")

PREMIUM_SSD = "Premium_LRS"
STANDARD_SSD = "StandardSSD_LRS"


class SizeSpec:
    """What one size offers: vCPUs, memory (GiB) and, on Azure, the managed disk type it takes.

    A plain class, not a dataclass: ``dataclasses`` loads ``inspect``, and ``oa-vm pool-status``
    reads this module for disk prices (start-up time)."""

    __slots__ = ("disk_type", "memory_gib", "name", "vcpus")

    def __init__(self, name: str, vcpus: int, memory_gib: int, disk_type: str = "") -> None:
        self.name, self.vcpus, self.memory_gib, self.disk_type = name, vcpus, memory_gib, disk_type


# vCPUs and memory as the clouds document them (AWS: 8xl family pages; Azure: Dv5/Dsv5/Ddv5/
# Ddsv5/Dasv5/Dadsv5/Dv3/Dsv3 pages). Four vCPUs is the floor: WAA's guest takes four itself.
_AWS_MEMORY_PER_VCPU = {"c8i": 2, "m8i": 4, "r8i": 8}
_AWS_MULTIPLIERS = {"xlarge": 4, "2xlarge": 8, "4xlarge": 16, "8xlarge": 32}
AWS_SIZES: dict[str, SizeSpec] = {
    f"{family}{flex}.{mult}": SizeSpec(
        f"{family}{flex}.{mult}", vcpus, vcpus * _AWS_MEMORY_PER_VCPU[family]
    )
    for family in _AWS_MEMORY_PER_VCPU
    for flex in ("", "-flex")
    for mult, vcpus in _AWS_MULTIPLIERS.items()
}

_AZURE_SERIES: dict[str, tuple[str, tuple[int, ...]]] = {
    # suffix pattern -> (disk type, vCPU counts sold)
    "{n}_v5": (STANDARD_SSD, (4, 8, 16, 32, 48, 64, 96)),
    "{n}s_v5": (PREMIUM_SSD, (4, 8, 16, 32, 48, 64, 96)),
    "{n}d_v5": (STANDARD_SSD, (4, 8, 16, 32, 48, 64, 96)),
    "{n}ds_v5": (PREMIUM_SSD, (4, 8, 16, 32, 48, 64, 96)),
    "{n}as_v5": (PREMIUM_SSD, (4, 8, 16, 32, 48, 64, 96)),
    "{n}ads_v5": (PREMIUM_SSD, (4, 8, 16, 32, 48, 64, 96)),
    "{n}_v3": (STANDARD_SSD, (4, 8, 16, 32, 48, 64)),
    "{n}s_v3": (PREMIUM_SSD, (4, 8, 16, 32, 48, 64)),
}
AZURE_SIZES: dict[str, SizeSpec] = {
    f"Standard_D{pattern.format(n=n)}": SizeSpec(
        f"Standard_D{pattern.format(n=n)}", n, 4 * n, disk
    )
    for pattern, (disk, counts) in _AZURE_SERIES.items()
    for n in counts
}

AWS_GOOD_SIZES = (
    "m8i.2xlarge",
    "m8i.4xlarge",
    "c8i.2xlarge",
    "c8i.4xlarge",
    "r8i.2xlarge",
    "m8i-flex.2xlarge",
)
AZURE_GOOD_SIZES = (
    "Standard_D8s_v5",
    "Standard_D8ds_v5",
    "Standard_D8as_v5",
    "Standard_D8_v5",
    "Standard_D8s_v3",
    "Standard_D16s_v5",
)


class UnsupportedSizeError(ValueError):
    """The size cannot run a nested KVM guest; the message lists sizes that can."""


def aws_is_metal(size: str) -> bool:
    """True for bare-metal types: ``m7i.metal``, but also ``m8i.metal-48xl``, ``c7i.metal-24xl``
    (the part after the dot starts with ``metal``)."""
    _family, _dot, rest = size.lower().partition(".")
    return rest == "metal" or rest.startswith("metal-")


def aws_nests_natively(size: str) -> bool:
    """True for C8i/M8i/R8i (flex too) virtual types: they need
    ``cpu_options.nested_virtualization``. Bare metal (``m8i.metal-48xl``) runs KVM itself and
    takes no such option."""
    family = size.split(".", 1)[0].lower()
    return family in AWS_NESTED_FAMILIES and not aws_is_metal(size)


def check_aws_size(size: str) -> str:
    """Return ``size`` if it can nest on AWS.

    Raises:
        UnsupportedSizeError: neither a C8i/M8i/R8i type nor a ``.metal`` type.
    """
    if aws_nests_natively(size) or aws_is_metal(size):
        return size
    raise UnsupportedSizeError(
        f"AWS size {size!r} cannot run WAA's nested Windows VM; use a C8i/M8i/R8i type "
        f"(e.g. {', '.join(AWS_GOOD_SIZES)}) or any .metal type"
    )


def check_azure_size(size: str) -> str:
    """Return ``size`` if Azure sells it in a nesting D-series v3/v5 family with 4+ vCPUs.

    Raises:
        UnsupportedSizeError: another family, fewer than 4 vCPUs, or a name Azure does not sell.
    """
    if size in AZURE_SIZES:
        return size
    raise UnsupportedSizeError(
        f"Azure size {size!r} cannot run WAA's nested Windows VM (or does not exist); use a "
        f"D-series v3/v5 size with 4+ vCPUs (e.g. {', '.join(AZURE_GOOD_SIZES)})"
    )


def azure_disk_type(size: str) -> str:
    """The managed disk type ``size`` can attach: Premium SSD for ``s`` sizes, else Standard
    SSD (Azure refuses Premium_LRS on a VM such as ``Standard_D8_v5``)."""
    spec = AZURE_SIZES.get(size)
    return spec.disk_type if spec else PREMIUM_SSD


def size_spec(cloud: str, size: str) -> SizeSpec | None:
    """vCPUs and memory of ``size`` (None for sizes not in the tables, e.g. ``.metal``)."""
    table = AWS_SIZES if cloud == "aws" else AZURE_SIZES if cloud == "azure" else {}
    return table.get(size)


def _family(cloud: str, size: str) -> str:
    """The family a size is sold in, its count of vCPUs left out (``m8i``, ``Standard_DNs_vN``)."""
    import re

    return size.split(".", 1)[0] if cloud == "aws" else re.sub(r"\d+", "N", size)


def size_for_workers(cloud: str, like: str, workers: int) -> str | None:
    """The smallest size of ``like``'s family that holds ``workers`` of WAA's workers (one rule:
    :func:`infra.worker.slots.workers_that_fit`), or None when none of the family does."""
    from infra.worker.slots import workers_that_fit

    table = AWS_SIZES if cloud == "aws" else AZURE_SIZES if cloud == "azure" else {}
    family = _family(cloud, like)
    fitting = [s for s in table.values() if _family(cloud, s.name) == family
               and workers_that_fit(s.vcpus, s.memory_gib) >= workers]
    return min(fitting, key=lambda s: (s.vcpus, s.memory_gib)).name if fitting else None
