"""Runs a LowAltitudeIR's tool plan: dependency order, argument filling, stop at the first failing step.

An IR's tool calls may be partial: missing arguments are filled from the IR's entities, constraints and
verification specs, and from the outputs of the steps that ran before (assign_uav's uav_id feeds plan_route,
plan_route's waypoints feed verification, simulation and risk, ...). Arguments the IR gives always win.

The static part (`analyse_plan`) is shared with the validator's tool_dependency stage and the CLI, so what the
validator accepts is exactly what the executor can run.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field
from rapidfuzz import process, utils

from ir.model import LowAltitudeIR, ToolCallSpec
from tools.contract import ToolErrorInfo, ToolResult
from tools.dependencies import find_cycle
from tools.registry import ToolRegistry
from tools.world import World

StressLevel = Literal["low", "medium", "high"]
ALL_EARLIER_RESULTS = "*"
MAX_SUGGESTIONS = 5


def nearest(value: str, candidates: list[str], preferred: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Candidates ranked by string similarity to `value`, the `preferred` ones first, at most MAX_SUGGESTIONS."""
    ranked = [m for m, _, _ in process.extract(value, candidates, processor=utils.default_process, limit=None)]
    return sorted(ranked, key=lambda c: c not in preferred)[:MAX_SUGGESTIONS]


@dataclass(frozen=True)
class Flow:
    """`consumer.arg` takes `producer`'s `result[key]` when the IR's call leaves `arg` out.

    `required`: the consumer cannot do its job without it, so a plan with no earlier producer is rejected.
    `ir_first`: a value filled from the IR beats this flow (plan_route starts at the origin when there is one).
    """

    consumer: str
    arg: str
    producer: str
    key: str
    required: bool = False
    ir_first: bool = False


FLOWS: tuple[Flow, ...] = (
    Flow("plan_route", "uav_id", "assign_uav", "uav_id", required=True),
    Flow("plan_route", "start", "assign_uav", "uav_id", ir_first=True),
    *(
        flow
        for consumer in ("verify_ltl_stl", "simulate_scenario", "risk_assess")
        for flow in (
            Flow(consumer, "waypoints", "plan_route", "waypoints", required=True),
            Flow(consumer, "uav_id", "plan_route", "uav_id"),
        )
    ),
    Flow("risk_assess", "sim_events", "simulate_scenario", "events"),
)
# explain_decision receives every earlier result and the decision built from them (see _linked_values).
EXPLAIN_TOOL = "explain_decision"


class PlanProblem(BaseModel):
    """A defect of the plan itself, found before any tool runs (the validator's tool_dependency errors)."""

    error_type: Literal["dependency_missing", "cycle"]
    step_id: str
    field: str
    value: Any = None
    allowed: list[str] = Field(default_factory=list)
    message: str
    suggested_action: str


class PlannedStep(BaseModel):
    """One step as it will run: where each of its arguments comes from."""

    step_id: str
    index: int = Field(description="position in the IR's tool_plan")
    tool: str
    given: dict[str, Any] = Field(description="arguments the IR wrote; they win over everything else")
    from_ir: dict[str, Any] = Field(description="filled from entities, constraints and verification specs")
    from_steps: dict[str, str] = Field(
        default_factory=dict, description="arg -> '<step_id>.<result key>' it receives at run time"
    )

    def preview(self) -> dict[str, Any]:
        """The arguments the tool would receive, with run-time values shown as <step.key> placeholders."""
        linked = {arg: f"<{source}>" for arg, source in self.from_steps.items()}
        return {**self.from_ir, **linked, **self.given}


class PlanAnalysis(BaseModel):
    steps: list[PlannedStep] = Field(description="in execution order (steps stuck on a cycle last)")
    problem: PlanProblem | None = None


class StepRecord(BaseModel):
    step_id: str
    tool: str
    args: dict[str, Any]
    result: ToolResult


class DecisionCandidate(BaseModel):
    uav_id: str | None = None
    waypoints: list[list[float]]
    eta_sec: float | None = None
    energy_wh: float | None = None


class PlanExecution(BaseModel):
    results: list[StepRecord] = Field(default_factory=list)
    failed_step: str | None = None
    failure: ToolErrorInfo | None = None
    recoverable: bool | None = None
    decision: DecisionCandidate | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None


# --- ordering ---------------------------------------------------------------------------------------------


