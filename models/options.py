"""The model options a command line offers and the registry of model providers, apart from the backends (so
building `cloudbrain`'s argument parser, and checking a model string, imports no model code). The factory that
makes a provider's models is models.factory."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

StructuredMode = Literal["json_schema", "json_object", "tools", "text"]
# How the answer's schema reaches the server, most exact first: a json_schema response_format; a json_object
# response_format carrying the schema (llama.cpp's server and vLLM constrain decoding with it); a forced function
# call whose parameters are the schema; plain text, read tolerantly.
STRUCTURED_MODES: tuple[StructuredMode, ...] = ("json_schema", "json_object", "tools", "text")
STRUCTURED_OUTPUT_CHOICES = ("auto", *STRUCTURED_MODES)
# What a chat model writes: the full IR under the world-grounded schema, or the compact slots (models/slots.py)
IRFormat = Literal["full", "slots"]
IR_FORMATS: tuple[IRFormat, ...] = ("full", "slots")


@dataclass(frozen=True)
class ProviderEntry:
    """A model provider as the registry names it; its module is imported only when a model of it is made."""

    target: str  # "module:Class" of its models.factory.ModelProvider
    spellings: tuple[str, ...]  # the model strings that name it; "<prefix>:<model>" takes any non-empty name


ANY_NAME = "<model>"
# The model providers, keyed by the model string's prefix (the part before ':'). Adding one is a module with a
# models.factory.ModelProvider subclass and a line here.
PROVIDERS: dict[str, ProviderEntry] = {
    "local": ProviderEntry("models.local_backend:LocalProvider", ("local", "local:full", "local:slots")),
    "openai": ProviderEntry("models.openai_backend:OpenAIProvider", (f"openai:{ANY_NAME}",)),
    "oracle": ProviderEntry("models.oracle:OracleProvider", ("oracle",)),
    "rules": ProviderEntry("models.rules_parser:RulesProvider", ("rules",)),
}
# `local` is the embedded 135M model in the mode made for small models: compact slots compiled into the IR.
LOCAL_MODES: dict[str, IRFormat] = {"local": "slots", "local:slots": "slots", "local:full": "full"}


class UnknownModel(ValueError):
    """A model string that names no provider, or a name its provider does not take."""


@dataclass(frozen=True)
class ModelSpec:
    """A model string, parsed: `openai:qwen3-14b` is provider `openai`, name `qwen3-14b`; `rules` has no name."""

    model: str
    provider: str
    name: str


def model_choices() -> tuple[str, ...]:
    """Every spelling of every registered provider, for a help text or an error."""
    return tuple(spelling for entry in PROVIDERS.values() for spelling in entry.spellings)


MODEL_CHOICES = model_choices()


def parse_model(model: str) -> ModelSpec:
    """The model string's provider and name; UnknownModel when no registered provider takes it."""
    prefix, _, name = model.partition(":")
    entry = PROVIDERS.get(prefix)
    if entry is not None and (model in entry.spellings or (name and f"{prefix}:{ANY_NAME}" in entry.spellings)):
        return ModelSpec(model=model, provider=prefix, name=name)
    raise UnknownModel(f"unknown model {model!r}; choose one of: {', '.join(model_choices())}")


def unknown_model(model: str) -> str | None:
    """Why a model string names no provider (None: it names one), in the words the factory refuses it with."""
    try:
        parse_model(model)
    except UnknownModel as exc:
        return str(exc)
    return None
