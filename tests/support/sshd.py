"""A real OpenSSH server on a loopback port, for tests that need SSH (tunnels, workers).

Usage from any test module (binding the fixture to a module name keeps ruff's F811 quiet)::

    from tests.support import sshd as sshd_support
    from tests.support.sshd import SshServer

    sshd = sshd_support.sshd

    def test_something(sshd: SshServer) -> None:
        target = TunnelTarget("w1", "127.0.0.1", sshd.port, sshd.user, sshd.client_key, ...)

What it runs: ``/usr/sbin/sshd -D -e -f CONFIG`` as the current user, listening on
``127.0.0.1:<free port>`` only, with its own ed25519 host key, and an ``authorized_keys`` holding
a client key it generates (``client_key``, mode 0600). Password login is off; TCP forwarding is
on; ``StrictModes no`` and ``UsePAM no`` so it runs from a temporary folder without PAM.
Everything lives under the folder given (pytest's ``tmp_path``).

Controls for failure tests:

- ``stop()`` / ``start()`` / ``restart(new_host_key=True)``: same port, optionally a new host
  key (to test a changed host key being refused).
- ``drop_connections()``: kills the per-connection sshd processes (children of the listener)
  and leaves the listener running, which is what a dropped network link looks like to a client.
- ``freeze()`` / ``thaw()``: suspends (SIGSTOP) the listener and every connection, then resumes
  them (SIGCONT): a server that still accepts TCP connections (the kernel's backlog) but says
  nothing, which is what a path that drops packets looks like to a client.

Tests that use the ``sshd`` fixture skip with a clear reason when ``/usr/sbin/sshd`` is absent
(Debian/Ubuntu package ``openssh-server``; CI installs it).
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.support.waiting import WAIT_LIMIT_S
from waa_client.poll import poll_until

SSHD = Path("/usr/sbin/sshd")
SSH_KEYGEN = shutil.which("ssh-keygen") or "/usr/bin/ssh-keygen"
# sshd refuses to start without its privilege-separation directory.
PRIVSEP_DIR = Path("/run/sshd")
_STOP_DEADLINE = 10.0
_BIND_ATTEMPTS = 5


class _PortTakenError(Exception):
    """sshd could not bind its port: another process has it."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` (loopback, IPv4 or IPv6) that is free right now."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def ipv6_loopback() -> str | None:
    """Why this machine has no IPv6 loopback to listen on (a container without IPv6), or None."""
    try:
        free_port("::1")
    except OSError as exc:
        return f"no IPv6 loopback (::1): {exc.strerror or exc}"
    return None


