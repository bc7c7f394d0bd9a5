"""A run's settings: every setting a run has, its default and its description, in one model (`RunSettings`).

Everything that starts a run builds it from here (the CLI's run / step / replay / fork / ops, the inspector, the
bench's cloudbrain methods, memory seeding, the perf scripts); `to_context()` is the one place a run's `Context` (the
runtime object the nodes read, nodes/context.py) is built. `stored()` is what a run keeps in its state's
`run_config`, and `from_stored()` reads any stored `run_config` back, older shapes included: the migrations live
there.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_serializer, field_validator

from models.options import IRFormat, StructuredMode, unknown_model
from nodes.context import Context, RepairMemory

_CONTEXT_FIELDS = {spec.name: spec for spec in dataclasses.fields(Context)}


def _setting(name: str, **checks: Any) -> Any:
    """A Context field as a setting: its default and description are the Context's own, so the two cannot disagree."""
    spec = _CONTEXT_FIELDS[name]
    default = spec.default_factory() if spec.default is dataclasses.MISSING else spec.default  # type: ignore[misc]
    return Field(default=default, description=spec.metadata["description"], **checks)


class RunSettings(BaseModel):
    """Every setting of a run. Fields marked `exclude` belong to the process that runs it (a secret, where its memory
    lives, whether an operator is at hand) and are never stored with the run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = _setting("model")
    base_url: str | None = _setting("base_url")
    structured_output: Literal["auto"] | StructuredMode = _setting("structured_output")
    ir_format: IRFormat = _setting("ir_format")
    max_repairs: int = _setting("max_repairs", ge=0)
    stress_level: Literal["low", "medium", "high"] = _setting("stress_level")
    sim_seed: int = _setting("sim_seed")
    stress_scenarios: int = _setting("stress_scenarios", ge=1)
    without: frozenset[str] = _setting("without")
    top_k_cases: int = _setting("top_k_cases", ge=0)
    max_new_tokens: int | None = _setting("max_new_tokens", ge=1)
    # this process's, never stored
    api_key: str | None = _setting("api_key", exclude=True, repr=False)
    interactive: bool = _setting("interactive", exclude=True)
    memory_path: str | None = Field(
        default=None,
        exclude=True,
        description="embedded Qdrant folder of the safety memory (default .cloudbrain/memory)",
    )
    memory_url: str | None = Field(
        default=None, exclude=True, description="Qdrant server of the safety memory (or env CLOUDBRAIN_QDRANT_URL)"
    )

    @field_validator("model")
    @classmethod
    def _known_model(cls, model: str) -> str:
        if why := unknown_model(model):
            raise ValueError(why)
        return model

    @field_validator("without", mode="before")
    @classmethod
    def _known_ablations(cls, without: Any) -> frozenset[str]:
        from graph.builder import parse_without  # the graph's wiring: imported when a run is set up, not a parser

        return parse_without(without)

    @field_serializer("without")
    def _sorted(self, without: frozenset[str]) -> list[str]:
        return sorted(without)

    def to_context(self, *, memory: RepairMemory | None | Literal["open"] = "open") -> Context:
        """The runtime Context of these settings. The safety memory is opened at memory_path / memory_url
        (memory.access.open_memory), or `memory` is the one already open (a bench worker's snapshot); None when
        memory is ablated either way (Qdrant is then never opened)."""
        if "memory" in self.without:
            memory = None
        elif memory == "open":
            from memory.access import open_memory

            memory = open_memory(self.without, path=self.memory_path, url=self.memory_url)
        runtime = {name: getattr(self, name) for name in type(self).model_fields if name in _CONTEXT_FIELDS}
        return Context(**runtime, memory=memory)

    def stored(self, world_path: str | None = None) -> dict[str, Any]:
        """The non-secret part, stored in the run's state (`run_config`) so replay and fork rebuild the same graph and
        Context; with the world file's path where the run read one (the commands replay and fork print name it)."""
        return self.model_dump(mode="json") | ({"world_path": world_path} if world_path else {})

    @classmethod
    def from_stored(cls, run_config: dict[str, Any], **this_process: Any) -> RunSettings:
        """The settings of a stored run, from its `run_config` of any age, with `this_process`'s own settings (the
        API key, the memory's location, ...) over them. A setting missing from an older run_config takes the value
        the run had when it was written; keys no setting reads any more (world_path) are skipped.

        Migrations, oldest first:
        - stress_scenarios: runs stored before the setting existed flew one stress scenario (new runs fly 3).
        - max_new_tokens: versions before RunSettings took 0 or a negative cap, under which no model can answer;
          it reads as no cap (None), so the run can be replayed and forked.
        """
        known = {key: value for key, value in run_config.items() if key in cls.model_fields}
        known.setdefault("stress_scenarios", 1)
        if isinstance(known.get("max_new_tokens"), int) and known["max_new_tokens"] < 1:
            known["max_new_tokens"] = None
        return cls.model_validate(known | this_process)

    @classmethod
    def of_context(cls, context: Context) -> RunSettings:
        """The settings a Context was built with (for callers that hold a Context: a test's, ops' runner)."""
        return cls.model_validate({name: getattr(context, name) for name in cls.model_fields if hasattr(context, name)})


def settings_error(exc: ValidationError, names: dict[str, str] | None = None) -> str:
    """A RunSettings error in plain words, named as the user gave the value (`names`: setting -> e.g. its CLI flag;
    else the setting's own name, as a stored run_config has it)."""
    first = exc.errors()[0]
    setting = str(first["loc"][0]) if first["loc"] else ""
    message = first["msg"].removeprefix("Value error, ").replace("Input should be", "must be")
    given = f" (got {first['input']!r})" if first["type"] != "value_error" and "input" in first else ""
    return f"{(names or {}).get(setting, setting)}: {message}{given}"
