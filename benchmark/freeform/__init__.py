"""Free-form operator requests for the test_freeform split: the same task facts as a template request, written
in one of many constructions per language (questions, arrows, passives, bullet forms, typos, deadlines in words...).

Each sample draws one English and one Chinese pattern among those that can say its facts, and keeps the
template request naming every entity by id (`canonical_en` / `canonical_zh`) so a method can be run on both
wordings of one task. The draw is deterministic: the split's schedule proposes a pattern per sample index, so
every pattern comes up in a split of a few hundred samples; a sample it does not fit draws one that does.
"""

from __future__ import annotations

import numpy as np

from benchmark.citygen import EntityLabel
from benchmark.freeform import chinese, english
from benchmark.freeform.request import (
    ENTITY_CONSTRAINTS,
    REFERENCE_CHOICES,
    REFERENCE_WEIGHTS,
    Naming,
    Pattern,
    Request,
    Voice,
    stated_constraints,
)
from benchmark.instructions import canonical_instruction, draw_asides, request_family
from benchmark.tasks import Task

PATTERNS: dict[str, tuple[Pattern, ...]] = {"en": english.PATTERNS, "zh": chinese.PATTERNS}
VOICES: dict[str, type[Voice]] = {"en": english.EnglishVoice, "zh": chinese.ChineseVoice}


def choose_pattern(patterns: tuple[Pattern, ...], request: Request, index: int, rng: np.random.Generator) -> Pattern:
    """The pattern the schedule proposes for sample `index` when it fits the request, else a draw among those that do."""
    proposed = patterns[index % len(patterns)]
    if proposed.fits(request):
        return proposed
    fitting = [p for p in patterns if p.fits(request)]
    return fitting[int(rng.integers(len(fitting)))]


def reference_style(chosen: list[Pattern], rng: np.random.Generator) -> str:
    """One naming style for both languages, among those every chosen pattern allows, with the template weights."""
    allowed = set(REFERENCE_CHOICES[None])
    for pattern in chosen:
        allowed &= set(REFERENCE_CHOICES[pattern.reference])
    styles = [s for s in REFERENCE_CHOICES[None] if s in allowed]
    weights = np.array([REFERENCE_WEIGHTS[s] for s in styles])
    return styles[int(rng.choice(len(styles), p=weights / weights.sum()))]


def write_freeform_instruction(
    task: Task,
    labels: dict[str, EntityLabel],
    deadline_sec: float | None,
    rng: np.random.Generator,
    inject: bool,
    index: int,
) -> dict:
    """The request in a free-form pattern per language, with its canonical template wording and the patterns."""
    asides = draw_asides(task, rng, inject)
    canonical = canonical_instruction(task, labels, deadline_sec, asides, rng)
    request = Request(task, request_family(task), deadline_sec, asides, stated_constraints(task))
    chosen = {lang: choose_pattern(patterns, request, index, rng) for lang, patterns in PATTERNS.items()}
    texts, naming = write_patterns(request, labels, chosen, rng)
    return {
        "zh": texts["zh"],
        "en": texts["en"],
        "reference_style": naming.style,
        "mentions": [vars(r) for r in naming.references],
        "injected_rule_break": asides.injected_rule,
        "pinned_uavs": list(task.named_uavs),
        "pattern_en": chosen["en"].name,
        "pattern_zh": chosen["zh"].name,
        "canonical_en": canonical["en"],
        "canonical_zh": canonical["zh"],
    }


def write_patterns(
    request: Request, labels: dict[str, EntityLabel], chosen: dict[str, Pattern], rng: np.random.Generator
) -> tuple[dict[str, str], Naming]:
    """The request in each language's chosen pattern, and how it names the entities."""
    naming = Naming(labels, reference_style(list(chosen.values()), rng))
    _name_in_template_order(request.task, naming)
    texts = {lang: pattern.write(VOICES[lang](request, naming, rng), rng) for lang, pattern in chosen.items()}
    return texts, naming


def _name_in_template_order(task: Task, naming: Naming) -> None:
    """Record every entity the request names, in the template's order, whichever order a pattern says them in."""
    for entity_id in (task.origin, task.destination, *task.waypoints):
        if entity_id:
            naming.term(entity_id)
    if task.contradiction_zone:
        naming.term(task.contradiction_zone, "name")
    for constraint in stated_constraints(task):
        if constraint.kind in ENTITY_CONSTRAINTS:
            naming.term(constraint.value)
