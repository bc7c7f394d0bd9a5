"""Exact grounding: the phrases that name one world entity for certain (its id, its full and short names in every
language) and the role cues around them: what the fidelity gate holds a plan to."""

from __future__ import annotations

import re
from collections import Counter, defaultdict

from ir.fidelity import Mentions
from tools.world import EntityKind, World

# "the X on the north side", "the X in the city centre", "the X near the river": a name's trailing locative phrase.
_LOCATIVE = re.compile(r"\s+(?:on|in|at|near|by|beside|off)\s+(?:the\s+)?[\w' .-]+$", re.IGNORECASE)


# "东侧的X", "市中心的X": a Chinese name's leading locative phrase.
ZH_LOCATIVE = re.compile(r"^(?:[东南西北]{1,2}(?:侧|部|边|面|方)|(?:城)?市中心|市区|城区)的")


_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)


# A place named right after one of these is one to keep away from, not one to visit.
_AVOID_CUE = re.compile(
    r"(?:keep (?:well )?(?:clear|away) (?:of|from)|avoid(?:ing)?|away from|stay (?:out of|clear of|off)|steer clear of|"
    r"keep off|bypass(?:ing)?|skirt(?:ing)?(?: around)?|(?:go|route|fly) around|"
    r"(?:\bdon't|\bdo not|\bdont|\bnever|\bnot|n't)\s+(?:\w+\s+){0,2}?(?:over|across|through|near|past|via|above|by|into)|"
    r"避开|远离|绕开|绕过|不要经过|别经过|不经过|不要从|别从|不要飞过|别飞过|不要靠近|别靠近|不要路过|别路过|不要飞越|不要穿过)"
    r"\W{0,3}(?:the\s+)?$"
)


# "no need to avoid X", "you don't have to go around X": a waived keep-out, X no place to keep away from.
# The words that waive a keep-out: "no need to avoid X", "you don't have to go around X", "不用绕开X".
WAIVER = (
    r"(?:no need to|needn't|need not|(?:don't|do not|dont) (?:have|need) to|no reason to|not necessary to|you needn't)"
    r"(?: bother(?: to| with)?)?"
)
WAIVER_ZH = r"(?:不用|无需|不必|不需要|没必要|用不着)"
WAIVED_BEFORE = re.compile(rf"{WAIVER}\s*$|{WAIVER_ZH}$")


# Where the cargo waits: "it's (sitting) at X", "it is stored at X", "collect it at X", "pick it up from X".
PICKUP_CUE = (
    r"\bit(?:'s| is) (?:\w+ )?(?:at|in)|\b(?:is|are|'s) (?:sitting|waiting|kept|stored|located|ready|loaded) (?:at|in)|"
    r"\bcollect\w*\b[^.;,]{0,30}?\b(?:at|from)|\bpick(?:s|ing)? (?:it |them )?up\b[^.;,]{0,30}?\b(?:at|from)|"
    r"\b(?:i've|i have|we've|we have|i've got|we've got|got)\b(?: got)?[^.;,]{0,30}?\b(?:at|in)\b|"
    r"(?:东西|货物?|物品)(?:现在)?在"
)
# A form's field names the role: "Sender: X", "pickup: X", "发件:X", "起点:X"; "Recipient: X", "目的地:X", "收件:X".
ORIGIN_FIELD = r"\b(?:sender|pick[- ]?up|origin|from|start|take[_ -]?off(?:[_ ]at)?)\s*[:=]|(?:发件|寄件|起点|起飞点|取货点|出发地)\s*[:=:]?"
DESTINATION_FIELD = r"\b(?:recipient|drop[- ]?off|destination|to|deliver to|land(?:ing)?[_ ]at)\s*[:=]|(?:收件|终点|降落点|目的地|送达地)\s*(?:是|为|[:=:])?"
# "A -> B", "A > B", "A—>B", "A => B": an arrow from one place to the next.
ARROW = r"-+>|—+>|=+>|>|→|⇒|➔|➜"


