"""A stand-in ``aws`` or ``az`` on PATH that answers the vCPU-quota question with a recorded answer.

Only the cloud's answer is stood in: the real ``oa-vm``/``openadapt-evals`` CLIs run as
subprocesses, find the stand-in on PATH as they would the real CLI, run it with their real
argument list, and parse the JSON the real CLI prints (the recorded answers in
``tests/fixtures/quota``: ``aws service-quotas get-service-quota`` for ``L-1216C47A``, and
``az vm list-usage --location eastus``). The stand-in answers only the command it was recorded
for (anything else exits 252, as the aws CLI does on a usage error) and writes every argv it was
given to ``calls.jsonl`` beside it, so a test can assert what was asked.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "quota"
AWS_ANSWER = FIXTURES / "aws_get_service_quota_L-1216C47A.json"
AZ_ANSWER = FIXTURES / "az_vm_list_usage_eastus.json"

_SCRIPT = '''#!{python}
import json, sys
from pathlib import Path
here = Path(__file__).resolve().parent
with (here / "calls.jsonl").open("a", encoding="utf-8") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1:1 + len({expected!r})] != {expected!r}:
    sys.stderr.write("usage: not the recorded command\\n")
    sys.exit(252)
sys.stdout.write((here / "answer.json").read_text(encoding="utf-8"))
'''


def aws_answer(vcpus: float) -> dict[str, Any]:
    """The recorded ``get-service-quota`` answer with its limit set to ``vcpus``."""
    answer: dict[str, Any] = json.loads(AWS_ANSWER.read_text(encoding="utf-8"))
    answer["Quota"]["Value"] = float(vcpus)
    return answer


def az_answer(family_limit: float, in_use: float = 4) -> list[dict[str, Any]]:
    """The recorded ``az vm list-usage`` answer, its DSv5 family's limit and use set."""
    answer: list[dict[str, Any]] = json.loads(AZ_ANSWER.read_text(encoding="utf-8"))
    for usage in answer:
        if usage["name"]["value"] in ("standardDSv5Family", "cores"):
            usage["currentValue"] = in_use
        if usage["name"]["value"] == "standardDSv5Family":
            usage["limit"] = family_limit
    return answer


def install(bin_dir: Path, cli: str, answer: Any) -> Path:
    """Put the stand-in ``cli`` (``aws`` or ``az``) answering ``answer`` into ``bin_dir``.

    Returns the folder (put it on PATH); its ``calls.jsonl`` holds the argvs it was given.
    """
    expected = (["service-quotas", "get-service-quota"] if cli == "aws"
                else ["vm", "list-usage"])
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / cli
    script.write_text(_SCRIPT.format(python=sys.executable, expected=expected),
                      encoding="utf-8")
    script.chmod(0o755)
    (bin_dir / "answer.json").write_text(json.dumps(answer), encoding="utf-8")
    return bin_dir


def calls(bin_dir: Path) -> list[list[str]]:
    """The argvs the stand-in was run with, in order."""
    log = bin_dir / "calls.jsonl"
    if not log.is_file():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
