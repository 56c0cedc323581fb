"""Records that read bad data say so in one line naming the file, touch nothing, and hide
nothing else; ``view --out`` writes only where it should; a full disk is named, not a traceback.

The console scripts run as real subprocesses.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.devices import special_file
from tests.support.disks import fill, tmpfs

TASK = "c499b229-110c-5fc8-9895-f2f879ac1512-WOS"


def _record(name: str, **changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "version": 1, "name": name, "cloud": "local", "state": "failed",
        "created_at": "2026-01-01T00:00:00+00:00", "expires_at": None, "workers": [],
    }
    data.update(changes)
    return data


def _plant(home: Path, name: str, data: dict[str, object]) -> Path:
    path = home / "pools" / name / "pool.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


# --- pool.json of the wrong types (13) -----------------------------------------------------------


@pytest.mark.parametrize("change", [
    {"workers": "x"},
    {"workers": [{"name": "worker-0", "state": "ready", "pid": -5}]},
    {"workers": [{"name": "worker-0", "state": "ready", "pid": True}]},
    {"settings": ["not", "an", "object"]},
    {"workers": [{"name": "worker-0", "ssh": {"host": "h", "port": "22", "user": "u",
                                             "key_path": "k"}}]},
])
def test_a_wrong_typed_pool_record_is_one_line_naming_it_and_is_left_alone(
    tmp_path: Path, change: dict[str, object]
) -> None:
    home = tmp_path / "home"
    bad = _plant(home, "bad", _record("bad", **change))
    before = bad.read_bytes()
    for args in (("pool-status", "--name", "bad"), ("pool-extend", "--name", "bad", "--by", "1h"),
                 ("pool-cleanup", "--name", "bad", "-y")):
        line = run_cli("oa-vm", *args, home=home).assert_one_line_error()
        assert str(bad) in line and "unexpected" not in line, line
        assert "fix or move the file" in line
    assert bad.read_bytes() == before


def test_pool_list_lists_the_other_pools_and_names_each_unreadable_record(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    _plant(home, "good", _record("good"))
    typed = _plant(home, "typed", _record("typed", workers="x"))
    negative = _plant(home, "negative", _record(
        "negative", workers=[{"name": "worker-0", "state": "ready", "pid": -5}]))
    listed = run_cli("oa-vm", "pool-list", home=home)
    assert listed.returncode == 0, listed.stderr
    assert "good" in listed.stdout and "typed" in listed.stdout and "negative" in listed.stdout
    warnings = listed.stderr.splitlines()
    assert len(warnings) == 2 and "Traceback" not in listed.stderr
    assert any(str(typed) in w for w in warnings) and any(str(negative) in w for w in warnings)
    as_json = run_cli("oa-vm", "pool-list", "--json", home=home)
    names = {e.get("name") or Path(e["path"]).parent.name for e in json.loads(as_json.stdout)}
    assert names == {"good", "typed", "negative"}


def _unreadable(home: Path, name: str, how: str) -> Path:
    """A pool record that cannot be read as text, or names another pool."""
    path = home / "pools" / name / "pool.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    if how == "not-utf8":
        path.write_bytes(b"\xff\xfe\x00" + json.dumps(_record(name)).encode())
    elif how == "a-folder":
        path.mkdir()
    else:  # copied from another pool's folder, or edited by hand
        path.write_text(json.dumps(_record("other")))
    return path


@pytest.mark.parametrize("how", ["not-utf8", "a-folder", "names-another-pool"])
def test_a_record_that_cannot_be_read_or_names_another_pool_is_listed_and_named_not_a_crash(
    tmp_path: Path, how: str
) -> None:
    home = tmp_path / "home"
    _plant(home, "good", _record("good"))
    bad = _unreadable(home, "bad", how)
    listed = run_cli("oa-vm", "pool-list", home=home)
    assert listed.returncode == 0, listed.stderr
    assert listed.stderr.count("\n") == 1 and str(bad) in listed.stderr, listed.stderr
    rows = {line.split()[0] for line in listed.stdout.splitlines()[1:]}
    assert rows == {"good", "bad"}, listed.stdout
    for args in (("pool-status", "--name", "bad"), ("pool-cleanup", "--name", "bad", "-y")):
        line = run_cli("oa-vm", *args, home=home).assert_one_line_error()
        assert str(bad) in line and "unexpected" not in line, line
        assert "fix or move the file" in line
    assert bad.exists() and not (home / "pools" / "other").exists()


# --- image records (14) --------------------------------------------------------------------------


def test_image_list_names_an_unreadable_image_record_instead_of_no_images(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    images = home / "images"
    images.mkdir(parents=True)
    bad = images / "img-1.json"
    bad.write_text('{"version": 1, "id": "img-1", "cloud": "aws"')  # cut short
    listed = run_cli("oa-vm", "image-list", home=home)
    assert "No images" not in listed.stdout + listed.stderr
    assert str(bad) in listed.stderr and "Traceback" not in listed.stderr
    assert len(listed.stderr.splitlines()) == 1
    assert bad.read_text().endswith('"aws"')


# --- queue rows of an unknown final status (15) -------------------------------------------------


@pytest.fixture(scope="module")
def done_run(pooled: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished one-task run (folder ``r``) on the shared pool."""
    results = tmp_path_factory.mktemp("done") / "results"
    ran = run_cli("openadapt-evals", "run", "--pool", "p", "--agent", "oracle", "--tasks", TASK,
                  "--run-name", "r", "--results-dir", str(results), home=pooled)
    assert ran.returncode == 0, ran.stderr
    return results / "r"


