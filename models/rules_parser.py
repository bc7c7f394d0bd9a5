"""A rule-based instruction parser: the classic semantic-parser baseline, no LLM.

It reads English or Chinese requests with keyword tables and fuzzy matching against the world's ids and descriptive
names, writes the standard tool plan, and on repair rounds applies the counterexample's suggested repair
deterministically. Safety priors (every NFZ active during the mission, sensitive zones near the straight line)
are added whatever the request says, so "ignore the no-fly zone" never removes a safety spec.
"""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from rapidfuzz import fuzz
from shapely.geometry import LineString, Point

from ir.fidelity import HANDOFF_AFTER, StatedConstraints, after_role, entered_and_kept_out, ground_mentions, short_name
from ir.model import (
    EntityRefs,
    ExplanationPlan,
    FallbackPolicy,
    Intent,
    LLMAnswer,
    LowAltitudeIR,
    OperationConstraints,
    Priority,
    ToolCallSpec,
    Uncertainty,
    VerificationSpecs,
)
from models.base import GenerationRequest, GenerationResult, IRGenerator, RepairFeedback
from models.repair_choice import offered, repaired_answer
from tools.rules import MONITORED_RULES
from tools.signals import zones_containing
from tools.world import EntityKind, NoFlyZone, World

RULES_VERSION = "rules-v2"  # v2: stops before a landing cue, short names, verbatim names first

DEFAULT_HORIZON_SEC = 3600.0  # mission window used for "active NFZ" when the request sets no deadline
NEAR_LINE_M = 50.0  # a sensitive zone this close to the straight origin->destination line is avoided
NAME_MATCH_MIN_SCORE = 92.0
# Shorter names, and names with a number, must appear verbatim (fuzzy 'west depot' ~ 'east depot' scores 90,
# 'no. 2 charging pad' ~ 'no. 3 charging pad' 94).
SHORT_NAME_CHARS = 15
CUE_WINDOW_CHARS = 40

# --- keyword tables (searched in the lower-cased request, with id / name mentions blanked out) -----------------
_EMERGENCY_CUES = (
    r"emergenc\w*|defibrillator|\baed\b|first[\s-]aid|ambulance|rescue|injur\w*|casualt\w*|life[\s-]saving|"
    r"\bblood\b|急救|紧急|除颤|救援|伤员|血液|血浆"
)
_INTENT_CUES: dict[Intent, str] = {
    Intent.return_: r"\breturn\w*|\bgo back\b|\bfly back\b|\bcome back\b|返航|返回|回到",
    Intent.charge: r"\b(?:re)?charg\w*|充电",
    Intent.patrol: r"\bpatrol\w*|巡逻|巡查",
    Intent.inspection: r"\binspect\w*|\bsurvey\w*|巡检|检查|勘察",
    Intent.monitoring: r"\bmonitor\w*|\bsurveil\w*|\bwatch\b|\bobserve\b|监控|监视|监测",
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
_INJECTION_CUES = (
    r"\bignore\b|\bdisregard\b|\boverride\b|\bskip\b.{0,20}(?:check|verif|rule)|no need to (?:avoid|verify|check)|"
    r"忽略|无视|不用(?:管|避让|验证)|跳过"
)

# Cues for where the flight ends ("..., then land at Y", "finishing at Y", "最后降落在Y"): the places named to
# visit before such an end are stops on the way, whatever cue they had ("inspect A and B ... finishing at Y").
_TERMINAL_CUE = (
    r"\bland(?:s|ing)? (?:at|on)\b|\bend(?:s|ing)? (?:up )?at\b|\bfinish\w* (?:at|in)\b|\barriv\w* at\b|"
    r"终点|降落|最后|结束后"
)
# Role cues: the last cue between the previous mention and a mention decides its role.
_ROLE_CUES: tuple[tuple[str, str], ...] = (
    (
        "avoid",
        r"away from|avoid\w*|stay (?:out|clear) of|keep (?:out|clear) of|clear of|bypass\w*|"
        r"\bnot (?:enter|cross|fly over)|outside|\bignore\b|\bdisregard\b|"
        r"远离|避开|避让|绕开|绕过|不要?进入|不得进入|不经过|忽略|无视",
    ),
    (
        "origin",
        r"\bfrom\b|\bout of\b|\bleaving\b|\bdepart\w*(?: from)?|\bstart\w* (?:at|from)\b|\bpick\w* up (?:at|from)\b|从|自",
    ),
    (
        "destination",
        r"\bto\b|\btowards?\b|\breach\b|\bover\b|\baround\b|\bdestination\b|->|→|"
        r"\binspect\w*|\bpatrol\w*|\bmonitor\w*|\bsurvey\w*|\bneed(?:s|ed)?\b(?:[^.;]|\.\d){0,40}?\bat\b|"
        r"\bdrop\w*(?: it| them)?(?: off)? at\b|"
        r"到|至|去|往|前往|飞往|抵达|终点|降落|巡检|巡逻|监控|" + _TERMINAL_CUE,
    ),
    ("via", r"\bvia\b|\bthrough\b|\bpassing(?: by)?\b|\bby way of\b|经过|途经|经由"),
    ("handoff", r"hand[\s-]?off (?:at|to)|\btransfer (?:at|to)\b|交接|转运|换乘"),
)
_CONTINUATION = re.compile(r"^[\s,、]*(?:and|or|&|和|与|及|以及)?[\s,、]*(?:the\s+)?$")

_KIND_WORDS: dict[str, str] = {
    "hospital": r"\bhospitals?\b|医院",
    "school": r"\bschools?\b|学校|小学|中学",
    "accident_site": r"\baccident(?: site| scene)?\b|\bcrash site\b|事故(?:现场|地点)?",
    "depot": r"\bdepots?\b|\bhangar\b|机库|无人机站|无人机基地|配送中心",
    "charging_pad": r"\bcharging (?:pad|station)s?\b|\bchargers?\b|充电坪|充电桩|充电站|充电点",
    "metro_station": r"\bmetro(?: station)?\b|\bsubway(?: station)?\b|地铁站",
    "police": r"\bpolice(?: station)?\b|警察局|派出所|公安局",
    "fire_station": r"\bfire station\b|消防站",
    "vertiport": r"\bvertiports?\b|起降场",
    "warehouse": r"\bwarehouses?\b|仓库",
    "park": r"\bparks?\b|公园",
    "residential": r"\bresidential\b|小区|居民区",
    "office": r"\boffices?\b|办公楼|写字楼",
    "inspection_site": r"\binspection site\b|巡检点",
}
_NFZ_WORDS = re.compile(
    r"no[\s-]?fly(?:[\s-]+(?:zones?|areas?))?|\bnfzs?\b|restricted (?:airspace|areas?|zones?)|禁飞区?|管制区|限飞区"
)
_SENSITIVE_WORDS = re.compile(r"sensitive (?:zones?|areas?)|敏感区")
_TEMPORARY_WORDS = re.compile(r"temporar\w*|\btemp\b|临时")
_PERMANENT_WORDS = re.compile(r"permanent\w*|government|\bgov\b|永久|政府")
_QUALIFIER_TRANSLATIONS = {
    "北": "north",
    "南": "south",
    "东": "east",
    "西": "west",
    "儿童": "children's",
    "中心": "central",
}
_STOPWORDS = frozenset({"the", "a", "an", "on", "of", "at", "in", "side", "no.", "and"})

_DURATION_UNITS_SEC = {
    "h": 3600.0,
    "hr": 3600.0,
    "hour": 3600.0,
    "min": 60.0,
    "minute": 60.0,
    "s": 1.0,
    "sec": 1.0,
    "second": 1.0,
}
_EN_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*-?\s*(hours?|hrs?|h|minutes?|mins?|min|seconds?|secs?|sec|s)(?![a-z])")
# a bare 分 only counts before 内 ("十分" alone means "very")
_ZH_DURATION = re.compile(
    r"(\d+(?:\.\d+)?|[零一二两三四五六七八九十百半]+)\s*个?\s*(小时|分钟|分(?=之?内|以内)|秒钟|秒)"
)
_ZH_UNITS_SEC = {"小时": 3600.0, "分钟": 60.0, "分": 60.0, "秒钟": 1.0, "秒": 1.0}
_CN_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}

