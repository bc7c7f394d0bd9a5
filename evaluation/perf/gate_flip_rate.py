"""Is the simulate gate's verdict a property of the plan? The flip rate over fixed plans and many scenario seeds.

The gate (nodes/simulate.py) flies a route through stress scenarios and assesses its risk under each. For a fixed
plan, the verdict should not depend on the draw: a plan that passes some seeds and fails others "flips". Two sets of
plans, each judged on seeds 0 .. N-1 (simulate_scenario, then risk_assess on its events, as the gate does):

- the gold routes of a split's SAT samples (generated here from --seed; the IR's own simulate / risk arguments);
- every ordered pair of a world's named places (default examples/downtown.json): assign_uav, then plan_route
  keeping out of every no-fly and sensitive zone, with the default constraints.

Printed per set: plans, flip rate (verdicts differ across seeds), always-fail share, and the failures of the flipped
plans by type and entity kind (an intruder is unknown traffic, the rest are the world's or the plan's).

    .venv/bin/python -m evaluation.perf.gate_flip_rate [--seeds 10] [--samples 60] [--seed 5150] [--world FILE]
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

from benchmark.generator import generate_one, jobs_for
from benchmark.sample import Sample
from benchmark.splits import SPLITS
from ir.plan_execution import ir_tool_args
from tools.catalog import default_registry
from tools.registry import ToolRegistry
from tools.world import World, load_world

STRESS = "medium"


def verdict(registry: ToolRegistry, world: World, sim_args: dict[str, Any], risk_args: dict[str, Any]) -> str | None:
    """None when the gate passes this scenario, else what failed it ('near_miss intruder', 'risk high_risk...')."""
    sim = registry.call("simulate_scenario", world, sim_args)
    if not sim.ok:
        entity = ((sim.result or {}).get("counterexample") or {}).get("offending_entity") or ""
        return f"{sim.error.type} {entity.rstrip('0123456789_') or '-'}"
    risk = registry.call("risk_assess", world, {**risk_args, "sim_events": sim.result["events"]})
    return None if risk.ok else f"risk {risk.error.type}"


def judge(registry: ToolRegistry, world: World, sim_args: dict, risk_args: dict, seeds: int) -> list[str | None]:
    return [verdict(registry, world, {**sim_args, "seed": seed}, risk_args) for seed in range(seeds)]


def gold_plans(args: argparse.Namespace) -> list[tuple[World, dict, dict]]:
    plans = []
    for job in jobs_for(SPLITS["dev_mini"], args.seed, limit=args.samples):
        sample = Sample.model_validate_json(generate_one(job)[0])
        decision = sample.gold_decision
        if sample.label != "SAT" or decision.status != "execute" or decision.team:
            continue  # a fleet sample's gates fly each member (nodes/team): the flip rate is measured on one UAV
        common = {"waypoints": decision.waypoints, "uav_id": decision.uav_id}
        sim = {**ir_tool_args("simulate_scenario", sample.gold_ir, seed=0, stress_level=STRESS), **common}
        risk = {**ir_tool_args("risk_assess", sample.gold_ir), **common}
        plans.append((sample.world, sim, risk))
    return plans


def pair_plans(world: World, registry: ToolRegistry) -> list[tuple[World, dict, dict]]:
    plans = []
    places = [e.id for e in world.entities]
    zones = [z.id for z in world.no_fly_zones] + [z.id for z in world.sensitive_zones]
    for origin in places:
        for destination in places:
            if origin == destination:
                continue
            assigned = registry.call("assign_uav", world, {"origin": origin, "destination": destination})
            if not assigned.ok:
                continue
            uav = assigned.result["uav_id"]
            route = registry.call(
                "plan_route", world, {"start": origin, "goal": destination, "uav_id": uav, "avoid_zones": zones}
            )
            if not route.ok:
                continue
            common = {"waypoints": route.result["waypoints"], "uav_id": uav}
            plans.append((world, {**common, "stress_level": STRESS}, common))
    return plans


def report(name: str, plans: list[tuple[World, dict, dict]], registry: ToolRegistry, seeds: int) -> None:
    flipped = always = 0
    causes: Counter[str] = Counter()
    always_causes: Counter[str] = Counter()
    for world, sim, risk in plans:
        verdicts = judge(registry, world, sim, risk, seeds)
        failures = [v for v in verdicts if v is not None]
        if failures and len(failures) < seeds:
            flipped += 1
            causes.update(failures)
        if len(failures) == seeds:
            always += 1
            always_causes.update(set(failures))
    n = len(plans)
    print(
        f"{name}: {n} plans x {seeds} seeds: flip rate {flipped / n:.3f} ({flipped}), "
        f"always fail {always / n:.3f} ({always}); failures of the flipped plans: {dict(causes.most_common())}; "
        f"of the always failing: {dict(always_causes.most_common())}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--samples", type=int, default=60, help="dev_mini samples to draw (SAT ones are judged)")
    parser.add_argument("--seed", type=int, default=5150, help="the split's master seed")
    parser.add_argument("--world", type=Path, default=Path("examples/downtown.json"))
    args = parser.parse_args()
    registry = default_registry()
    report(f"{args.world.name} place pairs", pair_plans(load_world(args.world), registry), registry, args.seeds)
    report(f"dev_mini gold routes (seed {args.seed})", gold_plans(args), registry, args.seeds)


if __name__ == "__main__":
    main()
