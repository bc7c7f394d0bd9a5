"""`cloudbrain bench generate`: write CloudBrain-Bench splits (JSONL), split_stats.json and the sample schema."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from benchmark.generator import DEFAULT_SEED, STATS_FILE, generate_splits
from benchmark.splits import SPLITS
from cli.common import EXIT_OK, CommandError

ALL = "all"


def register(subparsers: argparse._SubParsersAction) -> None:
    bench = subparsers.add_parser("bench", help="CloudBrain-Bench: generate the benchmark splits")
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
    p.set_defaults(run=run)


def _split_names(value: str) -> list[str]:
    if value == ALL:
        return list(SPLITS)
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in SPLITS]
    if unknown or not names:
        raise CommandError(
            f"unknown split {', '.join(unknown) or repr(value)}; choose from {', '.join(SPLITS)} or {ALL}"
        )
    return names


def _progress(split: str, done: int, total: int) -> None:
    if done == total or done % 25 == 0:
        sys.stderr.write(f"\r{split}: {done}/{total}")
        if done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    names = _split_names(args.split)
    if args.workers < 1:
        raise CommandError("--workers must be at least 1")
    if args.limit is not None and args.limit < 1:
        raise CommandError("--limit must be at least 1")
    out = Path(args.out)
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
        print(f"{name}: {overall['splits'][name]} samples in {seconds:.1f} s ({outcome['cpu_sec'][name]:.1f} s CPU)")
    cpu = sum(outcome["cpu_sec"].values())
    print(
        f"{overall['num_samples']} samples in {total:.1f} s with {args.workers} worker(s), {cpu:.1f} s CPU "
        f"({cpu / args.workers:.1f} s on {args.workers} idle cores); "
        f"SAT rate {overall['sat_rate']:.3f}, UNSAT/AMBIGUOUS {overall['unsat_or_ambiguous_rate']:.3f}; "
        f"stats in {out / STATS_FILE}"
    )
    return EXIT_OK
