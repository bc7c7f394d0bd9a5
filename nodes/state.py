"""Graph state: what a run is given (InputState), what it carries (State), what it returns (OutputState).

Values are plain JSON (pydantic models dumped with mode="json") so every checkpoint is readable from SQLite,
`show ir.entities` / `--set ir.entities.avoid_zones=[...]` work on paths, and nothing depends on pickling.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from pydantic import BaseModel, Field

from ir.decision import Status
from ir.failure import Failure

if TYPE_CHECKING:  # only a type: the gates' state must import without any model package
    from models.base import GenerationResult


class Usage(BaseModel):
    """What model calls cost. An answer served from the response cache costs what its original call did: a
    method's cost must not depend on which other method ran the same prompt first in the same process. The wall
    time the cache saved is kept apart (`cached_llm_latency_sec`), so true wall time stays recoverable."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0
    llm_latency_sec: float = 0.0
    cached_llm_calls: int = Field(default=0, description="of llm_calls, those served from the response cache")
    cached_llm_latency_sec: float = Field(default=0.0, description="of llm_latency_sec, what the cache saved")

    @classmethod
    def of_generation(cls, result: GenerationResult) -> Usage:
        return cls(
            prompt_tokens=result.usage.prompt_tokens,
            completion_tokens=result.usage.completion_tokens,
            llm_calls=1,
            llm_latency_sec=result.latency_sec,
            cached_llm_calls=int(result.cached),
            cached_llm_latency_sec=result.latency_sec if result.cached else 0.0,
        )


class Attempt(BaseModel):
    """One round of the loop, appended when the round ends (repair, finalize or fallback)."""

    round: int
    ir: dict[str, Any] | None = None
    validation: dict[str, Any] | None = None
    tool_results: list[dict[str, Any]] = Field(default_factory=list)
    verdict: dict[str, Any] | None = None
    simulation: dict[str, Any] | None = None
    failure: Failure | None = None
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    prompt_version: str = ""
    latency_sec: float = 0.0


def override(value: list[Any]) -> dict[str, Any]:
    """An update that replaces a list channel instead of appending to it (see `override_reducer`)."""
    return {"type": "override", "value": value}


def override_reducer(current: list[Any] | None, update: list[Any] | dict[str, Any]) -> list[Any]:
    """Lists grow by appending updates; an `override(...)` update replaces the list (a new round starts empty)."""
    if isinstance(update, dict) and update.get("type") == "override":
        return list(update.get("value") or [])
    return [*(current or []), *update]


class InputState(TypedDict, total=False):
    instruction: str
    world: dict[str, Any]
    task_id: str
    gold_ir: dict[str, Any] | None  # only the `oracle` model reads it
    run_config: dict[str, Any]  # model, ablations, K, stress: lets replay / fork rebuild the same graph
    scenario_type: str  # benchmark label, carried into the repair cases the run leaves in memory


class State(InputState, total=False):
    world_version: str
    retrieved: dict[str, Any]  # rules, map entities (retrieve) and past repair cases (repair)
    reading: dict[str, Any]  # the request's reading (nodes/reading.py), computed once by the first generate_ir
    round: int  # repair rounds used so far
    round_started_at: float
    repair_exhausted: bool
    attempt_open: bool
    raw_output: str
    answer: dict[str, Any] | None  # rationale_summary and uncertainty of the LLM answer
    ir: dict[str, Any] | None
    validation: dict[str, Any] | None
    tool_results: Annotated[list[dict[str, Any]], override_reducer]  # this round's results; reset by generate_ir
    candidate: dict[str, Any] | None  # uav_id / waypoints / eta / energy of the current plan
    # a fleet mission's members (ir.team_execution.TeamMember: sub-task, role, UAV, share, route); written only by
    # rounds whose IR carries a team, so one-UAV runs never hold the key
    team_candidates: list[dict[str, Any]] | None
    verdict: dict[str, Any] | None
    simulation: dict[str, Any] | None
    failure: dict[str, Any] | None
    feedback: dict[str, Any] | None  # what the next generate_ir shows the LLM
    usage: dict[str, Any]  # usage of the current round
    attempts: Annotated[list[dict[str, Any]], operator.add]
    operator_reply: dict[str, Any] | None
    status: Status
    decision: dict[str, Any]
    explanation: dict[str, Any]


class OutputState(TypedDict, total=False):
    task_id: str
    status: Status
    decision: dict[str, Any]
    explanation: dict[str, Any]
    attempts: list[dict[str, Any]]
    round: int
    failure: dict[str, Any] | None
