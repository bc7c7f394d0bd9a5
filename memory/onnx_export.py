"""Export the packaged all-MiniLM-L6-v2 to ONNX, once, at install: `python -m memory.onnx_export [--force]`.

`make install` runs it. It is the only code that needs torch (and transformers, onnx): it loads the packaged
safetensors into transformers' BertModel, exports the transformer (input_ids, attention_mask -> last_hidden_state)
with torch's TorchScript-based exporter (`dynamo=False`: it needs only the `onnx` package, no onnxscript), checks the
ONNX Runtime output against torch's on padded batches, and writes `<stem>.onnx` and its manifest atomically into
memory.embeddings.default_embeddings_dir(). Then it stores the rule corpus's vectors beside them
(memory.rule_vectors). Up to date (same weights, same exporter format) it does nothing unless --force.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from memory.embeddings import (
    EMBEDDING_DIM,
    MODEL_NAME,
    Embedder,
    EmbeddingModelMissingError,
    load_tokenizer,
    mean_pool_normalise,
    onnx_paths,
    packaged_model_path,
    pipeline_config,
    read_manifest,
    source_identity,
)
from memory.rule_vectors import rule_vectors, rule_vectors_path

OPSET = 17
# Nothing may reach a hub: transformers reads these at import.
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
# The largest difference in a pooled, normalised vector component allowed between ONNX Runtime and torch.
TOLERANCE = 1e-4
# Checked after export: padding in a batch, a text over max_seq_length (truncation), leading/trailing blanks.
CHECK_TEXTS = (
    "keep out of the temporary no-fly zone",
    "R1",
    "  The route crossed nfz_temp_1 between waypoints 3 and 4; re-plan around it with a 20 m margin.  ",
    " ".join(["separation from buildings, schools and other UAVs must hold on every leg"] * 30),
)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _load_bert(model_path: Path) -> Any:
    os.environ.update(OFFLINE_ENV)
    import torch
    from transformers import BertModel
    from transformers.utils import logging as transformers_logging

    transformers_logging.set_verbosity_error()  # its load report lists the unused pooler weights
    transformers_logging.disable_progress_bar()
    # Eager attention: a plain softmax over the extended mask, which traces the same for any padding.
    model = BertModel.from_pretrained(
        str(model_path), local_files_only=True, attn_implementation="eager", add_pooling_layer=False
    )
    model.eval()

    class LastHiddenState(torch.nn.Module):
        def __init__(self, bert: torch.nn.Module):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            token_type_ids = torch.zeros_like(input_ids)
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state

    return LastHiddenState(model).eval()


def _tokenize(model_path: Path, texts: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    tokenizer = load_tokenizer(model_path, pipeline_config(model_path)["max_seq_length"])
    encodings = tokenizer.encode_batch(list(texts))
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    return ids, mask


def _export(module: Any, ids: np.ndarray, mask: np.ndarray, target: Path) -> None:
    import torch

    dynamic = {"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"}}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes on shape checks that hold for every input
        torch.onnx.export(
            module,
            (torch.from_numpy(ids), torch.from_numpy(mask)),
            str(target),
            dynamo=False,
            input_names=["input_ids", "attention_mask"],
            output_names=["last_hidden_state"],
            dynamic_axes={**dynamic, "last_hidden_state": {0: "batch", 1: "tokens"}},
            opset_version=OPSET,
            do_constant_folding=True,
        )


def _max_difference(module: Any, onnx_file: Path, ids: np.ndarray, mask: np.ndarray) -> float:
    """Largest |ONNX - torch| over the pooled, normalised vectors of a padded batch and of each text alone."""
    import onnxruntime
    import torch

    session = onnxruntime.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
    worst = 0.0
    batches = [(ids, mask)] + [
        (ids[i : i + 1, : mask[i].sum()], mask[i : i + 1, : mask[i].sum()]) for i in range(len(ids))
    ]
    for batch_ids, batch_mask in batches:
        with torch.no_grad():
            expected = module(torch.from_numpy(batch_ids), torch.from_numpy(batch_mask)).numpy()
        (got,) = session.run(["last_hidden_state"], {"input_ids": batch_ids, "attention_mask": batch_mask})
        diff = np.abs(mean_pool_normalise(got, batch_mask) - mean_pool_normalise(expected, batch_mask)).max()
        worst = max(worst, float(diff))
    return worst


def export(embeddings_dir: Path | None = None, *, force: bool = False, quiet: bool = False) -> Path:
    """Build the ONNX model (unless up to date) and the rule-corpus vectors; returns the ONNX file's path."""
    model_path = packaged_model_path()
    embeddings_dir = embeddings_dir or Embedder(model_path=model_path).embeddings_dir
    onnx_file, manifest_file = onnx_paths(embeddings_dir)
    say = (lambda message: None) if quiet else (lambda message: print(message, flush=True))
    try:
        if force:
            raise EmbeddingModelMissingError("rebuild asked for")
        read_manifest(model_path, embeddings_dir)
        say(f"ONNX embedding model up to date: {onnx_file}")
    except EmbeddingModelMissingError:
        start = time.perf_counter()
        embeddings_dir.mkdir(parents=True, exist_ok=True)
        module = _load_bert(model_path)
        ids, mask = _tokenize(model_path, CHECK_TEXTS)
        with tempfile.TemporaryDirectory(dir=embeddings_dir, prefix=".export-") as scratch:
            staged = Path(scratch) / onnx_file.name
            _export(module, ids, mask, staged)
            difference = _max_difference(module, staged, ids, mask)
            if difference > TOLERANCE:
                raise SystemExit(
                    f"the ONNX export of {MODEL_NAME} differs from torch by {difference:.2e} (> {TOLERANCE}); "
                    "not installed"
                ) from None
            manifest = _manifest(model_path, staged, difference)
            manifest_file.unlink(missing_ok=True)  # no manifest while the file is replaced: a reader sees "missing"
            os.replace(staged, onnx_file)
            staged_manifest = Path(scratch) / manifest_file.name
            staged_manifest.write_text(json.dumps(manifest, indent=2) + "\n")
            os.replace(staged_manifest, manifest_file)
        say(
            f"exported {MODEL_NAME} to {onnx_file} in {time.perf_counter() - start:.1f} s "
            f"(max |ONNX - torch| {difference:.1e} on the check texts)"
        )
    embedder = Embedder(model_path=model_path, embeddings_dir=embeddings_dir)
    vectors = rule_vectors(embedder)
    assert vectors.shape[1] == EMBEDDING_DIM
    say(f"rule-corpus vectors ({len(vectors)} rules): {rule_vectors_path(embedder)}")
    return onnx_file


def _manifest(model_path: Path, onnx_file: Path, difference: float) -> dict[str, Any]:
    import onnx
    import torch
    import transformers

    return {
        "model": MODEL_NAME,
        "source": source_identity(model_path),
        "source_safetensors_sha256": _sha256(model_path / "model.safetensors"),
        "onnx_size": onnx_file.stat().st_size,
        "onnx_sha256": _sha256(onnx_file),
        "opset": OPSET,
        "exported_with": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "onnx": onnx.__version__,
        },
        "max_abs_difference_vs_torch": difference,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None, help="target folder (default: the venv's share/cloudbrain)")
    parser.add_argument("--force", action="store_true", help="export again even when the file is up to date")
    args = parser.parse_args(argv)
    export(args.dir, force=args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
