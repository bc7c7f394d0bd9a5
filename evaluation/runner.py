"""`cloudbrain bench run`: every (method, model, sample, repeat) of a benchmark run, in headless worker processes,
judged independently and stored so that the run can be killed and resumed (evaluation/store.py).

Workers are local processes or, with `engine="ray"`, the actors of a Ray cluster (evaluation/engines.py).
Each worker has its own SQLite checkpoint file (`checkpoints/worker-<pid>.sqlite`: one SQLite saver per
process) and a fresh thread id per run. The safety memory is read as a frozen snapshot: runs retrieve past repair
cases but store none, so a result never depends on which runs another worker happened to finish first; the cases
a run would have stored are counted in its trace. Only the main process writes results.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import traceback
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field
from tqdm import tqdm

from benchmark.checks import REFUSAL_REASON, is_fleet_sample
from evaluation import store
from evaluation.engines import EngineName, WorkerDied, open_engine
from evaluation.judge import (
    DEFAULT_STRESS_SEEDS,
    Judgement,
    StressLevel,
    decision_places,
    judge_sample,
    sample_checks,
)
from evaluation.methods import get_method
from evaluation.methods.base import Budget, MethodRun, MethodSetup, MethodTask, model_kind
from evaluation.metrics import paraphrase_consistency, summarize
from evaluation.records import CANONICAL, FleetRun, RunRecord, ToolCall
from evaluation.statistics import group_by
from graph.checkpoint import open_checkpointer
from ir.decision import Decision
from ir.plan_execution import FLOWS
from memory.access import open_memory, open_snapshot
from memory.cases import CaseHit, RepairCase
from memory.store import RuleHit
from models.base import SHARED_CACHE
from nodes.context import RepairMemory
from tools.catalog import default_registry
from tools.rules import RULE_IDS
from tools.world import World, parse_world

CHECKPOINT_DIR = "checkpoints"
RESPONSES_FILE = "responses.sqlite"  # CHECKPOINT_DIR/responses.sqlite: model answers the workers share
MEMORY_SNAPSHOT_PREFIX = "memory-"  # CHECKPOINT_DIR/memory-<pid>: a worker's copy of the safety memory


class BenchConfig(BaseModel):
    """What a benchmark run is; stored beside the results (config.json) and checked on resume."""

    samples: str = Field(description="the split's JSONL file")
    methods: list[str]
    models: list[str]
    repeats: int = Field(default=1, ge=1)
    limit: int | None = Field(default=None, ge=1)
    language: str = Field(default="en", description="instruction language: en or zh")
    budget: Budget = Field(default_factory=Budget)
    stress_seeds: list[int] = Field(default_factory=lambda: list(DEFAULT_STRESS_SEEDS))
    stress_level: StressLevel = "medium"
    memory_path: str | None = Field(default=None, description="safety memory folder read (frozen) by the runs")
    memory_url: str | None = Field(
        default=None, description="Qdrant server read (frozen) by the runs instead of a folder: every machine sees it"
    )
    checkpointer: str | None = Field(
        default=None,
        description="postgres:// URL every worker checkpoints to; None = one SQLite file per worker under OUT",
    )
    base_url: str | None = None
    structured_output: str = Field(
        default="auto", description="openai:<model>: how the server gets the schema; auto probes it once per server"
    )
    ir_format: str = Field(default="full", description="openai:<model>: what the server writes, the full IR or slots")


@dataclass(frozen=True)
class Job:
    run_key: str
    method: str
    model: str
    repeat: int
    sample: dict[str, Any]
    variant: str | None = None  # CANONICAL: the run reads the sample's canonical wording instead of its request


def load_samples(path: str | Path, limit: int | None = None) -> list[dict[str, Any]]:
    samples = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                samples.append(json.loads(line))
                if limit is not None and len(samples) >= limit:
                    break
    return samples


def plan_jobs(config: BenchConfig, samples: Sequence[dict[str, Any]]) -> tuple[list[Job], list[str]]:
    """Every run of the config, and the (method, model) pairs skipped because the method cannot take the model."""
    jobs, skipped = [], []
    for model in config.models:
        for method_name in config.methods:
            if model_kind(model) not in get_method(method_name).model_kinds:
                skipped.append(f"{method_name} x {model}")
                continue
            for repeat in range(config.repeats):
                for sample in samples:
                    key = store.run_key(method_name, model, sample["sample_id"], repeat)
                    jobs.append(Job(key, method_name, model, repeat, sample))
                    # a free-form request is also run in its canonical wording: paraphrase consistency pairs the two
                    if _canonical_text(sample, config.language):
                        key = store.run_key(method_name, model, sample["sample_id"], repeat, CANONICAL)
                        jobs.append(Job(key, method_name, model, repeat, sample, CANONICAL))
    return jobs, skipped


def _canonical_text(sample: dict[str, Any], language: str) -> str | None:
    return (sample.get("instruction") or {}).get(f"canonical_{language}")


def request_text(job: Job, language: str) -> str:
    """What the run reads: the sample's request in `language` (English if it has none), or its canonical wording."""
    if job.variant == CANONICAL:
        return _canonical_text(job.sample, language) or ""
    instruction = job.sample["instruction"]
    return instruction.get(language) or instruction["en"]


