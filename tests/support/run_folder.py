"""Build run folders for tests by writing the documented files directly.

A run folder is the contract between the runner (which writes it) and the presentation code
(metrics, viewer, compare, which read it). Building one by hand lets the presentation tests pin the
documented format instead of whatever the runner happens to write today; the integration tests
cover what the runner really writes.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

_T0 = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)
_PALETTE = [(31, 95, 160), (40, 120, 80), (150, 70, 40), (90, 60, 140), (30, 110, 120)]


def screenshot_png(step: int, *, size: tuple[int, int] = (1280, 800), label: str = "") -> bytes:
    """A desktop-like PNG (wallpaper, a window, a task bar) that differs from step to step."""
    width, height = size
    image = Image.new("RGB", size, _PALETTE[step % len(_PALETTE)])
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, height - 40, width, height), fill=(20, 20, 24))
    left, top = 80 + 40 * step, 60 + 30 * step
    draw.rectangle((left, top, left + width // 2, top + height // 2), fill=(245, 245, 245))
    draw.rectangle((left, top, left + width // 2, top + 28), fill=(200, 205, 215))
    draw.text((left + 10, top + 8), f"{label} step {step}", fill=(0, 0, 0))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@dataclass
class TaskSpec:
    """What one task record should say; :meth:`RunFolder.add_task` turns it into files."""

    task_id: str
    domain: str = "notepad"
    status: str = "success"
    score: float | None = None
    error_type: str | None = None
    error_message: str | None = None
    reason: str | None = None
    steps: int = 2
    screenshots: bool = True
    worker: str | None = "w0"
    instruction: str = ""
    infeasible: bool = False
    vm_usd: float = 0.0
    worker_seconds: float = 0.0
    model_usd: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    step_error: str | None = None


@dataclass
class RunFolder:
    """A run folder under ``root`` named ``run``, filled task by task, then :meth:`finish`-ed."""

    root: Path
    run: str = "run-a"
    agent: str = "noop"
    pool: str = "local-test"
    cloud: str = "local"
    status: str = "finished"
    price_per_hour: float | None = None
    extra_metadata: dict[str, Any] = field(default_factory=dict)
    task_ids: list[str] = field(default_factory=list)

    @property
    def path(self) -> Path:
        """The run folder itself."""
        return self.root / self.run

    def add(self, spec: TaskSpec) -> Path:
        """Write ``tasks/<id>/task.json``, ``execution.json`` and its screenshots."""
        folder = self.path / "tasks" / spec.task_id
        folder.mkdir(parents=True, exist_ok=True)
        self.task_ids.append(spec.task_id)
        instruction = spec.instruction or f"Do the {spec.task_id} thing"
        task = {"id": spec.task_id, "instruction": instruction, "config": [], "evaluator": {}}
        (folder / "task.json").write_text(json.dumps(task), encoding="utf-8")
        if spec.status == "not_run":
            steps: list[dict[str, Any]] = []
        else:
            steps = [self._step(folder, spec, i) for i in range(spec.steps)]
        started = _T0 + timedelta(seconds=10 * len(self.task_ids))
        score = spec.score
        if score is None and spec.status in ("success", "failure"):
            score = 1.0 if spec.status == "success" else 0.0
        execution = {
            "task_id": spec.task_id,
            "domain": spec.domain,
            "instruction": instruction,
            "infeasible": spec.infeasible,
            "status": spec.status,
            "score": score,
            "error_type": spec.error_type,
            "error_message": spec.error_message,
            "reason": spec.reason,
            "worker": None if spec.status == "not_run" else spec.worker,
            "attempts": 0 if spec.status == "not_run" else 1,
            "started_at": None if spec.status == "not_run" else started.isoformat(),
            "ended_at": None if spec.status == "not_run" else (started + timedelta(seconds=4))
            .isoformat(),
            "duration_s": None if spec.status == "not_run" else 4.0,
            "last_action": steps[-1]["action"]["type"].upper() if steps else None,
            "steps": steps,
            "cost": {
                "worker_seconds": spec.worker_seconds,
                "vm_usd": spec.vm_usd,
                "tokens_in": spec.tokens_in,
                "tokens_out": spec.tokens_out,
                "model_usd": spec.model_usd,
                "total_usd": spec.vm_usd + spec.model_usd,
            },
        }
        (folder / "execution.json").write_text(json.dumps(execution, indent=2), encoding="utf-8")
        return folder

    def add_task(self, task_id: str, **kwargs: Any) -> Path:
        """Shorthand for ``add(TaskSpec(task_id, **kwargs))``."""
        return self.add(TaskSpec(task_id, **kwargs))

    def finish(self) -> Path:
        """Write ``metadata.json`` and return the run folder."""
        self.path.mkdir(parents=True, exist_ok=True)
        metadata = {
            "run": self.run,
            "pool": self.pool,
            "cloud": self.cloud,
            "agent": self.agent,
            "selection": ",".join(self.task_ids),
            "task_ids": list(self.task_ids),
            "max_steps": 15,
            "max_attempts": 3,
            "task_timeout_s": 600.0,
            "max_cost_usd": None,
            "price_per_hour": self.price_per_hour,
            "versions": {"oa_vm": "0.1.0", "python": "3.11"},
            "started_at": _T0.isoformat(),
            "ended_at": (_T0 + timedelta(minutes=3)).isoformat(),
            "status": self.status,
            **self.extra_metadata,
        }
        (self.path / "metadata.json").write_text(json.dumps(metadata, indent=2), encoding="utf-8")
        return self.path

    @staticmethod
    def _step(folder: Path, spec: TaskSpec, index: int) -> dict[str, Any]:
        last = index == spec.steps - 1
        if last and spec.status != "error":
            action: dict[str, Any] = {"type": "done"}
        else:
            action = {"type": "execute", "command": f"type_text 'line {index}' <&>"}
        shot: str | None = None
        if spec.screenshots:
            shot = f"step_{index:03d}.png"
            (folder / shot).write_bytes(screenshot_png(index, label=spec.task_id))
        error = spec.step_error if last and spec.status == "error" else None
        return {
            "index": index,
            "action": action,
            "started_at": (_T0 + timedelta(seconds=index)).isoformat(),
            "duration_s": 0.25,
            "screenshot": shot,
            "window_title": f"{spec.task_id} - Notepad <draft>",
            "result": None if error else {"status": "success", "output": "", "returncode": 0},
            "error": error,
        }