_M = r"\s*(?:m|meters?|metres?|米)(?![a-z/])"
_NOT_DISTANCE = r"(?!\s*(?:of\s+)?(?:separation|clearance|apart|spacing|from|away|distance|between|间隔|间距|距离))"
_SEPARATION_PATTERNS = (
    re.compile(r"(\d+(?:\.\d+)?)" + _M + r"\s*(?:of\s+)?(?:separation|clearance|spacing|apart|buffer)"),
    re.compile(r"(?:separation|clearance|spacing)\s*(?:of|:)?\s*(?:at least\s*)?(\d+(?:\.\d+)?)" + _M),
    re.compile(r"at least\s*(\d+(?:\.\d+)?)" + _M + r"\s*(?:away\s*)?from"),
    re.compile(r"(?:间隔|间距|安全距离)\D{0,6}?(\d+(?:\.\d+)?)" + _M),
    re.compile(r"(\d+(?:\.\d+)?)" + _M + r"\s*的?(?:间隔|间距|安全距离)"),
)
_ALTITUDE_RANGE_PATTERN = re.compile(
    r"(?:altitude|height|fly|flying|cruise|stay|level|between|\bat\b|高度|飞行高度)[^.;\d]{0,25}?"
    r"(\d+(?:\.\d+)?)\s*(?:m|meters?|metres?|米)?\s*(?:-|to|and|~|到|至|和)\s*(\d+(?:\.\d+)?)" + _M
)
# "no lower than" is a floor and "不低于" is not "低于": the negated forms come first, and the bare ones may not
# follow a negation.
_ALTITUDE_MIN_PATTERN = re.compile(
    r"(?:above|over|at least|no lower than|not lower than|not below|(?<!no )(?<!not )higher than|"
    r"min(?:imum)? altitude(?: of)?|floor of|不低于|(?<!不)高于|至少|最低)\s*(\d+(?:\.\d+)?)" + _M + _NOT_DISTANCE
)
_ALTITUDE_MAX_PATTERN = re.compile(
    r"(?:below|under|at most|no higher than|not higher than|not above|(?<!no )(?<!not )lower than|"
    r"max(?:imum)? altitude(?: of)?|ceiling of|不高于|(?<!不)低于|不超过|最高)\s*(\d+(?:\.\d+)?)" + _M + _NOT_DISTANCE
)
_PAYLOAD_PATTERN = re.compile(r"(\d+(?:\.\d+)?)\s*(?:kg|kilograms?|kilos?|公斤|千克)(?![a-z])")
# "keep at least 30% battery (on arrival)", "到达时至少保留30%电量": the share of battery to land with.
_RESERVE_PATTERN = re.compile(
    r"(?:at least|no less than|minimum of|min\.?)\s*(\d+(?:\.\d+)?)\s*%\s*(?:of\s+(?:the\s+)?)?battery"
    r"|(?:保留|剩余|留有|不低于)\s*(\d+(?:\.\d+)?)\s*%\s*(?:的)?电量"
)
_ALTITUDE_IN_TEXT = re.compile(r"(?:altitude|floor|height|高度)\D{0,25}?(\d+(?:\.\d+)?)")

_GROUNDING_FIELDS = (
    "origin",
    "destination",
    "candidate_uavs",
    "avoid_zones",
    "sensitive_zones",
    "waypoints",
    "handoff_points",
)


@dataclass
class Mention:
    """A reference in the request: resolved when `ids` has one element, ambiguous with more."""

    kind: str  # "entity" | "zone" | "uav"
    ids: tuple[str, ...]
    start: int
    end: int
    role: str | None = None


@dataclass
class ParsedTask:
    intent: Intent
    priority: Priority
    entities: EntityRefs
    constraints: OperationConstraints
    missing: list[str] = field(default_factory=list)
    ambiguous: bool = False
    notes: list[str] = field(default_factory=list)


# --- mention finding ------------------------------------------------------------------------------------------
def _id_pattern(identifier: str) -> re.Pattern[str]:
    """'uav_03' also matches 'UAV 3' / 'uav-03'; 'hospital_A' also matches 'hospital A'."""
    pieces = [rf"0*{int(p)}" if p.isdigit() else re.escape(p) for p in re.split(r"[_\-\s]+", identifier.lower()) if p]
    return re.compile(r"(?<![a-z0-9])" + r"[\s_\-]*".join(pieces) + r"(?![a-z0-9])")


def _kind_of(world: World, identifier: str) -> str:
    if identifier in world.uav_index:
        return "uav"
    return "zone" if identifier in world.zone_index else "entity"


