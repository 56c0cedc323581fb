"""``--egress``: what a pool's guests may reach, as the user gives it and as a plan shows it.

The policy itself (modes, ranges never reachable, the tables) is ``infra/egress_rules.py``;
this module reads the option (an allow-list file, or ``allowlist:waa`` for the hosts WAA's task
setup downloads from) before anything is created, and says in words what a mode means.
"""

from __future__ import annotations

from pathlib import Path

from infra import egress_rules
from infra.worker.units import EGRESS_ALLOWLIST, WORKER_DIR
from oa_vm.errors import InvalidInputError

MAX_ALLOWLIST_BYTES = 256 * 1024
WAA_LIST = "waa"
"""``allowlist:waa``: the shipped list of every host WAA's 154 tasks' setup steps name."""

MEANING = {
    "none": "the guest opens no connection at all (WAA's server and the scorer are reached from "
            "the host side)",
    "allowlist": "the guest reaches only the allow-list's hosts and ports",
    "web": "the guest reaches public addresses on HTTP and HTTPS only",
    "open": "the guest reaches any public address and port (what WAA's container does on its "
            "own)",
}
ALWAYS = "never the instance metadata service, the host's services or another worker"


def parse_egress(text: str | None) -> tuple[str | None, str]:
    """``--egress`` -> ``(mode or None for the provider's default, allow-list entries)``.

    The entries come back normalized, one ``host:port`` a line.

    Raises:
        InvalidInputError: an unknown mode, or an allow-list that is missing, not a regular
            file, too large, empty or has a bad line (named).
    """
    if text is None:
        return None, ""
    try:
        mode, path = egress_rules.parse_mode(text)
    except egress_rules.PolicyError as exc:
        raise InvalidInputError(f"--egress {text}: {exc}") from None
    if path is None:
        return mode, ""
    source = WORKER_DIR / EGRESS_ALLOWLIST if path == WAA_LIST else Path(path).expanduser()
    from oa_vm.kit.validate import read_problem

    problem = read_problem(f"--egress {text}:", source, kind="file",
                           fix="give an allow-list (one host[:port] a line) or allowlist:waa")
    if problem is not None:
        raise InvalidInputError(problem)
    try:
        with source.open("rb") as handle:
            raw = handle.read(MAX_ALLOWLIST_BYTES + 1)
    except OSError as exc:
        raise InvalidInputError(f"--egress {text}: cannot read {path}: {exc.strerror}") from None
    if len(raw) > MAX_ALLOWLIST_BYTES:
        raise InvalidInputError(f"--egress {text}: {path} is over {MAX_ALLOWLIST_BYTES} bytes")
    from waa_client.errors import InputError
    from waa_client.inputs import decode_text

    try:
        entries = egress_rules.parse_allowlist(
            decode_text(raw, what="the allow-list", path=path), source=path)
    except (egress_rules.PolicyError, InputError) as exc:
        raise InvalidInputError(f"--egress {text}: {exc}") from None
    if not entries:
        raise InvalidInputError(f"--egress {text}: {path} names no host")
    return mode, "".join(f"{host}:{port}\n" for host, port in entries)


def describe(mode: str, allowlist: str = "") -> str:
    """One plan line: the mode, what it lets the guest reach, and what it never does."""
    hosts = sorted({line.rsplit(":", 1)[0] for line in allowlist.splitlines() if line})
    listed = f" ({len(hosts)} host(s): {', '.join(hosts[:3])}{', ...' if len(hosts) > 3 else ''})"
    return (f"egress {mode}: {MEANING[mode]}{listed if mode == 'allowlist' else ''}; {ALWAYS}")
