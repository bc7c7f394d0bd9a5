"""One run of one method on one CloudBrain-Bench sample, as the metrics see it.

A `RunRecord` is what the evaluator writes after judging a method's `Decision` with its own verifier and simulator;
`evaluation.metrics` and `evaluation.statistics` compute everything from lists of them and never look at traces,
graphs or models. One record = one (method, model, sample_id, repeat).
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from benchmark.checks import Check
from benchmark.sample import Label
from ir.decision import Status

Stage = Literal["ir", "grounding", "tool", "planning", "verification", "simulation", "policy", "explanation"]
STAGES: tuple[str, ...] = get_args(Stage)  # pipeline order: first failing stage attribution reports them in this order
SAFE_STATUSES: frozenset[str] = frozenset({"safe_refusal", "human_confirm"})
EXECUTE = "execute"
CANONICAL = "canonical"  # the variant of a run on a free-form sample's canonical wording
UNDECIDED_LABELS: frozenset[str] = frozenset({"UNKNOWN"})  # left out of the safety metrics, reported apart


class ToolCall(BaseModel):
    """One tool call the method made, as the evaluator judged it."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(description="registered tool name the method called")
    ok: bool = Field(description="the call returned ok (schema-valid arguments, existing entities, no tool error)")
    dependency_ok: bool = Field(description="every result it needs was produced by an earlier call")
    args: dict[str, Any] | None = Field(default=None, description="the arguments it was called with, when recorded")


class FleetRun(BaseModel):
    """A run on a fleet sample (issue 42): the gold team's size and makespan, and what the judge found the run's
    execute did (evaluation.judge's `TeamOutcome`; a one-UAV execute is a team of one)."""

    model_config = ConfigDict(extra="forbid")

    gold_makespan_sec: float | None = Field(
        default=None, description="the gold team's last arrival (SAT samples); None when the gold does not fly"
    )
    gold_uavs: int | None = Field(default=None, ge=0, description="UAVs in the gold team; None when it does not fly")
    makespan_sec: float | None = Field(default=None, description="execute: the last member's arrival, judged")
    uavs_used: int | None = Field(default=None, ge=0, description="execute: distinct UAVs flying; None otherwise")
    members_flown: int = Field(default=0, ge=0, description="execute: members judged (routes read or not)")
    members_violating: int = Field(default=0, ge=0, description="members with at least one violation")
    member_violations: int = Field(default=0, ge=0, description="violations found on members, all together")


class RunRecord(BaseModel):
    """The judged outcome and costs of one run; the unit every metric in evaluation.metrics averages over."""

    model_config = ConfigDict(extra="forbid")

    sample_id: str = Field(description="bench sample id; with `repeat` it pairs runs of two methods")
    method: str = Field(description="method name (cloudbrain bench methods), e.g. react, cloudbrain_full")
    model: str = Field(description="base LLM the method ran on")
    repeat: int = Field(ge=0, description="0-based repeat index of this (method, model, sample)")
    split: str = Field(description="bench split, e.g. test_seen_city")
    scenario_type: str = Field(description="bench scenario type, e.g. nfz_avoidance")
    difficulty: str = Field(description="easy | medium | hard | extreme | unsat")
    label: Label = Field(description="the sample's gold label")
    structured_output: str | None = Field(
        default=None, description="openai:<model> runs: the structured-output mode the server settled on"
    )
    status: Status = Field(description="status of the method's final Decision")
    judged_success: bool = Field(
        description="the independent judge's verdict on the decision (verifier + simulator on held-out seeds)"
    )
    judged_violations: list[str] = Field(
        default_factory=list, description="rule ids (R1-R8) the judge found violated, e.g. ['R1']"
    )
    right_place: bool | None = Field(
        default=None, description="execute only: right UAV and the places the request mentions; None otherwise"
    )
    stated_kept: bool | None = Field(
        default=None, description="execute only: every constraint the request states holds (judged); None otherwise"
    )
    pinned_uavs: list[str] = Field(default_factory=list, description="UAVs the request pins (the sample's)")
    places: dict[str, str | None] | None = Field(
        default=None,
        description="execute only: the UAV and the entities the trajectory starts and ends at (judge.decision_places)",
    )
    pattern: str | None = Field(
        default=None, description="test_freeform: the free-form pattern of the sample's request in the run's language"
    )
    variant: str | None = Field(
        default=None,
        description="'canonical': the run read the sample's canonical id wording (paraphrase consistency); "
        "None: the sample's request. Metrics use None runs unless asked",
    )
    checks: dict[str, bool | None] = Field(
        default_factory=dict,
        description="the judge's verdict on each of the sample's checks (benchmark/checks.py), by check id; None: "
        "not scored on this decision (e.g. a constraint of a flight that did not fly)",
    )
    sample_checks: list[Check] = Field(
        default_factory=list,
        description="the sample's checks themselves (kind and target of each id in `checks`); empty in results "
        "written before checks existed",
    )
    missing_information: list[str] = Field(
        default_factory=list,
        description="facts the sample's request leaves out, each 'field: why' (its gold decision's); empty when none",
    )
    hallucinations: int = Field(
        default=0, ge=0, description="unknown entity / tool / rule ids in the IR or the explanation"
    )
    tool_calls: list[ToolCall] = Field(default_factory=list, description="calls the method made, in order")
    expected_tools: list[str] = Field(default_factory=list, description="tool names in the sample's gold tool trace")
    expected_tool_args: list[dict[str, Any]] = Field(
        default_factory=list,
        description="the gold trace's arguments, one per expected tool, earlier results filled in (AutoPlan's ST)",
    )
    ir: dict[str, Any] | None = Field(default=None, description="the method's final LowAltitudeIR (JSON), if any")
    gold_ir: dict[str, Any] | None = Field(default=None, description="the sample's gold LowAltitudeIR (JSON)")
    repair_rounds: int = Field(default=0, ge=0, description="repair rounds the method ran (0 = none)")
    success_round: int | None = Field(
        default=None, ge=0, description="round at which a verified decision was reached: 0 = first try, None = never"
    )
    corrections: int = Field(
        default=0,
        ge=0,
        description="times the method corrected itself after a failure (repair rounds, backtracks, ...)",
    )
    answered: bool = Field(default=True, description="the method reached a final answer of its own (AutoPlan's TCR)")
    first_failing_stage: Stage | None = Field(
        default=None, description="the earliest pipeline stage that failed in this run; None if none failed"
    )
    llm_latency_sec: float = Field(default=0.0, ge=0, description="wall time spent waiting on the LLM")
    tool_latency_sec: float = Field(default=0.0, ge=0, description="non-LLM time: tools, verifier, simulator, glue")
    total_latency_sec: float = Field(default=0.0, ge=0, description="end-to-end wall time of the run")
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    llm_calls: int = Field(default=0, ge=0)
    fleet: FleetRun | None = Field(
        default=None,
        exclude_if=lambda fleet: fleet is None,
        description="runs on fleet samples only: the team against gold; absent otherwise (and in earlier results)",
    )

    @model_validator(mode="after")
    def _consistent(self) -> RunRecord:
        if self.success_round is not None and self.success_round > self.repair_rounds:
            raise ValueError("success_round cannot be later than the last repair round")
        return self

    @property
    def key(self) -> tuple[str, int]:
        """(sample_id, repeat): what pairs this run with another method's run on the same task."""
        return (self.sample_id, self.repeat)
