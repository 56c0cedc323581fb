"""The reference's minimal module: click the Submit button."""

from pathlib import Path

import cua_bench as cb

pid = None


@cb.tasks_config(split="train")
def load():
    return [
        cb.Task(
            description='Click the "Submit" button.',
            computer={
                "provider": "simulated",
                "setup_config": {"os_type": "macos"},
            },
        )
    ]


@cb.setup_task(split="train")
async def setup(task_cfg: cb.Task, session: cb.DesktopSession):
    global pid
    pid = await session.launch_window(
        html=(Path(__file__).parent / "gui/index.html").read_text(),
        title="Task",
    )


@cb.solve_task(split="train")
async def solve(task_cfg: cb.Task, session: cb.DesktopSession):
    await session.click_element(pid, "#submit")


@cb.evaluate_task(split="train")
async def evaluate(task_cfg: cb.Task, session: cb.DesktopSession):
    clicked = await session.execute_javascript(pid, "window.__clicked")
    return [1.0] if clicked is True else [0.0]
