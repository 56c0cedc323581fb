"""The run viewer: one self-contained HTML page per run.

The page holds the summary, per-domain results, one row per task and each task's steps with the
screenshot taken before the step, its action, and the score or error. It loads nothing from
anywhere: styles and a few lines of script are inline, screenshots are embedded as downscaled JPEG
thumbnails (data URIs). Each thumbnail also links to its full-size PNG, relative to the page, for
when the page sits in its run folder.

The markup lives in Jinja2 templates (``evals/report/templates/``, package data) with autoescape on:
every string from a record (task IDs, instructions, commands, window titles, checker reasons, an
agent's traceback) is escaped by the template engine, because an agent or a task can put
anything there; this module only gathers and formats the values.

Trade-offs: a full WAA sweep has thousands of screenshots, so thumbnails are small and the page
stops embedding them past a byte budget (the rest link to their files).
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from markupsafe import Markup

from evals.results.records import (
    METADATA_FILE,
    RunMetadata,
    StepRecord,
    Summary,
    TaskExecution,
    read_tree,
)
from evals.results.run_reader import missing_line, missing_of, read_metadata, read_record_folders
from evals.run.manifest import MANIFEST, read_manifest, summary_lines
from evals.run.metrics import fmt_interval, fmt_num, fmt_rate, sessions_fact, summarize
from evals.run.pools import record_namer
from evals.run.reset import fingerprint_ok
from evals.run.variations import difference_text
from oa_vm.kit import safe_fs
from oa_vm.kit.durations import format_duration
from oa_vm.kit.lazy import pil
from oa_vm.kit.lazy import pil_image as Image
from oa_vm.kit.redact import redact_text

THUMB_WIDTH = 360
THUMB_QUALITY = 60
EMBED_BUDGET_BYTES = 20_000_000
TEXT_LIMIT = 2_000
STATUS_LABELS = {"not_run": "not run", "budget_stopped": "budget stopped"}
"""Statuses a page spells otherwise than their key (the templates show any other as it is)."""

# Marks the pages this project writes, so 'view' replaces its own page but no other file.
GENERATOR_TAG = '<meta name="generator" content="openadapt-evals">'


@cache
def _templates() -> jinja2.Environment:
    """The templates shipped in the package (``evals/report/templates``), autoescaped, undefined
    names an error (a typo in a template fails the tests instead of printing nothing)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("evals.report", "templates"),
        autoescape=True,  # every template is HTML (style.css and run.js are only included)
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        # every value a page shows passes the one redaction (oa_vm.kit.redact): a record or a
        # metadata file written before it masked a worker's capability still shows none
        finalize=_redacted,
    )
    env.filters["rate"] = fmt_rate
    env.filters["num"] = fmt_num
    env.filters["rate_ci"] = _rate_ci
    env.globals["labels"] = STATUS_LABELS
    env.globals["generator_tag"] = Markup(GENERATOR_TAG)
    return env


class _ImageUri(str):
    """A thumbnail's ``data:`` URI, made here from a screenshot's pixels: it holds no text to
    mask, and masking it cost a third of ``view``'s CPU (each URI is tens of kilobytes of
    base64), with a chance of cutting an ``AKIA...``-shaped run out of the picture."""

    __slots__ = ()


def _redacted(value: object) -> object:
    """A value about to be printed into a page, credentials masked (markup stays markup: the
    mask has no character HTML treats specially)."""
    if isinstance(value, _ImageUri):
        return value
    if isinstance(value, Markup):
        return Markup(redact_text(str(value)))
    if isinstance(value, str):
        return redact_text(value)
    return value


def _rate_ci(interval: Any) -> str:
    """A domain's success-rate interval as ``[a%, b%]`` (``n/a`` without one)."""
    return fmt_interval(interval if isinstance(interval, dict) else None, rate=True)

def esc(value: object) -> str:
    """HTML-escape any value (quotes included, so it is safe in attributes too), for pages
    still assembled in Python (:mod:`evals.report.compare`)."""
    return html.escape("" if value is None else str(value), quote=True)


def _macro(name: str, *args: Any) -> str:
    return str(getattr(_templates().get_template("macros.html").module, name)(*args))