# Cues that fix a named place's role for certain when they stand right before it ("from X", "to X", "land at X").
_ORIGIN_CUE = re.compile(
    r"(?:\bfrom|taking off from|take off from|\bstart(?:ing)? (?:at|from)|从|由|"
    + PICKUP_CUE
    + "|"
    + ORIGIN_FIELD
    + r")"
    r"\W{0,3}(?:the\s+)?$"
)


_DESTINATION_CUE = re.compile(
    r"(?:\bto|drop (?:it |them )?(?:off )?at|\bland at|\bend (?:up )?at|finish(?:es|ing)? (?:up )?at|arrive at|"
    r"\bpark (?:it |her |the drone )?(?:at|on|by)|\bleave (?:it|her|the drone) (?:parked |sitting )?(?:at|on|by)|\bwrap up at|"
    r"停(?:在|到|放)|"
    r"送到|送往|飞往|运到|送至|配送至|飞到|终点(?:为|是)?|降落(?:在|于)?|" + DESTINATION_FIELD + "|" + ARROW + r")"
    r"\W{0,3}(?:the\s+)?$"
)


_ROLE_CUES = (("origin", _ORIGIN_CUE), ("destination", _DESTINATION_CUE))


_VIA_CUE = re.compile(
    r"(?:\bvia|\bthrough|\bpassing(?: by)?|\bby way of|\bswing(?:s|ing)? (?:by|past|through)|"
    r"\bstop(?:s|ping)? (?:off |over )?(?:at|by|in)|\b(?:with|make) a (?:quick )?stop (?:at|in|by)|\bdrop(?:s|ping)? by|"
    r"\bcall(?:s|ing)? (?:in )?at|\bpass(?:es|ing)? by|经过|途经|经由|顺路(?:经过|去|到)?|中途(?:在|经过|停)?|路过)"
    r"\W{0,3}(?:the\s+)?$"
)


# "X needs 2 kg sent over to Y", "X needs the kit taken out to Y": X sends, Y receives.
_SENT_ON = (
    r"(?![^.;]{0,40}\b(?:sent|taken|delivered|flown|brought|carried|moved|shipped|run|got|gotten|rushed)\b"
    r"[^.;]{0,15}\b(?:to|over to|out to)\b)"
)


# Cues that fix a role when they stand right after the place, as Chinese puts them ("请到X取货", "X起飞", "X需要...", "X发生紧急情况").
# They outrank a cue before it: in "请到X取货" the 到 is "go to" the pickup, not the destination.
AFTER_ROLE_CUES = (
    ("origin", re.compile(r"^\W{0,2}(?:取货|提货|取(?!消)|起飞|出发|装|发出|寄出|发来)")),
    ("avoid", re.compile(r"^\W{0,2}(?:除外|以外|之外|不用去|不去|不要去|别去)")),  # "东堤除外": every other site
    (
        "destination",
        re.compile(
            r"^\W{0,2}(?:那边|这边|那里)?(?:需要|急需|发生|在等|等着)|"
            r"^\W{0,2}(?:urgently |badly )?(?:needs?|requires?|is waiting for)\b" + _SENT_ON
        ),
    ),
)


# "fly to X and hand over to a courier", "请飞到X,在那里交给地面配送员": X is where the cargo changes hands, whatever
# cue stands before it; the destination is the place the courier takes it to.
HANDOFF_AFTER = re.compile(r"\W{0,3}(?:and\s+)?(?:hand\s+(?:it\s+|the\s+\w+\s+)?over\b|(?:在那里)?(?:交给|转交))")


# A place or zone named to be entered ("pass through X", "film X from inside it", "进入X内部") and named to be kept
# out of ("never enter X", "不进入X"): a pair of demands no flight can meet. The keep-out cue is read first, since
# "never enter X" holds an "enter".
_KEEP_OUT_BEFORE = re.compile(
    r"(?:(?:never|not|n't|do not|must not)\s+(?:\w+\s+)?(?:enter|go into|fly into|cross)(?:es|s)?|"
    r"keep (?:out|clear) of|stay out of|avoid(?:ing)?|(?:不|不要|不能|不得|禁止)(?:进入|穿过|经过))\W{0,3}(?:the\s+)?$"
)


