"""Whole-process wall time of the terminal commands a user types, against a baseline commit, in the same run.

Each command runs as a fresh process (`python -m cli.main ...`, so the interpreter's start, the imports and the
argument parser are counted, as a user meets them), `--runs` times per code version, alternating the two versions
so that other load on the machine falls on both alike. The baseline is a commit checked out in a temporary git
worktree (`--baseline`, default HEAD: the work tree's uncommitted change against its last commit) and run with the
same interpreter and packages. Each version first runs the demo request once, untimed, into its own checkpoint
file, so `trace`, `checkpoints`, `certify` and `export` read a thread of their own code's making, then every
command once, untimed (bytecode compiled, files cached), as a user's second call would find them.

The work tree is timed twice: on its own (CLOUDBRAIN_WARM=0), and with its `cloudbrain warm` running (started by
this script on a socket of its own; each command is then a fork of a process that has the modules imported).

Prints a markdown table: per command, min / median / max seconds for the baseline, the work tree and the work tree
through its warm process, and the ratios of the medians to the baseline's (below 1 is faster). The last line is
`median_ratio_worst=<x>`: the largest ratio of the work tree on its own.

A `--json` run of the local model also reports its own decoding time (usage.llm_latency_sec) and the rest of the
process apart, min / median / max.

Run: .venv/bin/python -m evaluation.perf.cli_latency [--runs 5] [--baseline REV] [--only help,trace]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORLD = "examples/downtown.json"
DEMO = (
    "Send a drone with the defibrillator (1 kg) from hospital_A to accident_site_3 within 10 minutes, keep away from "
    "the school and the temporary no-fly zone."
)
START = "2030-01-01T09:00:00Z"  # an export's clock: far enough ahead that the intent has not ended


# the demo request on the version's own store and memory folder (the `run` rows, and the thread `trace` reads)
DEMO_RUN = ("--world", WORLD, "--instruction", DEMO, "--db", "{db}", "--memory-path", "{memory}")


@dataclass(frozen=True)
class Command:
    name: str
    argv: tuple[str, ...]  # {db}, {thread}, {out} and {memory} are filled per version
    model_time: bool = False  # a `--json` run: its usage.llm_latency_sec (the model's own decoding) is reported too


COMMANDS = (
    Command("help", ("--help",)),
    Command("bad argument", ("run", "--no-such-flag")),
    Command("graph", ("graph",)),
    Command("trace", ("trace", "--db", "{db}", "--thread", "{thread}")),
    Command("checkpoints", ("checkpoints", "--db", "{db}", "--thread", "{thread}")),
    Command("certify", ("certify", "--db", "{db}", "--thread", "{thread}", "--world", WORLD)),
    Command(
        "export f3548",
        (
            "export",
            "--db",
            "{db}",
            "--thread",
            "{thread}",
            "--world",
            WORLD,
            "--format",
            "f3548",
            "--start",
            START,
            "--out",
            "{out}/intent.json",
        ),
    ),  # fmt: skip
    Command("zones export", ("zones", "export", "--world", WORLD, "--format", "geojson", "--out", "{out}/zones.json")),
    Command("run --model rules", ("run", "--model", "rules", *DEMO_RUN)),
    Command("run --model local", ("run", "--model", "local", *DEMO_RUN, "--json"), model_time=True),
)


@dataclass
class Version:
    label: str
    tree: Path
    db: Path
    out: Path
    thread: str = "latency-demo"
    extra_env: dict[str, str] | None = None  # the work tree with and without its warm process

    def argv(self, command: Command) -> list[str]:
        # each version's own memory folder, filled by its own runs: a checkout's .cloudbrain/memory would give the
        # two versions different repair cases, so different prompts for a model
        fill = {"db": str(self.db), "thread": self.thread, "out": str(self.out), "memory": str(self.out / "memory")}
        return [sys.executable, "-m", "cli.main", *(arg.format(**fill) for arg in command.argv)]

    def environment(self) -> dict[str, str]:
        # the version's own code first on the path: the interpreter and its packages are shared
        return {**os.environ, "PYTHONPATH": str(self.tree), **(self.extra_env or {})}

    def run(self, argv: list[str]) -> tuple[float, float | None]:
        """(wall seconds, the model's own seconds when the command printed a run's JSON)."""
        began = time.perf_counter()
        done = subprocess.run(argv, cwd=self.tree, env=self.environment(), capture_output=True, text=True, check=False)
        wall = time.perf_counter() - began
        try:
            return wall, float(json.loads(done.stdout)["usage"]["llm_latency_sec"])
        except (ValueError, KeyError, TypeError):
            return wall, None


def _prepare(version: Version) -> None:
    """The demo's thread for the read-only commands, made by this version's own code (untimed)."""
    argv = [*version.argv(Command("demo", ("run", "--model", "rules", *DEMO_RUN))), "--thread", version.thread]
    subprocess.run(argv, cwd=version.tree, env=version.environment(), stdout=subprocess.DEVNULL, check=False)


def _start_warm(version: Version) -> subprocess.Popen:
    """The work tree's `cloudbrain warm` on the run's own socket; returns once it listens."""
    server = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "warm", "--idle-minutes", "60"],
        cwd=version.tree,
        env=version.environment(),
        stderr=subprocess.PIPE,
        text=True,
    )
    line = server.stderr.readline() if server.stderr else ""
    if "listening on" not in line:
        server.kill()
        raise SystemExit(f"cloudbrain warm did not start: {line.strip()}")
    return server


def _stats(values: list[float]) -> str:
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", default="HEAD", help="the commit to compare against (default: HEAD)")
    parser.add_argument("--only", default="", help="comma-separated command names (default: all)")
    args = parser.parse_args(argv)
    chosen = [c for c in COMMANDS if not args.only or c.name in args.only.split(",")]
    if not chosen:
        parser.error(f"--only names none of: {', '.join(c.name for c in COMMANDS)}")

    with tempfile.TemporaryDirectory(prefix="cli-latency-") as scratch:
        work = Path(scratch)
        baseline_tree = work / "baseline"
        subprocess.run(["git", "worktree", "add", "--detach", "--quiet", str(baseline_tree), args.baseline], cwd=ROOT,
                       check=True)  # fmt: skip
        warm_socket = work / "warm.sock"
        warm_server = None
        try:
            versions = []
            for label, tree, env in (
                (f"baseline {args.baseline}", baseline_tree, None),
                ("work tree", ROOT, {"CLOUDBRAIN_WARM": "0"}),
                ("work tree, warm", ROOT, {"CLOUDBRAIN_WARM_SOCKET": str(warm_socket)}),
            ):
                out = work / label.replace(",", "").replace(" ", "-")
                out.mkdir(exist_ok=True)
                versions.append(Version(label, tree, out / "runs.sqlite", out, extra_env=env))
            warm_server = _start_warm(versions[2])
            for version in versions:
                _prepare(version)
                for command in chosen:  # untimed: each version's bytecode compiled, its files in the page cache
                    version.run(version.argv(command))
            times: dict[tuple[str, str], list[float]] = {}
            model_times: dict[tuple[str, str], list[float]] = {}
            for _ in range(args.runs):
                for command in chosen:
                    for version in versions:
                        wall, model = version.run(version.argv(command))
                        times.setdefault((command.name, version.label), []).append(wall)
                        if command.model_time and model is not None:
                            model_times.setdefault((command.name, version.label), []).append(model)
        finally:
            if warm_server is not None:
                warm_server.terminate()
                warm_server.wait(timeout=60)
            subprocess.run(["git", "worktree", "remove", "--force", str(baseline_tree)], cwd=ROOT, check=False)

    base, ours, warm = (version.label for version in versions)
    print(
        f"| command | {base}: min / median / max (s) | {ours}: min / median / max (s) | ratio | "
        f"{warm} (`cloudbrain warm` running): min / median / max (s) | ratio |"
    )
    print("|---|---|---|---|---|---|")
    ratios = []
    for command in chosen:
        before, after, warmed = (times[(command.name, label)] for label in (base, ours, warm))
        ratio = statistics.median(after) / statistics.median(before)
        ratios.append(ratio)
        print(
            f"| `{command.name}` | {_stats(before)} | {_stats(after)} | {ratio:.2f} | {_stats(warmed)} | "
            f"{statistics.median(warmed) / statistics.median(before):.2f} |"
        )
    for command in (c for c in chosen if c.model_time):
        for label in (base, ours, warm):
            walls, models = times[(command.name, label)], model_times.get((command.name, label), [])
            if models and len(models) == len(walls):
                rest = [w - m for w, m in zip(walls, models, strict=True)]
                print(
                    f"\n`{command.name}`, {label}: the model's own time (usage.llm_latency_sec) {_stats(models)} s; "
                    f"the rest of the process {_stats(rest)} s"
                )
    print(f"\n{args.runs} run(s) each, whole processes, {os.cpu_count()} CPU(s); python {sys.version.split()[0]}")
    print(f"median_ratio_worst={max(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
