"""One problem a check found in an IR or an outcome, shaped like a validation report entry."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Finding:
    error_type: str
    field: str | None
    value: Any
    message: str
    allowed: list[Any] = field(default_factory=list)  # the nearest valid values (what lets a model repair)
    rule: str | None = None  # the safety rule the finding enforces (R7, R8), if any
