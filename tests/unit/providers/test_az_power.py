"""``AzCliPower`` (Azure pause and resume) runs the real ``az vm deallocate/start`` command lines
against a stand-in ``az`` that answers as the CLI does (:mod:`tests.support.cli_standins`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from oa_vm.clouds.pulumi.fleet import AzCliPower
from oa_vm.errors import ProviderUnavailableError, ProvisioningError
from tests.support.cli_standins import standin

IDS = [
    "/subscriptions/0/resourceGroups/oa-vm-waa-eval/providers/Microsoft.Compute/"
    f"virtualMachines/waa-eval-w{i}" for i in range(2)
]


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")
    return folder


def test_deallocate_and_start_pass_every_vm_id(bin_dir: Path) -> None:
    # `az vm deallocate --ids` prints one result per VM (null for a long-running operation).
    standin(bin_dir, "az", {"vm deallocate": [None, None], "vm start": [None, None]})
    lines: list[str] = []
    AzCliPower().deallocate(IDS, lines.append)
    AzCliPower().start(IDS, lines.append)
    calls = (bin_dir / "az.calls").read_text().splitlines()
    assert calls == [f"vm deallocate --ids {' '.join(IDS)}", f"vm start --ids {' '.join(IDS)}"]
    assert lines == ["az vm deallocate 2 VM(s)", "az vm start 2 VM(s)"]


def test_a_failing_az_is_one_line_with_its_words(bin_dir: Path) -> None:
    script = bin_dir / "az"
    script.write_text("#!/bin/sh\necho \"ERROR: Please run 'az login' to setup account.\" >&2\n"
                      "exit 1\n")
    script.chmod(0o755)
    with pytest.raises(ProvisioningError, match="az vm deallocate failed: .*az login"):
        AzCliPower().deallocate(IDS, lambda line: None)


def test_without_az_the_error_says_what_to_install(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ProviderUnavailableError, match="install-azure-cli"):
        AzCliPower().start(IDS, lambda line: None)
