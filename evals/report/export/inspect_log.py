"""A run as an Inspect AI eval log: one sample per attempt, written by Inspect's own log API.

The log is built from Inspect's types (``EvalLog``, ``EvalSample``, ``Score``, chat messages)
and written with ``inspect_ai.log.write_eval_log``, never by imitating its file layout: the
format is Inspect's to change, and its writer follows it. What a sample holds:

- ``id`` the task ID, ``epoch`` the trial; ``input`` the instruction the agent was given;
- ``messages``: the instruction, then per step the observation (window title and screenshot,
  as a user message), the action (an assistant message with one ``computer`` tool call holding
  the action's JSON) and the worker's answer (a tool message; a refused action is its error);
- ``scores["waa_checker"]``: the checker's score, its reason, the status; none for an error,
  which is the sample's ``error`` instead (message and traceback);
- ``model_usage``: the tokens and cost the attempt recorded;
- ``metadata``: task ID, domain, worker, reset, fingerprint, trial, status, steps, cost.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evals.report.export.attempts import (
    Attempt,
    action_text,
    read_attempts,
    require_extra,
    run_facts,
)
from evals.results.records import TaskStatus
from oa_vm.kit.lazy import inspect_ai_log as ilog
from oa_vm.kit.lazy import inspect_ai_model as imodel
from oa_vm.kit.lazy import inspect_ai_scorer as iscorer
from oa_vm.kit.lazy import inspect_ai_tool as itool

SCORER = "waa_checker"
EXPORTED_BY = "openadapt-evals export"
"""The eval metadata's ``exported_by``: marks a log as this command's output."""
RUN_STATUS = {"finished": "success", "interrupted": "cancelled", "budget_stopped": "cancelled",
              "running": "started"}
"""Our run status -> Inspect's log status (a run stopped early is a cancelled eval)."""


def write_inspect_log(run_dir: Path, out: Path) -> Path:
    """Write the run's Inspect AI eval log to ``out`` (``.eval`` or ``.json``, Inspect's two
    formats, chosen by the suffix) and return its path.

    Raises:
        InvalidRunInputError: the ``inspect`` extra is missing, or the run is unreadable.
    """
    log_api = require_extra("inspect_ai.log", "inspect")
    log = build_eval_log(run_dir)
    log_api.write_eval_log(log, str(out))
    return out


def exported_log(path: Path) -> bool:
    """Whether ``path`` is a log this command wrote (its eval's metadata says so), which the
    next export may replace without ``--force`` (:func:`oa_vm.kit.safe_fs.write_out_made`)."""
    try:
        header = ilog.read_eval_log(str(path), header_only=True)
        return bool((header.eval.metadata or {}).get("exported_by") == EXPORTED_BY)
    except Exception:  # whatever Inspect cannot read as a log is not ours
        return False


def build_eval_log(run_dir: Path) -> Any:
    """The run as an ``inspect_ai.log.EvalLog`` (samples included)."""
    ilog = require_extra("inspect_ai.log", "inspect")

    metadata, manifest = run_facts(run_dir)
    agent = manifest.get("agent") or {}
    model = str(agent.get("model") or f"none/{metadata.get('agent') or 'agent'}")
    attempts = list(read_attempts(run_dir))
    samples = [_sample(a, model) for a in attempts]
    name = str(metadata.get("run") or run_dir.name)
    created = str(metadata.get("started_at") or manifest.get("created_at") or "")
    task_ids = list(dict.fromkeys(a.record.task_id for a in attempts))
    spec = ilog.EvalSpec(
        eval_id=name, run_id=name, created=created, task="windows_agent_arena",
        task_id=str(metadata.get("selection") or name),
        dataset=ilog.EvalDataset(name=str(metadata.get("selection") or ""),
                                 samples=len(task_ids), sample_ids=task_ids),
        model=model, solver=str(agent.get("class") or metadata.get("agent") or ""),
        solver_args=dict(agent.get("arguments") or {}),
        config=ilog.EvalConfig(epochs=int(metadata.get("trials") or 1),
                               max_samples=len(metadata.get("workers") or []) or None),
        packages={k: str(v) for k, v in (metadata.get("versions") or {}).items()},
        metadata={"exported_by": EXPORTED_BY, "run": name, "agent": metadata.get("agent"),
                  "sees_answers": bool(agent.get("sees_answers")
                                       or metadata.get("answer_visible_agents")),
                  "pools": [p.get("name") for p in manifest.get("pools") or []],
                  "cloud": metadata.get("cloud"),
                  "waa_upstream_commit": (manifest.get("checker") or {}).get(
                      "waa_upstream_commit")},
    )
    return ilog.EvalLog(
        status=RUN_STATUS.get(str(metadata.get("status")), "started"),
        eval=spec, plan=ilog.EvalPlan(), results=_results(samples),
        stats=ilog.EvalStats(started_at=created,
                             completed_at=str(metadata.get("ended_at") or ""),
                             model_usage=_total_usage(samples)),
        samples=samples,
    )


