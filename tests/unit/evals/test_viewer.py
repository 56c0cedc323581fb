"""The run page: self-contained, escaped, well-formed, with thumbnails under a byte budget."""

from __future__ import annotations

import base64
import io
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image

from evals.errors import InvalidRunInputError
from evals.report.viewer import THUMB_WIDTH, render_run, write_view
from tests.support.run_folder import RunFolder

VOID = {"meta", "img", "input", "br", "hr", "link"}
HOSTILE = "<script>alert('x')</script>&\"quoted\""


class _Audit(HTMLParser):
    """Collects what the tests check: nesting, attributes that load things, visible text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.problems: list[str] = []
        self.sources: list[str] = []
        self.links: list[str] = []
        self.scripts = 0
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "script":
            self.scripts += 1
        if values.get("src") is not None:
            self.sources.append(str(values["src"]))
        if tag == "a" and values.get("href") is not None:
            self.links.append(str(values["href"]))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"unexpected </{tag}> with open {self.stack[-3:]}")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _audit(page: str) -> _Audit:
    audit = _Audit()
    audit.feed(page)
    audit.close()
    return audit


def _run(root: Path) -> Path:
    run = RunFolder(root, "view-run", agent="oracle", price_per_hour=0.5,
                    extra_metadata={"quarantined_workers": ["w9"]})
    run.add_task("ok-1", domain="notepad", status="success", steps=2, vm_usd=0.01,
                 reason="text matches")
    run.add_task("bad-&-<b>", domain="calc", status="failure", steps=1, reason=HOSTILE,
                 instruction=HOSTILE)
    run.add_task("err-1", domain="calc", status="error", error_type="infrastructure",
                 error_message=HOSTILE, steps=1, worker="w9", step_error=HOSTILE)
    run.add_task("skip-1", domain="vlc", status="not_run", error_type="budget",
                 error_message="budget cap reached")
    return run.finish()


def test_page_is_well_formed_and_self_contained(tmp_path: Path) -> None:
    audit = _audit(render_run(_run(tmp_path)))

    assert audit.problems == []
    assert audit.stack == []
    assert audit.scripts == 1  # the page's own filter script, nothing from a record
    assert audit.sources, "screenshots should be embedded"
    assert all(src.startswith("data:image/jpeg;base64,") for src in audit.sources)
    for href in audit.links:
        assert not re.match(r"^[a-z]+:", href), f"link leaves the page's folder: {href}"


def test_record_text_is_escaped(tmp_path: Path) -> None:
    page = render_run(_run(tmp_path))
    audit = _audit(page)
    text = "".join(audit.text)

    assert "<script>alert" not in page
    # Jinja2's autoescape (markupsafe) writes a quote as &#39;
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
    assert HOSTILE in text  # shown to the reader verbatim
    assert "bad-&-<b>" in text


def test_every_task_and_summary_is_shown(tmp_path: Path) -> None:
    text = "".join(_audit(render_run(_run(tmp_path))).text)

    for task_id in ("ok-1", "bad-&-<b>", "err-1", "skip-1"):
        assert task_id in text
    assert "50.0%" in text  # 1 success of 2 outcomes
    assert "outcomes only" in text
    assert "infrastructure" in text
    assert "budget cap reached" in text
    assert "quarantined" in text
    assert "text matches" in text
    assert "$0.0100" in text


def test_thumbnails_are_downscaled(tmp_path: Path) -> None:
    sources = _audit(render_run(_run(tmp_path))).sources
    data = base64.b64decode(sources[0].split(",", 1)[1])
    with Image.open(io.BytesIO(data)) as image:
        assert image.format == "JPEG"
        assert image.width == THUMB_WIDTH
        assert image.height == THUMB_WIDTH * 800 // 1280


def test_byte_budget_stops_embedding_but_keeps_links(tmp_path: Path) -> None:
    page = render_run(_run(tmp_path), embed_budget_bytes=1)
    audit = _audit(page)

    assert len(audit.sources) == 1  # the first thumbnail spends the whole budget
    assert "not embedded" in page
    assert "tasks/ok-1/step_001.png" in audit.links


def test_missing_and_escaping_screenshot_names(tmp_path: Path) -> None:
    run = RunFolder(tmp_path)
    folder = run.add_task("t", steps=2)
    path = run.finish()
    (folder / "step_000.png").unlink()
    execution = (folder / "execution.json").read_text(encoding="utf-8")
    (folder / "execution.json").write_text(
        execution.replace('"step_001.png"', '"../../metadata.json"'), encoding="utf-8")

    page = render_run(path)
    audit = _audit(page)
    assert "screenshot step_000.png is missing" in page
    assert audit.sources == []
    assert not any("metadata.json" in href for href in audit.links)


def test_unreadable_screenshot_is_not_fatal(tmp_path: Path) -> None:
    run = RunFolder(tmp_path)
    folder = run.add_task("t", steps=1)
    (folder / "step_000.png").write_bytes(b"not a png")
    page = render_run(run.finish())
    assert "(not embedded)" in page


def test_write_view_links_relative_to_the_page(tmp_path: Path) -> None:
    path = _run(tmp_path / "results")

    default = write_view(path)
    assert default == path / "view.html"
    assert "tasks/ok-1/step_000.png" in _audit(default.read_text(encoding="utf-8")).links

    (tmp_path / "pages").mkdir()  # --out never makes its folder
    elsewhere = write_view(path, tmp_path / "pages" / "run.html")
    links = _audit(elsewhere.read_text(encoding="utf-8")).links
    assert "../results/view-run/tasks/ok-1/step_000.png" in links
    assert (elsewhere.parent / links[0]).resolve().is_file()


def test_empty_run_renders(tmp_path: Path) -> None:
    run = RunFolder(tmp_path, status="running")
    run.task_ids = ["a", "b"]
    page = render_run(run.finish())
    assert "No task has a record yet" in page
    assert "Without a record yet: a, b" in page
    assert _audit(page).problems == []


def test_not_a_run_folder(tmp_path: Path) -> None:
    with pytest.raises(InvalidRunInputError):
        render_run(tmp_path / "missing")


def test_step_shows_model_usage(tmp_path: Path) -> None:
    run = RunFolder(tmp_path)
    folder = run.add_task("t", steps=1)
    path = run.finish()
    record = (folder / "execution.json").read_text(encoding="utf-8")
    (folder / "execution.json").write_text(record.replace(
        '"error": null\n', '"error": null, "usage": {"model": "gpt-4o", "tokens_in": 1200, '
        '"tokens_out": 35}\n', 1), encoding="utf-8")

    assert "model gpt-4o: 1200 tokens in, 35 out" in render_run(path)


def test_statistics_section_shows_the_intervals(tmp_path: Path) -> None:
    text = " ".join(_audit(render_run(_run(tmp_path))).text)

    assert "Statistics" in text
    # 1 success of 2 outcomes: Wilson with Poisson ends [0.0513 / 2, 1 - 0.0513 / 2]
    assert "[2.6%, 97.4%]" in text
    assert "pass@1" in text and "pass^1" in text


def test_trials_have_their_own_rows_and_screenshot_links(tmp_path: Path) -> None:
    import json
    import shutil

    run = RunFolder(tmp_path, "trials-run", extra_metadata={"trials": 2})
    run.add_task("t1", domain="notepad", status="success", steps=1)
    path = run.finish()
    task = path / "tasks" / "t1"
    trial = task / "trial-2"
    trial.mkdir()
    record = json.loads((task / "execution.json").read_text(encoding="utf-8"))
    record.update(trial=2, status="failure", score=0.0)
    (trial / "execution.json").write_text(json.dumps(record), encoding="utf-8")
    for png in task.glob("step_*.png"):
        shutil.copy(png, trial / png.name)
    page = render_run(path, embed_budget_bytes=1)  # links, not embedded thumbnails

    assert 'id="task-t1"' in page and 'id="task-t1-trial-2"' in page
    assert "tasks/t1/trial-2/step_000.png" in page
    text = " ".join(_audit(page).text)
    assert "trial 2" in text
    assert "Flaky tasks (1)" in text  # one success, one failure


def test_html_from_the_task_and_the_agent_is_escaped(tmp_path: Path) -> None:
    """An instruction, the agent's command, what the worker answered and the agent's traceback,
    each holding markup, reach the reader as text: no element of theirs exists on the page."""
    import json

    run = RunFolder(tmp_path)
    folder = run.add_task("t", steps=2, instruction='<img src=x onerror="alert(1)">Open it')
    crashed = run.add_task("c", status="error", error_type="agent", steps=1,
                           error_message="agent failed at step 0: RuntimeError: <b>no</b>")
    path = run.finish()
    record = json.loads((folder / "execution.json").read_text(encoding="utf-8"))
    record["steps"][0]["action"] = {"type": "execute", "command": "</pre><script>bad()</script>"}
    record["steps"][0]["result"] = {"output": "<iframe src=//evil>", "returncode": 0}
    (folder / "execution.json").write_text(json.dumps(record), encoding="utf-8")
    trace = ('Traceback (most recent call last):\n  File "agent.py", line 3, in act\n'
             '    raise RuntimeError("</pre></details><svg onload=x()>")\n'
             "RuntimeError: </pre></details><svg onload=x()>\n")
    record = json.loads((crashed / "execution.json").read_text(encoding="utf-8"))
    record["agent_traceback"] = trace
    (crashed / "execution.json").write_text(json.dumps(record), encoding="utf-8")
    page = render_run(path)
    audit = _audit(page)
    text = "".join(audit.text)

    assert audit.problems == [] and audit.stack == []
    assert audit.scripts == 1  # the page's own
    # the page draws its own charts as SVG: the injected element is the one with onload
    for markup in ("<img src=x", "<iframe", "<script>bad", "<svg onload", "<b>no"):
        assert markup not in page
    assert '<img src=x onerror="alert(1)">Open it' in text
    assert "</pre><script>bad()</script>" in text
    assert "<iframe src=//evil>" in text
    assert trace in text  # the whole traceback, as text, in its collapsible block
    assert page.count('<details class="traceback">') == 1


def test_durations_on_the_page_read_as_the_clis_print_them() -> None:
    from evals.report.viewer import _duration

    assert [_duration(s) for s in (None, 3.24, 65.0, 7800.0)] == ["", "3.2s", "1m05s", "2h10m"]
