"""What a request states, apart from any model: the binding reading the gates hold every plan to (places, pinned
UAVs, deadline, altitude band, return leg, corridors only) and the facts it leaves out that no plan can do without;
its intent and priority."""

from __future__ import annotations

import re

from ir.fidelity import Mentions, StatedConstraints
from ir.model import Intent, Priority
from language.defaults import BASE_KINDS, CARGO_INTENTS, HANDOFF_ALLOWED
from language.grounding import entered_and_kept_out, ground_mentions, phrase_spans
from language.mentions import Mention, blank_mentions, find_mentions
from language.quantities import (
    Quantity,
    find_quantities,
    parse_deadline,
    parse_payload,
    parse_reserve,
    stated_band_and_separation,
    with_digits,
)
from tools.world import World

_EMERGENCY_CUES = (
    r"emergenc\w*|defibrillator|\baed\b|first[\s-]aid|ambulance|rescue|injur\w*|casualt\w*|life[\s-]saving|"
    r"\bblood\b|急救|紧急|除颤|救援|伤员|血液|血浆"
)


_INTENT_CUES: dict[Intent, str] = {
    Intent.return_: r"\breturn\w*|\bgo back\b|\bfly back\b|\bcome back\b|返航|返回|回到",
    Intent.charge: r"\b(?:re)?charg\w*|充电",
    Intent.patrol: r"\bpatrol\w*|巡逻|巡查",
    Intent.inspection: r"\binspect\w*|\bsurvey\w*|巡检|检查|勘察",
    Intent.monitoring: (
        r"\bmonitor\w*|\bsurveil\w*|\bwatch\b|\bobserve\b|\boverwatch\b|\bkeep an eye on\b|\bphotos?\b|"
        r"\bfilm\w*|\bfootage\b|监控|监视|监测|拍照|航拍|拍摄"
    ),
    Intent.delivery: (
        r"\bdeliver\w*|\bcarry\b|\btransport\w*|\bbring\b|\bdrop[\s-]off\b|\bship\b|配送|运送|递送|送达|送往|送到|送"
    ),
}


_PRIORITY_CUES: tuple[tuple[Priority, str], ...] = (
    (Priority.low, r"not urgent|no rush|low[\s-]priority|whenever|不急|不紧急|低优先级"),
    (Priority.critical, r"\bcritical\b|life[\s-](?:threatening|critical)|cardiac|危急|生命|最高优先级|特急"),
    (
        Priority.high,
        r"\burgent\w*|emergenc\w*|\basap\b|as soon as possible|immediately|high[\s-]priority|"
        r"紧急|急救|尽快|加急|立即|马上|高优先级",
    ),
)


INJECTION_CUES = (
    r"\bignore\b|\bdisregard\b|\boverride\b|\bskip\b.{0,20}(?:check|verif|rule)|no need to (?:avoid|verify|check)|"
    r"忽略|无视|不用(?:管|避让|验证)|跳过"
)


RETURN_LEG = re.compile(
    r"\band back\b|\bround[ -]trip\b|\b(?:come|fly|head|return) back\b|\breturn (?:it |the drone )?to (?:base|the start)"
    r"|往返|再返回|并返回|然后返回|飞回"
)


_CORRIDORS_ONLY = re.compile(
    r"\bonly (?:inside|in|within|along) (?:the )?(?:drone )?corridors?\b|\bcorridors? only\b|"
    r"\b(?:stick|keep|stay) (?:to|inside|in|within) (?:the )?(?:drone )?corridors?\b|只能在.{0,8}走廊|仅限.{0,6}走廊|只走.{0,6}走廊"
    r"|\b(?:never|don't|do not|must not) leave (?:the )?(?:drone )?corridors?|(?:不要|别|不得|不能|不可)离开.{0,8}走廊|"
    r"全程(?:走|沿|在).{0,8}走廊"
)


_TIME_UNIT = re.compile(r"\b(?:minutes?|mins?|seconds?|secs?|hours?|hrs?)\b|分钟|秒|小时|刻钟")


_ANCHOR_WORD = r"(?:before|by|until|till|no later than|after|once|when|as soon as)"


