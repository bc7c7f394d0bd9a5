"""Mentions with fuzzy matching: ids (also written "UAV 3"), descriptive names, kind words ("the hospital") and zone
words ("the no-fly zone"), each with the role its cue words give it (origin, destination, via, avoid, handoff)."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from rapidfuzz import fuzz
from rapidfuzz.distance import OSA

from language.grounding import (
    ARROW,
    DESTINATION_FIELD,
    HANDOFF_AFTER,
    ORIGIN_FIELD,
    PICKUP_CUE,
    WAIVED_BEFORE,
    after_role,
    name_variants,
    short_name,
)
from tools.world import World

NAME_MATCH_MIN_SCORE = 92.0


# Shorter names, and names with a number, must appear verbatim (fuzzy 'west depot' ~ 'east depot' scores 90,
# 'no. 2 charging pad' ~ 'no. 3 charging pad' 94).
SHORT_NAME_CHARS = 15


CUE_WINDOW_CHARS = 40


# Cues for where the flight ends ("..., then land at Y", "finishing at Y", "最后降落在Y"): the places named to
# visit before such an end are stops on the way, whatever cue they had ("inspect A and B ... finishing at Y").
_TERMINAL_CUE = (
    r"\bland(?:s|ing)? (?:at|on)\b|\bend(?:s|ing)? (?:up )?(?:at|in)\b|\bfinish\w* (?:up )?(?:at|in|on)\b|\barriv\w* at\b|"
    r"\bpark(?:s|ed|ing)? (?:it |her |the drone |the uav )?(?:at|on|in|by)\b|\bleave (?:it|her|the drone|the uav) (?:parked |sitting )?(?:at|on|in|by)\b|"
    r"\b(?:top(?:s|ping)? (?:it |her |its battery |the battery )?up|(?:re)?charg\w*)\b[^.;]{0,25}?\b(?:at|on)\b|"
    r"\b(?:when|once|after) (?:that's|that is|it's|it is|you're|you are|that|it|this|the drop|the delivery)(?: been)? "
    r"(?:done|finished|delivered|dropped(?: off)?|complete|over)\b[^.;]{0,40}?\b(?:at|to|in)\b|"
    r"\bafterwards?\b[^.;]{0,30}?\b(?:at|to)\b|\bwrap(?:s|ping)? up (?:at|in)\b|\bcall it a day at\b|"
    r"\bthen (?:go |fly |head |continue |carry on |return |come |get )?(?:back |home |on )?to\b(?=[^.;]*$)|"
    r"\bend (?:the|its|this|her) (?:flight|trip|mission|run|route) (?:at|in)\b|\bafter that\b[^.;]{0,30}?\b(?:at|to)\b|"
    r"\bland(?:ing)?[_ ](?:at|point|pad|site)\s*[:=]\s*(?:the\s+)?|"
    r"终点|降落|最后|结束后|完事后|送完(?:后|之后)?|之后停|然后停|停(?:在|到|放)"
)


# Role cues: the last cue between the previous mention and a mention decides its role.
_ROLE_CUES: tuple[tuple[str, str], ...] = (
    (
        "avoid",
        r"away from|avoid\w*|stay (?:out|clear) of|keep (?:out|clear) of|clear of|bypass\w*|"
        r"\bnot (?:enter|cross|fly over)|outside|\bignore\b|\bdisregard\b|\b(?:keep|stay) off\b|steer clear of|"
        r"\bskirt(?:ing)?(?: around)?|\b(?:go|route|fly) around\b|"
        r"(?:\bdon't|\bdo not|\bdont|\bnever|\bnot|n't)\s+(?:\w+\s+){0,2}?(?:over|across|through|near|past|via|above|by|into)\b|"
        # "without passing X", "don't stop at X", "every site except X", "X除外": a place not to go to
        r"\bwithout (?:passing|going|flying|stopping|calling)(?: by| through| past| over| at| via| in)?\b|"
        r"(?:\bdon't|\bdo not|\bdont|\bnever|\bno need to)\s+(?:stop|land|call|touch down|drop by)(?: off| over| in)?\s+(?:at|in|by)\b|"
        r"\b(?:except|excluding|apart from|other than)(?: for)?\b|"
        r"\bskip(?:ping)?\b|"
        r"远离|避开|避让|绕开|绕过|不要?进入|不得进入|不经过|忽略|无视|不要从|别从|不要飞过|别飞过|不要经过|别经过|"
        r"不要靠近|别靠近|不要路过|别路过|不要飞越|不要穿过",
    ),
    (
        "origin",
        r"\bfrom\b|\bout of\b|\bleaving\b|\bdepart\w*(?: from)?|\bstart\w* (?:at|from)\b|\bpick\w* up (?:at|from)\b|从|自|由|"
        + PICKUP_CUE
        + "|"
        + ORIGIN_FIELD,
    ),
    (
        "destination",
        r"\bto\b|\btowards?\b|\breach\b|\bover\b|\baround\b|\bdestination\b|" + ARROW + "|" + DESTINATION_FIELD + "|"
        r"\binspect\w*|\bpatrol\w*|\bmonitor\w*|\bsurvey\w*|\bneed(?:s|ed)?\b(?:[^.;]|\.\d){0,40}?\bat\b|"
        r"\bdrop\w*(?: it| them)?(?: off)? at\b|"
        r"到|至|去|往|前往|飞往|抵达|终点|降落|巡检|巡逻|监控|" + _TERMINAL_CUE,
    ),
    (
        "via",
        r"\bvia\b|\bthrough\b|\bpassing(?: by)?\b|\bby way of\b|\bswing(?:s|ing)? (?:by|past|through|over to)\b|"
        r"\bstop(?:s|ping)? (?:off |over )?(?:at|by|in)\b|\b(?:with|make) a (?:quick )?stop (?:at|in|by)\b|"
        r"\bdrop(?:s|ping)? by\b|\bcall(?:s|ing)? (?:in )?at\b|\bpass(?:es|ing)? by\b|\bon the way (?:past|by|to|at)\b|"
        r"\bby\b(?= way of)|经过|途经|经由|顺路(?:经过|去|到)?|中途(?:在|经过|停)?|路过|顺便去",
    ),
    ("handoff", r"hand[\s-]?off (?:at|to)|\btransfer (?:at|to)\b|交接|转运|换乘"),
    # a place named only to be ruled out as an end: "not from the hospital - take it from the depot", "instead of"
    (
        "landmark",
        r"\bnot (?:from|to|at|out of)\b|\binstead of(?: from| to)?\b|\brather than(?: from| to)?\b|\bbut not\b|"
        r"不是从|不是送到|不是到|而不是从?|而非",
    ),
)


# What may stand between two mentions for the second to take the first's role: "A and B", "A, B", and a bracket
# that qualifies A ("the temporary no-fly zone (police operation)": the police are no place to visit).
_CONTINUATION = re.compile(r"^[\s,、(（]*(?:and|or|&|和|与|及|以及)?[\s,、]*(?:the\s+)?$")


_KIND_WORDS: dict[str, str] = {
    "hospital": r"\bhospitals?\b|医院",
    "school": r"\bschools?\b|学校|小学|中学",
    "accident_site": r"\b(?:accident|crash|collision|wreck|pile-?up)(?: site| scene)?\b|事故(?:现场|地点)?|车祸(?:现场)?",
    "depot": r"\bdepots?\b|\bhangar\b|\bdrone (?:base|station)\b|机库|无人机站|无人机基地|配送中心",
    "charging_pad": r"\b(?:charging |charge |landing )?pads?\b|\bcharging (?:station|point)s?\b|\bchargers?\b|充电坪|充电桩|充电站|充电点",
    "metro_station": r"\b(?:metro|subway|underground)(?: station)?\b|\b(?:rail|train|railway) station\b|地铁站|地铁口|火车站",
    "police": r"\bpolice(?: station)?\b|\bprecinct\b|警察局|派出所|公安局",
    "fire_station": r"\bfire (?:station|hall)\b|\bfirehouse\b|消防站|消防队",
    "vertiport": r"\bvertiports?\b|起降场",
    "warehouse": r"\bwarehouses?\b|仓库",
    "park": r"\bparks?\b|公园",
    "residential": r"\bresidential\b|\b(?:apartment|housing) block\b|小区|居民区|居民楼|住宅楼|公寓楼?",
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


@dataclass
class Mention:
    """A reference in the request: resolved when `ids` has one element, ambiguous with more."""

    kind: str  # "entity" | "zone" | "uav" | "unknown" (an id this world lacks; `ids`: those with its words)
    ids: tuple[str, ...]
    start: int
    end: int
    role: str | None = None
    by_kind: bool = False  # found by a kind word ("the accident"), not by an id or a name
    terminal: bool = False  # named after a cue for where the flight ends ("park it at X", "finish at X")
    assumed_from: str | None = None  # the words read as this id or name within a small edit distance (a typo)


_UNIT_AFTER = (
    r"(?!\s*(?:kg|kilo|g\b|grams?|lbs?|pounds?|m\b|km|ft|feet|%|min|mins?|minutes?|s\b|secs?|h\b|hrs?|hours?|metres?|"
    r"meters?|公斤|千克|克|米|分钟|秒|小时))"
)
_CN_NUMERALS = dict(enumerate("一二三四五六七八九十", start=1))
_EN_NUMERALS = dict(
    enumerate(("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"), 1)
)


def _fleet_number_forms(number: int) -> str:
    """How people call a numbered UAV by its number: 'drone 3', 'drone #3', 'drone no. 3', 'drone number six',
    'unit 6', 'tail number 06', '3号无人机', '三号机', '无人机3号'."""
    digits = rf"0*{number}(?![0-9])"
    cn = rf"(?:{digits}|{_CN_NUMERALS[number]})" if number in _CN_NUMERALS else digits
    # a number word names a UAV only where a task or the sentence follows ("drone six to carry", "not drone five.";
    # not "a drone one-way", "the drone one more time")
    word = (
        rf"|{_EN_NUMERALS[number]}(?=\s*(?:[,.;:!?)]|$|(?:to|should|will|can|must|takes?|carr\w+|fl(?:y|ies)|goes|go|"
        rf"films?|please|is|has|and|or|then|now|today)\b))"
        if number in _EN_NUMERALS
        else ""
    )
    return (
        rf"(?<![a-z0-9])(?:drone|quad|aircraft)\s*(?:#|no\.?|number|num\.?)?\s*(?:{digits}(?![a-z]){word})|"
        rf"(?<!apartment )(?<!flat )(?<!room )(?<!suite )(?<!storage )\bunit\s*(?:#|no\.?|number)?\s*(?:{digits}{word})"
        r"(?=\s*(?:[,.;:!?)]|$|(?:to|should|will|can|must|takes?|carr\w+|fl(?:y|ies)|goes|go|films?|please)\b))|"
        rf"\b(?:tail|fleet) (?:number|no\.?|#)\s*{digits}|"
        rf"(?<![0-9一二三四五六七八九十]){cn}\s*号\s*(?:无人机|飞机|机)|无人机\s*{digits}\s*号"
    )


def id_pattern(identifier: str) -> re.Pattern[str]:
    """'uav_03' also matches 'UAV 3' / 'uav-03' and, by its number, 'drone 3' / '3号无人机'; 'hospital_A' also
    matches 'hospital A'."""
    pieces = [rf"0*{int(p)}" if p.isdigit() else re.escape(p) for p in re.split(r"[_\-\s]+", identifier.lower()) if p]
    # one separator ("fire station - 1 kg" is no fire_station_1); a trailing number followed by a unit is a quantity
    tail = _UNIT_AFTER if identifier[-1:].isdigit() else ""
    written = r"(?<![a-z0-9])" + r"[\s_\-]?".join(pieces) + r"(?![a-z0-9])"
    numbered = re.fullmatch(r"uav[_\-]?(\d+)", identifier.lower())
    if numbered:
        written = rf"(?:{written}|{_fleet_number_forms(int(numbered.group(1)))})"
    return re.compile(written + tail)


def _kind_of(world: World, identifier: str) -> str:
    if identifier in world.uav_index:
        return "uav"
    return "zone" if identifier in world.zone_index else "entity"


def _free(span: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    return all(span[1] <= a or span[0] >= b for a, b in taken)


def _id_mentions(text: str, world: World) -> list[Mention]:
    identifiers = [*world.entity_index, *world.zone_index, *world.uav_index]
    hits = [
        (m.start(), m.end(), identifier) for identifier in identifiers for m in id_pattern(identifier).finditer(text)
    ]
    mentions: list[Mention] = []
    for start, end, identifier in sorted(hits, key=lambda h: (h[0], h[0] - h[1])):
        if _free((start, end), [(m.start, m.end) for m in mentions]):
            mentions.append(Mention(_kind_of(world, identifier), (identifier,), start, end))
    return mentions


# An id written with a typing error ("hospitla_A", "uav_O7", "acident_site_3"): a token shaped like an id (words
# joined by _ or -, or letters run into digits) that no id matches.
_ID_LIKE = re.compile(r"(?<![a-z0-9_\-])(?:[a-z]+(?:[_\-][a-z0-9]+)+|[a-z]{2,}\d+[a-z0-9]*)(?![a-z0-9_\-])")


# A typo is read as an id only within this many edits (1 for ids of up to 6 characters), and only when exactly one
# id is that close; two or more are asked about.
TYPO_MAX_EDITS = 2


def _normalised_id(token: str, *, short_pieces: bool = False) -> str:
    """Lower case, '-' as '_', and in a numbered piece the letters people type for digits (O for 0, l and I for 1);
    with `short_pieces`, also in any piece after the first of up to 3 characters ("uav_sl" for uav_s1)."""
    pieces = token.lower().replace("-", "_").split("_")
    fixed = [
        p.translate(str.maketrans("oli", "011"))
        if any(c.isdigit() for c in p) or (short_pieces and i > 0 and len(p) <= 3)
        else p
        for i, p in enumerate(pieces)
    ]
    return "_".join(fixed)


def _id_typo(written: str, identifier: str) -> bool:
    """`written` is `identifier` with typing errors inside its words only: the same pieces, each number and one-letter
    tag exactly ("accident_site_4" is another site, not a typo of accident_site_3), each word with its first letter
    and within one edit (two from 8 letters; a swap of neighbours is one)."""
    mine, theirs = written.split("_"), identifier.split("_")
    if len(mine) != len(theirs):
        return False
    for a, b in zip(mine, theirs):
        if a == b:
            continue
        if any(c.isdigit() for c in a + b) or len(b) <= 1 or a[:1] != b[:1]:
            return False
        if OSA.distance(a, b) > (2 if len(b) >= 8 else 1):
            return False
    return written != identifier


def _typo_id_mentions(text: str, world: World, taken: list[tuple[int, int]]) -> list[Mention]:
    """Ids written with a typing error, read as the one id they fit (`_id_typo`); an id-shaped token that fits none
    but shares an id's words ("uav_04", "accident_site_4") is kept with those ids, to be asked about."""
    identifiers = [*world.entity_index, *world.zone_index, *world.uav_index]
    normalised = {identifier: _normalised_id(identifier) for identifier in identifiers}
    mentions: list[Mention] = []
    for match in _ID_LIKE.finditer(text):
        span = match.span()
        if not _free(span, taken) or len(match.group(0)) < 4:
            continue
        readings = {_normalised_id(match.group(0)), _normalised_id(match.group(0), short_pieces=True)}
        fits = tuple(i for i, n in normalised.items() if n in readings or any(_id_typo(r, n) for r in readings))
        kind = _kind_of(world, fits[0]) if fits else "unknown"
        if not fits:  # the same words with another number or tag: a place or UAV this world does not have
            fits = tuple(i for i, n in normalised.items() if "_" in n and _words(n) in {_words(r) for r in readings})
        if not fits or len({_kind_of(world, i) for i in fits}) > 1:
            continue
        mentions.append(Mention(kind, fits, *span, assumed_from=match.group(0)))
        taken.append(span)
    return mentions


