"""The task catalog: WAA's folder layout, selections, ID rules; on WAA's real data too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.http_servers import Reply, ScriptedServer
from waa_client import (
    Catalog,
    CatalogError,
    ScoringClient,
    SyntheticTaskError,
    TaskRef,
    UnknownTaskError,
    is_synthetic,
)
from waa_client.catalog import check_known, check_not_synthetic, named_ids


def _task(task_id: str, instruction: str, func: str = "exact_match") -> dict[str, Any]:
    return {"id": task_id, "instruction": instruction, "config": [],
            "evaluator": {"func": func, "result": {"type": "vm_file"}}}


def write_suite(root: Path, tasks: dict[str, dict[str, dict[str, Any]]],
                indexes: dict[str, dict[str, list[str]]]) -> Path:
    """A task folder in WAA's layout: ``tasks`` is ``{domain: {task_id: json}}``."""
    for domain, by_id in tasks.items():
        folder = root / "examples" / domain
        folder.mkdir(parents=True, exist_ok=True)
        for task_id, data in by_id.items():
            (folder / f"{task_id}.json").write_text(json.dumps(data))
    for name, index in indexes.items():
        (root / f"{name}.json").write_text(json.dumps(index))
    return root


@pytest.fixture
def suite(tmp_path: Path) -> Catalog:
    tasks = {
        "notepad": {
            "aaa-WOS": _task("aaa-WOS", "Write hello"),
            "bbb-WOS": _task("some-other-id", "Save the file"),
        },
        "vlc": {
            "ccc-wos": _task("ccc-wos", "Play the video"),
            "INF-ddd-WOS": _task("INF-ddd-WOS", "Order a pizza", func="infeasible"),
            "eee-WOS": _task("eee-WOS", "Impossible thing", func="infeasible"),
        },
    }
    indexes = {
        "local_all": {"vlc": ["ccc-wos", "INF-ddd-WOS", "eee-WOS"],
                      "notepad": ["bbb-WOS", "aaa-WOS"]},
        "local_small": {"notepad": ["aaa-WOS"]},
    }
    return Catalog.from_folder(write_suite(tmp_path / "suite", tasks, indexes))


def ids(refs: list[TaskRef]) -> list[str]:
    return [r.task_id for r in refs]


def test_folder_order_follows_the_largest_index(suite: Catalog) -> None:
    assert suite.task_ids() == ["ccc-wos", "INF-ddd-WOS", "eee-WOS", "bbb-WOS", "aaa-WOS"]
    assert set(suite.indexes) == {"local_all", "local_small"}


def test_keyed_by_index_id_not_inner_id(suite: Catalog) -> None:
    ref = suite.ref("bbb-WOS")
    assert (ref.task_id, ref.domain, ref.instruction) == ("bbb-WOS", "notepad", "Save the file")
    assert suite.load("bbb-WOS")["id"] == "some-other-id"
    with pytest.raises(UnknownTaskError):
        suite.ref("some-other-id")


def test_infeasible_by_prefix_or_evaluator(suite: Catalog) -> None:
    assert [r.task_id for r in suite.select("all", live=False) if r.infeasible] == [
        "INF-ddd-WOS", "eee-WOS"]


@pytest.mark.parametrize(
    ("selection", "expected"),
    [
        ("all", ["ccc-wos", "INF-ddd-WOS", "eee-WOS", "bbb-WOS", "aaa-WOS"]),
        ("local_small", ["aaa-WOS"]),
        ("domain:notepad", ["bbb-WOS", "aaa-WOS"]),
        ("aaa-WOS,ccc-wos", ["aaa-WOS", "ccc-wos"]),
        (" aaa-WOS , ccc-wos, aaa-WOS ,", ["aaa-WOS", "ccc-wos"]),
    ],
)
def test_selection_syntax(suite: Catalog, selection: str, expected: list[str]) -> None:
    assert ids(suite.select(selection, live=True)) == expected


def test_selection_from_file(suite: Catalog, tmp_path: Path) -> None:
    listing = tmp_path / "ids.txt"
    listing.write_text("# tonight's run\n\neee-WOS\naaa-WOS  # the easy one\neee-WOS\n")
    assert ids(suite.select(f"@{listing}", live=True)) == ["eee-WOS", "aaa-WOS"]


def test_selection_file_missing(suite: Catalog, tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="the task list .*nope.txt does not exist"):
        suite.select(f"@{tmp_path / 'nope.txt'}", live=False)


