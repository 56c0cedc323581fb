"""``docs/cli.md`` says what the commands really print for ``--help``."""

from __future__ import annotations

import re

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


CROSS_REFERENCES = {"oa-vm pool-cleanup": {"--cloud"}}
"""Options a command's help names that belong to another command, on purpose: pool-cleanup's
``--purge`` is for pools made with ``pool-create --cloud ssh``."""


def test_a_commands_help_names_only_its_own_options() -> None:
    """A shared option's help once told ``sweep`` to use ``--rerun-errors``, which only ``run``
    has: every ``--option`` a help text names is one of that command's own."""
    for name, text in clidoc.commands():
        own: set[str] = set()
        for line in text.splitlines():
            listed = re.match(r"\s+((?:-\w, )?--[\w-]+(?:(?:, | / )--[\w-]+)*)", line)
            if listed:
                own |= set(re.findall(r"--[\w-]+", listed.group(1)))
        unwrapped = re.sub(r"-\n\s+", "-", text)  # an option split at its hyphen by the wrap
        named = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", unwrapped))
        assert named - own <= CROSS_REFERENCES.get(name, set()), (name, sorted(named - own))
