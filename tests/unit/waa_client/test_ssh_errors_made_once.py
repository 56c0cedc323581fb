"""Every SSH error is made in ``waa_client/ssh/failures.py`` (one place for the words and the
advice), and only ``ssh/paramiko_connect.py`` runs paramiko's connect sequence."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("waa_client", "oa_vm", "evals")
SSH_ERRORS = {"SshUnreachableError", "SshAuthenticationError", "HostKeyMismatchError"}
CONNECT_STEPS = {"start_client", "auth_publickey"}


def _calls(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func).rsplit(".", 1)[-1]
            found.append((node.lineno, name))
    return found


def _offenders(names: set[str], allowed: Path) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{line}: {name}"
            for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
            if path != allowed for line, name in _calls(path) if name in names]


def test_every_ssh_error_is_made_in_failures() -> None:
    offenders = _offenders(SSH_ERRORS, ROOT / "waa_client" / "ssh" / "failures.py")
    assert offenders == [], "make it in waa_client/ssh/failures.py:\n" + "\n".join(offenders)


def test_one_paramiko_connect_sequence() -> None:
    offenders = _offenders(CONNECT_STEPS, ROOT / "waa_client" / "ssh" / "paramiko_connect.py")
    assert offenders == [], "connect with waa_client/ssh/paramiko_connect.py:\n" + "\n".join(
        offenders)
