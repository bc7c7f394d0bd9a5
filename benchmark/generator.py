"""CloudBrain-Bench generation: per split, deterministic samples (world, task, instruction, gold) in JSONL, plus
split_stats.json and the sample JSON Schema.

Every sample is a pure function of (master seed, split, index): its world, task and instruction come from one
numpy Generator seeded with `derive_seed(...)`, its label from the deterministic tools. Worker processes only
change who computes a sample, never what it is, and results are written in index order, so a re-run with the
same seed writes byte-identical files.
"""

from __future__ import annotations

import json
import multiprocessing
import resource
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from statistics import mean, median
from typing import Any

import numpy as np

from benchmark.checks import derive_checks
from benchmark.citygen import CityDraft, generate_city
from benchmark.fleet import FAILURE_PREFIX as FLEET_FAILURE_PREFIX
from benchmark.fleet import build_fleet_task, fleet_registry, label_fleet_task, write_fleet_instruction
from benchmark.freeform import write_freeform_instruction
from benchmark.gold import (
    PROVEN,
    RULE_VIOLATING_DEMAND,
    UNDECIDED,
    GoldResult,
    confirm_demand,
    gold_registry,
    label_task,
)
from benchmark.instructions import CRITICAL_PRESSURE, DEMAND, INJECTIONS, write_instruction
from benchmark.layouts import LAYOUTS
from benchmark.prover import holds_under_checked_stress
from benchmark.sample import render_schema
from benchmark.splits import (
    FLEET_SCENARIO,
    INJECTION_SHARE,
    SPLITS,
    STANDARD_TARGET_SHARES,
    SplitSpec,
    draw_difficulty,
    scenario_schedule,
)
from benchmark.tasks import ScenarioError, Task, build_task
from tools.contract import stable_hash
from tools.world import World

GENERATOR_VERSION = "cloudbrain-bench 0.5"  # 0.5: pop-up hold, sidestep, members clear of known traffic
DEFAULT_SEED = 20260521
MAX_ATTEMPTS = 16
SCHEMA_FILE = "bench_sample.schema.json"
STATS_FILE = "split_stats.json"
LABEL_SOURCES = {
    "assignment": "assign_uav",
    "planner": "plan_route (3D A* on the occupancy grid)",
    "verifier": "verify_ltl_stl (rtamt STL, LTL engine as reported)",
    "simulator": "simulate_scenario",
    "risk": "risk_assess",
}


def derive_seed(*parts: int | str) -> int:
    """A 63-bit seed from any parts, stable across platforms and Python versions."""
    return int(stable_hash(list(parts)), 16) >> 1


@dataclass(frozen=True)
class Job:
    split: str
    index: int
    scenario_type: str
    master_seed: int


def _synthetic_city(spec: SplitSpec, rng: np.random.Generator, world_id: str) -> tuple[CityDraft, dict[str, Any]]:
    layout = LAYOUTS[spec.layouts[int(rng.integers(len(spec.layouts)))]]
    draft = generate_city(layout, rng, world_id)
    sources = {
        "map_sources": [f"procedural:{layout.name}"],
        "airspace_sources": ["procedural"],
        "weather_sources": ["procedural"],
        "fleet_source": "procedural (beta-like battery distribution with a low-battery tail)",
        "packages": {},
        "real_context": None,
    }
    return draft, sources


def _city_maker(spec: SplitSpec) -> Callable[[SplitSpec, np.random.Generator, str], tuple[CityDraft, dict[str, Any]]]:
    if spec.data_tier == "real_context":
        # pyrosm pulls in pandas and geopandas: imported only for this split. Parsing the city here, before the
        # workers fork, lets them share the parsed copy.
        from benchmark.real_context import real_base, real_context_city

        real_base()
        return real_context_city
    return _synthetic_city


def _failure_modes(gold: GoldResult, injected_rule: str | None, injection_kind: str | None) -> list[str]:
    modes = list(gold.failure_modes)
    if injected_rule == "R7":
        modes.append("critical_pressure:R7")
    elif injection_kind == DEMAND:
        demand = f"{RULE_VIOLATING_DEMAND}:{injected_rule}"
        modes += [] if demand in modes else [demand]  # confirm_demand put it first
    elif injected_rule:
        modes.append(f"prompt_injection:{injected_rule}")
    return modes


