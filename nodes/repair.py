"""repair: closes the failed round, then either hands the counterexample back to the LLM or gives up.

The round cap is the graph's own (Context.max_repairs, default 3): LangGraph's recursion limit is no guard.
Similar past repairs come from the safety memory, filtered by failure type, as few-shot examples.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from graph.context import Context
from graph.state import State
from nodes.attempts import close_attempt

READS = ("failure", "ir", "round", "instruction", "context")


def _similar_repairs(state: State, ctx: Context, failure: dict[str, Any]) -> list[str]:
    if ctx.memory is None:
        return []
    counterexample = failure.get("counterexample") or {}
    query = (
        f"{state.get('instruction', '')} | {failure.get('error_type')}: {counterexample.get('suggested_repair', '')}"
    )
    hits = ctx.memory.search_cases(query, failure_type=failure.get("error_type"), k=ctx.top_k_cases)
    return [ctx.memory.format_case_for_prompt(hit) for hit in hits]


def repair(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = runtime.context
    failure = state.get("failure") or {}
    next_round = state.get("round", 0) + 1
    update: dict[str, Any] = {**close_attempt(state), "round": next_round}
    if next_round > ctx.max_repairs:
        return {**update, "repair_exhausted": True}
    counterexample = failure.get("counterexample") or {}
    context = dict(state.get("context") or {})
    context["repair_cases"] = _similar_repairs(state, ctx, failure)
    return {
        **update,
        "repair_exhausted": False,
        "context": context,
        "feedback": {
            "counterexample": counterexample,
            "allowed": counterexample.get("allowed", []),
            "previous_ir": state.get("ir"),
        },
    }
