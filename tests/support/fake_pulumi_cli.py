"""A stand-in ``pulumi`` executable: answers the subcommands Pulumi's Automation API runs, and
fails the way the real CLI does, so ``AutomationEngine`` is tested through the real Automation
API (its argument building, its error classes, our mapping of them).

Run as ``python fake_pulumi_cli.py ARGS...`` by a wrapper named ``pulumi`` on PATH
(:func:`install`). State lives in ``$FAKE_PULUMI_STATE``: one JSON file per stack
(``stacks/<name>.json``, the deployment as ``pulumi stack export`` prints it) and
``calls.log``. Outcomes:

- a lock file under ``$PULUMI_BACKEND_URL``'s ``.pulumi/locks/**/<project>/<stack>/`` makes
  ``up``/``refresh``/``destroy`` fail with the file backend's "currently locked" error;
- ``pending_operations`` in the stack's state make them fail with the "pending operations"
  error (until an import without them);
- ``config set-all`` / ``config --json`` keep each stack's config in ``config/<name>.json``;
- ``$FAKE_PULUMI_STATE/fail`` holding ``plugin`` or ``credentials`` makes them fail with the
  CLI's missing-plugin or missing-credentials error.

Real messages, trimmed, as pulumi 3.x prints them.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

LOCKED = (
    "error: the stack is currently locked by 1 lock(s). Either wait for the other process(es) "
    "to end or delete the lock file with `pulumi cancel`.\n  {lock}: created by root@{host} "
    "(pid {pid}) at 2026-03-01T12:00:00Z\n"
)
PENDING = (
    "error: the current deployment has 1 resource(s) with pending operations:\n"
    "  * urn:pulumi:{stack}::oa-vm-aws::aws:ec2/instance:Instance::{stack}-w0, interrupted "
    "while creating\n\nThese resources are in an unknown state because the Pulumi CLI was "
    "interrupted while waiting for changes to these resources to complete.\n"
)
FAILURES = {
    "plugin": (
        "error: could not load plugin for aws provider 'urn:pulumi:s::p::pulumi:providers:aws::"
        "default': no resource plugin 'pulumi-resource-aws' found in the workspace at version "
        "v7.51.1 or on your $PATH, install the plugin using `pulumi plugin install resource aws "
        "v7.51.1`\n"
    ),
    "credentials": (
        "error: pulumi:providers:aws resource 'aws-us-east-1' has a problem: No valid credential "
        "sources found.\nPlease see https://registry.terraform.io/providers/hashicorp/aws for "
        "more information about providing credentials.\n"
    ),
}


def _state() -> Path:
    root = Path(os.environ["FAKE_PULUMI_STATE"])
    (root / "stacks").mkdir(parents=True, exist_ok=True)
    return root


def _stack_arg(args: list[str]) -> str | None:
    return args[args.index("--stack") + 1] if "--stack" in args else None


def _stack_file(name: str) -> Path:
    return _state() / "stacks" / f"{name.split('/')[-1]}.json"


def _config_file(name: str) -> Path:
    folder = _state() / "config"
    folder.mkdir(exist_ok=True)
    return folder / f"{name.split('/')[-1]}.json"


def _config(name: str) -> dict[str, dict[str, object]]:
    path = _config_file(name)
    if not path.exists():
        return {}
    loaded: dict[str, dict[str, object]] = json.loads(path.read_text())
    return loaded


def _locks(stack: str) -> list[Path]:
    backend = os.environ.get("PULUMI_BACKEND_URL", "").removeprefix("file://")
    root = Path(backend) / ".pulumi" / "locks"
    return sorted(root.glob(f"**/{stack}/*.json")) if backend and root.is_dir() else []


def _fail(text: str, code: int = 255) -> int:
    sys.stderr.write(text)
    return code


def _guarded(stack: str, verb: str) -> int:
    locks = _locks(stack)
    if locks:
        data = json.loads(locks[0].read_text())
        return _fail(LOCKED.format(lock=locks[0], host=data.get("hostname"),
                                   pid=data.get("pid")))
    state = json.loads(_stack_file(stack).read_text())
    if (state.get("deployment") or {}).get("pending_operations"):
        return _fail(PENDING.format(stack=stack))
    failure = _state() / "fail"
    if failure.exists():
        return _fail(FAILURES[failure.read_text().strip()])
    if verb == "destroy":
        state["deployment"]["resources"] = []
        _stack_file(stack).write_text(json.dumps(state))
    print(f"{verb.capitalize()}ing ({stack}):\n\nResources:\n\nDuration: 1s")
    return 0


def main(args: list[str]) -> int:
    args = [a for a in args if a != "--non-interactive"]  # the Automation API's global flag
    with (_state() / "calls.log").open("a") as log:
        log.write(" ".join(args) + "\n")
    stack = _stack_arg(args)
    if args[:1] == ["version"]:
        print("v" + os.environ.get("FAKE_PULUMI_VERSION", "3.200.0"))
        return 0
    if args[:2] == ["stack", "ls"]:
        names = sorted(p.stem for p in (_state() / "stacks").glob("*.json"))
        print(json.dumps([{"name": f"organization/oa-vm-aws/{n}", "current": False}
                          for n in names]))
        return 0
    if args[:2] == ["stack", "select"]:
        if stack is None or not _stack_file(stack).exists():
            return _fail(f"error: no stack named '{stack}' found\n")
        return 0
    if args[:2] == ["stack", "init"]:
        _stack_file(args[2]).write_text(json.dumps(
            {"version": 3, "deployment": {"resources": []}}
        ))
        return 0
    if args[:2] == ["stack", "rm"]:
        name = [a for a in args[2:] if not a.startswith("-")][-1]
        _stack_file(name).unlink(missing_ok=True)
        return 0
    if args[:2] == ["stack", "export"] and stack:
        print(_stack_file(stack).read_text())
        return 0
    if args[:2] == ["stack", "import"] and stack:
        source = Path(args[args.index("--file") + 1])
        _stack_file(stack).write_text(source.read_text())
        return 0
    if args[:2] == ["stack", "history"]:
        print(json.dumps([{
            "kind": "refresh", "startTime": "2026-03-01T12:00:00.000Z", "message": "",
            "environment": {}, "config": {}, "result": "succeeded",
            "endTime": "2026-03-01T12:00:01.000Z", "resourceChanges": {}, "version": 1,
        }]))
        return 0
    if args[:2] == ["config", "set-all"] and stack:
        config = _config(stack)
        rest = args[2:]
        for flag, value in zip(rest, rest[1:], strict=False):
            if flag in ("--plaintext", "--secret"):
                key, _, item = value.partition("=")
                config[key] = {"value": item, "secret": flag == "--secret"}
        _config_file(stack).write_text(json.dumps(config))
        return 0
    if args[:1] == ["config"] and "--json" in args and stack:
        print(json.dumps(_config(stack)))
        return 0
    if args[:1] in (["refresh"], ["destroy"]) and stack:
        return _guarded(stack, args[0])
    return _fail(f"error: unknown command {' '.join(args)!r} for the stand-in\n", 2)


def install(bin_dir: Path) -> Path:
    """Write ``bin_dir/pulumi`` (a wrapper running this file with this interpreter)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    wrapper = bin_dir / "pulumi"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{Path(__file__).resolve()}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def offline_env(root: Path) -> dict[str, str]:
    """The environment of a CLI run offline against this stand-in: ``pulumi`` first on
    ``PATH`` (installed in ``root/bin``), its state in ``root/fake-pulumi``, the SDK's own
    version reported (so the engine check passes), and the caller's-address echo pointed at a
    loopback port that refuses (no outside call; the address is then asked for or refused)."""
    from oa_vm.clouds.pulumi import driver as pulumi_driver

    install(root / "bin")
    return {"PATH": f"{root / 'bin'}:/usr/bin:/bin",
            "FAKE_PULUMI_STATE": str(root / "fake-pulumi"),
            "FAKE_PULUMI_VERSION": pulumi_driver.sdk_version(),
            "OA_VM_IP_ECHO_URL": "http://127.0.0.1:9/"}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
