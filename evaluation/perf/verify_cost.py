"""Cost of verify_ltl_stl on a benchmark split's gold routes: p50 / p95 seconds per trajectory.

    .venv/bin/python -m evaluation.perf.verify_cost --samples DIR/dev_mini.jsonl [--baseline CHECKOUT] [--repeats 3]

Every gold `execute` decision is verified again with the arguments of its gold trace's verify_ltl_stl step. With
`--baseline`, the same measurement also runs on another checkout of this repository (e.g. `git worktree add
/tmp/base <rev>`), in a subprocess that imports the tools from there, and the ratio current / baseline is printed.
The last line is `p95_ratio=<x>` (or `p95_sec=<x>` without a baseline).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _cases(samples_path: str) -> list[tuple[dict, dict]]:
    cases = []
    for line in Path(samples_path).read_text().splitlines():
        sample = json.loads(line)
        decision = sample["gold_decision"]
        step = next((s for s in sample["gold_tool_trace"] if s["tool"] == "verify_ltl_stl"), None)
        if decision["status"] != "execute" or step is None or decision.get("team"):
            continue  # a fleet sample verifies each member: the cost is measured on one-UAV routes
        args = {**step["args"], "waypoints": decision["waypoints"], "uav_id": decision["uav_id"]}
        cases.append((sample["world"], args))
    return cases


def measure(samples_path: str, repeats: int) -> list[float]:
    """Best-of-`repeats` seconds per case, with the tools importable from sys.path."""
    from tools.verifier import VerifyArgs, verify
    from tools.world import World

    timings = []
    for world_data, args in _cases(samples_path):
        world, verify_args = World.model_validate(world_data), VerifyArgs.model_validate(args)
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            try:
                verify(world, verify_args)
            except Exception:  # a ToolFailure is a verdict too; its cost counts the same
                pass
            best = min(best, time.perf_counter() - start)
        timings.append(best)
    return timings


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _summary(label: str, timings: list[float]) -> dict[str, float]:
    stats = {"p50": statistics.median(timings), "p95": _percentile(timings, 0.95), "mean": statistics.fmean(timings)}
    print(
        f"{label}: {len(timings)} trajectories, p50 {stats['p50'] * 1e3:.1f} ms, p95 {stats['p95'] * 1e3:.1f} ms, "
        f"mean {stats['mean'] * 1e3:.1f} ms"
    )
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", required=True, help="a bench split's JSONL file")
    parser.add_argument("--baseline", help="another checkout of this repository to compare with")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--emit-json", action="store_true", help=argparse.SUPPRESS)  # the baseline subprocess
    args = parser.parse_args()
    if args.emit_json:
        print(json.dumps(measure(args.samples, args.repeats)))
        return
    current = _summary(f"current ({ROOT})", measure(args.samples, args.repeats))
    if not args.baseline:
        print(f"p95_sec={current['p95']:.4f}")
        return
    env = {**os.environ, "PYTHONPATH": str(Path(args.baseline).resolve())}
    # The baseline imports from its own checkout: put it first and drop this checkout's editable-install finder.
    prelude = (
        f"import runpy, sys; sys.path.insert(0, {str(Path(args.baseline).resolve())!r}); "
        "sys.meta_path[:] = [f for f in sys.meta_path if 'Editable' not in getattr(f, '__name__', type(f).__name__)]; "
        f"sys.argv = ['verify_cost', '--samples', {args.samples!r}, '--repeats', '{args.repeats}', '--emit-json']; "
        f"runpy.run_path({str(Path(__file__).resolve())!r}, run_name='__main__')"
    )
    out = subprocess.run(
        [sys.executable, "-c", prelude], check=True, capture_output=True, text=True, env=env, cwd=args.baseline
    )
    baseline = _summary(f"baseline ({args.baseline})", json.loads(out.stdout.strip().splitlines()[-1]))
    print(
        f"ratio current / baseline: p50 {current['p50'] / baseline['p50']:.2f}x, p95 {current['p95'] / baseline['p95']:.2f}x"
    )
    print(f"p95_ratio={current['p95'] / baseline['p95']:.2f}")


if __name__ == "__main__":
    main()
