"""What the queue tests read back: tasks per state and a task's final record, through the
queue's own reads (the dispatcher needs neither)."""

from __future__ import annotations

from typing import Any

from evals.run.queue import QueueStatus, TaskQueue


def queue_counts(queue: TaskQueue) -> dict[str, int]:
    """Tasks per queue state (every state present, zeros included)."""
    return {status.value: len(queue.ids_with_status(status)) for status in QueueStatus}


def final_record(queue: TaskQueue, task_id: str) -> dict[str, Any] | None:
    """The committed final record of a done task, else ``None``."""
    return queue.records().get(task_id)
