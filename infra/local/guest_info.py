"""The guest getters WAA's ``PythonController`` calls, answered in the shapes it reads.

``/screen_size``, ``/window_size``, ``/wallpaper``, ``/desktop_path``, ``/documents_path``,
``/folder_exists`` and ``/file_exists`` (``{"folder_name"|"file_name", "path"}``),
``/are_files_sorted_by_modified_time``, ``/is_directory_read_only_for_user``,
``/are_all_images_tagged``, ``/is_details_view``, ``/library_folders``,
``/check_if_timer_started``, ``/check_if_world_clock_exists``, ``/terminal`` and
``/update_computer``. Boolean checks answer 200 for true and 400 for false, as WAA's server does.
Screen recording is not simulated (``/start_recording`` answers 404); ``/save_state`` and
``/revert_to_snapshot`` answer 501, as WAA's server does for restores.
"""

from __future__ import annotations

import io
from typing import Any

from infra.local.desktop import Desktop
from infra.local.gui import HEIGHT, WIDTH, WIN_H, WIN_W
from infra.local.render import Screen
from infra.local.sandbox import HOME
from infra.local.server import HttpError, Request, Response, Route

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tif", ".tiff")
LIBRARIES = {"documents": "Documents", "pictures": "Pictures", "music": "Music",
             "videos": "Videos", "downloads": "Downloads"}


def _json(request: Request) -> dict[str, Any]:
    if request.content_type.startswith("application/json") or request.body.startswith(b"{"):
        return request.json()
    return {k: v for k, v in request.form().items() if isinstance(v, str)}


def _need(data: dict[str, Any], *names: str) -> list[str]:
    values = []
    for name in names:
        value = data.get(name)
        if value is None or value == "":
            raise HttpError(400, f"{name} is required")
        values.append(str(value))
    return values


def _verdict(found: bool, yes: str, no: str, **extra: Any) -> Response:
    if found:
        return Response.json({"status": "success", "message": yes, **extra}, 200)
    return Response.json({"status": "error", "message": no, **extra}, 400)