_ENTER_BEFORE = re.compile(
    r"(?:pass(?:es|ing)? through|fly (?:into|through)|\benter(?:s|ing)?|穿过|进入)\W{0,3}(?:the\s+)?$"
)


_ENTER_AFTER = re.compile(r"^[^.,;。,;]{0,40}?(?:\bfrom inside|内部)")  # past a locative ("X on the west side")


_ZH_LOCATIVE_BEFORE = re.compile(ZH_LOCATIVE.pattern.removeprefix("^") + "$")  # "穿过|市中心的|X"


_ZONE_NOUN = re.compile(r"\s+(?:grounds|campus|area|zone)$")


# "depot_1 to hospital_1": a place followed by "to" and another place is where the flight starts.
_TO_NEXT_PLACE = re.compile(r"\s*(?:to|至|" + ARROW + r")\s*(?:the\s+)?")


AFTER_CUE_WINDOW = 80  # characters after a mention searched for a role cue ("X urgently needs ... sent to Y")


AVOID_CUE_WINDOW = 30  # characters before a mention searched for an avoid cue


def _phrase(text: str) -> str:
    return _ARTICLE.sub("", " ".join(text.split())).lower()


def phrase_spans(phrase: str, text: str) -> list[tuple[int, int]]:
    """Where a (lower-cased) phrase stands in the text as a whole word."""
    if not phrase or phrase not in text:  # most of a world's names are absent: no pattern to compile for them
        return []
    # ASCII word boundaries: in Chinese an id stands right beside CJK characters ("从hospital_2送到").
    return [m.span() for m in re.finditer(rf"(?<![a-z0-9_-]){re.escape(phrase)}(?![a-z0-9_-])", text)]


# "滨河路内涝点" -> "内涝点": a Chinese name's leading street, said without it once the place is known ("内涝点"),
# kept where three or more characters are left (a bare "医院" or "小学" is a kind word, not a name).
ZH_STREET = re.compile(r"^[\u4e00-\u9fff]{1,4}?(?:路|街|巷|大道)(?=[\u4e00-\u9fff]{3,}$)")


def short_name(name: str) -> str:
    """A name without its place words ("the No. 2 charging pad in the north-west" -> "the No. 2 charging pad")."""
    return ZH_LOCATIVE.sub("", _LOCATIVE.sub("", name.strip()))


def name_variants(name: str) -> tuple[str, ...]:
    """The ways a request may say a name, longest first: whole, before its comma ("Central Hospital, south-west"),
    without its place words, and (Chinese) without its street too ("滨河路内涝点" -> "内涝点")."""
    short = short_name(name)
    return (name, name.split(",")[0], short, ZH_STREET.sub("", short))


def _phrases(world: World) -> list[tuple[str, str]]:
    """(phrase, entity id) pairs that name one entity for certain: its id, and its full and short names, in every
    language the world names it in, where no other entity goes by the same phrase."""
    owners: dict[str, set[str]] = defaultdict(set)
    for entity in world.entities:
        for name in filter(None, (entity.name, *entity.names.values())):
            for variant in name_variants(name):
                owners[_phrase(variant)].add(entity.id)
    pairs = [(ref.lower(), ref) for ref in world.entity_index]
    return pairs + [(phrase, next(iter(refs))) for phrase, refs in owners.items() if phrase and len(refs) == 1]