_EVENT = (
    r"(?:meeting|shift|surgery|operation|game|match|event|ceremony|service|class|lunch|dinner|breakfast|noon|midday|"
    r"midnight|dawn|dusk|sunset|sunrise|nightfall|dark|tonight|tomorrow|morning|afternoon|evening|weekend|end of|"
    r"close of business|usual time|closing|opening|then|later)"
)


_CLAUSE = (
    r"(?:(?:they|he|she|we|you|it|i)(?:'re|'s| are| is)?\s+\w+|(?:the|their|his|her|our)\s+\w+\s+(?:opens|closes|"
    r"starts|ends|begins|finishes|arrives|leaves|lands|is ready|are ready|gets there|calls))"
)


# A time the request ties to something the agent has no clock for ("before the meeting", "by noon", "after they
# call", "tomorrow", "会议前"): a deadline that cannot be placed, unlike a duration from now ("within 20 minutes").
_UNANCHORED_TIME = re.compile(
    rf"\b{_ANCHOR_WORD}\s+(?:(?:the|their|his|her|our|this)\s+)?{_EVENT}\b|\b{_ANCHOR_WORD}\s+{_CLAUSE}\b"
    r"|\b(?:by the time|in time for)\b|\b(?:tomorrow|tonight|this (?:morning|afternoon|evening)|next week)\b"
    r"|\b(?:at|by|before|after|until)\s+\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.|o'clock)"
    r"|\b(?:same time as|the usual time|like last time|as (?:we did )?yesterday)\b"
    r"|(?:会议|开会|手术|下班|上班|交班|天黑|中午|午饭|晚饭|早饭|比赛|傍晚)(?:开始|结束)?(?:之前|以前|前|之后|以后)"
    r"|明天|今晚|后天|下周|到时候|那时候?|老时间|跟昨天一样|和上次一样|照旧"
)


# A UAV id is pinned when the request asks for it ("use only uav_03", "send uav_03", "uav_03 should carry it",
# "用uav_03"), left out when it asks not to use it ("not uav_05", "anything but uav_05", "不要用uav_05"), and merely
# reported when the request describes it ("uav_03 is in maintenance"). A UAV named in none of these ways is a span
# the agent cannot account for: it asks rather than fly some UAV.
_UAV_WORD = r"(?:the\s+)?(?:only\s+)?(?:drone\s+|uav\s+)?"
_PIN_BEFORE = re.compile(
    r"(?:\buse|\busing|\bsend|\bdispatch|\bassign|\btake|\bwith|\bby|\bhave|\blet|\bdeploy|\blaunch|\btask|"
    r"\bfly|\bonly|只用|使用|调用|用|派|让|安排|指定|由)\W{0,3}" + _UAV_WORD + r"$"
)
_PIN_AFTER = re.compile(
    r"^\W{0,2}only\b|^\W{0,3}(?:should|must|will|can|could|is to|to|please|,)?\s*(?:fly|carry|take|deliver|go|bring|do|handle|"
    r"make|pick|inspect|patrol|return|head)\b|^\W{0,2}(?:去|送|运|飞|执行|负责|返航|前往)"
)
_EXCLUDE_BEFORE = re.compile(
    r"(?:\bnot|n't use|\bexcept|\bbut|other than|instead of|\bwithout|\bavoid|never use|不要用|不用|别用|不要派|除了|不使用)"
    r"\W{0,3}" + _UAV_WORD + r"$"
)
_REPORTED_AFTER = re.compile(r"^\W{0,2}(?:is|was|'s|has|had|are|remains|stays|在|正在|已|处于|电量)")


