"""``--egress`` through the real CLIs: refused in one line before anything exists, shown in every
plan, recorded in the pool, in every task's record and in the run's manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oa_vm.model import state
from tests.support.cli import run_cli

pytestmark = pytest.mark.integration


def _offline_env(tmp_path: Path) -> dict[str, str]:
    """No pulumi CLI on PATH, and caller-IP detection pointed at a closed loopback port."""
    empty = tmp_path / "empty-path"
    empty.mkdir(exist_ok=True)
    return {"PATH": str(empty), "OA_VM_IP_ECHO_URL": "http://127.0.0.1:9/"}


@pytest.mark.parametrize(
    ("egress", "expected"),
    [
        ("sometimes", "--egress sometimes: unknown egress mode 'sometimes'"),
        ("allowlist", "give the allow-list's file as allowlist:FILE"),
        ("allowlist:missing.txt", "missing.txt does not exist"),
        ("allowlist:bad.txt", "bad.txt line 2 is not a host name; give host or host:port"),
        ("allowlist:empty.txt", "empty.txt names no host"),
        # Python's own words were printed: "'utf-8' codec can't decode byte 0xff..."
        ("allowlist:latin.txt", "latin.txt is not UTF-8 text (byte 3); save it as UTF-8"),
        ("web:x", "egress mode web takes no file"),
    ],
)
@pytest.mark.parametrize("command", [("oa-vm", "pool-create", "--cloud", "local"),
                                     ("oa-vm", "pool-create", "--cloud", "aws", "--plan")])
def test_a_bad_egress_is_one_line_and_creates_nothing(
    tmp_path: Path, egress: str, expected: str, command: tuple[str, ...]
) -> None:
    (tmp_path / "bad.txt").write_text("ok.example\nnot a host!\n", encoding="utf-8")
    (tmp_path / "empty.txt").write_text("# nothing\n", encoding="utf-8")
    (tmp_path / "latin.txt").write_bytes("caf\u00e9.example\n".encode("latin-1"))
    home = tmp_path / "home"
    script, *args = command
    result = run_cli(script, *args, "--egress", egress.replace("missing", str(tmp_path / "missing"))
                     .replace("bad.txt", str(tmp_path / "bad.txt"))
                     .replace("empty.txt", str(tmp_path / "empty.txt"))
                     .replace("latin.txt", str(tmp_path / "latin.txt")),
                     home=home, env=_offline_env(tmp_path) if "aws" in command else None)
    line = result.assert_one_line_error()
    assert expected in line, line
    assert not (home / "pools").exists() or not any((home / "pools").iterdir())


@pytest.mark.parametrize(
    ("cloud", "egress", "shown"),
    [
        ("aws", None, "egress web: the guest reaches public addresses on HTTP and HTTPS only"),
        ("azure", "none", "egress none: the guest opens no connection at all"),
        ("aws", "allowlist:waa", "egress allowlist: the guest reaches only the allow-list's hosts"),
        ("local", None, "egress none:"),
    ],
)
def test_every_plan_says_what_the_guest_may_reach(
    tmp_path: Path, cloud: str, egress: str | None, shown: str
) -> None:
    args = ["pool-create", "--cloud", cloud, "--plan"] + (["--egress", egress] if egress else [])
    result = run_cli("oa-vm", *args, home=tmp_path / "home", env=_offline_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert shown in result.stdout
    assert "never the instance metadata service, the host's services or another worker" in (
        result.stdout)


def test_a_sweep_records_the_egress_in_the_pool_every_task_and_the_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, results = tmp_path / "home", tmp_path / "runs"
    monkeypatch.setenv("OA_VM_HOME", str(home))
    result = run_cli("openadapt-evals", "sweep", "--cloud", "local", "--workers", "1",
                     "--tasks", "domain:notepad", "--agent", "noop", "--egress", "none",
                     "--run-name", "r", "--results-dir", str(results), home=home, timeout=600)
    assert result.returncode == 0, result.stderr
    records = [json.loads(p.read_text()) for p in (results / "r").rglob("execution.json")]
    assert records and all(r["egress"] == "none" for r in records)
    manifest = json.loads((results / "r" / "manifest.json").read_text())
    assert [p["egress"] for p in manifest["pools"]] == ["none"]
    assert not state.list_names()  # the sweep's pool is gone; its record said none (above)