def _words(identifier: str) -> tuple[str, ...]:
    """An id's words without its numbers and one-letter tags: 'accident_site_3' -> ('accident', 'site')."""
    return tuple(p for p in identifier.split("_") if len(p) > 1 and not any(c.isdigit() for c in p))


def _name_variants(name: str) -> list[str]:
    name = name.replace("\u2019", "'").strip()
    variants = [v for v in dict.fromkeys(re.sub(r"^the\s+", "", v.strip().lower()) for v in name_variants(name)) if v]
    return variants + [tail] if (tail := _name_tail(short_name(name).lower())) else variants


# "old bridge pier" said as "the bridge pier": a name of three words or more by its last two, unless they hold a kind
# word ("West Gate metro station" as "the metro station" is the kind's to read: any metro station, qualified) or end
# in a noun any place goes by ("the substation inspection point": "the inspection points" are all of them)
_TAIL_WORDS = 2
_GENERIC_PLACE_NOUN = re.compile(
    r"\b(?:points?|sites?|areas?|zones?|spots?|places?|locations?|stations?|cent(?:re|er)s?|buildings?|fields?|"
    r"grounds?|yards?|blocks?|towers?)$"
)


def _name_tail(short: str) -> str | None:
    words = re.sub(r"^the\s+", "", short).split()
    if len(words) <= _TAIL_WORDS or not all(w.isalpha() for w in words[-_TAIL_WORDS:]):
        return None
    tail = " ".join(words[-_TAIL_WORDS:])
    if _GENERIC_PLACE_NOUN.search(tail) or any(re.search(pattern, tail) for pattern in _KIND_WORDS.values()):
        return None
    return tail


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
                    written = text[span[0] : span[1]]
                    typo = None if verbatim or written == variant else written
                    mentions.append(Mention(kind, (identifier,), *span, assumed_from=typo))
                    taken.append(span)
                    break
    return mentions + _name_typo_mentions(text, named, owners, mentions, taken)


