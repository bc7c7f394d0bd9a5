"""What a free-form request has to say, and the language-neutral part of the voice its patterns say it in.

A `Request` holds the facts of one sample's request exactly as the canonical template states them (places and
their roles, cargo and mass, deadline, priority, stated constraints, the drawn hint and injected sentence). A
`Voice` turns them into phrases of one language; a `Pattern` is one construction built from those phrases. Every
phrase a voice offers states its fact in full, so any pattern that fits a request keeps the sample's gold right.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
from rapidfuzz.distance import Levenshtein

from benchmark.citygen import EntityLabel
from benchmark.freeform.units import deadline_spellings, mass_spellings
from benchmark.instructions import DEMAND, TEMPLATES, Asides, Reference, name_entity
from benchmark.tasks import Task
from benchmark.vocabulary import KIND_NOUNS, Term
from tools.rules import DEFAULT_ALTITUDE_MIN_M
from tools.world import UAVStatus, World

ALL_FAMILIES = frozenset(TEMPLATES)
CARGO_ROUTES = frozenset({"delivery", "emergency", "via", "round_trip"})  # a cargo from one place to another
ROUTES = CARGO_ROUTES | {"patrol"}  # every family whose places are all known: origin, stops, end
REFERENCE_WEIGHTS = {"id": 0.35, "name": 0.4, "short": 0.25}  # as the template requests draw them
REFERENCE_CHOICES = {
    None: ("id", "name", "short"),
    "names": ("name", "short"),
    "short": ("short",),
    "ids": ("id",),
}
TYPO_REACH = 2  # a typed id is within this edit distance of the id it means, and of no other id of the world


ENTITY_CONSTRAINTS = ("avoid", "handoff_hub")  # constraints whose value is an entity the request names


@dataclass(frozen=True)
class Constraint:
    """One demand the request states beside its route: `kind` from the list in `stated_constraints`."""

    kind: str
    value: str = ""  # the zone, hub or UAV id, or the number (metres, percent) it sets


def stated_constraints(task: Task) -> tuple[Constraint, ...]:
    """The demands the template request states for this task, in its order (instructions._constraint_extras)."""
    stated = [Constraint("avoid", zone) for zone in task.mention_zones]
    if task.altitude_min_m > DEFAULT_ALTITUDE_MIN_M:
        stated.append(Constraint("floor", f"{task.altitude_min_m:g}"))
    if task.altitude_max_m < 120:
        stated.append(Constraint("ceiling", f"{task.altitude_max_m:g}"))
    if task.battery_reserve_ratio > 0.2:
        stated.append(Constraint("reserve", str(round(task.battery_reserve_ratio * 100))))
    stated += [Constraint("pinned", uav) for uav in task.named_uavs]
    if task.require_corridor:
        stated.append(Constraint("corridor"))
    if task.handoff_point:
        # hard tasks leave the hub to the agent, as the template does
        hard = task.difficulty in ("hard", "extreme")
        stated.append(Constraint("handoff_any") if hard else Constraint("handoff_hub", task.handoff_point))
    if task.forbid_ground_transfer:
        stated.append(Constraint("land_at_destination"))
    return tuple(stated)


@dataclass(frozen=True)
class Request:
    task: Task
    family: str
    deadline_sec: float | None
    asides: Asides
    constraints: tuple[Constraint, ...]
    world: World | None = None  # the sample's world: which UAV ids exist, which ids a typo could be taken for
    gold_uav: str | None = None  # the UAV the gold flies (None: the gold flies none)

    @property
    def stated_deadline(self) -> float | None:
        """The deadline the request states: an unanchored-time request names a time no clock can read."""
        return None if self.family == "unanchored_time" else self.deadline_sec

    @property
    def demand(self) -> bool:
        """The injected sentence demands breaking a rule (instructions.INJECTIONS)."""
        return self.asides.injection_kind == DEMAND

    @cached_property
    def excluded_uav(self) -> str | None:
        """An idle UAV the request can rule out without changing the gold: not the gold's, not one it pins; the one
        nearest the origin, where a dispatcher would look first. None where the gold flies none."""
        if self.world is None or self.gold_uav is None or self.task.origin is None:
            return None
        origin = self.world.position_of(self.task.origin)
        idle = [
            u
            for u in self.world.fleet
            if u.status is UAVStatus.idle and u.id != self.gold_uav and u.id not in self.task.named_uavs
        ]
        return min(idle, key=lambda u: (math.dist(u.position, origin), u.id)).id if idle else None

    @cached_property
    def typos(self) -> dict[str, tuple[str, ...]]:
        """Per place the request names (origin, stops, destination): the ids one mistyped letter away from it that
        only it is near (within TYPO_REACH edits of it and of no other id of the world). Empty without a world."""
        if self.world is None:
            return {}
        ids = world_ids(self.world)
        places = dict.fromkeys(p for p in (self.task.origin, *self.task.waypoints, self.task.destination) if p)
        found = {}
        for place in places:
            unique = tuple(t for t in mistyped(place) if t not in ids and only_near(t, place, ids))
            if unique:
                found[place] = unique
        return found


@dataclass
class Naming:
    """How the request names each entity: one reference style for the sample, in both languages."""

    labels: dict[str, EntityLabel]
    style: str
    references: list[Reference] = field(default_factory=list)

    def term(self, entity_id: str, style: str | None = None) -> Term:
        return name_entity(entity_id, style or self.style, self.labels, self.references)

    def area(self, entity_id: str) -> Term | None:
        label = self.labels.get(entity_id)
        return label.area if label is not None and self.style != "id" else None


@dataclass(frozen=True)
class Pattern:
    """One construction of a request: `write(voice, rng)` says the voice's request in that construction."""

    name: str
    write: Callable[[Voice, np.random.Generator], str]
    families: frozenset[str] = ALL_FAMILIES
    needs_deadline: bool = False
    reference: str | None = None  # "names": never by id; "short": by short name; "ids": by id (a typo in one)
    condition: Callable[[Request], bool] | None = None  # the facts it needs beyond a family (a demand, a zone...)
    every: int = 0  # > 0: the requests it fits take it at one sample index in `every` (freeform.choose_pattern)
    adds_fact: bool = False  # states a fact of its own (a UAV ruled out): both languages say it or neither

    def fits(self, request: Request) -> bool:
        return (
            request.family in self.families
            and (not self.needs_deadline or request.stated_deadline is not None)
            and (self.condition is None or self.condition(request))
        )