def build_info_routes(desktop: Desktop, screen: Screen) -> list[tuple[str, str, Route, int]]:
    """The getter routes, as ``(method, path, handler, status for refusals)``."""

    def window_size(request: Request) -> Response:
        (name,) = _need(_json(request), "app_class_name")
        with desktop.lock:
            found = any(name.lower() in (w.app, w.title.lower()) for w in desktop.windows)
        if not found:
            raise HttpError(404, f"no window of class {name!r}")
        return Response.json({"width": WIN_W, "height": WIN_H})

    def wallpaper(request: Request) -> Response:
        from PIL import Image

        buffer = io.BytesIO()
        Image.new("RGB", (WIDTH, HEIGHT), (32, 84, 140)).save(buffer, format="PNG")
        return Response(200, buffer.getvalue(), "image/png")

    def exists(kind: str) -> Route:
        def check(request: Request) -> Response:
            data = _json(request)
            name = data.get(f"{kind}_name")
            path = data.get("path") or data.get(f"{kind}_path")
            if not isinstance(path, str) or not path:
                raise HttpError(400, "path required")
            target = f"{path.rstrip(chr(92))}\\{name}" if isinstance(name, str) and name else path
            host = desktop.host(target)
            found = host.is_file() if kind == "file" else host.is_dir()
            label = "File" if kind == "file" else "Folder"
            return _verdict(found, f"{label} {target} exists.", f"{label} {target} does not exist.",
                            exists=found)

        return check

    def sorted_by_mtime(request: Request) -> Response:
        (directory,) = _need(_json(request), "directory")
        names = desktop.list_names(directory)  # the order explorer shows: folders, then names
        host = desktop.host(directory)
        items = [(n, int((host / n).stat().st_mtime), (host / n).is_dir()) for n in names]
        desc = [i[0] for i in sorted(items, key=lambda i: (i[2], -i[1], i[0]))]
        asc = [i[0] for i in sorted(items, key=lambda i: (not i[2], i[1], i[0]))]
        ok = names in (desc, asc)
        return _verdict(ok, f"{directory}: files are sorted by modified time",
                        f"{directory}: files are not sorted by modified time")

    def read_only(request: Request) -> Response:
        directory, user = _need(_json(request), "directory", "user")
        if not desktop.host(directory).is_dir():
            raise HttpError(400, f"{directory} does not exist")
        return _verdict(False, "", f"{directory} is not read-only for {user}")

    def images_tagged(request: Request) -> Response:
        directory, tag = _need(_json(request), "directory", "tag")
        images = [n for n in desktop.list_names(directory) if n.lower().endswith(IMAGE_SUFFIXES)]
        if images:  # the simulated drive stores no image tags
            return _verdict(False, "", f"{images[0]} in {directory} is not tagged with {tag}")
        return _verdict(True, f"All images in {directory} are tagged with {tag}", "")

    def details_view(request: Request) -> Response:
        _need(_json(request), "path")
        return _verdict(False, "", "File Explorer is not in Details view",
                        is_details_view=False)

    def library_folders(request: Request) -> Response:
        (name,) = _need(_json(request), "library_name")
        folder = LIBRARIES.get(name.lower())
        if folder is None:
            raise HttpError(400, f"{name} does not exist")
        return Response.json({"status": "success", "output": [f"{HOME}\\{folder}"]})

    def timer_started(request: Request) -> Response:
        hours, minutes, seconds = (int(float(v)) for v in
                                   _need(_json(request), "hours", "minutes", "seconds"))
        total = hours * 3600 + minutes * 60 + seconds
        with desktop.lock:
            found = any(t.seconds == total and t.running for t in desktop.clock.timers)
        return _verdict(found, "Timer exists", "Timer does not exist")

    def world_clock(request: Request) -> Response:
        data = _json(request)
        city = data.get("city")
        if not isinstance(city, str) or not data.get("country"):
            raise HttpError(400, "city and country are required")
        with desktop.lock:
            found = any(city.lower() in c.lower() for c in desktop.clock.world_clocks)
        return _verdict(found, "World clock exists", "World clock does not exist")

    def snapshot(kind: str) -> Route:
        def refuse(request: Request) -> Response:
            # WAA's own server answers 501 to restores; the simulated guest keeps no snapshots
            # (each task's config resets what it checks).
            return Response.json({"error": f"{kind} is not implemented"}, 501)

        return refuse

    def update_computer(request: Request) -> Response:
        _json(request)
        return Response.json({"success": True})

    return [
        ("POST", "/screen_size", lambda _r: Response.json({"width": WIDTH, "height": HEIGHT}), 400),
        ("POST", "/window_size", window_size, 404),
        ("POST", "/wallpaper", wallpaper, 400),
        ("POST", "/desktop_path",
         lambda _r: Response.json({"desktop_path": f"{HOME}\\Desktop"}), 400),
        ("POST", "/documents_path",
         lambda _r: Response.json({"documents_path": f"{HOME}\\Documents"}), 400),
        ("POST", "/file_exists", exists("file"), 400),
        ("POST", "/folder_exists", exists("folder"), 400),
        ("POST", "/are_files_sorted_by_modified_time", sorted_by_mtime, 400),
        ("POST", "/is_directory_read_only_for_user", read_only, 400),
        ("POST", "/are_all_images_tagged", images_tagged, 400),
        ("POST", "/is_details_view", details_view, 400),
        ("POST", "/library_folders", library_folders, 400),
        ("POST", "/check_if_timer_started", timer_started, 400),
        ("POST", "/check_if_world_clock_exists", world_clock, 400),
        ("GET", "/terminal", lambda _r: Response.json({"output": "", "status": "success"}), 400),
        ("POST", "/update_computer", update_computer, 400),
        ("POST", "/save_state", snapshot("Save state"), 400),
        ("POST", "/revert_to_snapshot", snapshot("Restore snapshot"), 400),
    ]


__all__ = ["build_info_routes"]
