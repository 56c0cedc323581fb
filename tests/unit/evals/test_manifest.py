"""manifest.json: canonical hashes, and what compare warns about (everything but the agent)."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

from evals.run.manifest import checker_files, manifest_differences, sha256_json


def _manifest() -> dict[str, Any]:
    return {
        "manifest_version": 1, "run": "a", "created_at": "2026-01-01T00:00:00+00:00",
        "project": {"oa_vm": "0.1.0", "python": "3.11.7"}, "trials": 1,
        "tasks": {"selection": "all", "count": 2, "sha256": {"t1": "1" * 64, "t2": "2" * 64},
                  "indexes": {"pool-a": {"(main)": "9" * 64}}},
        "checker": {"scoring_rules_sha256": "a" * 64, "scoring_server_sha256": "b" * 64,
                    "waa_upstream_commit": None, "probe": {"pool-a": {"status": "ok"}}},
        "workers": [{"pool": "pool-a", "kind": "local", "local_worker_version": "0.1.0",
                     "image": None}],
        "agent": {"name": "noop", "class": "evals.agents.noop:NoopAgent"},
        "pools": [{"name": "pool-a", "cloud": "local", "region": None, "size": None,
                   "workers": 3}],
    }


def test_canonical_json_hash_ignores_formatting_and_key_order() -> None:
    assert sha256_json({"b": 1, "a": [1, 2]}) == sha256_json({"a": [1, 2], "b": 1})
    assert sha256_json({"a": 1}) == hashlib.sha256(b'{"a":1}').hexdigest()


def test_checker_files_are_hashed_from_the_project() -> None:
    hashes = checker_files()
    assert set(hashes) == {"scoring_rules_sha256", "scoring_server_sha256"}
    assert all(h is not None and len(h) == 64 for h in hashes.values())


def test_only_the_agent_and_names_may_differ_silently() -> None:
    a, b = _manifest(), _manifest()
    b.update(run="b", created_at="2026-02-01T00:00:00+00:00")
    b["agent"] = {"name": "oracle", "class": "evals.agents.oracle:OracleAgent"}
    # another pool of the same kind (a sweep makes a new one each time), more workers
    for doc in (b["tasks"]["indexes"], b["checker"]["probe"]):
        doc["pool-b"] = doc.pop("pool-a")
    b["workers"][0]["pool"] = b["pools"][0]["name"] = "pool-b"
    b["pools"][0]["workers"] = 8
    assert manifest_differences(a, b) == []


def test_every_other_difference_is_listed() -> None:
    a, b = _manifest(), copy.deepcopy(_manifest())
    b["tasks"]["sha256"]["t2"] = "3" * 64
    b["checker"]["scoring_rules_sha256"] = "c" * 64
    b["project"]["oa_vm"] = "0.2.0"
    b["pools"][0]["cloud"] = "aws"
    lines = manifest_differences(a, b)
    assert lines[0] == "1 task(s) differ in their JSON: t2"
    assert "checker.scoring_rules_sha256: A aaaaaaaaaaaa... vs B cccccccccccc..." in lines
    assert "project.oa_vm: A 0.1.0 vs B 0.2.0" in lines
    assert any(line.startswith("pools[0]:") for line in lines)
    assert len(lines) == 4


def test_tasks_in_one_run_only_are_not_a_json_difference() -> None:
    a, b = _manifest(), copy.deepcopy(_manifest())
    b["tasks"]["sha256"] = {"t1": "1" * 64, "t3": "3" * 64}
    assert manifest_differences(a, b, ["t1"]) == []


def test_a_run_without_manifest_is_named() -> None:
    (line,) = manifest_differences(_manifest(), None)
    assert line.startswith("run B has no manifest.json")


def test_agent_facts_keep_no_credentials() -> None:
    from evals.agents import AgentOptions
    from evals.agents.noop import NoopAgent
    from evals.run.manifest import agent_facts

    options = AgentOptions(agent_url="http://alice:hunter2@127.0.0.1:9/act?token=sekret",
                           args=("api_key=abc123", "model=m1", "temperature=0.5"))
    facts = agent_facts("http", NoopAgent(), options)
    text = repr(facts)
    for secret in ("hunter2", "sekret", "abc123"):
        assert secret not in text
    assert facts["arguments"] == {"api_key": "<redacted>", "model": "m1", "temperature": 0.5}
    assert facts["model"] == "m1"
    assert facts["class"] == "evals.agents.noop:NoopAgent"


def test_the_page_names_a_waa_commit_only_where_it_is_known() -> None:
    from evals.run.manifest import summary_lines

    unknown = dict(summary_lines({"checker": {"waa_upstream_commit": None}}))
    assert "WAA upstream commit" not in unknown
    known = dict(summary_lines({"checker": {"waa_upstream_commit": "a1b2c3d"}}))
    assert known["WAA upstream commit"] == "a1b2c3d"
def _cloud_workers(cpu: str, cmdline: list[str], worker: str) -> list[dict[str, Any]]:
    return [{"pool": "pool-a", "kind": "cloud", "local_worker_version": None,
             "image": {"id": "waa-x"}, "qemu": {worker: {"cpu": cpu, "cmdline": cmdline}}}]


def test_qemus_cpu_is_compared_but_not_its_command_line() -> None:
    a, b = _manifest(), _manifest()
    a["workers"] = _cloud_workers("host,-invtsc", ["qemu", "-name", "w0"], "pool-a-w0")
    b["workers"] = _cloud_workers("host,-invtsc", ["qemu", "-name", "w7"], "pool-b-w7")
    assert manifest_differences(a, b) == []
    b["workers"] = _cloud_workers("host,migratable=no,+invtsc", ["qemu"], "pool-b-w7")
    (line,) = manifest_differences(a, b)
    assert line.startswith("workers[0]:") and "+invtsc" in line


def test_the_page_names_indexes_a_worker_did_not_serve_as_not_read() -> None:
    """A run whose first worker died before the manifest asked for its indexes: the page said
    ``indexes WorkerUnreac``, the error's first 12 characters shown as a hash."""
    from evals.run.manifest import summary_lines

    error = "WorkerUnreachableError: GET http://127.0.0.1:1/tasks: worker unreachable"
    row = dict(summary_lines({"tasks": {"count": 4, "indexes": {"p3": {"(error)": error}}}}))
    assert row["tasks"] == f"4 task JSON hashed; indexes unknown; indexes not read: {error}"
    both = dict(summary_lines({"tasks": {"count": 4, "indexes": {
        "p1": {"(main)": "a" * 64, "small": "b" * 64}, "p3": {"(error)": error}}}}))
    assert both["tasks"] == (f"4 task JSON hashed; indexes {'a' * 12}, {'b' * 12}; "
                             f"indexes not read: {error}")
