"""Chat models for the chat baselines (direct_llm, json_only, react, the peers), chosen by model string.

`make_chat_model` gives a LangChain chat model: `openai:<name>` is ChatOpenAI, `local`, `local:full` and
`local:slots` are all the embedded SmolLM2 (models/local_backend.py; the IR-writing modes mean nothing to a chat
model), and `rules` is `RulesChatModel`, the deterministic non-LLM reference of the chat methods, as the `rules`
IR writer is of the IR methods. `oracle` only writes IRs (the gold one), so it is no chat model.

The answer formats the methods ask for live here, beside the rules model that writes them: the decision as JSON
(structured output, a ReAct final answer), the decision as plain text (direct_llm), and a tool result as the
content of a tool message.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
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
from models.local_backend import LocalChatModel
from models.local_model import LocalModelError
from models.model_host import transport_error
from models.options import LOCAL_MODES
from models.rules_parser import RuleBasedGenerator
from tools.catalog import default_registry
from tools.contract import ToolResult
from tools.trajectory import LANDING_DESCENT_MPS, TAKEOFF_CLIMB_MPS
from tools.world import UAV, UAVStatus, World

CHAT_MODEL_CHOICES = ("openai:<model>", "local", "local:full", "local:slots", "rules")
ChatModelFactory = Callable[..., BaseChatModel]
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


def as_tables(value: Any) -> Any:
    """Every list of records as {"columns": [...], "rows": [[...], ...]}: keys written once, not once per record
    (it halves the tokens of a 30-UAV fleet, and a small model's context is short)."""
    if isinstance(value, dict):
        return {key: as_tables(item) for key, item in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(item, dict) for item in value):
            columns = list(dict.fromkeys(key for item in value for key in item))
            return {"columns": columns, "rows": [[as_tables(item.get(c)) for c in columns] for item in value]}
        return [as_tables(item) for item in value]
    return value


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def tool_message_content(result: ToolResult) -> str:
    """What a model reads back from a tool call: ok, the result (records as tables), warnings and the error with
    its suggested actions; the provenance is left out (hashes mean nothing to a model)."""
    body: dict[str, Any] = {"ok": result.ok}
    if result.result is not None:
        body["result"] = as_tables(result.result)
    if result.warnings:
        body["warnings"] = result.warnings
    if result.error is not None:
        body["error"] = result.error.model_dump()
    return compact_json(body)


# --- making and calling chat models ---------------------------------------------------------------------------
def make_chat_model(
    model: str,
    *,
    world: World,
    instruction: str,
    base_url: str | None = None,
    api_key: str | None = None,
    max_tokens: int = 1024,
    seed: int = 0,
    timeout_sec: float = 120.0,
    max_retries: int = 2,
) -> BaseChatModel:
    """The chat model for a model string; `world` and `instruction` are read by `rules` only.

    `base_url` / `api_key` default to OPENAI_BASE_URL / OPENAI_API_KEY.
    """
    if model == "rules":
        return RulesChatModel(world=world, instruction=instruction)
    if model == "oracle":
        raise ValueError("oracle only writes IRs (the sample's gold IR); it is not a chat model")
    if model in LOCAL_MODES:
        return LocalChatModel(max_tokens=max_tokens, seed=seed)
    prefix, _, model_name = model.partition(":")
    if prefix == "openai" and model_name:
        from langchain_openai import ChatOpenAI  # heavy; imported only when used

        from models.openai_backend import DEFAULT_API_KEY

        return ChatOpenAI(
            model=model_name,
            temperature=0,
            base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or DEFAULT_API_KEY,
            max_tokens=max_tokens,
            seed=seed,
            timeout=timeout_sec,
            max_retries=max_retries,
            use_responses_api=False,
        )
    raise ValueError(f"unknown chat model {model!r}; choose one of: {', '.join(CHAT_MODEL_CHOICES)}")


def bind_tools_and_answer_format(
    model: BaseChatModel, tools: Sequence[dict[str, Any]], response_format: dict[str, Any]
) -> Runnable[LanguageModelInput, AIMessage]:
    """The model with tools bound and, where the backend can hold both, the format of the answer it gives when it
    calls no tool (the local and rules models). An OpenAI-compatible server gets the tools alone, the format being
    in the prompt: the OpenAI client sends tools with a response_format through its structured-output path, which
    requires strict tools (every argument required), and servers such as vLLM then constrain the whole reply to
    the format, tool calls included."""
    if isinstance(model, LocalChatModel | RulesChatModel):
        return model.bind_tools(tools, response_format=response_format)
    return model.bind_tools(tools)


@contextmanager
def _transport_errors(model_name: str, base_url: str | None = None) -> Iterator[None]:
    """A backend that cannot answer (server unreachable or refusing, the local runtime missing or its context
    exceeded) raises LLMTransportError, as the IR writers do; anything else is a defect and escapes."""
    try:
        yield
    except LocalModelError as exc:
        raise transport_error(exc, model_name) from exc
    except Exception as exc:
        import openai  # already loaded whenever the model is a ChatOpenAI, the only source of its errors

        if not isinstance(exc, openai.OpenAIError):
            raise
        from models.openai_backend import _transport_error

        raise _transport_error(exc, model_name, base_url) from exc


def _openai_server(model: Runnable[LanguageModelInput, AIMessage]) -> tuple[str | None, str] | None:
    """(base URL, model name) of an OpenAI-compatible chat model, bound to tools or not; None for any other."""
    chat = getattr(model, "bound", model)
    if getattr(chat, "_llm_type", "") != "openai-chat":
        return None
    return (getattr(chat, "openai_api_base", None), str(getattr(chat, "model_name", "")))


def _accepted_format(server: tuple[str | None, str] | None, kwargs: dict[str, Any]) -> dict[str, Any]:
    """A json_schema response_format as a json_object one carrying the schema where the server refused json_schema
    (models.openai_backend settles the mode; llama.cpp's server decodes under the schema either way)."""
    from models.openai_backend import server_mode

    response_format = kwargs.get("response_format") or {}
    if server is None or response_format.get("type") != "json_schema" or server_mode(*server) in (None, "json_schema"):
        return kwargs
    schema = response_format["json_schema"]["schema"]
    return {**kwargs, "response_format": {"type": "json_object", "schema": schema}}


def invoke_chat(
    model: Runnable[LanguageModelInput, AIMessage], messages: list[BaseMessage], *, model_name: str, **kwargs: Any
) -> AIMessage:
    """One model call; LLMTransportError when the backend cannot answer. An OpenAI-compatible server that refuses
    a json_schema answer format is asked again with the schema in a json_object one, and from then on."""
    server = _openai_server(model)
    with _transport_errors(model_name, server[0] if server else None):
        try:
            return model.invoke(messages, **_accepted_format(server, kwargs))
        except Exception as exc:
            if server is None or not _refused_json_schema(server, kwargs, exc):
                raise
            return model.invoke(messages, **_accepted_format(server, kwargs))


def _refused_json_schema(server: tuple[str | None, str], kwargs: dict[str, Any], exc: Exception) -> bool:
    """Whether `exc` is the server refusing the json_schema format just sent; if so, the refusal is remembered."""
    import openai

    from models.openai_backend import note_refusal, refuses_mode

    sent = (kwargs.get("response_format") or {}).get("type") == "json_schema"
    if not (sent and isinstance(exc, openai.APIStatusError) and refuses_mode(exc, "json_schema")):
        return False
    note_refusal(*server, "json_schema")
    return True


def sample_chat(
    model: BaseChatModel, messages: list[BaseMessage], n: int, *, model_name: str, **kwargs: Any
) -> tuple[list[AIMessage], int, int]:
    """`n` answers to one prompt as one call, and its (prompt, completion) tokens: an OpenAI-compatible server
    draws them in one request (`n`) and bills the prompt once; the local model draws one per seed and keeps the
    prompt in its KV cache between draws, so its prompt is counted once too."""
    server = _openai_server(model)
    with _transport_errors(model_name, server[0] if server else None):
        if getattr(model, "_llm_type", "") == "openai-chat":
            generations = model.generate([messages], n=n, **kwargs).generations[0]
            replies = [g.message for g in generations if isinstance(g.message, AIMessage)]
            usage = replies[0].usage_metadata if replies else None  # the request's total, on every choice
            return replies, (usage or {}).get("input_tokens", 0), (usage or {}).get("output_tokens", 0)
        replies = [model.invoke(messages, seed=seed, **kwargs) for seed in range(n)]
    usages = [r.usage_metadata or {} for r in replies]
    return replies, usages[0].get("input_tokens", 0), sum(u.get("output_tokens", 0) for u in usages)


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
