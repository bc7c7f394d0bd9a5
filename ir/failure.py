"""What a failed stage leaves for the routers (Failure) and for the repair prompt (Counterexample)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ComponentUnavailable(RuntimeError):
    """Something a run needs cannot work here: a model backend that cannot answer (models.base.LLMBackendUnavailable),
    the embedding model not built (memory.embeddings.EmbeddingModelMissingError). The request is not at fault and no
    decision can come of the run: the graph lets it through its error handlers (no fallback, no refusal recorded)
    and every command exits 2 with its message, which says what to fix."""


class Counterexample(BaseModel):
    """What the repair prompt gets: short, never the whole trajectory."""

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
    reasons: list[str] = Field(
        default_factory=list, description="a risk failure's top reasons, each with its share of the score"
    )
    missing_information: list[str] = Field(
        default_factory=list, description="facts the request leaves out, each 'field: why' (R8): for the operator"
    )
    repairs: list[dict[str, Any]] = Field(
        default_factory=list, description="the repair candidates derived for it (ir/repairs.py): id, summary, changes"
    )


class Failure(BaseModel):
    """The current attempt's failure, which the routers read."""

    stage: str = Field(description="the node that failed: validate, execute_tools, verify, simulate, generate_ir...")
    error_type: str
    recoverable: bool
    message: str = ""
    counterexample: Counterexample
    blockers: list[str] = Field(
        default_factory=list,
        description="the ids of the world's items the failing tool found in the way (zones, buildings, approved "
        "intents' reservations): for the decision and the operator, not the repair prompt",
    )


def failure_record(
    stage: str,
    error_type: str,
    *,
    recoverable: bool,
    message: str = "",
    blockers: list[str] | None = None,
    **counterexample: Any,
) -> dict[str, Any]:
    """A Failure as state JSON; the counterexample's stage and type default to the failure's."""
    counterexample.setdefault("failure_stage", stage)
    counterexample.setdefault("failure_type", error_type)
    return Failure(
        stage=stage,
        error_type=error_type,
        recoverable=recoverable,
        message=message,
        counterexample=Counterexample(**counterexample),
        blockers=blockers or [],
    ).model_dump(mode="json")
