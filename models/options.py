"""The model options a command line offers, apart from the backends (so building `cloudbrain`'s argument parser
imports no model code)."""

from __future__ import annotations

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

MODEL_CHOICES = ("local", "local:full", "local:slots", "openai:<model>", "oracle", "rules")
# `local` is the embedded 135M model in the mode made for small models: compact slots compiled into the IR.
LOCAL_MODES: dict[str, IRFormat] = {"local": "slots", "local:slots": "slots", "local:full": "full"}


def unknown_model(model: str) -> str | None:
    """Why a model string names no backend (None: it names one), in the words make_generator refuses it with."""
    prefix, _, name = model.partition(":")
    if model in ("rules", "oracle", *LOCAL_MODES) or (prefix == "openai" and name):
        return None
    return f"unknown model {model!r}; choose one of: {', '.join(MODEL_CHOICES)}"
