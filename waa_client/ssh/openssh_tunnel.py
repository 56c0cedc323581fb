"""SSH forwarding through OpenSSH child processes: one ControlMaster per host, ``-O forward``.

The default backend of :class:`waa_client.ssh.PoolTunnels` when an ``ssh`` client is
installed (paramiko, :class:`waa_client.ssh.WorkerTunnel`, is the fallback). Forwarding in
paramiko runs in the controller's own threads and interpreter lock: 11 to 16 ms of controller
CPU per MB moved, measured by ``bench/scale.py``. ``ssh`` does the same work in C, in other
processes, so a sweep's controller spends its CPU on the sweep.

One master connection is opened per SSH endpoint (``user@host:port`` and key):
``ssh -M -N -S <control socket> ...``, a child process of this one. Each worker's two forwards
(WAA and scoring, ``-L 127.0.0.1:<local>:<remote host>:<port>``) are then added to it with
``ssh -S <socket> -O forward``. Cloud workers have one host each, so one master each; local
workers behind one SSH server share a single connection.

The same rules as the paramiko backend hold: the pool's key only (no agent, no
``~/.ssh/config``), host keys pinned in the pool's ``known_hosts`` (OpenSSH's own format;
first contact remembered, a changed key refused), every step bounded by ``connect_timeout``,
failures raised as :mod:`waa_client.errors` with the reason ssh gave.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import IO

from waa_client import retry
from waa_client.addresses import host_port
from waa_client.errors import TunnelError
from waa_client.poll import poll_until
from waa_client.ssh.base import (
    LOCALHOST,
    LocalForwards,
    endpoint_options,
    forward_specs,
    load_private_key,
)
from waa_client.ssh.failures import (
    handshake_error,
    no_ssh_client,
    ssh_output_error,
    tunnel_error,
)
from waa_client.ssh.known_hosts import KnownHosts

_CONTROL_TIMEOUT = 15.0  # for the short ``-O`` commands
_STOP_GRACE = 5.0
FORWARD_ATTEMPTS = 3
"""Tries of ``ssh -O forward`` before a refused forward is raised."""


class _ForwardRefused(Exception):
    """``ssh -O forward`` refused while the connection is up (ssh's words as the message)."""


def ssh_binary() -> str | None:
    """The ``ssh`` client to use, or None when none is installed."""
    return shutil.which("ssh")


def _control_dir() -> Path:
    """A private folder for control sockets (short path: sockets are limited to ~100 bytes)."""
    global _CONTROL_DIR
    with _control_dir_lock:
        if _CONTROL_DIR is None or not _CONTROL_DIR.is_dir():
            _CONTROL_DIR = Path(tempfile.mkdtemp(prefix="oa-ssh-"))
            atexit.register(shutil.rmtree, _CONTROL_DIR, True)
        return _CONTROL_DIR


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOCALHOST, 0))
        return int(sock.getsockname()[1])