def ground_mentions(world: World, instruction: str) -> Mentions:
    text = " ".join(instruction.split()).lower()
    spans = sorted((start, end, ref) for phrase, ref in _phrases(world) for start, end in phrase_spans(phrase, text))
    first: dict[str, int] = {}
    avoided: set[str] = set()
    roles: dict[str, set[str]] = defaultdict(set)
    leading: set[str] = set()  # places followed by "to" and another place, with no cue of their own
    for start, end, ref in spans:
        before = text[max(0, start - AVOID_CUE_WINDOW) : start]
        if (cue := _AVOID_CUE.search(before)) and not WAIVED_BEFORE.search(before[: cue.start()]):
            avoided.add(ref)
            continue
        first.setdefault(ref, start)
        if HANDOFF_AFTER.match(text, end):
            roles[ref].add("handoff")
            continue
        cued = after_role(text, end) or {role for role, cue in _ROLE_CUES if cue.search(before)}
        step = _TO_NEXT_PLACE.match(text, end)
        if not (cued or _VIA_CUE.search(before)) and step and any(s == step.end() and r != ref for s, _, r in spans):
            leading.add(ref)
        roles[ref] |= cued
    if not any("origin" in found for found in roles.values()):  # "from A through B to C": B is no origin
        for ref in leading:
            roles[ref].add("origin")
    uavs = {ref: hits[0][0] for ref in world.uav_index if (hits := phrase_spans(ref.lower(), text))}
    ordered = sorted(first, key=lambda ref: first[ref])
    return Mentions(
        places=ordered,
        uavs=sorted(uavs, key=lambda ref: uavs[ref]),
        avoided=sorted(avoided - set(first)),
        unresolved=_unresolved(world, text, [(start, end) for start, end, _ in spans]),
        origins=[ref for ref in ordered if "origin" in roles[ref]],
        destinations=[ref for ref in ordered if "destination" in roles[ref] and "handoff" not in roles[ref]],
        handoff_points=[ref for ref in ordered if "handoff" in roles[ref]],
    )


def entered_and_kept_out(world: World, instruction: str) -> list[str]:
    """Ids of the places and zones the request names once to be entered and once to be kept out of."""
    text = " ".join(instruction.split()).lower()
    zone_phrases = [
        (phrase, zone.id)
        for zone in world.sensitive_zones
        for phrase in {zone.id.lower(), _phrase(zone.name), _ZONE_NOUN.sub("", _phrase(zone.name))}
        if phrase
    ]
    spans = sorted(
        (
            (start, -end, ref)
            for phrase, ref in [*_phrases(world), *zone_phrases]
            for start, end in phrase_spans(phrase, text)
        ),
    )
    cues: dict[str, set[str]] = defaultdict(set)
    reach = -1
    for start, negative_end, ref in spans:  # the longest phrase at each place; a phrase inside it is the same name
        if start < reach:
            continue
        reach = end = -negative_end
        before = _ZH_LOCATIVE_BEFORE.sub("", text[max(0, start - AVOID_CUE_WINDOW) : start])
        if _KEEP_OUT_BEFORE.search(before):
            cues[ref].add("keep_out")
        elif _ENTER_BEFORE.search(before) or _ENTER_AFTER.match(text[end:]):
            cues[ref].add("enter")
    return [ref for ref, found in cues.items() if found == {"enter", "keep_out"}]


def after_role(text: str, end: int) -> set[str]:
    """The role a cue right after a mention fixes ({} when none)."""
    after = text[end : end + AFTER_CUE_WINDOW]
    return {role for role, cue in AFTER_ROLE_CUES if cue.search(after)}


def _unresolved(world: World, text: str, covered: list[tuple[int, int]]) -> list[str]:
    """Kinds named bare ("to the hospital") outside every grounded phrase, where the world has two or more."""
    # "other" is the world's catch-all kind, not a noun: "the other drops it off" names the second UAV
    kinds = Counter(entity.kind.value for entity in world.entities if entity.kind is not EntityKind.other)
    found = []
    for kind, count in kinds.items():
        noun = kind.replace("_", " ")
        for start, end in phrase_spans(f"the {noun}", text):
            start += len("the ")  # the noun itself, which a grounded name may begin with ("the hospital charging pad")
            if count > 1 and not any(a <= start and end <= b for a, b in covered):
                found.append(f"the {noun} ({count} in this world)")
                break
    return found