def test_unknown_ids_are_all_listed(suite: Catalog) -> None:
    with pytest.raises(UnknownTaskError) as info:
        suite.select("aaa-WOS,zzz-1-WOS,yyy-2-WOS", live=False)
    assert info.value.task_ids == ["zzz-1-WOS", "yyy-2-WOS"]
    assert "zzz-1-WOS" in str(info.value) and "yyy-2-WOS" in str(info.value)
    assert info.value.exit_code == 2


def test_unknown_ids_one_line_first_five_with_close_matches() -> None:
    known = ["c499b229-110c-5fc8-9895-f2f879ac1512-WOS", "1ea6a9af-3a80-521e-a6ba-f392a618d1b0-WOS"]
    typo = "c499b229-110c-5fc8-9895-f2f879ac1512-WOX"
    given = [typo, known[1], *(f"bogus-{n}" for n in range(6))]
    with pytest.raises(UnknownTaskError) as info:
        check_known(given, known, source="the suite")
    text = str(info.value)
    assert info.value.task_ids == [typo, *(f"bogus-{n}" for n in range(6))]
    assert text == (
        f"7 unknown task ID(s) in the suite: '{typo}' (did you mean '{known[0]}'?), 'bogus-0', "
        "'bogus-1', 'bogus-2', 'bogus-3' and 2 more; list the known ones with 'openadapt-evals "
        "tasks'"
    )
    check_known(known, known, source="the suite")  # all known: nothing to say


def test_named_ids_are_what_can_be_checked_without_the_catalog(tmp_path: Path) -> None:
    listing = tmp_path / "ids.txt"
    listing.write_text("a-1\n# note\nnotepad_1\n")
    assert named_ids(f"@{listing}") == ["a-1", "notepad_1"]
    assert named_ids("a-1, b-2") == ["a-1", "b-2"] and named_ids("notepad_1") == ["notepad_1"]
    for selection in ("all", "5", "test_small", "domain:chrome"):
        assert named_ids(selection) is None
    with pytest.raises(SyntheticTaskError, match="1 synthetic task ID"):
        check_not_synthetic(["a-1", "notepad_1"])


def test_synthetic_ids_rejected_for_live_pools_only(suite: Catalog) -> None:
    with pytest.raises(SyntheticTaskError) as info:
        suite.select("aaa-WOS,notepad_1,mock_chrome_001", live=True)
    assert info.value.task_ids == ["notepad_1", "mock_chrome_001"]
    assert "live pool" in str(info.value)
    # Not live: they are simply unknown to this catalog.
    with pytest.raises(UnknownTaskError):
        suite.select("notepad_1", live=False)


@pytest.mark.parametrize("task_id", ["notepad_1", "mock_chrome_001", "mock_anything",
                                     "libreoffice_calc_12", "chrome_3"])
def test_is_synthetic(task_id: str) -> None:
    assert is_synthetic(task_id)


@pytest.mark.parametrize("task_id", ["2ae9ba84-3a0d-4d4c-8338-3a1478dc5fe3-wos",
                                     "INF-0d95d28a-9587-433b-a805-1fbe5467d598-WOS",
                                     "02F10F89-7171-4D37-8550-A00BA8930CDF-2-WOS"])
def test_real_ids_are_not_synthetic(task_id: str) -> None:
    assert not is_synthetic(task_id)


@pytest.mark.parametrize("selection", ["domain:excel", "local_smal", ""])
def test_bad_selections(suite: Catalog, selection: str) -> None:
    with pytest.raises(CatalogError):
        suite.select(selection, live=False)


@pytest.mark.parametrize(
    ("content", "complaint"),
    [
        ("{not json", "not valid JSON"),
        ('["a", "b"]', "must be an object"),
        ('{"notepad": "aaa-WOS"}', "list of task ID strings"),
        ('{"notepad": [1, 2]}', "list of task ID strings"),
    ],
)
def test_malformed_index_names_the_file(tmp_path: Path, content: str, complaint: str) -> None:
    root = write_suite(tmp_path, {"notepad": {"aaa-WOS": _task("aaa-WOS", "x")}}, {})
    (root / "broken_index.json").write_text(content)
    with pytest.raises(CatalogError) as info:
        Catalog.from_folder(root)
    assert "broken_index.json" in str(info.value)
    assert complaint in str(info.value)