def injected_sentence(instruction: dict[str, Any]) -> str:
    """The injected sentence of a request, in English as the template states it (a free-form request may reword it:
    its canonical wording holds the template sentence)."""
    text = instruction.get("canonical_en") or instruction["en"]
    sentences = [CRITICAL_PRESSURE.en, *(term.en for term, _, _ in INJECTIONS)]
    return next(s for s in sentences if s in text)


def _with_injection(gold: GoldResult, instruction: dict[str, Any]) -> GoldResult:
    """A request that demands breaking a rule turns a SAT gold into a confirmation (gold.confirm_demand); an UNSAT or
    AMBIGUOUS one keeps its reason (the demand is named among its failure modes) and a permission changes nothing."""
    if instruction["injection_kind"] != DEMAND or gold.label != "SAT":
        return gold
    return confirm_demand(gold, instruction["injected_rule_break"], injected_sentence(instruction))


def _engines(trace: list[dict[str, Any]]) -> dict[str, str]:
    engines: dict[str, str] = {}
    for step in trace:
        engines.update(step["engine"])
    return dict(sorted(engines.items()))


def _constraint_count(gold: GoldResult, task: Task) -> int:
    """LTL specs plus the explicit numeric constraints the request sets (deadline, payload, band, reserve)."""
    ir = gold.ir
    explicit = [
        ir.constraints.deadline_sec is not None,
        ir.constraints.payload_kg > 0,
        task.altitude_max_m < 120,
        task.battery_reserve_ratio > 0.2,
    ]
    return len(ir.verification_specs.ltl) + sum(explicit)


@dataclass(frozen=True)
class _Draw:
    """One attempt at a job's sample: its seed, then what the seed's random stream drew (difficulty, city)."""

    job: Job
    spec: SplitSpec
    attempt: int
    sample_id: str
    seed: int
    rng: np.random.Generator
    difficulty: str
    draft: CityDraft
    sources: dict[str, Any]


@dataclass(frozen=True)
class _Parts:
    """What a scenario type made on a draw's city, for `_record`."""

    world: World
    instruction: dict[str, Any]
    gold: GoldResult
    modes: list[str]
    uncertainty: dict[str, Any]
    provenance: dict[str, Any]
    constraints: int


def _attempt(job: Job, spec: SplitSpec, attempt: int) -> tuple[dict[str, Any], dict[str, Any]] | None:
    seed = derive_seed(job.master_seed, spec.name, job.index, attempt)
    rng = np.random.default_rng(seed)
    sample_id = f"{spec.name}-{job.index:05d}"
    world_id = f"{spec.name}-w{job.index:05d}"
    difficulty = draw_difficulty(spec, rng, job.scenario_type)
    draft, sources = _city_maker(spec)(spec, rng, world_id)
    draw = _Draw(job, spec, attempt, sample_id, seed, rng, difficulty, draft, sources)
    parts = (_fleet_attempt if job.scenario_type == FLEET_SCENARIO else _single_attempt)(draw)
    return None if parts is None else _record(draw, parts)


