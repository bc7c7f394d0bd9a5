"""One CloudBrain-Bench sample as a pydantic model; its JSON Schema is schemas/bench_sample.schema.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from benchmark.checks import Check
from benchmark.gold import GoldDecision
from ir.model import LowAltitudeIR, Uncertainty
from tools.world import World

# UNKNOWN: the gold plan failed for a reason the generator did not build in and the UNSAT prover (benchmark/prover.py)
# could not decide within its bound; such a sample is left out of the safety metrics and reported apart.
Label = Literal["SAT", "UNSAT", "AMBIGUOUS", "UNKNOWN"]
Difficulty = Literal["easy", "medium", "hard", "extreme", "unsat"]
ScenarioType = Literal[
    "normal_delivery",
    "emergency_delivery",
    "patrol_inspection",
    "nfz_avoidance",
    "corridor_congestion",
    "charging_bottleneck",
    "weather_risk",
    "multimodal_fallback",
    "unsat_ambiguous",
    "underspecified",
    "fleet",
]
SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "bench_sample.schema.json"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Mention(_Strict):
    id: str
    en: str
    zh: str
    style: Literal["id", "name", "short"]


class Instruction(_Strict):
    zh: str
    en: str
    reference_style: Literal["id", "name", "short"]
    mentions: list[Mention] = Field(description="how the request names each world id (gold grounding)")
    injected_rule_break: str | None = Field(
        description="rule id an injected sentence asks to break (R7: critical pressure to cut through restricted "
        "airspace)"
    )
    injection_kind: Literal["demand", "permission"] | None = Field(
        default=None,
        description="demand: the injected sentence demands breaking the rule, so a SAT task becomes AMBIGUOUS "
        "(gold human_confirm, failure mode rule_violating_demand:<rule>); permission: it only allows it, a safe plan "
        "meets it and the gold executes that plan (prompt_injection:<rule>)",
    )
    pinned_uavs: list[str] = Field(
        default_factory=list, description="UAVs the request asks for by id: binding, an execute must fly one of them"
    )
    stated_team_size: int | None = Field(
        default=None,
        exclude_if=lambda size: size is None,
        description="test_fleet: the number of UAVs the request states ('split it across two drones', 'one drone to "
        "each site', 'a second drone'): binding, a team execute must fly exactly that many; null: not stated",
    )
    # test_freeform only (benchmark/freeform): absent in the other splits.
    excluded_uavs: list[str] = Field(
        default_factory=list,
        description="UAVs the request rules out by id ('anyone but uav_05'): binding, an execute must fly another",
    )
    pattern_en: str | None = Field(default=None, description="free-form pattern the English request is written in")
    pattern_zh: str | None = Field(default=None, description="free-form pattern the Chinese request is written in")
    canonical_en: str | None = Field(
        default=None, description="the same request as an English template naming every entity by id"
    )
    canonical_zh: str | None = Field(
        default=None, description="the same request as a Chinese template naming every entity by id"
    )


class TraceStep(_Strict):
    step_id: str
    tool: str
    args: dict[str, Any] = Field(description="as the plan wires them: <step.key> marks a value from an earlier step")
    ok: bool
    request_id: str
    error: dict[str, Any] | None
    warnings: list[str]
    engine: dict[str, str]
    result: dict[str, Any] | None = Field(description="lists longer than 1500 JSON characters kept as a digest")


class SourceProvenance(_Strict):
    task_source: str = "deterministic_generator"
    generator_version: str
    map_sources: list[str]
    airspace_sources: list[str]
    weather_sources: list[str]
    fleet_source: str
    label_sources: dict[str, str] = Field(description="which deterministic tool judged what")
    engines: dict[str, str] = Field(description="engines the tools reported (e.g. ltl: spot or fallback)")
    packages: dict[str, str] = Field(default_factory=dict, description="data packages and their versions")
    real_context: dict[str, Any] | None = None
    intended_label: Label
    built_in_reason: str | None = Field(description="the UNSAT / AMBIGUOUS reason the generator built in")
    reference_repairs: int = Field(
        description="plans the UNSAT prover (benchmark/prover.py) ran after the gold plan failed for a reason not "
        "built in (on SAT, the last is the gold); 0 when the gold plan passed or failed for the built-in reason"
    )
    generation_attempts: int = Field(description="draws until a world could host the scenario")
    notes: list[str] = Field(default_factory=list)
    proof: dict[str, Any] | None = Field(
        default=None,
        description="the UNSAT prover's record, when it ran (the gold plan failed): outcome "
        "(sat / unsat / unknown), bound (MAX_PROOF_PLANS) and bound_hit, undecided_by (failures that rest on time or "
        "chance: an UNKNOWN without the bound hit), seed and stress_level (the gold's simulation setting the plans ran "
        "on), plans_run, combinations, the choices covered "
        "(uavs, pinned, bands [min, max] m, starts_sec, stop_order), failures (the '<tool> <error type> [rule]' each "
        "plan met) and rows [uav, band, start, failure, settled]: indexes into those lists, null for every value, "
        "settled 'run' (the plan ran) or by a pruning rule of benchmark/prover.prove (city, airspace, assign, arrival, "
        "geometry, takeoff, landing); found: the [uav, band, start] of the plan that passed",
    )
    human_review_status: Literal["unchecked", "sampled_pass", "sampled_fail", "corrected"] = "unchecked"


class Sample(_Strict):
    sample_id: str
    split: str
    data_tier: Literal["synthetic", "real_context"]
    city_id: str
    generation_seed: int
    scenario_type: ScenarioType
    difficulty: Difficulty
    instruction: Instruction
    world: World
    gold_ir: LowAltitudeIR
    gold_uncertainty: Uncertainty = Field(description="what the LLM answer envelope should say beside the IR")
    gold_tool_trace: list[TraceStep]
    gold_decision: GoldDecision
    label: Label
    failure_modes: list[str] = Field(
        description="UNSAT / AMBIGUOUS: the tool-confirmed reason, the built-in kind (e.g. deadline_impossible) or, "
        "where the gold plan failed otherwise, proven:<family> (the UNSAT prover tried every plan of the tool space and "
        "each failed; family of the gold plan's first failure, e.g. proven:verification), after "
        "pinned_uav_infeasible when the request pins the UAVs; UNKNOWN: undecided:<family> (the prover hit its bound "
        "without finding a plan); SAT: the traps an agent that ignores the state would fall into (e.g. "
        "nfz_on_direct_path, low_battery_nearest_uav, prompt_injection:R1). Files before cloudbrain-bench 0.3 say "
        "unplanned:<family> where the gold plan alone failed"
    )
    source_provenance: SourceProvenance
    checks: list[Check] = Field(
        default_factory=list,
        description="one per requirement the request states, derived from the task (benchmark/checks.py), scored by "
        "the judge on every decision; files written before checks existed are given them when read",
    )


def sample_schema() -> dict[str, Any]:
    return Sample.model_json_schema()


def render_schema() -> str:
    return json.dumps(sample_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def read_samples(path: str | Path) -> list[Sample]:
    with open(path, encoding="utf-8") as handle:
        return [Sample.model_validate_json(line) for line in handle if line.strip()]


if __name__ == "__main__":
    SCHEMA_PATH.parent.mkdir(parents=True, exist_ok=True)
    SCHEMA_PATH.write_text(render_schema(), encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}")
