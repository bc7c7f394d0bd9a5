"""The `ops` split of CloudBrain-Bench: request streams on dev_mini worlds, run through operations mode.

- Generation: each stream is a dev_mini world (its operations-day fleet) and 10-50 requests; its gold is the
  deterministic planner's, in arrival order: the oracle model (each request's gold IR, built by the benchmark's gold
  builder from the task) through operations mode, plus every request flown alone on the empty airspace (the
  baseline for extra flight time).
- A run: each stream through operations mode with the model under test, on its own ledger.
- Metrics, judged here from the decisions and the ledger's rows: share of requests served, 4D conflicts between
  approved intents (pairwise, brute force; must be 0; a fleet mission's members are intents of their own, so pairs
  within a team count too), extra flight time versus flying alone (a fleet mission: its last member's; arrival on the
  stream's clock minus arrival when flown alone at its request time), pre-emptions, and decision latency per
  request against the number of active intents (least-squares slope).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import sqlite3
import statistics
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from shapely.geometry import Polygon

from benchmark.generator import derive_seed, generate_one, jobs_for
from benchmark.gold import build_gold_ir
from benchmark.ops_streams import OPS_SPLITS, OpsSplitSpec, ops_world, request_stream, stream_tasks
from benchmark.splits import SPLITS
from graph.settings import RunSettings
from ops.ledger import Ledger
from ops.stream import OpsRequest, OpsRunner
from tools.world import World

RESULTS_FILE = "ops_results.json"


def generate_ops_split(name: str, out_dir: Path, master_seed: int, limit: int | None = None) -> Path:
    """Write <name>.jsonl: one stream a line, with its gold decisions."""
    spec = OPS_SPLITS[name]
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.jsonl"
    count = spec.streams if limit is None else min(limit, spec.streams)
    with tempfile.TemporaryDirectory(prefix="ops-gold-") as scratch, open(path, "w", encoding="utf-8") as handle:
        for index in range(count):
            sample = _stream_sample(spec, index, master_seed, Path(scratch))
            handle.write(json.dumps(sample, ensure_ascii=False) + "\n")
    return path


def _stream_sample(spec: OpsSplitSpec, index: int, master_seed: int, scratch_dir: Path) -> dict[str, Any]:
    rng = np.random.default_rng(derive_seed(master_seed, spec.name, f"stream-{index}"))
    # a city world as the split's one-UAV samples draw it (a fleet sample re-parks its fleet for a team)
    cities = dataclasses.replace(SPLITS[spec.world_split], fleet_share=0.0)
    world_job = jobs_for(cities, derive_seed(master_seed, spec.name, f"world-{index}"), 1)[0]
    world = ops_world(World.model_validate(json.loads(generate_one(world_job)[0])["world"]))
    stream_id = f"{spec.name}-{index:03d}"
    tasks = stream_tasks(world, rng, int(rng.integers(spec.sizes[0], spec.sizes[1] + 1)), spec.emergency_share)
    requests = request_stream(world, rng, len(tasks), stream_id=stream_id, tasks=tasks)
    for request, task in zip(requests, tasks):
        request["gold_ir"] = build_gold_ir(task, world, request["request_id"], None).model_dump(mode="json")
    scratch = scratch_dir / stream_id
    gold = run_stream(world, requests, "oracle", scratch / "stream.sqlite")
    alone = {r["request_id"]: _alone(world, r, scratch / f"alone-{r['request_id']}.sqlite") for r in requests}
    metrics = {**gold["metrics"], "mean_extra_flight_sec": _extra_flight(gold["decisions"], alone)}
    return {
        "sample_id": stream_id,
        "split": spec.name,
        "world": world.model_dump(mode="json"),
        "requests": requests,
        "gold": {"decisions": gold["decisions"], "alone_arrival_sec": alone, "metrics": metrics},
    }


def _flights(decision: dict[str, Any]) -> list[list[list[float]]]:
    """An executed decision's routes: its own, or each member's of a fleet mission (whose own is empty)."""
    return [m["waypoints"] for m in decision.get("team") or []] or [decision["waypoints"]]


def _arrival(decision: dict[str, Any]) -> float:
    """When an executed request is done: its landing, or a fleet mission's last member's."""
    return max(route[-1][3] for route in _flights(decision))


def _extra_flight(decisions: list[dict[str, Any]], alone: dict[str, float | None]) -> float | None:
    """Mean over the served requests of (arrival in the stream - arrival flown alone at the request's time)."""
    extra = [
        _arrival(d) - alone[d["request_id"]]
        for d in decisions
        if d["status"] == "execute" and alone.get(d["request_id"]) is not None
    ]
    return round(statistics.mean(extra), 2) if extra else None


def _alone(world: World, request: dict[str, Any], db: Path) -> float | None:
    """When the request would arrive flown alone, at its own request time, on the empty airspace."""
    decided = run_stream(world, [request], "oracle", db)["decisions"][0]
    return _arrival(decided) if decided["status"] == "execute" else None


def run_stream(world: World, requests: list[dict[str, Any]], model: str, db: Path, **settings: Any) -> dict[str, Any]:
    """One stream through operations mode on a fresh ledger; the decisions and their metrics. The benchmark's
    operator approves every pre-emption an emergency asks for (a fixed policy, so runs compare)."""
    db.parent.mkdir(parents=True, exist_ok=True)
    db.unlink(missing_ok=True)
    runner = OpsRunner(
        world=world,
        ledger=Ledger(db),
        context=RunSettings(model=model, without={"memory"}, **settings).to_context(),
        db=str(db),
        approve_pre_emption=lambda request, intents: True,
    )
    decisions = [d.model_dump() for d in runner.run_stream(OpsRequest.model_validate(r) for r in requests)]
    return {"decisions": decisions, "metrics": stream_metrics(decisions, _ledger_rows(db))}


def _ledger_rows(db: Path) -> list[dict[str, Any]]:
    """The approved intents read from the table itself, not through the ledger's code."""
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT note, body FROM operational_intents").fetchall()
    return [{**json.loads(body), "note": note} for note, body in rows]


def _share_airspace(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (
        a["t_start"] < b["t_end"]
        and b["t_start"] < a["t_end"]
        and a["lower_m"] < b["upper_m"]
        and b["lower_m"] < a["upper_m"]
        and Polygon(a["ring"]).intersects(Polygon(b["ring"]))
    )


def stream_metrics(decisions: list[dict[str, Any]], rows: list[dict[str, Any]]) -> dict[str, Any]:
    asked = [d for d in decisions if d["status"] != "pre_empted" and not d["request_id"].endswith("_replan")]
    # a pre-empted request is served only if its re-plan flew
    pre_empted = {d["request_id"] for d in decisions if d["status"] == "pre_empted"}
    replanned = {d["request_id"].removesuffix("_replan") for d in decisions
                 if d["request_id"].endswith("_replan") and d["status"] == "execute"}  # fmt: skip
    served = [
        d for d in asked
        if d["status"] == "execute" and (d["request_id"] not in pre_empted or d["request_id"] in replanned)
    ]  # fmt: skip
    held = [r for r in rows if not r["note"].startswith("pre-empted")]
    conflicts = sum(
        1
        for a, b in itertools.combinations(held, 2)
        if any(_share_airspace(x, y) for x in a["volumes"] for y in b["volumes"])
    )
    latencies = [(d["active_intents"], d["latency_sec"]) for d in asked]
    return {
        "requests": len(asked),
        "served": len(served),
        "served_share": round(len(served) / len(asked), 4) if asked else 0.0,
        "conflicting_intent_pairs": conflicts,
        "pre_emptions": sum(len(d["pre_empted"]) for d in decisions),
        "later_starts": sum(1 for d in served if min(route[0][3] for route in _flights(d)) > d["at_sec"]),
        "median_latency_sec": round(statistics.median(lat for _, lat in latencies), 4) if latencies else None,
        "max_active_intents": max((a for a, _ in latencies), default=0),
        "latency_by_active_intents": latencies,
    }


def _slope_ms(points: list[tuple[int, float]]) -> float | None:
    """Decision latency's least-squares growth per active intent."""
    if len({a for a, _ in points}) < 2:
        return None
    return round(float(np.polyfit(*zip(*points), 1)[0]) * 1000, 4)


def run_ops_split(samples: Path, model: str, out_dir: Path, limit: int | None = None) -> dict[str, Any]:
    """Every stream of the split with `model`; writes ops_results.json (per stream and overall)."""
    lines = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines() if line.strip()]
    streams = []
    for sample in lines[:limit]:
        world = World.model_validate(sample["world"])
        ran = run_stream(world, sample["requests"], model, out_dir / "ledgers" / f"{sample['sample_id']}.sqlite")
        extra = _extra_flight(ran["decisions"], sample["gold"]["alone_arrival_sec"])
        metrics = {**ran["metrics"], "mean_extra_flight_sec": extra}
        streams.append({"sample_id": sample["sample_id"], "metrics": metrics, "gold": sample["gold"]["metrics"]})
    results = {"model": model, "streams": streams, "overall": _overall([s["metrics"] for s in streams])}
    results["gold_overall"] = _overall([s["gold"] for s in streams])
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / RESULTS_FILE).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return results


