"""What ships into WAA's container (the scoring server, the rules, the relay) runs on its 3.9.

Two checks: ``vermin -t=3.9-`` over the source files (the same command as ``.ci/run``) and over
the form cloud-init ships (docstrings and comments stripped), and that shipped form run for real
under a Python 3.9 interpreter when one can be found.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import requests

from infra.worker.cloud_init import WorkerFiles

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = [
    ROOT / "infra" / "worker" / "scoring_server.py",
    ROOT / "infra" / "scoring_rules.py",
    ROOT / "infra" / "worker" / "relay.py",
]
TIMEOUT = 30


def _vermin(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).with_name("vermin")), "-t=3.9-", "--no-tips", "--violations",
         *map(str, paths)],
        capture_output=True, text=True, timeout=120, check=False,
    )


def test_shipped_files_are_what_cloud_init_ships_and_ci_checks() -> None:
    cloud_init = (ROOT / "infra" / "worker" / "cloud_init.py").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for path in SHIPPED:
        assert f'"{path.name}"' in cloud_init, f"{path.name} is no longer shipped?"
        assert str(path.relative_to(ROOT)) in ci, f".ci/run does not check {path.name}"


def test_vermin_finds_nothing_newer_than_3_9() -> None:
    done = _vermin(*SHIPPED)
    assert done.returncode == 0, done.stdout + done.stderr


def test_vermin_finds_nothing_newer_than_3_9_in_the_shipped_form(tmp_path: Path) -> None:
    shipped = _write_shipped(tmp_path)
    done = _vermin(*shipped)
    assert done.returncode == 0, done.stdout + done.stderr


def _write_shipped(folder: Path) -> list[Path]:
    """The Python files exactly as cloud-init writes them onto the host."""
    files = WorkerFiles.from_package().files
    written = []
    for path in SHIPPED:
        target = folder / path.name
        target.write_text(files[path.name], encoding="utf-8")
        written.append(target)
    return written


def test_vermin_would_catch_zip_strict(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("pairs = list(zip([1], [2], strict=True))\n", encoding="utf-8")
    done = _vermin(bad)
    assert done.returncode != 0 and "zip(strict)" in done.stdout


def _python39() -> str:
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    installed = sorted(str(p) for p in pyenv.glob("3.9.*/bin/python3.9"))
    for candidate in (*installed, shutil.which("python3.9")):
        if candidate and Path(candidate).is_file():
            probe = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2])"],
                                   capture_output=True, text=True, timeout=60, check=False)
            if probe.returncode == 0 and probe.stdout.strip() == "(3, 9)":
                return candidate
    pytest.skip("no Python 3.9 interpreter found (pyenv's 3.9 or python3.9 on PATH)")


# Python 3.9 here has no third-party packages, so WAA's desktop_env (which needs requests)
# cannot be imported by it; this minimal stand-in has WAA's shape (get_<type>(env, config),
# plain metric functions, a SetupController with _<type>_setup methods) and nothing else.
_STAND_IN = {
    "desktop_env/__init__.py": "",
    "desktop_env/evaluators/__init__.py": "",
    "desktop_env/evaluators/getters.py": """
        def get_rule(env, config):
            return config["rules"]

        def get_value(env, config):
            return config["value"]
    """,
    "desktop_env/evaluators/metrics.py": """
        def exact_match(result, rules):
            return 1.0 if result == rules["expected"] else 0.0

        def echo(result, expected=None):
            return result
    """,
    "desktop_env/controllers/__init__.py": "",
    "desktop_env/controllers/setup.py": """
        class SetupController:
            def __init__(self, vm_ip, cache_dir):
                self.cache_dir = cache_dir

            def reset_cache_dir(self, cache_dir):
                self.cache_dir = cache_dir

            def _sleep_setup(self, seconds):
                pass
    """,
}


def test_shipped_files_run_under_python_3_9(tmp_path: Path) -> None:
    python = _python39()
    ship = tmp_path / "ship"
    ship.mkdir()
    _write_shipped(ship)
    client = tmp_path / "client"
    for name, body in _STAND_IN.items():
        (client / name).parent.mkdir(parents=True, exist_ok=True)
        (client / name).write_text(textwrap.dedent(body), encoding="utf-8")
    tasks = tmp_path / "tasks"
    (tasks / "examples").mkdir(parents=True)
    (tasks / "test_all.json").write_text("{}", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    process = subprocess.Popen(
        [python, str(ship / "scoring_server.py"), "--port", "0", "--waa-client", str(client),
         "--tasks-dir", str(tasks), "--cache-dir", str(tmp_path / "cache")],
        cwd=ship, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("listening on "), line + (process.stderr.read()
                                                         if process.stderr else "")
        url = line.split()[-1]

        def value(v: object) -> dict[str, object]:
            return {"type": "value", "value": v}

        mean = {"id": "t-1", "evaluator": {
            "func": ["echo", "echo"], "result": [value(0.5), value(1.0)],
            "expected": [None, None], "postconfig": [{"type": "sleep",
                                                      "parameters": {"seconds": 0}}]}}
        got = requests.post(f"{url}/evaluate", json={"task": mean, "last_action": "DONE"},
                            timeout=TIMEOUT)
        assert got.status_code == 200 and got.json()["score"] == 0.75, got.text
        assert (tmp_path / "cache" / "t-1").is_dir()  # a cache folder per task
        infeasible = {"id": "t-2", "evaluator": {"func": "infeasible"}}
        got = requests.post(f"{url}/evaluate", json={"task": infeasible, "last_action": "FAIL"},
                            timeout=TIMEOUT)
        assert got.json()["score"] == 1.0
        crash = {"id": "t-3", "evaluator": {"func": ["echo"], "result": [value(1)]}}
        got = requests.post(f"{url}/evaluate", json={"task": crash, "last_action": "DONE"},
                            timeout=TIMEOUT)
        assert got.status_code == 422, got.text
        setup = requests.post(f"{url}/setup", json={"config": [], "task_id": "t-4"},
                              timeout=TIMEOUT)
        assert setup.status_code == 200 and json.loads(setup.text)["status"] == "ok"
    finally:
        process.terminate()
        try:
            process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=TIMEOUT)