def generate_key(path: Path, comment: str = "oa-vm-test") -> Path:
    """Create an unencrypted ed25519 key pair at ``path`` (+ ``.pub``), mode 0600."""
    for stale in (path, path.with_name(path.name + ".pub")):
        stale.unlink(missing_ok=True)
    subprocess.run(
        [SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        check=True,
        capture_output=True,
        timeout=30,
    )
    path.chmod(0o600)
    return path


class SshServer:
    """One sshd process with its own config, host key and client key.

    Args:
        root: Folder for every file the server needs (config, keys, pid file, log).
        port: Port to listen on; a free one when omitted.
        listen: The loopback address to listen on: ``127.0.0.1``, or ``::1`` for a host
            reached over IPv6.
    """

    def __init__(self, root: Path, port: int | None = None, listen: str = "127.0.0.1") -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self.listen = listen
        self.port = port or free_port(listen)
        # A port picked here may be taken by another process before sshd binds it (tests run
        # in parallel): start() then moves to another free one, unless the caller chose it.
        self._port_chosen = port is not None
        self.user = getpass.getuser()
        self.host_key = self.root / "ssh_host_ed25519_key"
        self.client_key = self.root / "client_key"
        self.authorized_keys = self.root / "authorized_keys"
        self.config = self.root / "sshd_config"
        self.pid_file = self.root / "sshd.pid"
        self.log_file = self.root / "sshd.log"
        self._process: subprocess.Popen[bytes] | None = None
        generate_key(self.host_key, "test-host")
        generate_key(self.client_key, "test-client")
        self.authorized_keys.write_text(
            self.client_key.with_name(self.client_key.name + ".pub").read_text()
        )
        self._write_config()

    @property
    def host(self) -> str:
        """The address it listens on (127.0.0.1 unless made with ``listen``)."""
        return self.listen

    @property
    def pid(self) -> int | None:
        """PID of the listening sshd, when running."""
        return self._process.pid if self._process is not None else None

    def _write_config(self) -> None:
        self.config.write_text(
            "\n".join(
                [
                    f"Port {self.port}",
                    f"ListenAddress {self.listen}",
                    f"HostKey {self.host_key}",
                    f"PidFile {self.pid_file}",
                    f"AuthorizedKeysFile {self.authorized_keys}",
                    "UsePAM no",
                    "StrictModes no",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "PubkeyAuthentication yes",
                    "PermitRootLogin prohibit-password",
                    "AllowTcpForwarding yes",
                    "X11Forwarding no",
                    "PrintMotd no",
                    "LogLevel VERBOSE",
                    # Let tests notice a dead client quickly and keep many test connections.
                    "ClientAliveInterval 5",
                    "MaxStartups 50",
                    # one line: sshd takes the first SetEnv it reads and ignores the others
                    "SetEnv " + " ".join(f'"{k}={v}"' for k, v in self.session_env().items()),
                    "",
                ]
            )
        )

    def session_env(self) -> dict[str, str]:
        """What every session's environment is given (quoted: a value may hold spaces).

        ``SHLVL``: bash runs ``~/.bashrc`` for a command sent over SSH only from a top-level
        shell (SHLVL below 2). This machine's own start-up files (a Python version manager that
        rehashes under a lock) are not a worker host's: they made each session slower and, with
        a stale lock, stalled it for a minute."""
        return {"SHLVL": "1"}

    def start(self) -> None:
        """Start sshd and wait until it accepts connections.

        A port picked by the server (no ``port`` given) that another process took meanwhile is
        replaced by another free one, a few times, at the first start; a port given by the
        caller, or already used by a start, is kept.
        """
        for _attempt in range(_BIND_ATTEMPTS):
            try:
                self._start_once()
                self._port_chosen = True  # clients know it now: a restart keeps it
                return
            except _PortTakenError:
                if self._port_chosen:
                    raise RuntimeError(
                        f"sshd: port {self.port} is taken; its log:\n{self.log_text()}"
                    ) from None
                self.port = free_port(self.listen)
                self._write_config()
        raise RuntimeError(f"sshd found no free port; its log:\n{self.log_text()}")

    def _start_once(self) -> None:
        if self._process is not None:
            return
        PRIVSEP_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
        logged_before = self.log_file.stat().st_size if self.log_file.exists() else 0
        log = self.log_file.open("ab")
        try:
            self._process = subprocess.Popen(
                [str(SSHD), "-D", "-e", "-f", str(self.config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        finally:
            log.close()
        process = self._process

        def listening() -> bool:
            if process.poll() is not None:
                self._process = None
                if "Address already in use" in self._log_since(logged_before):
                    raise _PortTakenError(self.port)
                raise RuntimeError(f"sshd exited at start; its log:\n{self.log_text()}")
            # sshd's own word that it listens, not a connection test: a test connection could
            # reach another process that took the port, and leaves a line in sshd's log.
            said = f"Server listening on {self.host} port {self.port}."
            return said in self._log_since(logged_before)

        if poll_until(listening, timeout_s=WAIT_LIMIT_S, interval_s=0.05):
            return
        self.stop()
        raise RuntimeError(f"sshd did not listen on {self.port}; its log:\n{self.log_text()}")

    def stop(self) -> None:
        """Stop the listener and every connection it serves. Idempotent.

        The listener is stopped (SIGSTOP) before its connections are listed and killed: one it
        accepted after the list was taken would outlive it, orphaned, and a host a test killed
        would still serve that client (a tunnel reconnecting at that moment kept working)."""
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGSTOP)
        self._kill_children(process.pid)
        process.kill()
        process.wait(timeout=_STOP_DEADLINE)

    def restart(self, *, new_host_key: bool = False) -> None:
        """Stop and start again on the same port, optionally with a freshly generated host key."""
        self.stop()
        if new_host_key:
            generate_key(self.host_key, "test-host-new")
        self.start()

    def freeze(self) -> None:
        """Suspend the listener, then every connection it serves (see the module docstring)."""
        if self._process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            self._process.send_signal(signal.SIGSTOP)
        for pid in self.connection_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        """Resume what :meth:`freeze` suspended: the connections, then the listener."""
        if self._process is None:
            return
        for pid in self.connection_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        with contextlib.suppress(ProcessLookupError):
            self._process.send_signal(signal.SIGCONT)

    def connection_pids(self) -> list[int]:
        """PIDs of the per-connection sshd processes (children of the listener)."""
        if self._process is None:
            return []
        try:
            return [c.pid for c in psutil.Process(self._process.pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def drop_connections(self) -> int:
        """Kill every per-connection sshd process, keeping the listener; returns how many."""
        if self._process is None:
            return 0
        return self._kill_children(self._process.pid)

    @staticmethod
    def _kill_children(pid: int) -> int:
        try:
            children = psutil.Process(pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return 0
        for child in children:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
        psutil.wait_procs(children, timeout=_STOP_DEADLINE)
        return len(children)

    def _log_since(self, offset: int) -> str:
        try:
            with self.log_file.open("rb") as log:
                log.seek(offset)
                return log.read().decode(errors="replace")
        except OSError:
            return ""

    def log_text(self) -> str:
        """sshd's log so far (useful in assertion messages)."""
        return self.log_file.read_text(errors="replace") if self.log_file.exists() else ""

    def host_public_key_line(self) -> str:
        """The host key's ``.pub`` line (``ssh-ed25519 AAAA... comment``)."""
        return self.host_key.with_name(self.host_key.name + ".pub").read_text().strip()


def sshd_available() -> bool:
    """True when OpenSSH's server and ssh-keygen are installed."""
    return SSHD.is_file() and os.access(SSHD, os.X_OK) and Path(SSH_KEYGEN).is_file()


def require_sshd() -> None:
    """Skip the calling test (or fixture) where OpenSSH's server is not installed."""
    if not sshd_available():
        pytest.skip("OpenSSH server not installed (/usr/sbin/sshd; apt-get install openssh-server)")


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[SshServer]:
    """A running :class:`SshServer` for one test; stopped (with its connections) afterwards."""
    require_sshd()
    server = SshServer(tmp_path / "sshd")
    server.start()
    try:
        yield server
    finally:
        server.stop()
