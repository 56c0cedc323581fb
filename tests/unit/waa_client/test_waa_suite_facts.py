"""What oa-vm knows of WAA's suite before a worker holds it (its size, domains and index files,
``waa_client.catalog.WAA_*``) is what WAA's own task data says (``../shared/waa``): the refusals
made before a cloud pool exists must refuse nothing a WAA worker serves."""

from __future__ import annotations

import json
from pathlib import Path

from waa_client.catalog import WAA_DOMAINS, WAA_INDEXES, WAA_SUITE_TASKS, Catalog


def test_the_suite_facts_are_waas(waa_data: Path) -> None:
    index = json.loads((waa_data / "test_all.json").read_text(encoding="utf-8"))
    assert sum(len(ids) for ids in index.values()) == WAA_SUITE_TASKS
    assert sorted(index) == sorted(WAA_DOMAINS)
    assert sorted(p.stem for p in waa_data.glob("test_*.json")) == sorted(WAA_INDEXES)
    catalog = Catalog.from_folder(waa_data)
    assert len(catalog.task_ids()) == WAA_SUITE_TASKS
    for domain in WAA_DOMAINS:
        assert catalog.select(f"domain:{domain}", live=True)
