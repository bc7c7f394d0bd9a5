"""Chooses the IR generator from a model string: `local[:full|:slots]`, `openai:<model>`, `oracle` or `rules`."""

from __future__ import annotations

from typing import Any

from ir.model import LLMAnswer, LowAltitudeIR
from models.base import IRGenerator
from models.options import LOCAL_MODES, unknown_model
from models.oracle import OracleGenerator
from models.rules_parser import RuleBasedGenerator
from tools.registry import ToolRegistry


def make_generator(
    model: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    structured_output: str = "auto",
    ir_format: str = "full",
    sample_gold: dict[str, Any] | LowAltitudeIR | LLMAnswer | None = None,
    registry: ToolRegistry | None = None,
    max_retries: int = 2,
    timeout_sec: float = 120.0,
    max_new_tokens: int | None = None,
) -> IRGenerator:
    """`base_url` / `api_key` default to OPENAI_BASE_URL / OPENAI_API_KEY; `structured_output` is how an
    OpenAI-compatible server gets the schema (models.openai_backend.STRUCTURED_OUTPUT_CHOICES) and `ir_format` what it
    writes (the full IR, or slots compiled into it: models.slots; `local` takes it from its spec); `registry` to the default catalog;
    `max_new_tokens` caps every model answer (a benchmark's budget), None = the backend's own cap."""
    if model == "rules":
        return RuleBasedGenerator()
    if model == "oracle":
        if sample_gold is None:
            raise ValueError("the oracle backend needs the sample's gold IR (sample_gold)")
        return OracleGenerator(sample_gold)
    if model in LOCAL_MODES:
        from models.local_backend import LocalGenerator  # the llama.cpp runtime loads only when used

        registry = registry if registry is not None else _default_registry()
        return LocalGenerator(registry=registry, mode=LOCAL_MODES[model], max_new_tokens=max_new_tokens)
    prefix, _, model_name = model.partition(":")
    if prefix == "openai" and model_name:
        from models.openai_backend import OpenAIGenerator  # langchain-openai is heavy; import it only when used

        return OpenAIGenerator(
            model_name,
            registry=registry if registry is not None else _default_registry(),
            base_url=base_url,
            api_key=api_key,
            structured_output=structured_output,
            ir_format=ir_format,  # type: ignore[arg-type]  # checked by the generator
            max_retries=max_retries,
            timeout_sec=timeout_sec,
            **({"max_tokens": max_new_tokens} if max_new_tokens else {}),
        )
    raise ValueError(unknown_model(model))


def _default_registry() -> ToolRegistry:
    from tools.catalog import default_registry  # imports every tool module

    return default_registry()