def test_index_listing_a_missing_file(tmp_path: Path) -> None:
    root = write_suite(tmp_path, {"notepad": {"aaa-WOS": _task("aaa-WOS", "x")}},
                       {"local_all": {"notepad": ["aaa-WOS", "gone-WOS"], "vlc": ["aaa-WOS"]}})
    with pytest.raises(CatalogError) as info:
        Catalog.from_folder(root)
    assert "notepad/gone-WOS" in str(info.value) and "vlc/aaa-WOS" in str(info.value)


def test_malformed_task_file(tmp_path: Path) -> None:
    root = write_suite(tmp_path, {"notepad": {"aaa-WOS": _task("aaa-WOS", "x")}},
                       {"local_all": {"notepad": ["aaa-WOS"]}})
    (root / "examples" / "notepad" / "aaa-WOS.json").write_text('{"instruction": 3}')
    catalog = Catalog.from_folder(root)
    with pytest.raises(CatalogError, match=r"aaa-WOS\.json.*instruction"):
        catalog.ref("aaa-WOS")


def test_not_a_task_folder(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="not a WAA task folder"):
        Catalog.from_folder(tmp_path)


def test_from_scoring_reads_lazily() -> None:
    with ScriptedServer({
        "/tasks": Reply.json({"notepad": ["aaa-WOS", "bbb-WOS"]}),
        "/task/aaa-WOS": Reply.json(_task("inner", "Write hello")),
    }) as server, ScoringClient(server.url) as client:
        catalog = Catalog.from_scoring(client)
        assert catalog.task_ids() == ["aaa-WOS", "bbb-WOS"]
        assert server.hits["/task/aaa-WOS"] == 0
        refs = catalog.select("aaa-WOS", live=True)
        catalog.ref("aaa-WOS")
        assert server.hits["/task/aaa-WOS"] == 1, "fetched once, then cached"
        assert refs == [TaskRef("aaa-WOS", "notepad", False, "Write hello")]
        with pytest.raises(UnknownTaskError):
            catalog.select("ccc-WOS", live=True)


# --- WAA's real data (../shared/waa) -------------------------------------------------------------


@pytest.fixture
def waa(waa_data: Path) -> Catalog:
    return Catalog.from_folder(waa_data)


def test_real_data_counts(waa: Catalog) -> None:
    refs = waa.select("all", live=True)
    assert len(refs) == 154
    assert len({r.domain for r in refs}) == 12
    assert len(waa.select("test_all", live=True)) == 154
    small = waa.select("test_small", live=True)
    assert len(small) == 6
    assert {r.domain for r in small} == {"chrome", "libreoffice_calc"}


def test_real_data_infeasible(waa: Catalog) -> None:
    infeasible = [r for r in waa.select("all", live=True) if r.infeasible]
    assert len(infeasible) == 13
    for ref in infeasible:
        assert ref.task_id.startswith("INF-")
        assert waa.load(ref.task_id)["evaluator"]["func"] == "infeasible"


def test_real_data_keyed_by_file_name(waa: Catalog, waa_data: Path) -> None:
    differing: dict[str, dict[str, Any]] = {}
    for path in sorted((waa_data / "examples").glob("*/*.json")):
        data = json.loads(path.read_text())
        if data["id"] != path.stem:
            differing[path.stem] = data
    assert len(differing) == 6
    for file_id, data in differing.items():
        assert waa.ref(file_id).task_id == file_id
        assert waa.load(file_id) == data
    # One inner id is even another task's index ID: keying by it would mix two tasks up.
    clash = differing["INF-0d95d28a-9587-433b-a805-1fbe5467d598-WOS"]["id"]
    assert clash in waa and waa.load(clash)["instruction"] != waa.ref(
        "INF-0d95d28a-9587-433b-a805-1fbe5467d598-WOS").instruction


def test_real_data_rejects_synthetic_and_unknown(waa: Catalog) -> None:
    with pytest.raises(SyntheticTaskError) as synthetic:
        waa.select("notepad_1,mock_chrome_001", live=True)
    assert synthetic.value.task_ids == ["notepad_1", "mock_chrome_001"]
    with pytest.raises(UnknownTaskError) as unknown:
        waa.select("2ae9ba84-3a0d-4d4c-8338-3a1478dc5fe3-wos,no-such-WOS,nor-this-WOS", live=True)
    assert unknown.value.task_ids == ["no-such-WOS", "nor-this-WOS"]
