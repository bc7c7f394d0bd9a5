"""Graph state: what a run is given (InputState), what it carries (State), what it returns (OutputState).

Values are plain JSON (pydantic models dumped with mode="json") so every checkpoint is readable from SQLite,
`show ir.entities` / `--set ir.entities.avoid_zones=[...]` work on paths, and nothing depends on pickling.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, TypedDict

from pydantic import BaseModel, Field

Status = Literal["execute", "safe_refusal", "human_confirm"]


class Counterexample(BaseModel):
    """What the repair prompt gets (SPEC section 6): short, never the whole trajectory."""

    failure_stage: str
    failure_type: str
    violated_rule: str | None = None
    time_sec: float | None = None
    robustness: float | None = None
    offending_segment: list[Any] = Field(default_factory=list)
    offending_entity: str | None = None
    suggested_repair: str | None = None
    field: str | None = None
    value: Any = None
    allowed: list[Any] = Field(default_factory=list, description="the validator's nearest valid values")


class Failure(BaseModel):
    """The current attempt's failure, which the routers read."""

    stage: str = Field(description="the node that failed: validate, execute_tools, verify, simulate, generate_ir...")
    error_type: str
    recoverable: bool
    message: str = ""
    counterexample: Counterexample


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0
    llm_latency_sec: float = 0.0


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


class Decision(BaseModel):
    status: Status
    uav_id: str | None = None
    waypoints: list[list[float]] = Field(default_factory=list, description="[x, y, z, t]")
    eta_sec: float | None = None
    energy_wh: float | None = None
    reason: str = ""
    proposal: dict[str, Any] | None = Field(default=None, description="unverified candidate shown for confirmation")
    approved_by_operator: bool = False
    verified: bool = False
    simulated: bool = False


class InputState(TypedDict, total=False):
    instruction: str
    world: dict[str, Any]
    task_id: str
    gold_ir: dict[str, Any] | None  # only the `oracle` model reads it
    run_config: dict[str, Any]  # model, ablations, K, stress: lets replay / fork rebuild the same graph
    scenario_type: str  # benchmark label, carried into the repair cases the run leaves in memory


class State(InputState, total=False):
    world_version: str
    context: dict[str, Any]  # retrieved rules, entities (rag)
    round: int  # repair rounds used so far
    round_started_at: float
    repair_exhausted: bool
    attempt_open: bool
    raw_output: str
    answer: dict[str, Any] | None  # rationale_summary and uncertainty of the LLM answer
    ir: dict[str, Any] | None
    validation: dict[str, Any] | None
    tool_results: list[dict[str, Any]]
    candidate: dict[str, Any] | None  # uav_id / waypoints / eta / energy of the current plan
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
