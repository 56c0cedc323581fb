"""``image-create --iso PATH`` carries the ISO onto the builder over a real OpenSSH server.

The shipped upload command (:func:`oa_vm.reach.host_status.iso_upload_command`) runs in the server's
session, under the host's state folder (``OA_VM_STATE_DIR``, as a rehearsal host sets it); the
builder side (the bootstrap binding it, dockur installing from it) is rehearsed in
``test_waa_entry_rehearsal.py`` and ``test_cloud_bootstrap_rehearsal.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from oa_vm.clouds import iso_delivery
from oa_vm.errors import ProvisioningError
from oa_vm.model.state import SshEndpoint
from tests.support import sshd as sshd_support
from tests.support.host_standins import HostSshServer, running_host

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostSshServer]:
    tmp = tmp_path_factory.mktemp("builder")
    with running_host(tmp, only=("sudo",), OA_VM_STATE_DIR=str(tmp / "state")) as server:
        yield server


def _state(host: HostSshServer) -> Path:
    return Path(host.env["OA_VM_STATE_DIR"])


def _endpoint(host: HostSshServer, key: Path | None = None) -> SshEndpoint:
    return SshEndpoint(host=host.host, port=host.port, user=host.user,
                       key_path=str(key or host.client_key))


def test_the_iso_lands_whole_under_the_name_the_bootstrap_waits_for(
    host: HostSshServer, tmp_path: Path
) -> None:
    iso = tmp_path / "Win11.iso"
    iso.write_bytes(os.urandom(5 << 20))  # several chunks
    stale = _state(host) / "iso" / "custom.iso.part"
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_bytes(b"half of an earlier attempt")
    lines: list[str] = []
    iso_delivery.deliver(iso, _endpoint(host), tmp_path / "known_hosts", name="img-builder",
                         progress=lines.append)
    delivered = _state(host) / "iso" / "custom.iso"
    assert delivered.read_bytes() == iso.read_bytes()
    assert not stale.exists()
    assert lines[-1].endswith("img-builder: uploading your ISO, 0.01 of 0.01 GB")


def test_a_refused_key_ends_the_upload_at_once_in_one_line(
    host: HostSshServer, tmp_path: Path
) -> None:
    other = sshd_support.generate_key(tmp_path / "other_key")
    iso = tmp_path / "Win11.iso"
    iso.write_bytes(b"x" * 1000)
    with pytest.raises(ProvisioningError) as info:
        iso_delivery.deliver(iso, _endpoint(host, other), tmp_path / "known_hosts",
                             name="img-builder", progress=lambda line: None,
                             sleep=lambda s: pytest.fail("a refused key is not retried"))
    assert str(info.value).startswith("img-builder: ") and "\n" not in str(info.value)


def test_a_builder_that_cannot_store_the_iso_says_so_in_its_own_words(
    host: HostSshServer, tmp_path: Path
) -> None:
    blocked = tmp_path / "blocked-state"
    blocked.mkdir()
    (blocked / "iso").write_text("a file where the folder should be")
    server = HostSshServer(tmp_path / "sshd", host.bin_dir, host.fake_state,
                           OA_VM_STATE_DIR=str(blocked))
    server.start()
    try:
        iso = tmp_path / "Win11.iso"
        iso.write_bytes(b"x" * 1000)
        with pytest.raises(ProvisioningError, match="^img-builder: storing your ISO on the "
                           "builder failed: mkdir: .*File exists"):
            iso_delivery.deliver(iso, _endpoint(server), tmp_path / "known_hosts",
                                 name="img-builder", progress=lambda line: None)
    finally:
        server.stop()
