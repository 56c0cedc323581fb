"""The UI-change study: do scripted arms survive a restyled or renamed records app?

The records app (:mod:`evals.extradup.records_app`) is served to a worker's browser under three
conditions: ``clean``; ``theme`` (restyled: colours, fonts, borders; the layout kept);
``rename`` (``Open`` -> ``View``, ``Save Encounter`` -> ``Submit Encounter``). Each arm enters
the task's encounter through the worker's input path (pyautogui clicks and typing, as an agent
sends them), ``runs`` times per condition, each run on a fresh window. Arms:

- ``by-position``: clicks where the elements were on the clean app (positions read once, at the
  start of the study, as a recorder would have captured them);
- ``by-name``: finds each button by its visible label, as a selector script does;
- ``by-role``: finds each element by its place in the page (the patient's row, the form's
  submit button), as a recorded replay that matches structure rather than text does.

A run counts as a success only when the app's store, read back from the page after the arm
ended, holds exactly the encounter asked for, and nothing else (the ``store`` reward of
:mod:`evals.extradup`). What the arm itself claims is never counted. If the readback fails,
the study refuses to count at all (:class:`ReadbackError`): a success that could not be
confirmed is not a success.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from evals.errors import InvalidRunInputError
from evals.extradup import Case, store_reward
from evals.extradup.records_app import EXPECTED, PATIENTS
from waa_client.waa import WaaClient

CONDITIONS = ("clean", "theme", "rename")
ARMS = ("by-role", "by-position", "by-name")
LABELS = {"clean": ("Open", "Save Encounter"), "theme": ("Open", "Save Encounter"),
          "rename": ("View", "Submit Encounter")}
FIELD_LABELS = {"visit_date": "Visit date", "reason": "Reason", "diagnosis": "Diagnosis"}
WINDOW = {"x": 40, "y": 40, "width": 760, "height": 560}
STORE_SCRIPT = "JSON.stringify(window.appStore === undefined ? null : window.appStore)"


class ReadbackError(RuntimeError):
    """The store could not be read back: the study refuses to count the run."""


class ArmStopped(RuntimeError):
    """An arm could not find what it looks for (it stops there, as a script does)."""


def page(condition: str) -> str:
    """The records app's page under a condition (the same layout in every one)."""
    open_label, save_label = LABELS[condition]
    themed = condition == "theme"
    style = (
        "body{margin:0;font:14px sans-serif;background:#fff;color:#111}"
        "table{border-collapse:collapse;margin:12px}td{height:36px;width:150px;padding:0 6px}"
        "button{width:150px;height:30px}input{width:300px;height:26px}"
        "label{display:inline-block;width:120px}.row{height:40px;margin-left:12px}"
        "#banner{height:24px;margin-left:12px}"
    )
    if themed:
        style += ("body{font-family:serif;background:#1e2430;color:#e8e8e8}"
                  "button{background:#3a6ea5;color:#fff;border:2px solid #9cc3ff;border-radius:8px}"
                  "input{background:#2b3342;color:#fff;border:1px solid #9cc3ff}")
    rows = "".join(
        f'<tr data-patient="{pid}"><td>{pid}</td><td>{name}</td>'
        f'<td><button type="button" onclick="openForm(\'{pid}\')">{open_label}</button></td></tr>'
        for pid, name in PATIENTS.items())
    inputs = "".join(
        f'<div class="row"><label for="{key}">{text}</label><input id="{key}" name="{key}"></div>'
        for key, text in FIELD_LABELS.items())
    return f"""<!doctype html><html><head><title>Clinic records</title><style>{style}</style>
</head><body><table>{rows}</table>
<form id="encounter" onsubmit="return save(event)" style="visibility:hidden">
<div class="row">Patient <span id="patient"></span></div>{inputs}
<div class="row"><button type="submit">{save_label}</button></div></form>
<div id="banner"></div>
<script>
window.appStore = [];
let current = null;
function openForm(pid) {{ current = pid; document.getElementById("patient").textContent = pid;
  document.getElementById("encounter").style.visibility = "visible"; }}
function save(event) {{ event.preventDefault(); if (!current) return false;
  const record = {{patient_id: current}};
  for (const key of {json.dumps(list(FIELD_LABELS))})
    record[key] = document.getElementById(key).value;
  window.appStore.push(record); document.getElementById("banner").textContent = "Saved";
  return false; }}
</script></body></html>"""


