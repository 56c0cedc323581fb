"""User settings (``oa-vm config``): a small versioned JSON file at ``$OA_VM_HOME/config.json``.

Only settings a user chooses once live here: the cloud ``pool-create`` uses when ``--cloud`` is
left out (there is no built-in default, so a cloud that bills is never picked silently) and the
cloud workers' OS disk size. Written atomically like the pool records.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from oa_vm.errors import InvalidInputError, OaVmError
from oa_vm.model import state

CONFIG_VERSION = 1
CLOUDS = ("local", "aws", "azure")


def _check_cloud(value: str) -> Any:
    if value not in CLOUDS:
        raise InvalidInputError(f"default-cloud {value!r}: choose one of {', '.join(CLOUDS)}")
    return value


def _check_disk(value: str) -> Any:
    try:
        size = int(value)
    except ValueError:
        raise InvalidInputError(f"disk-gb {value!r}: give a whole number of GB, e.g. 200") from None
    if not 64 <= size <= 4096:
        raise InvalidInputError(f"disk-gb {size}: give 64 to 4096 (160 by default)")
    return size


KEYS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "default-cloud": ("the cloud pool-create uses without --cloud (local, aws, azure)",
                      _check_cloud),
    "disk-gb": ("OS disk of cloud workers, in GB (default 160)", _check_disk),
}


class CorruptConfigError(OaVmError):
    """The config file exists but cannot be read; it is left untouched."""


def path() -> Path:
    """``$OA_VM_HOME/config.json``."""
    return state.home() / "config.json"


def load() -> dict[str, Any]:
    """The settings (empty when the file does not exist).

    Raises:
        CorruptConfigError: the file is unreadable or from a newer oa-vm.
    """
    file = path()
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise CorruptConfigError(f"{file} is unreadable ({exc}); fix or remove it") from exc
    if not isinstance(data, dict) or not isinstance(data.get("version"), int):
        raise CorruptConfigError(f"{file} has no schema version; fix or remove it")
    if data["version"] > CONFIG_VERSION:
        raise CorruptConfigError(f"{file} was written by a newer oa-vm; upgrade oa-vm")
    settings = data.get("settings")
    return dict(settings) if isinstance(settings, dict) else {}


def set_value(key: str, value: str) -> Any:
    """Check and store one setting; returns the stored value.

    Raises:
        InvalidInputError: unknown key or unusable value.
    """
    if key not in KEYS:
        raise InvalidInputError(f"unknown setting {key!r}: choose one of {', '.join(KEYS)}")
    stored = KEYS[key][1](value)
    settings = load()
    settings[key] = stored
    state.atomic_write_json(path(), {"version": CONFIG_VERSION, "settings": settings})
    return stored


def unset(key: str) -> None:
    """Forget one setting (unknown keys are refused)."""
    if key not in KEYS:
        raise InvalidInputError(f"unknown setting {key!r}: choose one of {', '.join(KEYS)}")
    settings = load()
    if settings.pop(key, None) is not None:
        state.atomic_write_json(path(), {"version": CONFIG_VERSION, "settings": settings})


def default_cloud() -> str | None:
    """The configured default cloud, or None."""
    value = load().get("default-cloud")
    return str(value) if value in CLOUDS else None


def disk_gb() -> int:
    """The configured OS disk size of cloud workers (160 GB by default)."""
    from infra.settings import DEFAULT_DISK_GB

    value = load().get("disk-gb")
    return int(value) if isinstance(value, int) else DEFAULT_DISK_GB
