"""Run-time context of a graph run (LangGraph `Runtime[Context]`): what to run with, not what is being run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

ABLATABLE = ("ir", "verifier", "simulator", "repair", "memory", "rag")
DEFAULT_MODEL = "local"  # the embedded offline model (graph/llm/local_backend.py): no network, no API key


@dataclass(frozen=True)
class Context:
    model: str = DEFAULT_MODEL
    base_url: str | None = None
    api_key: str | None = None
    max_repairs: int = 3
    stress_level: Literal["low", "medium", "high"] = "medium"
    sim_seed: int = 0
    without: frozenset[str] = field(default_factory=frozenset)
    interactive: bool = False
    memory: Any = None  # a memory.store.SafetyMemory, or None when the memory is ablated / not configured
    top_k_cases: int = 3
