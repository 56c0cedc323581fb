"""The egress policy's decisions and its default allow-list (``infra/egress_rules.py``).

What the rules do to real packets is rehearsed in ``tests/integration/test_egress_rehearsal.py``;
here: the ranges always denied, the allow-list format, and the shipped list
against WAA's own task files.
"""

from __future__ import annotations

import ipaddress
import json
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from infra import egress_rules as er
from infra.worker import egress_probe
from infra.worker.units import EGRESS_ALLOWLIST, WORKER_DIR

URL = re.compile(r"https?://[^\s\"'\\)]+")


def _setup_hosts(task: dict[str, object]) -> set[str]:
    steps = []
    for key in ("config", "postconfig"):
        value = task.get(key)
        if isinstance(value, list):
            steps += value
    return {urlsplit(u).hostname or "" for u in URL.findall(json.dumps(steps))} - {""}


def test_the_default_allow_list_covers_every_host_that_waas_setup_steps_name(
    waa_data: Path,
) -> None:
    shipped = er.parse_allowlist((WORKER_DIR / EGRESS_ALLOWLIST).read_text(encoding="utf-8"))
    listed = {host for host, _ in shipped}
    named: dict[str, str] = {}
    index = json.loads((waa_data / "test_all.json").read_text(encoding="utf-8"))
    count = 0
    for domain, ids in index.items():
        for task_id in ids:
            task = json.loads((waa_data / "examples" / domain / f"{task_id}.json").read_text())
            count += 1
            for host in _setup_hosts(task):
                named.setdefault(host.lower(), task_id)
    assert count == 154
    assert named, "WAA's setup steps name no host: the scan is broken"
    missing = {host: task for host, task in named.items() if host not in listed}
    assert not missing, f"hosts WAA's setup needs, missing from {EGRESS_ALLOWLIST}: {missing}"
    assert all(port in (80, 443) for _, port in shipped)


@pytest.mark.parametrize(
    ("address", "denied"),
    [
        ("169.254.169.254", True),
        ("10.0.0.7", True),
        ("172.17.0.1", True),
        ("168.63.129.16", True),
        ("192.168.1.1", True),
        ("198.51.100.10", False),
    ],
)
def test_metadata_host_and_private_addresses_are_always_denied(address: str, denied: bool) -> None:
    ip = ipaddress.ip_address(address)
    assert any(ip in ipaddress.ip_network(net) for net in er.ALWAYS_DENIED) is denied


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("bad host name!", "line 1"),
        ("ok.example\nx.example:0", "line 2"),
        ("x.example:99999", "line 1: the port is not a TCP port"),
        ("x.example:http", "line 1: the port is not a TCP port"),
        # refused as a bad port, which said nothing of what was wrong
        ("http://x.example/path", "line 1 is a URL or a path, not a host"),
        ("ok.example\nx.example/a", "line 2 is a URL or a path"),
        # accepted, and never reachable whatever the list said
        ("169.254.169.254", "line 1 is an address no guest may reach"),
        ("ok.example\n10.1.2.3:443", "line 2 is an address no guest may reach"),
        ("127.0.0.1:8080", "line 1 is an address no guest may reach"),
    ],
)
def test_a_bad_allow_list_line_is_named(text: str, problem: str) -> None:
    with pytest.raises(er.PolicyError, match=problem):
        er.parse_allowlist(text)


def test_allow_list_entries_default_to_the_web_ports_and_comments_are_skipped() -> None:
    assert er.parse_allowlist("# c\nA.example  # x\nb.example:8080\n") == [
        ("a.example", 80), ("a.example", 443), ("b.example", 8080)]
    assert er.parse_allowlist("8.8.8.8:53") == [("8.8.8.8", 53)]  # a public address


@pytest.mark.parametrize("text", ["sometimes", "allowlist", "web:file.txt"])
def test_a_bad_mode_is_refused(text: str) -> None:
    with pytest.raises(er.PolicyError):
        er.parse_mode(text)


@pytest.mark.parametrize("mode", er.MODES)
def test_every_table_drops_the_denied_ranges_before_it_accepts_anything(mode: str) -> None:
    for scope in ("guest", "host"):
        rules = er.render(scope, mode, "br")
        forward = rules[rules.index("chain forward"):]
        accepts = [i for i, line in enumerate(forward.splitlines())
                   if line.strip().endswith("accept") and "established" not in line
                   and "iifname !=" not in line and "dport 53" not in line]
        denied = next(i for i, line in enumerate(forward.splitlines()) if "@denied" in line)
        assert all(i > denied for i in accepts), rules
        assert "auto-merge" in rules


def test_the_proof_judges_leaks_and_missing_sites() -> None:
    blocked, reached = ["169.254.169.254:80"], ["198.51.100.10:80"]
    answer = {"output": json.dumps({"169.254.169.254:80": True, "198.51.100.10:80": True})}
    ok, line = egress_probe.judge(answer, blocked, reached)
    assert not ok and "169.254.169.254:80" in line
    answer = {"output": json.dumps({"169.254.169.254:80": False, "198.51.100.10:80": False})}
    ok, line = egress_probe.judge(answer, blocked, reached)
    assert not ok and "could not reach 198.51.100.10:80" in line
    assert not egress_probe.judge({"output": "Traceback"}, blocked, reached)[0]


def test_the_pools_members_key_only_the_host_table_and_a_cloud_table_names_none() -> None:
    for mode in er.MODES:
        assert "ether" not in er.render("host", mode, "docker0")
        keyed = er.render("host", mode, "docker0", ["02:6f:61:76:6d:00"])
        assert keyed.count("ether saddr != { 02:6f:61:76:6d:00 } accept") == 2
        # the cloud table is the keyed one without those two lines, byte for byte
        assert "".join(line for line in keyed.splitlines(keepends=True)
                       if "ether" not in line) == er.render("host", mode, "docker0")
        with pytest.raises(er.PolicyError):
            er.render("guest", mode, "docker", ["02:6f:61:76:6d:00"])
