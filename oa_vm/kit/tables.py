"""Plain-text tables for terminal output (no colours, so output pipes and greps well)."""

from __future__ import annotations

from collections.abc import Sequence


def render_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Left-aligned columns separated by two spaces, with a header line."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()
             for row in cells]
    return "\n".join(lines)


def money(value: float | None) -> str:
    """``$1.23`` (or ``-`` when unpriced); small figures keep more digits."""
    if value is None:
        return "-"
    return f"${value:.4f}" if 0 < abs(value) < 0.1 else f"${value:.2f}"


def hourly(value: float | None) -> str:
    """A price per hour with four decimals, so a column of them lines up: ``$0.3440``,
    ``$4.6080``; ``-`` when unpriced."""
    return "-" if value is None else f"${value:.4f}"
