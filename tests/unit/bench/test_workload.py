"""The WAA-shaped workload generator: counts, draws, scaling, estimates and the task folder."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench.workload import (
    INDEX_NAME,
    WAA_DOMAIN_COUNTS,
    domain_counts,
    make_workload,
    proportional_counts,
    short_tasks,
    sleep_solution,
    write_task_folder,
)

WAA_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-WOS$")


def test_the_built_in_table_has_waas_154_tasks_in_12_domains() -> None:
    assert sum(WAA_DOMAIN_COUNTS.values()) == 154
    assert len(WAA_DOMAIN_COUNTS) == 12


def test_the_built_in_table_matches_waas_own_index(waa_data: Path) -> None:
    assert domain_counts(waa_data) == WAA_DOMAIN_COUNTS


def test_a_missing_index_falls_back_to_the_built_in_table(tmp_path: Path) -> None:
    assert domain_counts(tmp_path) == WAA_DOMAIN_COUNTS
    assert domain_counts(None) == WAA_DOMAIN_COUNTS


@pytest.mark.parametrize("total", [1, 12, 100, 154, 400])
def test_proportional_counts_sum_to_the_total_and_keep_the_order(total: int) -> None:
    counts = proportional_counts(WAA_DOMAIN_COUNTS, total)
    assert sum(counts.values()) == total
    assert list(counts) == [d for d in WAA_DOMAIN_COUNTS if d in counts]
    assert all(n > 0 for n in counts.values())


def test_proportional_counts_favour_the_big_domains() -> None:
    counts = proportional_counts(WAA_DOMAIN_COUNTS, 12)
    assert counts.get("libreoffice_calc", 0) >= counts.get("notepad", 0)
    assert "notepad" not in counts  # 2 of 154 rounds to nothing at 12 tasks


def test_proportional_counts_refuse_an_empty_workload() -> None:
    with pytest.raises(ValueError, match="at least one task"):
        proportional_counts(WAA_DOMAIN_COUNTS, 0)


def test_durations_are_scaled_to_the_total_and_repeat_for_a_seed() -> None:
    first = make_workload(WAA_DOMAIN_COUNTS, total_seconds=80.0, seed=3)
    again = make_workload(WAA_DOMAIN_COUNTS, total_seconds=80.0, seed=3)
    other = make_workload(WAA_DOMAIN_COUNTS, total_seconds=80.0, seed=4)
    assert first == again
    assert first.task_ids != other.task_ids
    assert first.total_seconds == pytest.approx(80.0, abs=0.2)
    assert len(first.tasks) == 154
    assert len(set(first.task_ids)) == 154
    assert all(WAA_ID.match(t) for t in first.task_ids)
    assert all(t.seconds > 0 for t in first.tasks)


def test_tasks_follow_the_index_order_by_domain() -> None:
    workload = make_workload(WAA_DOMAIN_COUNTS, total_seconds=10.0)
    domains = [t.domain for t in workload.tasks]
    runs = [d for i, d in enumerate(domains) if i == 0 or domains[i - 1] != d]
    assert runs == list(WAA_DOMAIN_COUNTS)
    assert {d: len(ids) for d, ids in workload.index().items()} == WAA_DOMAIN_COUNTS


def test_estimates_are_domain_means_not_the_draws() -> None:
    workload = make_workload(WAA_DOMAIN_COUNTS, total_seconds=100.0, seed=5)
    estimates = workload.estimates()
    by_domain: dict[str, set[float]] = {}
    for task in workload.tasks:
        by_domain.setdefault(task.domain, set()).add(estimates[task.task_id])
    assert all(len(values) == 1 for values in by_domain.values())
    assert any(estimates[t.task_id] != t.seconds for t in workload.tasks)
    # a rough prior: the estimated total is of the same size as the real one
    assert 0.5 < sum(estimates.values()) / workload.total_seconds < 2.0
    assert workload.domain_means["libreoffice_calc"] > workload.domain_means["clock"]


def test_make_workload_refuses_bad_totals() -> None:
    with pytest.raises(ValueError):
        make_workload(WAA_DOMAIN_COUNTS, total_seconds=0.0)
    with pytest.raises(ValueError):
        make_workload({}, total_seconds=1.0)


def test_long_sleeps_are_split_into_steps_the_worker_accepts() -> None:
    assert sleep_solution(1.25) == ["sleep 1.250", "DONE"]
    assert sleep_solution(65.0) == ["sleep 30", "sleep 30", "sleep 5.000", "DONE"]


def test_the_task_folder_has_waas_layout_and_an_index(tmp_path: Path) -> None:
    workload = make_workload(proportional_counts(WAA_DOMAIN_COUNTS, 12), total_seconds=6.0)
    folder = write_task_folder(workload.tasks, tmp_path / "tasks")
    index = json.loads((folder / INDEX_NAME).read_text())
    assert index == workload.index()
    assert not (folder / "test_all.json").exists()
    for task in workload.tasks:
        data = json.loads((folder / "examples" / task.domain / f"{task.task_id}.json").read_text())
        assert data["id"] == task.task_id
        assert data["reference_solution"] == sleep_solution(task.seconds)
        assert data["evaluator"]["func"] == "exact_match"


def test_short_tasks_spread_over_waas_domains() -> None:
    tasks = short_tasks(300)
    assert len(tasks) == 300
    assert len({t.task_id for t in tasks}) == 300
    assert {t.domain for t in tasks} == set(WAA_DOMAIN_COUNTS)