def badge(status: str | None) -> str:
    """A colored status pill."""
    return _macro("badge", status)


def page(title: str, body: str, *, script: str = "") -> str:
    """A complete HTML document with the shared styles around ``body`` (HTML, already escaped)."""
    return _templates().get_template("page.html").render(
        title=title, body=Markup(body), script=Markup(script)
    )


def outcome_bar(counts: Mapping[str, Any]) -> str:
    """A stacked bar: success, failure, error, not run."""
    return _macro("outcome_bar", counts)


def _duration(seconds: float | None) -> str:
    """As the CLIs print durations (``4m05s``, ``2h10m``); under a minute with a tenth of a
    second (``3.2s``), which tells one step from another."""
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{seconds:.1f}s"
    return format_duration(seconds)


def _when(value: object) -> str | None:
    """An ISO timestamp as ``2026-01-05 09:30:00 UTC`` (what a reader wants to see)."""
    try:
        moment = datetime.fromisoformat(str(value))
    except (TypeError, ValueError):
        return None if value is None else str(value)
    if moment.tzinfo is None:
        return moment.strftime("%Y-%m-%d %H:%M:%S")
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _run_duration(metadata: RunMetadata) -> float | None:
    try:
        start = datetime.fromisoformat(str(metadata.get("started_at")))
        end = datetime.fromisoformat(str(metadata.get("ended_at")))
    except ValueError:
        return None
    return (end - start).total_seconds()


def _clip(text: str, limit: int = TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit] + f"... ({len(text) - limit} more chars)"


@dataclass
class _Embedder:
    """Turns screenshots into thumbnails until the page's byte budget is spent."""

    budget: int
    used: int = 0
    skipped: int = 0

    def thumbnail(self, path: Path) -> str | None:
        """A ``data:`` URI of a downscaled JPEG, or ``None`` (missing, unreadable, over budget)."""
        if self.used >= self.budget:
            self.skipped += 1
            return None
        try:
            with Image.open(path) as image:
                image.thumbnail((THUMB_WIDTH, THUMB_WIDTH * 4))
                buffer = io.BytesIO()
                image.convert("RGB").save(buffer, format="JPEG", quality=THUMB_QUALITY)
        except (OSError, pil.UnidentifiedImageError, ValueError):
            return None
        data = base64.b64encode(buffer.getvalue()).decode("ascii")
        self.used += len(data)
        return _ImageUri(f"data:image/jpeg;base64,{data}")


def _safe_file(folder: Path, name: object) -> Path | None:
    """``folder/name`` if ``name`` is a plain file name (records must not point outside)."""
    if not isinstance(name, str) or not name or Path(name).name != name or name in (".", ".."):
        return None
    return folder / name


def _action_text(action: Mapping[str, Any]) -> tuple[str, str]:
    kind = str(action.get("type", "?"))
    body = action.get("command") or action.get("code") or ""
    if not body:  # a GUI action (click at x, y; type text...): show its fields
        body = ", ".join(f"{k}={v!r}" for k, v in action.items() if k not in ("type", "raw"))
    if not body and action.get("raw"):
        body = json.dumps(action["raw"], default=str)
    return kind, str(body)



def _step_view(
    step: StepRecord, folder: Path, link_prefix: str, embedder: _Embedder
) -> dict[str, Any]:
    """What the page shows of one step (the template escapes every value)."""
    shot = _safe_file(folder, step.screenshot)
    image: dict[str, Any]
    if shot is None:
        image = {"kind": "none"}
    elif not shot.is_file():
        image = {"kind": "missing", "name": shot.name}
    else:
        # a trial's folder is tasks/<id>/trial-<n>/ (evals.results.trials)
        where = (f"{quote(folder.parent.name)}/{quote(folder.name)}"
                 if folder.name.startswith("trial-") else quote(folder.name))
        href = f"{link_prefix}{where}/{quote(shot.name)}"
        uri = embedder.thumbnail(shot)
        image = ({"kind": "link", "name": shot.name, "href": href} if uri is None
                 else {"kind": "img", "href": href, "uri": uri})
    action = step.action or {}
    kind, body = _action_text(action if isinstance(action, Mapping) else {})
    usage = step.usage
    shown_usage = None
    if isinstance(usage, Mapping) and (usage.get("tokens_in") or usage.get("tokens_out")):
        shown_usage = {"model": usage.get("model") or "?", "tokens_in": usage.get("tokens_in") or 0,
                       "tokens_out": usage.get("tokens_out") or 0}
    result = ""
    if isinstance(step.result, Mapping):
        kept = {k: v for k, v in step.result.items() if v not in ("", None)}
        result = _clip(json.dumps(kept, default=str)) if kept else ""
    return {
        "index": step.index,
        "image": image,
        "marker": _click_marker(action if isinstance(action, Mapping) else {}, shot),
        "tree": _tree_text(folder, step.tree),
        "duration": _duration(step.duration_s),
        "kind": kind,
        "body": _clip(body) if body else "",
        "window_title": step.window_title or "",
        "usage": shown_usage,
        "error": _clip(str(step.error)) if step.error else "",
        "result": result,
    }