def _overall(metrics: list[dict[str, Any]]) -> dict[str, Any]:
    requests = sum(m["requests"] for m in metrics)
    served = sum(m["served"] for m in metrics)
    extras = [m["mean_extra_flight_sec"] for m in metrics if m.get("mean_extra_flight_sec") is not None]
    latencies = [lat for m in metrics for _, lat in m["latency_by_active_intents"]]
    return {
        "streams": len(metrics),
        "requests": requests,
        "served_share": round(served / requests, 4) if requests else 0.0,
        "conflicting_intent_pairs": sum(m["conflicting_intent_pairs"] for m in metrics),
        "pre_emptions": sum(m["pre_emptions"] for m in metrics),
        "later_starts": sum(m["later_starts"] for m in metrics),
        # each stream's own mean: streams weigh alike, whatever the share of each a model served
        "mean_extra_flight_sec": round(statistics.mean(extras), 2) if extras else None,
        "median_latency_sec": round(statistics.median(latencies), 4) if latencies else None,
        # each stream's first request also loads the graph: left out of the growth
        "latency_slope_ms_per_intent": _slope_ms([p for m in metrics for p in m["latency_by_active_intents"][1:]]),
        "max_active_intents": max((m["max_active_intents"] for m in metrics), default=0),
    }


def ops_report(results: dict[str, Any]) -> str:
    """The ops section of report.md: the model's figures beside the gold's (the deterministic planner's)."""
    rows = [
        ("requests", "requests"),
        ("share served", "served_share"),
        ("conflicting approved intent pairs (must be 0)", "conflicting_intent_pairs"),
        ("pre-emptions", "pre_emptions"),
        ("later starts", "later_starts"),
        ("mean extra flight time vs flying alone (s)", "mean_extra_flight_sec"),
        ("median decision latency (s)", "median_latency_sec"),
        ("latency growth (ms per active intent)", "latency_slope_ms_per_intent"),
        ("most active intents met by a request", "max_active_intents"),
    ]
    lines = [
        f"## Operations mode ({results['overall']['streams']} streams)",
        "",
        f"| metric | {results['model']} | gold (oracle, arrival order) |",
        "|---|---|---|",
    ]
    lines += [f"| {label} | {results['overall'][key]} | {results['gold_overall'][key]} |" for label, key in rows]
    return "\n".join(lines) + "\n"
