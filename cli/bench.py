"""`cloudbrain bench`: generate the splits, list the compared methods, run them headless, and report.

- `generate`: CloudBrain-Bench splits (JSONL), split_stats.json and the sample schema;
- `methods`: the registered methods, one line each;
- `run`: every method x model x sample x repeat in worker processes, judged, resumable (evaluation/runner.py);
- `report`: report.md with tables, statistics and figures from a run folder (evaluation/report.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from cli.common import EXIT_OK, CommandError, add_json_flag, add_server_format_options, emit
from graph.checkpoint import CheckpointerError, is_postgres_url, open_checkpointer

ALL = "all"


# The commands this module registers, with their one-line help (cli/main.py lists them without importing more)
COMMANDS = {
    "bench": "CloudBrain-Bench: generate splits, run methods, report",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    from benchmark.generator import DEFAULT_SEED

    bench = subparsers.add_parser("bench", help=COMMANDS["bench"])
    commands = bench.add_subparsers(dest="bench_command", required=True, metavar="BENCH_COMMAND")
    p = commands.add_parser("generate", help="generate splits deterministically from a seed")
    p.add_argument("--split", required=True, help="a split name, a comma-separated list, or 'all'")
    p.add_argument("--out", required=True, help="output folder (created if missing)")
    p.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help="master seed (default: %(default)s)",
    )
    p.add_argument("--workers", type=int, default=2, help="worker processes (default: %(default)s)")
    p.add_argument(
        "--limit",
        type=int,
        default=None,
        help="only the first N samples of each split (quick runs)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    add_json_flag(p)
    p.set_defaults(run=run)
    _register_methods(commands)
    _register_run(commands)
    _register_report(commands)


def _split_names(value: str) -> list[str]:
    from benchmark.ops_streams import OPS_SPLITS
    from benchmark.splits import SPLITS

    if value == ALL:
        return list(SPLITS)
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in SPLITS and name not in OPS_SPLITS]
    if unknown or not names:
        raise CommandError(
            f"unknown split {', '.join(unknown) or repr(value)}; "
            f"choose from {', '.join([*SPLITS, *OPS_SPLITS])} or {ALL}"
        )
    return names


def _progress(split: str, done: int, total: int) -> None:
    if done == total or done % 25 == 0:
        sys.stderr.write(f"\r{split}: {done}/{total}")
        if done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    from benchmark.generator import STATS_FILE, generate_splits
    from benchmark.ops_streams import OPS_SPLITS

    names = _split_names(args.split)
    if args.workers < 1:
        raise CommandError("--workers must be at least 1")
    if args.limit is not None and args.limit < 1:
        raise CommandError("--limit must be at least 1")
    out = Path(args.out)
    say = _silent if args.json else print  # --json: one summary object at the end instead of the lines
    summary: dict = {"out": str(out), "seed": args.seed, "splits": {}}
    for name in [n for n in names if n in OPS_SPLITS]:  # streams, each with its gold run through operations mode
        from ops.bench import generate_ops_split

        started = time.perf_counter()
        path = generate_ops_split(name, out, args.seed, args.limit)
        streams, seconds = sum(1 for _ in open(path, encoding="utf-8")), time.perf_counter() - started
        summary["splits"][name] = {"file": str(path), "streams": streams, "seconds": round(seconds, 2)}
        say(f"{name}: {streams} streams in {seconds:.1f} s")
    names = [n for n in names if n not in OPS_SPLITS]
    if not names:
        if args.json:
            emit(summary, True)
        return EXIT_OK
    started = time.perf_counter()
    outcome = generate_splits(
        names,
        out,
        master_seed=args.seed,
        workers=args.workers,
        limit=args.limit,
        progress=None if args.quiet else _progress,
    )
    total = time.perf_counter() - started
    overall = outcome["stats"]["overall"]
    for name, seconds in outcome["timings_sec"].items():
        summary["splits"][name] = {
            "file": str(out / f"{name}.jsonl"),
            "samples": overall["splits"][name],
            "seconds": round(seconds, 2),
            "cpu_sec": round(outcome["cpu_sec"][name], 2),
        }
        say(f"{name}: {overall['splits'][name]} samples in {seconds:.1f} s ({outcome['cpu_sec'][name]:.1f} s CPU)")
    cpu = sum(outcome["cpu_sec"].values())
    summary.update(
        samples=overall["num_samples"],
        seconds=round(total, 2),
        sat_rate=overall["sat_rate"],
        unsat_or_ambiguous_rate=overall["unsat_or_ambiguous_rate"],
        unknown_rate=overall["unknown_rate"],
        stats=str(out / STATS_FILE),
    )
    say(
        f"{overall['num_samples']} samples in {total:.1f} s with {args.workers} worker(s), {cpu:.1f} s CPU "
        f"({cpu / args.workers:.1f} s on {args.workers} idle cores); "
        f"SAT rate {overall['sat_rate']:.3f}, UNSAT/AMBIGUOUS {overall['unsat_or_ambiguous_rate']:.3f}, "
        f"UNKNOWN {overall['unknown_rate']:.3f}; "
        f"stats in {out / STATS_FILE}"
    )
    if args.json:
        emit(summary, True)
    return EXIT_OK


def _silent(*_args: object) -> None:
    """`print` for a command run with --json: its text lines give way to the one JSON object."""


def _register_methods(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("methods", help="list the compared methods, one line each")
    add_json_flag(p)
    p.set_defaults(run=list_methods)


def list_methods(args: argparse.Namespace) -> int:
    from evaluation.methods import METHOD_NAMES, get_method

    width = max(map(len, METHOD_NAMES))
    methods = [(name, get_method(name)) for name in METHOD_NAMES]
    listed = [{"name": name, "summary": m.summary, "models": sorted(m.model_kinds)} for name, m in methods]
    text = "\n".join(f"{m['name']:<{width}}  {m['summary']}  [models: {', '.join(m['models'])}]" for m in listed)
    emit({"methods": listed}, args.json, text)
    return EXIT_OK


def _register_run(commands: argparse._SubParsersAction) -> None:
    from evaluation.engines import ENGINES
    from evaluation.methods.base import Budget

    p = commands.add_parser("run", help="run methods on a split headless, judged independently; resumable")
    p.add_argument("--split", required=True, help="split name; its samples are read from --data")
    p.add_argument(
        "--data", default=None, help="folder with <split>.jsonl (default: OUT/data, generated there if missing)"
    )
    p.add_argument("--method", required=True, help="method name(s), comma-separated, or 'all' (see bench methods)")
    p.add_argument("--model", default="local", help="model(s), comma-separated: local, rules, oracle, openai:<m>")
    p.add_argument("--base-url", default=None, help="OpenAI-compatible server for openai:<model>")
    add_server_format_options(p)
    p.add_argument("--limit", type=int, default=None, help="only the first N samples")
    p.add_argument("--repeats", type=int, default=1, help="runs per sample and method (pass^k needs k)")
    p.add_argument("--workers", type=int, default=2, help="worker processes or Ray actors (default: %(default)s)")
    p.add_argument(
        "--engine", choices=ENGINES, default="process", help="local worker processes, or Ray actors (default: process)"
    )
    p.add_argument(
        "--ray-address",
        default=None,
        help="Ray cluster to join ('auto' or ray://host:10001); default: a local cluster of --workers CPUs",
    )
    p.add_argument("--language", choices=("en", "zh"), default="en", help="instruction language")
    p.add_argument("--max-repairs", type=int, default=Budget().max_repairs, help="K for the methods that repair")
    p.add_argument(
        "--max-llm-calls", type=int, default=Budget().max_llm_calls, help="model calls per task, every method"
    )
    p.add_argument(
        "--max-tool-calls", type=int, default=Budget().max_tool_calls, help="tool calls per task, every method"
    )
    p.add_argument(
        "--max-new-tokens", type=int, default=Budget().max_new_tokens, help="new tokens per model call, every method"
    )
    p.add_argument(
        "--max-prompt-tokens",
        type=int,
        default=None,
        help="prompt tokens per call; sizes the world view the baselines are shown (default: the local context)",
    )
    p.add_argument(
        "--plan-samples",
        type=int,
        default=Budget().plan_samples,
        help="answers per sampling call: tree_planner's N plans (default: the paper's %(default)s)",
    )
    p.add_argument(
        "--memory-path", default=None, help="safety memory folder the runs read (default: .cloudbrain/memory)"
    )
    p.add_argument("--qdrant-url", default=None, help="Qdrant server the runs read instead of --memory-path")
    p.add_argument(
        "--checkpointer",
        default=None,
        help="postgres://user@host/db the workers share for checkpoints (default: one SQLite file per worker)",
    )
    p.add_argument("--out", required=True, help="results folder; re-running with it resumes")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_json_flag(p)
    p.set_defaults(run=run_benchmark)


def _samples_file(args: argparse.Namespace) -> Path:
    from benchmark.generator import DEFAULT_SEED, generate_splits

    data = Path(args.data) if args.data else Path(args.out) / "data"
    path = data / f"{args.split}.jsonl"
    if not path.exists():
        if args.data:
            raise CommandError(
                f"no {path}: generate it with `cloudbrain bench generate --split {args.split} --out {data}`"
            )
        generate_splits([args.split], data, master_seed=DEFAULT_SEED, workers=args.workers, limit=args.limit)
    return path


def run_benchmark(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from benchmark.ops_streams import OPS_SPLITS
    from benchmark.splits import SPLITS
    from evaluation.engines import EngineError
    from evaluation.methods import UnknownMethodError, parse_methods
    from evaluation.methods.base import Budget
    from evaluation.runner import BenchConfig, ConfigMismatchError, run_bench
    from evaluation.store import DB_FILE, TRACES_FILE

    if args.split in OPS_SPLITS:
        return _run_ops(args)
    if args.split not in SPLITS:
        raise CommandError(f"unknown split {args.split!r}; choose from {', '.join([*SPLITS, *OPS_SPLITS])}")
    for flag in ("workers", "repeats"):
        if getattr(args, flag) < 1:
            raise CommandError(f"--{flag} must be at least 1")
    if args.checkpointer:
        if not is_postgres_url(args.checkpointer):
            raise CommandError("--checkpointer takes a postgres:// URL (SQLite files are one per worker already)")
        try:
            open_checkpointer(args.checkpointer)  # reachable, tables created: the workers then only connect
        except CheckpointerError as exc:
            raise CommandError(str(exc)) from None
    try:
        methods = parse_methods(args.method)
        config = BenchConfig(
            samples=str(_samples_file(args)),
            methods=methods,
            models=[m.strip() for m in args.model.split(",") if m.strip()],
            repeats=args.repeats,
            limit=args.limit,
            language=args.language,
            budget=Budget(
                max_repairs=args.max_repairs,
                max_llm_calls=args.max_llm_calls,
                max_tool_calls=args.max_tool_calls,
                max_new_tokens=args.max_new_tokens,
                max_prompt_tokens=args.max_prompt_tokens,
                plan_samples=args.plan_samples,
            ),
            memory_path=args.memory_path,
            memory_url=args.qdrant_url,
            checkpointer=args.checkpointer,
            base_url=args.base_url,
            structured_output=args.structured_output,
            ir_format=args.ir_format,
        )
        outcome = run_bench(
            config,
            Path(args.out),
            workers=args.workers,
            progress=not args.quiet,
            engine=args.engine,
            ray_address=args.ray_address,
        )
    except (UnknownMethodError, ConfigMismatchError, ValidationError, EngineError) as exc:
        raise CommandError(str(exc)) from exc
    results, traces = Path(outcome.out_dir) / DB_FILE, Path(outcome.out_dir) / TRACES_FILE
    if args.json:
        emit({**outcome.model_dump(mode="json"), "samples": config.samples, "results": str(results),
              "traces": str(traces)}, True)  # fmt: skip
        return EXIT_OK
    for pair in outcome.skipped_pairs:
        print(f"skipped {pair}: the method does not take that model (`bench methods` lists the models each takes)")
    print(
        f"{outcome.ran} run(s) in {outcome.seconds:.1f} s ({outcome.already_done} of {outcome.planned} already done); "
        f"results in {results}, traces in {traces}"
    )
    return EXIT_OK


def _run_ops(args: argparse.Namespace) -> int:
    """An ops split: every stream through operations mode (the method is CloudBrain's own), one ledger a stream."""
    from benchmark.generator import DEFAULT_SEED
    from ops.bench import RESULTS_FILE, generate_ops_split, run_ops_split

    if args.method not in (ALL, "cloudbrain_full"):
        raise CommandError("the ops split runs CloudBrain's operations mode: --method cloudbrain_full (or all)")
    data = Path(args.data) if args.data else Path(args.out) / "data"
    samples = data / f"{args.split}.jsonl"
    if not samples.exists():
        if args.data:
            raise CommandError(f"no {samples}: generate it with `cloudbrain bench generate --split {args.split}`")
        generate_ops_split(args.split, data, DEFAULT_SEED, args.limit)
    runs = []
    for model in [m.strip() for m in args.model.split(",") if m.strip()]:
        results = run_ops_split(samples, model, Path(args.out) / model, args.limit)
        runs.append(results)
        overall = results["overall"]
        (_silent if args.json else print)(
            f"{model}: {overall['requests']} requests in {overall['streams']} streams, served "
            f"{overall['served_share']:.3f}, conflicting approved pairs {overall['conflicting_intent_pairs']}, "
            f"pre-emptions {overall['pre_emptions']}, median latency {overall['median_latency_sec']} s"
        )
    (Path(args.out) / RESULTS_FILE).write_text(json.dumps({"runs": runs}, indent=1) + "\n", encoding="utf-8")
    if args.json:
        emit({"samples": str(samples), "results": str(Path(args.out) / RESULTS_FILE),
              "overall": {run["model"]: run["overall"] for run in runs}}, True)  # fmt: skip
    return EXIT_OK


def _register_report(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("report", help="write report.md (tables, statistics, figures) for a run folder")
    p.add_argument("out", help="a `bench run` results folder")
    p.add_argument("--compare", default=None, help="another results folder to compare with")
    add_json_flag(p)
    p.set_defaults(run=report)


def report(args: argparse.Namespace) -> int:
    from evaluation.records import CANONICAL
    from evaluation.runner import CONFIG_FILE
    from evaluation.store import load_records
    from ops.bench import RESULTS_FILE, ops_report

    ops_results = Path(args.out) / RESULTS_FILE
    if ops_results.exists():  # an ops split's run: its own section
        runs = json.loads(ops_results.read_text(encoding="utf-8"))["runs"]
        path = Path(args.out) / "report.md"
        path.write_text("# CloudBrain-Bench: operations mode\n\n" + "\n".join(map(ops_report, runs)), encoding="utf-8")
        emit({"runs": len(runs), "report": str(path)}, args.json, f"{len(runs)} ops run(s) reported in {path}")
        return EXIT_OK
    try:
        records = load_records(Path(args.out))
        canonical = load_records(Path(args.out), variant=CANONICAL)
        compare = load_records(Path(args.compare)) if args.compare else None
    except FileNotFoundError as exc:
        raise CommandError(str(exc)) from exc
    config_path = Path(args.out) / CONFIG_FILE
    meta = json.loads(config_path.read_text(encoding="utf-8")) if config_path.exists() else {}
    from evaluation.report import (  # matplotlib loads only for a report
        check_rows,
        paraphrase_rows,
        percent,
        stage_rows,
        unknown_rows,
        write_report,
    )

    path = write_report(records, Path(args.out), compare=compare, meta=meta, canonical=canonical)
    rows = paraphrase_rows(records, canonical)
    lines = [
        f"{row['method']} / {row['model']}: TSR {percent(row['tsr'])}%, paraphrase consistency "
        f"{percent(row['consistency'])}% over {row['pairs']} free-form / canonical pair(s)"
        for row in rows
    ]
    summary = {
        "runs": len(records),
        "report": str(path),
        "figures": str(path.parent / "figures"),
        "paraphrase": rows,
        "checks": check_rows(records)[1],
        "stages": stage_rows(records),
        "unknown": unknown_rows(records),
    }
    emit(summary, args.json, "\n".join([*lines, f"{len(records)} run(s) reported in {path}"]))
    return EXIT_OK
