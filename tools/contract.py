"""The one result contract every tool returns, and the exception a tool body raises to fail inside it."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, Field


class ToolErrorInfo(BaseModel):
    type: str
    message: str
    recoverable: bool
    suggested_actions: list[str] = Field(default_factory=list)
    blockers: list[str] = Field(
        default_factory=list, description="ids of what is in the way (zones, intents), for the failure record and ops"
    )


class Provenance(BaseModel):
    input_hash: str
    data_sources: list[str] = Field(default_factory=list)
    world_version: str
    engine: dict[str, str] = Field(default_factory=dict, description="which engine judged what, e.g. {'ltl': 'spot'}")


class ToolResult(BaseModel):
    ok: bool
    tool: str
    request_id: str
    result: dict[str, Any] | None = None
    warnings: list[str] = Field(default_factory=list)
    error: ToolErrorInfo | None = None
    provenance: Provenance
    latency_sec: float = 0.0

    @property
    def recoverable_failure(self) -> bool:
        return not self.ok and self.error is not None and self.error.recoverable


class ToolFailure(Exception):
    """Raised by a tool body for an expected failure; the registry turns it into a ToolResult.

    `result` carries what the tool still produced (e.g. the violations of a failed verification).
    """

    def __init__(
        self,
        type: str,
        message: str,
        *,
        recoverable: bool,
        suggested_actions: list[str] | None = None,
        result: dict[str, Any] | None = None,
        engine: dict[str, str] | None = None,
        blockers: list[str] | None = None,
    ):
        super().__init__(message)
        self.info = ToolErrorInfo(
            type=type,
            message=message,
            recoverable=recoverable,
            suggested_actions=suggested_actions or [],
            blockers=blockers or [],
        )
        self.result = result
        self.engine = engine or {}


class ToolOutput(BaseModel):
    """What a tool body returns on success: its result plus optional warnings and engine names."""

    result: dict[str, Any]
    warnings: list[str] = Field(default_factory=list)
    engine: dict[str, str] = Field(default_factory=dict)


def stable_hash(payload: Any) -> str:
    """Hash of a JSON-able payload, independent of key order."""
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
