"""The pool's own ed25519 key pair."""

from __future__ import annotations

import stat
from pathlib import Path

import paramiko
import pytest

from oa_vm.model import sshkeys, state


def test_key_is_made_once_0600_openssh_and_matches_its_public_line(oa_home: Path) -> None:
    path, line = sshkeys.ensure_pool_key("p1")
    assert path == state.pool_dir("p1") / "id_ed25519"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert line.startswith("ssh-ed25519 ") and line.endswith(" oa-vm-p1")
    loaded = paramiko.Ed25519Key.from_private_key_file(str(path))
    assert line.split()[1] == loaded.get_base64()
    assert sshkeys.ensure_pool_key("p1") == (path, line)
    assert path.with_name("id_ed25519.pub").read_text().strip() == line


def test_each_pool_gets_its_own_key(oa_home: Path) -> None:
    assert sshkeys.ensure_pool_key("a")[1].split()[1] != sshkeys.ensure_pool_key("b")[1].split()[1]


def test_an_unreadable_key_says_what_to_do(oa_home: Path) -> None:
    path = sshkeys.key_path("broken")
    path.parent.mkdir(parents=True)
    path.write_text("not a key")
    with pytest.raises(sshkeys.SshKeyError, match="pool-cleanup --pool broken"):
        sshkeys.ensure_pool_key("broken")
