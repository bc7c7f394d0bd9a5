"""Prompt and decode tokens/s of llama.cpp builds, against a named baseline build, on the same model and machine.

Each build is a folder holding an installed `llama_cpp` package (e.g. copied from a venv's site-packages after
`make install` with one set of CMAKE_ARGS). The builds take turns, `--repeats` rounds of each, every round in a
fresh model process (`cloudbrain selftest`'s measurement, models/model_host.py); the medians are printed with their
ratio to the first build named. A build whose runtime dies reports how (e.g. signal 11 on a CPU that refuses it).

    .venv/bin/python -m evaluation.perf.model_runtime_builds --build native=/tmp/rt-native \
        --build portable=/tmp/rt-portable [--repeats 5] [--gguf FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from models.local_model import LocalModelError
from models.model_host import SelfTest, self_test


def measure(build: Path, gguf: Path | None) -> SelfTest | str:
    """One self-test with `build`'s llama_cpp first on the path the model process inherits."""
    sys.path.insert(0, str(build))
    try:
        return self_test(gguf, decode_tokens=64)
    except LocalModelError as exc:
        return str(exc)
    finally:
        sys.path.remove(str(build))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", action="append", required=True, metavar="NAME=FOLDER", help="first = baseline")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--gguf", type=Path, default=None, help="another GGUF (default: the packaged model)")
    args = parser.parse_args()
    builds = dict(item.split("=", 1) for item in args.build)
    results: dict[str, list[SelfTest | str]] = {name: [] for name in builds}
    for _ in range(args.repeats):
        for name, folder in builds.items():
            results[name].append(measure(Path(folder), args.gguf))
    baseline: tuple[float, float] | None = None
    print(f"{'build':<12} {'instruction sets':<48} {'prompt tok/s':>12} {'decode tok/s':>12}  ratio to first")
    for name, runs in results.items():
        failures = [r for r in runs if isinstance(r, str)]
        if failures:
            print(f"{name:<12} failed {len(failures)}/{len(runs)}: {failures[0]}")
            continue
        prompt = statistics.median(r.prompt_tokens_per_sec for r in runs)
        decode = statistics.median(r.decode_tokens_per_sec for r in runs)
        baseline = baseline or (prompt, decode)
        flags = " ".join(runs[0].instruction_sets)
        print(
            f"{name:<12} {flags:<48} {prompt:>12.1f} {decode:>12.1f}  "
            f"prompt x{prompt / baseline[0]:.2f}, decode x{decode / baseline[1]:.2f}"
        )


if __name__ == "__main__":
    main()
