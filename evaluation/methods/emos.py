"""emos: EMOS (embodiment-aware multi-robot operating system), a heterogeneous multi-agent system in this domain: one agent per UAV, each with a
"resume" of what it can do, a central planner that assigns the task, per-UAV reflection on feasibility, then
decentralised execution.

1. **Resumes.** Each idle UAV's resume is built by tools from its specs, in text and numbers: position, cruise
   speed, payload capacity, battery and the range it leaves (empty and at full payload, a 20% reserve kept, by the
   world's energy model), the wind it can fly in, its sensors.
2. **Central planning.** The planner reads the request, the places and zones and the team's resumes and assigns
   the task (UAV, origin, destination, zones to avoid, payload), or refuses / asks a human for the whole request.
   Places and resumes are sized by the prompt budget as the other baselines' state views are (`fitted_lists`).
3. **Reflection.** The assigned UAV's own agent reads its resume and the assignment (with the distances it would
   fly) and accepts or refuses with a reason. A refusal goes back to the planner, which reassigns among the UAVs
   that have not refused (a correction), up to the budget's model calls.
4. **Execution.** The accepted UAV's agent plans its own route by function calling (plan_route, one retry after an
   error) and flies it; a route it cannot plan is reported for confirmation.

`emos_no_resume` is the paper's ablation: the planner and the UAV agents see the UAV's id and role only ("a
quad-medical drone of the team"), no capabilities. No IR, verifier, simulator or repair.
"""

from __future__ import annotations

import json
import math
from typing import Any, ClassVar

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from evaluation.methods.base import MethodRun, MethodSetup, MethodTask, TracedToolCall
from evaluation.methods.prompts import (
    FLIGHT_RULES,
    MAX_REASON_CHARS,
    ChatBaseline,
    MeteredModel,
    confirmation_run,
    fitted_lists,
    method_run,
    request_block,
    state_char_budget,
)
from evaluation.methods.react import Episode, tool_definitions
from ir.decision import Decision
from models.base import LLMTransportError
from models.grounded_schema import string_enum
from tools.catalog import default_registry
from tools.registry import ToolRegistry
from tools.world import UAV, UAVStatus, World

BATTERY_RESERVE = 0.2  # the assign_uav default

PLANNER_SYSTEM = f"""You are the central planner of a team of drones, each run by its own agent. Read the \
operator's request and the team's resumes, and assign the task to the one UAV best able to do it: its origin and \
destination places, the zones to avoid and the payload. If no UAV can do it, or the request is unsafe or \
impossible, answer "safe_refusal"; if it is ambiguous or lacks information, answer "human_confirm".
{FLIGHT_RULES}
Answer as JSON: {{"decision": "assign" | "safe_refusal" | "human_confirm", "uav_id": ..., "origin": ..., \
"destination": ..., "avoid_zones": [...], "payload_kg": ..., "reason": "..."}}"""

EXECUTOR_SYSTEM = """You are the agent of one drone, {uav_id}, and you accepted a subtask. Plan your flight for it \
with the plan_route tool (start, goal, zones to avoid, payload), reading its result."""
EXECUTION_TRIES = 2

UAV_SYSTEM = """You are the agent of one drone, {uav_id}. The central planner has assigned you a task. Reflect on \
whether you can do it, given what you are{resume_note}: answer {{"feasible": true | false, "reason": "..."}}. \
Refuse what you cannot do; the planner will then ask another drone."""


def range_m(world: World, uav: UAV, payload_kg: float) -> float:
    """Straight-line range on the battery above the reserve, with `payload_kg`, in calm air (energy model)."""
    model = world.energy
    per_m = (model.base_wh_per_m + model.payload_wh_per_m_per_kg * payload_kg) * model.conservative_factor
    usable_wh = max(0.0, uav.battery_ratio - BATTERY_RESERVE) * uav.battery_capacity_wh
    return usable_wh / per_m


def resume(world: World, uav: UAV) -> dict[str, Any]:
    """A UAV's resume: its capabilities in numbers, and the same as one line of text."""
    numbers = {
        "uav_id": uav.id,
        "model": uav.model or "multirotor",
        "position": [round(uav.position[0], 1), round(uav.position[1], 1)],
        "cruise_speed_mps": uav.cruise_speed_mps,
        "payload_capacity_kg": uav.payload_capacity_kg,
        "battery_ratio": round(uav.battery_ratio, 3),
        "range_empty_m": round(range_m(world, uav, 0.0)),
        "range_full_payload_m": round(range_m(world, uav, uav.payload_capacity_kg)),
        "max_wind_mps": uav.max_wind_mps,
        "sensors": list(uav.sensors),
    }
    text = (
        f"{uav.id} ({numbers['model']}) at ({numbers['position'][0]:g}, {numbers['position'][1]:g}): cruises at "
        f"{uav.cruise_speed_mps:g} m/s, carries up to {uav.payload_capacity_kg:g} kg, battery {uav.battery_ratio:.0%} "
        f"= range {numbers['range_empty_m'] / 1000:.1f} km empty, {numbers['range_full_payload_m'] / 1000:.1f} km "
        f"at full payload ({BATTERY_RESERVE:.0%} reserve kept), flies in wind up to {uav.max_wind_mps:g} m/s, "
        f"sensors: {', '.join(uav.sensors) or 'none'}"
    )
    return {"text": text, "numbers": numbers}