def _single_attempt(draw: _Draw) -> _Parts | None:
    """A one-UAV sample (benchmark/tasks.py): the gold from the reference pipeline, then its instruction."""
    job, spec, rng, draft = draw.job, draw.spec, draw.rng, draw.draft
    try:
        task = build_task(draft, rng, job.scenario_type, draw.difficulty)
    except ScenarioError:
        return None
    task.stress_level = spec.stress_level
    world = draft.build()
    inject = bool(rng.random() < INJECTION_SHARE)
    try:
        gold = label_task(task, world, gold_registry(), draw.sample_id, draw.seed % (2**31))
    except ScenarioError:
        return None
    if task.stated_demand and gold.label != task.intended_label:
        return None  # a new world: the added demand (a via point, a return leg, a floor) must not change the label
    decision = gold.decision
    if gold.label == "SAT" and not holds_under_checked_stress(
        gold.ir, decision.uav_id, decision.waypoints, world, gold_registry()
    ):
        return None  # a new world: this one's SAT label would rest on the gold simulation's lucky draw
    if spec.free_form:
        gold_uav = gold.decision.uav_id if gold.decision.status == "execute" else None
        instruction = write_freeform_instruction(
            task, draft.labels, gold.deadline_sec, rng, inject, job.index, world, gold_uav
        )
    else:
        instruction = write_instruction(task, draft.labels, gold.deadline_sec, rng, inject)
    sat_task = gold.label == "SAT"
    gold = _with_injection(gold, instruction)
    demanded = sat_task and gold.label != "SAT"  # the request's demand, not the world, makes it AMBIGUOUS
    modes = _failure_modes(gold, instruction["injected_rule_break"], instruction["injection_kind"])
    uncertainty = {
        "needs_human_confirmation": gold.label == "AMBIGUOUS",
        "missing_information": gold.decision.missing_information,
    }
    return _Parts(
        world,
        instruction,
        gold,
        modes=modes,
        uncertainty=uncertainty,
        provenance={
            **draw.sources,
            "label_sources": LABEL_SOURCES,
            "engines": _engines(gold.trace),
            "intended_label": "AMBIGUOUS" if demanded else task.intended_label,
            "built_in_reason": RULE_VIOLATING_DEMAND if demanded else task.unsat_kind,
            "reference_repairs": gold.repairs,
            "generation_attempts": draw.attempt + 1,
            "notes": gold.notes,
        },
        constraints=_constraint_count(gold, task),
    )


def _record(draw: _Draw, parts: _Parts) -> tuple[dict[str, Any], dict[str, Any]]:
    """The sample (its checks derived from it) and its stats summary: one shape for every scenario type."""
    job, spec, draft = draw.job, draw.spec, draw.draft
    world, instruction, gold = parts.world, parts.instruction, parts.gold
    sample = {
        "sample_id": draw.sample_id,
        "split": spec.name,
        "data_tier": spec.data_tier,
        "city_id": f"{draft.layout}:{draft.world_id}",
        "generation_seed": draw.seed,
        "scenario_type": job.scenario_type,
        "difficulty": draw.difficulty,
        "instruction": instruction,
        "world": world.model_dump(mode="json"),
        "gold_ir": gold.ir.model_dump(mode="json"),
        "gold_uncertainty": parts.uncertainty,
        "gold_tool_trace": gold.trace,
        "gold_decision": gold.decision.model_dump(mode="json"),
        "label": gold.label,
        "failure_modes": parts.modes,
        "source_provenance": {
            "task_source": "deterministic_generator",
            "generator_version": GENERATOR_VERSION,
            **parts.provenance,
            "human_review_status": "unchecked",
            "proof": gold.proof,
        },
    }
    sample["checks"] = [c.model_dump(mode="json") for c in derive_checks(sample)]
    summary = {
        "scenario_type": job.scenario_type,
        "difficulty": draw.difficulty,
        "label": gold.label,
        "intended_label": parts.provenance["intended_label"],
        "layout": draft.layout,
        "uav_count": len(world.fleet),
        "constraints": parts.constraints,
        "trace_len": len(gold.trace),
        "failure_modes": parts.modes,
        "reference_style": instruction["reference_style"],
        "patterns": {lang: instruction.get(f"pattern_{lang}") for lang in ("en", "zh")},
        "injected": instruction["injected_rule_break"] is not None,
        "repairs": gold.repairs,
        "proof": gold.proof["outcome"] if gold.proof else None,
        "world_version": world.version,
    }
    return sample, summary


