"""Entity retrieval: which map entities and zones an instruction is about, by embedding similarity."""

from __future__ import annotations

import functools
import re

import numpy as np
from pydantic import BaseModel, Field

from memory.embeddings import Embedder, shared_embedder
from tools.world import World

# Worlds are few and reused across thousands of instructions: keep their description vectors.
WORLD_VECTOR_CACHE_SIZE = 32


class EntityMatch(BaseModel):
    id: str
    kind: str
    name: str
    score: float
    mentioned: bool = Field(description="the id appears verbatim in the instruction")


def _words(identifier: str) -> str:
    # "nfz_temp_1" -> "nfz temp 1": the tokenizer reads the parts as words.
    return identifier.replace("_", " ").replace("-", " ")


def describe_world_items(world: World) -> list[tuple[str, str, str]]:
    """(id, kind, name) of every entity, no-fly zone, sensitive zone and corridor."""
    items = [(e.id, e.kind.value.replace("_", " "), e.name) for e in world.entities]
    for zone in world.no_fly_zones:
        kind = "temporary no-fly zone" if zone.temporary else "no-fly zone"
        items.append((zone.id, kind, zone.reason))
    items += [(z.id, f"sensitive zone ({z.kind})", z.name) for z in world.sensitive_zones]
    items += [(c.id, "air corridor", "") for c in world.corridors]
    return items


def _mentions(instruction: str, item_id: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(item_id)}(?!\w)", instruction) is not None


@functools.lru_cache(maxsize=WORLD_VECTOR_CACHE_SIZE)
def _item_vectors(embedder: Embedder, texts: tuple[str, ...]) -> np.ndarray:
    return embedder.encode(texts)


def relevant_entities(
    world: World, instruction: str, k: int = 8, embedder: Embedder | None = None
) -> list[EntityMatch]:
    """The k map items most relevant to the instruction, best first.

    Items the instruction names by id come first (an explicit id is certain, while its similarity to a long
    instruction can be low); the rest rank by cosine similarity of their id + name + kind to the instruction.
    """
    items = describe_world_items(world)
    if not items or k <= 0:
        return []
    embedder = embedder or shared_embedder()
    texts = tuple(f"{_words(item_id)}: {name} ({kind})" for item_id, kind, name in items)
    scores = _item_vectors(embedder, texts) @ embedder.encode_one(instruction)
    mentioned = [_mentions(instruction, item_id) for item_id, _, _ in items]
    best = sorted(range(len(items)), key=lambda i: (not mentioned[i], -scores[i]))[:k]
    return [
        EntityMatch(id=items[i][0], kind=items[i][1], name=items[i][2], score=float(scores[i]), mentioned=mentioned[i])
        for i in best
    ]
