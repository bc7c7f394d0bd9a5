"""LowAltitudeIR v0.2: the typed intermediate representation the LLM writes.

Only shape, enums, defaults and units live here; grounding against the live world is the validator's job
(ir/validation.py), because it depends on the current map and fleet.

0.2 adds `team` (a fleet mission's sub-tasks and their UAVs). A 0.1 IR is a valid 0.2 IR, and an IR without a team
dumps exactly as in 0.1 (no `team` key), so stored IRs, their digests and 0.1 readers are unaffected.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from tools.dependencies import find_cycle
from tools.items import is_whole_items
from tools.rules import DEFAULT_ALTITUDE_MAX_M, DEFAULT_ALTITUDE_MIN_M, DEFAULT_MIN_SEPARATION_M

IR_VERSION = "0.2"


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


def shape_error(
    error_type: str, field: str, value: Any, message: str, allowed: Sequence[Any] = ()
) -> PydanticCustomError:
    """A shape rule's failure naming its own error type and the field (relative to the model that checks it), so
    that the validator reports it like a grounding finding, with a path a repair can act on."""
    return PydanticCustomError(error_type, message, {"field": field, "value": value, "allowed": list(allowed)})


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
            raise shape_error(
                "altitude_range_inverted",
                "altitude_min_m",
                [self.altitude_min_m, self.altitude_max_m],
                "constraints.altitude_min_m must be lower than constraints.altitude_max_m",
            )
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


# A fixed vocabulary, not free text: the grounded schema can offer it as an enum, and `relay_leg` changes what the
# validator counts (a relay leg carries on a load already counted). What a sub-task needs of its UAV is stated by
# payload_kg and required_sensors, not inferred from the role.
SubTaskRole = Literal["deliver", "inspect", "film", "relay_leg"]
DELIVERING_ROLES: frozenset[str] = frozenset({"deliver", "relay_leg"})  # a sub-task whose route ends with its load
OBSERVING_ROLES: frozenset[str] = frozenset({"film", "inspect"})  # a sub-task that watches with its sensors
TeamObjective = Literal["min_makespan", "min_energy"]


class SubTask(_IRModel):
    """One share of a fleet mission. Every field but `role` and `uavs` is the team tool's sub-task argument of the
    same name, so a sub-task converts to it one to one; `uavs` is the assignment."""

    # Descriptions are short: the prompt shows them to small models under a character budget.
    id: str = Field(min_length=1, description="unique; other sub-tasks' `after` name it")
    role: SubTaskRole = Field(
        default="deliver",
        description="inspect/film: visit with the sensors; relay_leg: carry on, from origin, the load an `after` "
        "sub-task left there",
    )
    origin: str = Field(min_length=1, description="entity id: where its load waits, or a relay pad")
    destination: str = Field(min_length=1, description="entity id: a site, or a relay pad")
    waypoints: list[str] = Field(default_factory=list, description="entity ids on the way")
    payload_kg: float = Field(default=0.0, ge=0, description="mass it carries")
    deadline_sec: float | None = Field(default=None, description="seconds from now; null = constraints.deadline_sec")
    required_sensors: list[str] = Field(default_factory=list, description="sensors its UAV must have")
    after: list[str] = Field(default_factory=list, description="sub-task ids done before it starts")
    split: bool = Field(default=False, description="several UAVs may share its payload")
    uavs: list[str] = Field(
        default_factory=list, description="idle UAV ids; empty = the team tool picks; several only if split"
    )
    # Left out of a dump when None (as LowAltitudeIR.team), so a team IR written before it dumps, and digests, as then.
    uav_count: int | None = Field(
        default=None,
        ge=1,
        exclude_if=lambda count: count is None,
        description="split: exactly this many UAVs; null = the tool chooses",
    )
    item_kg: float | None = Field(
        default=None,
        gt=0,
        exclude_if=lambda item: item is None,
        description="kg of one item",  # the prompt's character budget: null = the load divides freely
    )

    @model_validator(mode="after")
    def _own_shape(self) -> SubTask:
        if len(set(self.uavs)) != len(self.uavs):
            raise shape_error("invalid_value", "uavs", self.uavs, f"sub-task {self.id!r} names a UAV twice in uavs")
        if len(self.uavs) > 1 and not self.split:
            message = f"sub-task {self.id!r} names {len(self.uavs)} UAVs but is not split: set split or name one UAV"
            raise shape_error("invalid_value", "uavs", self.uavs, message)
        if self.item_kg is not None and not is_whole_items(self.payload_kg, self.item_kg):
            message = (
                f"sub-task {self.id!r} carries {self.payload_kg:g} kg: no whole number of {self.item_kg:g} kg items"
            )
            raise shape_error("invalid_value", "payload_kg", self.payload_kg, message)
        if self.role == "relay_leg" and not self.after:
            message = f"relay_leg {self.id!r} must name in `after` the sub-task whose load it carries on"
            raise shape_error("invalid_value", "after", self.after, message)
        return self


class TeamPlan(_IRModel):
    """A fleet mission: the request split into sub-tasks, each flown by its own UAV(s), some after others."""

    subtasks: list[SubTask] = Field(
        min_length=1,
        description="2+, or 1 split; together they serve every site and carry all the payload",
    )
    objective: TeamObjective = Field(default="min_makespan", description="the last finish time, or the energy spent")

    @model_validator(mode="after")
    def _team_shape(self) -> TeamPlan:
        subtasks = self.subtasks
        if len(subtasks) == 1 and not subtasks[0].split:
            message = "a team has two or more sub-tasks, or one split sub-task; a one-UAV task leaves `team` out"
            raise shape_error("invalid_value", "subtasks", [subtasks[0].id], message)
        ids = [s.id for s in subtasks]
        for i, sub in enumerate(subtasks):
            if sub.id in ids[:i]:
                raise shape_error("invalid_value", f"subtasks.{i}.id", sub.id, f"sub-task id {sub.id!r} is used twice")
        for i, sub in enumerate(subtasks):
            others = [other for other in ids if other != sub.id]
            for j, before in enumerate(sub.after):
                if before not in others:
                    message = f"sub-task {sub.id!r} comes after {before!r}, which is not another sub-task of the team"
                    raise shape_error("dependency_missing", f"subtasks.{i}.after.{j}", before, message, others)
        cycle = find_cycle({s.id: s.after for s in subtasks})
        if cycle:
            message = "`after` forms a cycle: " + " -> ".join(cycle)
            raise shape_error("cycle", f"subtasks.{ids.index(cycle[0])}.after", cycle, message)
        landings = {s.id: s.destination for s in subtasks}
        for i, sub in enumerate(subtasks):
            pads = [landings[before] for before in sub.after]
            if sub.role == "relay_leg" and sub.origin not in pads:
                message = f"relay_leg {sub.id!r} carries on a load, so it starts where a sub-task in its `after` ends"
                raise shape_error("invalid_value", f"subtasks.{i}.origin", sub.origin, message, pads)
        return self


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
    # Left out of a dump when None: an IR without a team serialises as in 0.1, which keeps the digests of stored
    # IRs (tools/certificate.py) and readers that forbid unknown keys working.
    team: TeamPlan | None = Field(
        default=None,
        exclude_if=lambda team: team is None,
        description="a fleet mission's sub-tasks; null when one UAV flies the task",
    )

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


def llm_answer_schema() -> dict[str, Any]:
    """LLMAnswer's JSON Schema as a model is shown it: the whole answer, `team` included (the graph plans a fleet
    mission an IR carries: nodes/execute_tools)."""
    return LLMAnswer.model_json_schema()
