"""The one model factory: from a model string and a `ModelSettings`, the IR writer the graph runs (`init_ir_writer`)
and the chat model the baselines run (`init_chat_model`), in the shape of LangChain's `init_chat_model`.

The model string's prefix picks a provider in the registry (models.options.PROVIDERS: `local[:full|:slots]`,
`openai:<model>`, `oracle`, `rules`); its module is imported only then, so a backend's libraries (llama.cpp,
langchain-openai) load only when used. Adding a provider is a module with a `ModelProvider` subclass and one line
in PROVIDERS.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from ir.model import LLMAnswer, LowAltitudeIR
from models.base import IRGenerator
from models.options import PROVIDERS, IRFormat, ModelSpec, parse_model

if TYPE_CHECKING:  # langchain's chat model type and the world are only annotations here
    from langchain_core.language_models import BaseChatModel

    from tools.registry import ToolRegistry
    from tools.world import World

Gold = dict[str, Any] | LowAltitudeIR | LLMAnswer


class ModelSettings(BaseModel):
    """Everything besides the model string that decides how a model is made, for IR writers and chat models alike."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str | None = Field(default=None, description="an OpenAI-compatible server; None: OPENAI_BASE_URL")
    api_key: str | None = Field(default=None, description="None: OPENAI_API_KEY, else a placeholder local servers take")
    structured_output: str = Field(
        default="auto", description="how a server gets the answer's schema (models.options.STRUCTURED_OUTPUT_CHOICES)"
    )
    ir_format: IRFormat = Field(
        default="full", description="what a chat server's IR writer writes: the full IR, or slots compiled into it"
    )
    max_new_tokens: int | None = Field(default=None, description="caps every answer; None: the backend's own cap")
    max_retries: int = Field(default=2, ge=0, description="retries of a server in trouble (429, 5xx, timeouts)")
    timeout_sec: float = Field(default=120.0, gt=0, description="one request's time limit")
    seed: int = Field(default=0, description="a chat model's sampling seed")


class ModelProvider(ABC):
    """One family of models, named by a model-string prefix: makes its IR writer and its chat model from the name
    after the prefix ("" when none) and the settings."""

    @abstractmethod
    def ir_writer(
        self, spec: ModelSpec, settings: ModelSettings, *, registry: ToolRegistry | None, sample_gold: Gold | None
    ) -> IRGenerator:
        """The IR writer; `registry` None = the default tool catalog (for the prompt's tool list)."""

    def chat_model(self, spec: ModelSpec, settings: ModelSettings, *, world: World, instruction: str) -> BaseChatModel:
        """The chat model; `world` and `instruction` are for a provider that answers without an LLM."""
        raise ValueError(f"{spec.model} only writes IRs; it is not a chat model")


def provider_of(model: str) -> tuple[ModelProvider, ModelSpec]:
    """The provider a model string names, and the parsed string; models.options.UnknownModel if none does."""
    spec = parse_model(model)
    module, _, name = PROVIDERS[spec.provider].target.partition(":")
    return getattr(importlib.import_module(module), name)(), spec


def init_ir_writer(
    model: str,
    settings: ModelSettings | None = None,
    *,
    registry: ToolRegistry | None = None,
    sample_gold: Gold | None = None,
) -> IRGenerator:
    """The IR writer (what the graph's generate_ir runs) of a model string; `sample_gold` is the oracle's answer."""
    provider, spec = provider_of(model)
    return provider.ir_writer(spec, settings or ModelSettings(), registry=registry, sample_gold=sample_gold)


def init_chat_model(
    model: str, settings: ModelSettings | None = None, *, world: World, instruction: str
) -> BaseChatModel:
    """The LangChain chat model (what the chat baselines run) of a model string; `world` and `instruction` are read by
    `rules` only."""
    provider, spec = provider_of(model)
    return provider.chat_model(spec, settings or ModelSettings(), world=world, instruction=instruction)


def default_registry() -> ToolRegistry:
    """The default tool catalog, imported when a writer needs it (it imports every tool module)."""
    from tools.catalog import default_registry as catalog

    return catalog()
