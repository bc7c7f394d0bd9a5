"""The rule corpus's vectors, computed once per install and model, never per memory folder or per process.

They are stored beside the ONNX model (`rules-<digest>.npy`, written by `python -m memory.onnx_export` at install),
keyed by a digest of the rule texts and of the embedder's model: a changed rule text or model is another file, which
the first use computes and stores, so stale vectors are never served.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from memory.embeddings import Embedder
from memory.rules_corpus import RULES, RuleText


def rules_digest(embedder: Embedder, rules: tuple[RuleText, ...] = RULES) -> str:
    """Changes with any rule's id or embedded text, their order, or the embedder's model."""
    digest = hashlib.sha256(embedder.fingerprint.encode())
    for rule in rules:
        digest.update(json.dumps([rule.id, rule.embedding_text()]).encode())
    return digest.hexdigest()[:16]


def rule_vectors_path(embedder: Embedder, rules: tuple[RuleText, ...] = RULES) -> Path:
    return embedder.embeddings_dir / f"rules-{rules_digest(embedder, rules)}.npy"


def rule_vectors(embedder: Embedder, rules: tuple[RuleText, ...] = RULES) -> np.ndarray:
    """One unit-length row per rule, in corpus order (read-only)."""
    return _rule_vectors(embedder, rules)


@functools.lru_cache(maxsize=4)
def _rule_vectors(embedder: Embedder, rules: tuple[RuleText, ...]) -> np.ndarray:
    path = rule_vectors_path(embedder, rules)
    try:
        vectors = np.load(path, allow_pickle=False)
        if vectors.shape != (len(rules), embedder.dim) or vectors.dtype != np.float32:
            raise ValueError(f"{path} holds {vectors.shape} {vectors.dtype}")
    except (OSError, ValueError):
        vectors = embedder.encode([rule.embedding_text() for rule in rules])
        store_rule_vectors(path, vectors)
    vectors.setflags(write=False)
    return vectors


def store_rule_vectors(path: Path, vectors: np.ndarray) -> bool:
    """Write atomically (a reader never sees half a file); False when the folder is not writable (the vectors are
    then computed once per process instead)."""
    staged: Path | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".rules-", suffix=".npy", delete=False) as handle:
            staged = Path(handle.name)
            np.save(handle, np.asarray(vectors, dtype=np.float32), allow_pickle=False)
        umask = os.umask(0)
        os.umask(umask)
        staged.chmod(0o666 & ~umask)  # as an ordinary file, not the temporary file's 0600
        os.replace(staged, path)
        return True
    except OSError:
        if staged is not None:
            staged.unlink(missing_ok=True)
        return False