def templated(
    name: str,
    template: str,
    families: frozenset[str] = ALL_FAMILIES,
    *,
    needs_deadline: bool = False,
    reference: str | None = None,
    capitalise: bool = True,
    condition: Callable[[Request], bool] | None = None,
    **forms: str,
) -> Pattern:
    """A pattern that fills one template; `forms` pick the form of a slot (deadline="words")."""
    return Pattern(
        name,
        lambda voice, rng: voice.fill(template, capitalise=capitalise, **forms),
        families,
        needs_deadline,
        reference,
        condition,
    )


def one_of(
    name: str,
    templates: tuple[str, ...],
    families: frozenset[str] = ALL_FAMILIES,
    *,
    condition: Callable[[Request], bool] | None = None,
    adds_fact: bool = False,
    **forms: str,
) -> Pattern:
    """A pattern with a few wordings of one construction, one drawn per request."""
    return Pattern(
        name,
        lambda voice, rng: voice.fill(voice.pick(templates), **forms),
        families,
        condition=condition,
        adds_fact=adds_fact,
    )


# The constructions both languages boost, and how often (Pattern.every): those few requests fit (a demand to break a
# rule, a route with stops: always), or that a split's schedule would seldom propose where they fit (an avoided zone
# said as not flying over it), so each comes up a few times in a split of 320 without crowding out the others.
BOOSTED_EVERY = {
    "rule_violating_demand": 1,
    "ordered_ending": 1,
    "via_phrases": 1,
    "forbidden_overflight": 6,
}


DEADLINE_EVERY = 48  # a pattern that needs a deadline fits about half the requests


def boosted(patterns: tuple[Pattern, ...]) -> tuple[Pattern, ...]:
    """`patterns`, each taken by the requests it fits at one sample index in BOOSTED_EVERY[name] (1: always) or,
    needing a deadline, in DEADLINE_EVERY: a construction few requests fit (a demand, a route with stops, a stated
    deadline) still comes up in a split of a few hundred samples."""
    return tuple(
        replace(p, every=BOOSTED_EVERY.get(p.name, DEADLINE_EVERY if p.needs_deadline else 0)) for p in patterns
    )