_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def _word_typo(written: str, word: str) -> bool:
    """One word of a name written with a typing error: the same first letter, at least 4 letters, and within one
    edit (two for 8 letters or more; a swap of neighbours is one). 'west' for 'east' is another word, not a typo."""
    written, word = written.replace("'", ""), word.replace("'", "")
    if written == word:
        return True
    if len(word) < 4 or written[:1] != word[:1] or any(c.isdigit() for c in word + written):
        return False
    return OSA.distance(written, word) <= (2 if len(word) >= 8 else 1)


def _name_typo_mentions(
    text: str,
    named: list[tuple[str, list[str], str]],
    owners: dict[str, set[str]],
    found: list[Mention],
    taken: list[tuple[int, int]],
) -> list[Mention]:
    """Names of two words or more written with typing errors ("the childrens hosptial", "Centrl Hospital"), word by
    word; kept only where one place's name fits the words."""
    words = [(m.start(), m.end(), m.group(0)) for m in _WORD.finditer(text)]
    hits: dict[tuple[int, int], set[tuple[str, str]]] = defaultdict(set)
    for identifier, variants, kind in named:
        if any(m.ids == (identifier,) for m in found):
            continue
        for variant in (v for v in variants if len(owners[v]) == 1):
            parts = [w for w in _WORD.findall(variant) if w not in _STOPWORDS]
            if len(parts) < 2:
                continue
            for i in range(len(words) - len(parts) + 1):
                window = words[i : i + len(parts)]
                if all(_word_typo(w[2], p) for w, p in zip(window, parts)) and any(
                    w[2].replace("'", "") != p.replace("'", "") for w, p in zip(window, parts)
                ):
                    hits[(window[0][0], window[-1][1])].add((identifier, kind))
    mentions = []
    for span, owners_here in sorted(hits.items()):
        if len(owners_here) == 1 and _free(span, taken):
            identifier, kind = next(iter(owners_here))
            mentions.append(Mention(kind, (identifier,), *span, assumed_from=text[span[0] : span[1]]))
            taken.append(span)
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


