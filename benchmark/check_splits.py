"""Check generated CloudBrain-Bench splits against the deterministic tools.

    python -m benchmark.check_splits DIR [--workers 2]

Per sample: the sample matches the schema and its gold IR passes the layered validator; a SAT gold decision
passes verify_ltl_stl and simulate_scenario again (re-run on the stored world); an UNSAT sample's stated reason
("<tool> <error>: ...") is what re-executing its gold IR produces, and one the prover labelled (proven:<family>)
carries a complete proof; an UNKNOWN sample asks for confirmation, its proof hit the bound or rests on time or
chance (benchmark/prover.py) and its reason is what
re-executing its gold IR produces; an AMBIGUOUS sample asks for confirmation and
the city query shows the ambiguity; no UNSAT / AMBIGUOUS sample ends in "execute" (R8); no label rests on a fact
the agent cannot see (a cargo mass, or a UAV it pins or rules out, missing from the request) and no gold flies a UAV
the request rules out. Across splits: no sample
id, world id or world content is shared, and mixed_city appears only in test_unseen_city.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from benchmark.fleet import team_gold_problems
from benchmark.freeform.units import mass_stated
from benchmark.gold import PROVEN, UNDECIDED, gold_registry
from benchmark.layouts import UNSEEN_LAYOUTS
from benchmark.prover import every_combination, settled_combinations
from benchmark.sample import Sample
from benchmark.tasks import STATED_UNSAT_KINDS
from ir.plan_execution import execute_plan
from ir.validation import validate_ir
from tools.registry import ToolRegistry
from tools.world import World

UNSEEN_SPLIT = "test_unseen_city"


def _trace_args(sample: Sample, tool: str) -> dict[str, Any] | None:
    return next((dict(step.args) for step in sample.gold_tool_trace if step.tool == tool), None)


def _rerun(sample: Sample, tool: str, registry: ToolRegistry, world: World) -> tuple[bool, str]:
    """Re-run the gold trace's `tool` step on the gold decision's trajectory."""
    args = _trace_args(sample, tool)
    if args is None:
        return False, f"the gold trace has no {tool} step"
    args.update(waypoints=sample.gold_decision.waypoints, uav_id=sample.gold_decision.uav_id)
    result = registry.call(tool, world, args)
    return (
        result.ok,
        "" if result.ok else f"{tool} {result.error.type}: {result.error.message}",
    )


def _simulation_setting(sample: Sample) -> tuple[int, str]:
    args = _trace_args(sample, "simulate_scenario") or {}
    return int(args.get("seed", 0)), str(args.get("stress_level", "medium"))


def _check_sat(sample: Sample, registry: ToolRegistry, world: World) -> list[str]:
    if sample.gold_decision.status != "execute":
        return [f"SAT but the gold decision is {sample.gold_decision.status}"]
    problems = []
    for tool in ("verify_ltl_stl", "simulate_scenario"):
        ok, message = _rerun(sample, tool, registry, world)
        if not ok:
            problems.append(f"SAT decision fails again: {message}")
    return problems


def _check_unsat(sample: Sample, registry: ToolRegistry, world: World) -> list[str]:
    decision = sample.gold_decision
    if decision.status == "execute":
        return ["UNSAT sample ends in execute (R8)"]
    if not sample.failure_modes:
        return ["UNSAT sample states no failure mode"]
    proof = sample.source_provenance.proof
    if any(m.startswith(PROVEN) for m in sample.failure_modes) and proof is None:
        return ["UNSAT sample says proven but carries no proof"]
    if proof is not None and (
        proof["outcome"] != "unsat" or proof["bound_hit"] or settled_combinations(proof) != every_combination(proof)
    ):
        return ["UNSAT sample carries a proof that does not settle every combination"]
    if sample.source_provenance.built_in_reason in STATED_UNSAT_KINDS:
        return []  # the request's own altitude demands conflict (gold._stated_conflict): no tool failure to re-run
    return _gold_failure_problems(sample, registry, world)


def _check_unknown(sample: Sample, registry: ToolRegistry, world: World) -> list[str]:
    """UNKNOWN: the prover hit its bound or a failure rested on time or chance; the gold neither flies nor refuses as
    impossible, it asks."""
    if sample.gold_decision.status != "human_confirm":
        return [f"UNKNOWN sample ends in {sample.gold_decision.status}, not human_confirm"]
    proof = sample.source_provenance.proof
    if proof is None or proof["outcome"] != "unknown" or not (proof["bound_hit"] or proof.get("undecided_by")):
        return ["UNKNOWN sample carries no proof record that hit the bound or rests on time or chance"]
    if not all(m.startswith(UNDECIDED) for m in sample.failure_modes):
        return [f"UNKNOWN sample states modes {sample.failure_modes}, not {UNDECIDED}<family>"]
    return _gold_failure_problems(sample, registry, world)


def _gold_failure_problems(sample: Sample, registry: ToolRegistry, world: World) -> list[str]:
    """The gold decision's reason ("<tool> <error>: ...") is what re-executing the gold IR produces."""
    decision = sample.gold_decision
    seed, stress = _simulation_setting(sample)
    execution = execute_plan(sample.gold_ir, world, registry, seed=seed, stress_level=stress)
    if execution.ok:
        return [f"{sample.label} sample: its gold IR now runs through every tool"]
    failed = next(r for r in execution.results if r.step_id == execution.failed_step)
    observed = f"{failed.tool} {execution.failure.type}"
    if not decision.reason.startswith(observed + ":"):
        return [f"{sample.label} reason {decision.reason[:80]!r} but the tools say {observed}"]
    return []