# --- in the worker ------------------------------------------------------------------------------------------------


class FrozenMemory:
    """A read-only view of the safety memory: retrieval as usual, stores only counted (see the module docstring)."""

    def __init__(self, memory: RepairMemory):
        self._memory = memory
        self.proposed = 0

    def search_rules(self, query: str, k: int = 3) -> list[RuleHit]:
        return self._memory.search_rules(query, k)

    def search_cases(self, query_text: str, failure_type: str | None = None, k: int = 3) -> list[CaseHit]:
        return self._memory.search_cases(query_text, failure_type, k)

    def format_case_for_prompt(self, case: RepairCase | CaseHit) -> str:
        return self._memory.format_case_for_prompt(case)

    def store_cases(self, cases: Iterable[RepairCase]) -> int:
        self.proposed += len(list(cases))
        return 0


WIRED_VALUE = re.compile(r"<(?P<step>[^.<>]+)\.(?P<key>[^<>]+)>")  # a gold trace argument wired from a result

_WORKER: dict[str, Any] = {}


def _init_worker(
    out_dir: str, memory_path: str | None, memory_url: str | None, checkpointer: str | None, methods: Sequence[str]
) -> None:
    folder = Path(out_dir) / CHECKPOINT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    _WORKER["folder"] = folder
    _WORKER["checkpointer"] = open_checkpointer(checkpointer or folder / f"worker-{os.getpid()}.sqlite")
    # Identical prompts (the first round of every ablation of a sample) are answered once for all workers; a
    # cached answer is still charged to each run at its original cost (nodes.state.Usage).
    SHARED_CACHE.share_through(folder / RESPONSES_FILE)
    _WORKER["memory_at"] = {"path": memory_path, "url": memory_url}
    for name in methods:
        get_method(name).warm_up()


def _memory(method_name: str) -> FrozenMemory | None:
    if method_name == "cloudbrain_no_memory" or not method_name.startswith("cloudbrain"):
        return None
    if "memory" not in _WORKER:
        shared = open_memory(frozenset(), **_WORKER["memory_at"])
        # The worker's own copy: frozen anyway, and searched without opening the shared folder per access.
        folder = _WORKER["folder"] / f"{MEMORY_SNAPSHOT_PREFIX}{os.getpid()}"
        snapshot = open_snapshot(shared, folder) if shared else None
        _WORKER["memory"] = FrozenMemory(snapshot) if snapshot is not None else None
    return _WORKER["memory"]


def run_job(job: Job, config: BenchConfig) -> dict[str, Any]:
    """One run, judged: the outcome the main process stores. A method that raises still yields a stored run."""
    sample = job.sample
    world = parse_world(sample["world"], f"{sample['sample_id']}.world")
    task = MethodTask(
        sample_id=sample["sample_id"],
        instruction=request_text(job, config.language),
        world=world,
        scenario_type=sample.get("scenario_type", ""),
        gold_ir=sample.get("gold_ir") if job.model == "oracle" else None,
    )
    memory = _memory(job.method)
    proposed_before = memory.proposed if memory else 0
    setup = MethodSetup(
        model=job.model,
        budget=config.budget,
        base_url=config.base_url,
        structured_output=config.structured_output,
        ir_format=config.ir_format,
        checkpointer=_WORKER.get("checkpointer"),
        memory=memory,
        thread_id=f"bench-{uuid.uuid4().hex[:12]}",
        sim_seed=job.repeat,  # repeat k runs the agent's own gate on seed k; the judge's seeds stay held out
    )
    error = None
    started = time.perf_counter()
    try:
        run = get_method(job.method).run(task, setup)
    except Exception as exc:  # a crashing method is a result to record, not the end of the benchmark
        error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        run = MethodRun(decision=Decision(status="human_confirm", reason=f"method crashed: {error}"))
    # The run as it costs on its own: wall time plus what the shared response cache saved it (see graph Usage).
    total = time.perf_counter() - started + run.usage.cached_llm_latency_sec
    proposed = (memory.proposed - proposed_before) if memory else 0
    mode = None
    if job.model.startswith("openai:"):
        from models.openai_backend import settled_mode  # langchain-openai is heavy; only openai runs need it

        mode = settled_mode(job.model, config.base_url, config.structured_output)
    return outcome_of(
        job, config, world, run, thread_id=setup.thread_id, error=error, seconds=total, proposed=proposed, mode=mode
    )


