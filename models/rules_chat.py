"""`rules` as a chat model: `RulesChatModel`, the deterministic non-LLM reference of the chat baselines (as the
`rules` IR writer, models/rules_parser.py, is of the IR methods), the answer formats it writes (the same formats the
baselines ask a model for: the decision as JSON, the decision as plain text), and the `rules` provider of the model
factory (models/factory.py), which makes both.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from functools import cached_property
from itertools import accumulate
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.messages.tool import tool_call
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool

from ir.decision import Decision, Status
from ir.model import HUMAN_CONFIRM_POLICIES, LLMAnswer, LowAltitudeIR
from ir.plan_execution import PlannedStep, analyse_plan
from models.base import GenerationRequest
from models.rules_parser import RuleBasedGenerator
from tools.catalog import default_registry
from tools.trajectory import LANDING_DESCENT_MPS, TAKEOFF_CLIMB_MPS
from tools.world import UAV, UAVStatus, World

RULES_TASK_ID = "rules-chat"

# --- answer formats -------------------------------------------------------------------------------------------
DECISION_FIELDS = ("status", "uav_id", "waypoints", "reason")
PLAIN_STATUS_WORDS: dict[Status, str] = {"execute": "execute", "safe_refusal": "refuse", "human_confirm": "confirm"}
PLAIN_DECISION_FORMAT = """DECISION: execute | refuse | confirm
UAV: <uav id>  (execute only)
WAYPOINTS: x,y,z,t; x,y,z,t; ...  (execute only: metres, and seconds from now)
REASON: <one sentence>"""


def decision_answer(decision: Decision) -> dict[str, Any]:
    """The decision as the JSON answer a model gives (DECISION_FIELDS)."""
    return decision.model_dump(include=set(DECISION_FIELDS))


def _millis(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".")


def decision_as_plain_text(decision: Decision) -> str:
    """The decision in PLAIN_DECISION_FORMAT."""
    lines = [f"DECISION: {PLAIN_STATUS_WORDS[decision.status]}"]
    if decision.status == "execute":
        lines.append(f"UAV: {decision.uav_id}")
        lines.append("WAYPOINTS: " + "; ".join(",".join(map(_millis, row)) for row in decision.waypoints))
    lines.append(f"REASON: {decision.reason}")
    return "\n".join(lines)


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


# --- the rules chat model -------------------------------------------------------------------------------------
def fallback_decision(ir: LowAltitudeIR, reason: str) -> Decision:
    """The IR's fallback: a human confirmation for the confirming policies, else a refusal."""
    status: Status = "human_confirm" if ir.fallback_policy in HUMAN_CONFIRM_POLICIES else "safe_refusal"
    return Decision(status=status, reason=reason)


def cruise_altitude(world: World, ir: LowAltitudeIR) -> float | None:
    """The highest flight layer inside the IR's altitude band (the fewest buildings reach it); None if none is."""
    grid, band = world.grid, ir.constraints
    layers = [grid.layer_altitude(k) for k in range(grid.nz)]
    inside = [z for z in layers if band.altitude_min_m <= z <= band.altitude_max_m]
    return max(inside) if inside else None


def first_capable_uav(world: World, ir: LowAltitudeIR) -> UAV | None:
    """The first idle UAV (of the IR's candidates, else of the fleet) that can lift the payload."""
    named = [world.uav_index[u] for u in ir.entities.candidate_uavs if u in world.uav_index]
    payload = ir.constraints.payload_kg or 0.0
    return next(
        (u for u in named or world.fleet if u.status is UAVStatus.idle and u.payload_capacity_kg >= payload), None
    )


def straight_flight(
    start: tuple[float, float], end: tuple[float, float], altitude: float, speed: float
) -> list[list[float]]:
    """Climb at `start` to `altitude`, cruise straight to `end`, descend; from t=0, the climb and the descent at a
    UAV's vertical speeds (tools/trajectory), the cruise at `speed`."""
    legs = ((altitude, TAKEOFF_CLIMB_MPS), (math.dist(start, end), speed), (altitude, LANDING_DESCENT_MPS))
    # Each leg's time rounded up to the millisecond: rounding down would fly a little over its speed.
    times = accumulate((math.ceil(length / rate * 1000) / 1000 for length, rate in legs), initial=0.0)
    points = ((*start, 0.0), (*start, altitude), (*end, altitude), (*end, 0.0))
    return [[*point, t] for point, t in zip(points, times)]


