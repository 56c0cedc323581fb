# ruff: noqa: E501 (the module's pages are kept whole, as a module author writes them)
"""A Cua-Bench module's input reaches its pages as in Cua-Bench's own simulated session.

Cua-Bench's session is Playwright driving Chromium: windows are pages laid out in a body of
their own, clicks aim at an element's box as it is (waiting briefly for it to appear, never
scrolling to it), text is typed a key press per character, key names are Playwright's, and a
drag over an HTML5 ``draggable`` becomes the page's own drag and drop. One module of our own,
one variant per mechanism, run with ``--agent oracle`` by the real CLI on a real local pool
whose workers run a real headless Chromium; each reward component names one fact.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.local.browser import find_chromium
from tests.integration.test_cua_bench_cli import evals, module, read_records

pytestmark = [
    pytest.mark.pool(name="cbin", workers=2),
    pytest.mark.slow,
    pytest.mark.integration,
    pytest.mark.timeout(600),
    pytest.mark.skipif(find_chromium() is None, reason="needs Chromium (Debian's chromium)"),
]

MECHANISMS = '''
import cua_bench as cb

CENTRE = ("(() => { const r = document.querySelector(%r).getBoundingClientRect();"
          " return [Math.round(window.screenX + r.left + r.width / 2),"
          " Math.round(window.screenY + r.top + r.height / 2)]; })()")
TOP_EDGE = ("(() => { const r = document.querySelector(%r).getBoundingClientRect();"
            " return [Math.round(window.screenX + r.left + 40), Math.round(window.screenY + r.top + 4)]; })()")
LEFT_EDGE = ("(() => { const r = document.querySelector(%r).getBoundingClientRect();"
             " return [Math.round(window.screenX + r.left + 8), Math.round(window.screenY + r.top + r.height / 2)]; })()")

DND = """<div id="apple" draggable="true" style="width:80px;height:30px;background:#fcc">apple</div>
<div id="pear" draggable="true" style="width:80px;height:30px;background:#cfc">pear</div>
<div id="basket" class="zone" style="margin-top:120px;height:80px;background:#eef">basket</div>
<div id="crate" class="zone" style="margin-top:20px;height:80px;background:#fee">crate</div>
<script>
window.drops = {};
for (const item of document.querySelectorAll("[draggable]"))
  item.addEventListener("dragstart", e => e.dataTransfer.setData("text/plain", item.id));
for (const zone of document.querySelectorAll(".zone")) {
  zone.addEventListener("dragover", e => e.preventDefault());
  zone.addEventListener("drop", e => { e.preventDefault(); window.drops[e.dataTransfer.getData("text/plain")] = zone.id; });
}
</script>"""

KEYS = """<input type="date" id="date"><input id="text">
<script>
window.keys = [];
document.getElementById("text").addEventListener("keydown", e => window.keys.push(e.key + ":" + e.code));
</script>"""

LAYOUT = """<p id="p">window</p>"""

LATE_AND_BELOW = """<div style="height:420px;flex:none"></div><button id="below">below</button>
<script>
window.clicked = [];
setTimeout(() => { const b = document.createElement("button"); b.id = "late"; b.textContent = "late";
  document.body.prepend(b); }, 200);