TREE_TEXT_LIMIT = 20_000
"""Characters of a step's accessibility tree shown on the page (the file holds the rest)."""
CLICK_TYPES = frozenset({"click", "double_click", "right_click", "move", "drag", "type"})


def _tree_text(folder: Path, tree: str | None) -> str:
    """The step's recorded accessibility tree (:func:`evals.results.records.save_tree`), clipped."""
    name = _safe_file(folder, tree)
    if name is None:
        return ""
    try:
        return _clip(read_tree(folder, name.name), TREE_TEXT_LIMIT)
    except (OSError, ValueError, EOFError):
        return ""


def _click_marker(action: Mapping[str, Any], shot: Path | None) -> dict[str, float] | None:
    """Where a pointer action landed on its screenshot, in percent of the picture (``left``,
    ``top``); ``None`` for other actions or without coordinates. Coordinates are pixels, or
    fractions of the screen when both are floats in [0, 1] (as the action takes them)."""
    x, y = action.get("x"), action.get("y")
    if action.get("type") not in CLICK_TYPES or not isinstance(x, int | float) \
            or not isinstance(y, int | float) or isinstance(x, bool) or isinstance(y, bool):
        return None
    if isinstance(x, float) and isinstance(y, float) and 0 <= x <= 1 and 0 <= y <= 1:
        return {"left": round(100 * x, 2), "top": round(100 * y, 2)}
    if shot is None or not shot.is_file():
        return None
    try:
        with Image.open(shot) as image:  # reads the header only
            width, height = image.size
    except (OSError, pil.UnidentifiedImageError, ValueError):
        return None
    if not (0 <= x <= width and 0 <= y <= height):
        return None
    return {"left": round(100 * x / width, 2), "top": round(100 * y / height, 2)}


def domain_whiskers(summary: Summary) -> Markup:
    """Per-domain success rates as dots with their 95% interval as whiskers (inline SVG: one
    row per domain, the axis from 0 to 100%); empty when no domain has an interval."""
    shown = [(d, row, ci) for d, row in summary["by_domain"].items()
             if (ci := summary["by_domain_ci"].get(d)) and row["success_rate"] is not None]
    if not shown:
        return Markup("")
    label_w, plot_w, row_h, top = 150, 420, 24, 8
    height = top + row_h * len(shown) + 24

    def x(rate: float) -> float:
        return label_w + plot_w * max(0.0, min(1.0, float(rate)))

    parts = [f'<svg class="domain-whiskers" xmlns="http://www.w3.org/2000/svg" '
             f'width="{label_w + plot_w + 20}" height="{height}" role="img" '
             'aria-label="success rate by domain with 95% intervals">']
    parts += [f'<line x1="{x(tick)}" y1="{top}" x2="{x(tick)}" y2="{height - 20}" '
              f'stroke="#eaeef2"/><text x="{x(tick)}" y="{height - 6}" font-size="10" '
              f'text-anchor="middle">{int(tick * 100)}%</text>' for tick in (0, 0.25, 0.5, 0.75, 1)]
    for i, (domain, row, ci) in enumerate(shown):
        y = top + row_h * i + row_h / 2
        low, high, rate = float(ci["low"]), float(ci["high"]), float(row["success_rate"])
        parts.append(
            f'<g class="domain" data-domain="{html.escape(domain)}">'
            f'<text x="{label_w - 8}" y="{y + 4}" font-size="12" text-anchor="end">'
            f'{html.escape(domain)}</text>'
            f'<line class="whisker" x1="{x(low):.1f}" y1="{y}" x2="{x(high):.1f}" y2="{y}" '
            'stroke="#57606a" stroke-width="2"/>'
            f'<line x1="{x(low):.1f}" y1="{y - 5}" x2="{x(low):.1f}" y2="{y + 5}" '
            'stroke="#57606a"/>'
            f'<line x1="{x(high):.1f}" y1="{y - 5}" x2="{x(high):.1f}" y2="{y + 5}" '
            'stroke="#57606a"/>'
            f'<circle class="rate" cx="{x(rate):.1f}" cy="{y}" r="5" fill="#1f5fa0">'
            f'<title>{html.escape(domain)}: {fmt_rate(rate)} [{fmt_rate(low)}, '
            f'{fmt_rate(high)}]</title></circle></g>')
    parts.append("</svg>")
    return Markup("".join(parts))