class RulesChatModel(BaseChatModel):
    """`rules`: answers from the rule-based parser's IR of the task it was made for; no LLM, no randomness.

    It reads the instruction and world given at construction and ignores the prompt, but answers in the format the
    method asks for, so the chat methods can be run and compared without a model:
    - tools bound: the IR's calls of the bound tools, one per turn, in tool_plan order, each with the IR's
      arguments and the outputs of the earlier calls (ir/plan_execution.py's FLOWS, read from the tool messages),
      then the decision JSON from the plan_route result; a failed call ends in the IR's fallback;
    - no tools: what a model without tools can answer, a straight flight from origin to destination (climb to the
      highest flight layer of the band, cruise, descend; times at the cruise speed of the first idle UAV that can
      lift the payload), as decision JSON when a response_format is given, else as plain text.
    A task the parser finds under-specified (missing or ambiguous places) is answered at once with its fallback.
    """

    world: World
    instruction: str

    @property
    def _llm_type(self) -> str:
        return "cloudbrain-rules"

    @cached_property
    def answer(self) -> LLMAnswer:
        request = GenerationRequest(instruction=self.instruction, world=self.world, task_id=RULES_TASK_ID)
        return LLMAnswer.model_validate(RuleBasedGenerator().generate(request).answer)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        """Tools as ChatOpenAI binds them. Options such as tool_choice and response_format are taken and have no
        effect: the IR decides the calls, and the answer is always the decision JSON."""
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        tools = kwargs.get("tools")
        if tools:
            message = self._tool_turn(messages, {tool["function"]["name"] for tool in tools})
        else:
            decision = self.direct_decision()
            as_json = kwargs.get("response_format") is not None
            message = AIMessage(
                content=compact_json(decision_answer(decision)) if as_json else decision_as_plain_text(decision)
            )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _underspecified(self) -> Decision | None:
        uncertainty = self.answer.uncertainty
        if not uncertainty.needs_human_confirmation:
            return None
        reason = "; ".join(uncertainty.missing_information) or "the request needs confirmation"
        return fallback_decision(self.answer.low_altitude_ir, reason)

    def direct_decision(self) -> Decision:
        ir = self.answer.low_altitude_ir
        if (early := self._underspecified()) is not None:
            return early
        refs = ir.entities
        if refs.origin is None or refs.destination is None:
            return fallback_decision(ir, "no origin or destination to fly between")
        uav = first_capable_uav(self.world, ir)
        if uav is None:
            return Decision(status="safe_refusal", reason="no idle UAV can lift the payload")
        altitude = cruise_altitude(self.world, ir)
        if altitude is None:
            return fallback_decision(ir, "no flight layer inside the altitude band")
        start, end = self.world.position_of(refs.origin), self.world.position_of(refs.destination)
        return Decision(
            status="execute",
            uav_id=uav.id,
            waypoints=straight_flight(start, end, altitude, uav.cruise_speed_mps),
            reason=f"straight flight {refs.origin} -> {refs.destination} at {altitude:g} m with {uav.id}",
        )

    def _tool_turn(self, messages: list[BaseMessage], bound: set[str]) -> AIMessage:
        ir = self.answer.low_altitude_ir
        if (early := self._underspecified()) is not None:
            return _final(early)
        steps = [s for s in analyse_plan(ir, default_registry()).steps if s.tool in bound]
        made = [call for m in messages if isinstance(m, AIMessage) for call in m.tool_calls]
        outputs = {m.tool_call_id: json.loads(m.text) for m in messages if isinstance(m, ToolMessage)}
        failed = next((c for c in made if not outputs.get(c["id"], {}).get("ok", False)), None)
        if failed is not None:
            error = outputs.get(failed["id"], {}).get("error") or {}
            reason = f"{failed['name']} failed: {error.get('type', 'no result')}: {error.get('message', '')}"
            return _final(fallback_decision(ir, reason))
        if len(made) < len(steps):
            step = steps[len(made)]
            results = {call["id"]: outputs[call["id"]].get("result") or {} for call in made}
            return AIMessage(
                content="",
                tool_calls=[tool_call(name=step.tool, args=step_args(step, results), id=_call_id(step.step_id))],
            )
        routes = [outputs[c["id"]]["result"] for c in made if c["name"] == "plan_route"]
        if not routes:
            return _final(fallback_decision(ir, "no route was planned"))
        route = routes[-1]
        reason = f"plan_route's route {route.get('start')} -> {route.get('goal')}"
        return _final(
            Decision(status="execute", uav_id=route.get("uav_id"), waypoints=route["waypoints"], reason=reason)
        )


def step_args(step: PlannedStep, results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A planned step's arguments: the IR's, with the earlier calls' outputs that FLOWS links to it (`results` by
    call id; a call's id names the step it ran)."""
    linked = {}
    for arg, source in step.from_steps.items():
        step_id, _, key = source.rpartition(".")
        value = results.get(_call_id(step_id), {}).get(key)
        if value is not None:
            linked[arg] = value
    return {**step.from_ir, **linked, **step.given}


def _call_id(step_id: str) -> str:
    return f"call_{step_id}"


def _final(decision: Decision) -> AIMessage:
    return AIMessage(content=compact_json(decision_answer(decision)))
