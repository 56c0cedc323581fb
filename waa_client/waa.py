"""Client of the WAA server that runs inside the Windows guest (port 5000 on the host)."""

from __future__ import annotations

from typing import Any, Literal

from waa_client.http import HttpClient, json_object, malformed

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class WaaClient(HttpClient):
    """Speaks WAA's HTTP protocol (``WAA_PROTOCOL.md`` section 2) with timeouts and retries.

    Reads (probe, screenshot, accessibility, observe, file, list_directory) are retried on
    infrastructure failures; anything that acts on the guest (execute, execute_windows,
    close_all, clear_task_files) is sent exactly once.

    Takes :class:`~waa_client.http.HttpClient`'s arguments (``base_url``: usually a tunnel's
    local URL).
    """

    def probe(self, deadline: float | None = None) -> dict[str, Any]:
        """``GET /probe``: the server's status object (by ``deadline``, retries included, when
        given: a ``time.monotonic()`` value)."""
        return json_object(self._request("GET", "/probe", idempotent=True, deadline=deadline))

    def screenshot(self) -> bytes:
        """``GET /screenshot``: the screen as PNG bytes.

        Raises:
            MalformedResponseError: The body is not a PNG image.
        """
        response = self._request("GET", "/screenshot", idempotent=True)
        data = response.content
        if not data.startswith(PNG_SIGNATURE):
            raise malformed(response, f"expected a PNG screenshot, got {data[:16]!r}; is this "
                            "URL the WAA server?")
        return data

    def accessibility(self, backend: Literal["uia", "win32"] = "uia",
                      timeout: float | None = None, deadline: float | None = None) -> str:
        """``GET /accessibility``: the accessibility tree (the ``AT`` value, XML text);
        ``timeout`` for each try's answer (default: the client's read timeout), ``deadline``
        (``time.monotonic()``) for the whole call, retries included."""
        response = self._request(
            "GET", "/accessibility", idempotent=True, timeout=timeout, deadline=deadline,
            params={"backend": backend},
        )
        tree = json_object(response).get("AT")
        if not isinstance(tree, str):
            raise malformed(response, "the answer has no text 'AT' field")
        return tree

    def observe(self, timeout: float | None = None,
                deadline: float | None = None) -> dict[str, Any]:
        """``GET /obs_winagent``: screenshot (base64), window title, rect, clipboard...;
        ``timeout`` and ``deadline`` as :meth:`accessibility`'s."""
        return json_object(self._request("GET", "/obs_winagent", idempotent=True,
                                         timeout=timeout, deadline=deadline))

    def execute(
        self, command: str | list[str], shell: bool = False, timeout: float | None = None
    ) -> dict[str, Any]:
        """``POST /execute``: run a command in the guest; never retried.

        Args:
            command: Program and arguments, or one string (run through the shell if ``shell``).
            shell: Whether the guest runs ``command`` through its shell.
            timeout: Seconds to wait for the result; the client's read timeout by default.
                The server stops a command after 120 s, so longer waits are pointless.

        Returns:
            ``{"status", "output", "error", "returncode"}`` as the server sent it.
        """
        return json_object(
            self._request(
                "POST",
                "/execute",
                idempotent=False,
                timeout=timeout,
                json={"command": command, "shell": shell},
            )
        )

    def execute_windows(self, code: str, timeout: float | None = None) -> dict[str, Any]:
        """``POST /execute_windows``: run Python source in the guest; never retried."""
        return json_object(
            self._request(
                "POST", "/execute_windows", idempotent=False, timeout=timeout,
                json={"command": code},
            )
        )

    def file(self, path: str) -> bytes:
        """``POST /file``: the bytes of a file in the guest.

        Raises:
            NotFoundError: The guest has no such file.
        """
        return self._request("POST", "/file", idempotent=True, data={"file_path": path}).content

    def list_directory(self, path: str) -> dict[str, Any]:
        """``POST /list_directory``: ``{"directory_tree": {"type", "name", "children"}}``."""
        return json_object(
            self._request("POST", "/list_directory", idempotent=True, json={"path": path})
        )

    def upload(self, path: str, data: bytes) -> None:
        """``POST /setup/upload``: write a file in the guest (multipart, as WAA takes it)."""
        self._request("POST", "/setup/upload", idempotent=True,
                      files={"file_data": ("file", data)}, data={"file_path": path})

    def browser(self, operation: str, payload: dict[str, Any] | None = None, *,
                timeout: float | None = None) -> dict[str, Any]:
        """``/browser/<operation>`` of a simulated worker (``docs/tasks.md``): ``status``
        (GET), ``launch``, ``evaluate``, ``move``, ``close_all`` (POST, never retried)."""
        if operation == "status":
            return json_object(self._request("GET", "/browser/status", idempotent=True,
                                             timeout=timeout))
        return json_object(self._request("POST", f"/browser/{operation}", idempotent=False,
                                         timeout=timeout, json=payload or {}))

    def close_all(self, timeout: float | None = None) -> None:
        """``POST /setup/close_all``: close every window in the guest; never retried."""
        self._request("POST", "/setup/close_all", idempotent=False, timeout=timeout)

    def clear_task_files(self, timeout: float | None = None) -> None:
        """``POST /setup/clear_task_files``: remove files left by the last task; never retried."""
        self._request("POST", "/setup/clear_task_files", idempotent=False, timeout=timeout)
