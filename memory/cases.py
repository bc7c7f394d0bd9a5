"""Repair cases: what failed, the compressed counterexample, what the repair changed, and how it ended."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

# Fixed namespace: the same (thread_id, round) always maps to the same Qdrant point id, in every process.
CASE_ID_NAMESPACE = uuid.UUID("6f1c2a8e-3b0d-5e47-9a61-c10d0b7a1e55")
# The counterexample's fields; anything else (whole trajectories, traces) stays out of memory and prompts.
COUNTEREXAMPLE_KEYS = (
    "failure_stage",
    "failure_type",
    "violated_rule",
    "time_sec",
    "robustness",
    "offending_segment",
    "offending_entity",
    "suggested_repair",
)
MAX_SEGMENT_ITEMS = 6
MAX_DIFF_LINES_IN_PROMPT = 4


def compress_counterexample(counterexample: dict[str, Any]) -> dict[str, Any]:
    """Keep the counterexample fields that are set; shorten long offending segments to their first items."""
    compressed = {key: counterexample[key] for key in COUNTEREXAMPLE_KEYS if counterexample.get(key) is not None}
    segment = compressed.get("offending_segment")
    if isinstance(segment, list) and len(segment) > MAX_SEGMENT_ITEMS:
        compressed["offending_segment"] = segment[:MAX_SEGMENT_ITEMS]
    return compressed


class RepairCase(BaseModel):
    """One repair round of one agent thread; (thread_id, round) identifies it."""

    model_config = ConfigDict(extra="forbid")

    instruction: str = Field(min_length=1)
    scenario_type: str = ""
    failure_stage: str = Field(description="schema | grounding | ... | execute | verify | simulate")
    failure_type: str = Field(min_length=1, description="e.g. spec_violation, restricted_airspace, near_miss")
    violated_rule: str | None = Field(default=None, description="R1-R8 when a rule was violated")
    counterexample: dict[str, Any] = Field(default_factory=dict, description="compressed counterexample")
    failing_ir_summary: str = ""
    repaired_ir_diff: str = Field(default="", description="what the repair changed in the IR, a few lines")
    outcome: str = Field(description="e.g. repaired, unrepaired, safe_refusal, human_confirm")
    model: str = ""
    thread_id: str = Field(min_length=1)
    round: int = Field(ge=0)

    @field_validator("counterexample")
    @classmethod
    def _compressed(cls, value: dict[str, Any]) -> dict[str, Any]:
        return compress_counterexample(value)

    @property
    def point_id(self) -> str:
        return str(uuid.uuid5(CASE_ID_NAMESPACE, f"repair_case/{self.thread_id}/{self.round}"))

    def failure_summary(self) -> str:
        cx = self.counterexample
        parts = [f"{self.failure_stage} failure {self.failure_type}"]
        if self.violated_rule:
            parts.append(f"violated {self.violated_rule}")
        if cx.get("offending_entity"):
            parts.append(f"at {cx['offending_entity']}")
        if cx.get("suggested_repair"):
            parts.append(f"suggested: {cx['suggested_repair']}")
        return ", ".join(parts)

    def content_key(self) -> str:
        """The case without the run it came from (thread and round): identical runs (the same demo run twice) store
        cases with one key, which a search shows once."""
        return self.model_dump_json(exclude={"thread_id", "round"})

    def embedding_text(self) -> str:
        """What similarity is measured on: the instruction plus the failure in words."""
        return f"{self.instruction}\n{self.failure_summary()}"


class CaseHit(BaseModel):
    score: float = Field(description="cosine similarity to the query")
    case: RepairCase


def _counterexample_line(cx: dict[str, Any]) -> str:
    details = []
    if cx.get("time_sec") is not None:
        details.append(f"t={cx['time_sec']}s")
    if cx.get("robustness") is not None:
        details.append(f"robustness={cx['robustness']}")
    if cx.get("offending_segment"):
        details.append(f"segment={cx['offending_segment']}")
    return ", ".join(details)


def format_case_for_prompt(case: RepairCase | CaseHit) -> str:
    """A few-line few-shot repair example for the repair prompt (takes a case or a search hit)."""
    if isinstance(case, CaseHit):
        case = case.case
    lines = [f"Past case ({case.scenario_type or 'task'}, outcome {case.outcome}): {case.instruction}"]
    lines.append(f"Failure: {case.failure_summary()}")
    detail = _counterexample_line(case.counterexample)
    if detail:
        lines.append(f"Counterexample: {detail}")
    if case.failing_ir_summary:
        lines.append(f"Failing IR: {case.failing_ir_summary}")
    diff_lines = [line for line in case.repaired_ir_diff.splitlines() if line.strip()]
    if diff_lines:
        lines.append("Repair: " + " | ".join(diff_lines[:MAX_DIFF_LINES_IN_PROMPT]))
    return "\n".join(lines)