@pytest.mark.parametrize("update", [
    "UPDATE tasks SET final_status='weird'",
    "UPDATE tasks SET record=json_set(record, '$.status', 'weird')",
])
def test_a_queue_row_of_unknown_status_stops_the_resume_before_any_write(
    pooled: Path, done_run: Path, tmp_path: Path, update: str
) -> None:
    run = tmp_path / "results" / "r"
    shutil.copytree(done_run, run)
    conn = sqlite3.connect(run / "queue.sqlite")
    conn.execute(update)
    conn.commit()
    conn.close()
    files = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()
             and not p.name.startswith("queue.sqlite") and p.name != ".lock"}
    line = run_cli("openadapt-evals", "run", "--pool", "p", "--agent", "oracle", "--tasks",
                   TASK, "--run-name", "r", "--results-dir", str(tmp_path / "results"),
                   "--resume", home=pooled).assert_one_line_error()
    assert "queue.sqlite" in line and str(run) in line and "'weird'" in line, line
    assert "unexpected" not in line
    assert {p: p.read_bytes() for p in files} == files  # metadata.json included


# --- view --out (7) and view of a long name (17) ------------------------------------------------


def _view(done_run: Path, *extra: str, home: Path) -> list[str]:
    return ["view", done_run.name, "--results-dir", str(done_run.parent), *extra]