# A Chinese qualifier stands right before its noun ("北边儿童医院"), after a verb or a mark; English ones on
# either side ("the hospital on the north side").
_ZH_QUALIFIER = re.compile(r"[\u4e00-\u9fff]{1,6}$")


def _qualifier_window(text: str, span: tuple[int, int]) -> str:
    if _CJK_CHAR.match(text[span[0] : span[0] + 1]):
        before = _ZH_QUALIFIER.search(text[max(0, span[0] - 6) : span[0]])
        return (before.group(0) if before else "") + text[span[0] : span[1]]
    return text[max(0, span[0] - 30) : span[1] + 30]


_CJK_CHAR = re.compile(r"[\u4e00-\u9fff]")


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
                window = _qualifier_window(text, span)
                ids = _disambiguate(candidates, names, window, match.group(0).split()[0])
                mentions.append(Mention("entity", ids, *span, by_kind=True))
            else:
                mentions.append(Mention("zone", zones, *span, role="avoid"))
            taken.append(span)
    return mentions


def _zone_word_mentions(text: str, world: World, taken: list[tuple[int, int]]) -> list[Mention]:
    mentions: list[Mention] = []
    for zone in world.no_fly_zones:  # a zone named by what it is for: "the open-air event site", "the airfield"
        reason = zone.reason.strip().lower()
        if len(reason) < 5:
            continue
        for match in re.finditer(rf"(?<![a-z]){re.escape(reason)}(?:\s+(?:site|zone|area|grounds))?(?![a-z])", text):
            span = (match.start(), match.end())
            if _free(span, taken):
                mentions.append(Mention("zone", (zone.id,), *span, role="avoid"))
                taken.append(span)
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
            if role == "avoid" and WAIVED_BEFORE.search(window[: match.start()]):
                continue
            key = (match.end(), match.end() - match.start(), role)
            if best is None or key[:2] > best[:2]:
                best = key
    return best[2] if best else None