def _check_ambiguous(sample: Sample, registry: ToolRegistry, world: World) -> list[str]:
    decision = sample.gold_decision
    if decision.status != "human_confirm" or not decision.missing_information:
        return ["AMBIGUOUS sample does not ask for confirmation of the missing information"]
    if sample.source_provenance.built_in_reason == "ambiguous_reference":
        listed = registry.call("query_city_state", world, {"region": world.world_id}).result or {}
        kinds = Counter(e["kind"] for e in listed.get("entities", []))
        named = decision.missing_information[0].split("which ", 1)[1].split("?")[0]
        if kinds[named] < 2:
            return [f"AMBIGUOUS reference to {named}, but the city lists {kinds[named]}"]
    return []


CHECKS = {"SAT": _check_sat, "UNSAT": _check_unsat, "AMBIGUOUS": _check_ambiguous, "UNKNOWN": _check_unknown}


def _check_stated_facts(sample: Sample) -> list[str]:
    """Information sufficiency: every fact the label rests on that the world does not hold is in the request, in
    both languages (the cargo's mass, the UAVs it pins or rules out, an altitude floor or cap other than the
    defaults)."""
    problems = []
    constraints = sample.gold_ir.constraints
    payload = constraints.payload_kg
    band = [
        v for v, default in ((constraints.altitude_min_m, 30.0), (constraints.altitude_max_m, 120.0)) if v != default
    ]
    for language, unit in (("en", " m"), ("zh", "米")):
        text = getattr(sample.instruction, language)
        problems += [
            f"the gold altitude {v:g} m is not stated in the {language} request"
            for v in band
            if f"{v:g}{unit}" not in text
        ]
    for language in ("en", "zh"):
        text = getattr(sample.instruction, language)
        shares = {s.payload_kg for s in sample.gold_ir.team.subtasks if s.payload_kg} if sample.gold_ir.team else set()
        if shares and all(mass_stated(text, kg, language) for kg in shares):
            pass  # a team's request states each sub-task's mass ("a first-aid kit (2 kg) to each")
        elif payload > 0 and not mass_stated(text, payload, language):  # "1.5 kg", or exactly "1,500 g", "3.3 lb"
            problems.append(f"the gold payload {payload:g} kg is not stated in the {language} request")
        for uav in sample.instruction.pinned_uavs:
            if uav not in text:
                problems.append(f"pinned {uav} is not named in the {language} request")
        for uav in sample.instruction.excluded_uavs:
            if uav not in text:
                problems.append(f"excluded {uav} is not named in the {language} request")
    return problems + _excluded_flown(sample) + _unnamed_places(sample)


def _excluded_flown(sample: Sample) -> list[str]:
    """A UAV the request rules out ("anyone but uav_05") is neither the gold's nor the one it proposes."""
    decision = sample.gold_decision
    flown = {decision.uav_id, (decision.proposal or {}).get("uav_id")} - {None}
    return [
        f"the gold flies {uav}, which the request rules out"
        for uav in sorted(flown & set(sample.instruction.excluded_uavs))
    ]


