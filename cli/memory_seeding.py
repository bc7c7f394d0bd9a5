"""Filling the safety memory from real agent runs: every run goes through the graph with the memory open,
so `finalize` stores its repairs exactly as in production (idempotent: thread ids are deterministic)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from benchmark.generator import DEFAULT_SEED, jobs_for, run_jobs
from benchmark.sample import Sample, read_samples
from benchmark.splits import SPLITS
from graph.runner import run_task
from graph.settings import RunSettings
from memory.store import SafetyMemory
from tools.world import World, load_world

SEED_MODELS = ("rules", "oracle")
# Requests on the example worlds that make the rules model repair (a low-battery or charging UAV suggested, an
# overweight payload...), plus plain ones; only runs that needed a repair leave a case. The UAVs are suggested, not
# pinned ("uav_07 is nearest, any suitable drone will do"): a pinned UAV is never swapped (intent fidelity).
EXAMPLE_REQUESTS: dict[str, tuple[str, ...]] = {
    "downtown": (
        "Send a defibrillator from hospital_A to accident_site_3 within 10 minutes; uav_07 is nearest, "
        "any suitable drone will do",
        "Deliver 4 kg of medicine from hospital_A to fire_station_1; uav_03 is free, any drone that can lift it will do",
        "Send a drone from charging_pad_1 to police_2; uav_11 is nearest, any drone will do",
        "Fly a camera drone from police_2 to metro_station_4",
        "紧急:从 hospital_A 送除颤仪到 accident_site_3,10分钟内,避开学校和临时禁飞区;uav_07 最近,其他合适的无人机也可以",
    ),
    "suburban": (
        "Deliver a parcel from depot_west to hospital_S; uav_s1 is nearest, any suitable drone will do",
        "Deliver 3 kg from depot_west to metro_station_s; uav_s2 is nearest, any suitable drone will do",
    ),
    "grid_small": (
        "Deliver 3 kg from depot_central to clinic_east; uav_g1 is nearest, any suitable drone will do",
        "Deliver a sample from depot_central to clinic_east; uav_g3 is nearest, any suitable drone will do",
    ),
}


@dataclass(frozen=True)
class SeedTask:
    task_id: str
    world: World
    instruction: str
    scenario_type: str = ""
    gold: dict[str, Any] | None = None  # the answer envelope the oracle replies with


@dataclass
class SeedReport:
    runs: int = 0
    executed: int = 0
    cases_before: int = 0
    cases_after: int = 0

    @property
    def cases_added(self) -> int:
        return self.cases_after - self.cases_before


def example_tasks(examples_dir: str | Path = "examples") -> Iterator[SeedTask]:
    for world_id, requests in EXAMPLE_REQUESTS.items():
        path = Path(examples_dir) / f"{world_id}.json"
        if not path.exists():
            continue
        world = load_world(path)
        for index, instruction in enumerate(requests):
            yield SeedTask(task_id=f"{world_id}-{index}", world=world, instruction=instruction)


def split_tasks(split: str, *, limit: int | None = None, bench_dir: str | Path | None = None) -> Iterator[SeedTask]:
    """A split's samples: read from `bench_dir/<split>.jsonl` when generated already, else generated here."""
    if split not in SPLITS:
        raise KeyError(f"unknown split {split!r}; choose from {', '.join(SPLITS)}")
    path = Path(bench_dir) / f"{split}.jsonl" if bench_dir else None
    if path is not None and path.exists():
        samples: Iterable[Sample] = read_samples(path)[:limit]
    else:
        samples = (
            Sample.model_validate_json(line) for line, _ in run_jobs(jobs_for(SPLITS[split], DEFAULT_SEED, limit), 1)
        )
    for sample in samples:
        gold = {
            "low_altitude_ir": sample.gold_ir.model_dump(mode="json"),
            "uncertainty": sample.gold_uncertainty.model_dump(mode="json"),
        }
        yield SeedTask(sample.sample_id, sample.world, sample.instruction.en, sample.scenario_type, gold)


def seed_memory(memory: SafetyMemory, tasks: Iterable[SeedTask], models: Iterable[str] = SEED_MODELS) -> SeedReport:
    report = SeedReport(cases_before=memory.count_cases())
    saver = InMemorySaver()  # the memory is the product here; checkpoints are not kept
    models = tuple(models)
    for task in tasks:
        for model in models:
            if model == "oracle" and task.gold is None:
                continue
            context = RunSettings(model=model).to_context(memory=memory)
            out = run_task(
                task.world,
                task.instruction,
                context=context,
                thread_id=f"seed-{model}-{task.task_id}",
                checkpointer=saver,
                task_id=task.task_id,
                gold_ir=task.gold,
                scenario_type=task.scenario_type,
            )
            report.runs += 1
            report.executed += out.status == "execute"
    report.cases_after = memory.count_cases()
    return report