def _agent_facts(manifest: Mapping[str, Any] | None) -> list[tuple[str, Any]]:
    """The agent's class, arguments and model (``manifest.json``) for the page's header."""
    agent = (manifest or {}).get("agent") or {}
    arguments = agent.get("arguments") or {}
    return [
        ("agent class", agent.get("class")),
        ("arguments", " ".join(f"{k}={v}" for k, v in sorted(arguments.items())) or None),
        ("model", agent.get("model")),
    ]


def _task_view(
    record: TaskExecution, folder: Path, link_prefix: str, embedder: _Embedder
) -> dict[str, Any]:
    """What the page shows of one task's record."""
    status, task_id, trial, score = record.status.value, record.task_id, record.trial, record.score
    why = record.error_message or record.reason or ""
    error_type = None if record.error_type is None else record.error_type.value
    error_note = ""
    if status in ("error", "not_run"):
        error_note = _clip(f"{error_type or 'error'}: {record.error_message or ''}")
    fingerprint = record.fingerprint
    return {
        "status": status,
        "task_id": task_id,
        "trial": trial,
        "anchor": task_anchor(task_id) + (f"-trial-{trial}" if trial > 1 else ""),
        "domain": record.domain,
        "score": fmt_num(score, 2) if score is not None else "",
        "n_steps": len(record.steps),
        "duration": _duration(record.duration_s),
        "worker": record.worker or "",
        "why": why,
        "error_type": error_type,
        "instruction": record.instruction,
        "attempts": record.attempts,
        "infeasible": record.infeasible,
        "last_action": record.last_action or "",
        "reset": record.reset,
        "reset_s": None if record.reset_s is None else float(record.reset_s),
        "fingerprint": (
            None if not isinstance(fingerprint, Mapping)
            else {**fingerprint, "ok": fingerprint_ok(fingerprint)}
        ),
        "error_note": error_note,
        "agent_traceback": record.agent_traceback or "",
        "task_traceback": record.task_traceback or "",
        # a Cua-Bench variant's rewards, as its evaluate_task returned them
        "rewards": [fmt_num(r, 2) for r in record.reward_components or []
                    if isinstance(r, int | float)],
        # an OpenApps-style task's state difference (None for other tasks)
        "state_diff": _state_diff_view(record.state_diff),
        "reason": _clip(str(record.reason)) if record.reason else "",
        "reason_tone": "ok" if status == "success" else "bad",
        "previous": [
            {"attempt": p.attempt, "worker": p.worker, "error_type": p.error_type,
             "error_message": _clip(str(p.error_message or ""), 300)}
            for p in record.previous_attempts
        ],
        "steps": [_step_view(s, folder, link_prefix, embedder) for s in record.steps],
        "search": f"{task_id} {record.domain} {error_type or ''} {why}".lower(),
    }


def task_anchor(task_id: str) -> str:
    """The element id of a task's row: ``view.html#task-<id>`` opens and shows that task."""
    return f"task-{task_id}"


