"""Which instance sizes can run WAA (a KVM guest inside the host: nested virtualization).

AWS exposes nested virtualization only on 8th-generation Intel families (C8i, M8i, R8i and their
flex variants) through ``cpu_options.nested_virtualization``, or on bare metal (``.metal``).
Azure nests on the Intel/AMD D-series v3/v5 families with security type Standard. A size outside
these lists would boot, then fail 30 minutes later when the container finds no ``/dev/kvm``:
refusing it up front is cheaper.
"""

from __future__ import annotations

import re

AWS_DEFAULT_SIZE = "m8i.2xlarge"
AZURE_DEFAULT_SIZE = "Standard_D8s_v5"

AWS_NESTED_FAMILIES = ("c8i", "m8i", "r8i", "c8i-flex", "m8i-flex", "r8i-flex")
AZURE_NESTED_FAMILIES = ("Dv3", "Dsv3", "Dv5", "Dsv5", "Ddv5", "Ddsv5", "Dasv5", "Dadsv5")

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

_AZURE_SIZE_RE = re.compile(r"^Standard_D(\d+)(a?)(d?)(s?)_v([35])$")


class UnsupportedSizeError(ValueError):
    """The size cannot run a nested KVM guest; the message lists sizes that can."""


def aws_nests_natively(size: str) -> bool:
    """True for C8i/M8i/R8i (flex too): they need ``cpu_options.nested_virtualization``."""
    family = size.split(".", 1)[0].lower()
    return family in AWS_NESTED_FAMILIES


def check_aws_size(size: str) -> str:
    """Return ``size`` if it can nest on AWS.

    Raises:
        UnsupportedSizeError: neither a C8i/M8i/R8i type nor a ``.metal`` type.
    """
    if aws_nests_natively(size) or size.lower().endswith(".metal"):
        return size
    raise UnsupportedSizeError(
        f"AWS size {size!r} cannot run WAA's nested Windows VM; use a C8i/M8i/R8i type "
        f"(e.g. {', '.join(AWS_GOOD_SIZES)}) or any .metal type"
    )


def check_azure_size(size: str) -> str:
    """Return ``size`` if it can nest on Azure (D-series v3/v5, 4 vCPUs or more).

    Raises:
        UnsupportedSizeError: another family, or fewer than 4 vCPUs.
    """
    match = _AZURE_SIZE_RE.match(size)
    if match and int(match.group(1)) >= 4:
        return size
    raise UnsupportedSizeError(
        f"Azure size {size!r} cannot run WAA's nested Windows VM; use a D-series v3/v5 size "
        f"with 4+ vCPUs (e.g. {', '.join(AZURE_GOOD_SIZES)})"
    )
