"""Secrets stay out of everything the project stores or prints, not only out of URLs."""

from __future__ import annotations

import json
import secrets
import sqlite3
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from oa_vm.kit.redact import redact_json, redact_text, register_secret
from tests.support.cli import run_cli
from tests.support.http_servers import LoopbackHttp
from tests.support.pools import READY_S

TASK = "c499b229-110c-5fc8-9895-f2f879ac1512-WOS"


@pytest.fixture
def echoing_agent() -> Iterator[str]:
    """An agent server that answers 401 with the Authorization header it got, in three forms."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            got = self.headers.get("Authorization", "")
            token = got.removeprefix("Bearer ")
            body = json.dumps({"error": f"rejected {got}", "token": token,
                               "detail": f"the key '{token}' is unknown"}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    with LoopbackHttp(Handler) as served:
        yield f"{served.url}/act"


def test_a_token_echoed_by_the_agent_server_is_stored_and_printed_nowhere(
    pooled: Path, tmp_path: Path, echoing_agent: str
) -> None:
    token = "tok-" + secrets.token_hex(12)  # no well-known shape: only its use can find it
    results = tmp_path / "results"
    ran = run_cli("openadapt-evals", "run", "--pool", "p", "--agent", "http", "--agent-url",
                  echoing_agent, "--tasks", TASK, "--run-name", "s", "--results-dir",
                  str(results), home=pooled, env={"OA_EVALS_AGENT_TOKEN": token})
    assert ran.returncode != 0  # every task ended error/agent
    execution = json.loads((results / "s" / "tasks" / TASK / "execution.json").read_text())
    assert execution["error_type"] == "agent"
    assert "401" in execution["error_message"]
    viewed = run_cli("openadapt-evals", "view", "s", "--results-dir", str(results), home=pooled)
    assert viewed.returncode == 0, viewed.stderr
    written = b"".join(p.read_bytes() for p in (results / "s").rglob("*") if p.is_file())
    conn = sqlite3.connect(results / "s" / "queue.sqlite")
    dumped = "\n".join(conn.iterdump())
    conn.close()
    assert token.encode() not in written
    assert token not in dumped
    assert token not in ran.stdout + ran.stderr


def test_credentials_in_the_agent_url_never_silently_replace_the_token(
    pooled: Path, tmp_path: Path, echoing_agent: str
) -> None:
    url = echoing_agent.replace("http://", "http://alice:hunter2@")
    line = run_cli("openadapt-evals", "run", "--pool", "p", "--agent", "http", "--agent-url",
                   url, "--tasks", TASK, "--run-name", "u", "--results-dir",
                   str(tmp_path / "results"), home=pooled,
                   env={"OA_EVALS_AGENT_TOKEN": "tok-abcdef123456"}).assert_one_line_error()
    assert "OA_EVALS_AGENT_TOKEN" in line and "hunter2" not in line
    assert not (tmp_path / "results" / "u").exists()


@pytest.mark.parametrize(("text", "kept"), [
    ("HTTP 401: Authorization: Bearer abc123XYZ789", "HTTP 401: Authorization: Bearer "),
    ('{"error": "invalid", "api_key": "zzz9999aaa"}', '{"error": "invalid", "api_key": "'),
    ("key sk-ant-abcdefghijklmnopqrstuvwxyz rejected", "key "),
    ("AWS said AKIAABCDEFGHIJKLMNOP is unknown", "AWS said "),
    ("password=hunter22&user=x", "password="),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaA\n-----END OPENSSH PRIVATE KEY-----", ""),
])
def test_redact_text_masks_credentials_in_free_text(text: str, kept: str) -> None:
    masked = redact_text(text)
    assert masked.startswith(kept) and "***" in masked
    for secret in ("abc123XYZ789", "zzz9999aaa", "sk-ant", "AKIAABCD", "hunter22", "b3BlbnNzaA"):
        assert secret not in masked


@pytest.mark.parametrize("text", [
    "tokens_in: 1234 max_tokens=500", "the token was rejected", "Basic authentication failed",
])
def test_redact_text_leaves_ordinary_words(text: str) -> None:
    assert redact_text(text) == text


def test_a_registered_secret_is_masked_in_any_form_of_text() -> None:
    register_secret("plain-looking-value-42")
    assert redact_text("server said: plain-looking-value-42!") == "server said: ***!"


# --- the secret search (issue 28, high 1) -------------------------------------------------------
# A worker's capability (the secret first segment of its URLs) once reached the agent, the
# records, the queue and the page through the error text of an action the worker refused. Here
# a pool is made with a planted secret of no recognisable shape (only its registration can find
# it), agents send actions the worker refuses, and every byte an agent received, every file
# of the run folder (the queue's rows included) and everything the CLI printed are searched.

REFUSED = "import os\nos.system('whoami')"  # outside the worker's whitelist: 400, nothing ran
SEARCH_TASKS = f"{TASK},e112363f-4a10-536e-89c0-53e0fb3afa05-WOS"

REJECTED_AGENT = '''
import json, os
from evals.agents.base import BenchmarkAction, BenchmarkAgent

class Rejected(BenchmarkAgent):
    """Sends refused actions; writes down every observation text it is given."""

    def act(self, observation, task, history=None):
        with open(os.environ["SEEN_FILE"], "a", encoding="utf-8") as seen:
            seen.write(json.dumps({"error": observation.last_error,
                                   "result": observation.last_result,
                                   "title": observation.window_title}) + "\\n")
        step = len(history or [])
        if step == 0:
            return BenchmarkAction(type="execute_windows", code=REFUSED)
        if step == 1:
            return BenchmarkAction(type="execute", command="no-such-verb --now")
        if step == 2:
            return BenchmarkAction(type="click", target_name="No Such Button Anywhere")
        raise RuntimeError(f"giving up after {observation.last_error}")
'''.replace("REFUSED", repr(REFUSED))


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A home with a ready local pool ``s`` whose workers' secret is planted by the test."""
    from oa_vm import api

    home = tmp_path_factory.mktemp("planted") / "home"
    secret = "planted_" + secrets.token_urlsafe(24).replace("-", "_")
    folder = home / "pools" / "s"
    folder.mkdir(parents=True, mode=0o700)
    (home / "pools").chmod(0o700)
    home.chmod(0o700)
    (folder / "worker-secret").write_text(secret + "\n")
    (folder / "worker-secret").chmod(0o600)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OA_VM_HOME", str(home))
        api.create_pool(name="s", cloud="local", workers=2)
        try:
            record = api.wait_pool("s", timeout_s=READY_S)
            assert all(secret in (w.waa_url or "") for w in record.workers)  # it is in use
            yield home, secret
        finally:
            api.cleanup_pool("s", force=True)