def execution_order(steps: list[ToolCallSpec]) -> tuple[list[ToolCallSpec], list[ToolCallSpec]]:
    """Stable topological order (ties keep the IR's order) and the steps stuck on a cycle.

    A depends_on naming no step is ignored here; `analyse_plan` reports it.
    """
    known = {s.id for s in steps}
    pending = list(steps)
    done: set[str] = set()
    ordered: list[ToolCallSpec] = []
    while pending:
        ready = next((s for s in pending if all(d in done for d in s.depends_on if d in known)), None)
        if ready is None:
            break
        ordered.append(ready)
        done.add(ready.id)
        pending.remove(ready)
    return ordered, pending


def _first_cycle(stuck: list[ToolCallSpec], index_of: dict[str, int]) -> list[str]:
    """One depends_on cycle among the stuck steps, from its earliest step in the IR, with that step repeated at the
    end."""
    cycle = find_cycle({s.id: s.depends_on for s in stuck})[:-1]
    start = min(range(len(cycle)), key=lambda i: index_of[cycle[i]])
    return [*cycle[start:], *cycle[:start], cycle[start]]


def _ancestors(step: ToolCallSpec, by_id: dict[str, ToolCallSpec]) -> set[str]:
    seen: set[str] = set()
    stack = [d for d in step.depends_on if d in by_id]
    while stack:
        current = stack.pop()
        if current not in seen:
            seen.add(current)
            stack.extend(d for d in by_id[current].depends_on if d in by_id)
    return seen


# --- argument filling -------------------------------------------------------------------------------------


def ir_tool_args(
    tool: str, ir: LowAltitudeIR, *, seed: int = 0, stress_level: StressLevel = "medium"
) -> dict[str, Any]:
    """What the IR says about each argument of `tool` (names as in the tools' args models; none for unknown tools)."""
    ents, cons, specs = ir.entities, ir.constraints, ir.verification_specs
    band = {"altitude_min_m": cons.altitude_min_m, "altitude_max_m": cons.altitude_max_m}
    safety = {
        "min_separation_m": cons.min_separation_m,
        "deadline_sec": cons.deadline_sec,
        "battery_reserve_ratio": cons.battery_reserve_ratio,
        "payload_kg": cons.payload_kg,
    }
    per_tool: dict[str, dict[str, Any]] = {
        "query_airspace": {
            "alt_min_m": cons.altitude_min_m,
            "alt_max_m": cons.altitude_max_m,
            "horizon_sec": cons.deadline_sec,
            "destination": ents.landing,
            "capacity_required": cons.corridor_capacity_required,
        },
        "assign_uav": {
            "origin": ents.origin,
            "destination": ents.landing,
            "candidates": ents.candidate_uavs,
            "payload_kg": cons.payload_kg,
            "battery_reserve_ratio": cons.battery_reserve_ratio,
        },
        "plan_route": {
            "start": ents.origin,
            "goal": ents.landing,
            "waypoints": ents.waypoints,
            "avoid_zones": list(dict.fromkeys(ents.avoid_zones + ents.sensitive_zones)),
            **band,
            "min_separation_m": cons.min_separation_m,
            "deadline_sec": cons.deadline_sec,
            "payload_kg": cons.payload_kg,
        },
        "verify_ltl_stl": {
            "goal": ents.destination,  # the graph's gate checks a route that ends at a declared hand-off there
            "origin": ents.origin,
            "ltl": specs.ltl,
            "stl": specs.stl,
            "rules": specs.program_rules,
            **band,
            **safety,
            "corridor_capacity_required": cons.corridor_capacity_required,
            "priority": ir.priority.value,
        },
        "simulate_scenario": {
            "seed": seed,
            "stress_level": stress_level,
            **band,
            **safety,
            "max_risk_level": cons.max_risk_level.value,
        },
        "risk_assess": {
            "battery_reserve_ratio": cons.battery_reserve_ratio,
            "payload_kg": cons.payload_kg,
            "max_risk_level": cons.max_risk_level.value,
        },
        EXPLAIN_TOOL: {"rules": specs.program_rules},
    }
    # None and [] mean "the IR says nothing": the tool's own default applies (e.g. the verifier's rule set).
    return {k: v for k, v in per_tool.get(tool, {}).items() if v is not None and v != []}


