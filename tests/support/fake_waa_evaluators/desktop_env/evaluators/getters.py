"""Stand-in for WAA's getters: ``get_<type>(env, config)`` (tests only).

Like WAA's, each receives the environment object first; the stand-in records that it got one
with the guest address, so tests can check the server passes a usable environment.
"""

from __future__ import annotations

from typing import Any

from desktop_env import _desktop


def get_vm_file(env: Any, config: dict[str, Any]) -> str:
    """The content of a file on the "guest" (raises if it does not exist, as WAA's does)."""
    assert env.vm_ip, "the environment carries the guest's address"
    return _desktop.resolve(config["path"]).read_text(encoding="utf-8")


def get_rule(env: Any, config: dict[str, Any]) -> Any:
    """WAA's ``rule`` getter returns the config's ``rules`` as the expected value."""
    return config["rules"]


def get_vm_command_line(env: Any, config: dict[str, Any]) -> str:
    """Always fails: a getter that raises scores 0."""
    raise RuntimeError("the guest did not answer")
