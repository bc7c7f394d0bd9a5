"""cloudbrain_full and its ablations: the agent graph itself, run headless on the worker's checkpointer.

The ablations are the graph's own `--without` switches (graph/builder.py): `cloudbrain_no_repair` is the full
graph with the repair node removed, and so on. Nothing here re-implements a node.
"""

from __future__ import annotations

from typing import Any, ClassVar

from evaluation.methods.base import Method, MethodRun, MethodSetup, MethodTask, MethodUsage, TracedToolCall
from evaluation.records import Stage
from graph.runner import run_task_values
from graph.settings import RunSettings
from ir.decision import Decision
from memory.embeddings import shared_embedder
from nodes.context import Context

# The node (and, for validate, the validator stage) where a failure happened -> the evaluation's stage names.
VALIDATION_STAGES: dict[str, Stage] = {
    "json": "ir",
    "schema": "ir",
    "entity_grounding": "grounding",
    "constraint_grounding": "grounding",
    "tool_dependency": "tool",
    "policy": "policy",
}
NODE_STAGES: dict[str, Stage] = {
    "generate_ir": "ir",
    "verify": "verification",
    "simulate": "simulation",
    "fidelity": "grounding",  # the plan goes elsewhere, or with another UAV, than the request grounded
    "finalize": "policy",
    "fallback": "policy",
}
PLANNING_TOOLS = frozenset({"plan_route", "assign_uav"})


def failure_stage(failure: dict[str, Any]) -> Stage:
    """The evaluation's stage of a graph Failure (ir.failure.Failure as JSON)."""
    node = failure.get("stage", "")
    where = str((failure.get("counterexample") or {}).get("failure_stage") or "")
    if node == "validate":
        return VALIDATION_STAGES.get(where.removeprefix("validate."), "ir")
    if node in ("execute_tools", "direct_tools"):
        tool = where.rpartition(".")[2]
        return "planning" if tool in PLANNING_TOOLS else "tool"
    return NODE_STAGES.get(node, "policy")


def first_failing_stage(attempts: list[dict[str, Any]], status: str) -> Stage | None:
    for attempt in attempts:
        if attempt.get("failure"):
            return failure_stage(attempt["failure"])
    # No stage failed, yet no execute: the R8 policy in finalize turned it into a confirmation request.
    return None if status == "execute" else "policy"


def traced_calls(attempts: list[dict[str, Any]]) -> list[TracedToolCall]:
    return [
        TracedToolCall(
            tool=r["tool"],
            ok=bool(r.get("ok")),
            error_type=(r.get("error") or {}).get("type"),
            latency_sec=float(r.get("latency_sec") or 0.0),
        )
        for attempt in attempts
        for r in attempt.get("tool_results") or []
    ]


class CloudBrain(Method):
    """The agent graph with a set of its parts removed (none for cloudbrain_full)."""

    model_kinds = frozenset({"llm", "rules", "oracle"})
    summary: ClassVar[str] = "the full agent: typed IR, layered validation, tools, verifier, simulator, K repairs"

    def __init__(self, name: str = "cloudbrain_full", without: frozenset[str] = frozenset(), summary: str = ""):
        self.name = name
        self.without = without
        self.summary = summary or (
            CloudBrain.summary if not without else f"cloudbrain_full without {', '.join(sorted(without))}"
        )

    def _context(self, setup: MethodSetup) -> Context:
        settings = RunSettings(
            model=setup.model,
            base_url=setup.base_url,
            api_key=setup.api_key,
            structured_output=setup.structured_output,
            ir_format=setup.ir_format,
            # One model call writes the IR and each repair round makes one more: K fits the call budget.
            max_repairs=min(setup.budget.max_repairs, setup.budget.max_llm_calls - 1),
            max_new_tokens=setup.budget.max_new_tokens,
            sim_seed=setup.sim_seed,
            without=self.without | ({"memory"} if setup.memory is None else set()),
        )
        return settings.to_context(memory=setup.memory)  # the worker's memory, never one opened here

    def warm_up(self) -> None:
        # The embedding model of the context node and the memory: ~12 s to import and load, once per process.
        shared_embedder().encode(["warm-up"])

    def run(self, task: MethodTask, setup: MethodSetup) -> MethodRun:
        output, values = run_task_values(
            task.world,
            task.instruction,
            context=self._context(setup),
            thread_id=setup.thread_id,
            checkpointer=setup.checkpointer,
            task_id=task.sample_id,
            gold_ir=task.gold_ir,
            scenario_type=task.scenario_type,
        )
        attempts = list(values.get("attempts") or [])
        executed = output.status == "execute"
        return MethodRun(
            decision=Decision.model_validate(output.decision or {"status": output.status}),
            ir=values.get("ir") or next((a["ir"] for a in reversed(attempts) if a.get("ir")), None),
            tool_calls=traced_calls(attempts),
            repair_rounds=output.rounds,
            success_round=output.rounds if executed else None,
            first_failing_stage=first_failing_stage(attempts, output.status),
            usage=MethodUsage.model_validate(output.usage),
            trace={
                "thread_id": output.thread_id,
                "without": sorted(self.without),
                "failure": output.failure,
                "attempts": attempts,
            },
        )
