"""What the IR-free baselines (direct_llm, json_only, react) share: the state they see, the decision schema they
answer in, reading an answer into a `Decision`, and calling a chat model with its usage counted."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from pydantic import ValidationError

from evaluation.methods.base import MethodRun, MethodUsage
from ir.decision import Decision
from models.chat import PLAIN_DECISION_FORMAT, invoke_chat
from tools.world import World

SYSTEM = (
    "You are the operator of a low-altitude UAV traffic system. Decide what to do with the request: fly it "
    "(execute: a UAV id and 4D waypoints x, y, z in metres and t in seconds from now, starting where the UAV is "
    "and ending at the destination), refuse it when it is unsafe or impossible, or ask a human to confirm when it "
    "is ambiguous. Never enter an active no-fly zone, never fly below a building's height over it, keep buffers "
    "around schools and hospitals, stay within the altitude band and arrive by the deadline."
)
STATUS_WORDS = {"execute": "execute", "refuse": "safe_refusal", "confirm": "human_confirm"}


def world_summary(world: World) -> str:
    """The short view direct_llm gets: places, zones and idle UAVs with positions."""
    places = "; ".join(f"{e.id} ({e.name}) at {e.position[0]:.0f},{e.position[1]:.0f}" for e in world.entities)
    zones = "; ".join(f"{z.id} no-fly {_box(z.polygon)}" for z in world.no_fly_zones)
    uavs = "; ".join(
        f"{u.id} at {u.position[0]:.0f},{u.position[1]:.0f} {u.cruise_speed_mps:g} m/s {u.payload_capacity_kg:g} kg"
        for u in world.fleet
        if u.status.value == "idle"
    )
    band = f"{world.grid.layer_base_m:g}-{world.grid.ceiling_m:g} m"
    return f"Places: {places}\nNo-fly zones: {zones}\nIdle UAVs: {uavs}\nAltitude band: {band}"


def _box(polygon: list[tuple[float, float]]) -> str:
    xs, ys = [p[0] for p in polygon], [p[1] for p in polygon]
    return f"x {min(xs):.0f}-{max(xs):.0f} y {min(ys):.0f}-{max(ys):.0f}"


def world_json(world: World) -> str:
    """The full state json_only sees, compact: grid, buildings, places, zones, corridors and fleet (traffic tracks,
    weather and region outlines left out: json_only has no simulator to use them)."""
    data = world.model_dump(mode="json", exclude={"traffic", "weather", "regions", "energy"})
    return json.dumps(_rounded(data), separators=(",", ":"))


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items() if v not in (None, "", [], {})}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def decision_schema(world: World) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "status": {"enum": ["execute", "safe_refusal", "human_confirm"]},
            "uav_id": {"enum": [u.id for u in world.fleet]},
            "waypoints": {
                "type": "array",
                "items": {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4},
                "maxItems": 12,
            },
            "reason": {"type": "string", "maxLength": 120},
        },
        "required": ["status", "uav_id", "waypoints", "reason"],
        "additionalProperties": False,
    }


def decision_from_json(text: str) -> Decision | None:
    try:
        data = json.loads(text)
        decision = Decision.model_validate(
            {k: v for k, v in data.items() if k in ("status", "uav_id", "waypoints", "reason")}
        )
    except (json.JSONDecodeError, ValidationError, AttributeError, TypeError):
        return None
    return decision if decision.status != "execute" or (decision.uav_id and len(decision.waypoints) >= 2) else None


def decision_from_text(text: str) -> Decision | None:
    """The plain format of models.chat.TEXT_FORMAT, read tolerantly (case, spacing, extra prose)."""
    status = re.search(r"DECISION:\s*(execute|refuse|confirm)", text, re.IGNORECASE)
    if status is None:
        return None
    word = STATUS_WORDS[status.group(1).lower()]
    reason = re.search(r"REASON:\s*(.+)", text)
    if word != "execute":
        return Decision(status=word, reason=reason.group(1).strip() if reason else "")
    uav = re.search(r"UAV:\s*([\w\-]+)", text)
    points = re.search(r"WAYPOINTS:\s*(.+)", text)
    if uav is None or points is None:
        return None
    rows = []
    for chunk in points.group(1).split(";"):
        numbers = re.findall(r"-?\d+(?:\.\d+)?", chunk)
        if len(numbers) == 4:
            rows.append([float(n) for n in numbers])
    if len(rows) < 2:
        return None
    return Decision(
        status="execute", uav_id=uav.group(1), waypoints=rows, reason=reason.group(1).strip() if reason else ""
    )


def text_prompt() -> str:
    return f"Answer in exactly this plain format:\n{PLAIN_DECISION_FORMAT}"


def invoke(model: Any, messages: list[BaseMessage], usage: MethodUsage, **kwargs: Any) -> Any:
    started = time.perf_counter()
    reply = invoke_chat(model, messages, model_name=type(model).__name__, **kwargs)
    used = getattr(reply, "usage_metadata", None) or {}
    usage.llm_calls += 1
    usage.llm_latency_sec += time.perf_counter() - started
    usage.prompt_tokens += int(used.get("input_tokens", 0))
    usage.completion_tokens += int(used.get("output_tokens", 0))
    return reply


def unparsed(reply_text: str, usage: MethodUsage, what: str = "unparseable answer") -> MethodRun:
    return MethodRun(
        decision=Decision(status="human_confirm", reason=what),
        first_failing_stage="ir",
        usage=usage,
        trace={"raw_output": reply_text[:4000]},
    )


def model_failure(exc: Exception, usage: MethodUsage) -> MethodRun:
    return MethodRun(
        decision=Decision(status="human_confirm", reason=f"model unavailable: {type(exc).__name__}: {exc}"[:300]),
        first_failing_stage="ir",
        usage=usage,
    )


def chat_model(setup: Any, world: World, instruction: str, max_tokens: int) -> BaseChatModel:
    from models.chat import make_chat_model

    return make_chat_model(
        setup.model, world=world, instruction=instruction, base_url=setup.base_url, api_key=setup.api_key,
        max_tokens=max_tokens,
    )  # fmt: skip
