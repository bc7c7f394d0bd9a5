"""The agent's own overhead per task, apart from the model: cloudbrain_full with the `oracle` model (the gold IR, no
LLM call), so every second measured is graph, checkpointing, retrieval and tool time.

    .venv/bin/python -m evaluation.perf.overhead [--samples DIR/dev_mini.jsonl] [--limit 20] [--repeats 3] [--workers 2]

Measured in one run, each against a named baseline:
- per task with an in-memory checkpointer (`InMemorySaver`) and with the default SQLite file checkpointer: p50 / p95
  and the ratio sqlite / in_memory (target <= 1.5);
- the non-LLM overhead p95 (target <= 0.150 s) and its share spent inside the tools (the tools' own latency);
- throughput of `--workers` worker processes (each with its own SQLite file and memory snapshot, as `bench run`
  has them) against one worker: tasks/s and the scaling ratio (target >= 30 tasks/s with 2 workers).
The safety memory is a fresh local folder seeded with the rule corpus, opened as the benchmark's workers open it.
Without `--samples`, the first `--limit` dev_mini samples are generated into a temporary folder.
The last line is `tasks_per_sec=<x>` for the `--workers` run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from benchmark.generator import DEFAULT_SEED, generate_splits
from evaluation.methods import get_method
from evaluation.methods.base import MethodRun, MethodSetup, MethodTask
from evaluation.runner import FrozenMemory, load_samples
from graph.checkpoint import sqlite_checkpointer
from memory.access import close_memories, open_memory, open_snapshot
from tools.world import parse_world

ROOT = Path(__file__).resolve().parents[2]
TARGET_OVERHEAD_P95_SEC = 0.150
TARGET_SQLITE_RATIO = 1.5
TARGET_TASKS_PER_SEC = 30.0


def _tasks(samples: list[dict[str, Any]]) -> list[MethodTask]:
    return [
        MethodTask(
            sample_id=s["sample_id"],
            instruction=s["instruction"]["en"],
            world=parse_world(s["world"]),
            scenario_type=s.get("scenario_type", ""),
            gold_ir=s.get("gold_ir"),
        )
        for s in samples
    ]


def _run(task: MethodTask, saver: BaseCheckpointSaver, memory: FrozenMemory, thread: str) -> tuple[float, MethodRun]:
    setup = MethodSetup(model="oracle", checkpointer=saver, memory=memory, thread_id=thread)
    started = time.perf_counter()
    run = get_method("cloudbrain_full").run(task, setup)
    return time.perf_counter() - started, run


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _series(tasks: list[MethodTask], saver: BaseCheckpointSaver, memory: FrozenMemory, tag: str, repeats: int):
    walls, tool_secs, llm_secs = [], [], []
    for repeat in range(repeats):
        for index, task in enumerate(tasks):
            wall, run = _run(task, saver, memory, f"{tag}-{repeat}-{index}")
            walls.append(wall)
            tool_secs.append(sum(call.latency_sec for call in run.tool_calls))
            llm_secs.append(run.usage.llm_latency_sec)
    return walls, tool_secs, llm_secs


# --- worker processes, as `bench run` has them --------------------------------------------------------------------
_WORKER: dict[str, Any] = {}


def _init_worker(folder: str, memory_path: str, samples: list[dict[str, Any]]) -> None:
    pid = os.getpid()
    _WORKER["saver"] = sqlite_checkpointer(Path(folder) / f"worker-{pid}.sqlite")
    shared = open_memory(frozenset(), path=memory_path)
    _WORKER["memory"] = FrozenMemory(open_snapshot(shared, Path(folder) / f"memory-{pid}"))
    _WORKER["tasks"] = _tasks(samples)
    for index, task in enumerate(_WORKER["tasks"]):  # warm: embedder, compiled graph, caches
        _run(task, _WORKER["saver"], _WORKER["memory"], f"warm-{pid}-{index}")


def _worker_task(index: int) -> float:
    tasks = _WORKER["tasks"]
    wall, _ = _run(tasks[index % len(tasks)], _WORKER["saver"], _WORKER["memory"], f"w{os.getpid()}-{index}")
    return wall


def _throughput(workers: int, total: int, folder: Path, memory_path: Path, samples: list[dict[str, Any]]) -> float:
    folder.mkdir(parents=True)
    with ProcessPoolExecutor(
        workers, initializer=_init_worker, initargs=(str(folder), str(memory_path), samples)
    ) as pool:
        list(pool.map(_worker_task, range(workers)))  # every worker has finished its warm-up
        started = time.perf_counter()
        list(pool.map(_worker_task, range(total)))
        return total / (time.perf_counter() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", help="a split's JSONL (default: the first --limit dev_mini samples, generated)")
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3, help="passes over the samples per checkpointer")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--throughput-tasks", type=int, default=200, help="tasks run for each throughput figure")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="cloudbrain-overhead-") as tmp:
        scratch = Path(tmp)
        samples_path = args.samples
        if samples_path is None:
            generate_splits(["dev_mini"], scratch / "data", master_seed=DEFAULT_SEED, workers=1, limit=args.limit)
            samples_path = scratch / "data" / "dev_mini.jsonl"
        samples = load_samples(samples_path, args.limit)
        tasks = _tasks(samples)
        memory_path = scratch / "memory"
        memory = FrozenMemory(open_snapshot(open_memory(frozenset(), path=memory_path), scratch / "memory-main"))

        sqlite_saver, memory_saver = sqlite_checkpointer(scratch / "runs.sqlite"), InMemorySaver()
        _series(tasks, memory_saver, memory, "warm", 1)  # embedder, compiled graphs, caches
        in_memory, on_sqlite, tool_secs, llm_secs = [], [], [], []
        for repeat in range(args.repeats):  # interleaved, so that drifts of the machine hit both alike
            in_memory += _series(tasks, memory_saver, memory, f"mem{repeat}", 1)[0]
            walls, tools, llms = _series(tasks, sqlite_saver, memory, f"sqlite{repeat}", 1)
            on_sqlite, tool_secs, llm_secs = on_sqlite + walls, tool_secs + tools, llm_secs + llms

        overhead = [wall - llm for wall, llm in zip(on_sqlite, llm_secs)]
        tool_share = sum(tool_secs) / sum(overhead)
        print(f"samples={len(tasks)} repeats={args.repeats} model=oracle method=cloudbrain_full (seconds per task)")
        print(f"{'checkpointer':<14}{'p50':>8}{'p95':>8}{'mean':>8}")
        for name, walls in (("in_memory", in_memory), ("sqlite", on_sqlite)):
            row = (_percentile(walls, 0.5), _percentile(walls, 0.95), statistics.fmean(walls))
            print(f"{name:<14}" + "".join(f"{v:>8.3f}" for v in row))
        ratio_p50 = _percentile(on_sqlite, 0.5) / _percentile(in_memory, 0.5)
        ratio_p95 = _percentile(on_sqlite, 0.95) / _percentile(in_memory, 0.95)
        print(f"sqlite_vs_in_memory p50={ratio_p50:.2f}x p95={ratio_p95:.2f}x (target <= {TARGET_SQLITE_RATIO}x)")
        print(
            f"non_llm_overhead p50={_percentile(overhead, 0.5):.3f}s p95={_percentile(overhead, 0.95):.3f}s "
            f"(target p95 <= {TARGET_OVERHEAD_P95_SEC}s); inside tools {tool_share:.0%}"
        )

        one = _throughput(1, args.throughput_tasks, scratch / "one", memory_path, samples)
        many = _throughput(args.workers, args.throughput_tasks, scratch / "many", memory_path, samples)
        print(f"throughput 1 worker={one:.1f} tasks/s, {args.workers} workers={many:.1f} tasks/s")
        print(f"scaling {args.workers}_workers_vs_1={many / one:.2f}x (target >= {TARGET_TASKS_PER_SEC} tasks/s)")
        print(f"tasks_per_sec={many:.1f}")
        close_memories()  # before the folders go
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
