"""Retrieval quality of the ONNX Runtime embedder against the sentence-transformers pipeline it replaced, and the
cold-start time of each.

Both embed the same texts with the same all-MiniLM-L6-v2 weights (memory.embeddings: ONNX exported at install;
the reference: sentence-transformers on torch, one thread, as memory/embeddings.py did before). For each retrieval
the agent does, with the queries it really sends, it prints recall@5 of the reference's top 5 (the share of the
reference's 5 nearest that the ONNX embedder also ranks in its top 5) and top-1 agreement:

- repair cases (nodes/repair.py: "<instruction> | <failure type>: <suggested repair>", top-k within the failure
  type, and unfiltered), over synthetic cases (evaluation/perf/memory_latency.py) and, with --bench, cases made of
  benchmark instructions and their failure modes;
- the rule corpus (nodes/retrieve.py: the instruction, top 5 of memory.rules_corpus);
- map entities (memory.entities.relevant_entities, top 8, on each benchmark sample's own world; with --bench).

Then the cosine between the two embedders' vectors of every text (mean, min), and each embedder's import + load +
first encode in a fresh interpreter, and its one-text encode latency. This script imports torch (it measures
against it); the agent does not.

    .venv/bin/cloudbrain bench generate --split dev_mini --seed 1 --out /tmp/b
    .venv/bin/python -m evaluation.perf.embedding_quality --bench /tmp/b/dev_mini.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.perf.memory_latency import synthetic_case
from memory.cases import RepairCase
from memory.embeddings import EMBEDDING_DIM, Embedder, packaged_model_path
from memory.entities import relevant_entities
from memory.rules_corpus import RULES
from tools.world import World

K = 5
ACCEPT = 0.95  # recall@5 at least 95 % of the reference's own top 5

COLD_ONNX = (
    "import time; t = time.perf_counter(); from memory.embeddings import Embedder; Embedder().encode(['warm up']); "
    "print(time.perf_counter() - t)"
)
COLD_TORCH = (
    "import time; t = time.perf_counter(); import torch; from sentence_transformers import SentenceTransformer; "
    "torch.set_num_threads(1); from memory.embeddings import packaged_model_path; "
    "SentenceTransformer(str(packaged_model_path()), device='cpu', local_files_only=True).encode(['warm up']); "
    "print(time.perf_counter() - t)"
)


class SentenceTransformerEmbedder:
    """The former memory/embeddings.py: sentence-transformers on torch (one thread), normalised vectors."""

    dim = EMBEDDING_DIM

    def __init__(self) -> None:
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(1)
        self.model = SentenceTransformer(str(packaged_model_path()), device="cpu", local_files_only=True)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self.model.encode(
            list(texts), batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text])[0]


def top_k(matrix: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    scores = matrix @ query
    return [int(i) for i in np.argsort(-scores, kind="stable")[:k]]


def agreement(reference: list[list[Any]], candidate: list[list[Any]]) -> tuple[float, float]:
    """(mean recall@k of the reference's top k, top-1 agreement)."""
    recalls = [len(set(r) & set(c)) / len(r) for r, c in zip(reference, candidate, strict=True) if r]
    top1 = [r[0] == c[0] for r, c in zip(reference, candidate, strict=True) if r]
    return float(np.mean(recalls)), float(np.mean(top1))


def bench_cases(samples: list[dict[str, Any]]) -> tuple[list[RepairCase], list[tuple[str, str]]]:
    """A case per (sample, failure mode), and the repair node's query for each: the other language's instruction,
    so that a query is never the case's own text."""
    cases, queries = [], []
    for index, sample in enumerate(samples):
        instruction = sample["instruction"]
        for mode in sample.get("failure_modes") or []:
            words = mode.replace("_", " ")
            cases.append(
                RepairCase(
                    instruction=instruction["en"],
                    scenario_type=sample.get("scenario_type", ""),
                    failure_stage="verify",
                    failure_type=mode,
                    counterexample={"suggested_repair": f"repair the {words}"},
                    failing_ir_summary=words,
                    outcome="repaired",
                    thread_id=f"bench-{index}",
                    round=len(cases),
                )
            )
            queries.append((f"{instruction.get('zh') or instruction['en']} | {mode}: repair the {words}", mode))
    return cases, queries


def case_retrieval(
    label: str,
    cases: list[RepairCase],
    queries: list[tuple[str, str]],
    embed: dict[str, Callable[[Sequence[str]], np.ndarray]],
    results: dict[str, Any],
) -> None:
    texts = [case.embedding_text() for case in cases]
    types = np.array([case.failure_type for case in cases])
    tops: dict[str, dict[str, list[list[int]]]] = {}
    for name, encode in embed.items():
        matrix, vectors = encode(texts), encode([text for text, _ in queries])
        filtered, unfiltered = [], []
        for vector, (_, failure_type) in zip(vectors, queries, strict=True):
            rows = np.flatnonzero(types == failure_type)
            filtered.append([int(rows[i]) for i in top_k(matrix[rows], vector, K)])
            unfiltered.append(top_k(matrix, vector, K))
        tops[name] = {"filtered": filtered, "unfiltered": unfiltered}
    for mode in ("filtered", "unfiltered"):
        recall, top1 = agreement(tops["torch"][mode], tops["onnx"][mode])
        key = f"{label}, {mode}"
        results[key] = {"recall": recall, "top1": top1, "corpus": len(cases), "queries": len(queries)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000, help="synthetic repair cases")
    parser.add_argument("--queries", type=int, default=300, help="synthetic repair queries")
    parser.add_argument(
        "--bench", type=Path, default=None, help="a benchmark split's JSONL (cloudbrain bench generate)"
    )
    parser.add_argument("--limit", type=int, default=100, help="benchmark samples read")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    cold = {}
    for name, code in (("onnx", COLD_ONNX), ("torch", COLD_TORCH)):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        cold[name] = float(done.stdout.strip().splitlines()[-1])
    onnx, torch_embedder = Embedder(), SentenceTransformerEmbedder()
    embed = {"onnx": onnx.encode, "torch": torch_embedder.encode}

    rng = random.Random(args.seed)
    cases = [synthetic_case(rng, i) for i in range(args.cases)]
    synthetic_queries = [synthetic_case(random.Random(args.seed + 1 + i), i) for i in range(args.queries)]
    queries = [
        (f"{q.instruction} | {q.failure_type}: {q.counterexample['suggested_repair']}", q.failure_type)
        for q in synthetic_queries
    ]
    results: dict[str, Any] = {}
    case_retrieval("repair cases (synthetic)", cases, queries, embed, results)
    all_texts = [case.embedding_text() for case in cases] + [text for text, _ in queries]

    samples: list[dict[str, Any]] = []
    if args.bench:
        with open(args.bench) as handle:
            samples = [json.loads(line) for _, line in zip(range(args.limit), handle)]
        bench_case_list, bench_queries = bench_cases(samples)
        case_retrieval("repair cases (benchmark)", bench_case_list, bench_queries, embed, results)
        all_texts += [case.embedding_text() for case in bench_case_list] + [text for text, _ in bench_queries]

    instructions = [sample["instruction"][lang] for sample in samples for lang in ("en", "zh")]
    instructions += [case.instruction for case in synthetic_queries]
    rule_texts = [rule.embedding_text() for rule in RULES]
    rule_tops = {}
    for name, encode in embed.items():
        matrix, vectors = encode(rule_texts), encode(instructions)
        rule_tops[name] = [top_k(matrix, vector, K) for vector in vectors]
    recall, top1 = agreement(rule_tops["torch"], rule_tops["onnx"])
    results["rule corpus"] = {"recall": recall, "top1": top1, "corpus": len(RULES), "queries": len(instructions)}
    all_texts += rule_texts + instructions

    if samples:
        entity_tops: dict[str, list[list[str]]] = {"onnx": [], "torch": []}
        for sample in samples:
            world = World.model_validate(sample["world"])
            for lang in ("en", "zh"):
                for name, embedder in (("onnx", onnx), ("torch", torch_embedder)):
                    matches = relevant_entities(world, sample["instruction"][lang], 8, embedder)  # type: ignore[arg-type]
                    entity_tops[name].append([m.id for m in matches])
        recall, top1 = agreement(entity_tops["torch"], entity_tops["onnx"])
        results["map entities (top 8)"] = {
            "k": 8,
            "recall": recall,
            "top1": top1,
            "corpus": "each sample's world",
            "queries": len(entity_tops["onnx"]),
        }

    unique = list(dict.fromkeys(all_texts))
    cosines = np.sum(onnx.encode(unique) * torch_embedder.encode(unique), axis=1)
    latency = {}
    for name, embedder in (("onnx", onnx), ("torch", torch_embedder)):
        times = []
        for text in instructions[:100] or unique[:100]:
            start = time.perf_counter()
            embedder.encode([text])
            times.append((time.perf_counter() - start) * 1000)
        latency[name] = float(np.median(times))

    print("recall@k of the sentence-transformers top k (ONNX Runtime vs torch, same weights); top-1 agreement")
    for label, row in results.items():
        print(
            f"  {label:<40} recall@{row.get('k', K)} {row['recall']:.4f}  top-1 {row['top1']:.4f}  "
            f"(corpus {row['corpus']}, {row['queries']} queries)"
        )
    print(f"cosine(ONNX, torch) over {len(unique)} texts: mean {cosines.mean():.7f}, min {cosines.min():.7f}")
    print(
        f"import + load + first encode, fresh interpreter: ONNX Runtime {cold['onnx']:.2f} s, "
        f"sentence-transformers/torch {cold['torch']:.2f} s"
    )
    print(f"one-text encode, median: ONNX Runtime {latency['onnx']:.1f} ms, torch {latency['torch']:.1f} ms")
    worst = min(row["recall"] for row in results.values())
    print(f"worst recall {worst:.4f}: {'within' if worst >= ACCEPT else 'OUTSIDE'} the 5 % bound")


if __name__ == "__main__":
    main()
