"""Pure builders: settings validation, the tag set, which sizes can nest."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import pytest

from infra import sizes, tags
from infra.settings import CALLER_CIDR_PLACEHOLDER, SSH_KEY_PLACEHOLDER, SettingsError
from tests.support.pool_programs import make_settings


def test_tags_are_the_three_keys_with_utc_expiry() -> None:
    settings = make_settings("aws", expires_at=datetime.fromisoformat("2026-03-01T20:30:05+02:00"))
    assert tags.pool_tags(settings) == {
        "oa-vm:pool": "waa-eval",
        "oa-vm:owner": "alice@example.com",
        "oa-vm:expires-at": "2026-03-01T18:30:05Z",
    }


def test_owner_values_are_cleaned_for_every_cloud() -> None:
    assert tags.pool_tags(make_settings("aws", owner="Bob <b@x>;"))["oa-vm:owner"] == "Bob -b@x--"
    assert len(tags.clean_value("x" * 400)) == tags.MAX_VALUE


@pytest.mark.parametrize("key", ["a/b", "a?b", "a%b", "azure:x", "aws:x", "windows-x", ""])
def test_keys_either_cloud_refuses_are_rejected(key: str) -> None:
    with pytest.raises(ValueError):
        tags.check_key(key)


@pytest.mark.parametrize("key", ["a b", "cost center", ".", "..", "_index", "a*b", "a#b",
                                 "caf\u00e9", "a;b", "a\tb"])
def test_keys_aws_refuses_in_the_instance_metadata_are_rejected(key: str) -> None:
    """An AWS host reads its expiry tag from the instance metadata, which allows only these
    keys on the instance (its launch fails otherwise)."""
    with pytest.raises(ValueError, match="instance metadata"):
        tags.check_key(key)


def test_our_keys_pass_both_clouds_rules() -> None:
    for key in (*tags.ALL_KEYS, *tags.IMAGE_KEYS, tags.IMAGE_BASE_DIGEST, tags.NAME,
                "a+b=c.d,e_f:g@h-1"):
        assert tags.check_key(key) == key
    assert tags.named({"oa-vm:pool": "p"}, "p-w0") == {"oa-vm:pool": "p", "Name": "p-w0"}


@pytest.mark.parametrize("size", ["m8i.2xlarge", "c8i.4xlarge", "r8i-flex.2xlarge", "m5.metal"])
def test_aws_sizes_that_nest(size: str) -> None:
    assert sizes.check_aws_size(size) == size


@pytest.mark.parametrize("size", ["m5.metal", "m8i.metal-48xl", "c7i.metal-24xl", "r8i.metal-96xl"])
def test_every_bare_metal_name_is_metal_and_takes_no_nesting_option(size: str) -> None:
    assert sizes.aws_is_metal(size)
    assert sizes.check_aws_size(size) == size
    # Bare metal runs KVM itself: the nested-virtualization CPU option is for virtual types.
    assert not sizes.aws_nests_natively(size)


@pytest.mark.parametrize("size", ["m8i.2xlarge", "m8i-flex.4xlarge", "t3.metallic"])
def test_virtual_sizes_are_not_metal(size: str) -> None:
    assert not sizes.aws_is_metal(size)


@pytest.mark.parametrize("size", ["t3.large", "m7i.2xlarge", "m8g.2xlarge"])
def test_aws_sizes_that_do_not_nest_name_the_good_ones(size: str) -> None:
    with pytest.raises(sizes.UnsupportedSizeError) as info:
        sizes.check_aws_size(size)
    assert size in str(info.value) and "m8i.2xlarge" in str(info.value)


@pytest.mark.parametrize("size", ["Standard_D8s_v5", "Standard_D8as_v5", "Standard_D4_v3"])
def test_azure_sizes_that_nest(size: str) -> None:
    assert sizes.check_azure_size(size) == size


@pytest.mark.parametrize("size", ["Standard_B2s", "Standard_D2s_v5", "Standard_D8ps_v5"])
def test_azure_sizes_that_do_not_nest(size: str) -> None:
    with pytest.raises(sizes.UnsupportedSizeError, match="Standard_D8s_v5"):
        sizes.check_azure_size(size)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"name": "Bad_Name"}, "invalid pool name"),
        ({"workers": 0}, "at least 1"),
        ({"expires_at": datetime(2026, 1, 1)}, "timezone-aware"),  # noqa: DTZ001 - on purpose
        ({"allowed_cidrs": ()}, "--allow-cidr"),
        ({"allowed_cidrs": ("10.0.0.300/32",)}, "invalid CIDR"),
        ({"ssh_public_key": "not a key"}, "OpenSSH public key"),
        ({"disk_gb": 32}, "at least 64"),
    ],
)
def test_bad_settings_say_what_to_do(changes: dict[str, object], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        replace(make_settings("aws"), **changes).validate()  # type: ignore[arg-type]


def test_placeholders_only_for_plans() -> None:
    planned = make_settings(
        "aws", allowed_cidrs=(CALLER_CIDR_PLACEHOLDER,), ssh_public_key=SSH_KEY_PLACEHOLDER
    )
    assert planned.validate(allow_placeholders=True) is planned
    with pytest.raises(SettingsError):
        planned.validate()


def test_cidrs_are_normalized() -> None:
    settings = make_settings("aws", allowed_cidrs=("198.51.100.7/24", "2001:db8::1/64"))
    assert settings.normalized_cidrs() == ["198.51.100.0/24", "2001:db8::/64"]