def spelled_units(base: Pattern, name: str) -> Pattern:
    """`base` with the cargo's mass and the deadline in other units or words ("1,500 g", "a quarter of an hour"),
    each exact (freeform/units.py): only for a request with a cargo."""

    def write(voice: Voice, rng: np.random.Generator) -> str:
        voice.spell_units = True
        return base.write(voice, rng)

    return Pattern(name, write, base.families, base.needs_deadline, base.reference, has_cargo)


def with_mistyped_id(base: Pattern, name: str) -> Pattern:
    """`base` naming places by id, one of them with a letter mistyped so that the id it means is still the only one
    of the world within TYPO_REACH edits (Request.typos); the mention records the id as typed."""

    def write(voice: Voice, rng: np.random.Generator) -> str:
        text = base.write(voice, rng)
        named = [p for p in voice.request.typos if re.search(id_pattern(p), text)]
        if not named:
            return text
        place = named[int(rng.integers(len(named)))]
        typed = voice.pick(voice.request.typos[place])
        for reference in voice.naming.references:
            if reference.id == place:
                setattr(reference, voice.lang, typed)
        return re.sub(id_pattern(place), typed, text)

    return Pattern(name, write, base.families, base.needs_deadline, "ids", lambda r: bool(r.typos))


def has_cargo(request: Request) -> bool:
    return request.task.cargo is not None


def id_pattern(entity_id: str) -> str:
    """Where `entity_id` stands as a whole id (a Chinese character may touch it: ids are ASCII)."""
    return rf"(?<![A-Za-z0-9_]){re.escape(entity_id)}(?![A-Za-z0-9_])"


def world_ids(world: World) -> frozenset[str]:
    """Every id a request could name or be taken to name: places, zones, UAVs, corridors, regions, buildings..."""
    groups = (
        world.entities,
        world.no_fly_zones,
        world.sensitive_zones,
        world.corridors,
        world.fleet,
        world.regions,
        world.buildings,
        world.weather,
        world.traffic,
    )
    return frozenset(item.id for group in groups for item in group)


TYPO_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def mistyped(entity_id: str) -> list[str]:
    """The id with one letter of a word of its name typed wrong: dropped, doubled or replaced by the next letter of
    the alphabet (one character changed). Never a word's first letter, a digit, an underscore or a one-letter
    tag ("hospital_A"): what tells two ids of a kind apart stays as it is."""
    typed = []
    for word in re.finditer(r"[a-z]{3,}", entity_id):
        for i in range(word.start() + 1, word.end()):
            letter = entity_id[i]
            typed.append(entity_id[:i] + entity_id[i + 1 :])  # dropped
            typed.append(entity_id[:i] + letter + entity_id[i:])  # doubled
            replaced = TYPO_LETTERS[(TYPO_LETTERS.index(letter) + 1) % len(TYPO_LETTERS)]
            typed.append(entity_id[:i] + replaced + entity_id[i + 1 :])
    return list(dict.fromkeys(t for t in typed if t != entity_id))


def only_near(typed: str, meant: str, ids: frozenset[str]) -> bool:
    """`typed` is within TYPO_REACH edits of `meant` and of no other id."""
    if Levenshtein.distance(typed, meant, score_cutoff=TYPO_REACH) > TYPO_REACH:
        return False
    return not any(
        Levenshtein.distance(typed, other, score_cutoff=TYPO_REACH) <= TYPO_REACH
        for other in ids
        if other != meant and abs(len(other) - len(typed)) <= TYPO_REACH
    )


def arrow_templated(name: str, template: str, **forms: str) -> Pattern:
    """A route written as an arrow line, its constraints tersely."""
    return templated(name, template, ROUTES, constraints="telegraphic", **forms)


def sentences_templated(name: str, template: str) -> Pattern:
    """A cargo route whose way back or via points and deadline follow as sentences of their own."""
    return templated(name, template, CARGO_ROUTES, route="sentence", deadline="sentence")


def deadline_templated(name: str, template: str, deadline: str) -> Pattern:
    """A cargo route that always states its deadline, in the form `deadline`."""
    return templated(name, template, CARGO_ROUTES, needs_deadline=True, deadline=deadline)


