"""LowAltitudeIR v0.1: the typed intermediate representation the LLM writes.

Only shape, enums, defaults and units live here; grounding against the live world is the validator's job
(ir/validation.py), because it depends on the current map and fleet.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tools.rules import DEFAULT_ALTITUDE_MAX_M, DEFAULT_ALTITUDE_MIN_M, DEFAULT_MIN_SEPARATION_M

IR_VERSION = "0.1"


class Intent(str, Enum):
    delivery = "delivery"
    inspection = "inspection"
    patrol = "patrol"
    emergency = "emergency"
    return_ = "return"
    charge = "charge"
    monitoring = "monitoring"


class Priority(str, Enum):
    low = "low"
    normal = "normal"
    high = "high"
    critical = "critical"


class MaxRiskLevel(str, Enum):
    low = "low"
    medium = "medium"
    high = "high"


class FallbackPolicy(str, Enum):
    ground_transfer = "ground_transfer"
    wait = "wait"
    human_confirm = "human_confirm"
    safe_refusal = "safe_refusal"
    ground_transfer_or_human_confirm = "ground_transfer_or_human_confirm"


HUMAN_CONFIRM_POLICIES = (FallbackPolicy.human_confirm, FallbackPolicy.ground_transfer_or_human_confirm)


class _IRModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EntityRefs(_IRModel):
    origin: str | None = None
    destination: str | None = None
    waypoints: list[str] = Field(default_factory=list, description="entity ids to visit in order")
    candidate_uavs: list[str] = Field(default_factory=list)
    avoid_zones: list[str] = Field(default_factory=list, description="no-fly / sensitive zone ids to keep out of")
    sensitive_zones: list[str] = Field(default_factory=list)
    handoff_points: list[str] = Field(default_factory=list, description="entity ids for a ground hand-off")

    @property
    def landing(self) -> str | None:
        """Where the UAV lands: the ground hand-off point when there is one, else the destination."""
        return self.handoff_points[0] if self.handoff_points else self.destination


class OperationConstraints(_IRModel):
    deadline_sec: float | None = Field(default=None, description="seconds from now; null = no deadline")
    altitude_min_m: float = Field(
        default=DEFAULT_ALTITUDE_MIN_M,
        ge=0,
        description="floor in metres AGL, en route: from the top of the take-off climb to the start of the landing",
    )
    altitude_max_m: float = Field(
        default=DEFAULT_ALTITUDE_MAX_M, ge=0, description="ceiling in metres AGL, over the whole flight"
    )
    min_separation_m: float = Field(default=DEFAULT_MIN_SEPARATION_M, ge=0)
    battery_reserve_ratio: float = Field(default=0.2, description="battery share left on arrival")
    max_risk_level: MaxRiskLevel = MaxRiskLevel.medium
    corridor_capacity_required: int = Field(default=1, ge=1)
    payload_kg: float = Field(default=0.0, ge=0)

    @model_validator(mode="after")
    def _altitude_order(self) -> OperationConstraints:
        if self.altitude_min_m >= self.altitude_max_m:
            raise ValueError("altitude_range_inverted: altitude_min_m must be lower than altitude_max_m")
        return self


class ToolCallSpec(_IRModel):
    id: str = Field(description="step id, referenced by depends_on")
    tool: str
    args: dict[str, Any] = Field(default_factory=dict, description="may be partial: execution fills the rest")
    depends_on: list[str] = Field(default_factory=list)


class VerificationSpecs(_IRModel):
    ltl: list[str] = Field(default_factory=list, description="Spot syntax over in_<zone>, at_<entity>, at_goal ...")
    stl: list[str] = Field(default_factory=list, description="rtamt syntax over the rule signals")
    program_rules: list[str] = Field(default_factory=list, description="rule ids R1-R8")


class ExplanationPlan(_IRModel):
    cite_tools: list[str] = Field(default_factory=list)
    cite_rules: list[str] = Field(default_factory=list)


class LowAltitudeIR(_IRModel):
    task_id: str = Field(min_length=1)
    intent: Intent
    priority: Priority
    entities: EntityRefs
    constraints: OperationConstraints = Field(default_factory=OperationConstraints)
    tool_plan: list[ToolCallSpec] = Field(min_length=1)
    verification_specs: VerificationSpecs = Field(default_factory=VerificationSpecs)
    fallback_policy: FallbackPolicy = FallbackPolicy.human_confirm
    explanation_plan: ExplanationPlan | None = None

    @field_validator("tool_plan")
    @classmethod
    def _unique_step_ids(cls, steps: list[ToolCallSpec]) -> list[ToolCallSpec]:
        ids = [s.id for s in steps]
        if len(ids) != len(set(ids)):
            raise ValueError("tool_plan step ids must be unique")
        return steps


class Uncertainty(_IRModel):
    needs_human_confirmation: bool = False
    missing_information: list[str] = Field(default_factory=list)


class LLMAnswer(_IRModel):
    """What the LLM returns: the IR, a short rationale (no chain of thought is stored) and its uncertainty."""

    low_altitude_ir: LowAltitudeIR
    rationale_summary: str = ""
    uncertainty: Uncertainty = Field(default_factory=Uncertainty)