def _unnamed_places(sample: Sample) -> list[str]:
    """A place the request names by a phrase the world does not give it (in that language) is a hidden fact."""
    entities = sample.world.entity_index
    problems = []
    for mention in sample.instruction.mentions:
        entity = entities.get(mention.id)
        if entity is None or mention.style == "id":
            continue
        for language, phrase, names in (("en", mention.en, [entity.name]), ("zh", mention.zh, entity.names.values())):
            bare = re.sub(r"^the\s+", "", phrase.strip(), flags=re.IGNORECASE).lower()
            if not any(bare in name.lower() for name in names):
                problems.append(f"{mention.id} is named '{phrase}' in the {language} request, not in the world")
    return problems


def check_sample(line: str) -> tuple[str, str, list[str], dict[str, str]]:
    """(sample id, label, problems, identity) for one JSONL line; identity feeds the leakage check."""
    registry = gold_registry()
    try:
        sample = Sample.model_validate_json(line)
    except ValueError as exc:
        return "<unparsable>", "?", [f"schema: {str(exc).splitlines()[0]}"], {}
    world = sample.world
    problems = []
    report = validate_ir(sample.gold_ir.model_dump(mode="json"), world, registry)
    # A spec contradiction built in is the label's own reason, whichever failure the tools met first (a fleet too
    # weak for the task, say): the validator is right to find the specs unsatisfiable.
    built_in = sample.source_provenance.built_in_reason
    contradiction = report.error_type == "spec_unsat" and built_in == "spec_contradiction"
    if not report.valid and not contradiction:
        problems.append(f"gold IR invalid at {report.stage}: {report.error_type} ({report.field})")
    if sample.gold_ir.team is not None:
        problems += team_gold_problems(sample.gold_ir, sample.gold_decision, sample.label, sample.failure_modes, world)
    else:
        problems += CHECKS[sample.label](sample, registry, world)
    problems += _check_stated_facts(sample)
    identity = {
        "world_id": world.world_id,
        "world_version": world.version,
        "layout": world.city_layout,
    }
    return sample.sample_id, sample.label, problems, identity


def _leakage(identities: dict[str, list[dict[str, str]]]) -> list[str]:
    problems = []
    owners: dict[tuple[str, str], str] = {}
    for split, items in identities.items():
        for item in items:
            for key in ("sample_id", "world_id", "world_version"):
                owner = owners.setdefault((key, item[key]), split)
                if owner != split:
                    problems.append(f"{key} {item[key]} is in both {owner} and {split}")
            unseen = item["layout"] in UNSEEN_LAYOUTS
            if unseen != (split == UNSEEN_SPLIT):
                problems.append(f"{split} holds a {item['layout']} world ({item['sample_id']})")
    return problems


def check_dir(directory: Path, workers: int = 2) -> dict[str, Any]:
    files = sorted(directory.glob("*.jsonl"))
    identities: dict[str, list[dict[str, str]]] = {}
    per_split: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    context = multiprocessing.get_context("fork")
    with context.Pool(max(1, workers)) as pool:
        for path in files:
            lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            results = pool.map(check_sample, lines, chunksize=8)
            labels = Counter(label for _, label, _, _ in results)
            bad = [(sid, p) for sid, _, found, _ in results for p in found]
            problems += [f"{path.stem}/{sid}: {p}" for sid, p in bad]
            identities[path.stem] = [{"sample_id": sid, **ident} for sid, _, _, ident in results if ident]
            per_split[path.stem] = {
                "samples": len(results),
                "labels": dict(labels),
                "problems": len(bad),
            }
    problems += _leakage(identities)
    return {"splits": per_split, "problems": problems}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path, help="folder with <split>.jsonl files")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    if not args.directory.is_dir():
        print(f"check_splits: {args.directory} is not a folder", file=sys.stderr)
        return 2
    report = check_dir(args.directory, args.workers)
    print(json.dumps(report["splits"], indent=2))
    for problem in report["problems"][:50]:
        print("PROBLEM", problem)
    print(f"{sum(s['samples'] for s in report['splits'].values())} samples checked, {len(report['problems'])} problems")
    return 1 if report["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
