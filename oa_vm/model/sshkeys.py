"""The pool's own SSH key pair (ed25519), kept in the pool's folder.

Each pool gets a fresh key, never the user's: it can be handed to the cloud (AWS key pair, Azure
``authorized_keys``) and thrown away with the pool. The private key is written in OpenSSH format
with mode 0600 (``ssh`` refuses keys others can read), created exclusively so two commands never
overwrite each other's key.
"""

from __future__ import annotations

import os
from pathlib import Path

from oa_vm.errors import OaVmError
from oa_vm.kit import safe_fs
from oa_vm.kit.lazy import crypto_ed25519
from oa_vm.kit.lazy import crypto_serialization as serialization
from oa_vm.model import state

KEY_NAME = "id_ed25519"


class SshKeyError(OaVmError):
    """The pool's key exists but cannot be used."""


def key_path(pool: str) -> Path:
    """Where the pool's private key lives (the public key is beside it, ``.pub``)."""
    return state.pool_dir(pool) / KEY_NAME


def _public_line(private_pem: bytes, comment: str) -> str:
    key = serialization.load_ssh_private_key(private_pem, password=None)
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return f"{public.decode('ascii')} {comment}"


def ensure_pool_key(pool: str) -> tuple[Path, str]:
    """The pool's key pair, made on first call: ``(private key path, public key line)``.

    Raises:
        SshKeyError: a key file exists but is not a readable OpenSSH private key.
    """
    path = key_path(pool)
    comment = f"oa-vm-{pool}"
    state.ensure_pool_dir(pool)
    if not safe_fs.exists_as_file(path):
        pem = crypto_ed25519.Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
        safe_fs.create_once(path, pem)  # another command's key made meanwhile is used
    safe_fs.exists_as_file(path)  # refuses a symlink planted in place of the key
    try:
        line = _public_line(path.read_bytes(), comment)
    except (ValueError, TypeError) as exc:
        raise SshKeyError(
            f"the pool's SSH key {path} is unreadable ({exc}); remove the pool with "
            f"'oa-vm pool-cleanup --pool {pool}' and create it again"
        ) from exc
    os.chmod(path, 0o600)
    public_path = path.with_name(KEY_NAME + ".pub")
    if not safe_fs.exists_as_file(public_path):
        safe_fs.write_atomic(public_path, line + "\n", root=path.parent)
    return path, line
