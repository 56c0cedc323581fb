"""The egress proof: from the guest's side, forbidden destinations fail and an allowed one answers.

One small file, three uses (shipped to the host; Python 3.9, standard library only):

- ``egress_probe.py body --blocked A:P ... --reached A:P ...`` (on the host): the JSON body for
  WAA's ``/execute`` that runs this very file in Windows' Python with ``run``;
- ``... run A:P ...`` (in the guest): a TCP connection to each target, all at once (a blocked one
  waits out its timeout), printing which answered as JSON;
- ``... judge --blocked ... --reached ... < answer`` (on the host): one line on ``/execute``'s
  answer, exit 0 if the policy holds, 1 if not.

A proof needs an allowed destination that answers, so a guest with no network at all does not
pass as "everything blocked" (mode ``none`` allows nothing and proves the blocking alone).
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections.abc import Sequence
from typing import Any

TIMEOUT_S = 5.0


def run(targets: Sequence[str]) -> dict[str, bool]:
    """Which ``address:port`` targets accept a TCP connection (tried at once)."""
    seen: dict[str, bool] = {}

    def attempt(target: str) -> None:
        address, port = target.rsplit(":", 1)
        try:
            socket.create_connection((address, int(port)), timeout=TIMEOUT_S).close()
            seen[target] = True
        except OSError:
            seen[target] = False

    threads = [threading.Thread(target=attempt, args=(t,)) for t in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return seen


def body(blocked: Sequence[str], reached: Sequence[str], source: str) -> dict[str, Any]:
    """WAA's ``/execute`` body that runs ``source`` (this file) in the guest over every target."""
    return {"command": ["python", "-c", source, "run", *blocked, *reached], "shell": False}


def judge(answer: Any, blocked: Sequence[str], reached: Sequence[str]) -> tuple[bool, str]:
    """Whether the policy held, and one line saying so, from ``/execute``'s JSON answer."""
    try:
        seen = json.loads(answer.get("output") or "")
    except (ValueError, AttributeError):
        return False, f"the guest's probe printed no result ({str(answer)[:200]})"
    leaks = [t for t in blocked if seen.get(t) is not False]
    if leaks:
        return False, f"the guest reached {', '.join(leaks)}, which the egress policy must block"
    missing = [t for t in reached if seen.get(t) is not True]
    if missing:
        return False, (f"the guest could not reach {', '.join(missing)}, "
                       "which the egress policy allows")
    return True, f"{len(blocked)} forbidden destination(s) blocked, {len(reached)} allowed reached"


def main(argv: Sequence[str]) -> int:
    """See the module's docstring."""
    if argv and argv[0] == "run":
        print(json.dumps(run(argv[1:])))
        return 0
    blocked = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--blocked"]
    reached = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--reached"]
    if argv and argv[0] == "body":
        with open(__file__, encoding="utf-8") as handle:
            print(json.dumps(body(blocked, reached, handle.read())))
        return 0
    if argv and argv[0] == "judge":
        try:
            answer = json.loads(sys.stdin.read(1 << 20) or "{}")
        except ValueError:
            answer = {}
        ok, line = judge(answer, blocked, reached)
        print(line)
        return 0 if ok else 1
    sys.stderr.write("usage: egress_probe.py run|body|judge ...\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
