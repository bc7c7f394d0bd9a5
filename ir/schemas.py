"""JSON Schemas of the public models, written to schemas/ so non-Python users can validate files."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from ir.model import LLMAnswer, LowAltitudeIR
from tools.contract import ToolResult
from tools.world import World

SCHEMA_MODELS: dict[str, type[BaseModel]] = {
    "world.schema.json": World,
    "low_altitude_ir.schema.json": LowAltitudeIR,
    "llm_answer.schema.json": LLMAnswer,
    "tool_result.schema.json": ToolResult,
}


def render_schema(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema(), indent=2, sort_keys=True) + "\n"


def write_schemas(out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for filename, model in SCHEMA_MODELS.items():
        path = out_dir / filename
        path.write_text(render_schema(model), encoding="utf-8")
        written.append(path)
    return written
