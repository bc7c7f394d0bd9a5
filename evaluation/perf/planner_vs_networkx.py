"""CloudBrain's 3D A* against networkx.astar_path on the same graph: same nodes, edges, weights and heuristic.

Worlds: the downtown example (avoiding its no-fly and sensitive zones and congested corridors) and a
120 x 120 x 10 grid with random buildings and no-fly zones. For each world, random start/goal pairs among the
free cells (fixed seed) are solved by both; path costs must agree within 1e-6. Only the searches are timed
(graph and mask construction are not), in process CPU time so that other load on a shared machine does not
skew the ratio. The last line is `speedup_vs_networkx=<x>`: the SMALLER of the two
worlds' total-time ratios, so the figure holds for each world, not just on average.

Run: .venv/bin/python -m evaluation.perf.planner_vs_networkx [--pairs 50] [--seed 7]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import networkx as nx
import numpy as np

from tools.grid_masks import MaskSpec, build_occupancy
from tools.planner import GridGraph
from tools.world import World, load_world

DOWNTOWN = Path(__file__).resolve().parents[2] / "examples" / "downtown.json"
COST_TOLERANCE = 1e-6
T = TypeVar("T")


@dataclass(frozen=True)
class WorldTiming:
    name: str
    networkx_sec: list[float]
    ours_sec: list[float]

    @property
    def speedup(self) -> float:
        return sum(self.networkx_sec) / sum(self.ours_sec)


def networkx_graph(graph: GridGraph) -> nx.Graph:
    """The same graph in networkx: every free cell a node (i, j, k), every 26-neighbour pair an edge."""
    u, v, w = graph.edges()
    g = nx.Graph()
    g.add_nodes_from(map(tuple, np.argwhere(graph.free_cells()).tolist()))
    g.add_weighted_edges_from(zip(map(tuple, u.tolist()), map(tuple, v.tolist()), w.tolist()))
    return g


def networkx_cost(g: nx.Graph, graph: GridGraph, start: tuple, goal: tuple) -> float | None:
    try:
        path = nx.astar_path(g, start, goal, heuristic=graph.heuristic, weight="weight")
    except nx.NetworkXNoPath:
        return None
    return nx.path_weight(g, path, weight="weight")


def mixed_world(seed: int) -> World:
    """A 120 x 120 x 10 city: random rectangular buildings of mixed heights and two no-fly zones."""
    rng = np.random.default_rng(seed)
    buildings = []
    for index in range(140):
        x, y = rng.uniform(0, 1140, 2)
        w, d = rng.uniform(20, 70, 2)
        ring = [(x, y), (x + w, y), (x + w, y + d), (x, y + d)]
        buildings.append({"id": f"b{index}", "polygon": ring, "height_m": float(rng.uniform(15, 140))})
    zones = [
        {"id": "nfz_a", "polygon": [(300, 300), (500, 300), (500, 520), (300, 520)], "alt_min_m": 0, "alt_max_m": 90},
        {"id": "nfz_b", "polygon": [(750, 650), (950, 650), (950, 900), (750, 900)], "alt_min_m": 0, "alt_max_m": 500},
    ]
    grid = {"nx": 120, "ny": 120, "nz": 10, "cell_size_m": 10.0, "layer_base_m": 30.0, "layer_height_m": 10.0}
    return World.model_validate(
        {"world_id": "mixed_bench", "grid": grid, "buildings": buildings, "no_fly_zones": zones}
    )


def random_pairs(graph: GridGraph, count: int, seed: int) -> list[tuple[tuple, tuple]]:
    free = np.argwhere(graph.free_cells())
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(free), size=(count, 2))
    return [(tuple(free[a].tolist()), tuple(free[b].tolist())) for a, b in picks]


def _timed(function: Callable[..., T], *args: Any) -> tuple[T, float]:
    started = time.process_time()
    value = function(*args)
    return value, time.process_time() - started


def compare(name: str, graph: GridGraph, pairs: list[tuple[tuple, tuple]]) -> WorldTiming:
    started = time.perf_counter()
    g = networkx_graph(graph)
    print(
        f"[{name}] grid {'x'.join(map(str, graph.shape))}: {g.number_of_nodes()} free cells, "
        f"{g.number_of_edges()} edges (networkx graph built in {time.perf_counter() - started:.1f} s)"
    )
    # Each planner runs all pairs in one block (after one warm-up call), so neither runs on caches the other
    # just filled with its own data structures.
    networkx_cost(g, graph, *pairs[0])
    nx_costs, nx_times = zip(*(_timed(networkx_cost, g, graph, start, goal) for start, goal in pairs))
    graph.astar(*pairs[0])
    our_paths, our_times = zip(*(_timed(graph.astar, start, goal) for start, goal in pairs))
    unreachable = 0
    for (start, goal), expected, ours in zip(pairs, nx_costs, our_paths):
        if expected is None:
            assert ours is None, f"{name} {start}->{goal}: networkx finds no path, ours costs {ours.cost_m}"
            unreachable += 1
            continue
        assert ours is not None, f"{name} {start}->{goal}: networkx costs {expected}, ours finds no path"
        assert math.isclose(ours.cost_m, expected, rel_tol=0, abs_tol=COST_TOLERANCE), (name, start, goal)
    timing = WorldTiming(name, list(nx_times), list(our_times))
    expansions = sum(p.expanded for p in our_paths if p is not None)
    ratios = [n / o for n, o in zip(nx_times, our_times)]
    print(
        f"[{name}] {len(pairs)} pairs ({unreachable} unreachable), equal costs: "
        f"networkx {sum(nx_times):.3f} s (median {1e3 * statistics.median(nx_times):.2f} ms), "
        f"cloudbrain {sum(our_times):.3f} s (median {1e3 * statistics.median(our_times):.2f} ms, "
        f"{expansions} expansions); "
        f"speedup {timing.speedup:.1f}x total, {statistics.median(ratios):.1f}x median per pair"
    )
    return timing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=50)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    downtown = load_world(DOWNTOWN)
    avoid = tuple(z.id for z in downtown.no_fly_zones) + tuple(z.id for z in downtown.sensitive_zones)
    congested = tuple(c.id for c in downtown.corridors if c.load >= c.capacity)
    mixed = mixed_world(args.seed)
    worlds = {
        "downtown": build_occupancy(downtown, MaskSpec(avoid_zones=avoid, avoid_corridors=congested)),
        "mixed_120x120x10": build_occupancy(mixed, MaskSpec(avoid_zones=("nfz_a", "nfz_b"))),
    }
    timings = []
    for name, occupancy in worlds.items():
        graph = GridGraph.from_occupancy(occupancy)
        timings.append(compare(name, graph, random_pairs(graph, args.pairs, args.seed)))
    print(f"speedup_vs_networkx={min(t.speedup for t in timings):.1f}")


if __name__ == "__main__":
    main()
