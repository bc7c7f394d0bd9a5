"""Tool registry: name -> (argument model, body). `call` never lets an exception escape the ToolResult contract."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError
from rapidfuzz import process

from tools.contract import Provenance, ToolErrorInfo, ToolFailure, ToolOutput, ToolResult, stable_hash
from tools.world import World

ToolBody = Callable[[World, Any], ToolOutput]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    args_model: type[BaseModel]
    body: ToolBody
    data_sources: tuple[str, ...] = ("world",)
    # Tools whose output this tool consumes when its own args leave those inputs out (the dependency DAG).
    needs: tuple[str, ...] = field(default_factory=tuple)

    def args_schema(self) -> dict[str, Any]:
        return self.args_model.model_json_schema()


class ToolRegistry:
    def __init__(self, specs: list[ToolSpec] | None = None):
        self._specs: dict[str, ToolSpec] = {}
        for spec in specs or []:
            self.register(spec)

    def register(self, spec: ToolSpec) -> None:
        if spec.name in self._specs:
            raise ValueError(f"tool {spec.name!r} registered twice")
        self._specs[spec.name] = spec

    def names(self) -> list[str]:
        return list(self._specs)

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def spec(self, name: str) -> ToolSpec:
        return self._specs[name]

    def nearest_names(self, name: str, limit: int = 3) -> list[str]:
        return [match for match, _, _ in process.extract(name, self.names(), limit=limit)]

    def describe(self) -> list[dict[str, Any]]:
        """The registry as the LLM sees it: names, descriptions, argument schemas, dependencies."""
        return [
            {"name": s.name, "description": s.description, "args": s.args_schema(), "needs": list(s.needs)}
            for s in self._specs.values()
        ]

    def call(self, name: str, world: World, args: dict[str, Any] | None = None) -> ToolResult:
        args = dict(args or {})
        started = time.perf_counter()
        input_hash = stable_hash({"tool": name, "args": args, "world": world.version})
        spec = self._specs.get(name)

        def finish(**fields: Any) -> ToolResult:
            engine = fields.pop("engine", {})
            return ToolResult(
                tool=name,
                request_id=f"{name}-{input_hash}",
                provenance=Provenance(
                    input_hash=input_hash,
                    data_sources=list(spec.data_sources) if spec else [],
                    world_version=world.version,
                    engine=engine,
                ),
                latency_sec=time.perf_counter() - started,
                **fields,
            )

        if spec is None:
            error = ToolErrorInfo(
                type="unknown_tool",
                message=f"no tool named {name!r}",
                recoverable=True,
                suggested_actions=[f"use one of: {', '.join(self.nearest_names(name))}"],
            )
            return finish(ok=False, error=error)
        try:
            parsed = spec.args_model.model_validate(args)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '<args>'}: {e['msg']}" for e in exc.errors())
            error = ToolErrorInfo(
                type="bad_arguments",
                message=problems,
                recoverable=True,
                suggested_actions=[f"arguments must match the {name} schema"],
            )
            return finish(ok=False, error=error)
        try:
            output = spec.body(world, parsed)
        except ToolFailure as failure:
            return finish(ok=False, error=failure.info, result=failure.result, engine=failure.engine)
        except Exception as exc:  # a defect in a tool must still come back inside the contract
            error = ToolErrorInfo(type="internal_error", message=f"{type(exc).__name__}: {exc}", recoverable=False)
            return finish(ok=False, error=error)
        return finish(ok=True, result=output.result, warnings=output.warnings, engine=output.engine)