# "drops 2 kg of rope from the warehouse at the rescue camp": the 'at' of a drop-off, its verb before the cargo and
# the origin, in the same clause
_DROPPED_AT = re.compile(
    r"\b(?:drop|leave|set down|put down|unload|lower)\w*\b(?![^.;!?]*\b(?:after|before|then|and)\b)[^.;!?]{0,80}\bat (?:the )?$"
)


def _clause_before(text: str, start: int) -> str:
    return re.split(r"[.;!?。；！？]", text[:start])[-1]


def _assign_roles(text: str, mentions: list[Mention]) -> None:
    previous: Mention | None = None
    for mention in mentions:
        window_start = previous.end if previous else 0
        # A cue right after the place outranks one before it ("请到X取货": X is where the cargo is picked up).
        after: set[str] = set()
        if mention.kind == "entity":  # "fly to X and hand over to a courier", "请飞到X,在那里交给地面配送员"
            after = {"handoff"} if HANDOFF_AFTER.match(text, mention.end) else after_role(text, mention.end)
        cue_role = next(iter(after)) if len(after) == 1 else _role_before(text, mention.start, window_start)
        if cue_role is None and mention.kind == "entity" and _DROPPED_AT.search(_clause_before(text, mention.start)):
            cue_role = "destination"
        if mention.role is None:
            if cue_role is not None:
                mention.role = cue_role
            elif previous is not None and _CONTINUATION.match(text[previous.end : mention.start]):
                between = text[previous.end : mention.start]
                if previous.kind == mention.kind:  # "A and B", "A, B": a list takes its first member's role
                    mention.role = previous.role
                elif "(" in between or "（" in between:  # "the no-fly zone (police operation)": a qualifier, no place
                    mention.role = "landmark"
        previous = mention