def _fleet_attempt(draw: _Draw) -> _Parts | None:
    """A fleet sample (benchmark/fleet.py): the team's gold from the exact team search and the member gates."""
    try:
        task = build_fleet_task(draw.draft, draw.rng, draw.difficulty)
        world = draw.draft.build()
        gold = label_fleet_task(task, world, fleet_registry(), draw.sample_id, draw.seed % (2**31))
    except ScenarioError:
        return None
    instruction = write_fleet_instruction(task, draw.draft, draw.rng)
    intended = "UNSAT" if task.unsat_kind else "SAT"
    return _Parts(
        world,
        instruction,
        gold,
        modes=gold.failure_modes,
        uncertainty={"needs_human_confirmation": False, "missing_information": []},
        provenance={
            **draw.sources,
            "label_sources": {**LABEL_SOURCES, "team": "assign_team (exact MILP, scipy HiGHS)"},
            "engines": _engines(gold.trace),
            "intended_label": intended,
            "built_in_reason": f"{FLEET_FAILURE_PREFIX}:{task.unsat_kind}" if task.unsat_kind else None,
            "reference_repairs": 0,
            "generation_attempts": draw.attempt + 1,
            "notes": [f"fleet kind: {task.kind}"],
        },
        constraints=len(gold.ir.verification_specs.ltl) + (task.deadline_sec is not None) + (task.payload_kg > 0),
    )


def generate_one(job: Job) -> tuple[str, dict[str, Any]]:
    """(JSONL line, stats summary) of one sample; draws new worlds until one can host the scenario."""
    spec = SPLITS[job.split]
    for attempt in range(MAX_ATTEMPTS):
        made = _attempt(job, spec, attempt)
        if made is not None:
            sample, summary = made
            return json.dumps(sample, ensure_ascii=False, separators=(",", ":")), summary
    raise RuntimeError(f"{job.split}#{job.index}: no world could host {job.scenario_type} in {MAX_ATTEMPTS} draws")


def jobs_for(spec: SplitSpec, master_seed: int, limit: int | None = None) -> list[Job]:
    schedule = scenario_schedule(spec, np.random.default_rng(derive_seed(master_seed, spec.name, "schedule")))
    jobs = [Job(spec.name, i, scenario, master_seed) for i, scenario in enumerate(schedule)]
    return jobs[:limit] if limit is not None else jobs


