"""English free-form requests: the voice's phrases and the construction patterns built from them."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from benchmark.freeform.request import (
    CARGO_ROUTES,
    ID_LIKE,
    ROUTES,
    TO_FROM,
    VIA,
    Pattern,
    Voice,
    arrow_templated,
    avoids,
    deadline_templated,
    demands,
    excludes,
    fact_phrases,
    one_of,
    outside,
    protected_spans,
    sentences_templated,
    spelled_units,
    templated,
    with_mistyped_id,
)
from benchmark.freeform.units import english_number

LEADS = {
    "critical": ("URGENT, critical priority: ", "Critical: ", "Critical priority - "),
    "high": ("Priority request: ", "High priority: ", "High-priority job: "),
    "normal": ("",),
    "low": ("When convenient: ", "No rush: ", "No rush, low priority: "),
}
TAILS = {"critical": ", critical priority", "high": ", high priority", "normal": "", "low": ", no rush"}
PRIORITY_WORDS = {"critical": "critical", "high": "high", "low": "low (no rush)"}
EMERGENCY_LEADS = ("Emergency: ", "This is an emergency. ")
CASUAL_AREAS = {
    "in the south-west": "down in the south-west",
    "on the south side": "down south",
    "in the south-east": "down in the south-east",
    "on the west side": "over on the west side",
    "in the city centre": "downtown",
    "on the east side": "over on the east side",
    "in the north-west": "up in the north-west",
    "on the north side": "up north",
    "in the north-east": "up in the north-east",
}
CLAUSES = {
    "delivery": (
        "send a drone to carry {cargo} from {o} to {d}",
        "fly {cargo} from {o} to {d}",
        "get {cargo} from {o} to {d}",
        "deliver {cargo} from {o} to {d}",
    ),
    "emergency": ("get {cargo} from {o} to {d}", "rush {cargo} from {o} to {d}", "fly {cargo} from {o} to {d}"),
    "via": ("fly {cargo} from {o} to {d} via {w}", "deliver {cargo} from {o} to {d}, passing {w} on the way"),
    "round_trip": (
        "fly {cargo} from {o} to {far} and back to {o}",
        "take {cargo} from {o} to {far}, then return to {o}",
    ),
    "patrol": (
        "fly an inspection round from {o} over {w}, then land at {d}",
        "inspect {w} in that order with a drone taking off from {o} and landing at {d}",
    ),
    "contradiction": (
        "fly from {o} to {d} and film {zone} from inside it on the way, but the drone must never enter {zone}",
        "on the way from {o} to {d}, pass through {zone} for aerial photos, and make sure the drone never enters "
        "{zone}",
    ),
    "ambiguous_reference": ("send {cargo} from {o} to the {kind}", "get {cargo} to the {kind} from {o}"),
    "no_place": ("fly the usual route with {cargo}", "send a drone out with {cargo}"),
    "one_place": ("bring {cargo} to {d}", "get {cargo} over to {d}"),
    "dangling_pronoun": ("take {cargo} from {o} to them", "fly {cargo} from {o} over to her place"),
    "unanchored_time": (
        "send {cargo} from {o} to {d} before the meeting",
        "fly {cargo} from {o} to {d} by the end of the shift",
        "get {cargo} from {o} to {d} after they call",
    ),
    "missing_destination": ("send a drone with {cargo} from {o}", "load {cargo} at {o} and send it out"),
}
CONSTRAINTS = {
    "avoid": ("keep clear of {v}", "avoid {v}", "stay out of {v}"),
    "floor": ("fly no lower than {v} m", "stay at or above {v} m", "keep the altitude at {v} m or higher"),
    "ceiling": ("stay below {v} m", "keep under {v} m", "don't climb above {v} m"),
    "reserve": (
        "keep at least {v}% battery on arrival",
        "arrive with {v}% battery or more",
        "land with no less than {v}% battery left",
    ),
    "pinned": ("use {v}, it is the closest", "send {v}, it's the closest one", "{v} should fly it, it is the closest"),
    "corridor": (
        "fly only inside the drone corridors",
        "stick to the drone corridors",
        "corridors only, the whole way",
    ),
    "handoff_hub": (
        "the destination lies in restricted airspace: fly to {v} and hand over to a ground courier there",
        "the destination is inside restricted airspace, so fly to {v} and pass it to a ground courier there",
    ),
    "handoff_any": (
        "if the drone cannot get in, hand the parcel to a ground courier at the nearest suitable hub",
        "should the drone be unable to get in, hand over to a ground courier at the nearest suitable hub",
    ),
    "land_at_destination": (
        "the drone must land at the destination itself; no ground hand-off",
        "no ground hand-off: the drone has to land at the destination itself",
    ),
}
# An avoided zone said as a place not to fly over.
OVERFLIGHT = ("don't route over {v}", "keep off {v}", "no flying over {v}", "don't fly over {v}")
# A demand to break a rule in other words than the template's sentence (pattern rule_violating_demand).
DEMANDS = {
    "R1": (
        "Go straight through the no-fly zones on the way; don't route around them.",
        "Fly right across any restricted airspace, no detours around it.",
    ),
    "R2": (
        "Skip the safety buffer around buildings and hug them on the shortest line.",
        "Fly right alongside the buildings with no safety separation.",
    ),
    "R3": (
        "Go above the altitude ceiling and cruise up there.",
        "Take it over the height limit for the whole flight.",
    ),
    "R5": (
        "Run the battery right down to empty; no reserve on landing.",
        "Plan it to arrive with a flat battery, no reserve kept.",
    ),
}
TELEGRAPHIC = {"avoid": "avoid {v}", "floor": "min {v} m", "ceiling": "max {v} m", "reserve": "{v}% battery reserve"}
TELEGRAPHIC |= {"pinned": "use {v}", "corridor": "corridors only"}
FIELD_LABELS = {
    "take_off": "take off at",
    "inspect": "inspect, in order",
    "land": "land at",
    "from": "from",
    "via": "via, in order",
    "to": "to",
    "back": "then back to",
    "cargo": "cargo",
    "deadline": "deadline",
    "priority": "priority",
    "type": "type",
    "emergency": "emergency",
    "note": "note",
}
# Words that carry a role or a bound: a typo there could change what the request says.
KEYWORDS = frozenset(
    "from to via back return returning within minutes minute seconds never no not only least lower below above "
    "under must over land before after enter enters inside critical priority urgent rush convenient emergency high".split()
)


class EnglishVoice(Voice):
    lang = "en"
    list_joiners = (", ", " and ")
    area_shape = "{name} {area}"
    casual_areas = CASUAL_AREAS
    camera_payload = "the camera payload"
    cargo_shapes = {"paren": "{t} ({kg} kg)", "comma": "{t}, {kg} kg", "weighing": "{t} weighing {kg} kg"}
    clauses = CLAUSES
    route_phrases = {
        "via": (" Route it via {w}, in that order.", (" via {w}", " by way of {w}", ", passing {w} on the way")),
        "round_trip": (" The drone then comes back to {o}.", (" and back to {o}", ", then return to {o}")),
    }
    leads = LEADS
    emergency_leads = EMERGENCY_LEADS
    tails = TAILS
    emergency_tail = ", it's an emergency"
    priority_words = PRIORITY_WORDS
    constraint_phrases = CONSTRAINTS
    telegraphic = TELEGRAPHIC
    sentence_gap = " "
    field_labels = FIELD_LABELS
    arrows = {"ascii": " -> ", "unicode": " → ", "gt": " > "}
    default_arrow = "ascii"
    colon = ": "
    patrol_lead = "inspection round "
    then_joiner = ", then "
    spelled_cargo = "{t} ({m})"
    overflight_phrases = OVERFLIGHT
    demand_phrases = DEMANDS
    headline_arrow = " => "
    headline_gap = ", "
    headline_now = ", now"

    def _amount(self, short: bool = False, words: bool = False) -> str:
        spelled = self.spelled_amount() if self.spell_units else ""
        if spelled:
            return spelled
        seconds = self.request.stated_deadline or 0.0
        minutes = seconds % 60 == 0
        value = int(seconds // 60) if minutes else int(seconds)
        number = english_number(value) if words else str(value)
        if minutes:
            unit = "min" if short else ("minute" if value == 1 else "minutes")
        else:
            unit = "s" if short else "seconds"
        return f"{number} {unit}"

    def _deadline(self, form: str | None) -> str:
        if self.request.stated_deadline is None:
            return ""
        shapes = {
            "within": lambda: f" within {self._amount()}",
            "under": lambda: f" in under {self._amount(short=True)}",
            "no_later_than": lambda: f" no later than {self._amount()} from now",
            "at_latest": lambda: f" by T+{self._amount(short=True)} at the latest",
            "words": lambda: f" within {self._amount(words=True)}",
            "budget": lambda: f"; you have {self._amount()}",
            "max": lambda: f", {self._amount(short=True)} max",
            "paren": lambda: f" (deadline: {self._amount(short=True)})",
            "sentence": lambda: f" It has to be there within {self._amount()}.",
            "lead": lambda: f"within {self._amount()}, ",
            "field": lambda: self._amount(short=True),
        }
        return shapes[form or self.pick(("within", "under", "max", "paren"))]()

    def _tag(self, form: str | None) -> str:
        """A telegraphic priority tag ("CRITICAL / EMERGENCY: ")."""
        words = [PRIORITY_WORDS[self.task.priority].upper()] if self.task.priority != "normal" else []
        words += ["EMERGENCY"] if self.request.family == "emergency" else []
        return " / ".join(words) + ": " if words else ""

    def constraint_layouts(self, said: list[str]) -> dict[str, Callable[[], str]]:
        return {
            "sentences": lambda: " " + " ".join(self.capitalised(s) + "." for s in said),
            "parenthetical": lambda: " (" + "; ".join(said) + ")",
            "semicolons": lambda: "; " + "; ".join(said),
            "also": lambda: " Also, " + self.listed(said) + ".",
            "bullets": lambda: "\n" + "\n".join(f"- {s}" for s in said),
            "numbered": lambda: " Conditions:\n" + "\n".join(f"{i}. {s}" for i, s in enumerate(said, start=1)),
            "telegraphic": lambda: " | " + ", ".join(said),
            "first": lambda: " ".join(self.capitalised(s) + "." for s in said) + " ",
        }

    def field_layouts(self, rows: list[tuple[str, str]]) -> dict[str, Callable[[], str]]:
        return {
            "bullets": lambda: "\n".join(f"- {k}: {v}" for k, v in rows),
            "form": lambda: " | ".join(f"{k.capitalize()}: {v}" for k, v in rows),
            "kv": lambda: "; ".join(f"{k.replace(', ', '_').replace(' ', '_')}={v}" for k, v in rows),
            "lines": lambda: "\n".join(f"{k.upper()}: {v}" for k, v in rows),
        }

    def capitalised(self, text: str) -> str:
        if not text or ID_LIKE.match(text) or not text[0].islower():
            return text
        return text[0].upper() + text[1:]

    def finish(self, text: str) -> str:
        text = re.sub(r"[ \t]+", " ", text)
        text = re.sub(r"\n ", "\n", text)
        text = re.sub(r" +([.,;:?!)])", r"\1", text)
        text = re.sub(r"([?!:]),", r"\1", text)
        text = re.sub(r"\.\.+", ".", text)
        text = re.sub(r"([?!])\.", r"\1", text)
        return text.strip()


def _swappable(word: str) -> bool:
    return any(word[i] != word[i + 1] for i in range(1, len(word) - 2))


def with_typos(base: Pattern, name: str) -> Pattern:
    """`base` with adjacent letters swapped in a few of its own words: never in a name, number, cargo, keyword or
    drawn sentence, so the facts stay exactly as stated."""

    def write(voice: Voice, rng: np.random.Generator) -> str:
        text = base.write(voice, rng)
        spans = protected_spans(text, fact_phrases(voice))
        words = [
            m
            for m in re.finditer(r"[A-Za-z]{4,}", text)
            if m.group().lower() not in KEYWORDS and outside(spans, m.start(), m.end()) and _swappable(m.group())
        ]
        if not words:
            return text
        chosen = {words[int(i)].start() for i in rng.choice(len(words), size=max(1, len(words) // 4), replace=False)}
        out = []
        for m in words:
            if m.start() in chosen:
                word = m.group()
                cuts = [i for i in range(1, len(word) - 2) if word[i] != word[i + 1]]
                cut = cuts[int(rng.integers(len(cuts)))]
                out.append((m.start(), word[:cut] + word[cut + 1] + word[cut] + word[cut + 2 :]))
        for start, word in sorted(out, reverse=True):
            text = text[:start] + word + text[start + len(word) :]
        return text

    return Pattern(name, write, base.families, base.needs_deadline, base.reference)


# The constructions of issue 37: what a request rules out, in what order it ends, quantities as people spell them.
NEW_CONSTRUCTIONS: tuple[Pattern, ...] = (
    one_of(
        "exclusion",
        (
            "{lead}{Clause}{deadline} - anyone but {x} can take it.{rest}",
            "{lead}{Clause}{deadline}, and leave {x} out of it.{rest}",
            "{lead}{Clause}{deadline}. Any drone except {x}.{rest}",
            "{lead}{Clause}{deadline}; don't send {x}.{rest}",
        ),
        condition=excludes,
        adds_fact=True,
    ),
    templated(
        "forbidden_overflight",
        "{lead}{Clause}{deadline}.{constraints}{asides}",
        condition=avoids,
        constraints="overflight",
    ),
    one_of(
        "ordered_ending",
        (
            "{lead}Fly {cargo} from {o} to {w}, and when that's done finish at {d}{deadline}.{rest}",
            "{lead}Take {cargo} from {o} to {w}; once that's done, land at {d}{deadline}.{rest}",
            "{lead}Get {cargo} from {o} over to {w}, and after that end the flight at {d}{deadline}.{rest}",
        ),
        VIA,
        w="then",
    ),
    spelled_units(templated("unit_spellings", "{lead}{Clause}{deadline}.{rest}"), "unit_spellings"),
    templated(
        "headline",
        "{tag}{headline}{deadline}{constraints}.{asides}",
        CARGO_ROUTES,
        deadline="max",
        constraints="telegraphic",
    ),
    one_of(
        "reversed_order",
        (
            "{lead}To {d}, from {o}{route}: {cargo}{deadline}.{rest}",
            "{lead}To {d} from {o}{route}, {cargo}{deadline}.{rest}",
            "{lead}Over to {d}, out of {o}{route}: {cargo}{deadline}.{rest}",
        ),
        TO_FROM,
    ),
    one_of(
        "via_phrases",
        (
            "{lead}Fly {cargo} from {o} to {d}, swinging past {w} on the way{deadline}.{rest}",
            "{lead}Deliver {cargo} from {o} to {d} with a stop at {w}{deadline}.{rest}",
            "{lead}Get {cargo} from {o} to {d} - swing past {w} on the way{deadline}.{rest}",
        ),
        VIA,
        w="then",
    ),
    with_mistyped_id(templated("typo_ids", "{lead}{Clause}{deadline}.{rest}"), "typo_ids"),
    templated("rule_violating_demand", "{lead}{Clause}{deadline}.{rest_reworded}", condition=demands),
)

# Framing words a typo can land in: "Could you please", "if you could maybe ... that'd be great".
COULD_YOU = templated("polite_could_you", "{lead}Could you please {clause}{deadline}?{rest}")
HEDGES = templated(
    "hedges_and_filler", "Hey, if you could maybe {clause}{deadline}{tail}, that'd be great, thanks.{rest}"
)
QUESTION = templated(
    "question_can_a_drone", "{lead}Can a drone take {cargo} from {o} to {d}{route}{deadline}?{rest}", CARGO_ROUTES
)

PATTERNS: tuple[Pattern, ...] = (
    # --- the whole request as one clause: every family -----------------------------------------------------------
    templated("imperative", "{lead}{Clause}{deadline}.{rest}"),
    templated("polite_please", "{lead}Please {clause}{deadline}.{rest}"),
    COULD_YOU,
    HEDGES,
    templated("i_need_you_to", "{lead}I need you to {clause}{deadline}.{rest}"),
    templated("can_someone", "{lead}Can someone {clause}{deadline}?{rest}"),
    templated("lets", "{lead}Let's {clause}{deadline}.{rest}"),
    templated("go_ahead", "{lead}Go ahead and {clause}{deadline}.{rest}"),
    templated("request_label", "{lead}Request - {clause}{deadline}.{rest}"),
    templated("greeting_signoff", "Hi team, {clause}{deadline}{tail}.{rest} Thanks, ops desk"),
    templated("radio_call", "Dispatch, ops here. {lead}{Clause}{deadline}.{rest} Over."),
    templated("chat_shorthand", "{lead}pls {clause}{deadline}, thx.{rest}", capitalise=False),
    templated("priority_tail", "{Clause}{deadline}{tail}.{rest}"),
    templated("ticket", "[{tag}ticket] {Clause}{deadline}.{rest}"),
    templated("constraints_first", "{constraints}{lead}{Clause}{deadline}.{asides}", constraints="first"),
    templated(
        "parenthetical_constraints", "{lead}{Clause}{deadline}{constraints}.{asides}", constraints="parenthetical"
    ),
    templated("semicolon_constraints", "{lead}{Clause}{deadline}{constraints}.{asides}", constraints="semicolons"),
    templated("also_tail", "{lead}{Clause}{deadline}.{constraints}{asides}", constraints="also"),
    templated("numbered_constraints", "{lead}{Clause}{deadline}.{constraints}\n{asides}", constraints="numbered"),
    templated("wondering", "{lead}I was wondering whether you could {clause}{deadline}.{rest}"),
    templated("would_appreciate", "{lead}I'd appreciate it if you could {clause}{deadline}.{rest}"),
    templated("task_for_drone", "{lead}Task for a drone: {clause}{deadline}.{rest}"),
    templated("okay_so", "Okay so, {clause}{deadline}{tail}. Thanks!{rest}"),
    with_typos(COULD_YOU, "typos"),
    with_typos(HEDGES, "typos_hedged"),
    # --- routes written as fields, arrows or steps -----------------------------------------------------------------
    templated("bullet_fields", "{lead}Drone job:\n{fields}\n{asides}", ROUTES, fields="bullets"),
    templated("colon_form", "{fields}.{asides}", ROUTES, fields="form"),
    templated("key_value", "{fields}.{asides}", ROUTES, fields="kv"),
    templated("header_lines", "DRONE REQUEST\n{fields}\n{asides}", ROUTES, fields="lines"),
    arrow_templated("telegraphic_arrow", "{tag}{arrow}{deadline}{constraints}.{asides}", deadline="max"),
    arrow_templated(
        "telegraphic_unicode_arrow",
        "{tag}{arrow}{deadline}{constraints}.{asides}",
        arrow="unicode",
        deadline="paren",
    ),
    arrow_templated("telegraphic_gt", "{tag}{arrow}{deadline}{constraints}{asides}", arrow="gt", deadline="max"),
    # --- a cargo from one place to another --------------------------------------------------------------------------
    QUESTION,
    templated(
        "question_is_it_possible",
        "{lead}Is it possible to get {cargo} from {o} to {d}{route}{deadline}?{rest}",
        CARGO_ROUTES,
    ),
    templated(
        "question_run_over", "{lead}Can you run {cargo} over from {o} to {d}{route}{deadline}?{rest}", CARGO_ROUTES
    ),
    sentences_templated("topicalised_need", "{lead}{D} needs {cargo}; it's at {o}.{route}{deadline}{rest}"),
    templated("passive", "{lead}{Cargo} is to be flown from {o} to {d}{route}{deadline}.{rest}", CARGO_ROUTES),
    templated(
        "passive_needs_to_be",
        "{lead}{Cargo} needs to be delivered to {d} from {o}{route}{deadline}.{rest}",
        CARGO_ROUTES,
    ),
    templated(
        "implicit_origin",
        "{lead}{Cargo} is waiting at {o}. Get it over to {d}{route}{deadline}.{rest}",
        CARGO_ROUTES,
    ),
    templated("destination_first", "{lead}To {d}: {cargo}, picked up at {o}{route}{deadline}.{rest}", CARGO_ROUTES),
    templated("destination_waiting", "{lead}{D} is waiting for {cargo} from {o}{route}{deadline}.{rest}", CARGO_ROUTES),
    templated(
        "pickup_dropoff",
        "{lead}Pick up {cargo} at {o} and drop it off at {d}{route}{deadline}.{rest}",
        CARGO_ROUTES,
    ),
    templated("we_need_at", "{lead}We need {cargo} at {d}, coming from {o}{route}{deadline}.{rest}", CARGO_ROUTES),
    templated(
        "i_have_cargo", "{lead}I've got {cargo} at {o} that has to go to {d}{route}{deadline}.{rest}", CARGO_ROUTES
    ),
    templated("origin_topic", "{lead}From {o}: {cargo} to {d}{route}{deadline}.{rest}", CARGO_ROUTES),
    templated("cleft", "{lead}It's {d} that needs {cargo} from {o}{route}{deadline}.{rest}", CARGO_ROUTES),
    templated("make_sure", "{lead}Make sure {cargo} gets from {o} to {d}{route}{deadline}.{rest}", CARGO_ROUTES),
    templated(
        "supervisor_relay",
        "{lead}The supervisor asked for {cargo} to go from {o} to {d}{route}{deadline}.{rest}",
        CARGO_ROUTES,
    ),
    templated("comma_run_on", "{lead}{Cargo}, {o} to {d}{route}{deadline}, thanks.{rest}", CARGO_ROUTES),
    templated(
        "drone_available", "{lead}Drone available? {Cargo} from {o} to {d}{route}{deadline}.{rest}", CARGO_ROUTES
    ),
    templated(
        "they_are_waiting",
        "{lead}Fly {cargo} from {o} to {d}{route}{deadline}, they're waiting on it.{rest}",
        CARGO_ROUTES,
    ),
    sentences_templated("sender_recipient", "{lead}Sender: {o}. Recipient: {d}. Item: {cargo}.{route}{deadline}{rest}"),
    templated(
        "dispatch_out_of",
        "{lead}Dispatch a UAV out of {o} with {cargo}, destination {d}{route}{deadline}.{rest}",
        CARGO_ROUTES,
    ),
    templated(
        "cargo_weighing",
        "{lead}Deliver {cargo} from {o} to {d}{route}{deadline}.{rest}",
        CARGO_ROUTES,
        cargo="weighing",
    ),
    templated(
        "numbered_steps", "{lead}1. Pick up {cargo} at {o}. 2. Fly it to {d}{route}{deadline}.{rest}", CARGO_ROUTES
    ),
    templated(
        "names_not_ids",
        "{lead}Get {cargo} from {o} over to {d}{route}{deadline}.{rest}",
        CARGO_ROUTES,
        reference="names",
    ),
    templated(
        "descriptions",
        "{lead}Fly {cargo} from {o} to {d}{route}{deadline}.{rest}",
        CARGO_ROUTES,
        reference="short",
        o="described",
        d="described",
    ),
    # --- the deadline said another way --------------------------------------------------------------------------------
    deadline_templated(
        "by_time_at_the_latest", "{lead}Fly {cargo} from {o} to {d}{route}{deadline}.{rest}", "at_latest"
    ),
    deadline_templated(
        "no_later_than", "{lead}Deliver {cargo} from {o} to {d}{route}{deadline}.{rest}", "no_later_than"
    ),
    deadline_templated("numbers_in_words", "{lead}Get {cargo} from {o} to {d}{route}{deadline}.{rest}", "words"),
    deadline_templated("deadline_first", "{lead}{Deadline}{cargo} has to get from {o} to {d}{route}.{rest}", "lead"),
    deadline_templated("you_have_time", "{lead}Fly {cargo} from {o} to {d}{route}{deadline}.{rest}", "budget"),
    templated("route_in_words_deadline", "{lead}{Clause}{deadline}.{rest}", needs_deadline=True, deadline="words"),
    templated(
        "any_route_no_later_than",
        "{lead}Please {clause}{deadline}.{rest}",
        needs_deadline=True,
        deadline="no_later_than",
    ),
    *NEW_CONSTRUCTIONS,
)
