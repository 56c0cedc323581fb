"""``docs/cli.md`` says what the commands really print for ``--help``."""

from __future__ import annotations

import pytest

from tests.support import clidoc


@pytest.mark.long
def test_cli_reference_is_current() -> None:
    current = clidoc.DOC.read_text(encoding="utf-8")
    assert current == clidoc.render(current), (
        "docs/cli.md is stale: regenerate it with 'python -m tests.support.clidoc'"
    )


def test_every_command_has_a_section() -> None:
    current = clidoc.DOC.read_text(encoding="utf-8")
    for name, _text in clidoc.commands():
        assert f"## `{name}`" in current, name


def test_author_prose_after_a_block_is_kept() -> None:
    doc = clidoc.HEADER + "\n## `oa-vm pool-list`\n\n```text\nold help\n```\n\nA note.\n"
    rendered = clidoc.render(doc, (("oa-vm pool-list", "new help\n"),))
    assert "```text\nnew help\n```\n\nA note.\n" in rendered