def _sample(attempt: Attempt, model: str) -> Any:
    record = attempt.record
    scores = None
    if record.is_outcome and record.score is not None:
        scores = {SCORER: iscorer.Score(value=record.score, explanation=record.reason,
                                        answer=record.last_action,
                                        metadata={"status": record.status.value,
                                                  "reward_components": record.reward_components})}
    usage = {}
    if record.cost.tokens_in or record.cost.tokens_out or record.cost.model_usd:
        usage[model] = imodel.ModelUsage(
            input_tokens=record.cost.tokens_in, output_tokens=record.cost.tokens_out,
            total_tokens=record.cost.tokens_in + record.cost.tokens_out,
            total_cost=record.cost.model_usd or None)
    return ilog.EvalSample(
        id=record.task_id, epoch=record.trial, input=record.instruction,
        target="infeasible" if record.infeasible else "", messages=_messages(attempt),
        scores=scores, model_usage=usage, error=_error(attempt),
        started_at=record.started_at, completed_at=record.ended_at,
        total_time=record.duration_s,
        metadata={
            "task_id": record.task_id, "domain": record.domain, "worker": record.worker,
            "reset": record.reset, "reset_s": record.reset_s, "fingerprint": record.fingerprint,
            "trial": record.trial, "status": record.status.value,
            "error_type": None if record.error_type is None else record.error_type.value,
            "steps": len(record.steps), "attempts": record.attempts, "egress": record.egress,
            "cost": {"vm_usd": record.cost.vm_usd, "model_usd": record.cost.model_usd,
                     "total_usd": record.cost.total_usd,
                     "worker_seconds": record.cost.worker_seconds},
        },
    )


def _messages(attempt: Attempt) -> list[Any]:
    messages: list[Any] = [imodel.ChatMessageUser(content=attempt.record.instruction)]
    for step in attempt.record.steps:
        seen: list[Any] = [imodel.ContentText(text=f"Step {step.index}: window "
                                                   f"{step.window_title or '(unknown)'}")]
        png = attempt.screenshot(step)
        if png is not None:
            seen.append(imodel.ContentImage(
                image="data:image/png;base64," + base64.b64encode(png).decode("ascii")))
        messages.append(imodel.ChatMessageUser(content=seen))
        if not step.action:
            continue
        call_id = f"step-{step.index}"
        messages.append(imodel.ChatMessageAssistant(
            content=action_text(step),
            tool_calls=[itool.ToolCall(id=call_id, function="computer",
                                       arguments=dict(step.action))],
            model=None,
        ))
        if step.result is not None or step.error is not None:
            messages.append(imodel.ChatMessageTool(
                content=_result_text(step.result), tool_call_id=call_id, function="computer",
                error=None if not step.error else itool.ToolCallError(type="unknown",
                                                                       message=step.error)))
    return messages


def _result_text(result: Mapping[str, Any] | None) -> str:
    return "\n".join(str(result[k]) for k in ("status", "output", "error")
                     if result and result.get(k))


def _error(attempt: Attempt) -> Any:
    record = attempt.record
    if record.status is not TaskStatus.ERROR and record.status is not TaskStatus.NOT_RUN:
        return None
    kind = "" if record.error_type is None else f"{record.error_type.value}: "
    trace = record.agent_traceback or record.task_traceback or ""
    return ilog.EvalError(message=f"{kind}{record.error_message or ''}", traceback=trace,
                          traceback_ansi=trace)


def _results(samples: list[Any]) -> Any:
    values = [float(s.scores[SCORER].value) for s in samples if s.scores]
    metrics = {}
    if values:
        metrics["mean"] = ilog.EvalMetric(name="mean", value=sum(values) / len(values))
        metrics["success_rate"] = ilog.EvalMetric(
            name="success_rate",
            value=sum(1 for s in samples if s.scores
                      and s.scores[SCORER].metadata["status"] == "success") / len(values))
    return ilog.EvalResults(
        total_samples=len(samples), completed_samples=len(values),
        scores=[ilog.EvalScore(name=SCORER, scorer=SCORER, scored_samples=len(values),
                               unscored_samples=len(samples) - len(values), metrics=metrics)],
    )


def _total_usage(samples: list[Any]) -> dict[str, Any]:
    total: dict[str, Any] = {}
    for sample in samples:
        for model, usage in sample.model_usage.items():
            total[model] = total[model] + usage if model in total else imodel.ModelUsage(
                **usage.model_dump())
    return total
