"""Decision latency of operations mode as the ledger grows, to 500 active intents.

A dev_mini world (its operations-day fleet) gets approved intents added in steps: straight flights between random
points of the city at a random altitude band, departing two to six hours ahead, each admitted only if it conflicts
with none before it (so the ledger is a real one). At each size the same probe requests (arriving at t = 0, flying
within minutes) are decided by the rules model on a copy of the ledger: every intent is active (held in the ledger,
read, turned into the reservations the graph's world carries, filtered by the planner and the verifier), yet none
is in the probes' way, so every size decides the same requests the same way and only the ledger's size differs.
The median decision latency is printed against the named baseline, the empty ledger, with a least-squares line and
a quadratic fitted to the medians: linear growth shows as a quadratic term that adds little to the line.

    .venv/bin/python -m evaluation.perf.ops_latency [--sizes 0,100,200,300,400,500] [--probes 6]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmark.generator import generate_one, jobs_for
from benchmark.ops_streams import ops_world, request_stream
from benchmark.splits import SPLITS
from graph.settings import RunSettings
from ops.ledger import Ledger, OperationalIntent
from ops.stream import OpsRequest, OpsRunner
from standards.volumes import Buffers, leg_volumes
from tools.world import World

WORLD_SEED, PROBE_SEED, FILL_SEED = 4711, 5, 17
FILL_FROM_SEC, FILL_SPAN_SEC = 2 * 3600.0, 4 * 3600.0
FILL_BUFFERS = Buffers(lateral_m=3.0, vertical_m=2.0, delay_sec=15.0, basis="typical measured buffers")


def _world() -> World:
    job = jobs_for(SPLITS["dev_mini"], WORLD_SEED, 1)[0]
    return ops_world(World.model_validate(json.loads(generate_one(job)[0])["world"]))


def _fill(ledger: Ledger, world: World, target: int, rng: np.random.Generator) -> int:
    """Admit random straight flights until the ledger holds `target` intents; returns the tries it took."""
    tries = 0
    width, depth = world.grid.width_m, world.grid.depth_m
    while len(ledger.all()) < target:
        tries += 1
        a, b = rng.uniform((50, 50), (width - 50, depth - 50), size=(2, 2))
        z = float(rng.choice([40.0, 60.0, 80.0, 100.0]))
        depart = float(rng.uniform(FILL_FROM_SEC, FILL_FROM_SEC + FILL_SPAN_SEC))
        mid = (a + b) / 2 + rng.normal(0, 60, 2)
        points, t = [], depart
        for p, q in ((a, mid), (mid, b)):
            points.append([*p, z, t])
            t += float(np.linalg.norm(q - p)) / 10.0
        points.append([*b, z, t])
        volumes = leg_volumes(points, FILL_BUFFERS)
        ledger.admit(OperationalIntent(request_id=f"fill{tries}", owner="fill", volumes=volumes))
    return tries


def _probe(world: World, db: Path, probes: list[OpsRequest]) -> tuple[list[float], tuple[str, ...]]:
    runner = OpsRunner(world=world, ledger=Ledger(db), context=RunSettings(model="rules", without={"memory"}).to_context(),
                       db=str(db))  # fmt: skip
    latencies, statuses = [], []
    for request in probes:
        started = time.perf_counter()
        statuses.append(runner.decide(request.model_copy(update={"at_sec": 0.0}))[0].status)
        latencies.append(time.perf_counter() - started)
    return latencies, tuple(statuses)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="0,100,200,300,400,500")
    parser.add_argument("--probes", type=int, default=6)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    world = _world()
    probes = [
        OpsRequest.model_validate(r) for r in request_stream(world, np.random.default_rng(PROBE_SEED), args.probes)
    ]
    rng = np.random.default_rng(FILL_SEED)
    folder = Path(tempfile.mkdtemp(prefix="ops-latency-"))
    filled = folder / "filled.sqlite"
    Ledger(filled)
    _probe(world, folder / "warm.sqlite", probes)  # imports, compiled graph, first-call caches
    rows, outcomes = [], set()
    for size in sizes:
        _fill(Ledger(filled), world, size, rng)
        copy = folder / f"probe-{size}.sqlite"
        shutil.copy(filled, copy)  # the probes' own intents stay out of the next size's ledger
        latencies, statuses = _probe(world, copy, probes)
        outcomes.add(statuses)
        rows.append((size, statistics.median(latencies), max(latencies)))
    base = rows[0][1]
    print(f"world {world.world_id}, {len(probes)} probe requests (rules model), baseline: the empty ledger")
    print(f"the probes' decisions are the same at every size: {len(outcomes) == 1} {sorted(outcomes)[0]}")
    print("| active intents | median decision latency (s) | max (s) | median / empty ledger |")
    print("|---|---|---|---|")
    for size, median, worst in rows:
        print(f"| {size} | {median:.3f} | {worst:.3f} | {median / base:.2f} |")
    x, y = np.array([r[0] for r in rows], float), np.array([r[1] for r in rows])
    line = np.polyfit(x, y, 1)
    quad = np.polyfit(x, y, 2)
    rss_line = float(((np.polyval(line, x) - y) ** 2).sum())
    rss_quad = float(((np.polyval(quad, x) - y) ** 2).sum())
    print(f"line: {line[1]:.3f} s + {line[0] * 1000:.3f} ms per intent (residual {rss_line:.2e} s^2)")
    print(f"quadratic term: {quad[0] * 1e6:.4f} us per intent^2 (residual {rss_quad:.2e} s^2)")
    print(f"at 500: the line predicts {np.polyval(line, 500):.3f} s; ratio to empty {np.polyval(line, 500) / base:.2f}")
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
