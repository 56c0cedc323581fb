"""Every command line README.md and docs/*.md show runs as written: the commands exist and take
the options passed to them (tests/support/doccommands.py reads the pages and the ``--help``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import doccommands


def test_every_command_and_option_the_pages_name_exists() -> None:
    problems = doccommands.problems()
    assert not problems, "\n".join(problems)


def test_the_pages_are_read_at_all() -> None:
    """The rule reads what it should: all three programs, subcommand spans, project scripts."""
    found = doccommands.mentions()
    commands = {m.command for m in found}
    assert set(doccommands.PROGRAMS) <= commands
    assert {"bench.dispatch", "infra.local"} <= commands
    assert any(m.command == "pool-cleanup" and "--expired" in m.words for m in found)
    tour = [m for m in found if m.doc == "README.md" and m.command == "openadapt-evals"]
    assert any(m.words[:1] == ("view",) for m in tour)


@pytest.fixture
def page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A page of our own in place of the real ones."""
    doc = tmp_path / "page.md"
    monkeypatch.setattr(doccommands, "pages", lambda: [doc])
    return doc


@pytest.mark.parametrize(("text", "expected"), [
    ("```\noa-vm pool-wait --pool demo --no-such-flag\n```\n",
     "'oa-vm pool-wait' has no option --no-such-flag"),
    ("Run `openadapt-evals run --tasks all --frobnicate` once.\n",
     "'openadapt-evals run' has no option --frobnicate"),
    ("```\nopenadapt-evals run --pool p \\\n    --agent oracle --bogus 1\n```\n",
     "'openadapt-evals run' has no option --bogus"),
    ("Then `oa-vm pool-destroy --pool demo`.\n", "'oa-vm' has no command 'pool-destroy'"),
    ("Then `oa-vm prices fetch`.\n", "'oa-vm prices' has no command 'fetch'"),
    ("A worker is quarantined after `--quarantine-after` failures.\n",
     "--quarantine-after is no option of any command"),
    ("Retire it with `pool-cleanup --shred`.\n", "'oa-vm pool-cleanup' has no option --shred"),
    ("```\n.venv/bin/python bench/dispatch.py --workers 8 --turbo\n```\n",
     "'bench.dispatch' has no option --turbo"),
    ("```\nANTHROPIC_API_KEY=... openadapt-evals sweep --workers 2 -z\n```\n",
     "'openadapt-evals sweep' has no option -z"),
])
def test_a_page_naming_what_does_not_exist_is_caught(page: Path, text: str, expected: str) -> None:
    page.write_text(text, encoding="utf-8")
    problems = doccommands.problems()
    assert len(problems) == 1 and expected in problems[0], problems


def test_what_exists_passes(page: Path) -> None:
    page.write_text(
        "```\noa-vm pool-create --cloud local --workers 3 --pool demo -y   # --not-read\n"
        "oa-vm prices refresh --cloud azure\n"
        "openadapt-evals export first --format inspect | head -3\n```\n"
        "Use `run --repair`, `--resume`, `oa-vm pool-status --json` or `--dist worksteal`.\n"
        "The older `--task-count N` is still accepted (hidden from `--help`).\n"
        "```text\nUsage: oa-vm pool-wait [OPTIONS]\n"
        "  a page openadapt-evals wrote --not-read\n```\n",
        encoding="utf-8",
    )
    assert doccommands.problems() == []


def test_every_file_and_heading_the_pages_point_at_exists() -> None:
    missing = doccommands.missing_targets()
    assert not missing, "\n".join(missing)


def test_a_page_pointing_at_nothing_is_caught(page: Path) -> None:
    page.write_text(
        "The queue is `evals/run/queue.py`, the pool `oa_vm/model/pool_record.py`.\n"
        "See [the page](page.md#a-heading), [nothing](gone.md), [here](#no-such-heading).\n"
        "# A heading\n",
        encoding="utf-8",
    )
    assert doccommands.missing_targets() == [
        "page.md:1: no such file: oa_vm/model/pool_record.py",
        "page.md:2: no such page: gone.md",
        "page.md:2: page.md has no heading #no-such-heading",
    ]
