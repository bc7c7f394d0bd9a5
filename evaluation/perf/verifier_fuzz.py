"""Fuzz the exact verifier against an independent shapely oracle, next to the old 1 Hz sampling.

Random cases (evaluation/perf/verifier_cases.py, the generator and oracle that tests/unit/test_verifier_exact.py also uses):
a no-fly zone with an altitude band and active window, a building, a sensitive zone with its buffer, or other
traffic, each with a polyline biased to cut the shape's corners between two whole seconds. For every case the
signal's minimum over the flight (the robustness of R1 / R2's part) is computed three ways:
- exact: the verifier's method, the signal on tools/exact_grid's time grid (signals.exact_times);
- old 1 Hz: the signal on the track resampled every second (Trajectory.sample(1.0), the verifier before the grid);
- oracle: shapely, exact distances or dense sampling refined by golden section (never tools/segment_geometry).
A method disagrees with the oracle on a case when:
- its verdict differs: its minimum is below the rule's threshold (0; d_min = 10 m for buildings and traffic) where
  the oracle's is not, or the other way round, the oracle's being 1e-9 m or more from the threshold; for no-fly
  zones also a pass while the oracle finds an intrusion (in the zone, deeper than 1e-9 m, in band, while active,
  for a positive time);
- its minimum is more than 1e-6 m off the oracle's;
- or its minimum is above a value the oracle found the flight to attain, by more than 1e-9 m.
Only the two methods are timed (not the oracle, nor the World built for each case, about 0.1 ms).
The last line is `disagreements=<N>` for the exact method.

    .venv/bin/python -m evaluation.perf.verifier_fuzz [--cases 100000] [--seed 0] [--workers 2]
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from evaluation.perf.verifier_cases import (
    Case,
    NumpySource,
    exact_minimum,
    hz_minimum,
    nfz_intrusion,
    oracle,
    random_case,
)
from tools.rules import DEFAULT_MIN_SEPARATION_M
from tools.signals import far_distance
from tools.world import World

KIND_WEIGHTS = {"nfz": 0.4, "building": 0.2, "sensitive": 0.2, "traffic": 0.2}
D_MIN = DEFAULT_MIN_SEPARATION_M  # verify_ltl_stl's default
THRESHOLD = {"nfz": 0.0, "building": D_MIN, "sensitive": 0.0, "traffic": D_MIN}  # the rule fails below it
ROBUSTNESS_TOL = 1e-6
ATTAINED_TOL = 1e-9
VERDICT_TOL = 1e-9
METHODS = ("exact", "old_1hz")
SHOWN = 10


@dataclass
class Tally:
    kinds: Counter = field(default_factory=Counter)
    verdict: Counter = field(default_factory=Counter)  # method -> cases with a different verdict
    false_pass: Counter = field(default_factory=Counter)  # method -> passes where the oracle finds an intrusion
    off: Counter = field(default_factory=Counter)  # method -> |min - oracle| > ROBUSTNESS_TOL
    above: Counter = field(default_factory=Counter)  # method -> min > oracle + ATTAINED_TOL
    any: Counter = field(default_factory=Counter)  # method -> cases with any disagreement
    seconds: Counter = field(default_factory=Counter)  # method -> total time
    examples: list = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for name in ("kinds", "verdict", "false_pass", "off", "above", "any", "seconds"):
            getattr(self, name).update(getattr(other, name))
        self.examples += other.examples


def case_of(seed: int, index: int) -> Case:
    rng = np.random.default_rng([seed, index])
    kind = str(rng.choice(list(KIND_WEIGHTS), p=list(KIND_WEIGHTS.values())))
    return random_case(NumpySource(rng), kind)


def judge(case: Case, value: float, truth: float, intrusion: bool) -> dict[str, bool]:
    threshold = THRESHOLD[case.kind]
    verdict = (value < threshold) != (truth < threshold) and abs(truth - threshold) > VERDICT_TOL
    false_pass = intrusion and value >= 0
    return {
        "verdict": verdict or false_pass,
        "false_pass": false_pass,
        "off": abs(value - truth) > ROBUSTNESS_TOL,
        "above": value > truth + ATTAINED_TOL,
    }


def run_chunk(job: tuple[int, int, int]) -> Tally:
    seed, start, stop = job
    tally = Tally()
    for index in range(start, stop):
        case = case_of(seed, index)
        world = World.model_validate(case.world_dict())
        far = far_distance(world)
        tally.kinds[case.kind] += 1
        values = {}
        for method, function in (("exact", exact_minimum), ("old_1hz", hz_minimum)):
            began = time.perf_counter()
            values[method] = function(world, case)
            tally.seconds[method] += time.perf_counter() - began
        truth = oracle(case, far)
        intrusion = case.kind == "nfz" and nfz_intrusion(case)
        for method in METHODS:
            found = judge(case, values[method], truth, intrusion)
            for name, flag in found.items():
                getattr(tally, name)[method] += int(flag)
            if any(found.values()):
                tally.any[method] += 1
                if method == "exact" and len(tally.examples) < SHOWN:
                    tally.examples.append((index, case.kind, values["exact"], values["old_1hz"], truth, found))
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--chunk", type=int, default=200, help="cases per job handed to a worker")
    args = parser.parse_args(argv)

    jobs = [(args.seed, start, min(start + args.chunk, args.cases)) for start in range(0, args.cases, args.chunk)]
    total = Tally()
    began = time.perf_counter()
    done = 0
    with multiprocessing.get_context("fork").Pool(args.workers) as pool:
        for tally in pool.imap_unordered(run_chunk, jobs):
            total.add(tally)
            done += sum(tally.kinds.values())
            if done % max(args.cases // 10, args.chunk) < args.chunk:
                print(f"  {done}/{args.cases} cases, {time.perf_counter() - began:.0f} s", file=sys.stderr, flush=True)
    wall = time.perf_counter() - began

    n = sum(total.kinds.values())
    kinds = ", ".join(f"{kind} {total.kinds[kind]}" for kind in KIND_WEIGHTS)
    print(f"cases={n} ({kinds}) seed={args.seed} workers={args.workers} wall={wall:.1f} s")
    print(
        f"{'method':<8} {'disagreements':>13} {'verdict':>8} {'false_pass':>10} "
        f"{'off>1e-6':>9} {'above>1e-9':>10} {'ms/case':>8}"
    )
    for method in METHODS:
        print(
            f"{method:<8} {total.any[method]:>13} {total.verdict[method]:>8} {total.false_pass[method]:>10} "
            f"{total.off[method]:>9} {total.above[method]:>10} {1e3 * total.seconds[method] / max(n, 1):>8.3f}"
        )
    for index, kind, exact, old, truth, found in sorted(total.examples)[:SHOWN]:
        flags = ",".join(name for name, flag in found.items() if flag)
        print(f"  exact disagrees: case {index} ({kind}) exact={exact!r} old_1hz={old!r} oracle={truth!r} [{flags}]")
    print(f"disagreements={total.any['exact']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
