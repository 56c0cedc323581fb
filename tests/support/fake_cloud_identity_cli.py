"""A stand-in ``aws`` or ``az`` on PATH answering identity and permission questions from records.

The pattern of :mod:`tests.support.fake_quota_cli`: only the cloud's answer is stood in. The
code under test finds the stand-in as it would the real CLI, runs it with its real argument list
and parses what it prints. Each recorded answer is keyed by the argv's leading words
(``sts get-caller-identity``, ``iam simulate-principal-policy``, ``account show``, ``role
assignment list``): JSON printed with exit 0, or ``{"exit": N, "stderr": "..."}`` played as the
CLI's failure (what the real CLI prints without credentials), or ``{"stdout": "..."}`` printed
as is (a command that prints text, as ``aws s3 presign`` does). Any other command exits 252, as
the aws CLI does on a usage error. Every argv is written to ``calls.jsonl`` beside it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

_SCRIPT = '''#!{python}
import json, sys
from pathlib import Path
here = Path(__file__).resolve().parent
with (here / "calls.jsonl").open("a", encoding="utf-8") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
answers = json.loads((here / "answers.json").read_text(encoding="utf-8"))
for key, answer in answers.items():
    words = key.split()
    if sys.argv[1:1 + len(words)] == words:
        if isinstance(answer, dict) and "exit" in answer:
            sys.stderr.write(answer["stderr"] + "\\n")
            sys.exit(answer["exit"])
        if isinstance(answer, dict) and "stdout" in answer:
            sys.stdout.write(answer["stdout"])
            sys.exit(0)
        sys.stdout.write(json.dumps(answer))
        sys.exit(0)
sys.stderr.write("usage: not a recorded command\\n")
sys.exit(252)
'''

AWS_NO_CREDENTIALS = {"exit": 253, "stderr": "\nUnable to locate credentials. You can configure "
                                             "credentials by running \"aws configure\"."}
AZ_NOT_LOGGED_IN = {"exit": 1, "stderr": "ERROR: Please run 'az login' to setup account."}


def install(bin_dir: Path, cli: str, answers: dict[str, Any]) -> Path:
    """Put the stand-in ``cli`` answering ``answers`` into ``bin_dir``; returns its path."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / cli
    script.write_text(_SCRIPT.format(python=sys.executable), encoding="utf-8")
    script.chmod(0o755)
    (bin_dir / "answers.json").write_text(json.dumps(answers), encoding="utf-8")
    return script


def calls(bin_dir: Path) -> list[list[str]]:
    """The argvs the stand-in was run with, in order."""
    log = bin_dir / "calls.jsonl"
    if not log.is_file():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
