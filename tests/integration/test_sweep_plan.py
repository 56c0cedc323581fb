"""``sweep --plan`` answers "what must happen first, how long, what does it cost" in one block,
through the real CLI as a subprocess, offline: the account's vCPU quota comes from a stand-in
``aws``/``az`` on PATH printing a recorded answer, and no model API key is set."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.support import fake_quota_cli
from tests.support.cli import BIN, Result

pytestmark = pytest.mark.integration

SECRETS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
SWEEP_40 = ["sweep", "--cloud", "aws", "--workers", "40", "--tasks", "all", "--agent",
            "api-claude", "--plan"]


def _run(tmp_path: Path, *args: str, bin_dir: Path | None = None) -> Result:
    """``openadapt-evals ARGS`` with no API key, no pulumi, only the stand-in CLI on PATH, and
    caller-IP detection pointed at a closed loopback port."""
    path = bin_dir or tmp_path / "empty-path"
    path.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in SECRETS}
    env.update(PATH=str(path), OA_VM_HOME=str(tmp_path / "home"),
               OA_VM_IP_ECHO_URL="http://127.0.0.1:9/")
    proc = subprocess.run(  # fixed argv, no shell
        [str(BIN / "openadapt-evals"), *args, "--results-dir", str(tmp_path / "results")],
        capture_output=True, text=True, timeout=300, env=env, stdin=subprocess.DEVNULL,
        check=False,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def _block(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Sweep plan: "))
    return lines[start:]


def test_forty_aws_workers_with_a_model_agent_plan_in_one_block_without_a_key(
    tmp_path: Path,
) -> None:
    bin_dir = fake_quota_cli.install(tmp_path / "bin", "aws", fake_quota_cli.aws_answer(512))
    done = _run(tmp_path, *SWEEP_40, bin_dir=bin_dir)
    assert done.returncode == 0, done.stderr
    block = _block(done.stdout)
    text = "\n".join(block)
    assert block[0].startswith("Sweep plan: 154 task(s) with agent 'api-claude' on 40 aws "
                               "worker(s) (m8i.2xlarge in us-east-1)")
    # what must happen first: the image build (this home has none) and the quota, read
    first = block[block.index("First:") + 1:block.index("Time and cost:")]
    assert any(line.startswith("  image:") and "an image build first, about 2 h (1.5-3 h, "
               "estimated)" in line for line in first), first
    quota = next(line for line in first if line.startswith("  vCPU quota:"))
    assert "320 vCPUs needed" in quota and "L-1216C47A" in quota and "512 vCPUs" in quota
    assert quota.endswith("[measured]")
    # time to ready and to done, with the per-task figure's source; VM and token cost
    for label in ("tasks:", "ready in:", "done in:", "VM cost:", "model tokens:", "total:"):
        assert any(line.startswith(f"  {label}") for line in block), (label, text)
    done_line = next(line for line in block if line.startswith("  done in:"))
    assert "154 tasks x 3 min / 40 worker(s)" in done_line
    assert "the reference dry run's 3.0 VM-minutes per agent task" in done_line
    tokens = next(line for line in block if line.startswith("  model tokens:"))
    assert "claude-sonnet-4 list price" in tokens and "at most 15 steps" in tokens
    assert re.search(r"at most \$\d+\.\d\d", tokens), tokens
    # every figure says whether it is measured or estimated
    figures = [line for line in block if re.match(r"  [a-zA-Z][a-zA-Z ]*: ", line)]
    assert len(figures) >= 8
    assert all(line.endswith(("[estimated]", "[measured]")) for line in figures), figures
    after = block[block.index("Keeps billing after the sweep:") + 1:]
    assert any("the image's snapshot" in line for line in after), after
    # the stand-in was asked the real question, once
    (call,) = fake_quota_cli.calls(bin_dir)
    assert call[:6] == ["service-quotas", "get-service-quota", "--service-code", "ec2",
                        "--quota-code", "L-1216C47A"]
    assert call[call.index("--region") + 1] == "us-east-1"
    assert not (tmp_path / "home").exists() and not (tmp_path / "results").exists()


def test_forty_workers_above_the_quota_are_refused_in_one_line(tmp_path: Path) -> None:
    bin_dir = fake_quota_cli.install(tmp_path / "bin", "aws", fake_quota_cli.aws_answer(256))
    done = _run(tmp_path, *SWEEP_40, bin_dir=bin_dir)
    line = done.assert_one_line_error()
    assert done.returncode == 2
    assert "40 x m8i.2xlarge need 320 vCPUs" in line
    assert "L-1216C47A" in line and "256 vCPUs left" in line
    assert "request an increase to 320" in line and "--workers 32" in line
    assert done.stdout == ""
    assert not (tmp_path / "home" / "pools").exists()


def test_azure_quota_is_the_family_and_the_expiry_ends_the_workers(tmp_path: Path) -> None:
    bin_dir = fake_quota_cli.install(tmp_path / "bin", "az", fake_quota_cli.az_answer(100))
    ok = _run(tmp_path, "sweep", "--cloud", "azure", "--workers", "4", "--tasks", "all",
              "--agent", "noop", "--plan", bin_dir=bin_dir)
    assert ok.returncode == 0, ok.stderr
    text = "\n".join(_block(ok.stdout))
    assert "32 vCPUs needed; quota standardDSv5Family in eastus: 100 vCPUs, 4 in use" in text
    assert "model tokens: $0.00: the noop agent calls no model API [measured]" in text
    assert "nothing of the workers: the expiry's deleter removes the pool's resource group" in text
    refused = _run(tmp_path, "sweep", "--cloud", "azure", "--workers", "13", "--tasks", "all",
                   "--agent", "noop", "--plan", bin_dir=bin_dir)
    line = refused.assert_one_line_error()
    assert "13 x Standard_D8s_v5 need 104 vCPUs" in line
    assert "96 vCPUs left (4 of 100 in use)" in line and "--workers 12" in line


def test_without_a_cloud_cli_the_quota_is_named_as_not_read(tmp_path: Path) -> None:
    done = _run(tmp_path, *SWEEP_40, "--json")
    assert done.returncode == 0, done.stderr
    estimate = json.loads(done.stdout)["sweep"]["estimate"]
    assert estimate["vcpus_needed"] == 320
    assert estimate["vcpu_quota"]["limit"] is None
    assert estimate["vcpu_quota"]["missing"] == "no 'aws' CLI on PATH"
    assert estimate["tasks"] == 154 and estimate["needs_image_build"] is True
    assert estimate["token_usd_at_most"] > 0 and estimate["model"] == "claude-sonnet-4"


def test_a_local_sweep_plan_counts_its_tasks(tmp_path: Path) -> None:
    done = _run(tmp_path, "sweep", "--tasks", "all", "--agent", "noop", "--plan")
    assert done.returncode == 0, done.stderr
    block = _block(done.stdout)
    tasks = next(line for line in block if line.startswith("  tasks:"))
    assert "the local suite's catalog" in tasks and tasks.endswith("[measured]")
    assert "First: nothing" in "\n".join(block)


ROOT = Path(__file__).resolve().parents[2]
CUA = ROOT / "docs" / "examples" / "cua_bench"
OPENAPPS = ROOT / "evals" / "tasks" / "openapps" / "examples" / "all_tasks.yaml"
ONE_ID = "366de66e-cbae-4d72-b042-26390db2b145-WOS"
SHELL_ONLY = """
import cua_bench as cb