document.addEventListener("click", e => window.clicked.push(e.target.id));
</script>"""

MENU = """<div id="area" style="width:200px;height:100px;background:#eee">area</div>
<select id="fruit"><option value="a">A</option><option value="b">B</option></select>
<script>
window.menus = [];
document.getElementById("area").addEventListener("contextmenu", e => { e.preventDefault(); window.menus.push(e.button); });
</script>"""

pid = None
seen = {}


@cb.tasks_config
def load():
    return [cb.Task(description=case, metadata={"case": case})
            for case in ("html5_drag", "keys", "layout", "late_and_below", "menu_and_rect")]


@cb.setup_task
async def setup(task_cfg, session):
    global pid
    case = task_cfg.metadata["case"]
    if case == "html5_drag":
        pid = await session.launch_window(html=DND, x=60, y=60, width=400, height=400)
    elif case == "keys":
        pid = await session.launch_window(html=KEYS, x=60, y=60, width=400, height=200)
    elif case == "layout":
        await session.launch_window(html=LAYOUT)
        pid = await session.launch_window(html=LAYOUT)
    elif case == "late_and_below":
        pid = await session.launch_window(html=LATE_AND_BELOW, x=60, y=60, width=300, height=200)
    else:
        pid = await session.launch_window(html=MENU, x=300, y=150, width=400, height=300)


async def drag(session, item, zone):
    """Drag an item to a point just inside the zone's top edge: only the release point is in
    the zone, so the drop must happen where the button is released."""
    fx, fy = await session.execute_javascript(pid, CENTRE % item)
    tx, ty = await session.execute_javascript(pid, TOP_EDGE % zone)
    await session.execute_action(cb.DragAction(from_x=fx, from_y=fy, to_x=tx, to_y=ty))


@cb.solve_task
async def solve(task_cfg, session):
    case = task_cfg.metadata["case"]
    if case == "html5_drag":
        await drag(session, "#apple", "#basket")
        await drag(session, "#pear", "#crate")
    elif case == "keys":
        x, y = await session.execute_javascript(pid, LEFT_EDGE % "#date")
        await session.execute_action(cb.ClickAction(x=x, y=y))  # on the month
        await session.execute_action(cb.TypeAction(text="01152024"))
        await session.click_element(pid, "#text")
        await session.execute_action(cb.TypeAction(text="Hi!"))
        for key in ("Return", "ArrowLeft", "pgdn", "F2"):
            await session.execute_action(cb.KeyAction(key=key))
    elif case == "late_and_below":
        await session.click_element(pid, "#late")
        await session.click_element(pid, "#below")
    elif case == "menu_and_rect":
        await session.right_click_element(pid, "#area")
        seen["window"] = await session.get_element_rect(pid, "#area")
        seen["screen"] = await session.get_element_rect(pid, "#area", space="screen")
        await session.click_element(pid, "#fruit")
        await session.click_element(pid, 'option[value="b"]')


@cb.evaluate_task
async def evaluate(task_cfg, session):
    case = task_cfg.metadata["case"]
    if case == "html5_drag":
        drops = await session.execute_javascript(pid, "window.drops")
        return [float(drops.get("apple") == "basket"), float(drops.get("pear") == "crate")]
    if case == "keys":
        date = await session.execute_javascript(pid, "document.getElementById('date').value")
        keys = await session.execute_javascript(pid, "window.keys")
        return [float(date == "2024-01-15"),
                float(keys == ["H:KeyH", "i:KeyI", "!:Digit1", "Enter:Enter",
                               "ArrowLeft:ArrowLeft", "PageDown:PageDown", "F2:F2"])]
    if case == "layout":
        body = await session.execute_javascript(pid, "(() => { const s = getComputedStyle(document.body);"
                                                " return [s.marginTop, s.overflow, s.flexDirection]; })()")
        place = await session.execute_javascript(
            pid, "[window.screenX, window.screenY, window.innerWidth, window.innerHeight]")
        return [float(body == ["0px", "hidden", "column"]), float(place == [130, 130, 600, 400])]
    if case == "late_and_below":
        clicked = await session.execute_javascript(pid, "window.clicked")
        scrolled = await session.execute_javascript(pid, "document.scrollingElement.scrollTop + document.body.scrollTop")
        return [float(clicked == ["late"]), float(scrolled == 0)]
    menus = await session.execute_javascript(pid, "window.menus")
    fruit = await session.execute_javascript(pid, "document.getElementById('fruit').value")
    window, screen = seen["window"], seen["screen"]
    return [float(menus == [2]),
            float(screen["x"] - window["x"] == 300 and screen["y"] - window["y"] == 150
                  and screen["width"] == window["width"] == 200),
            float(fruit == "a")]
'''

EXPECTED = {
    # both items land in their zones: the drags became the page's own drag and drop
    "mechanisms/0": [1.0, 1.0],
    # the date typed segment by segment, each character a key press; Playwright's key names
    "mechanisms/1": [1.0, 1.0],
    # the page in a body of its own, the window at Cua-Bench's default size and cascade
    "mechanisms/2": [1.0, 1.0],
    # an element that appears 200 ms late is waited for; one out of view is not scrolled to
    "mechanisms/3": [1.0, 1.0],
    # a right click on an element; its box in the window and on the screen; a closed
    # <select>'s option has an empty box, so clicking it changes nothing (as in Cua-Bench)
    "mechanisms/4": [1.0, 1.0, 1.0],
}


def test_input_reaches_pages_as_in_cua_benchs_own_session(
    pool: str, home: Path, tmp_path: Path
) -> None:
    task = module(tmp_path / "tasks" / "mechanisms", MECHANISMS)
    results = tmp_path / "results"
    done = evals("run", "--pool", pool, "--tasks", f"cua-bench:{task}", "--agent", "oracle",
                 "--run-name", "input", home=home, results=results)
    assert done.returncode in (0, 1), done.stderr
    records = read_records(results / "input")
    got = {tid: (r["status"], r.get("reward_components"), r.get("error_message"))
           for tid, r in records.items()}
    assert got == {tid: ("success", rewards, None) for tid, rewards in EXPECTED.items()}
