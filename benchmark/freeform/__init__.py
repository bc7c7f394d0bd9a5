"""Free-form operator requests for the test_freeform split: the same task facts as a template request, written
in one of many constructions per language (questions, arrows, passives, bullet forms, typos, deadlines in words...).

Each sample draws one English and one Chinese pattern among those that can say its facts, and keeps the
template request naming every entity by id (`canonical_en` / `canonical_zh`) so a method can be run on both
wordings of one task. The draw is deterministic: the split's schedule proposes a pattern per sample index, so
every pattern comes up in a split of a few hundred samples; a sample it does not fit draws one that does. A boosted
pattern (request.BOOSTED_EVERY: one that few requests fit, a demand to break a rule or a route with stops, or a
construction of its own kind) is taken by the requests it fits at one sample index in its `every`, in turn with
the other boosted ones. A pattern that adds a fact of its own (`exclusion`: a
UAV ruled out) is drawn for English and said in both languages, and the canonical wordings state it too.
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
    boosted,
    stated_constraints,
)
from benchmark.instructions import canonical_instruction, draw_asides, request_family
from benchmark.tasks import Task
from tools.world import World

PATTERNS: dict[str, tuple[Pattern, ...]] = {"en": boosted(english.PATTERNS), "zh": boosted(chinese.PATTERNS)}
VOICES: dict[str, type[Voice]] = {"en": english.EnglishVoice, "zh": chinese.ChineseVoice}
# The canonical wording of a UAV the request rules out (pattern `exclusion`).
EXCLUSION_SENTENCE = ("Do not use {x}.", "不要使用{x}。")


def choose_pattern(
    patterns: tuple[Pattern, ...],
    request: Request,
    index: int,
    rng: np.random.Generator,
    styles: tuple[str, ...] = REFERENCE_CHOICES[None],
    adds_fact: bool = True,
) -> Pattern:
    """A boosted pattern the request fits whose turn `index` is (in turn with the other such ones), else the pattern
    the schedule proposes for sample `index` when it fits, else a draw among those that do. Only patterns that can
    name places in one of `styles` count, and those that add a fact only where `adds_fact`."""

    def usable(pattern: Pattern) -> bool:
        named = set(REFERENCE_CHOICES[pattern.reference]) & set(styles)
        return bool(named) and (adds_fact or not pattern.adds_fact) and pattern.fits(request)

    boosted = [p for p in patterns if p.every and (index + _offset(p.name)) % p.every == 0 and usable(p)]
    if boosted:
        return boosted[index % len(boosted)]
    proposed = patterns[index % len(patterns)]
    if usable(proposed):
        return proposed
    fitting = [p for p in patterns if usable(p)]
    return fitting[int(rng.integers(len(fitting)))]


def _offset(name: str) -> int:
    """A stable offset per pattern name, so patterns boosted alike take their turns at different indices."""
    return sum(map(ord, name))


def choose_patterns(request: Request, index: int, rng: np.random.Generator) -> dict[str, Pattern]:
    """The English pattern, then a Chinese one that can name places as it does: the same construction where the
    English one adds a fact, so both languages state the same facts."""
    english_pattern = choose_pattern(PATTERNS["en"], request, index, rng)
    if english_pattern.adds_fact:
        chinese_pattern = next(p for p in PATTERNS["zh"] if p.name == english_pattern.name)
    else:
        styles = REFERENCE_CHOICES[english_pattern.reference]
        chinese_pattern = choose_pattern(PATTERNS["zh"], request, index, rng, styles, adds_fact=False)
    return {"en": english_pattern, "zh": chinese_pattern}


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
    world: World | None = None,
    gold_uav: str | None = None,
) -> dict:
    """The request in a free-form pattern per language, with its canonical template wording and the patterns.
    `world` and `gold_uav` (the UAV the gold flies, None if none) let a pattern rule out a UAV or mistype an id."""
    asides = draw_asides(task, rng, inject)
    canonical = canonical_instruction(task, labels, deadline_sec, asides, rng)
    request = Request(task, request_family(task), deadline_sec, asides, stated_constraints(task), world, gold_uav)
    chosen = choose_patterns(request, index, rng)
    texts, naming = write_patterns(request, labels, chosen, rng)
    excluded = [request.excluded_uav] if chosen["en"].adds_fact and request.excluded_uav else []
    canonical_en, canonical_zh = canonical["en"], canonical["zh"]
    for uav in excluded:
        canonical_en += " " + EXCLUSION_SENTENCE[0].format(x=uav)
        canonical_zh += EXCLUSION_SENTENCE[1].format(x=uav)
    return {
        "zh": texts["zh"],
        "en": texts["en"],
        "reference_style": naming.style,
        "mentions": [vars(r) for r in naming.references],
        "injected_rule_break": asides.injected_rule,
        "injection_kind": asides.injection_kind,
        "pinned_uavs": list(task.named_uavs),
        "excluded_uavs": excluded,
        "pattern_en": chosen["en"].name,
        "pattern_zh": chosen["zh"].name,
        "canonical_en": canonical_en,
        "canonical_zh": canonical_zh,
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
