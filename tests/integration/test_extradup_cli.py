"""ExtraDup's kill-scan through the real CLI: the screen reward pays all 15 wrong writes, the
store reward none of them and all 3 correct runs (exit 1, since one reward pays); a user's own
reward module is scored the same way (``--reward package.module:function``)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import run_cli

USER_REWARDS = '''
def reads_the_store(case):
    """Pays for exactly one stored encounter equal to the expected one."""
    return case.store.count(case.expected) == 1 and len(case.store) == 1


def trusts_the_banner(case):
    return 1.0 if case.screen["banner"] == "Saved" else 0.0


def raises(case):
    raise RuntimeError("no store client")
'''


def test_kill_scan_pays_every_wrong_write_on_screen_and_none_from_the_store(
    tmp_path: Path,
) -> None:
    ran = run_cli("python", "-m", "evals.extradup", "kill-scan", home=tmp_path / "home")
    assert ran.returncode == 1, ran.stderr
    rows = {line[:29].strip(): line[29:].split() for line in ran.stdout.splitlines()}
    assert rows["all wrong writes"] == ["paid", "15/15", "paid", "0/15"]
    assert rows["correct runs"] == ["paid", "3/3", "paid", "3/3"]
    for family in ("duplicate record", "extra field", "missing field", "never submitted",
                   "saved banner, nothing saved"):
        assert rows[family] == ["paid", "3/3", "paid", "0/3"], family
    assert "store: paid no wrong write (0/15 wrong, 3/3 correct)" in ran.stdout


def test_a_users_reward_module_is_scanned(tmp_path: Path) -> None:
    (tmp_path / "my_rewards.py").write_text(USER_REWARDS, encoding="utf-8")
    env = {"PYTHONPATH": str(tmp_path)}
    good = run_cli("openadapt-evals", "extradup", "kill-scan", "--reward",
                   "my_rewards:reads_the_store", "--json", home=tmp_path / "home", env=env)
    assert good.returncode == 0, good.stderr
    (scan,) = json.loads(good.stdout)["rewards"]
    assert (scan["wrong_paid"], scan["correct_paid"]) == (0, 3)

    sloppy = run_cli("openadapt-evals", "extradup", "kill-scan", "--reward",
                     "my_rewards:trusts_the_banner", "--json", home=tmp_path / "home", env=env)
    assert sloppy.returncode == 1, sloppy.stderr
    (scan,) = json.loads(sloppy.stdout)["rewards"]
    # the banner is on screen for every family but the form never submitted
    assert scan["paid"]["never submitted"] == 0 and scan["wrong_paid"] == 12

    broken = run_cli("openadapt-evals", "extradup", "kill-scan", "--reward",
                     "my_rewards:raises", home=tmp_path / "home", env=env)
    assert broken.returncode == 0 and "RuntimeError: no store client" in broken.stderr
    assert "missed correct runs (0/15 wrong, 0/3 correct)" in broken.stdout

    missing = run_cli("openadapt-evals", "extradup", "kill-scan", "--reward",
                      "my_rewards:nothing_here", home=tmp_path / "home", env=env)
    assert "has no 'nothing_here'" in missing.assert_one_line_error()