class Voice:
    """The phrases of one language for one request. A template names slots in braces, `{cargo}`, capitalised
    (`{Cargo}`) for a sentence start; slot methods `_<slot>(form)` fill them. The slots every language shares live
    here, their words in the class attributes a language's subclass sets; draws between synonyms use `rng`."""

    lang = "en"
    list_joiners: tuple[str, str]  # between names, before the last one
    area_shape: str  # a described place: its {name} and {area}
    casual_areas: dict[str, str]  # an area word as people say it
    camera_payload: str  # the cargo of a flight that carries none
    cargo_shapes: dict[str, str]  # the cargo {t} and its mass {kg}, by form
    clauses: dict[str, tuple[str, ...]]  # a family's whole request as one clause
    route_phrases: dict[str, tuple[str, tuple[str, ...]]]  # what a family adds to a route: a sentence, or phrases
    leads: dict[str, tuple[str, ...]]  # by priority
    emergency_leads: tuple[str, ...]
    tails: dict[str, str]  # by priority
    emergency_tail: str
    priority_words: dict[str, str]
    constraint_phrases: dict[str, tuple[str, ...]]  # by constraint kind, the value as {v}
    telegraphic: dict[str, str]  # the terse phrase of a constraint kind, where it has one
    sentence_gap: str  # what stands between two sentences
    field_labels: dict[str, str]  # the labels of a request laid out as fields, and its emergency word
    arrows: dict[str, str]  # by form
    default_arrow: str
    colon: str  # between a label or a route and what it names
    patrol_lead: str  # before a patrol's arrow route
    then_joiner: str  # between stops said in order ("A, then B")
    spelled_cargo: str  # the cargo {t} and its mass spelled out {m} ("1,500 g")
    overflight_phrases: tuple[str, ...]  # an avoided zone {v} said as not flying over it
    demand_phrases: dict[str, tuple[str, ...]]  # by rule: a demand to break it, in other words than the template's
    headline_arrow: str
    headline_gap: str  # between a headline's route and its cargo
    headline_now: str  # "now" at the end of a headline request

    def __init__(self, request: Request, naming: Naming, rng: np.random.Generator):
        self.request = request
        self.naming = naming
        self.rng = rng
        self.task = request.task
        self.spell_units = False  # the cargo's mass and the deadline in other units or words (units.py)

    def pick(self, options: tuple[str, ...] | list[str]) -> str:
        return options[int(self.rng.integers(len(options)))]

    def name(self, entity_id: str, style: str | None = None) -> str:
        return getattr(self.naming.term(entity_id, style), self.lang)

    def listed(self, items: list[str]) -> str:
        between, last = self.list_joiners
        return items[0] if len(items) == 1 else between.join(items[:-1]) + last + items[-1]

    def fill(self, template: str, *, capitalise: bool = True, **forms: str) -> str:
        """The finished text of a whole request."""
        text = self.finish(self.expand(template, **forms))
        return self.capitalised(text) if capitalise else text

    def expand(self, template: str, **forms: str) -> str:
        """`template` with its slots filled, unfinished: a phrase to go inside a request."""
        values: dict[str, str] = {}
        for _, slot, _, _ in string.Formatter().parse(template):
            if slot and slot not in values:
                value = getattr(self, f"_{slot.lower()}")(forms.get(slot.lower()))
                values[slot] = self.capitalised(value) if slot[0].isupper() else value
        return template.format(**values)

    def capitalised(self, text: str) -> str:
        return text

    def finish(self, text: str) -> str:
        return text.strip()

    # --- places and cargo ---------------------------------------------------------------------------------------

    def _place(self, entity_id: str | None, form: str | None) -> str:
        if entity_id is None:
            return ""
        text = self.name(entity_id)
        area = self.naming.area(entity_id) if form == "described" else None
        if area is None:
            return text
        area_words = getattr(area, self.lang)
        return self.area_shape.format(name=text, area=self.casual_areas.get(area_words, area_words))

    def _o(self, form: str | None) -> str:
        return self._place(self.task.origin, form)

    def _d(self, form: str | None) -> str:
        """The far end: the destination, or a round trip's turning point."""
        far = self.task.waypoints[-1] if self.request.family == "round_trip" else self.task.destination
        return self._place(far, form)

    def _far(self, form: str | None) -> str:
        return self._d(form)

    def _w(self, form: str | None) -> str:
        """The stops, as a list ("A, B and C") or in order ("A, then B, then C": form "then")."""
        if form == "then":
            return self.then_joiner.join(self._place(w, None) for w in self.task.waypoints)
        return self.listed([self._place(w, form) for w in self.task.waypoints])

    def _x(self, form: str | None) -> str:
        """The UAV the request rules out."""
        return self.request.excluded_uav or ""

    def _zone(self, form: str | None) -> str:
        return self.name(self.task.contradiction_zone, "name") if self.task.contradiction_zone else ""

    def _kind(self, form: str | None) -> str:
        return getattr(KIND_NOUNS[self.task.ambiguous_kind], self.lang) if self.task.ambiguous_kind else ""

    def _cargo(self, form: str | None) -> str:
        cargo = self.task.cargo
        if cargo is None:
            return self.camera_payload
        if self.spell_units:
            return self.spelled_cargo.format(t=getattr(cargo.term, self.lang), m=self.pick(self.masses(cargo.kg)))
        return self.cargo_shapes[form or "paren"].format(t=getattr(cargo.term, self.lang), kg=f"{cargo.kg:g}")

    def masses(self, kg: float) -> tuple[str, ...]:
        return mass_spellings(kg, self.lang)

    def spelled_amount(self) -> str:
        """The stated deadline in other words, exactly ("a minute and a half", "90 secs", "一分半钟"; units.py); ""
        where it has none."""
        spellings = deadline_spellings(self.request.stated_deadline or 0.0, self.lang)
        return self.pick(spellings) if spellings else ""

    # --- route and priority ------------------------------------------------------------------------------------

    def _clause(self, form: str | None) -> str:
        return self.expand(self.pick(self.clauses[self.request.family]))

    def _route(self, form: str | None) -> str:
        """What a cargo route adds to "from {o} to {d}": its via points or its way back."""
        if self.request.family not in self.route_phrases:
            return ""
        sentence, phrases = self.route_phrases[self.request.family]
        return self.expand(sentence if form == "sentence" else self.pick(phrases))

    def _lead(self, form: str | None) -> str:
        priority = self.pick(self.leads[self.task.priority])
        return priority + (self.pick(self.emergency_leads) if self.request.family == "emergency" else "")

    def _tail(self, form: str | None) -> str:
        return self.tails[self.task.priority] + (self.emergency_tail if self.request.family == "emergency" else "")

    # --- stated constraints and drawn sentences ----------------------------------------------------------------

    def _said(self, constraint: Constraint, telegraphic: bool = False, overflight: bool = False) -> str:
        value = self.name(constraint.value) if constraint.kind in ENTITY_CONSTRAINTS else constraint.value
        shape = self.telegraphic.get(constraint.kind) if telegraphic else None
        if overflight and constraint.kind == "avoid":
            shape = self.pick(self.overflight_phrases)
        return (shape or self.pick(self.constraint_phrases[constraint.kind])).format(v=value)

    def _constraints(self, form: str | None) -> str:
        """The stated constraints laid out in `form`; "overflight": as sentences, an avoided zone said as not flying
        over it ("don't route over X")."""
        form = form or "sentences"
        overflight = form == "overflight"
        said = [self._said(c, form == "telegraphic", overflight) for c in self.request.constraints]
        return self.constraint_layouts(said)["sentences" if overflight else form]() if said else ""

    def constraint_layouts(self, said: list[str]) -> dict[str, Callable[[], str]]:
        """The stated constraints laid out, by `{constraints}` form."""
        raise NotImplementedError

    def _asides(self, form: str | None) -> str:
        """The drawn sentences word for word; "reworded": a demand to break a rule said in other words."""
        asides = self.request.asides
        said = [getattr(term, self.lang) for term in (asides.hint, asides.injection) if term]
        if form == "reworded" and self.request.demand and asides.injection is not None:
            said[-1] = self.pick(self.demand_phrases[asides.injected_rule or ""])
        return "".join(self.sentence_gap + sentence for sentence in said)

    def _rest(self, form: str | None) -> str:
        return self._constraints(form) + self._asides(None)

    def _rest_reworded(self, form: str | None) -> str:
        return self._constraints(None) + self._asides("reworded")

    # --- whole-request layouts ---------------------------------------------------------------------------------

    def _fields(self, form: str | None) -> str:
        """The request as labelled fields (bullets, a one-line form, key=value), constraints as notes."""
        family, label = self.request.family, self.field_labels
        if family == "patrol":
            rows = [(label["take_off"], self._o(None)), (label["inspect"], self._w(None))]
            rows += [(label["land"], self._d(None))]
        else:
            rows = [(label["from"], self._o(None))]
            rows += [(label["via"], self._w(None))] if family == "via" else []
            rows += [(label["to"], self._d(None))]
            rows += [(label["back"], self._o(None))] if family == "round_trip" else []
            rows += [(label["cargo"], self._cargo(None))]
        if self.request.stated_deadline is not None:
            rows.append((label["deadline"], self._deadline("field")))
        if self.task.priority != "normal":
            rows.append((label["priority"], self.priority_words[self.task.priority]))
        if family == "emergency":
            rows.append((label["type"], label["emergency"]))
        rows += [(label["note"], self._said(c)) for c in self.request.constraints]
        return self.field_layouts(rows)[form or "bullets"]()

    def field_layouts(self, rows: list[tuple[str, str]]) -> dict[str, Callable[[], str]]:
        """The (label, value) rows laid out, by `{fields}` form."""
        raise NotImplementedError

    def _arrow(self, form: str | None) -> str:
        arrow = self.arrows[form or self.default_arrow]
        stops = [self._o(None), *(self._place(w, None) for w in self.task.waypoints)]
        if self.request.family == "round_trip":
            return arrow.join([*stops, self._o(None)]) + self.colon + self._cargo(None)
        stops.append(self._place(self.task.destination, None))
        if self.request.family == "patrol":
            return self.patrol_lead + arrow.join(stops)
        return arrow.join(stops) + self.colon + self._cargo(None)

    def _headline(self, form: str | None) -> str:
        """The route as a headline: "A => B, a parcel, 1.2 kg, now" (the way back or stops in the route)."""
        stops = [self._o(None), *(self._place(w, None) for w in self.task.waypoints)]
        stops.append(self._o(None) if self.request.family == "round_trip" else self._place(self.task.destination, None))
        return self.headline_arrow.join(stops) + self.headline_gap + self._cargo("comma") + self.headline_now

    def _deadline(self, form: str | None) -> str:
        """The stated deadline in `form` ("field" for a field layout's value), else a drawn form; "" if none."""
        raise NotImplementedError


