"""Host keys remembered per pool: trust on first use, refuse any change.

The file uses OpenSSH's ``known_hosts`` format (``[host]:port keytype base64``), so the same file
works with ``ssh -o UserKnownHostsFile=<file>`` and ``ssh-keygen -R '[host]:port' -f <file>``.
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path

import paramiko

from waa_client.ssh.failures import fingerprint, host_entry, host_key_changed

# Several tunnels of one pool record their first contact at the same time; one lock per file
# keeps their read-modify-write from losing a line.
_locks: dict[Path, threading.Lock] = {}
_locks_guard = threading.Lock()


def _lock_for(path: Path) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(path, threading.Lock())


class KnownHosts:
    """One pool's known_hosts file.

    Args:
        path: The file; created (with its folder) on first contact.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path).resolve()

    def _load(self) -> paramiko.HostKeys:
        keys = paramiko.HostKeys()
        if self.path.is_file():
            # paramiko skips lines it cannot parse, which is what ssh does too.
            keys.load(str(self.path))
        return keys

    def known_keys(self, host: str, port: int) -> list[paramiko.PKey]:
        """The keys remembered for ``host:port`` (empty before first contact)."""
        found = self._load().lookup(host_entry(host, port))
        return list(found.values()) if found is not None else []

    def verify(self, host: str, port: int, key: paramiko.PKey, *, worker: str = "") -> bool:
        """Accept ``key`` for ``host:port``: remember it on first contact, else it must match.

        Returns:
            True when the key was remembered just now (first contact), False when it matched.

        Raises:
            HostKeyMismatchError: A different key is remembered for that host.
        """
        entry = host_entry(host, port)
        with _lock_for(self.path):
            known = self.known_keys(host, port)
            if not known:
                self._append(entry, key)
                return True
            if any(k.get_name() == key.get_name() and k.asbytes() == key.asbytes() for k in known):
                return False
        raise host_key_changed(
            worker=worker, host=host, port=port, remembered=known,
            offered=f"{key.get_name()} {fingerprint(key)}", offered_fingerprint=fingerprint(key),
            known_hosts_file=self.path,
        )

    def _append(self, entry: str, key: paramiko.PKey) -> None:
        """Add one line, atomically (temp file, fsync, rename): a crash leaves old or new."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        existing = self.path.read_text(encoding="utf-8") if self.path.is_file() else ""
        if existing and not existing.endswith("\n"):
            existing += "\n"
        text = existing + f"{entry} {key.get_name()} {key.get_base64()}\n"
        fd, tmp = tempfile.mkstemp(prefix=".known_hosts.", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