def stated_constraints(text: str, world: World) -> StatedConstraints:
    """What the request states (places, pinned UAVs, deadline, altitude band, return leg, corridors only) and what it
    leaves out that no plan can do without: the fidelity gate's reading, apart from any model's."""
    lowered = " ".join(text.split()).lower().replace("\u2019", "'")
    mentions = ground_mentions(world, text)
    digits = with_digits(lowered)
    band = stated_band_and_separation(digits)
    uav_roles = _uav_roles(lowered, mentions.uavs)
    fuzzy = find_mentions(lowered, world)
    found = [m.ids[0] for m in fuzzy if m.kind == "entity" and len(m.ids) == 1 and m.role != "avoid"]
    referenced = list(dict.fromkeys([*mentions.places, *found]))
    pointed = [
        m.ids[0] for m in fuzzy if m.kind == "entity" and m.role != "avoid" and _points_to_one(m, lowered, world)
    ]
    stated = StatedConstraints(
        **mentions.model_dump(exclude={"uavs"}),
        uavs=[u for u, role in uav_roles.items() if role == "pinned"],
        excluded_uavs=[u for u, role in uav_roles.items() if role == "excluded"],
        deadline_sec=parse_deadline(digits),
        payload_kg=parse_payload(digits),
        battery_reserve_ratio=parse_reserve(digits),
        altitude_min_m=band.get("altitude_min_m"),
        altitude_max_m=band.get("altitude_max_m"),
        cruise_altitude_m=band.get("cruise_altitude_m"),
        min_separation_m=band.get("min_separation_m"),
        return_leg=asks_return(lowered, mentions, fuzzy),
        corridors_only=bool(_CORRIDORS_ONLY.search(lowered)),
        handoff=bool(HANDOFF_ALLOWED.search(lowered)),
        referenced=referenced,
        pointed=[ref for ref in dict.fromkeys(pointed) if ref not in mentions.places],
        enter_and_keep_out=entered_and_kept_out(world, text),
    )
    stated.unread_duration = stated.deadline_sec is None and bool(_TIME_UNIT.search(lowered))
    quantities = [(q, _field_holding(q, stated)) for q in find_quantities(digits)]
    stated.spans = {field: q.text for q, field in reversed(quantities) if field is not None}
    stated.unaccounted = [
        f"'{q.text}' is not reflected in the plan: the agent reads no demand in it"
        for q, field in quantities
        if field is None
    ] + [
        f"'{u}' is named, but neither as the UAV to fly nor as one to leave out: which is meant?"
        for u, role in uav_roles.items()
        if role == "unaccounted"
    ]
    stated.intent = intent = parse_intent(blank_mentions(lowered, fuzzy))
    origins = set(mentions.origins) | {m.ids[0] for m in fuzzy if m.role == "origin" and len(m.ids) == 1}
    stated.missing = _missing_facts(stated, intent, mentions.uavs, fuzzy, origins) + [
        f"deadline: '{m.group(0)}' is no time the agent can place; give it as a duration (within 20 minutes)"
        for m in _UNANCHORED_TIME.finditer(lowered)
    ]
    return stated


# "most charging pads are busy", "大部分充电坪": a kind word with a quantifier or in the plural points to no one place.
_QUANTIFIED = re.compile(
    r"(?:\b(?:most|all|any|some|every|other|several|many|few)\s+(?:of\s+)?(?:the\s+)?|大部分|所有|多数|一些|任何|其他|其它)$"
)


def _points_to_one(mention: Mention, text: str, world: World) -> bool:
    """A fuzzy mention names one place for certain: by a name, or by a singular kind word the world has one of."""
    if len(mention.ids) != 1:
        return False
    if not mention.by_kind:
        return True
    kind = world.entity_index[mention.ids[0]].kind
    alone = sum(e.kind is kind for e in world.entities) == 1
    plural = text[mention.end - 1 : mention.end] == "s"
    return alone and not plural and not _QUANTIFIED.search(text[max(0, mention.start - 20) : mention.start])


def asks_return(text: str, mentions: Mentions, fuzzy: list[Mention]) -> bool:
    """The request asks the UAV to come back: in words ("and back", "往返"), or by naming where it starts as where it
    ends ("from A to B, then return to A", "... then return to the fire station"), in the exact or the fuzzy reading."""
    fuzzy_starts = {m.ids for m in fuzzy if m.role == "origin"}
    fuzzy_return = any(m.role == "destination" and m.ids in fuzzy_starts for m in fuzzy)
    return bool(RETURN_LEG.search(text) or set(mentions.origins) & set(mentions.destinations) or fuzzy_return)


