"""llm_p (LLM+P): the model writes the planning problem, a classical planner solves it, the plan is the decision.

The model's one answer is a LowAltitudeIR; only its problem part is used (origin, destination, via points,
payload, altitude band, deadline, zones to avoid, candidate UAV): its tool plan is replaced by the planner's
fixed one, UAV assignment then the 3D A* route. The validator checks that the problem is well-formed and
grounded, as a PDDL parser would. There is no verifier, no simulator and no repair: whatever the planner finds
for the stated problem is executed, and a malformed or unsolvable problem ends in the IR's fallback policy.
"""

from __future__ import annotations

import json
from typing import Any

from evaluation.methods.base import Method, MethodRun, MethodSetup, MethodTask, MethodUsage, TracedToolCall
from evaluation.methods.cloudbrain import VALIDATION_STAGES
from ir.decision import Decision
from ir.model import HUMAN_CONFIRM_POLICIES
from ir.plan_execution import execute_plan
from ir.validation import validate_ir
from models.base import GenerationRequest, LLMTransportError
from models.factory import ModelSettings, init_ir_writer
from models.grounded_schema import grounded_answer_schema
from tools.catalog import ACTION_TOOLS, default_registry

PLANNER_STEPS: list[dict[str, Any]] = [
    {"id": "assign", "tool": "assign_uav", "args": {}, "depends_on": []},
    {"id": "route", "tool": "plan_route", "args": {}, "depends_on": ["assign"]},
]


def with_planner_steps(answer: dict[str, Any] | None) -> dict[str, Any] | None:
    """The answer with its IR's tool plan replaced by the planner's (None when there is no IR to take)."""
    body = (answer or {}).get("low_altitude_ir")
    if not isinstance(body, dict):
        return None
    return {**answer, "low_altitude_ir": {**body, "tool_plan": PLANNER_STEPS}}


def fallback_status(ir: dict[str, Any] | None) -> str:
    policy = (ir or {}).get("fallback_policy")
    return "human_confirm" if policy in {p.value for p in HUMAN_CONFIRM_POLICIES} else "safe_refusal"


class LLMPlusP(Method):
    name = "llm_p"
    summary = "LLM+P: the model states the planning problem, assign_uav + 3D A* solve it; no verifier, no repair"
    model_kinds = frozenset({"llm", "rules", "oracle"})

    def run(self, task: MethodTask, setup: MethodSetup) -> MethodRun:
        registry = default_registry()
        try:
            settings = ModelSettings(
                base_url=setup.base_url,
                api_key=setup.api_key,
                structured_output=setup.structured_output,
                ir_format=setup.ir_format,
                max_new_tokens=setup.budget.max_new_tokens,
            )
            generator = init_ir_writer(setup.model, settings, sample_gold=task.gold_ir)
            grounded = getattr(generator, "accepts_json_schema", False)
            result = generator.generate(
                GenerationRequest(
                    instruction=task.instruction,
                    world=task.world,
                    task_id=task.sample_id,
                    json_schema=grounded_answer_schema(task.world, registry, task.sample_id) if grounded else None,
                )
            )
        except LLMTransportError as exc:
            reason = f"model unavailable: {exc}"
            return MethodRun(decision=Decision(status="human_confirm", reason=reason), first_failing_stage="ir")
        usage = MethodUsage.of_generation(result)
        problem = with_planner_steps(result.answer)
        report = validate_ir(json.dumps(problem) if problem else result.raw_text, task.world, registry)
        ir = report.ir.model_dump(mode="json") if report.ir is not None else None
        trace: dict[str, Any] = {"raw_output": result.raw_text, "validation": report.model_dump(mode="json")}
        if not report.valid or report.ir is None:
            stage = VALIDATION_STAGES.get(report.stage or "json", "ir")
            reason = f"planning problem rejected at {report.stage}: {report.error_type}: {report.message}"
            decision = Decision(status=fallback_status(ir), reason=reason)
            return MethodRun(decision=decision, ir=ir, first_failing_stage=stage, usage=usage, trace=trace)
        plan = execute_plan(report.ir, task.world, registry, seed=setup.sim_seed, only_tools=ACTION_TOOLS)
        calls = [
            TracedToolCall(
                tool=r.tool,
                ok=r.result.ok,
                error_type=r.result.error.type if r.result.error else None,
                args=r.args,
                latency_sec=r.result.latency_sec,
            )
            for r in plan.results
        ]
        if not plan.ok or plan.decision is None:
            failed = plan.failure.type if plan.failure else "no route"
            decision = Decision(status=fallback_status(ir), reason=f"the planner found no plan: {failed}")
            return MethodRun(
                decision=decision, ir=ir, tool_calls=calls, first_failing_stage="planning", usage=usage, trace=trace
            )
        decision = Decision(
            status="execute", reason="planner solution of the stated problem", **plan.decision.model_dump()
        )
        return MethodRun(decision=decision, ir=ir, tool_calls=calls, success_round=0, usage=usage, trace=trace)
