"""The simulated worker's WAA and scoring endpoints, over real HTTP to a real process."""

from __future__ import annotations

import base64
import io

import pytest
import requests
from PIL import Image

from tests.support.worker_proc import WorkerProcess

pytestmark = pytest.mark.integration
TIMEOUT = 30
DESKTOP = "C:\\Users\\Docker\\Desktop"


def execute(worker: WorkerProcess, command: str | list[str]) -> requests.Response:
    return requests.post(
        f"{worker.waa_url}/execute", json={"command": command, "shell": False}, timeout=TIMEOUT
    )


def test_probe_shapes(shared_worker: WorkerProcess) -> None:
    waa = requests.get(f"{shared_worker.waa_url}/probe", timeout=TIMEOUT)
    assert waa.status_code == 200
    assert waa.json() == {"status": "Probe successful", "message": "Service is operational"}
    scoring = requests.get(f"{shared_worker.scoring_url}/probe", timeout=TIMEOUT)
    assert scoring.json() == {"status": "ok", "service": "evaluate"}


def test_screenshot_is_a_png_that_pillow_opens(shared_worker: WorkerProcess) -> None:
    response = requests.get(f"{shared_worker.waa_url}/screenshot", timeout=TIMEOUT)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "image/png"
    assert response.content[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(io.BytesIO(response.content)) as image:
        image.load()
        assert image.size == (1280, 720)


def test_screenshot_changes_with_the_desktop(shared_worker: WorkerProcess) -> None:
    before = requests.get(f"{shared_worker.waa_url}/screenshot", timeout=TIMEOUT).content
    assert execute(shared_worker, "open clock").json()["returncode"] == 0
    after = requests.get(f"{shared_worker.waa_url}/screenshot", timeout=TIMEOUT).content
    assert before != after
    execute(shared_worker, "close Clock")


def test_execute_runs_the_command_language(shared_worker: WorkerProcess) -> None:
    path = f"{DESKTOP}\\hello.txt"
    assert execute(shared_worker, "open notepad").json()["output"] == "Untitled - Notepad"
    assert execute(shared_worker, ["type", 'He said "hi"']).json()["returncode"] == 0
    saved = execute(shared_worker, f'save "{path}"').json()
    assert saved == {"status": "success", "output": path, "error": "", "returncode": 0}
    file = requests.post(f"{shared_worker.waa_url}/file", data={"file_path": path}, timeout=TIMEOUT)
    assert file.status_code == 200 and file.content == b'He said "hi"'
    tree = requests.post(
        f"{shared_worker.waa_url}/list_directory", json={"path": DESKTOP}, timeout=TIMEOUT
    ).json()["directory_tree"]
    assert {"type": "file", "name": "hello.txt"} in tree["children"]
    missing = execute(shared_worker, f'read "{DESKTOP}\\nope.txt"').json()
    assert missing["returncode"] == 1 and "not found" in missing["error"]
    for not_a_folder in (f"{DESKTOP}\\nope", path):  # WAA's answer for both: 400, its words
        listing = requests.post(f"{shared_worker.waa_url}/list_directory",
                                json={"path": not_a_folder}, timeout=TIMEOUT)
        assert listing.status_code == 400, listing.text
        assert "The provided path is not a directory" in listing.text


def test_accessibility_and_obs_describe_the_same_desktop(shared_worker: WorkerProcess) -> None:
    execute(shared_worker, f'open notepad "{DESKTOP}\\ax.txt"')
    execute(shared_worker, 'type "visible text"')
    for backend in ("uia", "win32"):
        tree = requests.get(
            f"{shared_worker.waa_url}/accessibility", params={"backend": backend}, timeout=TIMEOUT
        ).json()["AT"]
        assert "ax.txt - Notepad" in tree and "visible text" in tree
    obs = requests.get(f"{shared_worker.waa_url}/obs_winagent", timeout=TIMEOUT).json()
    assert obs["window_title"] == "ax.txt - Notepad"
    assert base64.b64decode(obs["image"])[:4] == b"\x89PNG"
    assert set(obs) == {"image", "window_title", "rect", "window_names_str",
                        "computer_clipboard", "human_input"}
    bad = requests.get(
        f"{shared_worker.waa_url}/accessibility", params={"backend": "atspi"}, timeout=TIMEOUT
    )
    assert bad.status_code == 400


@pytest.mark.parametrize(
    "path",
    [
        "C:\\..\\..\\etc\\passwd",
        "D:\\secrets.txt",
        "\\\\server\\share\\a.txt",
        "/etc/passwd",
        "C:/Users/../../../../etc/hostname",
    ],
)
def test_escapes_are_refused_on_every_endpoint(shared_worker: WorkerProcess, path: str) -> None:
    file = requests.post(f"{shared_worker.waa_url}/file", data={"file_path": path}, timeout=TIMEOUT)
    assert file.status_code == 403 and file.json()["status"] == "error"
    assert "outside the simulated C: drive" in file.json()["message"]
    assert execute(shared_worker, ["read", path]).status_code == 403
    assert execute(shared_worker, ["write", path, "x"]).status_code == 403
    listing = requests.post(f"{shared_worker.waa_url}/list_directory", json={"path": path},
                            timeout=TIMEOUT)
    assert listing.status_code == 403
    setup = requests.post(
        f"{shared_worker.scoring_url}/setup",
        json={"config": [{"type": "create_file", "parameters": {"path": path, "content": "x"}}]},
        timeout=TIMEOUT,
    )
    assert setup.status_code == 422 and "outside" in setup.json()["results"][0]["error"]


def test_bad_commands_get_400_with_the_usage(shared_worker: WorkerProcess) -> None:
    unknown = execute(shared_worker, "frobnicate now")
    assert unknown.status_code == 400 and "unknown verb 'frobnicate'" in unknown.json()["message"]
    usage = execute(shared_worker, "move onlyone")
    assert usage.status_code == 400 and "usage: move" in usage.json()["message"]
    agent = execute(shared_worker, ["python", "-c", "import pyautogui; pyautogui.click(10, 10)"])
    assert agent.status_code == 200 and agent.json()["returncode"] == 0
    windows = requests.post(
        f"{shared_worker.waa_url}/execute_windows",
        json={"command": "import os; os.system('echo hi')"},
        timeout=TIMEOUT,
    )
    assert windows.status_code == 400 and "import os" in windows.json()["message"]
    not_json = requests.post(f"{shared_worker.waa_url}/execute", data=b"{", timeout=TIMEOUT)
    assert not_json.status_code == 400


def test_unknown_paths_and_missing_files_are_404(shared_worker: WorkerProcess) -> None:
    assert requests.get(f"{shared_worker.waa_url}/nowhere", timeout=TIMEOUT).status_code == 404
    unknown = requests.get(f"{shared_worker.scoring_url}/task/nope-WOS", timeout=TIMEOUT)
    assert unknown.status_code == 404
    missing = requests.post(
        f"{shared_worker.waa_url}/file", data={"file_path": f"{DESKTOP}\\none.bin"}, timeout=TIMEOUT
    )
    assert missing.status_code == 404


def test_setup_endpoints(shared_worker: WorkerProcess) -> None:
    url = shared_worker.waa_url
    folder = "C:\\Users\\Docker\\Documents\\Up"
    assert requests.post(f"{url}/setup/create_folder", json={"path": folder},
                         timeout=TIMEOUT).status_code == 200
    upload = requests.post(
        f"{url}/setup/upload",
        data={"file_path": f"{folder}\\blob.bin"},
        files={"file_data": ("blob.bin", b"\x00\x01binary")},
        timeout=TIMEOUT,
    )
    assert upload.status_code == 200, upload.text
    got = requests.post(f"{url}/file", data={"file_path": f"{folder}\\blob.bin"}, timeout=TIMEOUT)
    assert got.content == b"\x00\x01binary"
    assert requests.post(f"{url}/setup/launch", json={"command": ["explorer", folder]},
                         timeout=TIMEOUT).status_code == 200
    assert requests.post(f"{url}/setup/activate_window", json={"window_name": "Up"},
                         timeout=TIMEOUT).status_code == 200
    absent = requests.post(f"{url}/setup/activate_window", json={"window_name": "Nothing"},
                           timeout=TIMEOUT)
    assert absent.status_code == 404
    assert requests.post(f"{url}/setup/close_all", timeout=TIMEOUT).status_code == 200
    assert requests.post(f"{url}/setup/clear_task_files", timeout=TIMEOUT).status_code == 200
    gone = requests.post(f"{url}/file_exists", json={"path": f"{folder}\\blob.bin"},
                         timeout=TIMEOUT)
    assert gone.status_code == 400
    download = requests.post(
        f"{shared_worker.scoring_url}/setup",
        json={"config": [{"type": "download", "parameters": {"files": []}}]},
        timeout=TIMEOUT,
    )
    assert download.status_code == 422
    assert "no internet" in download.json()["results"][0]["error"]


def test_evaluate_rejects_bad_input(shared_worker: WorkerProcess) -> None:
    url = f"{shared_worker.scoring_url}/evaluate"
    assert requests.post(url, json={"last_action": "DONE"}, timeout=TIMEOUT).status_code == 400
    broken = {"id": "x", "evaluator": {"func": "no_such_metric", "result": {"type": "rule"}}}
    response = requests.post(url, json={"task": broken, "last_action": "DONE"}, timeout=TIMEOUT)
    assert response.status_code == 422 and "no_such_metric" in response.json()["message"]