_CENTRE = ("(() => {{ const e = {finder}; if (!e) return null;"
           " const r = e.getBoundingClientRect();"
           " return [Math.round(window.screenX + r.left + r.width / 2),"
           " Math.round(window.screenY + r.top + r.height / 2)]; }})()")


def _by_role(step: str) -> str:
    pid = EXPECTED["patient_id"]
    if step == "open":
        return f'document.querySelector(\'tr[data-patient="{pid}"] button\')'
    if step == "save":
        return "document.querySelector('#encounter button[type=submit]')"
    return f"document.getElementById({json.dumps(step)})"


def _by_name(step: str) -> str:
    pid = EXPECTED["patient_id"]
    if step == "open":  # the button labelled Open in the patient's row
        return ("[...document.querySelectorAll('tr')].filter(r => r.textContent.includes("
                f"{json.dumps(pid)})).flatMap(r => [...r.querySelectorAll('button')])"
                ".find(b => b.textContent.trim() === 'Open')")
    if step == "save":
        return ("[...document.querySelectorAll('button')].find(b => b.textContent.trim() === "
                "'Save Encounter')")
    label = FIELD_LABELS[step]
    return ("(() => { const l = [...document.querySelectorAll('label')].find(x => "
            f"x.textContent.trim() === {json.dumps(label)}); "
            "return l ? document.getElementById(l.htmlFor) : null; })()")


@dataclass
class Worker:
    """The worker's browser and input path, as the study uses them."""

    waa: WaaClient
    timeout: float = 60.0

    def launch(self, html: str) -> str:
        """A fresh window showing ``html`` (every other browser window closed)."""
        self.waa.browser("close_all", {}, timeout=self.timeout)
        answer = self.waa.browser("launch", {"html": html, "title": "Clinic records",
                                             **WINDOW}, timeout=self.timeout)
        return str(answer["id"])

    def evaluate(self, window: str, script: str) -> Any:
        """JavaScript's value in the window."""
        return self.waa.browser("evaluate", {"id": window, "script": script},
                                timeout=self.timeout).get("value")

    def send(self, source: str) -> None:
        """pyautogui source through ``/execute_windows``, as an agent's action goes."""
        answer = self.waa.execute_windows(f"import pyautogui; {source}", timeout=self.timeout)
        if answer.get("returncode", 0) not in (0, None):
            raise ArmStopped(f"the worker refused {source}: {answer.get('error')}")


def positions(worker: Worker) -> dict[str, tuple[int, int]]:
    """Where every element the task uses sits on the clean app (the by-position recording)."""
    window = worker.launch(page("clean"))
    found: dict[str, tuple[int, int]] = {}
    for step in ("open", *FIELD_LABELS, "save"):
        point = worker.evaluate(window, _CENTRE.format(finder=_by_role(step)))
        if not isinstance(point, list):
            raise RuntimeError(f"the clean records app has no element for {step!r}")
        found[step] = (int(point[0]), int(point[1]))
    return found


def play(worker: Worker, window: str, arm: str, recorded: dict[str, tuple[int, int]]) -> None:
    """Enter the encounter with one arm. Raises ArmStopped where the arm finds nothing."""
    for step in ("open", *FIELD_LABELS, "save"):
        if arm == "by-position":
            x, y = recorded[step]
        else:
            finder = _by_role(step) if arm == "by-role" else _by_name(step)
            point = worker.evaluate(window, _CENTRE.format(finder=finder))
            if not isinstance(point, list):
                raise ArmStopped(f"{arm}: nothing to click for {step!r}")
            x, y = int(point[0]), int(point[1])
        worker.send(f"pyautogui.click({x}, {y})")
        if step in FIELD_LABELS:
            worker.send(f"pyautogui.typewrite({EXPECTED[step]!r})")