def role_only(uav: UAV) -> str:
    """The ablation's role description (the paper's hand-written roles): the UAV's id and model, no capability."""
    return f"{uav.id}: a {uav.model or 'multirotor'} drone of the team"


def max_payload_kg(world: World) -> float:
    """Bounds the payload the planner may state: twice the fleet's largest capacity (a heavier one is refused)."""
    return 2 * max((u.payload_capacity_kg for u in world.fleet), default=1.0)


def assignment_schema(world: World, team: list[str]) -> dict[str, Any]:
    places, zones = list(world.entity_index), list(world.zone_index)
    return {
        "title": "Assignment",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "decision": string_enum(["assign", "safe_refusal", "human_confirm"]),
            "uav_id": {"anyOf": [string_enum(team), {"type": "null"}]} if team else {"type": "null"},
            "origin": {"anyOf": [string_enum(places), {"type": "null"}]},
            "destination": {"anyOf": [string_enum(places), {"type": "null"}]},
            "avoid_zones": {"type": "array", "items": string_enum(zones), "maxItems": len(zones)} if zones else {},
            "payload_kg": {"type": "number", "minimum": 0, "maximum": max_payload_kg(world)},
            "reason": {"type": "string", "maxLength": MAX_REASON_CHARS},
        },
        "required": ["decision", "uav_id", "origin", "destination", "reason"],
    }


REFLECTION_SCHEMA: dict[str, Any] = {
    "title": "Reflection",
    "type": "object",
    "additionalProperties": False,
    "properties": {"feasible": {"type": "boolean"}, "reason": {"type": "string", "maxLength": MAX_REASON_CHARS}},
    "required": ["feasible", "reason"],
}