def _uav_roles(text: str, uavs: list[str]) -> dict[str, str]:
    """Each UAV id the request names: pinned, excluded, reported (a remark on its state) or unaccounted."""
    roles: dict[str, str] = {}
    for uav in uavs:
        found = set()
        for start, end in phrase_spans(uav.lower(), text):
            before, after = text[max(0, start - 40) : start], text[end : end + 30]
            if _EXCLUDE_BEFORE.search(before):
                found.add("excluded")
            elif _PIN_BEFORE.search(before) or _PIN_AFTER.match(after):
                found.add("pinned")
            elif _REPORTED_AFTER.match(after):
                found.add("reported")
        roles[uav] = next((r for r in ("excluded", "pinned", "reported") if r in found), "unaccounted")
    return roles


_FIELDS_BY_DIMENSION = {
    "duration": ("deadline_sec",),
    "mass": ("payload_kg",),
    "share": ("battery_reserve_ratio",),
    "length": ("altitude_min_m", "altitude_max_m", "cruise_altitude_m", "min_separation_m"),
}


def _field_holding(quantity: Quantity, stated: StatedConstraints) -> str | None:
    """The field of the reading that holds a demand of this quantity's value (None: the quantity is unaccounted)."""
    for field in _FIELDS_BY_DIMENSION.get(quantity.dimension, ()):
        value = getattr(stated, field)
        if value is not None and abs(value - quantity.value) <= 1e-6 * max(1.0, value):
            return field
    return None


def _missing_facts(
    stated: StatedConstraints, intent: Intent, uavs: list[str], fuzzy: list[Mention], origins: set[str]
) -> list[str]:
    """The places a request of this intent cannot do without and does not give. A return or charge needs only its
    UAV; a site visit, the site; cargo, where it is picked up and where it goes. Where a reference that fits several
    places may be the missing one, the question names them (ground_mentions' bare kinds are asked about already)."""
    if stated.unresolved:
        return []
    places = stated.referenced
    if intent in BASE_KINDS:
        return [] if uavs or places else ["uav: the request names no UAV to bring in"]
    if intent in CARGO_INTENTS and len(places) == 2 and not _any_role(stated, fuzzy, places):
        first, second = places
        return [
            f"direction: the request names {first} and {second} with no cue for which way: {first} -> {second} "
            f"or {second} -> {first}?"
        ]
    if places and (intent not in CARGO_INTENTS or len(places) > 1):
        return []
    several = [m.ids for m in fuzzy if m.kind == "entity" and len(m.ids) > 1 and m.role != "avoid"]
    if several:
        return [f"place: which one is meant, {' or '.join(ids)}?" for ids in several]
    if not places:
        return ["destination: the request names no place to fly to"]
    place = places[0]
    if place in origins:
        return [f"destination: the request names {place} to pick the cargo up at, and no place to take it to"]
    if place in stated.destinations:
        return [f"origin: the request names {place} to take the cargo to, and no place to pick it up at"]
    return [f"origin and destination: the request names only {place}; cargo needs where it is and where it goes"]


def _any_role(stated: StatedConstraints, fuzzy: list[Mention], places: list[str]) -> bool:
    """Some cue fixes where the cargo starts or ends: in the exact reading or in the fuzzy one."""
    cued = {*stated.origins, *stated.destinations, *stated.handoff_points}
    cued |= {m.ids[0] for m in fuzzy if m.role in ("origin", "destination", "via", "handoff") and len(m.ids) == 1}
    return bool(cued & set(places)) or stated.return_leg


def parse_intent(text: str) -> Intent:
    positions = {intent: m.start() for intent, pattern in _INTENT_CUES.items() if (m := re.search(pattern, text))}
    base = min(positions, key=positions.__getitem__) if positions else Intent.delivery
    if base is Intent.delivery and re.search(_EMERGENCY_CUES, text):
        return Intent.emergency
    return base


def parse_priority(text: str, intent: Intent) -> Priority:
    for priority, pattern in _PRIORITY_CUES:
        if re.search(pattern, text):
            return priority
    return Priority.high if intent is Intent.emergency else Priority.normal