def died_outcome(job: Job, config: BenchConfig, cause: str) -> dict[str, Any]:
    """The stored outcome of a run whose worker process died: no decision of the method's, an error that a
    resumed run retries (store.done_keys leaves it out)."""
    error = f"{store.WORKER_DIED}: {cause}"
    world = parse_world(job.sample["world"], f"{job.sample['sample_id']}.world")
    run = MethodRun(decision=Decision(status="human_confirm", reason=error))
    return outcome_of(job, config, world, run, thread_id=None, error=error, seconds=0.0, proposed=0)


def outcome_of(
    job: Job,
    config: BenchConfig,
    world: World,
    run: MethodRun,
    *,
    thread_id: str | None,
    error: str | None,
    seconds: float,
    proposed: int,
    mode: str | None = None,
) -> dict[str, Any]:
    """A run judged independently, as the rows and trace line the main process stores."""
    sample = job.sample
    checks = sample_checks(sample)  # read (or, for an old file, derived) once: judged and stored alike
    judgement = judge_sample(
        run.decision, sample, stress_seeds=config.stress_seeds, stress_level=config.stress_level, checks=checks
    )
    requirements = requirement_verdicts(judgement, error)
    calls = tool_calls(run)
    record = RunRecord(
        sample_id=sample["sample_id"],
        method=job.method,
        model=job.model,
        repeat=job.repeat,
        split=sample.get("split", ""),
        scenario_type=sample.get("scenario_type", ""),
        difficulty=sample.get("difficulty", ""),
        label=sample["label"],
        structured_output=mode,
        status=run.decision.status,
        judged_success=judgement.success,
        judged_violations=sorted({v.rule for v in judgement.violations}),
        right_place=judgement.right_place if run.decision.status == "execute" else None,
        stated_kept=judgement.stated_kept if run.decision.status == "execute" else None,
        checks=requirements,
        sample_checks=checks,
        pinned_uavs=list((sample.get("instruction") or {}).get("pinned_uavs") or []),
        places=decision_places(run.decision, world),
        pattern=(sample.get("instruction") or {}).get(f"pattern_{config.language}"),
        variant=job.variant,
        missing_information=list((sample.get("gold_decision") or {}).get("missing_information") or []),
        hallucinations=hallucinations(run, world),
        tool_calls=calls,
        expected_tools=[step["tool"] for step in sample.get("gold_tool_trace") or [] if "tool" in step],
        expected_tool_args=gold_tool_args(sample.get("gold_tool_trace") or []),
        ir=run.ir,
        gold_ir=sample.get("gold_ir"),
        repair_rounds=run.repair_rounds,
        success_round=run.success_round,
        corrections=run.repair_rounds if run.corrections is None else run.corrections,
        answered=run.answered and error is None,
        first_failing_stage=run.first_failing_stage,
        llm_latency_sec=min(run.usage.llm_latency_sec, seconds),
        tool_latency_sec=max(0.0, seconds - run.usage.llm_latency_sec),
        total_latency_sec=seconds,
        prompt_tokens=run.usage.prompt_tokens,
        completion_tokens=run.usage.completion_tokens,
        llm_calls=run.usage.llm_calls,
        fleet=fleet_run(judgement, sample),
    )
    decision = run.decision
    return {
        "run_key": job.run_key,
        "thread_id": thread_id,
        "error": error,
        "record": record.model_dump(mode="json"),
        "decision_row": {
            "status": decision.status,
            "uav_id": decision.uav_id,
            "waypoints": decision.waypoints,
            "reason": decision.reason,
            "claimed_verified": decision.verified,
            "judged_success": judgement.success,
            "judged_safe": judgement.safe,
            "right_place": judgement.right_place,
            "violations": [v.model_dump(mode="json") for v in judgement.violations],
            "checks": judgement.checks,
            "requirements": requirements,
        },
        "attempts": attempt_rows(run),
        "tool_calls": [
            {**c.model_dump(), "error_type": t.error_type, "latency_sec": t.latency_sec}
            for c, t in zip(calls, run.tool_calls)
        ],
        "trace": {
            "run_key": job.run_key,
            "thread_id": thread_id,
            "decision": decision.model_dump(mode="json"),
            "judgement": judgement.model_dump(mode="json"),
            "memory_cases_proposed": proposed,
            "method_trace": run.trace,
            "error": error,
        },
    }


