"""Retrieval latency of the safety memory at 10,000 repair cases (embedded Qdrant, temp folder).

Fills synthetic but varied repair cases (batch-encoded, upserted in batches), then times filtered top-k queries:
the Qdrant query alone (SafetyMemory.search_cases_by_vector, failure-type filter) and the query embedding, against
the named baseline, an unfiltered brute-force numpy cosine search over the same vectors. Also times a few raw
Qdrant filtered queries (the payload filter that local mode evaluates in Python) to show why the store over-fetches.
The last line is `p95_ms=<Qdrant query p95>`.

    .venv/bin/python -m evaluation.perf.memory_latency [--cases 10000] [--queries 200]
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

# A single-query GEMV gains nothing from BLAS threads, and on a shared machine a BLAS helper thread waiting for a
# core costs a whole scheduler slice (~12 ms) per query: numpy's BLAS (Qdrant local and the baseline alike) runs
# single-threaded unless the caller says otherwise. Must be set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from memory.cases import RepairCase
from memory.embeddings import shared_embedder
from memory.store import CASES_COLLECTION, SafetyMemory, failure_filter

FAILURES = {  # failure type -> (stage, rule, failure phrases, offending slot, suggested repair)
    "spec_violation": (
        "verify",
        "R1",
        ["the route crossed the active no-fly zone {zone}", "the trajectory entered restricted airspace {zone}"],
        "zone",
        "avoid the zone",
    ),
    "separation_violation": (
        "verify",
        "R2",
        ["the path passed too close to {zone}", "clearance to the school buffer {zone} was below minimum"],
        "zone",
        "widen the detour",
    ),
    "altitude_violation": (
        "verify",
        "R3",
        ["the UAV climbed above the ceiling near {place}", "the plan descended under the altitude floor over {place}"],
        "place",
        "fix the altitude band",
    ),
    "deadline_risk": (
        "execute",
        "R4",
        ["arrival at {place} was later than the deadline", "the detour made the ETA miss the time limit"],
        "place",
        "faster UAV",
    ),
    "low_battery_candidates": (
        "execute",
        "R5",
        [
            "the named UAV {uav} had too little battery for the round trip",
            "battery reserve on arrival would drop below 20% for {uav}",
        ],
        "uav",
        "assign another UAV",
    ),
    "capacity_low": (
        "execute",
        "R6",
        [
            "corridor {corridor} was full, no free capacity",
            "the congested corridor {corridor} could not take another UAV",
        ],
        "corridor",
        "use another corridor",
    ),
    "near_miss": (
        "simulate",
        "R2",
        [
            "a near miss with traffic track {uav} during the stress test",
            "gusts pushed the UAV within metres of another drone near {place}",
        ],
        "uav",
        "raise separation",
    ),
    "medium_risk": (
        "simulate",
        None,
        [
            "risk assessment came out medium above the allowed level near {place}",
            "gusty wind north of {place} raised the risk score",
        ],
        "place",
        "avoid gusts",
    ),
    "grounding_error": (
        "grounding",
        None,
        ["the IR named an entity {place}_x that does not exist", "unknown zone id referenced instead of {zone}"],
        "place",
        "use map ids",
    ),
    "spec_unsat": (
        "verify",
        "R8",
        [
            "the LTL specs contradict each other: reach {place} and never enter it",
            "constraints could not be satisfied together for {place}",
        ],
        "place",
        "refuse safely",
    ),
}
TASKS = [
    "send a drone with the defibrillator from {a} to {b}",
    "deliver a blood sample from {a} to {b}",
    "inspect the roof of {b} and return to {a}",
    "patrol the corridor between {a} and {b}",
    "carry spare parts from {a} to {b} within {m} minutes",
    "photograph the accident near {b} for the police",
    "move a medicine box from {a} to {b}, avoid schools",
    "urgent: insulin from {a} to {b} in {m} min",
]
PLACES = [
    "hospital_A",
    "hospital_B",
    "accident_site_3",
    "metro_station_4",
    "depot_1",
    "charging_pad_1",
    "police_2",
    "fire_station_1",
    "warehouse_7",
    "vertiport_2",
    "office_park_5",
    "stadium_1",
]
ZONES = ["nfz_temp_1", "nfz_gov_1", "school_zone_2", "nfz_event_4", "school_zone_7", "nfz_airport_1"]
UAVS = ["uav_03", "uav_07", "uav_05", "uav_09", "uav_11", "uav_12", "uav_21"]
CORRIDORS = ["corridor_c1", "corridor_c2", "corridor_c3"]
EXTRAS = [
    "",
    "",
    " with a {kg} kg payload",
    " at low altitude",
    " before sunset",
    ", critical priority",
    ", keep clear of schools",
    " using {uav}",
]
FILL_BATCH = 512
# Local mode commits every point to SQLite on its own: on a busy disk the fill spends minutes in fsync. Queries never
# touch SQLite, so a RAM disk changes the fill time only, not what is measured.
RAM_DISK = "/dev/shm"
T = TypeVar("T")


def synthetic_case(rng: random.Random, index: int) -> RepairCase:
    failure_type = rng.choice(sorted(FAILURES))
    stage, rule, phrases, offender, repair = FAILURES[failure_type]
    a, b = rng.sample(PLACES, 2)
    slots = {
        "a": a,
        "b": b,
        "m": rng.choice([5, 8, 10, 15, 20]),
        "zone": rng.choice(ZONES),
        "place": b,
        "uav": rng.choice(UAVS),
        "corridor": rng.choice(CORRIDORS),
        "kg": rng.choice([0.5, 1, 2, 3]),
    }
    failure = rng.choice(phrases).format(**slots)
    return RepairCase(
        instruction=(rng.choice(TASKS) + rng.choice(EXTRAS)).format(**slots),
        scenario_type=rng.choice(["medical", "inspection", "logistics", "emergency"]),
        failure_stage=stage,
        failure_type=failure_type,
        violated_rule=rule,
        counterexample={
            "time_sec": rng.randint(5, 600),
            "robustness": round(rng.uniform(-40, -0.5), 2),
            "offending_entity": slots[offender],
            "suggested_repair": repair,
        },
        failing_ir_summary=failure,
        repaired_ir_diff=f"+ constraints.avoid_zones: [{slots['zone']}]",
        outcome=rng.choice(["repaired", "repaired", "safe_refusal", "human_confirm"]),
        model="synthetic",
        thread_id=f"perf-{index}",
        round=rng.randint(0, 2),
    )


@dataclass
class Timings:
    wall_ms: np.ndarray
    cpu_ms: np.ndarray  # process CPU time: what the call costs, whatever else runs on a shared machine


def time_each(fn: Callable[[T], object], items: Sequence[T]) -> Timings:
    """Wall and CPU milliseconds of fn(item), one call per item."""
    wall, cpu = [], []
    for item in items:
        wall_start, cpu_start = time.perf_counter(), time.process_time()
        fn(item)
        cpu.append((time.process_time() - cpu_start) * 1000)
        wall.append((time.perf_counter() - wall_start) * 1000)
    return Timings(np.array(wall), np.array(cpu))


def report(label: str, timings: Timings) -> float:
    """Prints wall and CPU p50/p95; returns the wall p95."""
    wall50, wall95, cpu50, cpu95 = (
        float(np.percentile(ms, q)) for ms in (timings.wall_ms, timings.cpu_ms) for q in (50, 95)
    )
    print(
        f"{label:<48} wall p50 {wall50:7.2f} p95 {wall95:7.2f} ms | cpu p50 {cpu50:7.2f} p95 {cpu95:7.2f} ms"
        f" (n={len(timings.wall_ms)})"
    )
    return wall95


def brute_force_top_k(matrix: np.ndarray, query: np.ndarray, k: int) -> np.ndarray:
    scores = matrix @ query
    top = np.argpartition(-scores, k)[:k]
    return top[np.argsort(-scores[top])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--raw-filter-queries", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--tmp-dir",
        default=RAM_DISK if Path(RAM_DISK).is_dir() else None,
        help="where the temporary Qdrant folder goes (default: a RAM disk when there is one)",
    )
    args = parser.parse_args()

    print(
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start, "
        f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}"
    )
    embedder = shared_embedder()
    start = time.perf_counter()
    embedder.encode(["warm up"])
    print(f"model import + load: {time.perf_counter() - start:.1f} s, ONNX Runtime threads {embedder.threads}")

    rng = random.Random(args.seed)
    cases = [synthetic_case(rng, i) for i in range(args.cases)]
    queries = [synthetic_case(random.Random(args.seed + 1 + i), i) for i in range(args.queries)]
    with (
        tempfile.TemporaryDirectory(dir=args.tmp_dir) as folder,
        SafetyMemory(path=Path(folder), embedder=embedder, exclusive=True) as memory,
    ):
        print(f"embedded Qdrant in {folder}")
        batches = [cases[first : first + FILL_BATCH] for first in range(0, len(cases), FILL_BATCH)]
        encode_s = upsert_s = 0.0
        blocks = []
        for batch in batches:
            start = time.perf_counter()
            blocks.append(embedder.encode([case.embedding_text() for case in batch]))
            encode_s += time.perf_counter() - start
            start = time.perf_counter()
            memory.upsert_case_vectors(batch, blocks[-1])  # local mode commits each point to SQLite on its own
            upsert_s += time.perf_counter() - start
        matrix = np.vstack(blocks)
        print(
            f"filled {memory.count_cases()} cases (distinct texts {len({c.embedding_text() for c in cases})}): "
            f"batch encode {encode_s:.1f} s ({args.cases / encode_s:.0f}/s), upsert {upsert_s:.1f} s "
            f"({args.cases / upsert_s:.0f}/s)"
        )

        # The repair node's query: the instruction, the failure type and the counterexample's suggested repair.
        texts = [f"{q.instruction} | {q.failure_type}: {q.counterexample['suggested_repair']}" for q in queries]
        embed_times = time_each(embedder.encode_one, texts)
        vectors = embedder.encode(texts)
        pairs = list(zip(vectors, [q.failure_type for q in queries]))
        for vector, failure_type in pairs[:5]:  # warm-up
            memory.search_cases_by_vector(vector, failure_type, args.k)
        fallbacks_before = memory.filtered_query_fallbacks
        qdrant_times = time_each(lambda pair: memory.search_cases_by_vector(*pair, args.k), pairs)
        fallbacks = memory.filtered_query_fallbacks - fallbacks_before
        numpy_times = time_each(lambda pair: brute_force_top_k(matrix, pair[0], args.k), pairs)
        raw_filter_times = time_each(
            lambda pair: memory.client.query_points(
                CASES_COLLECTION, query=pair[0].tolist(), query_filter=failure_filter(pair[1]), limit=args.k
            ),
            pairs[: args.raw_filter_queries],
        )

    print(
        f"\n{args.queries} queries, top-{args.k}, failure-type filter ({len(FAILURES)} types, ~"
        f"{args.cases // len(FAILURES)} cases each); filtered fallbacks: {fallbacks}"
    )
    report("query embedding (MiniLM, one text)", embed_times)
    qdrant_p95 = report("Qdrant query, filtered (SafetyMemory)", qdrant_times)
    numpy_p95 = report("baseline: numpy brute-force cosine, unfiltered", numpy_times)
    report("raw Qdrant local payload-filter query", raw_filter_times)
    print(f"load average {os.getloadavg()[0]:.2f} at the end (a loaded machine inflates wall times, not CPU)")
    print(
        f"Qdrant p95 / numpy p95 = {qdrant_p95 / numpy_p95:.1f}x   target Qdrant p95 <= 20 ms: "
        f"{'met' if qdrant_p95 <= 20 else 'MISSED'}"
    )
    print(f"p95_ms={qdrant_p95:.2f}")


if __name__ == "__main__":
    main()
