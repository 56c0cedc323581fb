"""Save a report file with the code the window shows: shell and file operations on the worker
(a Windows shell: os_type windows, Windows paths)."""

import cua_bench as cb

FOLDER = "C:\\Users\\Docker\\Documents\\reports"
REPORT = FOLDER + "\\report.txt"

PAGE = """<!doctype html><html><head><title>Report</title></head>
<body style="font-family: sans-serif; margin: 30px">
<p>Save a file <b>%s</b> whose only line is the code below.</p>
<p id="code" style="font-size: 28px">%s</p></body></html>"""

pid = None


@cb.tasks_config(split="train")
def load():
    return [
        cb.Task(description=f"Save the code shown in the Report window into {REPORT}.",
                metadata={"code": code},
                computer={"provider": "simulated", "setup_config": {"os_type": "windows"}})
        for code in ("K7-QX", "Z3-MP")
    ]


@cb.setup_task(split="train")
async def setup(task_cfg, session):
    global pid
    await session.run_command(f'mkdir "{FOLDER}"')
    await session.write_file(FOLDER + "\\README.txt", "reports go here\n")
    pid = await session.launch_window(html=PAGE % (REPORT, task_cfg.metadata["code"]),
                                      title="Report", x=300, y=200, width=600, height=240)


@cb.solve_task(split="train")
async def solve(task_cfg, session):
    code = await session.execute_javascript(pid, "document.getElementById('code').textContent")
    await session.write_file(REPORT, code + "\n")


@cb.evaluate_task(split="train")
async def evaluate(task_cfg, session):
    names = await session.list_dir(FOLDER)
    if not await session.file_exists(REPORT):
        return [0.0, 0.0]
    text = await session.read_file(REPORT)
    return [1.0 if "report.txt" in names else 0.0,
            1.0 if text.strip() == task_cfg.metadata["code"] else 0.0]
