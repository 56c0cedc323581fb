"""WAA's own ``PythonController``, unmodified and imported from WAA's source, against a real
local worker: its getters, the calls its setup and run loop make, and its actions.

Recording (``start_recording``/``end_recording``) is not simulated and not called.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import WAA_DATA
from tests.support.worker_proc import WorkerProcess

pytestmark = pytest.mark.integration
CLIENT = WAA_DATA / "upstream" / "src" / "win-arena-container" / "client"
HOME = "C:\\Users\\Docker"
TIMEOUT = 30


@pytest.fixture(scope="module")
def controller(shared_worker: WorkerProcess) -> Any:
    if not (CLIENT / "desktop_env" / "controllers" / "python.py").is_file():
        pytest.skip("WAA's client source not found under ../shared/waa/upstream")
    sys.path.insert(0, str(CLIENT))
    try:
        from desktop_env.controllers.python import PythonController
    finally:
        sys.path.remove(str(CLIENT))
    entry = shared_worker.workers[0]
    ctl = PythonController(vm_ip=entry["host"])
    # The client hard-codes port 5000; the shared_worker listens on a free port of loopback.
    ctl.http_server = shared_worker.waa_url
    return ctl


def test_getters_answer_in_the_shapes_the_client_reads(controller: Any,
                                                       shared_worker: WorkerProcess) -> None:
    assert controller.get_probe() is True
    assert controller.get_vm_platform() == "Windows"
    assert controller.get_vm_screen_size() == {"width": 1280, "height": 720}
    assert controller.get_vm_desktop_path() == f"{HOME}\\Desktop"
    assert controller.get_vm_documents_path() == f"{HOME}\\Documents"
    wallpaper = controller.get_vm_wallpaper()
    assert wallpaper is not None and wallpaper[:8] == b"\x89PNG\r\n\x1a\n"
    screenshot = controller.get_screenshot()
    assert screenshot is not None and screenshot[:4] == b"\x89PNG"
    tree = controller.get_accessibility_tree()
    assert tree is not None and tree.startswith("<Desktop")
    assert controller.get_accessibility_tree(backend="win32").startswith("<Desktop")
    obs = controller.get_obs_winagent()
    assert obs is not None
    assert controller.get_terminal_output() == ""
    assert controller.get_vm_library_folders("Documents") == [f"{HOME}\\Documents"]
    assert controller.get_vm_directory_tree(HOME)["type"] == "directory"
    assert controller.get_vm_folder_exists_in_path("Desktop", HOME) is True
    assert controller.get_vm_folder_exists_in_path("Nope", HOME) is False
    assert controller.get_vm_file_exists_in_path("none.txt", f"{HOME}\\Desktop") is False
    assert controller.get_vm_file_explorer_is_details_view(HOME) is False
    assert controller.get_vm_is_directory_read_only_for_user(HOME, "Docker") is False
    assert controller.get_vm_are_all_images_tagged(f"{HOME}\\Pictures", "tag") is True
    assert controller.get_vm_are_files_sorted_by_modified_time(f"{HOME}\\Music") is True
    assert controller.get_vm_check_if_timer_started(0, 5, 0) == "False"
    assert controller.get_vm_check_if_world_clock_exists("Tokyo", "Japan") == "False"
    # os.stat is not on the whitelist: the answer is a 400 the client reads as "not hidden"
    assert controller.get_file_hidden_status(f"{HOME}\\Desktop") == 0
    controller.save_state("before")  # 501 (no snapshots here; WAA's restore is 501 too): logged
    controller.revert_to_snapshot("before")
    # shell commands are not run at all; the client gets None, as for a failed command
    assert controller.get_registry_key("HKCU:\\Control Panel", "Wallpaper") is None


def test_actions_drive_the_desktop(controller: Any, shared_worker: WorkerProcess) -> None:
    requests.post(f"{shared_worker.waa_url}/setup/close_all", timeout=TIMEOUT)
    controller.execute_action({"action_type": "PRESS", "parameters": {"key": "enter"}})
    controller.execute_python_command("pyautogui.hotkey('win', 'r')")
    controller.execute_action({"action_type": "TYPING",
                               "parameters": {"text": "notepad\n"}})
    controller.execute_action({"action_type": "TYPING", "parameters": {"text": "hi there"}})
    controller.execute_action({"action_type": "HOTKEY", "parameters": {"keys": ["ctrl", "s"]}})
    path = f"{HOME}\\Desktop\\from_controller.txt"
    controller.execute_python_windows_command(
        f"import pyautogui\npyautogui.typewrite({path!r})\npyautogui.press('enter')")
    assert controller.get_file_as_text(path) == "hi there"
    assert controller.get_file(path) == b"hi there"
    assert controller.get_vm_window_size("notepad") == {"width": 760, "height": 460}
    assert controller.get_vm_window_size("vlc") is None
    assert controller.get_vm_file_exists_in_path("from_controller.txt", f"{HOME}\\Desktop")
    # the clock: a click where the accessibility tree puts "Add timer"
    controller.execute_python_command("pyautogui.hotkey('win', 'r'); "
                                      "pyautogui.typewrite('ms-clock:\\n')")
    tree = controller.get_accessibility_tree()
    marker = 'name="Add timer" rect="'
    rect = tree[tree.index(marker) + len(marker):].split('"', 1)[0]
    left, top, right, bottom = (int(v) for v in rect.split(","))
    controller.execute_action({"action_type": "CLICK", "parameters": {
        "x": (left + right) // 2, "y": (top + bottom) // 2, "button": "left"}})
    controller.execute_action({"action_type": "TYPING", "parameters": {"text": "1:30:00\n"}})
    assert controller.get_vm_check_if_timer_started(1, 30, 0) == "True"
    controller.execute_action({"action_type": "MOVE_TO", "parameters": {"x": 10, "y": 12}})
    where = controller.execute_python_command("print(pyautogui.position())")
    assert where["output"] == "Point(x=10, y=12)\n"  # the tween argument was accepted
    controller.execute_action({"action_type": "SCROLL", "parameters": {"dx": 0, "dy": -3}})
    controller.execute_action("DONE")


def test_a_point_beyond_the_screen_lands_on_its_edge(controller: Any,
                                                     shared_worker: WorkerProcess) -> None:
    """As on Windows, where the pointer stops at the screen's edge and the client turns
    pyautogui's fail-safe off: the action is not an error, it acts at the edge."""
    requests.post(f"{shared_worker.waa_url}/setup/close_all", timeout=TIMEOUT)
    cases = [
        ({"action_type": "MOVE_TO", "parameters": {"x": 2000, "y": 5000}}, (1279, 719)),
        ({"action_type": "CLICK", "parameters": {"x": -40, "y": 100, "button": "left"}},
         (0, 100)),
    ]
    for action, (x, y) in cases:
        controller.execute_action(action)
        where = controller.execute_python_command("print(pyautogui.position())")
        assert where["output"] == f"Point(x={x}, y={y})\n", action
    moved = controller.execute_python_command(
        "pyautogui.moveTo(600, 700); pyautogui.moveRel(0, 10000); print(pyautogui.position())")
    assert moved["output"] == "Point(x=600, y=719)\n"


def test_forbidden_code_from_the_client_runs_nothing(controller: Any, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    answer = controller.execute_python_command(f"open({str(marker)!r}, 'w').write('x')")
    assert answer["status"] == "error" and "open" in answer["message"]
    answer = controller.execute_python_windows_command(
        f"import os\nos.system('touch {marker}')")
    assert answer["status"] == "error" and "import os" in answer["message"]
    assert not marker.exists()