class _Master:
    """One ``ssh -M`` connection to an SSH endpoint, shared by the tunnels through it."""

    def __init__(
        self, host: str, port: int, user: str, key_path: Path, known_hosts: KnownHosts,
        *, connect_timeout: float, keepalive: float, name: str,
    ) -> None:
        self.host, self.port, self.user, self.key_path = host, port, user, key_path
        self.known_hosts = known_hosts
        self.connect_timeout = connect_timeout
        self.keepalive = keepalive
        self.name = name
        self.users = 0
        self.lock = threading.RLock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self.control = _control_dir() / f"m{os.getpid()}-{id(self):x}"

    @property
    def address(self) -> str:
        return host_port(self.host, self.port)

    def options(self) -> list[str]:
        """Options every ssh invocation for this endpoint gets: the pool's
        (:func:`waa_client.ssh.base.endpoint_options`) and the control socket."""
        return [*endpoint_options(self.key_path, self.port, self.known_hosts.path,
                                  connect_timeout=self.connect_timeout, keepalive=self.keepalive),
                "-S", str(self.control)]

    def alive(self) -> bool:
        """True while the master process runs and its control socket exists."""
        proc = self._proc
        return proc is not None and proc.poll() is None and self.control.exists()

    def start(self) -> None:
        """Connect (no-op when connected).

        Raises:
            SshUnreachableError, SshAuthenticationError, HostKeyMismatchError: as ssh reported.
        """
        with self.lock:
            if self.alive():
                return
            self.stop()
            self.known_hosts.path.parent.mkdir(parents=True, exist_ok=True)
            ssh = ssh_binary()
            if ssh is None:
                raise no_ssh_client()
            self._stderr = tempfile.TemporaryFile()  # noqa: SIM115  (closed by stop())
            argv = [ssh, "-M", "-N", *self.options(), f"{self.user}@{self.host}"]
            # In this process's group: a Ctrl-C in the terminal ends the masters with the
            # controller. A controller killed outright (SIGKILL) leaves them running until the
            # worker side closes the connection; `pgrep -f 'ssh -M -N'` finds them.
            self._proc = subprocess.Popen(  # fixed argv, no shell
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._stderr,
            )
            # connect, host key, login, each bounded by ConnectTimeout; this deadline bounds
            # the whole (a server that accepts and never speaks, for one)
            proc = self._proc

            def connected() -> bool:
                if self.control.exists():
                    return True
                if proc.poll() is not None:
                    raise self._failure(self._read_stderr())
                return False

            if not poll_until(connected, timeout_s=2 * self.connect_timeout + 5.0,
                              interval_s=0.02):
                self.stop()
                raise handshake_error(None, worker=self.name, host=self.host, port=self.port,
                                      connect_timeout=self.connect_timeout)

    def _read_stderr(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")

    def _failure(self, text: str) -> TunnelError:
        """ssh's own words, mapped onto the error tree."""
        return ssh_output_error(text, worker=self.name, host=self.host, port=self.port,
                                user=self.user, key_path=self.key_path,
                                connect_timeout=self.connect_timeout,
                                remembered=self.known_hosts.known_keys(self.host, self.port),
                                known_hosts_file=self.known_hosts.path)

    def control_command(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run ``ssh -S <socket> <args> user@host`` against the master."""
        ssh = ssh_binary() or "ssh"
        return subprocess.run(  # fixed argv, no shell
            [ssh, *self.options(), *args, f"{self.user}@{self.host}"],
            stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=_CONTROL_TIMEOUT, check=False,
        )

    def stop(self) -> None:
        """Close the connection and reap the process (idempotent)."""
        with self.lock:
            proc, self._proc = self._proc, None
            if proc is not None and proc.poll() is None:
                with contextlib.suppress(OSError, subprocess.SubprocessError):
                    self.control_command("-O", "exit")
                with contextlib.suppress(ProcessLookupError):
                    proc.terminate()
                try:
                    proc.wait(timeout=_STOP_GRACE)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=_STOP_GRACE)
            elif proc is not None:
                proc.wait()
            with contextlib.suppress(FileNotFoundError):
                self.control.unlink()
            if self._stderr is not None:
                self._stderr.close()
                self._stderr = None


_registry_lock = threading.Lock()
_control_dir_lock = threading.Lock()
_masters: dict[tuple[str, int, str, str, str], _Master] = {}
_CONTROL_DIR: Path | None = None


def _acquire(
    host: str, port: int, user: str, key_path: Path, known_hosts: KnownHosts, *,
    connect_timeout: float, keepalive: float, name: str,
) -> _Master:
    key = (host, port, user, str(key_path), str(known_hosts.path))
    with _registry_lock:
        master = _masters.get(key)
        if master is None:
            master = _Master(host, port, user, key_path, known_hosts,
                             connect_timeout=connect_timeout, keepalive=keepalive, name=name)
            _masters[key] = master
        master.users += 1
        return master


def _release(master: _Master) -> None:
    with _registry_lock:
        master.users -= 1
        last = master.users <= 0
        if last:
            for key, value in list(_masters.items()):
                if value is master:
                    del _masters[key]
    if last:
        master.stop()


class OpenSshTunnel(LocalForwards):
    """One worker's WAA and scoring ports on 127.0.0.1, forwarded by an OpenSSH master.

    The same interface as :class:`waa_client.ssh.WorkerTunnel` (``start``, ``stop``,
    ``ensure``, ``is_healthy``, the local ports and URLs) and the same arguments.
    """

    _master: _Master | None = None

    def _specs(self, ports: tuple[int, int]) -> list[str]:
        return forward_specs(self.target, *ports)

    def start(self) -> None:
        """Connect (or join the endpoint's connection) and add both forwards.

        Raises:
            KeyFileError, SshUnreachableError, HostKeyMismatchError, SshAuthenticationError.
        """
        with self._lock:
            if self._master is not None:
                return
            t = self.target
            load_private_key(t.key_path)  # refuse what ssh would refuse, with our message
            master = _acquire(
                t.ssh_host, t.ssh_port, t.ssh_user, t.key_path, self.known_hosts,
                connect_timeout=self.connect_timeout, keepalive=self.keepalive, name=t.name,
            )
            try:
                master.start()
                self._forward(master)
            except BaseException:
                _release(master)
                raise
            self._master = master

    def _forward(self, master: _Master) -> None:
        """Add both forwards; a refusal while the connection is up (a local port taken since
        it was chosen, or kept from before) is retried at once on new free ports,
        :data:`FORWARD_ATTEMPTS` tries in all, under the retry policy."""
        wanted = self._ports if self._ports != (0, 0) else (_free_port(), _free_port())

        def once() -> None:
            nonlocal wanted
            args = ["-O", "forward"]
            for spec in self._specs(wanted):
                args += ["-L", spec]
            done = master.control_command(*args)
            if done.returncode == 0:
                self._ports = wanted
                return
            if not master.alive():
                raise master._failure(done.stderr)
            wanted = (_free_port(), _free_port())
            raise _ForwardRefused(done.stderr.strip() or "no message")

        try:
            # no wait between tries: the new ports are free now, waiting would not help
            retry.call(once, attempts=FORWARD_ATTEMPTS, backoff_max=0,
                       retryable=lambda e: isinstance(e, _ForwardRefused))
        except _ForwardRefused as exc:
            raise tunnel_error(f"ssh could not forward local ports ({exc})",
                               worker=self.target.name, host=master.host,
                               port=master.port) from None

    def stop(self) -> None:
        """Remove this worker's forwards; the connection closes with its last tunnel."""
        with self._lock:
            master, self._master = self._master, None
            if master is None:
                return
            if master.alive():
                args = ["-O", "cancel"]
                for spec in self._specs(self._ports):
                    args += ["-L", spec]
                with contextlib.suppress(OSError, subprocess.SubprocessError):
                    master.control_command(*args)
            _release(master)

    def is_active(self) -> bool:
        """True while the SSH connection is up."""
        master = self._master
        return master is not None and master.alive()

    def is_healthy(self) -> bool:
        """True when the connection is up and both local ports accept connections."""
        if not self.is_active():
            return False
        for port in self._ports:
            try:
                with socket.create_connection((LOCALHOST, port), timeout=self.connect_timeout):
                    pass
            except OSError:
                return False
        return True