def _statistics_view(summary: Summary) -> dict[str, Any]:
    """The intervals, pass@k / pass^k and the flaky tasks (see
    :func:`evals.run.metrics.statistics`)."""
    k = summary["trials"]
    rows = [[name, fmt_rate(value) if rate else fmt_num(value), fmt_interval(ci, rate=rate),
             ci["method"] if ci else ""]
            for name, value, ci, rate in (
                ("success rate", summary["success_rate"], summary["success_rate_ci"], True),
                ("mean score", summary["avg_score"], summary["mean_score_ci"], False))]
    for label, doc in ((f"pass@{k}", summary["pass_at_k"]), (f"pass^{k}", summary["pass_all_k"])):
        rows.append([label, fmt_rate(doc.get("value")), "",
                     f"mean over {doc.get('tasks', 0)} task(s) with {k} scored trial(s)"])
    flaky = [
        {"anchor": task_anchor(str(f["task_id"])), "task_id": f["task_id"],
         "successes": int(f["successes"]), "outcomes": int(f["outcomes"])}
        for f in summary["flaky_tasks"]
    ]
    return {"trials": k, "rows": rows, "flaky": flaky}


def _styles_view(summary: Summary) -> list[list[str]]:
    """Each goal style beside the originals of the same tasks (``--variations``), with its
    paired difference as the summary prints it (:func:`evals.run.variations.difference_text`)."""
    return [[r["style"], f"{r['successes']}/{r['runs']}", fmt_rate(r.get("success_rate")),
             fmt_interval(r.get("success_rate_ci"), rate=True), fmt_num(r.get("mean_score")),
             str(r.get("errors", 0)),
             fmt_rate(r.get("original_success_rate")) if r["style"] != "original" else "",
             difference_text(r)]
            for r in summary["goal_styles"]]


def _manifest_view(
    manifest: Mapping[str, Any] | None, summary: Summary
) -> dict[str, Any] | None:
    """What the run measured (``manifest.json``, :mod:`evals.run.manifest`), in a few rows, and
    the pools its sessions ran on as the summary says them: the manifest is written when a run
    starts, so its pools are the first session's."""
    if manifest is None:
        return None
    sessions = sessions_fact(summary)
    extra = [] if sessions is None else [(sessions[0].lower(), sessions[1])]
    return {"name": MANIFEST + ("" if sessions is None else f" and {METADATA_FILE}"),
            "rows": [*summary_lines(manifest), *extra]}


def render_run(
    run_dir: Path | str,
    *,
    link_prefix: str = "tasks/",
    embed_budget_bytes: int = EMBED_BUDGET_BYTES,
    missing: list[str] | None = None,
) -> str:
    """The run's page as an HTML string (``evals/report/templates/run.html``).

    Args:
        run_dir: the run folder.
        link_prefix: how the page reaches ``<run_dir>/tasks/`` (full-size screenshot links).
        embed_budget_bytes: stop embedding thumbnails once they take this many bytes.
        missing: given, gets the trials the page says have no record
            (:func:`evals.results.run_reader.missing_of`), for a caller to say them too.

    Raises:
        InvalidRunInputError: the folder is not a run folder or a record is unreadable.
    """
    path = Path(run_dir)
    metadata = read_metadata(path)
    named = record_namer(metadata)  # the first pool's workers qualified, as in the summary
    # each record read once, for the summary and the rows
    found = [(folder, named(record)) for folder, record in read_record_folders(path)]
    records = [record for _, record in found]
    summary = summarize(metadata, records, run=path.name)
    embedder = _Embedder(embed_budget_bytes)
    tasks = [_task_view(r, folder, link_prefix, embedder) for folder, r in found]
    run_name = str(summary["run"])
    manifest = read_manifest(path)
    meta_bits = [
        ("agent", metadata.get("agent")),
        *_agent_facts(manifest),
        ("pool", f"{metadata.get('pool') or '-'} ({metadata.get('cloud') or '-'})"),
        ("tasks", len(metadata.get("task_ids") or []) or len(records)),
        ("max steps", metadata.get("max_steps")),
        ("started", _when(metadata.get("started_at"))),
        ("duration", _duration(_run_duration(metadata)) or None),
    ]
    cost = summary["cost"]
    show_cost = bool(cost["total_usd"] or summary["price_per_hour"] is not None or any(
        row.get("price_per_hour") is not None for row in (summary.get("by_pool") or {}).values()
    ))
    counts = {"all": len(records), "success": summary["successes"],
              "failure": summary["failures"], "error": summary["errors"],
              "not_run": summary["not_run"]}
    notes = []
    lost = missing_of(metadata, records)
    if lost:
        notes.append(missing_line(run_name, lost))
    if missing is not None:
        missing += lost
    if embedder.skipped:
        notes.append(f"{embedder.skipped} screenshot(s) not embedded to keep the page small; "
                     "their links open the files in the run folder.")
    notes.append("Screenshots show the screen before each step.")
    return _templates().get_template("run.html").render(
        title=f"{run_name} - run results",
        run_name=run_name,
        status=summary["status"],
        meta=[(k, v) for k, v in meta_bits if v not in (None, "")],
        warning=metadata.get("warning"),
        warning_cause=metadata.get("warning_cause"),
        saw_answers=summary["answer_visible_agents"],
        whiskers=domain_whiskers(summary),
        summary=summary,
        cost=cost,
        show_cost=show_cost,
        statistics=_statistics_view(summary),
        styles=_styles_view(summary),
        manifest=_manifest_view(manifest, summary),
        resets=summary["resets"],
        filters=[(k, n) for k, n in counts.items() if n or k == "all"],
        tasks=tasks,
        pending=summary["task_ids_pending"],
        notes=notes,
    )