def test_view_out_refuses_a_file_it_did_not_write_unless_forced(
    pooled: Path, done_run: Path, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.html"
    notes.write_text("my own notes\n")
    line = run_cli("openadapt-evals", *_view(done_run, "--out", str(notes), home=pooled),
                   home=pooled).assert_one_line_error()
    assert str(notes) in line and "--force" in line
    assert notes.read_text() == "my own notes\n"
    forced = run_cli("openadapt-evals", *_view(done_run, "--out", str(notes), "--force",
                                               home=pooled), home=pooled)
    assert forced.returncode == 0, forced.stderr
    assert "openadapt-evals" in notes.read_text()
    # a page it wrote is its own: written again without --force
    again = run_cli("openadapt-evals", *_view(done_run, "--out", str(notes), home=pooled),
                    home=pooled)
    assert again.returncode == 0, again.stderr


def test_view_out_never_writes_a_device_a_symlink_or_a_missing_folder(
    pooled: Path, done_run: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    link = tmp_path / "page.html"
    link.symlink_to(victim)
    device = special_file(tmp_path)  # the test's own, never the machine's /dev/null
    cases = {
        str(device): "not a regular file",
        str(link): "symlink",
        str(tmp_path / "no" / "such" / "page.html"): "does not exist",
    }
    for target, why in cases.items():
        line = run_cli("openadapt-evals", *_view(done_run, "--out", target, "--force",
                                                 home=pooled),
                       home=pooled).assert_one_line_error()
        assert target in line and why in line, line
    assert victim.read_text() == "precious\n"
    assert not (tmp_path / "no").exists()


def test_view_out_names_the_page_not_its_temp_file(pooled: Path, done_run: Path) -> None:
    line = run_cli("openadapt-evals", *_view(done_run, "--out", "/proc/x.html", home=pooled),
                   home=pooled).assert_one_line_error()
    assert "/proc/x.html" in line and ".tmp" not in line and "unexpected" not in line, line


def test_view_of_a_300_character_name_is_one_clear_line(pooled: Path, done_run: Path) -> None:
    line = run_cli("openadapt-evals", "view", "r" * 300, "--results-dir", str(done_run.parent),
                   home=pooled).assert_one_line_error()
    assert "unexpected" not in line and "255" in line, line


# --- a full disk (17) ----------------------------------------------------------------------------


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs of our own, filled to the last byte."""
    with tmpfs(tmp_path / "disk", "256k") as mount:
        fill(mount)
        yield mount


def test_a_full_disk_is_one_line_naming_the_file_and_leaves_no_empty_pool_folder(
    tiny_disk: Path,
) -> None:
    home = tiny_disk / "home"
    line = run_cli("oa-vm", "pool-create", "--cloud", "local", "--name", "full", "--workers",
                   "1", "-y", home=home).assert_one_line_error()
    assert "No space left" in line and "unexpected" not in line, line
    assert str(home / "pools" / "full" / "pool.json") in line
    assert ".tmp" not in line
    assert not (home / "pools" / "full").exists()


def test_a_missing_trial_is_counted_and_said_by_view_and_compare(
    pooled: Path, done_run: Path, tmp_path: Path
) -> None:
    """A trial metadata.json lists without an execution.json (a lost record) is said by view
    (on stderr and on the page) and by compare, never silently left out of the figures."""
    results = tmp_path / "results"
    shutil.copytree(done_run, results / "a")
    shutil.copytree(done_run, results / "b")
    meta = json.loads((results / "b" / "metadata.json").read_text())
    meta["task_ids"] = [TASK, "ghost-task"]
    (results / "b" / "metadata.json").write_text(json.dumps(meta))
    page = tmp_path / "b.html"
    shown = run_cli("openadapt-evals", "view", "b", "--results-dir", str(results), "--out",
                    str(page), home=pooled)
    assert shown.returncode == 0, shown.stderr
    assert "1 trial(s) listed in metadata.json have no execution.json (ghost-task)" in \
        shown.stderr
    assert "ghost-task" in page.read_text()
    compared = run_cli("openadapt-evals", "compare", "a", "b", "--results-dir", str(results),
                       home=pooled)
    assert compared.returncode == 0, compared.stderr
    assert "B (r): 1 trial(s) listed in metadata.json have no execution.json (ghost-task)" in \
        compared.stdout


def test_a_truncated_manifest_is_said_so_not_taken_for_a_run_without_one(
    pooled: Path, done_run: Path, tmp_path: Path
) -> None:
    # read as none, compare warned "run B has no manifest.json (started before manifests were
    # written)" and dropped every check of the settings; runs, view and export said nothing
    copy = tmp_path / "results" / "r"
    shutil.copytree(done_run, copy)
    shutil.copytree(done_run, copy.parent / "whole")
    manifest = copy / "manifest.json"
    manifest.write_text(manifest.read_text(encoding="utf-8")[:40], encoding="utf-8")
    results = str(copy.parent)
    compared = run_cli("openadapt-evals", "compare", "whole", "r", "--results-dir", results,
                       home=pooled)
    assert "manifest.json cannot be read" in compared.assert_one_line_error()
    listed = run_cli("openadapt-evals", "runs", "--results-dir", results, "--json",
                     home=pooled)
    assert listed.returncode == 0, listed.stderr
    shown = json.loads(listed.stdout)
    rows = {row["name"]: row for row in shown["runs"]}
    assert "manifest.json cannot be read" in str(rows["r"]["unreadable"]), rows
    assert rows["whole"]["unreadable"] is None
