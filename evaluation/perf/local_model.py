"""The embedded local model on CloudBrain-Bench samples: speed, validity under the grounded schema, outcomes.

First a raw speed check of the runtime (model load, prompt and decode tokens/s, unconstrained). Then the real
agent loop (`run_task`, in-memory checkpoints, memory off) on the first N samples of a split, generated in
process (or read from --samples-file). Every model call of every round is counted: it is valid when its answer
parses and passes the validator's schema stage, and an unknown id is an entity-grounding error of type
unknown_*. Per run: the final status (execute only after verify + simulate), and whether the final IR names
the gold origin and destination (a verified plan for the wrong place is still a wrong plan).

Timings are wall-clock on whatever else the machine is running: on a shared 2-core machine they are noisy.
The last line is `p95_sec=<seconds per model call, 95th percentile>`.

Run: .venv/bin/python -m evaluation.perf.local_model [--mode slots|full] [--samples 50] [--max-repairs 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from benchmark.generator import DEFAULT_SEED, generate_one, jobs_for
from benchmark.sample import Sample, read_samples
from benchmark.splits import SPLITS
from graph.checkpoint import thread_config
from graph.runner import run_task
from graph.settings import RunSettings
from models.model_host import self_test
from nodes.context import Context

SPEED_TOKENS = 64


@dataclass
class Tally:
    calls: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    right_endpoints: int = 0
    agrees_with_gold: int = 0


def load_samples(args: argparse.Namespace) -> list[Sample]:
    if args.samples_file:
        return read_samples(args.samples_file)[: args.samples]
    jobs = jobs_for(SPLITS[args.split], args.seed, limit=args.samples)
    return [Sample.model_validate_json(generate_one(job)[0]) for job in jobs]


def raw_speed() -> None:
    report = self_test(decode_tokens=SPEED_TOKENS)
    print(f"model: {report.model} on {report.runtime} ({' '.join(report.instruction_sets)}), load {report.load_sec} s")
    print(
        f"unconstrained: {report.prompt_tokens} prompt tokens at {report.prompt_tokens_per_sec} tok/s, "
        f"{report.decode_tokens} new tokens at {report.decode_tokens_per_sec} tok/s"
    )


def attempts_of(saver: InMemorySaver, thread_id: str) -> list[dict[str, Any]]:
    checkpoint = saver.get_tuple(thread_config(thread_id))
    return checkpoint.checkpoint["channel_values"].get("attempts") or [] if checkpoint else []


def call_record(attempt: dict[str, Any]) -> dict[str, Any] | None:
    usage = attempt.get("usage") or {}
    if not usage.get("llm_calls"):
        return None  # served from the response cache: no model call
    validation = attempt.get("validation") or {}
    stage = validation.get("stage")
    return {
        "valid": stage not in ("json", "schema"),
        "unknown_id": stage == "entity_grounding" and str(validation.get("error_type", "")).startswith("unknown_"),
        "stage": stage or "passed",
        "tokens": usage.get("completion_tokens", 0),
        "prompt_tokens": usage.get("prompt_tokens", 0),
        "seconds": usage.get("llm_latency_sec", 0.0),
    }


def run_one(sample: Sample, context: Context, tally: Tally) -> None:
    saver = InMemorySaver()
    output = run_task(
        sample.world,
        sample.instruction.en,
        context=context,
        checkpointer=saver,
        task_id=sample.sample_id,
        thread_id=sample.sample_id,
    )
    attempts = attempts_of(saver, output.thread_id)
    tally.calls += [record for a in attempts if (record := call_record(a)) is not None]
    tally.statuses.append(output.status)
    final_ir = next((a["ir"] for a in reversed(attempts) if a.get("ir")), None) or {}
    entities = final_ir.get("entities") or {}
    gold = sample.gold_ir.entities
    tally.right_endpoints += (entities.get("origin"), entities.get("destination")) == (gold.origin, gold.destination)
    tally.agrees_with_gold += output.status == sample.gold_decision.status
    print(
        f"{sample.sample_id} {sample.scenario_type:<22} {output.status:<13} gold {sample.gold_decision.status:<13} "
        f"rounds {len(attempts)} endpoints {entities.get('origin')}->{entities.get('destination')}",
        flush=True,
    )


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def report(tally: Tally, runs: int) -> float:
    calls = tally.calls
    seconds = [c["seconds"] for c in calls]
    tokens = [c["tokens"] for c in calls]
    stages: dict[str, int] = {}
    for call in calls:
        stages[call["stage"]] = stages.get(call["stage"], 0) + 1
    print(f"model calls: {len(calls)} over {runs} runs; first failing validation stage per call: {stages}")
    print(
        f"valid share (parses + schema stage): {sum(c['valid'] for c in calls) / len(calls):.3f}; "
        f"unknown ids: {sum(c['unknown_id'] for c in calls)}"
    )
    print(
        f"tokens per call: mean {statistics.mean(tokens):.1f} completion, "
        f"{statistics.mean(c['prompt_tokens'] for c in calls):.0f} prompt; "
        f"{sum(tokens) / sum(seconds):.1f} completion tok/s (prompt time included)"
    )
    print(
        f"seconds per call: mean {statistics.mean(seconds):.2f}, p50 {percentile(seconds, 0.5):.2f}, "
        f"p95 {percentile(seconds, 0.95):.2f}, max {max(seconds):.2f}"
    )
    shares = {s: tally.statuses.count(s) / runs for s in sorted(set(tally.statuses))}
    print(
        f"run outcomes: {shares}; same status as gold {tally.agrees_with_gold / runs:.3f}; "
        f"final IR with the gold origin and destination {tally.right_endpoints / runs:.3f}"
    )
    return percentile(seconds, 0.95)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("slots", "full"), default="slots")
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--split", default="dev_mini", choices=sorted(SPLITS))
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--samples-file", type=Path, help="read samples from a JSONL file instead of generating")
    parser.add_argument("--max-repairs", type=int, default=3)
    args = parser.parse_args()
    raw_speed()
    started = time.perf_counter()
    samples = load_samples(args)
    print(f"{len(samples)} samples of {args.samples_file or args.split} in {time.perf_counter() - started:.1f} s")
    context = RunSettings(model=f"local:{args.mode}", max_repairs=args.max_repairs, without={"memory"}).to_context()
    tally = Tally()
    started = time.perf_counter()
    for sample in samples:
        run_one(sample, context, tally)
    print(f"{len(samples)} agent runs in {time.perf_counter() - started:.0f} s (mode {args.mode})")
    print(f"p95_sec={report(tally, len(samples)):.2f}")


if __name__ == "__main__":
    main()