# "再飞到东消防站降落": a landing said right after the place
_LANDS_AFTER_ZH = re.compile(r"\s*(?:降落|落地|着陆)")
# "land at Y after dropping it at X", "end at Y once you have visited X": X is visited before the end named first.
_DONE_FIRST_BETWEEN = re.compile(
    r"^\s*,?\s*(?:right\s+|just\s+)?(?:after|once)\s+(?:you(?:'ve| have)?\s+|it(?:'s| has)\s+)?\w+(?:ing|ed)\b[^.;,。；，]*$"
)

# "if it is closed, then to X": a conditional alternative, no end the request fixes.
_CONDITION = re.compile(r"\b(?:if|unless|otherwise|in case|should it|failing that)\b|如果|否则|万一|要是")


def _stops_before_the_end(text: str, mentions: list[Mention]) -> None:
    """Places to visit named before a cue for where the flight ends become stops on the way, in the order named.
    Without a cued origin the first uncued place stays the origin ("take it at X, then land at Y")."""
    places = [m for m in mentions if m.kind == "entity" and m.role != "landmark"]
    ends = [
        i
        for i, m in enumerate(places)
        if m.role == "destination"
        and (
            re.search(_TERMINAL_CUE, text[max(places[i - 1].end if i else 0, m.start - CUE_WINDOW_CHARS) : m.start])
            or _LANDS_AFTER_ZH.match(text, m.end)
        )
        and not _CONDITION.search(re.split(r"[.;。;]", text[: m.start])[-1])
    ]
    done_first = {  # "land at Y after dropping it at X": X, though cued as an end itself, is a stop before Y
        i + 1
        for i in ends
        if i + 1 < len(places)
        and places[i + 1].role == "destination"
        and _DONE_FIRST_BETWEEN.match(text[places[i].end : places[i + 1].start])
    }
    ends = [i for i in ends if i not in done_first]
    for i in done_first:
        places[i].role = "via"
    for i in ends:
        places[i].terminal = True
    before = places[: ends[-1]] if ends else []
    if not any(m.role == "origin" for m in places):
        before = before[1:] if before and before[0].role is None else before
    for place in before:
        if place.role in (None, "destination"):
            place.role = "via"


# "the pad next to the hospital", "the charger nearest uav_07", "医院旁边的充电坪": a kind word pinned down by a
# landmark, which is no place to visit itself.
_LANDMARK_BETWEEN = re.compile(
    r"^\s*(?:(?:that's|which is|that is|the one)\s+)?(?:right\s+)?(?:next to|near(?:est)?(?: to)?|beside|by|close to|"
    r"closest to|opposite|behind|in front of|across from|at)\s+(?:the\s+)?$"
)
_LANDMARK_BETWEEN_ZH = re.compile(r"^\s*(?:旁边|附近|边上|隔壁|对面|最近)的?\s*$")


def _landmarks(text: str, world: World, mentions: list[Mention]) -> None:
    for first, second in zip(mentions, mentions[1:]):
        between = text[first.end : second.start]
        if first.by_kind and second.kind == "entity" and len(second.ids) == 1 and _LANDMARK_BETWEEN.match(between):
            kind_mention, landmark = first, second
        elif second.by_kind and first.kind == "entity" and len(first.ids) == 1 and _LANDMARK_BETWEEN_ZH.match(between):
            kind_mention, landmark = second, first
        else:
            continue
        if landmark.ids[0] in kind_mention.ids and len(kind_mention.ids) == 1:
            continue
        anchor = world.entity_index[landmark.ids[0]].point
        candidates = [i for i in kind_mention.ids if i in world.entity_index and i != landmark.ids[0]]
        if candidates:
            nearest = min(candidates, key=lambda i: (world.entity_index[i].point.distance(anchor), i))
            kind_mention.ids = (nearest,)
            landmark.role = "landmark"


# "any drone parked at the depot", "the drone that is at the hospital pad", "停在西区无人机基地的无人机": the place says
# where a UAV is, no place to fly to (language.stated reads which UAVs it means)
UAV_AT_BEFORE = re.compile(
    r"\b(?:drones?|uavs?|quads?|aircraft)\s+(?:(?:that|which|currently|now|still)\s+)?"
    r"(?:(?:is|are|'s)\s*(?P<not>not\s+|n't\s+)?)?"
    r"(?:(?:parked|sitting|waiting|stationed|based|docked|standing|charging|idling)\s+)?(?:at|in|on|by)\s+(?:the\s+)?$"
)
UAV_AT_BEFORE_ZH = re.compile(r"(?:停在|停放在|待在|位于|在)$")
UAV_AT_AFTER_ZH = re.compile(r"\s*(?:的|里的|上的)\s*(?:无人机|飞机|那架|那几架)")


