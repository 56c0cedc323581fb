"""Fill in a sign-up form and send it; three reward components (name, email, sent)."""

import cua_bench as cb

PAGE = """<!doctype html>
<html><head><title>Sign up</title><style>
body { font-family: sans-serif; margin: 30px; } label { display: block; margin-top: 12px; }
input { font-size: 16px; width: 260px; }
</style></head><body>
<form id="form">
  <label>Name <input id="name" name="name" autocomplete="off"></label>
  <label>Email <input id="email" name="email" autocomplete="off"></label>
  <button id="send" type="submit">Send</button>
</form>
<script>
  window.__sent = null;
  document.getElementById("form").addEventListener("submit", e => {
    e.preventDefault();
    window.__sent = {name: document.getElementById("name").value,
                     email: document.getElementById("email").value};
  });
</script></body></html>"""

pid = None


@cb.tasks_config
def load():
    people = [("Ada Lovelace", "ada@example.org"), ("Alan Turing", "alan@example.org")]
    return [
        cb.Task(description=f"Sign up as {name} with the email {email}, then press Send.",
                metadata={"name": name, "email": email},
                computer={"provider": "simulated", "setup_config": {"os_type": "windows"}})
        for name, email in people
    ]


@cb.setup_task
async def setup(task_cfg, session):
    global pid
    pid = await session.launch_window(html=PAGE, title="Sign up", x=200, y=120,
                                      width=520, height=320)


@cb.solve_task
async def solve(task_cfg, session):
    await session.click_element(pid, "#name")
    session.env.step(cb.TypeAction(text=task_cfg.metadata["name"]))
    session.env.step(cb.KeyAction(key="tab"))
    session.env.step(cb.TypeAction(text=task_cfg.metadata["email"]))
    await session.execute_action(cb.KeyAction(key="enter"))


@cb.evaluate_task
async def evaluate(task_cfg, session):
    sent = await session.execute_javascript(pid, "window.__sent")
    typed = await session.execute_javascript(
        pid, "[document.getElementById('name').value, document.getElementById('email').value]")
    return [
        1.0 if typed[0] == task_cfg.metadata["name"] else 0.0,
        1.0 if typed[1] == task_cfg.metadata["email"] else 0.0,
        1.0 if sent == {"name": task_cfg.metadata["name"],
                        "email": task_cfg.metadata["email"]} else 0.0,
    ]