def _accepted_args(tool: str, registry: ToolRegistry) -> set[str] | None:
    return set(registry.spec(tool).args_model.model_fields) if tool in registry else None


def _plan_step(
    step: ToolCallSpec,
    index: int,
    earlier: list[ToolCallSpec],
    by_id: dict[str, ToolCallSpec],
    ir: LowAltitudeIR,
    registry: ToolRegistry,
    seed: int,
    stress_level: StressLevel,
) -> tuple[PlannedStep, list[Flow]]:
    """The planned step and the required flows no earlier step can satisfy."""
    # A null argument means "not given" (LLMs write null for "fill this in"), so it is filled like a missing one.
    given = {k: v for k, v in step.args.items() if v is not None}
    accepted = _accepted_args(step.tool, registry)
    # Kept only where the registered tool declares the argument, so a filled value never causes bad_arguments.
    filled = ir_tool_args(step.tool, ir, seed=seed, stress_level=stress_level)
    from_ir = {k: v for k, v in filled.items() if accepted is None or k in accepted}
    ancestors = _ancestors(step, by_id)
    from_steps: dict[str, str] = {}
    unmet: list[Flow] = []
    for flow in (f for f in FLOWS if f.consumer == step.tool):
        if flow.arg in given:
            continue
        if flow.ir_first and flow.arg in from_ir:
            continue
        producers = [s for s in earlier if s.tool == flow.producer]
        preferred = [s for s in producers if s.id in ancestors] or producers
        if preferred:
            from_steps[flow.arg] = f"{preferred[-1].id}.{flow.key}"
            from_ir.pop(flow.arg, None)
        elif flow.required:
            unmet.append(flow)
    if step.tool == EXPLAIN_TOOL:
        from_steps.update({a: ALL_EARLIER_RESULTS for a in ("decision", "tool_results") if a not in given})
    planned = PlannedStep(
        step_id=step.id, index=index, tool=step.tool, given=given, from_ir=from_ir, from_steps=from_steps
    )
    return planned, unmet


def _missing_reference(steps: list[ToolCallSpec]) -> PlanProblem | None:
    ids = [s.id for s in steps]
    for index, step in enumerate(steps):
        missing = next((d for d in step.depends_on if d not in ids), None)
        if missing is not None:
            return PlanProblem(
                error_type="dependency_missing",
                step_id=step.id,
                field=f"tool_plan.{index}.depends_on",
                value=missing,
                allowed=nearest(missing, [i for i in ids if i != step.id]),
                message=f"step {step.id!r} depends on {missing!r}, which is not a step of this plan",
                suggested_action=f"name an existing step in the depends_on of {step.id!r} or remove {missing!r}",
            )
    return None


def analyse_plan(
    ir: LowAltitudeIR, registry: ToolRegistry, *, seed: int = 0, stress_level: StressLevel = "medium"
) -> PlanAnalysis:
    """Execution order, the filled arguments of every step, and the first plan-level problem if any."""
    steps = ir.tool_plan
    index_of = {s.id: i for i, s in enumerate(steps)}
    by_id = {s.id: s for s in steps}
    ordered, stuck = execution_order(steps)
    planned: list[PlannedStep] = []
    problem = _missing_reference(steps)
    if problem is None and stuck:
        cycle = _first_cycle(stuck, index_of)
        first = by_id[cycle[0]]
        problem = PlanProblem(
            error_type="cycle",
            step_id=first.id,
            field=f"tool_plan.{index_of[first.id]}.depends_on",
            value=cycle,
            message="depends_on forms a cycle: " + " -> ".join(cycle),
            suggested_action="remove one depends_on edge of the cycle",
        )
    # Steps stuck on a cycle never run, but are planned too (after the others) so their arguments can be checked.
    for position, step in enumerate(ordered + stuck):
        step_plan, unmet = _plan_step(
            step, index_of[step.id], ordered[:position], by_id, ir, registry, seed, stress_level
        )
        planned.append(step_plan)
        if problem is None and unmet:
            flow = unmet[0]
            problem = PlanProblem(
                error_type="dependency_missing",
                step_id=step.id,
                field=f"tool_plan.{index_of[step.id]}.depends_on",
                value=step.id,
                allowed=[flow.producer],
                message=f"{step.tool} (step {step.id!r}) needs {flow.arg}: give it in args or run a "
                f"{flow.producer} step before it (depends_on)",
                suggested_action=f"add a {flow.producer} step and list it in the depends_on of {step.id!r}, "
                f"or give {flow.arg} in its args",
            )
    return PlanAnalysis(steps=planned, problem=problem)


