"""Running the agent headless on one task (a graph.session.Session on a new thread) and summing up its outcome."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from pydantic import BaseModel, Field

from graph.checkpoint import DEFAULT_DB, display_name, open_checkpointer
from graph.session import Session
from nodes.attempts import last_ir, repair_rounds
from nodes.context import Context
from nodes.state import Usage
from tools.world import World


class RunOutput(BaseModel):
    status: str
    decision: dict[str, Any]
    rounds: int = Field(description="repair rounds used (nodes.attempts.repair_rounds): 0 when the first IR passed")
    ir: dict[str, Any] | None = Field(
        default=None, description="the last round's IR (what the decision binds; `cloudbrain validate --ir` reads it)"
    )
    thread_id: str
    db: str | None
    task_id: str
    explanation: dict[str, Any] | None = None
    failure: dict[str, Any] | None = None
    interrupted: dict[str, Any] | None = Field(default=None, description="the pending interrupt, interactive runs")
    usage: dict[str, Any] = Field(default_factory=dict)
    backend: dict[str, Any] | None = Field(
        default=None, description="openai:<model> runs: the server and the structured-output mode it settled on"
    )


def new_thread_id() -> str:
    return f"run-{uuid.uuid4().hex[:12]}"


def total_usage(attempts: list[dict[str, Any]]) -> dict[str, Any]:
    keys = tuple(Usage.model_fields)
    return {k: round(sum((a.get("usage") or {}).get(k, 0) for a in attempts), 4) for k in keys}


def summarise(values: dict[str, Any], *, thread_id: str, db: str | None, interrupted: Any = None) -> RunOutput:
    attempts = values.get("attempts") or []
    return RunOutput(
        status=values.get("status") or "human_confirm",
        decision=values.get("decision") or {},
        rounds=repair_rounds(values),
        ir=last_ir(values),
        thread_id=thread_id,
        db=db,
        task_id=values.get("task_id", ""),
        explanation=(values.get("explanation") or {}).get("result"),
        failure=values.get("failure"),
        interrupted=interrupted,
        usage=total_usage(attempts),
    )


def run_task(world: World, instruction: str, **options: Any) -> RunOutput:
    """One headless run (options as `run_task_values`: context, thread_id, db or checkpointer, task_id, gold_ir,
    scenario_type, world_path). `db` picks the SQLite file or postgres:// URL; pass `checkpointer` to use another saver instead."""
    return run_task_values(world, instruction, **options)[0]


def run_task_values(
    world: World,
    instruction: str,
    *,
    context: Context,
    thread_id: str | None = None,
    db: str | Path | None = DEFAULT_DB,
    checkpointer: BaseCheckpointSaver | None = None,
    task_id: str | None = None,
    gold_ir: dict[str, Any] | None = None,
    scenario_type: str = "",
    world_path: str | None = None,
) -> tuple[RunOutput, dict[str, Any]]:
    """`run_task`, plus the final state's values (attempts, IR, tool results) for the evaluation's records.
    `world_path`: the file `world` was read from, stored with the run's settings for the commands it prints."""
    session = Session(checkpointer or open_checkpointer(db or DEFAULT_DB), context)
    thread_id = thread_id or new_thread_id()
    # The final values as invoke returns them ("__interrupt__" added when paused, as LangGraph documents), not
    # re-read from the checkpointer: get_state would deserialise every channel again, a tenth of a task's time.
    values = session.start(
        world,
        instruction,
        thread_id=thread_id,
        task_id=task_id,
        gold_ir=gold_ir,
        scenario_type=scenario_type,
        world_path=world_path,
    )
    interrupts = values.pop("__interrupt__", None)
    interrupted = interrupts[0].value if interrupts else None
    db_name = None if checkpointer is not None else display_name(db or DEFAULT_DB)
    return summarise(values, thread_id=thread_id, db=db_name, interrupted=interrupted), values