def run_jobs(jobs: list[Job], workers: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """Samples in job order, computed by `workers` processes (1 = in this process)."""
    if workers <= 1:
        yield from map(generate_one, jobs)
        return
    context = multiprocessing.get_context("fork")
    with context.Pool(workers) as pool:
        yield from pool.imap(generate_one, jobs, chunksize=4)


# --- statistics -------------------------------------------------------------------------------------------


def _spread(values: list[float]) -> dict[str, float]:
    return {
        "min": min(values),
        "median": median(values),
        "max": max(values),
        "mean": round(mean(values), 3),
    }


def split_stats(spec: SplitSpec, summaries: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(summaries)
    labels = Counter(s["label"] for s in summaries)
    scenarios = Counter(s["scenario_type"] for s in summaries)
    stats = {
        "split": spec.name,
        "purpose": spec.purpose,
        "data_tier": spec.data_tier,
        "num_samples": n,
        "scenario_counts": dict(sorted(scenarios.items())),
        "scenario_shares": {k: round(v / n, 4) for k, v in sorted(scenarios.items())},
        "target_shares": dict(sorted(spec.target_shares.items())),
        "difficulty_counts": dict(sorted(Counter(s["difficulty"] for s in summaries).items())),
        "label_counts": dict(sorted(labels.items())),
        "sat_rate": round(labels["SAT"] / n, 4),
        "unsat_or_ambiguous_rate": round((labels["UNSAT"] + labels["AMBIGUOUS"]) / n, 4),
        "unknown_rate": round(labels["UNKNOWN"] / n, 4),  # left out of the safety metrics, reported apart
        "label_differs_from_intended": sum(s["label"] != s["intended_label"] for s in summaries),
        "layout_counts": dict(sorted(Counter(s["layout"] for s in summaries).items())),
        "uav_count": _spread([s["uav_count"] for s in summaries]),
        "constraints_per_task": _spread([s["constraints"] for s in summaries]),
        "gold_trace_length": _spread([s["trace_len"] for s in summaries]),
        "failure_mode_counts": dict(sorted(Counter(m for s in summaries for m in s["failure_modes"]).items())),
        "reference_style_counts": dict(sorted(Counter(s["reference_style"] for s in summaries).items())),
        "injected_instructions": sum(s["injected"] for s in summaries),
        "reference_repairs": sum(s["repairs"] for s in summaries),
        "proofs": _proof_counts(summaries),
        "distinct_worlds": len({s["world_version"] for s in summaries}),
    }
    if spec.free_form:
        stats["pattern_counts"] = {
            lang: dict(sorted(Counter(s["patterns"][lang] for s in summaries).items())) for lang in ("en", "zh")
        }
    return stats


def _proof_counts(summaries: list[dict[str, Any]]) -> dict[str, int]:
    """How the UNSAT prover settled the samples whose gold plan failed (the built-in reason or another): a plan found
    (SAT), proven UNSAT, UNKNOWN (bound hit, or a failure resting on draws or timing); and how many samples carry
    each kind of mode."""
    outcomes = Counter(s["proof"] for s in summaries if s["proof"])
    modes = [m for s in summaries for m in s["failure_modes"]]
    return {
        "run": sum(outcomes.values()),
        "sat": outcomes["sat"],
        "unsat": outcomes["unsat"],
        "unknown": outcomes["unknown"],
        "proven_modes": sum(m.startswith(PROVEN) for m in modes),
        "undecided_modes": sum(m.startswith(UNDECIDED) for m in modes),
    }


def overall_stats(per_split: list[dict[str, Any]]) -> dict[str, Any]:
    total = sum(s["num_samples"] for s in per_split)
    scenarios: Counter = Counter()
    labels: Counter = Counter()
    for s in per_split:
        scenarios.update(s["scenario_counts"])
        labels.update(s["label_counts"])
    standard = [s for s in per_split if s["target_shares"] == dict(sorted(STANDARD_TARGET_SHARES.items()))]
    standard_total = sum(s["num_samples"] for s in standard)
    standard_scenarios: Counter = Counter()
    for s in standard:
        standard_scenarios.update(s["scenario_counts"])
    return {
        "num_samples": total,
        "splits": {s["split"]: s["num_samples"] for s in per_split},
        "label_counts": dict(sorted(labels.items())),
        "sat_rate": round(labels["SAT"] / total, 4),
        "unsat_or_ambiguous_rate": round((labels["UNSAT"] + labels["AMBIGUOUS"]) / total, 4),
        "unknown_rate": round(labels["UNKNOWN"] / total, 4),
        "scenario_counts": dict(sorted(scenarios.items())),
        "standard_mix_shares": {k: round(v / standard_total, 4) for k, v in sorted(standard_scenarios.items())}
        if standard_total
        else {},
        "target_shares": dict(sorted(STANDARD_TARGET_SHARES.items())),
    }


# --- writing ----------------------------------------------------------------------------------------------


def generate_splits(
    names: list[str],
    out_dir: Path,
    master_seed: int = DEFAULT_SEED,
    workers: int = 2,
    limit: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """Write <split>.jsonl for each split, split_stats.json and the sample schema; returns the stats."""
    out_dir.mkdir(parents=True, exist_ok=True)
    per_split = []
    timings, cpu = {}, {}
    for name in names:
        spec = SPLITS[name]
        started, cpu_started = time.perf_counter(), cpu_seconds()
        jobs = jobs_for(spec, master_seed, limit)
        _city_maker(spec)
        summaries = []
        with open(out_dir / f"{name}.jsonl", "w", encoding="utf-8") as handle:
            for done, (line, summary) in enumerate(run_jobs(jobs, workers), start=1):
                handle.write(line + "\n")
                summaries.append(summary)
                if progress:
                    progress(name, done, len(jobs))
        per_split.append(split_stats(spec, summaries))
        timings[name] = time.perf_counter() - started
        cpu[name] = cpu_seconds() - cpu_started
    stats = {
        "generator_version": GENERATOR_VERSION,
        "master_seed": master_seed,
        "overall": overall_stats(per_split),
        "splits": per_split,
    }
    (out_dir / STATS_FILE).write_text(json.dumps(stats, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out_dir / SCHEMA_FILE).write_text(render_schema(), encoding="utf-8")
    return {"stats": stats, "timings_sec": timings, "cpu_sec": cpu}


def cpu_seconds() -> float:
    """CPU time of this process and of its finished workers: what the run costs on an otherwise idle machine."""
    own, workers = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime
