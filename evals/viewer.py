"""The run viewer: one self-contained HTML page per run.

The page holds the summary, per-domain results, one row per task and each task's steps with the
screenshot taken before the step, its action, and the score or error. It loads nothing from
anywhere: styles and a few lines of script are inline, screenshots are embedded as downscaled JPEG
thumbnails (data URIs). Each thumbnail also links to its full-size PNG, relative to the page, for
when the page sits in its run folder.

Trade-offs: a full WAA sweep has thousands of screenshots, so thumbnails are small and the page
stops embedding them past a byte budget (the rest link to their files); every string from a record
(task IDs, instructions, commands, window titles, checker reasons) is escaped, because an agent or
a task can put anything there.
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
from pathlib import Path
from typing import Any
from urllib.parse import quote

from evals.errors import InvalidRunInputError
from evals.metrics import compute_summary, fmt_num, fmt_rate, read_execution_files, read_metadata
from evals.reset import fingerprint_ok

THUMB_WIDTH = 360
THUMB_QUALITY = 60
EMBED_BUDGET_BYTES = 20_000_000
TEXT_LIMIT = 2_000
STATUS_LABELS = {
    "success": "success",
    "failure": "failure",
    "error": "error",
    "not_run": "not run",
    "running": "running",
    "finished": "finished",
    "interrupted": "interrupted",
    "budget_stopped": "budget stopped",
}

CSS = """
:root { --ok:#1a7f37; --ok-bg:#dafbe1; --bad:#b42318; --bad-bg:#fee4e2; --err:#9a6700;
  --err-bg:#fff4cc; --skip:#57606a; --skip-bg:#eaeef2; --ink:#1f2328; --muted:#59636e;
  --line:#d1d9e0; --panel:#f6f8fa; --accent:#0b57d0; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
  color:var(--ink); background:#fff; }
header { padding:20px 28px 14px; border-bottom:1px solid var(--line); background:var(--panel); }
header h1 { margin:0 0 4px; font-size:22px; }
header .meta { color:var(--muted); }
header .meta span { margin-right:16px; white-space:nowrap; }
main { padding:18px 28px 40px; max-width:1400px; }
h2 { font-size:17px; margin:26px 0 10px; }
.cards { display:flex; flex-wrap:wrap; gap:12px; margin:4px 0 10px; }
.card { border:1px solid var(--line); border-radius:8px; padding:10px 14px; min-width:140px;
  background:#fff; }
.card .v { font-size:24px; font-weight:650; }
.card .k { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.04em; }
.card.hero { border-color:var(--accent); }
.card.hero .v { color:var(--accent); font-size:30px; }
.bar { display:flex; height:12px; border-radius:6px; overflow:hidden; background:var(--skip-bg);
  min-width:80px; }
.bar i { display:block; height:100%; }
.bar .s { background:var(--ok); } .bar .f { background:var(--bad); }
.bar .e { background:#d4a72c; } .bar .n { background:#afb8c1; }
.legend span { margin-right:14px; color:var(--muted); font-size:12px; }
.legend b { display:inline-block; width:10px; height:10px; border-radius:2px; margin-right:4px;
  vertical-align:-1px; }
table { border-collapse:collapse; width:100%; max-width:1100px; }
table.small { width:auto; min-width:420px; }
th, td { text-align:left; padding:6px 10px; border-bottom:1px solid var(--line);
  vertical-align:top; }
th { background:var(--panel); font-weight:600; font-size:12px; color:var(--muted);
  text-transform:uppercase; letter-spacing:.03em; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
td.nowrap { white-space:nowrap; } th.name { text-transform:none; }
.badge { display:inline-block; padding:1px 8px; border-radius:10px; font-size:12px;
  font-weight:600; white-space:nowrap; }
.b-success, .b-finished { color:var(--ok); background:var(--ok-bg); }
.b-failure { color:var(--bad); background:var(--bad-bg); }
.b-error, .b-interrupted, .b-budget_stopped { color:var(--err); background:var(--err-bg); }
.b-not_run, .b-running { color:var(--skip); background:var(--skip-bg); }
.b-improved { color:var(--ok); background:var(--ok-bg); }
.b-regressed { color:var(--bad); background:var(--bad-bg); }
.b-same { color:var(--skip); background:var(--skip-bg); }
.b-changed { color:var(--err); background:var(--err-bg); }
.filters { margin:6px 0 12px; display:flex; gap:8px; align-items:center; flex-wrap:wrap; }
.filters button { border:1px solid var(--line); background:#fff; border-radius:14px;
  padding:3px 12px; cursor:pointer; font:inherit; }
.filters button.on { background:var(--ink); color:#fff; border-color:var(--ink); }
.filters input { border:1px solid var(--line); border-radius:6px; padding:4px 8px; font:inherit;
  min-width:240px; }
details.task { border:1px solid var(--line); border-radius:8px; margin:6px 0; background:#fff; }
details.task > summary { list-style:none; cursor:pointer; padding:8px 12px; display:grid;
  grid-template-columns:92px minmax(180px,2.2fr) 1fr 50px 70px 70px 80px 2fr; gap:10px;
  align-items:center; }
details.task > summary::-webkit-details-marker { display:none; }
details.task > summary:hover { background:var(--panel); }
details.task[open] > summary { border-bottom:1px solid var(--line); background:var(--panel); }
.tid { font-family:ui-monospace,SFMono-Regular,Menlo,monospace; font-size:13px;
  overflow-wrap:anywhere; }
.muted { color:var(--muted); }
.why, .cut { overflow:hidden; text-overflow:ellipsis; white-space:nowrap; min-width:0; }
.why { color:var(--muted); font-size:12px; }
.tbody { padding:10px 14px 14px; }
.tbody .instr { margin:0 0 8px; }
.note { padding:6px 10px; border-radius:6px; margin:6px 0; }
.note.err { background:var(--err-bg); } .note.bad { background:var(--bad-bg); }
.note.ok { background:var(--ok-bg); }
.steps { display:grid; grid-template-columns:repeat(auto-fill,minmax(300px,1fr)); gap:10px;
  margin-top:8px; }
.step { border:1px solid var(--line); border-radius:6px; padding:8px; background:#fff; }
.step img { width:100%; height:auto; border:1px solid var(--line); border-radius:4px;
  display:block; }
.step .noimg { height:60px; display:flex; align-items:center; justify-content:center;
  background:var(--panel); color:var(--muted); border-radius:4px; font-size:12px;
  text-align:center; padding:4px; }
.step .head { display:flex; justify-content:space-between; margin:6px 0 4px; font-size:12px;
  color:var(--muted); }
code, pre { font-family:ui-monospace,SFMono-Regular,Menlo,monospace; font-size:12px; }
pre { background:var(--panel); padding:6px 8px; border-radius:4px; white-space:pre-wrap;
  overflow-wrap:anywhere; margin:4px 0 0; max-height:180px; overflow:auto; }
.act { font-weight:600; }
footer { color:var(--muted); font-size:12px; padding:10px 28px 30px; }
"""

SCRIPT = """
(function () {
  var state = 'all', text = '';
  function apply() {
    document.querySelectorAll('details.task').forEach(function (el) {
      var okStatus = state === 'all' || el.dataset.status === state;
      var okText = !text || el.dataset.search.indexOf(text) >= 0;
      el.style.display = okStatus && okText ? '' : 'none';
    });
  }
  document.querySelectorAll('.filters button').forEach(function (b) {
    b.addEventListener('click', function () {
      document.querySelectorAll('.filters button').forEach(function (o) {
        o.classList.remove('on'); });
      b.classList.add('on'); state = b.dataset.status; apply();
    });
  });
  function openHash() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id && document.getElementById(id);
    if (el && el.tagName === 'DETAILS') { el.open = true; el.scrollIntoView({block: 'nearest'}); }
  }
  window.addEventListener('hashchange', openHash); openHash();
  var box = document.getElementById('q');
  if (box) { box.addEventListener('input', function () {
    text = box.value.toLowerCase(); apply(); }); }
})();
"""


def esc(value: object) -> str:
    """HTML-escape any value (quotes included, so it is safe in attributes too)."""
    return html.escape("" if value is None else str(value), quote=True)


def badge(status: str | None) -> str:
    """A colored status pill."""
    key = status or "unknown"
    label = STATUS_LABELS.get(key, key)
    return f'<span class="badge b-{esc(key)}">{esc(label)}</span>'


# Marks the pages this project writes, so 'view' replaces its own page but no other file.
GENERATOR_TAG = '<meta name="generator" content="openadapt-evals">'


def page(title: str, body: str, *, script: str = "") -> str:
    """A complete HTML document with the shared styles."""
    tail = f"<script>{script}</script>" if script else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"{GENERATOR_TAG}"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>"
        f"<body>{body}{tail}</body></html>\n"
    )


def outcome_bar(counts: Mapping[str, Any]) -> str:
    """A stacked bar: success, failure, error, not run."""
    parts = [("s", counts.get("successes", 0)), ("f", counts.get("failures", 0)),
             ("e", counts.get("errors", 0)), ("n", counts.get("not_run", 0))]
    total = sum(int(n) for _, n in parts) or 1
    cells = "".join(
        f'<i class="{cls}" style="width:{100 * int(n) / total:.2f}%"></i>' for cls, n in parts if n
    )
    return f'<div class="bar">{cells}</div>'


def _card(key: str, value: str, *, hero: bool = False, sub: str = "") -> str:
    extra = f'<div class="muted">{sub}</div>' if sub else ""
    cls = "card hero" if hero else "card"
    return (f'<div class="{cls}"><div class="k">{esc(key)}</div>'
            f'<div class="v">{value}</div>{extra}</div>')


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _when(value: object) -> str | None:
    """An ISO timestamp as ``2026-01-05 09:30:00 UTC`` (what a reader wants to see)."""
    try:
        moment = datetime.fromisoformat(str(value))
    except (TypeError, ValueError):
        return None if value is None else str(value)
    if moment.tzinfo is None:
        return moment.strftime("%Y-%m-%d %H:%M:%S")
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _run_duration(metadata: Mapping[str, Any]) -> float | None:
    try:
        start = datetime.fromisoformat(str(metadata["started_at"]))
        end = datetime.fromisoformat(str(metadata["ended_at"]))
    except (KeyError, TypeError, ValueError):
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
        from PIL import Image, UnidentifiedImageError  # heavy; only the viewer needs it

        try:
            with Image.open(path) as image:
                image.thumbnail((THUMB_WIDTH, THUMB_WIDTH * 4))
                buffer = io.BytesIO()
                image.convert("RGB").save(buffer, format="JPEG", quality=THUMB_QUALITY)
        except (OSError, UnidentifiedImageError, ValueError):
            return None
        data = base64.b64encode(buffer.getvalue()).decode("ascii")
        self.used += len(data)
        return f"data:image/jpeg;base64,{data}"


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


def _step_html(
    step: Mapping[str, Any], folder: Path, link_prefix: str, embedder: _Embedder
) -> str:
    index = step.get("index", "?")
    shot = _safe_file(folder, step.get("screenshot"))
    if shot is None:
        image = '<div class="noimg">no screenshot</div>'
    elif not shot.is_file():
        image = f'<div class="noimg">screenshot {esc(shot.name)} is missing</div>'
    else:
        # a trial's folder is tasks/<id>/trial-<n>/ (evals.trials)
        where = (f"{quote(folder.parent.name)}/{quote(folder.name)}"
                 if folder.name.startswith("trial-") else quote(folder.name))
        href = esc(f"{link_prefix}{where}/{quote(shot.name)}")
        uri = embedder.thumbnail(shot)
        if uri is None:
            image = (f'<div class="noimg"><a href="{href}">{esc(shot.name)}</a>'
                     "&nbsp;(not embedded)</div>")
        else:
            image = (f'<a href="{href}"><img loading="lazy" src="{uri}" '
                     f'alt="screenshot before step {esc(index)}"></a>')
    action = step.get("action") or {}
    kind, body = _action_text(action if isinstance(action, Mapping) else {})
    parts = [
        image,
        f'<div class="head"><span>step {esc(index)}</span>'
        f"<span>{esc(_duration(step.get('duration_s')))}</span></div>",
        f'<div><span class="act">{esc(kind)}</span></div>',
    ]
    if body:
        parts.append(f"<pre>{esc(_clip(body))}</pre>")
    if step.get("window_title"):
        parts.append(f'<div class="muted">window: {esc(step["window_title"])}</div>')
    usage = step.get("usage")
    if isinstance(usage, Mapping) and (usage.get("tokens_in") or usage.get("tokens_out")):
        parts.append(
            f'<div class="muted">model {esc(usage.get("model") or "?")}: '
            f'{esc(usage.get("tokens_in") or 0)} tokens in, '
            f'{esc(usage.get("tokens_out") or 0)} out</div>'
        )
    if step.get("error"):
        parts.append(f'<div class="note err">{esc(_clip(str(step["error"])))}</div>')
    elif isinstance(step.get("result"), Mapping):
        result = {k: v for k, v in step["result"].items() if v not in ("", None)}
        if result:
            parts.append(f"<pre>{esc(_clip(json.dumps(result, default=str)))}</pre>")
    return f'<div class="step">{"".join(parts)}</div>'


def _task_html(
    record: Mapping[str, Any], folder: Path, link_prefix: str, embedder: _Embedder
) -> str:
    status = str(record.get("status"))
    task_id = str(record.get("task_id"))
    trial = int(record.get("trial") or 1)
    anchor = task_anchor(task_id) + (f"-trial-{trial}" if trial > 1 else "")
    steps = record.get("steps") or []
    score = record.get("score")
    why = record.get("error_message") or record.get("reason") or ""
    error_type = record.get("error_type")
    summary_cells = [
        badge(status),
        f'<span class="tid">{esc(task_id)}</span>'
        + (f' <span class="muted">trial {trial}</span>' if trial > 1 else ""),
        f'<span class="muted">{esc(record.get("domain"))}</span>',
        f'<span class="num">{esc(fmt_num(score, 2) if score is not None else "")}</span>',
        f'<span class="muted">{len(steps)} step{"" if len(steps) == 1 else "s"}</span>',
        f'<span class="muted">{esc(_duration(record.get("duration_s")))}</span>',
        f'<span class="muted cut" title="{esc(record.get("worker") or "")}">'
        f'{esc(record.get("worker") or "")}</span>',
        f'<span class="why" title="{esc(why)}">'
        f'{esc(error_type + ": " if error_type else "")}{esc(why)}</span>',
    ]
    body = [f'<p class="instr"><b>Instruction:</b> {esc(record.get("instruction"))}</p>']
    facts = [f"attempts {esc(record.get('attempts', 0))}"]
    if record.get("infeasible"):
        facts.append("infeasible task")
    if record.get("last_action"):
        facts.append(f"last action <code>{esc(record['last_action'])}</code>")
    facts += _reset_facts(record)
    body.append(f'<div class="muted">{" &middot; ".join(facts)}</div>')
    if status == "error" or status == "not_run":
        message = f"{error_type or 'error'}: {record.get('error_message') or ''}"
        body.append(f'<div class="note err">{esc(_clip(message))}</div>')
    if record.get("reason"):
        tone = "ok" if status == "success" else "bad"
        body.append(f'<div class="note {tone}">checker: {esc(_clip(str(record["reason"])))}</div>')
    for previous in record.get("previous_attempts") or []:
        if isinstance(previous, Mapping):
            body.append(
                f'<div class="muted">earlier attempt {esc(previous.get("attempt"))} on '
                f'{esc(previous.get("worker"))}: {esc(previous.get("error_type"))}: '
                f'{esc(_clip(str(previous.get("error_message") or ""), 300))}</div>'
            )
    if steps:
        cards = "".join(
            _step_html(s, folder, link_prefix, embedder) for s in steps if isinstance(s, Mapping)
        )
        body.append(f'<div class="steps">{cards}</div>')
    search = f"{task_id} {record.get('domain')} {error_type or ''} {why}".lower()
    return (
        f'<details class="task" id="{esc(anchor)}" data-status="{esc(status)}" '
        f'data-search="{esc(search)}">'
        f"<summary>{''.join(summary_cells)}</summary>"
        f'<div class="tbody">{"".join(body)}</div></details>'
    )


def _reset_facts(record: Mapping[str, Any]) -> list[str]:
    """``reset clean in 0.08 s``, and the fingerprint's verdict (see :mod:`evals.reset`)."""
    kind = record.get("reset")
    if not kind:
        return []
    took = record.get("reset_s")
    facts = [f"reset {esc(kind)}" + (f" in {float(took):.2f} s" if took is not None else "")]
    fingerprint = record.get("fingerprint")
    if isinstance(fingerprint, Mapping):
        if fingerprint_ok(fingerprint):
            facts.append(f"fingerprint ok (<code>{esc(fingerprint.get('token'))}</code>)")
        else:
            facts.append(
                f'<span class="bad">fingerprint NOT clean: token '
                f'<code>{esc(fingerprint.get("token"))}</code>, expected '
                f'<code>{esc(fingerprint.get("expected"))}</code>, marker '
                f'{"gone" if fingerprint.get("marker_gone") else "still there"}</span>'
            )
    return facts


def task_anchor(task_id: str) -> str:
    """The element id of a task's row: ``view.html#task-<id>`` opens and shows that task."""
    return f"task-{task_id}"


def _domain_table(by_domain: Mapping[str, Mapping[str, Any]]) -> str:
    rows = "".join(
        f"<tr><td>{esc(domain)}</td><td class='num'>{d['attempts']}</td>"
        f"<td class='num'>{d['successes']}</td><td class='num'>{d['failures']}</td>"
        f"<td class='num'>{d['errors']}</td><td class='num'>{d.get('not_run', 0)}</td>"
        f"<td class='num'>{fmt_rate(d['success_rate'])}</td>"
        f"<td class='num'>{fmt_num(d['avg_score'])}</td><td>{outcome_bar(d)}</td></tr>"
        for domain, d in by_domain.items()
    )
    return (
        "<table><tr><th>domain</th><th class='num'>attempts</th><th class='num'>success</th>"
        "<th class='num'>failure</th><th class='num'>errors</th><th class='num'>not run</th>"
        "<th class='num'>success rate</th><th class='num'>avg score</th><th>outcomes</th></tr>"
        f"{rows}</table>"
    )


def _small_table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="small"><tr>{head}</tr>{body}</table>'


def _statistics_section(summary: Mapping[str, Any]) -> list[str]:
    """The intervals, pass@k / pass^k and the flaky tasks (see :func:`evals.metrics.statistics`)."""
    from evals.metrics import fmt_interval

    if "success_rate_ci" not in summary:
        return []
    k = int(summary.get("trials") or 1)
    rows = []
    for name, key, ci_key, rate in (
        ("success rate", "success_rate", "success_rate_ci", True),
        ("mean score", "avg_score", "mean_score_ci", False),
    ):
        ci = summary.get(ci_key)
        value = fmt_rate(summary.get(key)) if rate else fmt_num(summary.get(key))
        rows.append([esc(name), esc(value), esc(fmt_interval(ci, rate=rate)),
                     esc(ci["method"]) if ci else ""])
    pass_at, pass_all = summary.get("pass_at_k") or {}, summary.get("pass_all_k") or {}
    for label, doc in ((f"pass@{k}", pass_at), (f"pass^{k}", pass_all)):
        rows.append([esc(label), esc(fmt_rate(doc.get("value"))), "",
                     esc(f"mean over {doc.get('tasks', 0)} task(s) with {k} scored trial(s)")])
    html = ["<h2>Statistics</h2>",
            _small_table(["", "estimate", "95% interval", "how"], rows)]
    flaky = summary.get("flaky_tasks") or []
    if flaky:
        items = "".join(
            f'<li><a href="#{esc(task_anchor(str(f["task_id"])))}">{esc(f["task_id"])}</a> '
            f'{int(f["successes"])}/{int(f["outcomes"])} success</li>'
            for f in flaky
        )
        html.append(f"<h3>Flaky tasks ({len(flaky)}): trials disagree</h3><ul>{items}</ul>")
    elif k > 1:
        html.append('<p class="muted">No flaky task: every task\'s trials agree.</p>')
    return html


def _styles_section(summary: Mapping[str, Any]) -> list[str]:
    """Each goal style beside the originals of the same tasks (``--variations``)."""
    from evals.metrics import fmt_interval

    styles = summary.get("goal_styles") or []
    if not styles:
        return []
    rows = [[esc(r["style"]), esc(f"{r['successes']}/{r['runs']}"),
             esc(fmt_rate(r.get("success_rate"))),
             esc(fmt_interval(r.get("success_rate_ci"), rate=True)),
             esc(fmt_num(r.get("mean_score"))), esc(str(r.get("errors", 0))),
             esc(fmt_rate(r.get("original_success_rate")) if r["style"] != "original" else "")]
            for r in styles]
    return ["<h2>Goal styles</h2>",
            '<p class="muted">The same tasks with the instruction reworded; the checker is the '
            "original's.</p>",
            _small_table(["style", "succeeded", "rate", "95% interval", "mean score", "errors",
                          "originals of these tasks"], rows)]


def _manifest_section(run_dir: Path) -> list[str]:
    """What the run measured (``manifest.json``, :mod:`evals.manifest`), in a few rows."""
    from evals.manifest import MANIFEST, read_manifest, summary_lines

    manifest = read_manifest(run_dir)
    if manifest is None:
        return []
    rows = [[esc(label), f"<code>{esc(value)}</code>"] for label, value in summary_lines(manifest)]
    return ["<h2>What was measured</h2>",
            _small_table(["", f"from {MANIFEST}"], rows)]


def render_run(
    run_dir: Path | str,
    *,
    link_prefix: str = "tasks/",
    embed_budget_bytes: int = EMBED_BUDGET_BYTES,
) -> str:
    """The run's page as an HTML string.

    Args:
        run_dir: the run folder.
        link_prefix: how the page reaches ``<run_dir>/tasks/`` (full-size screenshot links).
        embed_budget_bytes: stop embedding thumbnails once they take this many bytes.

    Raises:
        InvalidRunInputError: the folder is not a run folder or a record is unreadable.
    """
    path = Path(run_dir)
    metadata = read_metadata(path)
    summary = compute_summary(path)
    records = read_execution_files(path)
    embedder = _Embedder(embed_budget_bytes)
    tasks_html = "".join(_task_html(r, folder, link_prefix, embedder) for folder, r in records)

    run_name = str(summary["run"])
    meta_bits = [
        ("agent", metadata.get("agent")),
        ("pool", f"{metadata.get('pool') or '-'} ({metadata.get('cloud') or '-'})"),
        ("tasks", len(metadata.get("task_ids") or []) or len(records)),
        ("max steps", metadata.get("max_steps")),
        ("started", _when(metadata.get("started_at"))),
        ("duration", _duration(_run_duration(metadata)) or None),
    ]
    meta = "".join(
        f"<span><b>{esc(k)}</b> {esc(v)}</span>" for k, v in meta_bits if v not in (None, "")
    )
    header = (
        f"<header><h1>{esc(run_name)} {badge(summary.get('status'))}</h1>"
        f'<div class="meta">{meta}</div></header>'
    )
    warning = metadata.get("warning")
    if warning:
        # An unhealthy run says so before any figure (its success rate is not a result).
        header += (
            '<div class="warning" role="alert" style="background:#fff4e5;border:2px solid '
            '#d4a72c;padding:.6em 1em;margin:.6em 0;font-weight:600">'
            f"Unhealthy run: {esc(warning)}. The figures below are not a result.</div>"
        )
    cost = summary["cost"]
    cards = [
        _card("success rate", esc(fmt_rate(summary["success_rate"])), hero=True,
              sub="outcomes only"),
        _card("outcomes", str(summary["outcomes"]),
              sub=f"{summary['successes']} success &middot; {summary['failures']} failure"),
        _card("errors", str(summary["errors"])),
        _card("avg score", esc(fmt_num(summary["avg_score"]))),
        _card("avg steps", esc(fmt_num(summary["avg_steps"], 1))),
    ]
    if summary["not_run"]:
        cards.insert(3, _card("not run", str(summary["not_run"]), sub="budget cap"))
    if cost.get("total_usd") or summary.get("price_per_hour") is not None or any(
        row.get("price_per_hour") is not None for row in (summary.get("by_pool") or {}).values()
    ):
        cards.append(_card("cost", f"${float(cost['total_usd']):.4f}",
                           sub=f"VM ${float(cost['vm_usd']):.4f} &middot; "
                               f"model ${float(cost['model_usd']):.4f}"))
    legend = (
        '<div class="legend"><span><b style="background:var(--ok)"></b>success</span>'
        '<span><b style="background:var(--bad)"></b>failure</span>'
        '<span><b style="background:#d4a72c"></b>error</span>'
        '<span><b style="background:#afb8c1"></b>not run</span></div>'
    )
    sections = [
        "<h2>Summary</h2>",
        f'<div class="cards">{"".join(cards)}</div>',
        f'<div style="max-width:720px">{outcome_bar(summary)}</div>{legend}',
    ]
    sections += _statistics_section(summary)
    sections += _styles_section(summary)
    sections += _manifest_section(path)
    if summary["by_domain"]:
        sections += ["<h2>By domain</h2>", _domain_table(summary["by_domain"])]
    if summary["by_error_type"]:
        rows = [[badge("not_run" if kind == "budget" else "error"), esc(kind), str(n)]
                for kind, n in summary["by_error_type"].items()]
        sections += ["<h2>Errors by type</h2>", _small_table(["", "type", "tasks"], rows)]
    if summary.get("by_pool"):  # a run over several pools: where the tasks ran
        rows = [
            [esc(name), esc(row.get("cloud")),
             "n/a" if row.get("price_per_hour") is None else f"{row['price_per_hour']:g}",
             str(row["workers"]), str(row["tasks"]), str(row["successes"]),
             str(row["failures"]), str(row["errors"]), f"${float(row['total_usd']):.4f}"]
            for name, row in summary["by_pool"].items()
        ]
        sections += ["<h2>Pools</h2>", _small_table(
            ["pool", "cloud", "$/hour", "workers", "tasks", "success", "failure", "errors",
             "cost"], rows)]
    if summary["workers"]:
        rows = [
            [esc(name), str(w["tasks"]), str(w["errors"]),
             badge("error") + " quarantined" if w["quarantined"] else ""]
            for name, w in summary["workers"].items()
        ]
        sections += ["<h2>Workers</h2>", _small_table(["worker", "tasks", "errors", ""], rows)]
    resets = summary.get("resets") or {}
    if resets.get("counts"):
        timings = resets.get("seconds") or {}
        rows = [
            [esc(kind), str(n),
             f"{timings[kind]['median']:.2f} s" if kind in timings else "",
             f"{timings[kind]['max']:.2f} s" if kind in timings else ""]
            for kind, n in resets["counts"].items()
        ]
        sections += ["<h2>Resets</h2>", _small_table(["reset", "tasks", "median", "max"], rows)]
        if resets.get("warning"):
            sections.append(f'<div class="note err">{esc(resets["warning"])}</div>')
        elif resets.get("fingerprints_agree"):
            sections.append('<p class="muted">Fingerprints agree: every clean reset showed its '
                            "worker's snapshot, with the after-snapshot marker gone.</p>")
    counts = {"all": len(records), "success": summary["successes"],
              "failure": summary["failures"], "error": summary["errors"],
              "not_run": summary["not_run"]}
    buttons = "".join(
        f'<button data-status="{k}"{" class=on" if k == "all" else ""}>'
        f"{esc(STATUS_LABELS.get(k, k))} ({n})</button>"
        for k, n in counts.items() if n or k == "all"
    )
    sections += [
        "<h2>Tasks</h2>",
        f'<div class="filters">{buttons}'
        '<input id="q" type="search" placeholder="filter by task, domain or error"></div>',
        tasks_html or '<p class="muted">No task has a record yet.</p>',
    ]
    if summary["task_ids_pending"]:
        pending = ", ".join(esc(t) for t in summary["task_ids_pending"])
        sections.append(f'<p class="muted">Without a record yet: {pending}</p>')
    notes = []
    if embedder.skipped:
        notes.append(f"{embedder.skipped} screenshot(s) not embedded to keep the page small; "
                     "their links open the files in the run folder.")
    notes.append("Screenshots show the screen before each step.")
    footer = f"<footer>{esc(' '.join(notes))}</footer>"
    return page(f"{run_name} - run results", header + "<main>" + "".join(sections) + "</main>"
                + footer, script=SCRIPT)


def write_view(run_dir: Path | str, out: Path | str | None = None, force: bool = False) -> Path:
    """Render the run's page and write it (default ``<run_dir>/view.html``); returns its path.

    An existing file is replaced only when it is a page this project wrote, or with ``force``;
    a symlink, a device or a missing folder is refused whatever ``force`` says (one line each,
    :mod:`oa_vm.safe_fs`), and the page is written atomically, so an interrupted write leaves
    the old file whole.

    Raises:
        InvalidRunInputError: the target is another file and ``force`` is not given.
        oa_vm.safe_fs.UnsafePathError: the target is a symlink, a device, or its folder is
            missing or someone else's.
        oa_vm.safe_fs.WriteFailedError: the write failed (a full disk); names the target.
    """
    from oa_vm import safe_fs

    path = Path(run_dir)
    target = Path(out) if out is not None else path / "view.html"
    if safe_fs.exists_as_file(target) and not force and not _is_our_page(target):
        raise InvalidRunInputError(
            f"{target} exists and is not a page openadapt-evals wrote; choose another --out, "
            "or pass --force to replace it"
        )
    relative = os.path.relpath(path / "tasks", target.parent).replace(os.sep, "/")
    prefix = "" if relative == "." else quote(relative.rstrip("/")) + "/"
    safe_fs.write_atomic(target, render_run(path, link_prefix=prefix), make_parents=False)
    return target


def _is_our_page(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return GENERATOR_TAG.encode() in head