# "park the drone at X", "send the drone to X", "把无人机停在X": a verb that moves the UAV there, X is where it goes
_MOVED_BEFORE = re.compile(
    r"\b(?:park|leave|land|put|set|bring|send|move|fly|get|take|return|ferry|reposition|station|dock|keep)\w*\s+"
    r"(?:the|a|an|our|that|this|your|one)?\s*$|(?:把|将|让)$"
)


def uav_said_at(text: str, mention: Mention) -> re.Match[str] | None:
    """The words before a place that say a UAV is there ("any drone parked at", "the drone that is not at"), where no
    verb moves it there ("park the drone at" is where it goes)."""
    window_start = max(0, mention.start - 60)
    said = UAV_AT_BEFORE.search(text[window_start : mention.start])
    if said and _MOVED_BEFORE.search(text[max(0, window_start + said.start() - 30) : window_start + said.start()]):
        return None
    return said


# "don't use any drone parked at the depot", "not the drone at the hospital pad", "不要用停在基地的无人机"
NOT_THE_UAVS_AT = re.compile(
    r"(?:\bnot|n't (?:use|send|take|fly|pick|want)|\bno|\bwithout|\bexcept(?: for)?|\bother than|\bnever (?:use|send)|"
    r"\bavoid(?:ing)?|\bbut not|\bleave out)\s+(?:(?:the|a|an|any|our|those|these|that|this|one of the)\s+)?$"
    r"|(?:不要|别|不能|不)(?:用|派|使用)?$"
)


# "the drone at the hospital is out of action": those UAVs are left out
_OUT_OF_SERVICE_AFTER = re.compile(
    r"\s*(?:is|are|'s|was|were)\s+(?:still\s+|currently\s+|now\s+)?(?:out of (?:action|service|order|commission)|"
    r"grounded|down|broken|busy|unavailable|not available|offline|being (?:serviced|repaired|charged)|"
    r"(?:in|under) (?:maintenance|repair)|unserviceable|u/s\b|not working|damaged)"
)


def uavs_wait_at(text: str, mention: Mention) -> bool | None:
    """Whether the words say UAVs wait at this place: True where they offer those UAVs ("the drone at the
    hospital", "停在医院的无人机"), False where they leave them out ("a drone that is not parked at the depot",
    "don't use any drone parked at the depot", "the drone at the hospital is out of action"), None where they say
    no UAV is there."""
    said = uav_said_at(text, mention)
    if said:
        noun_at = max(0, mention.start - 60) + said.start()
        return not (
            said.group("not")
            or NOT_THE_UAVS_AT.search(text[max(0, noun_at - 30) : noun_at])
            or _OUT_OF_SERVICE_AFTER.match(text, mention.end)
        )
    zh = UAV_AT_BEFORE_ZH.search(text[max(0, mention.start - 4) : mention.start])
    if zh and UAV_AT_AFTER_ZH.match(text, mention.end):
        noun_at = max(0, mention.start - 4) + zh.start()
        return not NOT_THE_UAVS_AT.search(text[max(0, noun_at - 30) : noun_at])
    return None


def _where_uavs_wait(text: str, mentions: list[Mention]) -> None:
    """The places said of a UAV are no stops: landmarks."""
    for mention in mentions:
        if mention.kind == "entity" and uavs_wait_at(text, mention) is not None:
            mention.role, mention.terminal = "landmark", False


_ARROW_BETWEEN = re.compile(r"^\s*(?:" + ARROW + r")\s*(?:the\s+)?$")


def _arrow_chain(text: str, mentions: list[Mention]) -> None:
    """ "depot_1 -> site_1 -> site_2 -> pad_2": the first place of a chain of arrows is where the flight starts,
    the last where it ends (terminal), the ones between stops in that order."""
    places = [m for m in mentions if m.kind == "entity" and m.role not in ("avoid", "landmark")]
    chain: list[Mention] = []
    for place in places:
        if chain and _ARROW_BETWEEN.match(text[chain[-1].end : place.start]):
            chain.append(place)
            continue
        _mark_chain(chain)
        chain = [place]
    _mark_chain(chain)


def _mark_chain(chain: list[Mention]) -> None:
    if len(chain) < 3:
        return
    chain[0].role = "origin"
    for stop in chain[1:-1]:
        stop.role = "via"
    chain[-1].role, chain[-1].terminal = "destination", True


def find_mentions(text: str, world: World) -> list[Mention]:
    """Ids first, then descriptive names, then zone words and kind words; each span is claimed once."""
    mentions = _id_mentions(text, world)
    taken = [(m.start, m.end) for m in mentions]
    mentions += _name_mentions(text, world, taken)
    mentions += _typo_id_mentions(text, world, taken)
    mentions += _zone_word_mentions(text, world, taken)
    mentions += _kind_mentions(text, world, taken)
    mentions.sort(key=lambda m: m.start)
    _assign_roles(text, mentions)
    _where_uavs_wait(text, mentions)
    _landmarks(text, world, mentions)
    _stops_before_the_end(text, mentions)
    _arrow_chain(text, mentions)
    for mention in mentions:
        if mention.kind == "zone":
            mention.role = "avoid"
    return mentions


