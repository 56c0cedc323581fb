"""``--allow-cidr 0.0.0.0/0`` on every command that opens a cloud host's SSH
(``pool-create``, ``sweep``, ``smoke``, ``image-create``): the "open to the whole internet"
warning, once, with the plan (``--plan``) and with ``-y`` before the host is made; with no
terminal and no ``-y`` only the refusal is said (tests/integration/test_no_terminal_refusal.py).

Offline: the plans run under Pulumi's mocks, the engine is the stand-in ``pulumi`` CLI
(``tests/support/fake_pulumi_cli.py``), which fails the create's ``up``, so nothing is made and
what the command began is removed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from oa_vm.cli.pool_options import OPEN_TO_ALL
from tests.support import fake_pulumi_cli
from tests.support.cli import run_cli

pytestmark = pytest.mark.integration

SNAPSHOT = "snap-0123456789abcdef0"
POOL = ("--pool", "pw", "--image", SNAPSHOT, "--allow-cidr", "0.0.0.0/0")

# name: (script, arguments); "{results}" is a folder of tmp_path
COMMANDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "image-create": ("oa-vm", ("image-create", "--cloud", "aws", "--region", "us-east-1",
                               "--allow-cidr", "0.0.0.0/0")),
    "pool-create": ("oa-vm", ("pool-create", "--cloud", "aws", "--workers", "1", *POOL)),
    "smoke": ("oa-vm", ("smoke", "--cloud", "aws", *POOL)),
    "sweep": ("openadapt-evals", ("sweep", "--cloud", "aws", "--workers", "1", *POOL, "--tasks",
                                  "3", "--agent", "noop", "--results-dir", "{results}")),
}


@pytest.mark.parametrize("how", ["--plan", "-y"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_pool_open_to_the_whole_internet_is_warned_of(
    tmp_path: Path, command: str, how: str
) -> None:
    home = tmp_path / "home"
    env = fake_pulumi_cli.offline_env(tmp_path)
    script, args = COMMANDS[command]
    args = tuple(a.replace("{results}", str(tmp_path / "results")) for a in args)
    result = run_cli(script, *args, how, home=home, env=env)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stderr.splitlines().count(OPEN_TO_ALL) == 1, result.stderr
    assert OPEN_TO_ALL not in result.stdout  # stdout may be carrying --json
    if how == "--plan":
        assert result.returncode == 0, result.stderr
    else:  # the stand-in's up fails: the pool was going to be made, and is not
        assert "for the stand-in" in result.stdout + result.stderr, result.stderr
        assert result.returncode == 1
        assert not list(home.rglob("pool.json"))
