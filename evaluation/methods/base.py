"""The contract every compared method implements: one task in, one `MethodRun` out.

Every method gets the same `Budget` (LLM calls, tool calls, new tokens, repair rounds) and ends in the same
`Decision` (execute with a UAV and 4D waypoints, safe_refusal or human_confirm). What the method claims about its
decision is recorded but never scored: the runner hands the decision to the independent judge
(evaluation/judge.py), which sets success and safety.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from pydantic import BaseModel, ConfigDict, Field

from evaluation.records import Stage
from ir.decision import Decision
from nodes.context import RepairMemory
from nodes.state import Usage as MethodUsage  # the graph's own usage record, summed over a run
from tools.world import World

ModelKind = Literal["llm", "rules", "oracle"]


class Budget(BaseModel):
    """The same for every method of a run: one token budget and one tool-call cap, so methods compare fairly."""

    model_config = ConfigDict(frozen=True)

    max_llm_calls: int = Field(default=8, ge=1, description="model calls per task, repairs included")
    max_tool_calls: int = Field(default=12, ge=1, description="tool calls per task")
    max_new_tokens: int = Field(default=1024, ge=16, description="new tokens per model call")
    max_prompt_tokens: int | None = Field(
        default=None,
        ge=512,
        description="prompt tokens per model call, sizing the state view a baseline is shown (the world JSON, "
        "the state summary); None = what the local model's context holds beside max_new_tokens. The agent's "
        "own prompts carry retrieved context, never the world, and stay far below it",
    )
    max_repairs: int = Field(default=3, ge=0, description="K: repair rounds, for the methods that repair")
    plan_samples: int = Field(
        default=25,
        ge=1,
        description="answers one sampling call draws: tree_planner's N plans (the paper's 25) and min(20, N) votes "
        "per decision; a sampling call counts once against max_llm_calls",
    )


class MethodTask(BaseModel):
    """One benchmark sample as a method may see it: the request and the world, never the label or gold."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    sample_id: str
    instruction: str
    world: World
    scenario_type: str = ""
    gold_ir: dict[str, Any] | None = Field(default=None, description="read only by the `oracle` model")


@dataclass(frozen=True)
class MethodSetup:
    """What to run a method with: the model, the budget and the run's infrastructure."""

    model: str
    budget: Budget = field(default_factory=Budget)
    base_url: str | None = None
    api_key: str | None = None
    structured_output: str = "auto"  # openai:<model>: how the server gets the schema (models.openai_backend)
    ir_format: str = "full"  # openai:<model>: the full IR or slots (models.slots)
    checkpointer: BaseCheckpointSaver | None = None  # graph methods checkpoint every step here (one per worker)
    memory: RepairMemory | None = None  # the safety memory, None when not used
    thread_id: str = "run"  # a fresh one per run
    sim_seed: int = 0  # the agent's own simulate gate; the judge uses other seeds


class TracedToolCall(BaseModel):
    """One tool call a method made; `args` when the method recorded them."""

    tool: str
    ok: bool
    error_type: str | None = None
    args: dict[str, Any] | None = None
    latency_sec: float = 0.0


class MethodRun(BaseModel):
    """What a method returns for one task; the runner adds the judgement and stores both."""

    decision: Decision
    ir: dict[str, Any] | None = Field(default=None, description="the final LowAltitudeIR, for methods that write one")
    tool_calls: list[TracedToolCall] = Field(default_factory=list, description="in call order, all rounds")
    repair_rounds: int = Field(default=0, ge=0)
    success_round: int | None = Field(default=None, description="round of the decision the method itself accepted")
    first_failing_stage: Stage | None = None
    corrections: int | None = Field(
        default=None,
        ge=0,
        description="times the method corrected itself after a failure (tree_planner: backtracks, autoplan: "
        "reflexion retries, emos: reassignments, react: turns after a failed tool call); None = its repair rounds",
    )
    answered: bool = Field(
        default=True,
        description="the method reached a final answer of its own (AutoPlan's TCR); False when it ran out of "
        "budget, its model failed or its answer was unusable",
    )
    usage: MethodUsage = Field(default_factory=MethodUsage)
    trace: dict[str, Any] = Field(default_factory=dict, description="method-specific record, written to the JSONL")


class Method(ABC):
    """A compared method. Subclasses set `name`, `summary` and the model kinds they accept."""

    name: ClassVar[str]
    summary: ClassVar[str]
    # `oracle` writes the gold IR, so only methods whose model output is an IR can take it.
    model_kinds: ClassVar[frozenset[ModelKind]] = frozenset({"llm", "rules"})

    @abstractmethod
    def run(self, task: MethodTask, setup: MethodSetup) -> MethodRun: ...

    def warm_up(self) -> None:  # noqa: B027 - a hook: most methods load nothing up front
        """Loads what the method's first run in a process would otherwise load (a benchmark worker calls it
        before any run, so no run's latency carries the process's start-up)."""


def model_kind(model: str) -> ModelKind:
    return "oracle" if model == "oracle" else "rules" if model == "rules" else "llm"