def read_store(worker: Worker, window: str) -> list[dict[str, str]]:
    """The app's store, read from the page (never from the screen).

    Raises:
        ReadbackError: the page did not answer a list of records.
    """
    try:
        text = worker.evaluate(window, STORE_SCRIPT)
        store = json.loads(text) if isinstance(text, str) else None
    except Exception as exc:  # the worker, the page or the JSON: the readback failed
        raise ReadbackError(f"reading the store failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(store, list) or not all(isinstance(r, dict) for r in store):
        raise ReadbackError(f"the store read back is not a list of records: {str(text)[:80]}")
    return store


Readback = Callable[[Worker, str], list[dict[str, str]]]


@dataclass
class Cell:
    """One condition x arm: its runs' outcomes."""

    successes: int = 0
    runs: int = 0
    stopped: int = 0
    seconds: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def run_study(worker: Worker, arms: Sequence[str], runs: int,
              conditions: Sequence[str] = CONDITIONS, readback: Readback = read_store,
              say: Callable[[str], None] = lambda _line: None) -> dict[str, dict[str, Cell]]:
    """Every condition x arm, ``runs`` times; cells by condition, then arm.

    Raises:
        ReadbackError: a run's store could not be read back (nothing is counted).
    """
    recorded = positions(worker)
    cells = {c: {a: Cell() for a in arms} for c in conditions}
    for condition in conditions:
        for arm in arms:
            cell = cells[condition][arm]
            for index in range(runs):
                window = worker.launch(page(condition))
                started = time.monotonic()
                try:
                    play(worker, window, arm, recorded)
                except ArmStopped as exc:
                    cell.stopped += 1
                    cell.notes.append(str(exc))
                seconds = time.monotonic() - started
                store = readback(worker, window)
                case = Case(screen={}, store=store, expected=dict(EXPECTED))
                confirmed = bool(store_reward(case))
                cell.runs += 1
                cell.successes += confirmed
                cell.seconds.append(round(seconds, 3))
                say(f"{condition} {arm} run {index + 1}: "
                    f"{'saved, confirmed by the store' if confirmed else 'no correct record'}"
                    f" ({len(store)} record(s) stored, {seconds:.1f}s)")
    return cells


def check_arms(text: str) -> list[str]:
    """``--agents A,B,C`` -> the arms, refused in one line if one is unknown."""
    arms = [a.strip() for a in text.split(",") if a.strip()]
    unknown = [a for a in arms if a not in ARMS]
    if not arms or unknown:
        raise InvalidRunInputError(f"--agents {text!r}: "
                                   f"{'unknown arm ' + repr(unknown[0]) if unknown else 'none'}"
                                   f"; the arms are {', '.join(ARMS)}")
    if len(set(arms)) != len(arms):
        raise InvalidRunInputError(f"--agents {text!r}: an arm is named twice")
    return arms


def table(cells: dict[str, dict[str, Cell]]) -> str:
    """The reference's table shape: condition x arm, successes/runs, and median seconds."""
    arms = list(next(iter(cells.values())))
    head = ["condition", *arms]
    rows = [[c, *[f"{cells[c][a].successes}/{cells[c][a].runs}" for a in arms]] for c in cells]
    rows.append(["median s (clean)", *[
        f"{statistics.median(cells[next(iter(cells))][a].seconds):.2f}" for a in arms]])
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(x.ljust(w) for x, w in zip(r, widths, strict=True)).rstrip()
             for r in [head, ["-" * w for w in widths], *rows]]
    return "\n".join(lines)


__all__ = ["ARMS", "CONDITIONS", "Cell", "ReadbackError", "Worker", "check_arms",
           "page", "read_store", "run_study", "table"]