@cb.tasks_config(split="train")
def load():
    return [cb.Task(description=f"Write {n}.") for n in (1, 2)]


@cb.evaluate_task(split="train")
async def evaluate(task_cfg, session):
    return [1.0 if await session.file_exists("C:/out.txt") else 0.0]
"""


@pytest.mark.parametrize(("cloud", "tasks", "count", "how", "tag"), [
    # task modules and configs are loaded here, whatever the pool: their count is exact
    ("local", f"cua-bench:{CUA}", None, "(the modules' variants)", "[measured]"),
    ("aws", "cua-bench:{shell_only}", 2, "(the modules' variants)", "[measured]"),
    ("local", f"openapps:{OPENAPPS}", None, "(the task config's entries)", "[measured]"),
    # WAA IDs named one by one are as many as given (once each), however they are given
    ("aws", ONE_ID, 1, "(the IDs given, checked by the workers'", "[estimated]"),
    ("aws", f"{ONE_ID},b-2,{ONE_ID}", 2, "(the IDs given, checked by the workers'",
     "[estimated]"),
    ("aws", "@ids", 3, "(the IDs given, checked by the workers'", "[estimated]"),
])
def test_a_plan_counts_every_selection_it_can_know(
    tmp_path: Path, cloud: str, tasks: str, count: int | None, how: str, tag: str
) -> None:
    (tmp_path / "ids").write_text(f"{ONE_ID}\nb-2\nc-3\n")
    module = tmp_path / "shell_only" / "main.py"  # no browser: WAA workers take it
    module.parent.mkdir()
    module.write_text(SHELL_ONLY)
    done = _run(tmp_path, "sweep", "--cloud", cloud, "--tasks",
                tasks.replace("@ids", f"@{tmp_path / 'ids'}").replace(
                    "{shell_only}", str(module.parent)), "--agent", "noop", "--plan")
    assert done.returncode == 0, done.stderr
    block = _block(done.stdout)
    tasks_line = next(line for line in block if line.startswith("  tasks:"))
    shown = re.match(r"Sweep plan: (\d+) task\(s\)", block[0])
    assert shown, block[0]
    assert f"  tasks:        {shown[1]} {how}" in tasks_line and tasks_line.endswith(tag), \
        tasks_line
    assert count is None or int(shown[1]) == count


def _oa_vm(tmp_path: Path, bin_dir: Path, *args: str, **extra: str) -> Result:
    env = {k: v for k, v in os.environ.items() if k not in SECRETS}
    env.update(PATH=str(bin_dir), OA_VM_HOME=str(tmp_path / "home"),
               OA_VM_IP_ECHO_URL="http://127.0.0.1:9/", **extra)
    proc = subprocess.run(  # fixed argv, no shell
        [str(BIN / "oa-vm"), *args], capture_output=True, text=True, timeout=300, env=env,
        stdin=subprocess.DEVNULL, check=False,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def test_doctor_and_smoke_read_the_same_quota(tmp_path: Path) -> None:
    bin_dir = fake_quota_cli.install(tmp_path / "bin", "aws", fake_quota_cli.aws_answer(4))
    doctor = _oa_vm(tmp_path, bin_dir, "doctor", AWS_ACCESS_KEY_ID="AKIDEXAMPLE",
                    AWS_SECRET_ACCESS_KEY="example")
    assert doctor.returncode == 1
    line = next(x for x in doctor.stdout.splitlines() if "aws vCPU quota" in x)
    assert line.startswith("[FAIL] aws vCPU quota (us-east-1, m8i.2xlarge): 1 x m8i.2xlarge "
                           "need 8 vCPUs"), line
    assert "request an increase to 8" in line
    assert "[ok  ] azure vCPU quota (eastus, Standard_D8s_v5): not checked (no azure " \
           "credentials)" in doctor.stdout
    smoke = _oa_vm(tmp_path, bin_dir, "smoke", "--cloud", "aws", "--plan")
    refused = smoke.assert_one_line_error()
    assert "1 x m8i.2xlarge need 8 vCPUs" in refused and "L-1216C47A" in refused
    fake_quota_cli.install(bin_dir, "aws", fake_quota_cli.aws_answer(64))
    shown = _oa_vm(tmp_path, bin_dir, "smoke", "--cloud", "aws", "--plan")
    assert shown.returncode == 0, shown.stderr
    assert "vCPU quota: 8 vCPUs needed; quota L-1216C47A" in shown.stdout
    assert "First: an image build, about 2 h (1.5-3 h, estimated)" in shown.stdout
    assert "Keeps billing after the smoke: the image's snapshot" in shown.stdout


def test_doctor_names_a_missing_scheduler_permission_in_one_line(tmp_path: Path) -> None:
    """``oa-vm doctor`` as a subprocess, a stand-in ``aws`` on PATH playing the caller's
    identity and IAM's simulation with ``scheduler:CreateSchedule`` denied."""
    from oa_vm.clouds.permissions import AWS_ACTIONS
    from tests.support import fake_cloud_identity_cli

    role = "arn:aws:iam::123456789012:role/oa-vm-dev"
    aws = fake_cloud_identity_cli.install(tmp_path / "bin", "aws", {
        "sts get-caller-identity": {"Account": "123456789012",
                                    "Arn": "arn:aws:sts::123456789012:assumed-role/oa-vm-dev/a"},
        "iam simulate-principal-policy": {"EvaluationResults": [
            {"EvalActionName": a, "EvalDecision": "implicitDeny"
             if a == "scheduler:CreateSchedule" else "allowed"} for a in AWS_ACTIONS]},
    })
    doctor = _oa_vm(tmp_path, aws.parent, "doctor", AWS_ACCESS_KEY_ID="AKIDEXAMPLE",
                    AWS_SECRET_ACCESS_KEY="example")
    assert doctor.returncode == 1 and "Traceback" not in doctor.stdout + doctor.stderr
    (line,) = [x for x in doctor.stdout.splitlines() if x.startswith("[FAIL] aws permissions")]
    assert line == (
        f"[FAIL] aws permissions (IAM, EventBridge Scheduler): {role} may not "
        "scheduler:CreateSchedule (implicitDeny), which a pool needs to schedule the pool's "
        "expiry (the cloud stops it on time) -> ask the account's admin to allow "
        f"scheduler:CreateSchedule to {role}")


@pytest.mark.parametrize("plan", [True, False])
def test_a_sweep_on_your_own_hosts_names_the_commands_that_make_and_use_that_pool(
    tmp_path: Path, plan: bool
) -> None:
    # sweep has no --host: it was refused naming an option it does not take
    done = _run(tmp_path, "sweep", "--cloud", "ssh", "--tasks", "3", "--agent", "noop",
                *(["--plan"] if plan else []))
    line = done.assert_one_line_error()
    assert done.returncode == 2, line
    assert "for your own hosts (--cloud ssh) make the pool once with 'oa-vm pool-create " \
        "--cloud ssh --host user@host --ssh-key PATH' and run on it with 'openadapt-evals " \
        "run --pool NAME'" in line, line
    assert not (tmp_path / "home" / "pools").exists()