def _free(span: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    return all(span[1] <= a or span[0] >= b for a, b in taken)


def _id_mentions(text: str, world: World) -> list[Mention]:
    identifiers = [*world.entity_index, *world.zone_index, *world.uav_index]
    hits = [
        (m.start(), m.end(), identifier) for identifier in identifiers for m in _id_pattern(identifier).finditer(text)
    ]
    mentions: list[Mention] = []
    for start, end, identifier in sorted(hits, key=lambda h: (h[0], h[0] - h[1])):
        if _free((start, end), [(m.start, m.end) for m in mentions]):
            mentions.append(Mention(_kind_of(world, identifier), (identifier,), start, end))
    return mentions


def _name_variants(name: str) -> list[str]:
    name = name.replace("\u2019", "'").strip()
    variants = (name, name.split(",")[0], short_name(name))
    return [v for v in dict.fromkeys(re.sub(r"^the\s+", "", v.strip().lower()) for v in variants) if v]


def _name_span(variant: str, text: str, *, verbatim: bool) -> tuple[int, int] | None:
    """Where a name variant stands in the text: verbatim, or (short names and numbered ones never) by a fuzzy match
    that starts and ends on word edges ('rum building' inside 'Forum building' is not 'UPM building')."""
    if verbatim:
        start = text.find(variant)
        return (start, start + len(variant)) if start >= 0 else None
    if len(variant) < SHORT_NAME_CHARS or any(ch.isdigit() for ch in variant):
        return None
    hit = fuzz.partial_ratio_alignment(variant, text, score_cutoff=NAME_MATCH_MIN_SCORE)
    if hit is None:
        return None
    on_edges = (
        not text[hit.dest_start - 1 : hit.dest_start].isalnum() and not text[hit.dest_end : hit.dest_end + 1].isalnum()
    )
    return (hit.dest_start, hit.dest_end) if on_edges else None


def _name_mentions(text: str, world: World, taken: list[tuple[int, int]]) -> list[Mention]:
    # Entities by each of their names (a Chinese request names them by their Chinese name), zones by theirs; a
    # variant two of them share ("the maternity hospital" for two) is left to the kind words and their qualifiers.
    # Verbatim matches first, for every name, so a fuzzy match never takes another place's exact name.
    names = [(e.id, name, "entity") for e in world.entities for name in (e.name, *e.names.values()) if name]
    names += [(z.id, z.name, "zone") for z in world.sensitive_zones]
    named = [(identifier, _name_variants(name), kind) for identifier, name, kind in names]
    owners: dict[str, set[str]] = defaultdict(set)
    for identifier, variants, _ in named:
        for variant in variants:
            owners[variant].add(identifier)
    mentions: list[Mention] = []
    for verbatim in (True, False):
        for identifier, variants, kind in named:
            if any(m.ids == (identifier,) for m in mentions):
                continue
            for variant in (v for v in variants if len(owners[v]) == 1):
                span = _name_span(variant, text, verbatim=verbatim) if len(variant) <= len(text) else None
                if span and _free(span, taken):
                    mentions.append(Mention(kind, (identifier,), *span))
                    taken.append(span)
                    break
    return mentions


def _qualifier_tokens(window: str) -> set[str]:
    tokens = set(re.findall(r"[a-z][a-z']+", window)) - _STOPWORDS
    tokens |= {english for chinese, english in _QUALIFIER_TRANSLATIONS.items() if chinese in window}
    return tokens


def _disambiguate(candidates: list[str], names: dict[str, str], window: str, kind_word: str) -> tuple[str, ...]:
    """Keep the candidates whose names share most qualifier words ('north', 'children's') with the request."""
    qualifiers = _qualifier_tokens(window) - {kind_word, kind_word + "s"}
    scores = {c: len(qualifiers & _qualifier_tokens(names[c].lower())) for c in candidates}
    best = max(scores.values(), default=0)
    if best == 0:
        return tuple(candidates)
    return tuple(c for c in candidates if scores[c] == best)


def _kind_mentions(text: str, world: World, taken: list[tuple[int, int]]) -> list[Mention]:
    """'the hospital' -> the hospital entities; a kind only sensitive zones have ('the school') -> those zones."""
    names = {e.id: e.name for e in world.entities}
    mentions: list[Mention] = []
    for kind, pattern in _KIND_WORDS.items():
        candidates = [e.id for e in world.entities if e.kind.value == kind]
        zones = tuple(z.id for z in world.sensitive_zones if z.kind == kind)
        for match in re.finditer(pattern, text):
            span = (match.start(), match.end())
            if not _free(span, taken) or not (candidates or zones):
                continue
            if candidates:
                window = text[max(0, span[0] - 30) : span[1] + 30]
                ids = _disambiguate(candidates, names, window, match.group(0).split()[0])
                mentions.append(Mention("entity", ids, *span))
            else:
                mentions.append(Mention("zone", zones, *span, role="avoid"))
            taken.append(span)
    return mentions


def _zone_word_mentions(text: str, world: World, taken: list[tuple[int, int]]) -> list[Mention]:
    mentions: list[Mention] = []
    for match in _NFZ_WORDS.finditer(text):
        span = (match.start(), match.end())
        if not _free(span, taken) or not world.no_fly_zones:
            continue
        qualifier = text[max(0, span[0] - 25) : span[0]]
        zones = list(world.no_fly_zones)
        if _TEMPORARY_WORDS.search(qualifier):
            zones = [z for z in zones if z.temporary] or zones
        elif _PERMANENT_WORDS.search(qualifier):
            zones = [z for z in zones if not z.temporary] or zones
        mentions.append(Mention("zone", tuple(z.id for z in zones), *span, role="avoid"))
        taken.append(span)
    for match in _SENSITIVE_WORDS.finditer(text):
        span = (match.start(), match.end())
        if _free(span, taken) and world.sensitive_zones:
            mentions.append(Mention("zone", tuple(z.id for z in world.sensitive_zones), *span, role="avoid"))
            taken.append(span)
    return mentions


def _role_before(text: str, start: int, window_start: int) -> str | None:
    """The role of the last cue in text[window_start:start] (longest cue wins a tie: 'away from' over 'from')."""
    window = text[max(window_start, start - CUE_WINDOW_CHARS) : start]
    best: tuple[int, int, str] | None = None
    for role, pattern in _ROLE_CUES:
        for match in re.finditer(pattern, window):
            key = (match.end(), match.end() - match.start(), role)
            if best is None or key[:2] > best[:2]:
                best = key
    return best[2] if best else None


def _assign_roles(text: str, mentions: list[Mention]) -> None:
    previous: Mention | None = None
    for mention in mentions:
        window_start = previous.end if previous else 0
        # A cue right after the place outranks one before it ("请到X取货": X is where the cargo is picked up).
        after: set[str] = set()
        if mention.kind == "entity":  # "fly to X and hand over to a courier", "请飞到X,在那里交给地面配送员"
            after = {"handoff"} if HANDOFF_AFTER.match(text, mention.end) else after_role(text, mention.end)
        cue_role = next(iter(after)) if len(after) == 1 else _role_before(text, mention.start, window_start)
        if mention.role is None:
            if cue_role is not None:
                mention.role = cue_role
            elif previous is not None and _CONTINUATION.match(text[previous.end : mention.start]):
                mention.role = previous.role
        previous = mention


def _stops_before_the_end(text: str, mentions: list[Mention]) -> None:
    """Places to visit named before a cue for where the flight ends become stops on the way, in the order named.
    Without a cued origin the first uncued place stays the origin ("take it at X, then land at Y")."""
    places = [m for m in mentions if m.kind == "entity"]
    ends = [
        i
        for i, m in enumerate(places)
        if m.role == "destination"
        and re.search(_TERMINAL_CUE, text[max(places[i - 1].end if i else 0, m.start - CUE_WINDOW_CHARS) : m.start])
    ]
    before = places[: ends[-1]] if ends else []
    if not any(m.role == "origin" for m in places):
        before = before[1:] if before and before[0].role is None else before
    for place in before:
        if place.role in (None, "destination"):
            place.role = "via"


def find_mentions(text: str, world: World) -> list[Mention]:
    """Ids first, then descriptive names, then zone words and kind words; each span is claimed once."""
    mentions = _id_mentions(text, world)
    taken = [(m.start, m.end) for m in mentions]
    mentions += _name_mentions(text, world, taken)
    mentions += _zone_word_mentions(text, world, taken)
    mentions += _kind_mentions(text, world, taken)
    mentions.sort(key=lambda m: m.start)
    _assign_roles(text, mentions)
    _stops_before_the_end(text, mentions)
    for mention in mentions:
        if mention.kind == "zone":
            mention.role = "avoid"
    return mentions


def _blank(text: str, mentions: list[Mention]) -> str:
    chars = list(text)
    for m in mentions:
        chars[m.start : m.end] = " " * (m.end - m.start)
    return "".join(chars)


# --- scalar slots ---------------------------------------------------------------------------------------------
def _cn_number(token: str) -> float:
    if token == "半":
        return 0.5
    total, current = 0, 0
    for ch in token:
        if ch in _CN_DIGITS:
            current = _CN_DIGITS[ch]
        elif ch == "十":
            total, current = total + (current or 1) * 10, 0
        elif ch == "百":
            total, current = total + (current or 1) * 100, 0
    return float(total + current)


def parse_payload(text: str) -> float | None:
    """The cargo's mass in kg, the first one the (lower-cased) request states."""
    return float(m.group(1)) if (m := _PAYLOAD_PATTERN.search(text)) else None


def parse_reserve(text: str) -> float | None:
    """The battery share the (lower-cased) request asks to keep on arrival, as a ratio."""
    if not (m := _RESERVE_PATTERN.search(text)):
        return None
    ratio = float(m.group(1) or m.group(2)) / 100
    return ratio if 0 < ratio < 1 else None


def parse_deadline(text: str) -> float | None:
    """The first duration in the request, in seconds ('within 10 minutes', '600 s', '10分钟内', '半小时')."""
    found: list[tuple[int, float]] = []
    for m in _EN_DURATION.finditer(text):
        unit = m.group(2).rstrip("s") or "s"
        found.append((m.start(), float(m.group(1)) * _DURATION_UNITS_SEC[unit]))
    for m in _ZH_DURATION.finditer(text):
        number = float(m.group(1)) if m.group(1)[0].isdigit() else _cn_number(m.group(1))
        found.append((m.start(), number * _ZH_UNITS_SEC[m.group(2)]))
    for m in re.finditer(r"half an hour|an hour", text):
        found.append((m.start(), 1800.0 if m.group(0).startswith("half") else 3600.0))
    found = [f for f in found if f[1] > 0]
    return min(found)[1] if found else None


def _first_number(patterns: tuple[re.Pattern[str], ...], text: str) -> tuple[float | None, str]:
    """First match's number and the text with that match blanked (so altitude parsing does not re-read it)."""
    for pattern in patterns:
        m = pattern.search(text)
        if m:
            return float(m.group(1)), text[: m.start()] + " " * (m.end() - m.start()) + text[m.end() :]
    return None, text


def _stated_band_and_separation(text: str) -> dict[str, float]:
    """Separation and altitude demands as written, a contradictory pair included."""
    separation, text = _first_number(_SEPARATION_PATTERNS, text)
    band: dict[str, float] = {}
    if separation is not None:
        band["min_separation_m"] = separation
    range_match = _ALTITUDE_RANGE_PATTERN.search(text)
    if range_match:
        low, high = sorted((float(range_match.group(1)), float(range_match.group(2))))
        band.update(altitude_min_m=low, altitude_max_m=high)
    else:
        if m := _ALTITUDE_MIN_PATTERN.search(text):
            band["altitude_min_m"] = float(m.group(1))
        if m := _ALTITUDE_MAX_PATTERN.search(text):
            band["altitude_max_m"] = float(m.group(1))
    return band


def parse_altitude_and_separation(text: str, defaults: OperationConstraints) -> dict[str, float]:
    band = _stated_band_and_separation(text)
    low = band.get("altitude_min_m", defaults.altitude_min_m)
    high = band.get("altitude_max_m", defaults.altitude_max_m)
    if low >= high:  # an IR must have a valid band; the fidelity gate still holds the plan to the stated one
        band.pop("altitude_min_m", None)
        band.pop("altitude_max_m", None)
    return band


_RETURN_LEG = re.compile(
    r"\band back\b|\bround[ -]trip\b|\b(?:come|fly|head|return) back\b|\breturn (?:it |the drone )?to (?:base|the start)"
    r"|往返|再返回|并返回|然后返回|飞回"
)
_CORRIDORS_ONLY = re.compile(r"\bonly (?:inside|in|within|along) (?:the )?(?:drone )?corridors?\b|只能在.{0,8}走廊")
_HANDOFF = re.compile(
    r"\bhand (?:it |the parcel |the cargo )?(?:over|off|to)\b|\bground courier\b|交给地面|地面配送|转交"
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
# Places with ground access where a courier can take the cargo over; one this close to a closed zone is no place to
# hover and hand over.
HANDOFF_HUB_KINDS = ("metro_station", "vertiport", "park", "police", "fire_station")
HANDOFF_ZONE_CLEARANCE_M = 35.0
# A UAV id is pinned when the request asks for it ("use uav_03", "send uav_03", "用uav_03"), not when it is merely
# mentioned ("uav_03 is in maintenance").
_PIN_CUE = r"(?:use|using|send|dispatch|assign|take|with|by|用|派|让|安排|指定)\W{0,3}(?:the\s+)?(?:drone\s+|uav\s+)?"


def stated_constraints(text: str, world: World) -> StatedConstraints:
    """What the request states (places, pinned UAVs, deadline, altitude band, return leg, corridors only) and what it
    leaves out that no plan can do without: the fidelity gate's reading, apart from any model's."""
    lowered = " ".join(text.split()).lower()
    mentions = ground_mentions(world, text)
    band = _stated_band_and_separation(lowered)
    pinned = [u for u in mentions.uavs if re.search(_PIN_CUE + re.escape(u.lower()) + r"(?![a-z0-9_-])", lowered)]
    fuzzy = find_mentions(lowered.replace("\u2019", "'"), world)
    found = [m.ids[0] for m in fuzzy if m.kind == "entity" and len(m.ids) == 1 and m.role != "avoid"]
    referenced = list(dict.fromkeys([*mentions.places, *found]))
    stated = StatedConstraints(
        **mentions.model_dump(exclude={"uavs"}),
        uavs=pinned,
        deadline_sec=parse_deadline(lowered),
        payload_kg=parse_payload(lowered),
        battery_reserve_ratio=parse_reserve(lowered),
        altitude_min_m=band.get("altitude_min_m"),
        altitude_max_m=band.get("altitude_max_m"),
        return_leg=bool(_RETURN_LEG.search(lowered)),
        corridors_only=bool(_CORRIDORS_ONLY.search(lowered)),
        handoff=bool(_HANDOFF.search(lowered)),
        referenced=referenced,
        enter_and_keep_out=entered_and_kept_out(world, text),
    )
    stated.unread_duration = stated.deadline_sec is None and bool(_TIME_UNIT.search(lowered))
    stated.intent = intent = parse_intent(_blank(lowered, fuzzy))
    origins = set(mentions.origins) | {m.ids[0] for m in fuzzy if m.role == "origin" and len(m.ids) == 1}
    stated.missing = _missing_facts(stated, intent, mentions.uavs, fuzzy, origins) + [
        f"deadline: '{m.group(0)}' is no time the agent can place; give it as a duration (within 20 minutes)"
        for m in _UNANCHORED_TIME.finditer(lowered)
    ]
    return stated


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


# --- resolution -----------------------------------------------------------------------------------------------
def _zones_near_entity(world: World, entity_id: str) -> list[str]:
    point = world.entity_index[entity_id].point
    near = [z.id for z in world.sensitive_zones if z.buffered_shape.distance(point) <= NEAR_LINE_M]
    return near + [z.id for z in world.no_fly_zones if z.shape.distance(point) <= NEAR_LINE_M]


def _nearest_entity(world: World, kinds: tuple[str, ...], position: tuple[float, float]) -> str | None:
    options = [e for e in world.entities if e.kind.value in kinds]
    if not options:
        return None
    return min(options, key=lambda e: (Point(position).distance(e.point), e.id)).id


def _pick(mentions: list[Mention], role: str) -> Mention | None:
    return next((m for m in mentions if m.role == role), None)


def _active_in_window(world: World, constraints: OperationConstraints) -> list[NoFlyZone]:
    """NFZs active at any time of the mission window (the deadline, else DEFAULT_HORIZON_SEC)."""
    horizon = constraints.deadline_sec or DEFAULT_HORIZON_SEC
    return [z for z in world.no_fly_zones if z.active_window is None or z.active_window.start_sec <= horizon]


def safety_prior_zones(world: World, entities: EntityRefs, constraints: OperationConstraints) -> list[str]:
    """NFZs active at any time of the mission window, and sensitive zones near the straight-line route except those
    that hold the task's own origin or end (a delivery to the school: the verifier's R2 exempts them too)."""
    zones = [z.id for z in _active_in_window(world, constraints)]
    stops = [entities.origin, *entities.waypoints, flight_end(entities)]
    if all(s is not None and (s in world.entity_index or s in world.uav_index) for s in stops):
        points = [world.position_of(s) for s in stops]  # type: ignore[arg-type]
        line = LineString(points)
        own = set(zones_containing(world, [points[0], points[-1]]))
        zones += [
            z.id for z in world.sensitive_zones if z.buffered_shape.distance(line) <= NEAR_LINE_M and z.id not in own
        ]
    return zones


def _keep_clear(refs: EntityRefs, world: World, constraints: OperationConstraints, avoid: Sequence[str] = ()) -> None:
    """The zones to avoid: those already listed, the request's, and the safety priors for the route's ends."""
    refs.avoid_zones = list(dict.fromkeys([*refs.avoid_zones, *avoid, *safety_prior_zones(world, refs, constraints)]))
    refs.sensitive_zones = [z for z in refs.avoid_zones if z in {s.id for s in world.sensitive_zones}]


def _resolve_slot(mention: Mention | None, slot: str, task: ParsedTask) -> str | None:
    if mention is None:
        return None
    if len(mention.ids) > 1:
        task.ambiguous = True
        task.missing.append(f"{slot} is ambiguous: one of {', '.join(mention.ids)}")
        return None
    return mention.ids[0]


CARGO_INTENTS = (Intent.delivery, Intent.emergency)
SITE_VISITS = (Intent.inspection, Intent.patrol, Intent.monitoring)
# Where a returning or charging UAV goes when the request names no place: the nearest one of these kinds.
BASE_KINDS = {Intent.return_: ("depot", "vertiport"), Intent.charge: ("charging_pad",)}
ANY_KIND = tuple(k.value for k in EntityKind)


def default_origin(world: World, intent: Intent, uav: str | None, destination: str | None) -> tuple[str, str] | None:
    """The origin a request that names none implies, with why (the documented defaults): a UAV on any errand but
    cargo flies from where it is (the entity nearest it); a site visit starts at the depot nearest the site."""
    if uav in world.uav_index and intent not in CARGO_INTENTS:
        nearest = _nearest_entity(world, ANY_KIND, world.position_of(uav))  # type: ignore[arg-type]
        return (nearest, f"the place nearest {uav}") if nearest else None
    if destination in world.entity_index and intent in SITE_VISITS:
        depot = _nearest_entity(world, ("depot", "vertiport"), world.position_of(destination))  # type: ignore[arg-type]
        return (depot, f"the depot nearest {destination}") if depot else None
    return None


def default_destination(world: World, intent: Intent, origin: str | None) -> tuple[str, str] | None:
    """The destination a return or charge request implies: the base or pad nearest where the UAV starts."""
    kinds = BASE_KINDS.get(intent)
    if not kinds or origin is None or not (origin in world.entity_index or origin in world.uav_index):
        return None
    nearest = _nearest_entity(world, kinds, world.position_of(origin))
    return (nearest, f"the {kinds[0].replace('_', ' ')} nearest {origin}") if nearest else None


def _default_endpoints(task: ParsedTask, world: World) -> None:
    """Origins / destinations implied by the intent (default_origin, default_destination)."""
    refs = task.entities
    uav = refs.candidate_uavs[0] if refs.candidate_uavs else None
    if refs.origin is None and uav is not None and (found := default_origin(world, task.intent, uav, None)):
        refs.origin = found[0]
        task.notes.append(f"origin is {found[1]}: {refs.origin}")
    if refs.destination is None and (found := default_destination(world, task.intent, refs.origin)):
        refs.destination = found[0]
        task.notes.append(f"destination defaults to {found[1]}: {refs.destination}")
    if refs.origin is None and (found := default_origin(world, task.intent, None, refs.destination)):
        refs.origin = found[0]
        task.notes.append(f"origin defaults to {found[1]}: {refs.origin}")


def documented_defaults(
    world: World, stated: StatedConstraints, ir: dict[str, Any], uav: str | None, text: str
) -> dict[str, dict[str, str]]:
    """The places the documented defaults allow in each IR entity field for this request, with why: what the gate's
    converse accounting (ir.provenance) accepts beside the places the request points to. `uav` is the flying one."""
    intent = stated.intent or Intent.delivery
    entities = ir.get("entities") or {}
    uavs = [u for u in dict.fromkeys([uav, *(entities.get("candidate_uavs") or [])]) if u in world.uav_index]
    found: dict[str, dict[str, str]] = defaultdict(dict)
    for start in [*uavs, None]:
        if origin := default_origin(world, intent, start, entities.get("destination")):
            found["origin"][origin[0]] = origin[1]
    for start in [entities.get("origin"), *uavs]:
        if destination := default_destination(world, intent, start):
            found["destination"][destination[0]] = destination[1]
    try:
        constraints = OperationConstraints.model_validate(ir.get("constraints") or {})
    except ValidationError:
        constraints = OperationConstraints()
    if hub := handoff_hub(world, entities.get("destination"), constraints, text.lower()):
        found["handoff_points"][hub] = "the hub nearest the closed destination, as the request allows a hand-off"
    return dict(found)


def fly_back(task: ParsedTask) -> None:
    """ "... to B and back": B becomes the last stop and the flight ends where it started."""
    refs = task.entities
    if refs.origin and refs.destination not in (None, refs.origin):
        refs.waypoints, refs.destination = [*refs.waypoints, refs.destination], refs.origin
        task.notes.append(f"return leg: back to {refs.origin} after {refs.waypoints[-1]}")


def handoff_hub(world: World, destination_id: str | None, constraints: OperationConstraints, text: str) -> str | None:
    """Where the request allows a ground hand-off and the destination lies in a no-fly zone active in the mission
    window: the hand-off point the request names, else the hub nearest the destination that keeps clear of the
    zones over it and lies in no other active zone (one near another zone is still reachable: the planner keeps
    out of it); None where either does not hold."""
    destination = world.entity_index.get(destination_id or "")
    if destination is None or not _HANDOFF.search(text):
        return None
    zones = _active_in_window(world, constraints)
    covering = [z for z in zones if z.shape.covers(destination.point)]
    if not covering:
        return None
    named = [m.ids[0] for m in find_mentions(text, world) if m.role == "handoff" and len(m.ids) == 1]
    hubs = [
        e
        for e in world.entities
        if e.kind.value in HANDOFF_HUB_KINDS
        and all(z.shape.distance(e.point) >= HANDOFF_ZONE_CLEARANCE_M for z in covering)
        and not any(z.shape.covers(e.point) for z in zones)
    ]
    nearest = min(hubs, key=lambda e: (e.point.distance(destination.point), e.id), default=None)
    return named[0] if named else (nearest.id if nearest else None)


def plan_hand_off(task: ParsedTask, text: str, world: World) -> None:
    """The flight ends at the hand-off point `handoff_hub` finds, if any; the destination stays the operator's."""
    refs = task.entities
    if refs.handoff_points:
        return
    hub = handoff_hub(world, refs.destination, task.constraints, text)
    if hub is not None:
        refs.handoff_points = [hub]
        _keep_clear(refs, world, task.constraints)


def parse_instruction(instruction: str, world: World) -> ParsedTask:
    text = instruction.lower().replace("\u2019", "'")
    mentions = find_mentions(text, world)
    rest = _blank(text, mentions)
    intent = parse_intent(rest)
    defaults = OperationConstraints()
    constraints = OperationConstraints(
        deadline_sec=parse_deadline(rest),
        payload_kg=parse_payload(rest) or 0.0,
        battery_reserve_ratio=max(parse_reserve(rest) or 0.0, defaults.battery_reserve_ratio),
        **parse_altitude_and_separation(rest, defaults),
    )
    task = ParsedTask(intent, parse_priority(rest, intent), EntityRefs(), constraints)
    _fill_entities(task, mentions, world)
    if _RETURN_LEG.search(" ".join(text.split())):
        fly_back(task)
    plan_hand_off(task, text, world)
    destination = world.entity_index.get(task.entities.destination or "")
    if intent is Intent.delivery and destination is not None and destination.kind.value == "accident_site":
        task.intent = Intent.emergency
        task.priority = parse_priority(rest, Intent.emergency)
    if re.search(_INJECTION_CUES, rest):
        task.notes.append("the request asked to relax safety rules; ignored (R1-R3 always hold)")
    return task


def _fill_entities(task: ParsedTask, mentions: list[Mention], world: World) -> None:
    refs = task.entities
    places = [m for m in mentions if m.kind == "entity"]
    avoid: list[str] = []
    for m in mentions:
        if m.kind == "zone":
            avoid += m.ids
        elif m.kind == "entity" and m.role == "avoid":
            avoid += [z for entity_id in m.ids for z in _zones_near_entity(world, entity_id)]
        elif m.kind == "uav" and m.ids[0] not in refs.candidate_uavs:
            refs.candidate_uavs.append(m.ids[0])
    origin, destination = _pick(places, "origin"), _pick(places, "destination")
    unassigned = [m for m in places if m.role is None]
    if origin is None and destination is None and len(unassigned) >= 2:
        origin, destination = unassigned[0], unassigned[1]
    elif origin is None and destination is not None and unassigned and unassigned[0].start < destination.start:
        origin = unassigned[0]
    elif destination is None and unassigned:
        destination = next((m for m in unassigned if m is not origin), None)
    refs.origin = _resolve_slot(origin, "origin", task)
    refs.destination = _resolve_slot(destination, "destination", task)
    refs.waypoints = [m.ids[0] for m in places if m.role == "via" and len(m.ids) == 1]
    refs.handoff_points = [m.ids[0] for m in places if m.role == "handoff" and len(m.ids) == 1]
    _default_endpoints(task, world)
    _keep_clear(refs, world, task.constraints, avoid)


# --- IR building ----------------------------------------------------------------------------------------------
def _without_none(args: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in args.items() if v is not None}


def flight_end(entities: EntityRefs) -> str | None:
    """Where the UAV lands: the hand-off point where a courier takes over, else the destination."""
    return entities.handoff_points[0] if entities.handoff_points else entities.destination


def _route_start(task: ParsedTask) -> str | None:
    """A returning / charging UAV flies from where it is, which is no entity (the IR's origin is the nearest one)."""
    uavs = task.entities.candidate_uavs
    if task.intent in (Intent.return_, Intent.charge) and len(uavs) == 1:
        return uavs[0]
    return task.entities.origin


def standard_tool_plan(task: ParsedTask, rules: list[str], ltl: list[str]) -> list[ToolCallSpec]:
    refs, c = task.entities, task.constraints
    end = flight_end(refs)
    band = {"altitude_min_m": c.altitude_min_m, "altitude_max_m": c.altitude_max_m}
    steps = [
        (
            "airspace",
            "query_airspace",
            {
                "alt_min_m": c.altitude_min_m,
                "alt_max_m": c.altitude_max_m,
                "horizon_sec": c.deadline_sec,
                "destination": end,
                "capacity_required": c.corridor_capacity_required,
            },
        ),
        (
            "assign",
            "assign_uav",
            {
                "origin": refs.origin,
                "destination": end,
                "candidates": refs.candidate_uavs,
                "payload_kg": c.payload_kg,
                "battery_reserve_ratio": c.battery_reserve_ratio,
                "objective": "min_delay_safe",
            },
        ),
        (
            "route",
            "plan_route",
            {
                "start": _route_start(task),
                "goal": end,
                "waypoints": refs.waypoints,
                "avoid_zones": refs.avoid_zones,
                **band,
                "min_separation_m": c.min_separation_m,
                "deadline_sec": c.deadline_sec,
                "payload_kg": c.payload_kg,
            },
        ),
        (
            "verify",
            "verify_ltl_stl",
            {
                "origin": refs.origin,
                "goal": end,
                "ltl": ltl,
                "rules": rules,
                **band,
                "min_separation_m": c.min_separation_m,
                "deadline_sec": c.deadline_sec,
                "battery_reserve_ratio": c.battery_reserve_ratio,
                "payload_kg": c.payload_kg,
                "corridor_capacity_required": c.corridor_capacity_required,
                "priority": task.priority.value,
            },
        ),
        (
            "simulate",
            "simulate_scenario",
            {
                "stress_level": "medium",
                "payload_kg": c.payload_kg,
                "deadline_sec": c.deadline_sec,
                "min_separation_m": c.min_separation_m,
                "battery_reserve_ratio": c.battery_reserve_ratio,
                "max_risk_level": c.max_risk_level.value,
            },
        ),
        ("risk", "risk_assess", {"max_risk_level": c.max_risk_level.value}),
        ("explain", "explain_decision", {"rules": rules}),
    ]
    return [
        ToolCallSpec(id=step_id, tool=tool, args=_without_none(args), depends_on=[steps[i - 1][0]] if i else [])
        for i, (step_id, tool, args) in enumerate(steps)
    ]


def _fallback(task: ParsedTask) -> FallbackPolicy:
    """Nowhere to go is refused (R8); anything else unclear is for a human to confirm."""
    if task.entities.destination is None and not task.ambiguous:
        return FallbackPolicy.safe_refusal
    if task.entities.handoff_points:
        return FallbackPolicy.ground_transfer
    if task.intent is Intent.emergency and not task.missing:
        return FallbackPolicy.ground_transfer_or_human_confirm
    return FallbackPolicy.human_confirm


def _note_missing_endpoints(task: ParsedTask) -> None:
    for slot in ("origin", "destination"):
        if getattr(task.entities, slot) is None and not any(s.startswith(slot) for s in task.missing):
            task.missing.append(f"{slot} not found in the request or the world")


def build_answer(task: ParsedTask, task_id: str) -> LLMAnswer:
    _note_missing_endpoints(task)
    rules = [*MONITORED_RULES, *(["R7"] if task.priority is Priority.critical else [])]
    ltl = [f"G !in_{zone}" for zone in task.entities.avoid_zones]
    ltl += [f"F at_{w}" for w in task.entities.waypoints] + ["F at_goal"]
    ir = LowAltitudeIR(
        task_id=task_id,
        intent=task.intent,
        priority=task.priority,
        entities=task.entities,
        constraints=task.constraints,
        tool_plan=standard_tool_plan(task, rules, ltl),
        verification_specs=VerificationSpecs(ltl=ltl, program_rules=rules),
        fallback_policy=_fallback(task),
        explanation_plan=ExplanationPlan(
            cite_tools=["assign_uav", "plan_route", "verify_ltl_stl", "simulate_scenario"], cite_rules=rules
        ),
    )
    refs = task.entities
    summary = (
        f"{task.intent.value} ({task.priority.value}) from {refs.origin} to {refs.destination}, "
        f"avoiding {', '.join(refs.avoid_zones) or 'no zones'}"
    )
    return LLMAnswer(
        low_altitude_ir=ir,
        rationale_summary="; ".join([summary, *task.notes]),
        uncertainty=Uncertainty(needs_human_confirmation=bool(task.missing), missing_information=list(task.missing)),
    )


# --- repair ---------------------------------------------------------------------------------------------------
def task_from_ir(ir: LowAltitudeIR) -> ParsedTask:
    return ParsedTask(
        intent=ir.intent,
        priority=ir.priority,
        entities=ir.entities.model_copy(deep=True),
        constraints=ir.constraints.model_copy(deep=True),
    )


def _failure_text(cx: dict[str, Any]) -> str:
    parts = [cx.get("suggested_repair"), cx.get("message"), *(cx.get("suggested_actions") or [])]
    return " ".join(json.dumps(p) if not isinstance(p, str) else p for p in parts if p)


def _grounded(slot: str, value: str, world: World) -> bool:
    if slot == "candidate_uavs":
        uav = world.uav_index.get(value)
        return uav is not None and uav.status.value == "idle"
    if slot in ("avoid_zones", "sensitive_zones"):
        return value in world.zone_index
    return value in world.entity_index


def _replace_grounded(
    task: ParsedTask, world: World, field_path: str, bad_value: Any, allowed: list[str]
) -> str | None:
    """Swaps an ungrounded id for the validator's nearest allowed value (list slots also drop other bad ids)."""
    slot = next((f for f in _GROUNDING_FIELDS if f in field_path), None)
    if slot is None:
        return None
    refs = task.entities
    current = getattr(refs, slot)
    usable = [a for a in allowed if _grounded(slot, a, world)]
    bad = set(bad_value) if isinstance(bad_value, list) else {bad_value}
    if isinstance(current, list):
        kept = [v for v in current if v not in bad and _grounded(slot, v, world)]
        dropped = [v for v in current if v not in kept]
        replacement = next((a for a in usable if a not in kept), None) if dropped else None
        setattr(refs, slot, kept + ([replacement] if replacement else []))
        return f"{slot}: {', '.join(dropped)} -> {replacement or 'removed'}" if dropped else None
    if usable and usable[0] != current:
        setattr(refs, slot, usable[0])
        return f"{slot}: {current} -> {usable[0]}"
    return None


def _raise_floor(task: ParsedTask, world: World, text: str) -> str | None:
    c = task.constraints
    numbers = map(float, _ALTITUDE_IN_TEXT.findall(text.lower()))
    stated = [n for n in numbers if c.altitude_min_m < n < c.altitude_max_m]
    target = stated[0] if stated else c.altitude_min_m + world.grid.layer_height_m
    target = min(target, c.altitude_max_m - world.grid.layer_height_m)
    if target <= c.altitude_min_m:
        return None
    task.constraints = c.model_copy(update={"altitude_min_m": target})
    return f"altitude floor raised to {target:g} m"


def _fix_altitude_band(task: ParsedTask, world: World, failure: str, allowed: list[str]) -> str | None:
    """Band errors of constraint grounding: cap at the airspace ceiling, or widen the band to the nearest layer."""
    c = task.constraints
    if failure == "altitude_outside_airspace":
        task.constraints = c.model_copy(update={"altitude_max_m": world.grid.ceiling_m})
        return f"altitude ceiling set to {world.grid.ceiling_m:g} m"
    if failure == "no_flight_layer_in_band" and allowed:
        layer = float(allowed[0])
        band = {"altitude_min_m": min(c.altitude_min_m, layer), "altitude_max_m": max(c.altitude_max_m, layer)}
        task.constraints = c.model_copy(update=band)
        return f"altitude band widened to the {layer:g} m layer"
    return None


def _switch_uavs(task: ParsedTask, world: World, allowed: list[str], text: str) -> str:
    """Moves to the UAVs the feedback names (allowed values, else ids in its text); none named = whole fleet."""
    current = set(task.entities.candidate_uavs)
    named = [u for u in allowed if u in world.uav_index]
    named = named or [u for u in world.uav_index if _id_pattern(u).search(text.lower())]
    task.entities.candidate_uavs = [u for u in named if u not in current and _grounded("candidate_uavs", u, world)]
    return f"candidate UAVs -> {', '.join(task.entities.candidate_uavs) or 'whole fleet'}"


def apply_repair(task: ParsedTask, feedback: RepairFeedback, world: World) -> list[str]:
    """Applies what the counterexample suggests; returns what was changed (empty = nothing applicable)."""
    cx = feedback.counterexample
    failure = str(cx.get("failure_type") or cx.get("error_type") or cx.get("type") or "")
    rule = str(cx.get("violated_rule") or "")
    allowed = [str(a) for a in (feedback.allowed or cx.get("allowed") or [])]
    text = _failure_text(cx)
    offending = cx.get("offending_entity")
    changes: list[str] = []

    if cx.get("field") and (change := _replace_grounded(task, world, str(cx["field"]), cx.get("value"), allowed)):
        changes.append(change)
    zones = [z for z in world.zone_index if z == offending or z in text]
    new_zones = [z for z in zones if z not in task.entities.avoid_zones]
    if new_zones:
        task.entities.avoid_zones += new_zones
        changes.append(f"avoid {', '.join(new_zones)}")
    if change := _fix_altitude_band(task, world, failure, allowed):
        changes.append(change)
    obstacle_or_traffic = rule in ("R2", "R3") and not zones
    if obstacle_or_traffic or failure in ("near_miss", "collision") or "altitude" in text.lower():
        if change := _raise_floor(task, world, text):
            changes.append(change)
    if rule == "R5" or "battery" in failure:
        changes.append(_switch_uavs(task, world, allowed, text))
    if (rule == "R4" or failure == "deadline_risk") and task.entities.candidate_uavs:
        task.entities.candidate_uavs = []
        changes.append("candidate UAVs cleared so assign_uav can pick the fastest")
    task.entities.sensitive_zones = [z for z in task.entities.avoid_zones if z in {s.id for s in world.sensitive_zones}]
    return changes


def _repaired_task(request: GenerationRequest) -> ParsedTask:
    feedback = request.feedback
    assert feedback is not None
    previous = feedback.previous_ir or {}
    try:
        task = task_from_ir(LowAltitudeIR.model_validate(previous.get("low_altitude_ir", previous)))
    except ValidationError:  # an unusable previous IR: start again from the request
        task = parse_instruction(request.instruction, request.world)
    changes = apply_repair(task, feedback, request.world)
    prior = safety_prior_zones(request.world, task.entities, task.constraints)
    task.entities.avoid_zones = list(dict.fromkeys(task.entities.avoid_zones + prior))
    task.notes.append(f"repair round {request.round}: " + ("; ".join(changes) if changes else "no applicable repair"))
    if not changes and not task.missing:
        failure = feedback.counterexample.get("failure_type") or feedback.counterexample.get("error_type") or "failure"
        task.missing.append(f"no deterministic repair for {failure}")
    return task


class RuleBasedGenerator(IRGenerator):
    """The `rules` backend: parse on the first round; on feedback rounds take the repair node's first candidate
    where it offers some (models/repair_choice.py), else repair deterministically from the counterexample."""

    model = "rules"

    def generate(self, request: GenerationRequest) -> GenerationResult:
        started = time.perf_counter()
        if candidates := offered(request):  # the repair node's candidates, in its order: the first is taken
            answer = repaired_answer(request, candidates[0])
        else:
            task = (
                parse_instruction(request.instruction, request.world)
                if request.feedback is None
                else _repaired_task(request)
            )
            answer = build_answer(task, request.task_id).model_dump(mode="json")
        return GenerationResult(
            raw_text=json.dumps(answer, ensure_ascii=False),
            answer=answer,
            latency_sec=time.perf_counter() - started,
            model=self.model,
            prompt_version=RULES_VERSION,
        )
