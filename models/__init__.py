"""LLM backends of the agent graph: one `IRGenerator` interface, chosen by a model string."""

from models.base import (
    SHARED_CACHE,
    GenerationRequest,
    GenerationResult,
    IRGenerator,
    LLMTransportError,
    RepairFeedback,
    ResponseCache,
    RetrievedContext,
    TokenUsage,
    extract_answer,
)
from models.factory import MODEL_CHOICES, make_generator

__all__ = [
    "MODEL_CHOICES",
    "SHARED_CACHE",
    "GenerationRequest",
    "GenerationResult",
    "IRGenerator",
    "LLMTransportError",
    "RepairFeedback",
    "ResponseCache",
    "RetrievedContext",
    "TokenUsage",
    "extract_answer",
    "make_generator",
]