@pytest.fixture
def recording_agent() -> Iterator[tuple[str, list[bytes]]]:
    """An http agent server on loopback that keeps every byte it receives and answers with
    actions the worker refuses (then one it cannot send, then DONE)."""
    received: list[bytes] = []
    answers = [{"action": REFUSED}, {"action": {"type": "execute", "command": "bogus --x"}},
               {"action": "pyautogui.hotkey('nonsense-key-name')"}, {"action": "DONE"}]

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            received.append(str(self.requestline).encode() + bytes(self.headers) + body)
            step = json.loads(body)["observation"]["step"]
            answer = json.dumps(answers[min(step, len(answers) - 1)]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def do_HEAD(self) -> None:
            received.append(str(self.requestline).encode() + bytes(self.headers))
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    with LoopbackHttp(Handler) as served:
        yield f"{served.url}/act", received


def _run_folder_bytes(run: Path) -> bytes:
    """Every byte of every file under ``run``, and the queue's rows as SQL text."""
    written = b"".join(p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file())
    conn = sqlite3.connect(run / "queue.sqlite")
    try:
        dumped = "\n".join(conn.iterdump()).encode()
    finally:
        conn.close()
    return written + dumped


def test_secret_search_python_agent_with_refused_actions_and_debug(
    planted: tuple[Path, str], tmp_path: Path
) -> None:
    home, secret = planted
    (tmp_path / "rejected_agent.py").write_text(REJECTED_AGENT, encoding="utf-8")
    seen = tmp_path / "seen.jsonl"
    results = tmp_path / "results"
    ran = run_cli("openadapt-evals", "run", "--pool", "s", "--agent", "rejected_agent:Rejected",
                  "--tasks", SEARCH_TASKS, "--run-name", "py", "--results-dir", str(results),
                  "--debug", home=home, timeout=300,
                  env={"PYTHONPATH": str(tmp_path), "SEEN_FILE": str(seen)})
    run = results / "py"
    records = [json.loads(p.read_text()) for p in run.rglob("execution.json")]
    assert len(records) == 2, ran.stderr
    steps = [s for r in records for s in r["steps"]]
    refused = [s["error"] for s in steps if s.get("rejected")]
    # the worker did refuse: its error texts were recorded and shown to the agent
    assert any("refused, nothing ran" in e for e in refused), refused
    assert any("/***/" in e for e in refused), refused
    assert all(r["error_type"] == "agent" for r in records)
    given = seen.read_text()
    assert "refused, nothing ran" in given
    assert secret not in given
    viewed = run_cli("openadapt-evals", "view", "py", "--results-dir", str(results), home=home)
    assert viewed.returncode == 0, viewed.stderr
    assert any(p.suffix == ".html" for p in run.rglob("*"))
    assert secret.encode() not in _run_folder_bytes(run)
    assert secret not in ran.stdout + ran.stderr + viewed.stdout + viewed.stderr


def test_secret_search_http_agent_on_a_loopback_server(
    planted: tuple[Path, str], tmp_path: Path, recording_agent: tuple[str, list[bytes]]
) -> None:
    home, secret = planted
    url, received = recording_agent
    results = tmp_path / "results"
    ran = run_cli("openadapt-evals", "run", "--pool", "s", "--agent", "http", "--agent-url",
                  url, "--tasks", SEARCH_TASKS, "--run-name", "h", "--results-dir",
                  str(results), "--debug", home=home, timeout=300)
    run = results / "h"
    records = [json.loads(p.read_text()) for p in run.rglob("execution.json")]
    assert len(records) == 2, ran.stderr
    assert all(s.get("rejected") for r in records for s in r["steps"][:3]), records
    posted = b"\n".join(received)
    assert b"refused, nothing ran" in posted  # the refusals did reach the agent server
    assert secret.encode() not in posted
    assert secret.encode() not in _run_folder_bytes(run)
    assert secret not in ran.stdout + ran.stderr


def test_a_sas_signature_is_masked_alone_in_free_text_and_in_urls() -> None:
    for text in ("sig=AbCd1234EfGh%2B%3D&se=2026-01-01&sp=r",
                 "az said: the token 'sig=AbCd1234EfGh%2B%3D' expired",
                 "https://acct.blob.core.windows.net/c/b?sv=2021&sig=AbCd1234EfGh%2B%3D"):
        masked = redact_text(text)
        assert "AbCd1234EfGh" not in masked and "sig=***" in masked, masked


def test_a_registered_secret_that_contains_another_is_masked_whole() -> None:
    inner = "inner-" + secrets.token_hex(4)
    outer = inner + "-outer-tail-" + secrets.token_hex(4)
    register_secret(inner)
    register_secret(outer)
    masked = redact_text(f"got {outer} and {inner}")
    assert masked == "got *** and ***", masked


def test_a_worker_url_registers_its_capability_whatever_its_form() -> None:
    from oa_vm.model.state import WorkerRecord

    capability = "Zq_" + secrets.token_urlsafe(20).replace("-", "_")
    worker = WorkerRecord("w1")
    worker.waa_url = f"http://127.0.0.1:40001/{capability}"
    text = f"POST {worker.waa_url}/execute_windows: request rejected (400)"
    assert capability not in redact_text(text)
    assert redact_json({"steps": [{"error": text}], "n": 1})["steps"][0]["error"] == (
        "POST http://127.0.0.1:40001/***/execute_windows: request rejected (400)")


def _app_logging_a_capability() -> tuple[str, Any]:
    """A registered capability, and a one-command Typer app that logs a warning naming a URL
    that carries it, then fails with an error naming that URL."""
    import logging

    import typer

    capability = "cap-" + secrets.token_hex(20)
    url = f"http://127.0.0.1:40002/{capability}/probe"
    register_secret(capability)
    app = typer.Typer()

    @app.command()
    def fail() -> None:
        logging.getLogger("oa_vm.test").warning("worker %s did not answer", url)
        raise RuntimeError(f"GET {url}: no answer")

    return capability, app


def test_debug_tracebacks_and_log_lines_of_the_cli_are_masked(
    capsys: pytest.CaptureFixture[str]
) -> None:
    from oa_vm.kit.clikit import run_main

    capability, app = _app_logging_a_capability()
    argv = sys.argv
    sys.argv = ["prog", "--debug"]
    try:
        with pytest.raises(SystemExit):
            run_main(app, "prog")
    finally:
        sys.argv = argv
    err = capsys.readouterr().err
    assert "Traceback" in err and "did not answer" in err and "no answer" in err
    assert capability not in err


def test_log_lines_of_a_later_command_in_the_same_process_are_masked_on_its_own_stderr(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first command's stderr is closed when the second runs (as an embedding program or a
    # test harness swaps streams): the log line goes to the stderr of the moment, masked, and
    # logging never reports a failed write with the record's arguments unmasked.
    import io
    import logging

    from oa_vm.kit.clikit import run_main

    capability, app = _app_logging_a_capability()
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])  # as a fresh process has them
    monkeypatch.setattr(sys, "argv", ["prog"])
    streams = [io.StringIO(), io.StringIO()]
    for stream in streams:
        monkeypatch.setattr(sys, "stderr", stream)
        with pytest.raises(SystemExit):
            run_main(app, "prog")
        written = stream.getvalue()
        stream.close()
        assert "did not answer" in written and capability not in written
        assert "Logging error" not in written


