"""Running the agent on one task: build the graph for the ablation set, invoke it on a thread, summarise."""

from __future__ import annotations

import functools
import uuid
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, Field

from graph.builder import build_graph, parse_without
from graph.checkpoint import DEFAULT_DB, display_name, open_checkpointer, thread_config
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


def run_config_of(context: Context, world_path: str | None = None) -> dict[str, Any]:
    """The non-secret part of a Context, stored with the run so replay and fork rebuild the same graph; with the
    world file's path where the run read one (the commands replay and fork print name it)."""
    return {
        "model": context.model,
        "base_url": context.base_url,
        "structured_output": context.structured_output,
        "ir_format": context.ir_format,
        "max_repairs": context.max_repairs,
        "stress_level": context.stress_level,
        "sim_seed": context.sim_seed,
        "stress_scenarios": context.stress_scenarios,
        "without": sorted(context.without),
        "top_k_cases": context.top_k_cases,
        "max_new_tokens": context.max_new_tokens,
        **({"world_path": world_path} if world_path else {}),
    }


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


@functools.lru_cache(maxsize=16)
def compiled_graph(without: frozenset[str], saver: BaseCheckpointSaver) -> CompiledStateGraph:
    """One compiled graph per ablation set and saver: compiling costs ~30 ms, more than a whole oracle-model
    task's graph overhead, and a compiled graph serves any number of threads."""
    return build_graph(without, checkpointer=saver)


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
    saver = checkpointer or open_checkpointer(db or DEFAULT_DB)
    graph = compiled_graph(parse_without(context.without), saver)
    thread_id = thread_id or new_thread_id()
    config = thread_config(thread_id)
    inputs = {
        "instruction": instruction,
        "world": world.model_dump(mode="json"),
        "task_id": task_id or thread_id,
        "gold_ir": gold_ir,
        "run_config": run_config_of(context, world_path),
        "scenario_type": scenario_type,
    }
    # The final values as invoke returns them ("__interrupt__" added when paused, as LangGraph documents), not
    # re-read from the checkpointer: get_state would deserialise every channel again, a tenth of a task's time.
    values = dict(graph.invoke(inputs, config, context=context))
    interrupts = values.pop("__interrupt__", None)
    interrupted = interrupts[0].value if interrupts else None
    db_name = None if checkpointer is not None else display_name(db or DEFAULT_DB)
    return summarise(values, thread_id=thread_id, db=db_name, interrupted=interrupted), values
