"""generate_ir: the LLM (or a reference model) writes the LowAltitudeIR answer for this round.

Transport errors propagate: the node's RetryPolicy retries them, then the graph's error handler routes to
fallback (graph/builder.py). Everything else about the answer is judged by `validate`, not here.
"""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from ir.fidelity import StatedConstraints
from models.base import GenerationRequest, RepairFeedback, RetrievedContext
from models.factory import ModelSettings, init_ir_writer
from models.grounded_schema import grounded_answer_schema
from nodes.context import Context
from nodes.reading import reading_update
from nodes.run_world import world_from_state
from nodes.state import State, Usage, override
from tools.catalog import default_registry

READS = ("instruction", "world", "task_id", "retrieved", "feedback", "round", "gold_ir", "reading")


def generate_ir(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = runtime.context
    settings = ModelSettings(
        base_url=ctx.base_url,
        api_key=ctx.api_key,
        structured_output=ctx.structured_output,
        ir_format=ctx.ir_format,
        max_new_tokens=ctx.max_new_tokens,
    )
    generator = init_ir_writer(ctx.model, settings, sample_gold=state.get("gold_ir"))
    feedback = state.get("feedback")
    world, task_id = world_from_state(state), state.get("task_id") or "task"
    # Backends that can constrain their output get the world-grounded schema: no unknown id can be written.
    grounded = getattr(generator, "accepts_json_schema", False)
    kept = reading_update(state, world)
    request = GenerationRequest(
        instruction=state["instruction"],
        world=world,
        task_id=task_id,
        retrieved=RetrievedContext.model_validate(state.get("retrieved") or {}),
        feedback=RepairFeedback.model_validate(feedback) if feedback else None,
        round=state.get("round", 0),
        json_schema=grounded_answer_schema(world, default_registry(), task_id) if grounded else None,
        reading=StatedConstraints.model_validate(kept.get("reading") or state["reading"]),
    )
    result = generator.generate(request)
    answer = result.answer or {}
    return {
        **kept,
        "raw_output": result.raw_text,
        "answer": {
            "rationale_summary": answer.get("rationale_summary", ""),
            "uncertainty": answer.get("uncertainty", {}),
            "model": result.model,
            "prompt_version": result.prompt_version,
            "cached": result.cached,
        },
        # A new round starts: nothing judged about the previous IR may leak into it.
        "round_started_at": time.time(),
        "attempt_open": True,
        "usage": Usage.of_generation(result).model_dump(),
        "ir": None,
        "validation": None,
        "tool_results": override([]),
        "candidate": None,
        "verdict": None,
        "simulation": None,
        "failure": None,
    }