def blank_mentions(text: str, mentions: list[Mention]) -> str:
    chars = list(text)
    for m in mentions:
        chars[m.start : m.end] = " " * (m.end - m.start)
    return "".join(chars)


# --- places listed that the world does not have --------------------------------------------------------------
# "the sluice gate, the pumping station, the old mill and the east levee": an item of a list of places that names no
# place is one the plan would silently leave out. Joiners between list items; an item of one to four plain words.
_JOIN = r"(?:,\s*(?:and\s+|&\s*)?|;\s*|\s+and\s+|\s*&\s*|\s*、\s*|\s*(?:和|及(?!时)|与(?!其))\s*)"
_ENUMERATING = re.compile(r"[,;、]")  # a list of three or more, "A, B and C": its last item may be read
_ITEM = r"(?:the\s+)?(?P<item>[a-z][a-z'-]*(?:\s+[a-z][a-z'-]*){0,3}|[\u4e00-\u9fff]{2,10})"
_BETWEEN = re.compile(rf"{_JOIN}{_ITEM}{_JOIN}(?:the\s+)?")
_LAST_JOIN = (
    r"(?:,?\s+and\s+|\s*&\s*|\s*(?:和|及(?!时)|与(?!其))\s*)"  # the last item of a list follows "and", not a comma
)
_AFTER_LAST = re.compile(
    rf"{_LAST_JOIN}{_ITEM}(?=\s*(?:$|[.;!?)(:—–]|\s-\s|,|\b(?:with|using|within|in|by|before|for|from|to|at|each|both|all)"
    r"\b|。|，|；|！))"
)
# words a list item may be that name no place: "..., then the school", "..., all within 2 minutes", "..., please"
_NOT_A_PLACE = re.compile(
    r"^(?:then|also|too|as well|afterwards|after that|finally|next|please|thanks|asap|now|today|tonight|quickly|"
    r"both|all|each|everything|them|it|those|these|others?|more|back|home|return|come back|fly back|"
    r"(?:one|two|three|four|five|six|a few|several)(?:\s+\w+)?|(?:\w+\s+)?(?:drones?|uavs?|quads?|aircraft)|"
    r"surroundings|(?:the )?(?:surrounding |nearby )?(?:area|areas|vicinity|neighbourhood|neighborhood)(?: around)?|"
    r"返回|返航|然后|以及|其他|周边|附近|周围)$"
    # a clause, not a place: "... and the pumping station and report back", "..., then land"
    r"|^(?:then|and then|also|finally|next|afterwards|after that|report|return|come|fly|head|go|land|wait|hover|"
    r"take|bring|send|film|photograph|shoot|inspect|check|deliver|drop|stay|make|get|keep|be|do|let|tell|call|"
    r"circle|loiter|survey|scan|record|look|use|avoid|charge|recharge|park|finish|end|start|leave|pick|hand|see|"
    r"stop|upload|stream|email|e-mail|notify|alert|message|text|hurry|hold|safely|carefully|quickly|assess|measure|"
    r"zoom|map|count|find|search|locate|share|don't|do not|never)\b"
)


def unknown_listed_places(text: str, mentions: list[Mention]) -> list[str]:
    """Items of a list of places (two or more the world has, joined by commas, 'and', '、') that name no place, no
    zone and no UAV of the world: between two listed places, or right after the last of them."""
    spans = sorted((m.start, m.end, m.kind) for m in mentions if m.kind in ("entity", "zone", "uav", "unknown"))
    unknown: list[str] = []
    run: list[tuple[int, int, str]] = []  # the places of the list being read, and the unknown items between them
    items: list[str] = []
    enumerated = False
    for span in [*spans, (len(text) + 1, len(text) + 1, "end")]:
        if run and span[2] == "entity":
            gap = text[run[-1][1] : span[0]]
            if re.fullmatch(rf"{_JOIN}(?:the\s+)?", gap):
                run.append(span)
                enumerated = enumerated or bool(_ENUMERATING.search(gap))
                continue
            between = _BETWEEN.fullmatch(gap)
            if between and not _NOT_A_PLACE.match(between["item"]):
                items.append(between["item"])
                run.append(span)
                enumerated = True
                continue
        if len(run) >= 2:  # a list ends: its unknown items, and one after "and" past its last place
            unknown += items
            after = _AFTER_LAST.match(text, run[-1][1])
            if enumerated and after and after.end() <= span[0] and not _NOT_A_PLACE.match(after["item"]):
                unknown.append(after["item"])
        run, items, enumerated = ([span] if span[2] == "entity" else []), [], False
    return list(dict.fromkeys(unknown))