def _format(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": schema["title"], "schema": schema, "strict": False}}


def _json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


class Emos(ChatBaseline):
    name = "emos"
    summary = "EMOS: UAV resumes built by tools, a central planner assigns, the UAV's agent reflects and may refuse"
    model_kinds = frozenset({"llm"})  # its planner and agents answer in formats of their own (no rules model)
    with_resumes: ClassVar[bool] = True

    def _profile(self, world: World, uav: UAV) -> str:
        return resume(world, uav)["text"] if self.with_resumes else role_only(uav)

    def run(self, task: MethodTask, setup: MethodSetup) -> MethodRun:
        world, budget = task.world, setup.budget
        model = MeteredModel(self.chat_model(task, setup), setup.model)
        idle = [u for u in world.fleet if u.status is UAVStatus.idle]
        places = [f"- {e.id} ({e.position[0]:g}, {e.position[1]:g}) {e.name}" for e in world.entities]
        zones = ", ".join(world.zone_index) or "none"

        def planner_view(shown: dict[str, list[str]]) -> str:
            place_lines, team_lines = "\n".join(shown["PLACES"]), "\n".join(shown["TEAM"]) or "(no UAV left)"
            return f"PLACES:\n{place_lines}\nZONES: {zones}\nTEAM:\n{team_lines}"

        refusals: list[str] = []  # "uav: reason", fed back to the planner
        trace: dict[str, Any] = {"resumes": {u.id: self._profile(world, u) for u in idle}, "rounds": []}
        while True:
            team = [u for u in idle if not any(r.startswith(f"{u.id}:") for r in refusals)]
            if refusals and not team:
                decision = Decision(status="safe_refusal", reason="every idle UAV's agent refused the task")
                return method_run(decision, model.usage, trace=trace, corrections=len(refusals))
            if model.usage.llm_calls + 3 > budget.max_llm_calls:  # planning, reflection, execution
                return self._gave_up("budget exhausted before a UAV accepted", model, refusals, trace)
            profiles = [f"- {self._profile(world, u)}" for u in team]
            view = fitted_lists({"PLACES": places, "TEAM": profiles}, planner_view, state_char_budget(budget))
            feedback = ("\nREFUSED BY THEIR AGENTS:\n" + "\n".join(f"- {r}" for r in refusals)) if refusals else ""
            try:
                reply = model.invoke(
                    [
                        SystemMessage(PLANNER_SYSTEM),
                        HumanMessage(f"{request_block(task)}\n{view}{feedback}"),
                    ],
                    response_format=_format(assignment_schema(world, [u.id for u in team])),
                )
            except LLMTransportError as exc:
                return self._gave_up(f"model unavailable: {exc}", model, refusals, trace)
            plan = _json(reply.text)
            trace["rounds"].append({"assignment": plan or reply.text})
            if plan.get("decision") in ("safe_refusal", "human_confirm"):
                decision = Decision(status=plan["decision"], reason=str(plan.get("reason", ""))[:MAX_REASON_CHARS])
                return method_run(decision, model.usage, trace=trace, corrections=len(refusals))
            uav = world.uav_index.get(str(plan.get("uav_id")))
            origin, destination = plan.get("origin"), plan.get("destination")
            if (
                uav is None
                or uav not in team
                or origin not in world.entity_index
                or destination not in world.entity_index
            ):
                return self._gave_up(f"unusable assignment: {reply.text[:200]}", model, refusals, trace)
            payload = float(plan.get("payload_kg") or 0.0)
            try:
                verdict = self._reflect(task, model, uav, origin, destination, payload)
            except LLMTransportError as exc:
                return self._gave_up(f"model unavailable: {exc}", model, refusals, trace)
            trace["rounds"][-1]["reflection"] = verdict
            if verdict.get("feasible") is True:
                avoid = [z for z in plan.get("avoid_zones") or [] if z in world.zone_index]
                subtask = (
                    f"carry {payload:g} kg from {origin} to {destination}"
                    + (f", keeping out of {', '.join(avoid)}" if avoid else "")
                    + "; plan your route with plan_route"
                )
                return self._execute(task, setup, model, uav, subtask, refusals, trace)
            refusals.append(f"{uav.id}: {str(verdict.get('reason', 'no reason given'))[:MAX_REASON_CHARS]}")

    def _reflect(
        self, task: MethodTask, model: MeteredModel, uav: UAV, origin: str, destination: str, payload: float
    ) -> dict[str, Any]:
        world = task.world
        start, end = world.position_of(origin), world.position_of(destination)
        to_origin, leg = math.dist(uav.position, start), math.dist(start, end)
        system = UAV_SYSTEM.format(uav_id=uav.id, resume_note=" (your resume)" if self.with_resumes else "")
        assignment = (
            f"ASSIGNMENT: fly from {uav.position[0]:g},{uav.position[1]:g} to {origin} ({start[0]:g}, {start[1]:g}), "
            f"{to_origin:.0f} m, then carry {payload:g} kg to {destination} ({end[0]:g}, {end[1]:g}), {leg:.0f} m."
        )
        reply = model.invoke(
            [
                SystemMessage(system),
                HumanMessage(f"YOU: {self._profile(world, uav)}\n{assignment}\n{request_block(task)}"),
            ],
            response_format=_format(REFLECTION_SCHEMA),
        )
        return _json(reply.text) or {"feasible": False, "reason": f"unreadable reflection: {reply.text[:100]}"}

    def _execute(
        self,
        task: MethodTask,
        setup: MethodSetup,
        model: MeteredModel,
        uav: UAV,
        subtask: str,
        refusals: list[str],
        trace: dict[str, Any],
    ) -> MethodRun:
        """Decentralised execution: the UAV's own agent plans its flight by function calling (plan_route, flown by
        itself), reading the tool's result; a failed call is retried once with the error in its history."""
        registry = ToolRegistry([default_registry().spec("plan_route")])
        chat = self.chat_model(task, setup).bind_tools(tool_definitions(task.world, registry), tool_choice="plan_route")
        agent = MeteredModel(chat, setup.model)
        agent.usage = model.usage  # one account for the run
        episode = Episode(task.world, registry)
        history: list[BaseMessage] = [
            SystemMessage(EXECUTOR_SYSTEM.format(uav_id=uav.id)),
            HumanMessage(f"YOU: {self._profile(task.world, uav)}\nSUBTASK: {subtask}\n{request_block(task)}"),
        ]
        for _ in range(EXECUTION_TRIES):
            if model.usage.llm_calls >= setup.budget.max_llm_calls:
                break
            try:
                reply = agent.invoke(history)
            except LLMTransportError as exc:
                return self._gave_up(f"model unavailable: {exc}", model, refusals, trace, episode.calls)
            if not reply.tool_calls:
                break
            call = reply.tool_calls[0]
            call = {**call, "args": {**call["args"], "uav_id": uav.id}}  # the agent flies itself
            history += [AIMessage(content="", tool_calls=[call]), episode.run_tool(call)]
            if episode.route is not None:
                route = episode.route
                decision = Decision(
                    status="execute",
                    uav_id=uav.id,
                    waypoints=route["waypoints"],
                    reason=f"{uav.id} accepted and planned {route.get('start')} -> {route.get('goal')}",
                )
                return method_run(
                    decision, model.usage, tool_calls=episode.calls, trace=trace, corrections=len(refusals)
                )
        return self._gave_up(f"{uav.id} could not plan its route", model, refusals, trace, episode.calls)

    @staticmethod
    def _gave_up(
        reason: str,
        model: MeteredModel,
        refusals: list[str],
        trace: dict[str, Any],
        calls: list[TracedToolCall] | None = None,
    ) -> MethodRun:
        stage = "planning" if calls else "ir"
        return confirmation_run(
            reason, model.usage, failed_stage=stage, trace=trace, tool_calls=calls, corrections=len(refusals)
        )


class EmosNoResume(Emos):
    name = "emos_no_resume"
    summary = "EMOS without resumes (the paper's ablation): the planner and UAV agents see ids and roles only"
    with_resumes = False
