"""Every attribute WAA's getters read off their ``env`` argument exists on the scoring server's
environment (``infra/worker/scoring_server.py``'s ``GuestEnv``).

The getters are WAA's own files under ``../shared/waa/upstream``, read as source (AST): the
first parameter of each module-level ``get_*`` function is the environment, and every
``<param>.<attr>`` read in its body is collected. ``vm_platform`` was missing once, and 32 of
WAA's getters read it: 31 tasks always scored 0 on a cloud worker.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from infra.worker.scoring_server import Checker, GuestEnv
from tests.support.waa_upstream import WAA_GETTERS, load_desktop_env


def env_attributes_read(folder: Path) -> dict[str, set[str]]:
    """``{attribute: {getter names}}`` for every ``env.<attribute>`` WAA's getters read."""
    found: dict[str, set[str]] = {}
    for path in sorted(folder.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in tree.body:
            if not (isinstance(node, ast.FunctionDef) and node.name.startswith("get_")
                    and node.args.args):
                continue
            env = node.args.args[0].arg
            for sub in ast.walk(node):
                if (isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name)
                        and sub.value.id == env):
                    found.setdefault(sub.attr, set()).add(node.name)
                elif (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name)
                      and sub.func.id == "getattr" and len(sub.args) >= 2
                      and isinstance(sub.args[0], ast.Name) and sub.args[0].id == env
                      and isinstance(sub.args[1], ast.Constant)
                      and isinstance(sub.args[1].value, str)):
                    found.setdefault(sub.args[1].value, set()).add(node.name)
    return found


def missing_attributes(env_type: type, read: dict[str, set[str]], env: object) -> list[str]:
    """The attributes read that neither the class (properties) nor the instance has."""
    return sorted(a for a in read if not hasattr(env_type, a) and a not in vars(env))


@pytest.fixture(scope="module")
def read() -> dict[str, set[str]]:
    if not WAA_GETTERS.is_dir():
        pytest.skip("WAA's upstream getters not found at ../shared/waa/upstream")
    return env_attributes_read(WAA_GETTERS)


def test_the_scan_sees_what_waas_getters_read(read: dict[str, set[str]]) -> None:
    assert {"controller", "vm_ip", "cache_dir", "vm_platform"} <= set(read)
    assert len(read["vm_platform"]) >= 30  # Chrome, Edge, VLC getters


def test_the_scoring_servers_environment_has_every_attribute(
    read: dict[str, set[str]], tmp_path: Path
) -> None:
    load_desktop_env()  # WAA's controllers, for the Checker to build its environment with
    checker = Checker("127.0.0.1", str(tmp_path / "cache"))
    missing = missing_attributes(GuestEnv, read, checker.env)
    assert missing == [], {a: sorted(read[a])[:5] for a in missing}
    assert type(checker.env.controller).__module__ == "desktop_env.controllers.python"
    assert type(checker.env.setup_controller).__module__ == "desktop_env.controllers.setup"


def test_the_check_fails_for_an_environment_without_vm_platform(
    read: dict[str, set[str]]
) -> None:
    class Old:  # the scoring server's environment before vm_platform was added
        def __init__(self) -> None:
            self.vm_ip, self.cache_dir, self.controller = "x", "y", None

    assert missing_attributes(Old, read, Old()) == ["vm_platform"]


def test_vm_platform_asks_the_controller_as_desktop_env_does(tmp_path: Path) -> None:
    class Controller:
        def get_vm_platform(self) -> str:
            return "Windows"

    env = GuestEnv("127.0.0.1", str(tmp_path))
    env.controller = Controller()
    assert env.vm_platform == "Windows"