ID_LIKE = re.compile(r"^[^\s]*[_\d]")  # an entity or UAV id: never re-cased


def protected_spans(text: str, phrases: list[str]) -> list[tuple[int, int]]:
    """Where the facts sit in `text`: typos and other noise leave these character ranges alone."""
    spans = []
    for phrase in filter(None, phrases):
        spans += [(m.start(), m.end()) for m in re.finditer(re.escape(phrase), text)]
    spans += [(m.start(), m.end()) for m in re.finditer(r"[\w.]*\d[\w.%]*", text)]
    return spans


def fact_phrases(voice: Voice) -> list[str]:
    """Every phrase of the request that carries a fact: names, cargo, UAV ids, drawn sentences."""
    task, asides = voice.request.task, voice.request.asides
    phrases = [getattr(Term(r.en, r.zh), voice.lang) for r in voice.naming.references]
    if task.cargo:
        phrases.append(getattr(task.cargo.term, voice.lang))
    if task.ambiguous_kind:
        phrases.append(getattr(KIND_NOUNS[task.ambiguous_kind], voice.lang))
    phrases += list(task.named_uavs)
    phrases += [voice.request.excluded_uav] if voice.request.excluded_uav else []
    phrases += [getattr(term, voice.lang) for term in (asides.hint, asides.injection) if term]
    return phrases


def outside(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    return all(end <= a or start >= b for a, b in spans)


# When a free-form construction of issue 37 fits a request (english.py and chinese.py share them).
def excludes(request: Request) -> bool:
    return request.excluded_uav is not None


def avoids(request: Request) -> bool:
    return any(c.kind == "avoid" for c in request.constraints)


def demands(request: Request) -> bool:
    return request.demand


VIA = frozenset({"via"})
TO_FROM = frozenset({"delivery", "emergency", "via"})
