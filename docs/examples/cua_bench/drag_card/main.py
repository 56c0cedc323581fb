"""Drag a card onto the drop zone: the oracle computes screen coordinates from window.screenX
and the elements' rectangles, as an agent looking at the screen would find them."""

import cua_bench as cb

PAGE = """<!doctype html>
<html><head><title>Sort the card</title><style>
body { margin: 0; font-family: sans-serif; background: #f4f4f4; }
#card { position: absolute; left: 30px; top: 40px; width: 90px; height: 60px;
        background: #e0533d; color: white; text-align: center; line-height: 60px;
        cursor: grab; user-select: none; }
#zone { position: absolute; left: 220px; top: 120px; width: 140px; height: 110px;
        border: 3px dashed #333; text-align: center; line-height: 110px; }
</style></head><body>
<div id="card">CARD</div><div id="zone">DROP HERE</div>
<script>
  window.__dropped = false;
  const card = document.getElementById("card"), zone = document.getElementById("zone");
  let grab = null;
  card.addEventListener("mousedown", e => {
    grab = {dx: e.clientX - card.offsetLeft, dy: e.clientY - card.offsetTop};
  });
  document.addEventListener("mousemove", e => {
    if (!grab) return;
    card.style.left = (e.clientX - grab.dx) + "px";
    card.style.top = (e.clientY - grab.dy) + "px";
  });
  document.addEventListener("mouseup", e => {
    if (!grab) return;
    grab = null;
    const z = zone.getBoundingClientRect();
    window.__dropped = e.clientX >= z.left && e.clientX <= z.right
                       && e.clientY >= z.top && e.clientY <= z.bottom;
  });
</script></body></html>"""

CENTRE = """(() => {
  const r = document.querySelector(%r).getBoundingClientRect();
  return [window.screenX + r.left + r.width / 2, window.screenY + r.top + r.height / 2];
})()"""

pid = None


@cb.tasks_config("train")
def load():
    # the same card at two places of the screen: coordinates must follow the window
    return [
        cb.Task(description="Drag the red CARD into the box marked DROP HERE.",
                metadata={"x": x, "y": y},
                computer={"provider": "simulated", "setup_config": {"os_type": "windows"}})
        for x, y in ((60, 50), (700, 300))
    ]


@cb.setup_task("train")
async def setup(task_cfg, session):
    global pid
    pid = await session.launch_window(html=PAGE, title="Sort the card",
                                      x=task_cfg.metadata["x"], y=task_cfg.metadata["y"],
                                      width=420, height=300)


@cb.solve_task("train")
async def solve(task_cfg, session):
    fx, fy = await session.execute_javascript(pid, CENTRE % "#card")
    tx, ty = await session.execute_javascript(pid, CENTRE % "#zone")
    await session.execute_action(cb.DragAction(from_x=round(fx), from_y=round(fy),
                                               to_x=round(tx), to_y=round(ty)))


@cb.evaluate_task("train")
async def evaluate(task_cfg, session):
    return [1.0 if await session.execute_javascript(pid, "window.__dropped") else 0.0]