ISO_WITH_PASSWORD = "https://alice:hunter2pass@iso.example/win11.iso?sig=s1gn4tur3x"


@pytest.mark.parametrize("command", [
    ("image-create", "--cloud", "aws", "--region", "us-east-1"),
    ("image-create", "--cloud", "azure", "--region", "eastus"),
])
@pytest.mark.parametrize("as_json", [False, True])
def test_a_plan_shows_what_the_user_gave_it_without_its_credentials(
    home: Path, command: tuple[str, ...], as_json: bool,
) -> None:
    # The plan printed an --iso URL's user and password as given: every plan, as text or
    # JSON, is masked as error lines and records are.
    shown = run_cli("oa-vm", *command, "--iso", ISO_WITH_PASSWORD, "--plan",
                    *(("--json",) if as_json else ()), home=home)
    assert shown.returncode == 0, shown.stderr
    assert "iso.example" in shown.stdout
    for secret in ("alice", "hunter2pass", "s1gn4tur3x"):
        assert secret not in shown.stdout + shown.stderr


def test_a_worker_answering_only_errors_is_shown_while_waited_for_without_its_capability(
    home: Path, tmp_path: Path
) -> None:
    # every answer of the worker is a 500 whose text quotes its URL, capability and all
    made = run_cli("oa-vm", "pool-create", "--cloud", "local", "--workers", "1", "--name",
                   "broken", "--fault", "error-rate=1", "-y", home=home, timeout=READY_S)
    assert made.returncode == 0, made.stderr
    record = home / "pools" / "broken" / "pool.json"
    url = json.loads(record.read_text())["workers"][0]["waa_url"]
    capability = url.rstrip("/").rsplit("/", 1)[-1]
    assert capability.startswith("cap-"), url
    waited = run_cli("oa-vm", "pool-wait", "--pool", "broken", "--timeout", "3s", home=home)
    assert waited.returncode != 0, waited.stdout
    status = run_cli("oa-vm", "pool-status", "--pool", "broken", home=home)
    assert "worker-0: waa probe" in waited.stdout + waited.stderr, waited  # what it waits for
    detail = json.loads(record.read_text())["workers"][0]["detail"]
    assert "injected fault" in detail, detail
    for shown in (waited.stdout, waited.stderr, status.stdout, status.stderr, detail):
        assert capability not in shown, shown
    # a sweep waits for its pool as pool-wait does: the worker's phase shown, masked
    swept = run_cli("openadapt-evals", "sweep", "--cloud", "local", "--workers", "1", "--agent",
                    "noop", "--tasks", "1", "--fault", "error-rate=1", "--wait-timeout", "5s",
                    "--results-dir", str(tmp_path / "results"), home=home, timeout=READY_S)
    assert swept.returncode != 0, swept.stdout
    assert "worker-0: waa probe" in swept.stderr, swept.stderr
    assert "injected fault" in swept.stderr and "/***/probe" in swept.stderr, swept.stderr
