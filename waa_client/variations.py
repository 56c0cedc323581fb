"""Goal variations (the OpenApps task format): the same task, its instruction reworded.

A variations file maps ``<task_id>__<style>_<n>`` to ``{"goal_style": style, "instruction":
text}`` (JSON or YAML), with ``style`` one of :data:`STYLES`. A variation is its original task
in every field but the instruction: the same setup, the same checker, so its score says how the
rewording changed the agent's behaviour and nothing else. Fields other than ``goal_style`` and
``instruction`` may be present (OpenApps copies the original's fields verbatim) but must then
equal the original's, or the file is refused.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from waa_client import inputs
from waa_client.errors import CatalogError

STYLES = ("casual", "formal", "unrelated_context")
SEPARATOR = "__"
_KEY = re.compile(r"^(?P<base>.+)__(?P<style>casual|formal|unrelated_context)_(?P<n>[0-9]+)$")
_OWN_FIELDS = frozenset({"goal_style", "instruction", "goal"})


@dataclass(frozen=True)
class Variation:
    """One reworded instruction of a task.

    Attributes:
        variation_id: ``<task_id>__<style>_<n>``, the ID it runs and is recorded under.
        base_id: The original task's ID.
        style: ``casual``, ``formal`` or ``unrelated_context``.
        number: ``n`` of the key.
        instruction: The reworded instruction the agent sees.
        fields: Other fields the file gave (each must equal the original's).
    """

    variation_id: str
    base_id: str
    style: str
    number: int
    instruction: str
    fields: tuple[tuple[str, Any], ...] = ()


def base_of(task_id: str) -> str:
    """The original task's ID of a variation ID; the ID itself for an original."""
    found = _KEY.match(task_id)
    return found.group("base") if found else task_id


def style_of(task_id: str) -> str | None:
    """The goal style of a variation ID, None for an original."""
    found = _KEY.match(task_id)
    return found.group("style") if found else None


def parse_variations(data: Any, source: str) -> dict[str, Variation]:
    """Variations from a file's parsed content, checked.

    Raises:
        CatalogError: not a mapping, a key not of the form ``<task_id>__<style>_<n>``, an
            unknown or disagreeing ``goal_style``, or a missing or empty instruction (the
            message names the entry).
    """
    if not isinstance(data, Mapping):
        raise CatalogError(f"{source}: a variations file maps '<task_id>__<style>_<n>' to "
                           "{goal_style, instruction}; this one is not a mapping")
    found: dict[str, Variation] = {}
    for number, (key, entry) in enumerate(data.items(), start=1):
        if not isinstance(entry, Mapping):  # not a variation at all (the wrong file?): the
            # entry is named by its place, its text not shown (``/etc/shadow`` reads as YAML)
            raise CatalogError(f"{source}: entry {number} holds {inputs.kind_of(entry)}, not "
                               "{goal_style, instruction}")
        problem = inputs.id_problem("variation key", key)
        if problem:
            raise CatalogError(f"{source}: {problem}")
        match = _KEY.match(str(key))
        if match is None:
            raise CatalogError(f"{source}: {key!r} is not '<task_id>__<style>_<n>' with a "
                               f"style among {', '.join(STYLES)}")
        style = match.group("style")
        if entry.get("goal_style", style) != style:
            raise CatalogError(f"{source}: {key}: goal_style {entry.get('goal_style')!r} "
                               f"disagrees with the key's style {style!r}")
        text = entry.get("instruction", entry.get("goal"))
        if not isinstance(text, str) or not text.strip():
            raise CatalogError(f"{source}: {key}: no instruction (a non-empty string)")
        extra = tuple(sorted((k, v) for k, v in entry.items() if k not in _OWN_FIELDS))
        found[str(key)] = Variation(str(key), match.group("base"), style,
                                    int(match.group("n")), text, extra)
    return found


def load_variations(path: Path) -> dict[str, Variation]:
    """Read and check a variations file (JSON, or YAML).

    Raises:
        CatalogError: unreadable, not JSON/YAML, or an entry is malformed (see
            :func:`parse_variations`).
    """
    # JSON is YAML: one parser reads both, bounded (size, aliases, depth, duplicate keys)
    return parse_variations(inputs.read_yaml(path, what="the variations file"), str(path))


def variation_task(original: Mapping[str, Any], variation: Variation) -> dict[str, Any]:
    """The task a variation runs: the original's JSON with the instruction reworded and the ID,
    style and original recorded (``id``, ``goal_style``, ``variation_of``).

    Raises:
        CatalogError: a field the file gave differs from the original's.
    """
    # an OpenApps-style task keeps its entry's fields (``_target_``, ``todo_name``...) in
    # ``openapps.entry``; a variation copied from that file repeats them
    entry = (original.get("openapps") or {}).get("entry")
    fields_of = entry if isinstance(entry, Mapping) else original
    for name, value in variation.fields:
        if fields_of.get(name) != value:
            raise CatalogError(
                f"variation {variation.variation_id}: field {name!r} differs from the original "
                f"task's; a variation may change the instruction only"
            )
    task = copy.deepcopy(dict(original))
    task.update(id=variation.variation_id, instruction=variation.instruction,
                goal_style=variation.style, variation_of=variation.base_id)
    return task


def expand(task_ids: Iterable[str], variations: Mapping[str, Variation]) -> list[str]:
    """``task_ids`` with each task's variations right after it (in the file's order)."""
    by_base: dict[str, list[str]] = {}
    for variation in variations.values():
        by_base.setdefault(variation.base_id, []).append(variation.variation_id)
    out: list[str] = []
    for task_id in task_ids:
        out.append(task_id)
        out.extend(v for v in by_base.get(task_id, []) if v not in out)
    return out
