"""Finding a control of the simulated desktop by its accessible name, as tests aim clicks."""

from __future__ import annotations

from infra.local.desktop import Desktop
from infra.local.gui import Control, layout, taskbar


def find_control(desktop: Desktop, name: str, role: str | None = None) -> Control | None:
    """The topmost control with this accessible name (any case), e.g. for an agent's target;
    one that acts on a click wins over a label of the same name."""
    lowered = name.strip().lower()
    for placed in reversed(layout(desktop)):
        matches = [c for c in placed.controls
                   if c.name.lower() == lowered and (role is None or c.role == role)]
        if matches:  # a control that acts (a switch) before its label of the same name
            return next((c for c in matches if c.key), matches[0])
    return next((c for c in taskbar(desktop) if c.name.lower() == lowered), None)
