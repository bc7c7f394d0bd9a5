"""Run-time context of a graph run (LangGraph `Runtime[Context]`): what to run with, not what is being run.

Each field carries a description in its metadata (LangGraph Studio shows it, as in langchain-ai/react-agent).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:  # the memory (Qdrant, embeddings) loads when a run opens it, not when a parser reads a default
    from memory.cases import CaseHit, RepairCase
    from memory.store import RuleHit

ABLATABLE = ("ir", "verifier", "simulator", "repair", "memory", "rag", "fidelity")
DEFAULT_MODEL = "local"  # the embedded offline model (models/local_backend.py): no network, no API key


class RepairMemory(Protocol):
    """What the nodes use of the safety memory (memory.store.SafetyMemory is the implementation)."""

    def search_rules(self, query: str, k: int = 3) -> list[RuleHit]: ...

    def search_cases(self, query_text: str, failure_type: str | None = None, k: int = 3) -> list[CaseHit]: ...

    def format_case_for_prompt(self, case: RepairCase | CaseHit) -> str: ...

    def store_cases(self, cases: Iterable[RepairCase]) -> int: ...


@dataclass(frozen=True)
class Context:
    model: str = field(
        default=DEFAULT_MODEL,
        metadata={"description": "IR writer: local, local:full, openai:<model>, rules or oracle (models/factory.py)"},
    )
    base_url: str | None = field(
        default=None, metadata={"description": "OpenAI-compatible server URL for openai:<model> (e.g. a vLLM server)"}
    )
    api_key: str | None = field(default=None, metadata={"description": "API key for that server, if it needs one"})
    ir_format: str = field(
        default="full",
        metadata={
            "description": "what an openai:<model> server writes: the full IR, or slots (a compact answer a small "
            "model can fill, compiled into the IR); local models take it from their spec (local = local:slots)"
        },
    )
    structured_output: str = field(
        default="auto",
        metadata={
            "description": "how an openai:<model> server gets the answer's schema: auto (probed once per server: "
            "json_schema, json_object, tools, text), or one of those"
        },
    )
    max_repairs: int = field(
        default=3,
        metadata={"description": "K: repair rounds before fallback (the loop's own cap, not recursion_limit)"},
    )
    stress_level: Literal["low", "medium", "high"] = field(
        default="medium", metadata={"description": "stress of the simulate gate: gusts, unknown traffic, pop-up NFZ"}
    )
    sim_seed: int = field(default=0, metadata={"description": "seed of the simulate gate's first scenario"})
    stress_scenarios: int = field(
        default=3,
        metadata={
            "description": "scenarios the simulate gate flies (seeds sim_seed, sim_seed + 1, ...); the route must "
            "pass every one, as one lucky draw of traffic or pop-up zones proves little"
        },
    )
    without: frozenset[str] = field(
        default_factory=frozenset, metadata={"description": f"ablated parts, a subset of {', '.join(ABLATABLE)}"}
    )
    interactive: bool = field(
        default=False, metadata={"description": "fallback asks the operator through interrupt() instead of ending"}
    )
    memory: RepairMemory | None = field(
        default=None, metadata={"description": "the safety memory; None when ablated (Qdrant is then never opened)"}
    )
    max_new_tokens: int | None = field(
        default=None,
        metadata={"description": "cap on every model answer's tokens (a benchmark budget); None = the model's own"},
    )
    top_k_cases: int = field(default=3, metadata={"description": "past repair cases shown in a repair prompt"})