def fleet_run(judgement: Judgement, sample: Mapping[str, Any]) -> FleetRun | None:
    """A run on a fleet sample against its gold team (the gold decision's members and makespan, and what the judge
    found the run's execute did); None on any other sample."""
    if not is_fleet_sample(sample):
        return None
    gold = sample.get("gold_decision") or {}
    team = (gold.get("team") or []) if gold.get("status") == "execute" else []
    arrivals = [m["waypoints"][-1][3] for m in team if m.get("waypoints")]
    gold_makespan = gold.get("eta_sec") or (max(arrivals) if arrivals else None)
    outcome = judgement.team
    members = outcome.members if outcome is not None else []
    return FleetRun(
        gold_makespan_sec=gold_makespan if team else None,
        gold_uavs=len({m["uav_id"] for m in team}) if team else None,
        makespan_sec=outcome.makespan_sec if outcome is not None else None,
        uavs_used=outcome.uavs_used if outcome is not None else None,
        members_flown=len(members),
        members_violating=sum(m.violations > 0 for m in members),
        member_violations=sum(m.violations for m in members),
    )


def requirement_verdicts(judgement: Judgement, error: str | None) -> dict[str, bool | None]:
    """The judge's verdict on each of the sample's checks; a run that crashed or whose worker died names no reason
    to refuse, whatever its error text happens to mention."""
    verdicts = dict(judgement.requirements)
    if error is not None and REFUSAL_REASON in verdicts:
        verdicts[REFUSAL_REASON] = False
    return verdicts


def tool_calls(run: MethodRun) -> list[ToolCall]:
    """Each call with its dependency check: every required input (ir.plan_execution.FLOWS) came from an earlier
    successful call of its producer, or the method passed it itself."""
    produced: set[str] = set()
    calls = []
    for call in run.tool_calls:
        needs = [f for f in FLOWS if f.consumer == call.tool and f.required]
        given = call.args or {}
        dependency_ok = all(f.producer in produced or f.arg in given for f in needs)
        calls.append(ToolCall(tool=call.tool, ok=call.ok, dependency_ok=dependency_ok, args=call.args))
        if call.ok:
            produced.add(call.tool)
    return calls


