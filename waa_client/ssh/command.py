"""The one SSH command runner: one command on a worker host, its exit status and its output.

Used for what is read or done on a cloud worker's host itself rather than through its servers:
the host's status file while a pool boots or drains, a clean reset's ``reset.sh``. It speaks
paramiko with the pool's own key and known_hosts (trust on first use, then a changed host key is
refused), like the paramiko tunnel backend, and maps every failure through :mod:`.failures`, so
a command and a tunnel to the same worker fail with the same words.

Every step has a timeout: the TCP connect, the SSH banner, handshake and login
(``connect_timeout``), and the command's output (``timeout`` of :meth:`SshCommandRunner.run`);
a command fed ``stdin`` (a user's ISO onto an image builder) waits at most ``timeout`` for each
chunk the server must accept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import paramiko

from waa_client.ssh.base import load_private_key
from waa_client.ssh.failures import session_error
from waa_client.ssh.known_hosts import KnownHosts
from waa_client.ssh.paramiko_connect import close_transport, connect

CONNECT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class CommandResult:
    """Exit status and combined output (stdout and stderr) of one remote command."""

    status: int
    output: str


class SshCommandRunner:
    """Runs commands on hosts over SSH, one connection per command.

    Args:
        known_hosts: The pool's known_hosts file (a host's key is remembered on first contact).
        connect_timeout: Seconds for the TCP connect and for each step of the SSH handshake and
            login.
    """

    def __init__(self, known_hosts: Path, *, connect_timeout: float = CONNECT_TIMEOUT_S) -> None:
        self.known_hosts = KnownHosts(known_hosts)
        self.connect_timeout = connect_timeout

    def run(self, host: str, port: int, user: str, key_path: Path | str, command: str,
            timeout: float, *, worker: str = "", stdin: BinaryIO | None = None,
            on_sent: Callable[[int], None] | None = None) -> CommandResult:
        """Connect, check the host key, log in with the key, run ``command``.

        Args:
            host, port, user, key_path: The host's SSH server and the pool's login.
            command: One shell command line, run by the login shell of ``user``.
            timeout: Seconds the command may go without sending output.
            worker: The worker's name, for messages (none when empty).
            stdin: Bytes for the command's standard input, sent whole, then closed.
            on_sent: Called with the bytes of ``stdin`` sent so far, after each chunk.

        Raises:
            KeyFileError: The pool's key cannot be used.
            SshUnreachableError: The host cannot be reached, the handshake failed, or the
                session was lost (also when the command's output stopped for ``timeout``).
            HostKeyMismatchError: The host's key changed.
            SshAuthenticationError: The key was refused.
        """
        pkey = load_private_key(Path(key_path))
        transport = connect(host, port, user=user, pkey=pkey, key_path=key_path,
                            known_hosts=self.known_hosts, connect_timeout=self.connect_timeout,
                            worker=worker)
        try:
            channel = transport.open_session(timeout=self.connect_timeout)
            channel.settimeout(timeout)
            channel.set_combine_stderr(True)
            channel.exec_command(command)
            if stdin is not None:
                self._send(channel, stdin, on_sent)
            chunks = []
            while data := channel.recv(65536):  # until the command closes its output
                chunks.append(data)
            status = channel.recv_exit_status()
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise session_error(exc, worker=worker, host=host, port=port) from exc
        finally:
            close_transport(transport)
        return CommandResult(status, b"".join(chunks).decode("utf-8", "replace"))

    @staticmethod
    def _send(channel: paramiko.Channel, stdin: BinaryIO,
              on_sent: Callable[[int], None] | None) -> None:
        """Feed ``stdin`` to the command, then end its input. A command that ended before
        taking it all is no lost session: its exit status and words are read as usual."""
        sent = 0
        try:
            while block := stdin.read(1 << 20):
                channel.sendall(block)  # each waits at most the channel's timeout
                sent += len(block)
                if on_sent is not None:
                    on_sent(sent)
            channel.shutdown_write()  # end of input: the command sees EOF
        except (paramiko.SSHException, OSError):
            if not channel.exit_status_ready():
                raise