def default_args(
    ir: LowAltitudeIR, registry: ToolRegistry, *, seed: int = 0, stress_level: StressLevel = "medium"
) -> dict[str, dict[str, Any]]:
    """step id -> the arguments that step's tool would receive (run-time values as <step.key> placeholders)."""
    analysis = analyse_plan(ir, registry, seed=seed, stress_level=stress_level)
    return {s.step_id: s.preview() for s in analysis.steps}


# --- execution --------------------------------------------------------------------------------------------


def _route_result(records: list[StepRecord]) -> dict[str, Any] | None:
    """The latest plan_route output that has waypoints (a deadline_risk failure still carries its route)."""
    return next(
        (
            r.result.result
            for r in reversed(records)
            if r.tool == "plan_route" and r.result.result and r.result.result.get("waypoints")
        ),
        None,
    )


def decision_candidate(records: list[StepRecord]) -> DecisionCandidate | None:
    route = _route_result(records)
    if route is None:
        return None
    assigned = next(
        (r.result.result.get("uav_id") for r in reversed(records) if r.tool == "assign_uav" and r.result.result),
        None,
    )
    return DecisionCandidate(
        uav_id=route.get("uav_id") or assigned,
        waypoints=[list(map(float, wp)) for wp in route["waypoints"]],
        eta_sec=route.get("eta_sec"),
        energy_wh=route.get("energy_wh"),
    )


def _linked_values(planned: PlannedStep, records: list[StepRecord]) -> dict[str, Any]:
    by_id = {r.step_id: r for r in records}
    values: dict[str, Any] = {}
    for arg, source in planned.from_steps.items():
        if source == ALL_EARLIER_RESULTS:
            continue
        step_id, key = source.rsplit(".", 1)
        producer = by_id.get(step_id)  # absent when execute_plan's only_tools skipped it
        output = (producer.result.result if producer else None) or {}
        if output.get(key) is not None:
            values[arg] = output[key]
    if planned.from_steps.get("decision") == ALL_EARLIER_RESULTS:
        decision = decision_candidate(records)
        values["decision"] = decision.model_dump() if decision else {}
    if planned.from_steps.get("tool_results") == ALL_EARLIER_RESULTS:
        values["tool_results"] = [r.result.model_dump(mode="json") for r in records]
    return values


def execute_plan(
    ir: LowAltitudeIR,
    world: World,
    registry: ToolRegistry,
    *,
    seed: int = 0,
    stress_level: StressLevel = "medium",
    only_tools: Collection[str] | None = None,
) -> PlanExecution:
    """Run the tool plan in dependency order; stop at the first step whose ToolResult is not ok.

    Plan defects (a depends_on naming no step, a cycle, a step whose required input no earlier step produces)
    are reported before anything runs, as a recoverable failure of the offending step. `only_tools` skips the
    steps of registered tools not in it (the graph runs verification and simulation as its own gates); a step
    naming an unregistered tool still runs, so its unknown_tool error is reported.
    """
    analysis = analyse_plan(ir, registry, seed=seed, stress_level=stress_level)
    if analysis.problem is not None:
        problem = analysis.problem
        failure = ToolErrorInfo(
            type=problem.error_type,
            message=problem.message,
            recoverable=True,
            suggested_actions=[problem.suggested_action],
        )
        return PlanExecution(failed_step=problem.step_id, failure=failure, recoverable=True)
    records: list[StepRecord] = []
    skipped = {name for name in registry.names() if only_tools is not None and name not in only_tools}
    for planned in (s for s in analysis.steps if s.tool not in skipped):
        args = {**planned.from_ir, **_linked_values(planned, records), **planned.given}
        result = registry.call(planned.tool, world, args)
        records.append(StepRecord(step_id=planned.step_id, tool=planned.tool, args=args, result=result))
        if not result.ok:
            error = result.error or ToolErrorInfo(type="tool_failed", message="no error info", recoverable=False)
            return PlanExecution(
                results=records,
                failed_step=planned.step_id,
                failure=error,
                recoverable=error.recoverable,
                decision=decision_candidate(records),
            )
    return PlanExecution(results=records, decision=decision_candidate(records))