def gold_tool_args(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each gold step's arguments with its wired values ("<step_id.key>") replaced by that earlier step's result."""
    results = {step.get("step_id"): step.get("result") or {} for step in trace}

    def resolved(value: Any) -> Any:
        wired = WIRED_VALUE.fullmatch(value) if isinstance(value, str) else None
        if wired is None:
            return value
        return results.get(wired["step"], {}).get(wired["key"], value)

    return [{k: resolved(v) for k, v in (step.get("args") or {}).items()} for step in trace if "tool" in step]


def hallucinations(run: MethodRun, world: World) -> int:
    """Unknown entity, UAV, tool and rule ids in the method's IR and decision."""
    known = set(world.entity_index) | set(world.uav_index) | set(world.zone_index) | set(world.corridor_index)
    unknown = 0
    ir = run.ir or {}
    entities = ir.get("entities") or {}
    for value in entities.values():
        for ref in [value] if isinstance(value, str) else value if isinstance(value, list) else []:
            unknown += isinstance(ref, str) and ref not in known
    tools = default_registry()
    unknown += sum(1 for step in ir.get("tool_plan") or [] if isinstance(step, dict) and step.get("tool") not in tools)
    rules = (ir.get("verification_specs") or {}).get("program_rules") or []
    unknown += sum(1 for rule in rules if rule not in RULE_IDS)
    unknown += sum(1 for call in run.tool_calls if call.tool not in tools)
    if run.decision.uav_id is not None and run.decision.uav_id not in world.uav_index:
        unknown += 1
    return unknown


def attempt_rows(run: MethodRun) -> list[dict[str, Any]]:
    rows = []
    for attempt in run.trace.get("attempts") or []:
        failure = attempt.get("failure") or {}
        counterexample = failure.get("counterexample") or {}
        rows.append(
            {
                "round": attempt.get("round", len(rows)),
                "failure_stage": counterexample.get("failure_stage"),
                "error_type": failure.get("error_type"),
                "violated_rule": counterexample.get("violated_rule"),
                "message": failure.get("message"),
            }
        )
    return rows


# --- in the main process -----------------------------------------------------------------------------------------


class BenchOutcome(BaseModel):
    out_dir: str
    planned: int
    already_done: int
    ran: int
    skipped_pairs: list[str]
    dropped_trace_lines: int
    seconds: float


def run_bench(
    config: BenchConfig,
    out_dir: Path,
    *,
    workers: int = 1,
    progress: bool = True,
    engine: EngineName = "process",
    ray_address: str | None = None,
) -> BenchOutcome:
    """Run what `config` plans and `out_dir` does not hold yet, on `workers` local processes or Ray actors."""
    out_dir.mkdir(parents=True, exist_ok=True)
    _check_config(config, out_dir)
    samples = load_samples(config.samples, config.limit)
    jobs, skipped = plan_jobs(config, samples)
    db = store.open_db(out_dir)
    done = store.done_keys(db)
    dropped = store.compact_traces(out_dir, done)
    todo = [job for job in jobs if job.run_key not in done]
    for stale in (out_dir / CHECKPOINT_DIR).glob(MEMORY_SNAPSHOT_PREFIX + "*"):  # earlier workers' copies
        shutil.rmtree(stale, ignore_errors=True)
    started = time.perf_counter()
    bar = tqdm(total=len(jobs), initial=len(jobs) - len(todo), unit="run", disable=not progress, dynamic_ncols=True)
    initargs = (str(out_dir), config.memory_path, config.memory_url, config.checkpointer, config.methods)
    with open_engine(engine, workers, _init_worker, initargs, ray_address) as map_unordered:
        for result in map_unordered(partial(run_job, config=config), todo):
            outcome = died_outcome(result.item, config, result.cause) if isinstance(result, WorkerDied) else result
            store.append_trace(out_dir, outcome["trace"])
            store.write_run(db, outcome)
            bar.update(1)
            bar.set_postfix_str(outcome["run_key"].rsplit("|", 2)[0], refresh=False)
    bar.close()
    write_metrics(db)
    return BenchOutcome(
        out_dir=str(out_dir),
        planned=len(jobs),
        already_done=len(jobs) - len(todo),
        ran=len(todo),
        skipped_pairs=skipped,
        dropped_trace_lines=dropped,
        seconds=round(time.perf_counter() - started, 2),
    )


CONFIG_FILE = "config.json"


def samples_file(out_dir: Path) -> Path:
    """The split file a results folder's runs read (its config's `samples`, relative to the folder if relative)."""
    samples = Path(json.loads((Path(out_dir) / CONFIG_FILE).read_text(encoding="utf-8"))["samples"])
    return samples if samples.is_absolute() else Path(out_dir) / samples


class ConfigMismatchError(ValueError):
    pass


def _check_config(config: BenchConfig, out_dir: Path) -> None:
    """A resumed run must be the same run: its stored config may only grow (more methods, models or repeats)."""
    path = out_dir / CONFIG_FILE
    if path.exists():
        stored = BenchConfig.model_validate_json(path.read_text(encoding="utf-8"))
        fixed = ("samples", "limit", "language", "budget", "stress_seeds", "stress_level")
        changed = [name for name in fixed if getattr(stored, name) != getattr(config, name)]
        if changed:
            raise ConfigMismatchError(
                f"{out_dir} holds a run with other {', '.join(changed)}; use another --out or the same settings"
            )
    path.write_text(config.model_dump_json(indent=2), encoding="utf-8")


def write_metrics(db: Any) -> None:
    rows = db["runs"].rows_where(order_by="run_key", select="record") if db["runs"].exists() else []
    stored = [RunRecord.model_validate_json(row["record"]) for row in rows]  # in key order: sums are reproducible
    records = [r for r in stored if r.variant is None]
    canonical = group_by([r for r in stored if r.variant == CANONICAL], lambda r: (r.method, r.model))
    rows = []
    for (method, model), group in group_by(records, lambda r: (r.method, r.model)).items():
        summary = summarize(group)
        if (method, model) in canonical:
            summary["paraphrase_consistency"] = paraphrase_consistency(group, canonical[(method, model)])
        for metric, value in store.flatten_metrics(summary):
            rows.append({"method": method, "model": model, "metric": metric, "value": value})
    store.write_metrics(db, rows)
