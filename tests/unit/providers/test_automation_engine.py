"""``AutomationEngine`` (Pulumi's Automation API, the real adapter) against a stand-in ``pulumi``.

The Automation API runs for real: it builds the command lines, runs the executable it finds on
PATH, and turns failures into its error classes. Only the CLI is a stand-in
(``tests/support/fake_pulumi_cli.py``), answering the subcommands these operations run and
failing with the real CLI's messages: a locked stack, pending operations, a missing plugin, no
credentials. So removing the engine's lock or pending-operation mapping, or making
``stack_exists`` always false, fails a test here.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from oa_vm.clouds.pulumi import driver as pulumi_driver
from oa_vm.clouds.pulumi.driver import (
    AutomationEngine,
    EngineError,
    PendingOperationsError,
    PulumiDriver,
    StackLockedError,
    classify_failure,
    stack_ref,
)
from tests.support import fake_pulumi_cli
from tests.support.fake_pulumi_engine import dead_pid


@pytest.fixture
def fake_cli(tmp_path: Path, oa_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path / "fake-pulumi"
    fake_pulumi_cli.install(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_PULUMI_STATE", str(state))
    monkeypatch.setenv("FAKE_PULUMI_VERSION", pulumi_driver.sdk_version())
    pulumi_driver.ensure_passphrase()
    return state


def _stack(state: Path, name: str, deployment: dict[str, object] | None = None) -> None:
    (state / "stacks").mkdir(parents=True, exist_ok=True)
    body = deployment or {"resources": [
        {"urn": f"urn:pulumi:{name}::oa-vm-aws::aws:ec2/instance:Instance::{name}-w0",
         "type": "aws:ec2/instance:Instance", "custom": True, "id": "i-0abc"},
    ]}
    (state / "stacks" / f"{name}.json").write_text(json.dumps({"version": 3, "deployment": body}))


def _calls(state: Path) -> list[str]:
    return (state / "calls.log").read_text().splitlines()


def _lock(name: str, pid: int, host: str | None = None) -> Path:
    ref = stack_ref("oa-vm-aws", name)
    folder = ref.backend_dir / ".pulumi" / "locks" / "organization" / "oa-vm-aws" / name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "0b7c.json"
    path.write_text(json.dumps({"pid": pid, "hostname": host or socket.gethostname()}))
    return path


def test_stack_exists_asks_the_backend(fake_cli: Path) -> None:
    engine = AutomationEngine()
    assert engine.missing() is None
    assert not engine.stack_exists(stack_ref("oa-vm-aws", "waa-eval"))
    _stack(fake_cli, "waa-eval")
    assert engine.stack_exists(stack_ref("oa-vm-aws", "waa-eval"))
    assert not engine.stack_exists(stack_ref("oa-vm-aws", "waa-other"))
    assert "stack ls --json" in _calls(fake_cli)


def test_a_locked_stack_raises_stack_locked(fake_cli: Path) -> None:
    _stack(fake_cli, "waa-eval")
    _lock("waa-eval", pid=4242)
    with pytest.raises(StackLockedError, match="currently locked"):
        AutomationEngine().refresh(stack_ref("oa-vm-aws", "waa-eval"), lambda line: None)


def test_pending_operations_raise_pending_operations(fake_cli: Path) -> None:
    _stack(fake_cli, "waa-eval", {"resources": [], "pending_operations": [{"type": "creating"}]})
    with pytest.raises(PendingOperationsError, match="pending operations"):
        AutomationEngine().refresh(stack_ref("oa-vm-aws", "waa-eval"), lambda line: None)


@pytest.mark.parametrize(
    ("failure", "fragment"),
    [("plugin", "pulumi plugin install resource aws"),
     ("credentials", "No valid credential sources found")],
)
def test_other_cli_failures_are_engine_errors_with_the_clis_words(
    fake_cli: Path, failure: str, fragment: str
) -> None:
    _stack(fake_cli, "waa-eval")
    (fake_cli / "fail").write_text(failure)
    with pytest.raises(EngineError) as info:
        AutomationEngine().destroy(stack_ref("oa-vm-aws", "waa-eval"), lambda line: None)
    assert type(info.value) is EngineError
    assert fragment in str(info.value)
    assert classify_failure(str(info.value)).kind == "other"


def test_the_driver_recovers_a_stale_lock_and_pending_operations_through_the_real_cli(
    fake_cli: Path,
) -> None:
    _stack(fake_cli, "waa-eval", {
        "resources": [{"urn": "urn:pulumi:waa-eval::oa-vm-aws::aws:ec2/instance:Instance::w0",
                       "type": "aws:ec2/instance:Instance", "custom": True, "id": "i-0abc"}],
        "pending_operations": [{"type": "creating", "resource": {
            "urn": "urn:pulumi:waa-eval::oa-vm-aws::aws:ec2/instance:Instance::waa-eval-w1",
            "type": "aws:ec2/instance:Instance"}}],
    })
    lock = _lock("waa-eval", pid=dead_pid())
    lines: list[str] = []
    alive = PulumiDriver(AutomationEngine()).refresh(stack_ref("oa-vm-aws", "waa-eval"),
                                                     lines.append)
    assert alive == {"i-0abc"}
    assert not lock.exists()
    assert any("removed the lock" in line for line in lines)
    assert any("cleared 1 operation(s)" in line for line in lines)
    saved = json.loads((fake_cli / "stacks" / "waa-eval.json").read_text())
    assert "pending_operations" not in saved["deployment"]
    calls = _calls(fake_cli)
    assert any(c.startswith("stack import --file") for c in calls)
    assert any(c.startswith("refresh") for c in calls)


def test_a_lock_held_by_a_running_process_is_respected(fake_cli: Path) -> None:
    import os

    from oa_vm.errors import ProvisioningError

    _stack(fake_cli, "waa-eval")
    lock = _lock("waa-eval", pid=os.getpid())
    with pytest.raises(ProvisioningError, match="being changed by another oa-vm command"):
        PulumiDriver(AutomationEngine()).refresh(stack_ref("oa-vm-aws", "waa-eval"),
                                                 lambda line: None)
    assert lock.exists()


def test_config_is_set_and_read_back_through_the_cli(fake_cli: Path) -> None:
    """Pinned inputs live in the stack's config: written with ``config set-all``, read back with
    ``config --json``; other keys stay."""
    _stack(fake_cli, "waa-eval")
    engine = AutomationEngine()
    ref = stack_ref("oa-vm-aws", "waa-eval")
    assert engine.get_config(ref) == {}
    engine.set_config(ref, {"oa-vm:pinned-ami": "ami-0abc", "aws:region": "us-east-1"})
    engine.set_config(ref, {"oa-vm:pinned-size": "m8i.2xlarge"})
    assert engine.get_config(ref) == {
        "oa-vm:pinned-ami": "ami-0abc", "aws:region": "us-east-1",
        "oa-vm:pinned-size": "m8i.2xlarge",
    }
    assert PulumiDriver(engine).pinned(ref) == {"ami": "ami-0abc", "size": "m8i.2xlarge"}
    assert any(call.startswith("config set-all --stack waa-eval") for call in _calls(fake_cli))