def write_view(run_dir: Path | str, out: Path | str | None = None, force: bool = False,
               missing: list[str] | None = None) -> Path:
    """Render the run's page and write it (default ``<run_dir>/view.html``) through
    :func:`write_page`, whose rules it follows; returns its path. ``missing`` gets the trials
    without a record, as :func:`render_run` says.

    Raises:
        oa_vm.kit.safe_fs.ForeignFileError: the target is another file and ``force`` is not given.
        oa_vm.kit.safe_fs.UnsafePathError, oa_vm.kit.safe_fs.WriteFailedError: see
            :func:`write_page`.
    """
    path = Path(run_dir)
    target = Path(out) if out is not None else path / "view.html"
    check_page_target(target, force=force)
    relative = os.path.relpath(path / "tasks", target.parent).replace(os.sep, "/")
    prefix = "" if relative == "." else quote(relative.rstrip("/")) + "/"
    write_page(target, render_run(path, link_prefix=prefix, missing=missing), force=force)
    return target


def check_page_target(target: Path, *, force: bool = False) -> None:
    """Refuse, before anything is rendered, an ``--out`` that :func:`write_page` would refuse.

    Raises:
        oa_vm.kit.safe_fs.UnsafePathError: see :func:`oa_vm.kit.safe_fs.check_out`.
    """
    safe_fs.check_out(target, marker=GENERATOR_TAG.encode(), force=force)


def write_page(target: Path, html: str, *, force: bool = False) -> None:
    """Write a page of this project (a run's, a comparison's) through the one ``--out`` writer
    (:func:`oa_vm.kit.safe_fs.write_out`): an existing file is replaced only when it is a page this
    project wrote, or with ``force``; a symlink, a device or a missing folder is refused whatever
    ``force`` says (the folder is never made); the write is atomic.

    Raises:
        oa_vm.kit.safe_fs.UnsafePathError: see :func:`oa_vm.kit.safe_fs.check_out`.
        oa_vm.kit.safe_fs.WriteFailedError: the write failed (a full disk); names the target.
    """
    safe_fs.write_out(target, html, marker=GENERATOR_TAG.encode(), force=force)


def _state_diff_view(value: object) -> list[dict[str, str]] | None:
    """A record's ``state_diff`` as the page shows it (each value as compact JSON, clipped)."""
    if not isinstance(value, list):
        return None
    return [{"path": str(c.get("path", "")),
             "before": _clip(json.dumps(c.get("before"), sort_keys=True), 200),
             "after": _clip(json.dumps(c.get("after"), sort_keys=True), 200)}
            for c in value[:200] if isinstance(c, Mapping)]
