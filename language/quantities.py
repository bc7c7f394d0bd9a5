"""Quantities a request states: durations (deadline), masses (payload), battery shares (reserve), lengths (altitude
band, separation) and speeds, in digits or in words, in English or Chinese; and clock times ("by 14:30", "下午3点前").

One reader: `read_quantities(text)` puts numbers written as words in digits (`with_digits`) and finds every number
with a unit (`find_quantities`, the same reader for text already in digits), each in SI units by pint; the deadline,
payload, altitude band and separation readers take their numbers from it. Numbers are read by one rule:

- digits grouped in threes by commas are thousands: "1,500 m" is 1500 m (never 500 m);
- any other comma between digits ("2,5 kg": a decimal comma, or a list typed without its space) and digit groups
  split by a space ("1 500 m") are ambiguous: the quantity is found, so span accounting quotes it back, but its
  value is NaN (`ambiguous` says why) and no reader takes it;
- two numbers before one unit ("10-15 minutes", "2 or 3 kg") are one quantity at its stricter end: the shorter
  duration, the larger mass, share, length or speed;
- a duration or a mass in parts is one quantity ("1 hr 30 min", "1h30", "1小时30分钟", "1 kg 200 g").

A number that has no unit after it ("uav_05", "route 66", "2 drones", "No. 2 school") is no quantity.
"""

from __future__ import annotations

import difflib
import functools
import math
import re
import warnings
from datetime import UTC, datetime, time, timedelta
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field
from rapidfuzz.distance import OSA
from text_to_num import alpha2digit

from ir.fidelity import STATED_ALTITUDE_TOLERANCE_M
from ir.model import OperationConstraints

if TYPE_CHECKING:
    import pint

Dimension = Literal["duration", "mass", "length", "share", "speed"]

# Each unit word a request may write, as pint reads it; pint gives its dimension and its factor to SI.
_UNIT_WORDS: dict[str, str] = {
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours", "小时", "钟头"), "hour"),
    **dict.fromkeys(("min", "mins", "minute", "minutes", "分钟", "分"), "minute"),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds", "秒", "秒钟"), "second"),
    "刻钟": "15 minute",
    **dict.fromkeys(
        ("kg", "kgs", "kilo", "kilos", "kilogram", "kilograms", "kilogramme", "kilogrammes", "公斤", "千克"), "kilogram"
    ),
    **dict.fromkeys(("g", "gram", "grams", "gramme", "grammes", "克"), "gram"),
    **dict.fromkeys(("lb", "lbs", "pound", "pounds", "磅"), "pound"),
    **dict.fromkeys(("oz", "ounce", "ounces", "盎司"), "ounce"),
    "斤": "0.5 kilogram",  # the market jin
    **dict.fromkeys(("m", "metre", "metres", "meter", "meters", "米", "公尺"), "meter"),
    **dict.fromkeys(("km", "kms", "kilometre", "kilometres", "kilometer", "kilometers", "公里", "千米"), "kilometer"),
    **dict.fromkeys(("ft", "feet", "foot", "英尺"), "foot"),
    **dict.fromkeys(("mi", "mile", "miles", "英里"), "mile"),
    **dict.fromkeys(("%", "percent", "per cent"), "percent"),
    **dict.fromkeys(("m/s", "mps", "米/秒", "米每秒"), "meter / second"),
    **dict.fromkeys(("km/h", "kph", "kmh", "公里/小时", "公里每小时", "千米每小时"), "kilometer / hour"),
    "mph": "mile / hour",
    **dict.fromkeys(("knot", "knots", "kn", "kt", "kts"), "knot"),
}
# A bare 分 is minutes only before 内 ("十分" alone means "very"); "5g" before "signal" is the network.
_UNIT_GUARD = {
    "分": r"(?=之?内|以内|\d{1,2}\s*秒)",  # "1分30秒": then joined with its seconds
    "g": r"(?!\s*(?:network|signal|coverage|lte|connection|connectivity|网络|信号))",
}
_UNIT = "|".join(re.escape(u) + _UNIT_GUARD.get(u, "") for u in sorted(_UNIT_WORDS, key=len, reverse=True))
_DIMENSIONS: dict[tuple[tuple[str, float], ...], Dimension] = {
    (("[time]", 1.0),): "duration",
    (("[mass]", 1.0),): "mass",
    (("[length]", 1.0),): "length",
    (): "share",
    (("[length]", 1.0), ("[time]", -1.0)): "speed",
}


@functools.cache
def _registry() -> pint.UnitRegistry:
    """pint's registry, built on the first reading, which importing this module does not pay. pint parses its
    definitions file into a registry in about 1.5 s; with its own disk cache (the user's cache folder, filled by the
    first process) it loads the parsed registry in ~0.05 s, so each command pays it once per machine, not per run."""
    import pint

    try:
        return pint.UnitRegistry(cache_folder=":auto:")
    except Exception:  # noqa: BLE001 - no writable cache folder, or a cache file another process is still writing
        return pint.UnitRegistry()


@functools.cache
def unit(word: str) -> tuple[Dimension, float]:
    """A unit word's dimension and its factor to SI (s, kg, m, m/s; a share as a ratio), as pint reads it."""
    si = _registry().parse_expression(_UNIT_WORDS[word]).to_base_units()
    dimensionality = tuple(sorted((name, float(power)) for name, power in si.dimensionality.items()))
    return _DIMENSIONS[dimensionality], float(si.magnitude)


# Thousands in threes after commas; a space between digit groups, a fraction, a decimal comma, plain digits.
_NUMBER = (
    r"\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])"
    r"|\d{1,3}(?: \d{3})+(?:\.\d+)?(?![\d,])"
    r"|\d+/\d+(?![\d,./])"
    r"|\d+(?:,\d+)+(?:\.\d+)?"
    r"|\d+(?:\.\d+)?"
)
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_NOT_AFTER = r"(?<![a-z0-9_.:/])"  # a number starts no word ("uav_05", "a2"), decimal, fraction or clock time
_QUANTITY = re.compile(
    _NOT_AFTER + rf"(?:(?P<low>{_NUMBER})\s*(?:-|–|~|to|or|到|至|或)\s*)?(?P<number>{_NUMBER})"
    rf"\s*-?\s*个?\s*(?P<unit>{_UNIT})(?![a-z])"
)
# Minutes after hours with no unit of their own or a bare 分: "1h30", "1h30m", "1小时30分", "1小时零5分".
_MINUTES_AFTER_HOURS = re.compile(r"([0-5]?\d)(?:m(?:in)?)?(?![\w.,:/%])|零?([0-5]?\d)分(?!钟)")
# "within 1 minute 40": bare seconds after minutes, the number ending the phrase
_SECONDS_AFTER_MINUTES = re.compile(r"\s+([0-5]?\d)(?!\s*[\w.,:/%]\w)(?![\w:/%])")
_PARTS_GAP = re.compile(r"\s*(?:and\s+)?|零")
_CLOCK_CUE_BEFORE = re.compile(r"\b(?:by|before|until|till|at)\s*$")


class Quantity(BaseModel):
    """A number with a unit, as the request states it (digits form)."""

    text: str = Field(description="as written, numbers in digits")
    dimension: Dimension
    value: float = Field(description="in SI units (s, kg, m, m/s) or as a ratio for shares; NaN where ambiguous")
    start: int = Field(description="where it starts in the text read (read_quantities: in the text as given)")
    end: int = Field(description="where it ends (exclusive), likewise")
    ambiguous: str = Field(default="", description="why the number is not read ('' where it is)")


def _number(written: str) -> float | None:
    """The number as written, or None where it is ambiguous ("2,5", "1 500")."""
    if " " in written or ("," in written and not _THOUSANDS.fullmatch(written)):
        return None
    if "/" in written:
        top, bottom = written.split("/")
        return int(top) / int(bottom) if int(bottom) else None
    return float(written.replace(",", ""))


def _why_ambiguous(written: str) -> str:
    if " " in written:
        return f"'{written}': thousands, or two numbers?"
    return f"'{written}': a decimal comma, or a list?"


def find_quantities(text: str) -> list[Quantity]:
    """Every number with a unit in the (lower-cased, `with_digits`) text, in order, offsets into `text`."""
    found: list[tuple[Quantity, float, bool]] = []  # each with its last part's factor and whether parts may join it
    position = 0
    while match := _QUANTITY.search(text, position):
        word, start, end = match["unit"], match.start(), match.end()
        dimension, factor = unit(word)
        minutes = _MINUTES_AFTER_HOURS.match(text, end) if factor == 3600.0 and not match["low"] else None
        seconds = _SECONDS_AFTER_MINUTES.match(text, end) if factor == 60.0 and not match["low"] else None
        if seconds and not _QUANTITY.match(text, seconds.start(1)):  # "1 minute 40"; "1 minute 40 s" joins below
            minutes = seconds
        if minutes and word == "h" and _CLOCK_CUE_BEFORE.search(text, 0, start):  # "by 14h30": a clock time
            position = minutes.end()
            continue
        position = end = minutes.end() if minutes else end
        written = [n for n in (match["low"], match["number"]) if n]
        numbers = [x for n in written if (x := _number(n)) is not None]
        if len(numbers) < len(written):
            why = next(_why_ambiguous(n) for n in written if _number(n) is None)
            quantity = Quantity(text=text[start:end], dimension=dimension, value=math.nan, start=start, end=end)
            found.append((quantity.model_copy(update={"ambiguous": why}), factor, False))
            continue
        number = min(numbers) if dimension == "duration" else max(numbers)  # "10-15 minutes": the stricter end
        if minutes:
            number += int(minutes[1] or minutes[2]) / 60
        value = round(number * factor, 9)
        if found and not match["low"] and _joins(found[-1], dimension, factor, text[found[-1][0].end : start]):
            first = found.pop()[0]
            start, value = first.start, round(first.value + value, 9)
        quantity = Quantity(text=text[start:end], dimension=dimension, value=value, start=start, end=end)
        found.append((quantity, factor, not match["low"] and not minutes))
    return [quantity for quantity, _, _ in found]


def _joins(previous: tuple[Quantity, float, bool], dimension: Dimension, factor: float, gap: str) -> bool:
    """A quantity continues the one before it ("1 hr" + "30 min"): the same dimension in a smaller unit, no more than
    a space or "and" apart."""
    quantity, last_factor, open_ = previous
    return (
        open_
        and dimension == quantity.dimension  # "1 minute 40 kg" is a duration and a mass
        and dimension in ("duration", "mass")
        and factor < last_factor
        and not quantity.ambiguous
        and _PARTS_GAP.fullmatch(gap) is not None
    )


def read_quantities(text: str) -> list[Quantity]:
    """Every number with a unit the (lower-cased) request states, in order: numbers in words in digits first
    (`with_digits`); `start` / `end` point into `text` as given, so `text[q.start:q.end]` is the request's own words
    ("fifteen minutes"), while `q.text` is the digits form ("15 minutes")."""
    digits = with_digits(text)
    quantities = find_quantities(digits)
    if digits == text or not quantities:
        return quantities
    opcodes = difflib.SequenceMatcher(None, text, digits, autojunk=False).get_opcodes()
    return [q.model_copy(update=dict(zip(("start", "end"), _span_in(opcodes, q.start, q.end)))) for q in quantities]


def _span_in(opcodes: list[tuple[str, int, int, int, int]], start: int, end: int) -> tuple[int, int]:
    """The span of the original text that [start, end) of the rewritten one comes from: a rewritten piece ("fifteen"
    -> "15") maps to the whole piece it replaced."""
    first = next(op for op in opcodes if op[3] <= start < op[4])
    last = next(op for op in opcodes if op[3] <= end - 1 < op[4])
    begin = first[1] + (start - first[3]) if first[0] == "equal" else first[1]
    finish = last[1] + (end - last[3]) if last[0] == "equal" else last[2]
    # words dropped right after it are its own ("a kilo and a half" -> "1.5 kilo", "两公斤半" -> "2.5公斤")
    dropped = next((op for op in opcodes if op[0] == "delete" and op[3] == end and op[1] == finish), None)
    return begin, dropped[2] if dropped else finish


# --- the readers --------------------------------------------------------------------------------------------------

# A number and the word after it, as the readers below match a length: find_quantities then reads it, and the reader
# keeps it only where it is a length ("5 m/s" and "10 minutes" are not).
_UNIT_WORD = r"(?:[a-z]+(?:/[a-z]+)?|米|公里|千米|公尺|英尺|英里)(?![a-z])"
_LENGTH = rf"({_NOT_AFTER}(?:{_NUMBER})\s*-?\s*{_UNIT_WORD})"


_NOT_DISTANCE = r"(?!\s*(?:of\s+)?(?:separation|clearance|apart|spacing|from|away|distance|between|间隔|间距|距离))"
# after a limit said behind its number: an altitude word or the end of the phrase ("at 55 m max.", "40 m minimum
# altitude"); "15 m minimum gap to other drones", "a 20 m minimum margin to buildings" are no altitudes
_ALTITUDE_LIMIT_ENDS = (
    r"(?=\s*(?:(?:altitude|height|agl|aloft|above (?:the )?ground(?: level)?|up|high|in the air)\b|[,.;!?)，。；！？）]|$|"
    r"(?:and|but|then|please|when|while|throughout|en route|all the way|the whole way|(?:to|from|over|via) the)\b))"
)


_SEPARATION_PATTERNS = (
    re.compile(_LENGTH + r"\s*(?:of\s+)?(?:separation|clearance|spacing|apart|buffer)"),
    re.compile(r"(?:separation|clearance|spacing)\s*(?:of|:)?\s*(?:at least\s*)?" + _LENGTH),
    re.compile(r"at least\s*" + _LENGTH + r"\s*(?:away\s*)?from"),
    re.compile(r"(?:间隔|间距|安全距离)\D{0,6}?" + _LENGTH),
    re.compile(_LENGTH + r"\s*的?(?:间隔|间距|安全距离)"),
)


# "between 40 and 100 m", "200 to 400 ft", "1,000-1,500 ft": the first number takes the second's unit if it has none.
_ALTITUDE_RANGE_PATTERN = re.compile(
    r"(?:altitude|height|fly|flying|cruise|stay|level|between|\bat\b|高度|飞行高度)[^.;\d]{0,25}?"
    rf"{_NOT_AFTER}({_NUMBER})\s*({_UNIT_WORD})?\s*(?:-|to|and|~|到|至|和)\s*({_NUMBER})\s*-?\s*({_UNIT_WORD})"
)


# "no lower than" is a floor and "不低于" is not "低于": the negated forms come first, and the bare ones may not
# follow a negation.
_ALTITUDE_MIN_PATTERN = re.compile(
    r"(?:above|over|at least|no lower than|not lower than|not below|(?<!no )(?<!not )higher than|"
    r"min(?:imum)? altitude(?: of)?|\bmin(?:imum)?\.?(?= ?\d)|floor of|不低于|(?<!不)高于|至少|最低)\s*"
    + _LENGTH
    + _NOT_DISTANCE
)


_ALTITUDE_MAX_PATTERN = re.compile(
    r"(?:below|under|at most|no higher than|not higher than|not above|(?<!no )(?<!not )lower than|"
    r"max(?:imum)? altitude(?: of)?|\bmax(?:imum)?\.?(?= ?\d)|ceiling of|不高于|(?<!不)低于|不超过|最高|限高)\s*"
    + _LENGTH
    + _NOT_DISTANCE
)


# A negation turns a comparison round ("don't climb above 90 m" is a ceiling, "别低于50米" a floor), and a limit can
# follow its number ("60 m or higher", "90米以下"): these are read, and blanked, before the bare forms above.
_NEGATION = r"(?:don't|do not|never|must not|mustn't|should not|shouldn't|not|别|不要|不能|不得|不可|勿)"
_NEGATED_OR_TRAILING_LIMITS = (
    (
        "altitude_max_m",
        re.compile(
            _NEGATION
            + r"\s*(?:[a-z]+\s+){0,2}?(?:飞|爬升|升)?(?:above|over|higher than|exceed|高于|超过)\s*"
            + _LENGTH
            + _NOT_DISTANCE
        ),
    ),
    (
        "altitude_min_m",
        re.compile(
            _NEGATION + r"\s*(?:[a-z]+\s+){0,2}?(?:飞|降)?(?:below|under|lower than|低于)\s*" + _LENGTH + _NOT_DISTANCE
        ),
    ),
    ("altitude_min_m", re.compile(_LENGTH + r"\s*(?:or (?:higher|more|above)|and (?:above|up)|以上)(?!\s*\d)")),
    ("altitude_max_m", re.compile(_LENGTH + r"\s*(?:or (?:lower|less|below)|and below|以下)(?!\s*\d)")),
    # "at 55 m max", "100 ft maximum", "40 m minimum altitude": a limit said after its number
    ("altitude_min_m", re.compile(_LENGTH + r"\s*(?:min(?:imum)?|at (?:the )?least)\b" + _ALTITUDE_LIMIT_ENDS)),
    ("altitude_max_m", re.compile(_LENGTH + r"\s*(?:max(?:imum)?|at (?:the )?most|tops)\b" + _ALTITUDE_LIMIT_ENDS)),
)


# "keep at least 30% battery (on arrival)", "land with 25% charge left", "25% battery reserve", "reserve: 30%",
# "到达时至少保留30%电量": the share to land with. A share of battery read where the request only reports one is a
# stricter demand, never a weaker one.
_RESERVE_PATTERN = re.compile(
    r"(\d+(?:\.\d+)?)\s*(?:%|percent|per cent)\s*(?:of\s+(?:the\s+|its\s+)?|in\s+)?(?:battery|charge|reserve)"
    r"|(?:battery |charge )?reserve\s*(?:of|:)?\s*(\d+(?:\.\d+)?)\s*(?:%|percent|per cent)"
    r"|(?:保留|剩余|留有|不低于|至少|不少于)\s*(\d+(?:\.\d+)?)\s*%\s*(?:的)?电量"
    r"|电量[^,。;,;\d]{0,4}?(?:不低于|不少于|不小于|至少|保留)\s*(\d+(?:\.\d+)?)\s*%"
    # "don't let the battery drop under 40%"
    r"|(?:battery|charge)\s+(?:\w+\s+)?(?:drops?|falls?|goes|go|gets?|dips?|sinks?)\s+(?:under|below|lower than)\s+"
    r"(\d+(?:\.\d+)?)\s*(?:%|percent|per cent)"
)
# "return with no less than 0.7 charge", "at least 0.3 of the battery": the share as a ratio
_RESERVE_RATIO = re.compile(
    r"(?:no less than|not less than|at least|minimum of|min\.?)\s+(0?\.\d+)\s+(?:of\s+(?:the\s+|its\s+)?)?(?:charge|battery)"
)
# "at 400 metres", "flying at 350 m", "at an altitude of 90 m", "在150米高度", "at 250 ft": one altitude to cruise at.
_CRUISE_PATTERN = re.compile(
    r"(?:\bat|\bcruis\w*|altitude(?: of)?|height(?: of)?|在|高度(?:为|是)?)\s*(?:an? (?:altitude|height) of\s*)?"
    + _LENGTH
    + _NOT_DISTANCE
    + r"|(?:按|以|用|在)?\s*"
    + _LENGTH
    + r"\s*的?\s*(?:高度|高空|飞行高度)"
)


def _first(text: str, dimension: Dimension) -> float | None:
    """The first quantity of this dimension with a value (over 0) the (`with_digits`) text states."""
    return next((q.value for q in find_quantities(text) if q.dimension == dimension and q.value > 0), None)


def parse_payload(text: str) -> float | None:
    """The cargo's mass in kg, the first one the (`with_digits`) request states ("3 lb", "800 g", "1,500 grams"), of
    all its items where it is one item's ("four bags of 3 kg each": 12 kg; `read_load`)."""
    load = read_load(text)
    if load is not None and not load.each_or_all:
        return load.total_kg if load.total_kg is not None else load.item.value
    return _first(text, "mass")


class Load(BaseModel):
    """The cargo's first mass, read as one item's where the words count items ("4 bags of 3 kg each")."""

    item: Quantity = Field(description="the mass as written")
    count: int | None = Field(description="how many items of that mass (None: items, but not how many)")
    text: str = Field(description="the words that say it, digits form")
    each_or_all: bool = Field(
        default=False,
        description="a count and a mass, but not whether the mass is each item's ('2 bags weighing 4 kg')",
    )

    @property
    def total_kg(self) -> float | None:
        return None if self.count is None else self.count * self.item.value


_ITEM_NOUN = (
    r"(?:sand)?bags?|box(?:es)?|crates?|packages?|parcels?|sacks?|packs?|kits?|cases?|cans?|bottles?|containers?|"
    r"cartons?|drums?|barrels?|jerry ?cans?|pallets?|units?|pieces?|items?|rolls?|coils?|bundles?|tubs?|loads?"
)
# Words that may stand between a count and its items ("4 sand bags", "three first-aid kits"): a closed list, so that a
# count of something else ("5 min drop bags", "2 drones with bags", "a 40 cm box") is never taken for the items'.
_ITEM_MODIFIER = (
    r"(?:sand|medical|first-aid|first aid|aid|relief|supply|food|water|tool|spare|small|large|big|heavy|light|"
    r"sealed|plastic|paper|cardboard|ration|emergency|blood|battery|rope|cement|gravel|grain|feed|seed|bottled|"
    r"medicine|medical|drug|vaccine|spare-part|tool)"
)
_ITEM = rf"(?:{_ITEM_MODIFIER}[ -]){{0,2}}(?:{_ITEM_NOUN})"
_ITEMS_PLURAL = r"(?:(?:sand)?bags|boxes|crates|packages|parcels|sacks|packs|kits|cases|cans|bottles|containers|" + (
    r"cartons|drums|barrels|jerry ?cans|pallets|units|pieces|items|rolls|coils|bundles|tubs|loads)"
)
_EN_COUNTS = {
    **{w: i for i, w in enumerate("one two three four five six seven eight nine ten eleven twelve".split(), 1)},
    "a couple of": 2,
    "a pair of": 2,
    "a dozen": 12,
    "both": 2,
}
# a whole count over 0, never part of "1,000" or "1.5"
_COUNT = (
    r"(?P<count>(?<![\d.,])[1-9]\d{0,3}(?![.,]?\d)|" + "|".join(sorted(_EN_COUNTS, key=len, reverse=True)) + r"|两|俩)"
)
_ABOUT = r"(?:about |around |roughly |approximately |some |约|大约)?"
_EACH = r"\s*(?:each|apiece|a piece|per (?:bag|box|crate|item|piece|unit|pack|kit|sack|case))\b"
_IN_ALL = re.compile(r"\s*(?:in (?:all|total)|total|altogether|combined|all told|together|总共|一共|合计)")
_CN_CLASSIFIER = r"[袋箱包个件桶份盒瓶卷捆筐]"
# Before the mass: "4 bags of ", "3 boxes, ", "4 crates weighing ", "4 x ", "4袋沙袋，每袋", "两箱工具各", "3个".
# Before the mass, its items counted: "4 bags of ", "4 x ", "4袋沙袋，每袋", "两箱工具各" (one item's mass, always)
_COUNTED_OF = re.compile(rf"\b{_COUNT} {_ITEM} (?:each )?of\s+{_ABOUT}$")
_COUNTED_TIMES = re.compile(rf"\b{_COUNT}\s*(?:x|×|\*|times)\s*$")
_COUNTED_CN = re.compile(
    rf"{_COUNT}\s*{_CN_CLASSIFIER}(?:(?!地点|地方|站点|现场|位置|无人机|架)[^，。；,;\d]){{0,8}}?[，,]?\s*"
    rf"(?:每\s*{_CN_CLASSIFIER}|各|单{_CN_CLASSIFIER})(?:重|约|都是|为)?\s*$"
)
# "3 boxes, 2 kg each", "3 bags of sand, 2 kg each", "3 bags (2 kg each)": one item's only where "each" says so
_COUNTED_APART = re.compile(rf"\b{_COUNT} {_ITEM}(?: of [a-z]+(?: [a-z]+)?)?\s*[,(]\s*(?P<each>each\s+)?{_ABOUT}$")
# "4 crates weighing 2 kg each"; without "each", each or in all is asked
_COUNTED_WEIGHING = re.compile(rf"\b{_COUNT} {_ITEM} (?P<each>each )?(?:weighing|at)\s+{_ABOUT}$")
_COUNT_JUST_BEFORE = re.compile(rf"(?:(?<![\w.])|(?<=[\u4e00-\u9fff])){_COUNT}(?:\s+|\s*{_CN_CLASSIFIER}\s*)$")
_ITEMS_AFTER = re.compile(rf"\s*-?\s*(?:{_ITEM_MODIFIER}[ -]){{0,2}}{_ITEMS_PLURAL}\b|的")
# "每袋3公斤，共3袋": the count after the mass
_COUNT_AFTER = re.compile(rf"\s*[，,]?\s*(?:共|一共|总共|总计)\s*{_COUNT}\s*{_CN_CLASSIFIER}")
# One item's mass, but not how many items: "sandbags of 4 kg each", "3 kg bags", "每袋3公斤".
_UNCOUNTED_BEFORE = re.compile(
    rf"\b(?<!a ){_ITEMS_PLURAL} (?:each )?(?:of|weighing|at)\s+{_ABOUT}$|每\s*{_CN_CLASSIFIER}(?:重|约)?\s*$"
)
_UNCOUNTED_AFTER = re.compile(rf"\s*-?\s*{_ITEMS_PLURAL}\b")


def _count(written: str) -> int:
    return int(written) if written.isdigit() else _EN_COUNTS.get(written) or 2  # 两, 俩


def read_load(text: str) -> Load | None:
    """The first mass in the (`with_digits`) text, where the words make it one item's: how many items ("4 bags of 3
    kg each", "three boxes, 2 kg each", "two 3-kg bags", "4 x 3 kg", "4袋沙袋，每袋3公斤", "两箱各2公斤", "3个2公斤的
    急救包"), or that the count is not said ("sandbags of 4 kg each", "每袋3公斤"). None where the mass is the whole
    load ("6 kg in two bags", "2 kits, 3 kg in total") or no mass is stated."""
    mass = next((q for q in find_quantities(text) if q.dimension == "mass" and q.value > 0), None)
    if mass is None or _IN_ALL.match(text, mass.end):
        return None
    before = text[max(0, mass.start - 60) : mass.start]
    each_after = bool(re.match(_EACH, text[mass.end :]))
    for pattern in (_COUNTED_OF, _COUNTED_TIMES, _COUNTED_CN, _COUNTED_APART, _COUNTED_WEIGHING):
        if not (m := pattern.search(before)):
            continue
        start = mass.start - len(before) + m.start()
        each = pattern in (_COUNTED_OF, _COUNTED_TIMES, _COUNTED_CN) or bool(m["each"]) or each_after
        if pattern is _COUNTED_APART and not each:
            continue  # "3 boxes, 2 kg", "3 bags of sand, 2 kg": the whole load
        return Load(item=mass, count=_count(m["count"]), text=text[start : mass.end], each_or_all=not each)
    if cn := _cn_counted(text, mass):
        return cn
    if (m := _COUNT_JUST_BEFORE.search(before)) and (after := _ITEMS_AFTER.match(text, mass.end)):
        start = mass.start - len(before) + m.start()
        return Load(item=mass, count=_count(m["count"]), text=text[start : after.end()])
    items_before = re.search(_ITEMS_PLURAL, before) and not re.search(r"\b(?:drones?|uavs?|aircraft|quads?)\b", before)
    if _UNCOUNTED_BEFORE.search(before) or _UNCOUNTED_AFTER.match(text, mass.end) or (each_after and items_before):
        if m := _COUNT_AFTER.match(text, mass.end):  # "每袋3公斤，共3袋"
            return Load(item=mass, count=_count(m["count"]), text=text[mass.start : m.end()])
        return Load(item=mass, count=None, text=mass.text)  # "bags of 2 kg each", "3 bags of sand ... 2 kg each"
    return None


# "从沙袋仓库运3袋沙袋到内涝点，每袋3公斤", "运2公斤一袋的沙袋3袋": one item's mass (每袋 before it, 一袋 after it) and a
# count of the same items elsewhere in the clause
_CN_EACH_BEFORE = re.compile(rf"每\s*(?P<cls>{_CN_CLASSIFIER})(?:重|约)?\s*$")
_CN_EACH_AFTER = re.compile(rf"\s*(?:一|1|每)\s*(?P<cls>{_CN_CLASSIFIER})")
_CLAUSE_ENDS = "。；;!！?？"


def _cn_counted(text: str, mass: Quantity) -> Load | None:
    after = _CN_EACH_AFTER.match(text, mass.end)
    marker = _CN_EACH_BEFORE.search(text[: mass.start]) or after
    if marker is None:
        return None
    start = max(text.rfind(c, 0, mass.start) for c in _CLAUSE_ENDS) + 1
    end = min((i for c in _CLAUSE_ENDS if (i := text.find(c, mass.end)) >= 0), default=len(text))
    pattern = rf"(?<![每\d.,])(?P<count>[1-9]\d{{0,3}}(?![.,]?\d)|两|俩)\s*{marker['cls']}"
    # a count of those items in the clause, not the "一袋" that says the mass is one item's
    found = [m for m in re.finditer(pattern, text[:end]) if m.start() >= start]
    counts = [m for m in found if not (after and after.start() <= m.start() < after.end())]
    if len(counts) != 1:
        return None
    return Load(item=mass, count=_count(counts[0]["count"]), text=text[start:end].strip())


def parse_reserve(text: str) -> float | None:
    """The battery share the (lower-cased) request asks to keep on arrival, as a ratio."""
    if not (m := _RESERVE_PATTERN.search(text)):
        ratio_said = _RESERVE_RATIO.search(text)
        return float(ratio_said[1]) if ratio_said and 0 < float(ratio_said[1]) < 1 else None
    ratio = float(next(g for g in m.groups() if g is not None)) / 100
    return ratio if 0 < ratio < 1 else None


# A duration that times something else than the arrival: "it doesn't kick in for another 10 minutes", "hover
# for 2 minutes", "wait 5 minutes", "悬停2分钟": no deadline (span accounting then quotes it back).
_NOT_A_DEADLINE = re.compile(
    r"(?:\bfor (?:another |the next |a further |about |around )?|\b(?:kick|start|open|close|activat|begin|end|expir|lift)"
    r"\w* (?:in|for|after)(?: another| about)? |\b(?:hover|wait|loiter|circle|stay|linger|hold)\w*(?: there)?(?: for)? |"
    r"\bevery |悬停|等待?|盘旋|停留)\s*$"
)


# A duration that says when to leave, or the earliest time to arrive, not the latest: "take off in 10 minutes", "not
# until 3 minutes from now", "arrive no earlier than 5 minutes", "between 3 and 4 minutes", "at T+4 min" ("by T+3
# min" is a deadline), "in 5 minutes, not before", "ETA 4 minutes exactly", "10分钟后起飞", "不要早于5分钟到达".
# No plan here leaves later or waits to arrive: the quantity stays unaccounted, and the request is asked about.
_START_OR_EARLIEST_BEFORE = re.compile(
    r"(?:\b(?:take[- ]?off|takes off|taking off|launch(?:es|ed|ing)?|leav(?:e|es|ing)|depart(?:s|ing)?|"
    r"set(?:s|ting)? off|lift(?:s|ing)? off|head(?:s|ing)? out|fly(?:ing)? out|go(?:es|ing)?|dispatch(?:ed|ing)?|"
    r"wait(?:s|ing)?)\s+"
    r"(?:in|after)\s+(?:about |around |another |the next )?|\b(?:not until|not before|no earlier than|no sooner than|"
    r"not earlier than|not sooner than|at the earliest)\s+(?:about |around )?|\bbetween\s+[\d.]+\s*(?:and|to|-)\s*|"
    r"\bat\s+t\s*\+\s*|(?:不要|不能|不得|别|不)?早于\s*|(?<![不得要能])晚于\s*)$"
)
_AT_THE_LATEST_AFTER = re.compile(r"\s*(?:from now\s*)?,?\s*(?:at the latest|at most|max(?:imum)?|tops)\b")
_START_OR_EARLIEST_AFTER = re.compile(
    r"\s*(?:from now\s*)?(?:,?\s*(?:but\s+|and\s+)?not (?:before|earlier|sooner)\b|(?:exactly|sharp|on the dot|at the "
    r"earliest)\b|(?:have|has) passed\b|后(?!\s*(?:之内|以内|内))|之后|以后)"
)


def is_deadline(quantity: Quantity, text: str) -> bool:
    """A duration the (`with_digits`) text states as the time to arrive in, not one that times something else or
    says when to leave or the earliest time to arrive."""
    before = text[max(0, quantity.start - 30) : quantity.start]
    latest = _AT_THE_LATEST_AFTER.match(text, quantity.end)  # "at T+5 min at the latest"
    return (
        quantity.dimension == "duration"
        and not _NOT_A_DEADLINE.search(before)
        and (bool(latest) or not _START_OR_EARLIEST_BEFORE.search(before))
        and not _START_OR_EARLIEST_AFTER.match(text, quantity.end)
    )


def parse_deadline(text: str) -> float | None:
    """The first duration in the (`with_digits`) request that is a time to arrive in, in seconds ('within 10
    minutes', '600 s', '10分钟内', '0.5小时', '1 hr 30 min'): the same durations span accounting finds."""
    return next((q.value for q in find_quantities(text) if is_deadline(q, text) and q.value > 0), None)


def _length(written: str) -> float | None:
    """A length in metres, as find_quantities reads it; None where it is no length or its number is ambiguous."""
    found = find_quantities(written)
    return found[0].value if found and found[0].dimension == "length" and math.isfinite(found[0].value) else None


def _first_length(patterns: tuple[re.Pattern[str], ...], text: str) -> tuple[float | None, str]:
    """First match's length and the text with that match blanked (so altitude parsing does not re-read it)."""
    for pattern in patterns:
        for m in pattern.finditer(text):
            written = next((g for g in m.groups() if g is not None), None)  # the alternative that matched
            if written is not None and (value := _length(written)) is not None:
                return value, text[: m.start()] + " " * (m.end() - m.start()) + text[m.end() :]
    return None, text


def _range(text: str) -> tuple[float, float] | None:
    for m in _ALTITUDE_RANGE_PATTERN.finditer(text):
        low_number, low_unit, high_number, high_unit = m.groups()
        low, high = _length(f"{low_number} {low_unit or high_unit}"), _length(f"{high_number} {high_unit}")
        if low is not None and high is not None:
            return min(low, high), max(low, high)
    return None


def stated_band_and_separation(text: str) -> dict[str, float]:
    """Separation and altitude demands as written (in metres, from m, km or ft), a contradictory pair included; a
    single altitude to fly at ("at 60 m") only where no band is stated."""
    separation, text = _first_length(_SEPARATION_PATTERNS, text)
    band: dict[str, float] = {}
    if separation is not None:
        band["min_separation_m"] = separation
    if (low_high := _range(text)) is not None:
        band.update(altitude_min_m=low_high[0], altitude_max_m=low_high[1])
        return band
    for field, pattern in _NEGATED_OR_TRAILING_LIMITS:
        value, text = _first_length((pattern,), text)
        if value is not None:
            band.setdefault(field, value)
    if "altitude_min_m" not in band and (value := _first_length((_ALTITUDE_MIN_PATTERN,), text)[0]) is not None:
        band["altitude_min_m"] = value
    if "altitude_max_m" not in band and (value := _first_length((_ALTITUDE_MAX_PATTERN,), text)[0]) is not None:
        band["altitude_max_m"] = value
    if not band.keys() & {"altitude_min_m", "altitude_max_m"}:
        if (value := _first_length((_CRUISE_PATTERN,), text)[0]) is not None:
            band["cruise_altitude_m"] = value
    return band


def parse_altitude_and_separation(text: str, defaults: OperationConstraints) -> dict[str, float]:
    band = stated_band_and_separation(text)
    if (cruise := band.pop("cruise_altitude_m", None)) is not None:
        band.update(
            altitude_min_m=cruise - STATED_ALTITUDE_TOLERANCE_M, altitude_max_m=cruise + STATED_ALTITUDE_TOLERANCE_M
        )
    low = band.get("altitude_min_m", defaults.altitude_min_m)
    high = band.get("altitude_max_m", defaults.altitude_max_m)
    if low >= high:  # an IR must have a valid band; the fidelity gate still holds the plan to the stated one
        band.pop("altitude_min_m", None)
        band.pop("altitude_max_m", None)
    return band


# --- numbers in words ---------------------------------------------------------------------------------------------

_CJK = re.compile(r"[\u4e00-\u9fff]")
_EN_UNIT = (
    r"(?:kilo(?:gram(?:me)?)?s?|kgs?|gram(?:me)?s?|pounds?|lbs?|ounces?|hours?|hrs?|minutes?|mins?|seconds?|secs?|"
    r"(?:kilo)?met(?:re|er)s?|km|feet|ft|miles?)\b"
)
# alpha2digit leaves a lone "one" / "two" / "a" alone ("one of the drones"); before a unit it is a number ("a second
# drone" is no second).
_ONE_BEFORE_UNIT = re.compile(r"\b(?:one|an?(?!\s+sec))\s+(?=(?:and a half\s+)?" + _EN_UNIT + ")")
_TWO_BEFORE_UNIT = re.compile(r"\btwo(?:\s+|\s*-\s*)(?=(?:and a half\s+)?" + _EN_UNIT + ")")
_HALF_BEFORE_UNIT = re.compile(r"(?<!and a )\bhalf\s+(?:an?\s+)?(?=" + _EN_UNIT + ")")
_QUARTERS_BEFORE_UNIT = re.compile(r"\b(?:(a|one)|three) quarters? of an?\s+(?=" + _EN_UNIT + ")")
# "2 and a half kilos", "a kilo and a half" (by then "1 kilo and a half"), "7 minutes and a half".
_AND_A_HALF = re.compile(r"\b(\d+)\s+and a half\s+(" + _EN_UNIT + r")|\b(\d+)\s*(" + _EN_UNIT + r")\s+and a half\b")

# Durations people say as fractions, which a digit-by-digit reading gets wrong ("a quarter of an hour" is not an hour).
_SPOKEN_DURATIONS = (
    (re.compile(r"\b(?:a|one) quarter of an hour\b|\bquarter[- ]hour\b"), "15 minutes"),
    (re.compile(r"\bthree quarters of an hour\b"), "45 minutes"),
    (re.compile(r"\ban hour and a half\b|\b(?:one|1) and a half hours?\b"), "90 minutes"),
)
# Shares said as fractions: "a quarter of its battery", "half the charge"; "三成电量" is 30 %.
_SPOKEN_SHARES = (
    (re.compile(r"\b(?:a|one) quarter of (?:its |the )?(?=battery|charge)"), "25% "),
    (re.compile(r"\b(?:a|one) third of (?:its |the )?(?=battery|charge)"), "33% "),
    (re.compile(r"\bhalf (?:of )?(?:its |the )?(?=battery|charge)"), "50% "),
)
_CHINESE_TENTHS = re.compile(r"([1-9一二两三四五六七八九])\s*成(?=电|的电|余量|以上|$|[,，。;；])")
_CHINESE_DIGIT = {c: str(i) for i, c in enumerate("一二三四五六七八九", 1)} | {"两": "2"}
# cn2an reads "一个半小时" as "1个0.5小时"; a half after a unit ("两公斤半", "一分半钟") is half of that unit.
_CHINESE_HALVES = (
    (re.compile(r"(\d+)个0\.5(小时|钟头)"), lambda m: f"{int(m[1]) + 0.5:g}{m[2]}"),
    (re.compile(r"(\d+)分半钟"), lambda m: f"{int(m[1]) + 0.5:g}分钟"),
    (
        re.compile(r"(\d+)(?:个)?(小时|钟头|公斤|千克|斤|公里|千米|米|磅)半(?!径)"),  # "3公里半径" is a radius
        lambda m: f"{int(m[1]) + 0.5:g}{m[2]}",
    ),
)
# Radio style reads a number digit by digit ("six zero metres"): the digit words before a unit are one number. Only
# words: "three 2 kg kits" is three kits of 2 kg, never 32 kg.
_DIGIT_NAMES = {w: str(i) for i, w in enumerate("zero one two three four five six seven eight nine".split())}
_DIGIT_BY_DIGIT = re.compile(
    rf"\b((?:{'|'.join(_DIGIT_NAMES)})(?: (?:{'|'.join(_DIGIT_NAMES)}))+)"
    r"(?=\s*(?:m|metres?|meters?|km|ft|feet|s|seconds?|minutes?|mins?|%|percent|per cent)\b)"
)


def _and_a_half(m: re.Match[str]) -> str:
    number, word = (m[1], m[2]) if m[1] else (m[3], m[4])
    return f"{int(number) + 0.5:g} {word}"


# The words the quantity readers key on, typed with an error: a word of 5 letters or more with the same first letter
# within one edit (two from 8 letters; a swap of neighbours is one) of exactly one of them is read as it. Unit words
# only right after a number ("15 minuets"; "the grass" stays grass), the others anywhere.
_TYPO_UNIT_WORDS = (
    "minutes",
    "seconds",
    "hours",
    "metres",
    "meters",
    "kilos",
    "kilograms",
    "grams",
    "pounds",
    "percent",
)
_KEY_WORDS = ("battery", "reserve", "altitude", "separation", "clearance", "deadline")
_WORD_AFTER_NUMBER = re.compile(r"(?<=\d)(\s*)([a-z]{5,})\b")
_WORD = re.compile(r"\b[a-z]{5,}\b")


@functools.cache
def _closest(word: str, vocabulary: tuple[str, ...]) -> str:
    if word in vocabulary:
        return word
    close = [v for v in vocabulary if v[0] == word[0] and OSA.distance(word, v) <= (2 if len(v) >= 8 else 1)]
    return close[0] if len(close) == 1 else word


def _typos_fixed(text: str) -> str:
    text = _WORD_AFTER_NUMBER.sub(lambda m: m.group(1) + _closest(m.group(2), _TYPO_UNIT_WORDS + _KEY_WORDS), text)
    return _WORD.sub(lambda m: _closest(m.group(0), _KEY_WORDS), text)


def with_digits(text: str) -> str:
    """The (lower-cased) text with numbers written as words in digits ("fifteen minutes" -> "15 minutes", "half a
    kilo" -> "0.5 kilo", "two and a half kilos" -> "2.5 kilos", "二十分钟" -> "20分钟", "一个半小时" -> "1.5小时"):
    the form every quantity reader works on. The words quantities are read by, typed with an error ("batetry",
    "minuets"), are read as those words first (`_typos_fixed`)."""
    text = _typos_fixed(text)
    for pattern, spoken in (*_SPOKEN_DURATIONS, *_SPOKEN_SHARES):
        text = pattern.sub(spoken, text)
    text = _QUARTERS_BEFORE_UNIT.sub(lambda m: "0.25 " if m[1] else "0.75 ", text)
    text = _ONE_BEFORE_UNIT.sub("1 ", _HALF_BEFORE_UNIT.sub("0.5 ", text))
    text = _DIGIT_BY_DIGIT.sub(lambda m: "".join(_DIGIT_NAMES[w] for w in m.group(1).split()), text)
    text = alpha2digit(_TWO_BEFORE_UNIT.sub("2 ", text), "en")
    text = _AND_A_HALF.sub(_and_a_half, text)
    if not _CJK.search(text):
        return text
    import cn2an  # Chinese numerals only: its import (~0.3 s) is paid by Chinese text, not by every command

    try:
        with warnings.catch_warnings():  # cn2an warns on a numeral it leaves as written ("1.5千米"), then reads it
            warnings.simplefilter("ignore", UserWarning)
            text = cn2an.transform(text, "cn2an")
    except (ValueError, KeyError):  # a numeral cn2an cannot read stays as written (and is then not a quantity)
        return text
    for pattern, half in _CHINESE_HALVES:
        text = pattern.sub(half, text)
    return _CHINESE_TENTHS.sub(lambda m: f"{_CHINESE_DIGIT.get(m.group(1), m.group(1))}0%", text)


# --- clock times --------------------------------------------------------------------------------------------------

_EN_HOURS = {w: i for i, w in enumerate("one two three four five six seven eight nine ten eleven twelve".split(), 1)}
_ZH_NUMBER = r"\d{1,2}|[零〇一二两三四五六七八九十]{1,3}"
_AM_PM = r"(?P<{}>[ap])\.?m(?![a-z])\.?"
# minutes said in words before "past" / "to" ("ten past two", "a quarter to three"): the keys of _SPOKEN_MINUTES
SPOKEN_MINUTES = r"(?:a )?quarter|half|five|ten|twenty|twenty[- ]five"
# what follows a number that is no hour: a unit or a counted noun ("40 to 60 metres", "4 to 6 bottles")
_NOT_A_CLOCK_AFTER = (
    r"minutes?|mins?|hours?|hrs?|km|kg|kilo\w*|g\b|grams?|lbs?|pounds?|m\b|metres?|meters?|ft|feet|%|percent|"
    r"drones?|uavs?|quads?|[a-z]+s\b"
)
_CLOCK = re.compile(
    r"(?<![a-z0-9_.:/])(?:"
    # 14:30, 2:30 pm, 15：00 (not "1:30 h", a duration)
    rf"(?P<h>\d{{1,2}})[:：](?P<m>[0-5]\d)(?![\d:])(?:\s*{_AM_PM.format('ap')})?"
    r"(?!\s*(?:h|hrs?|hours?|min|mins|minutes?|小时|分钟)(?![a-z]))"
    # 2 pm, 2.30 p.m., three o'clock
    rf"|(?P<h2>\d{{1,2}}|{'|'.join(_EN_HOURS)})(?:[.:](?P<m2>[0-5]\d))?\s*(?:{_AM_PM.format('ap2')}|o'?clock\b)"
    r"|(?P<noon>noon|midday|midnight)\b"
    # by 14h30
    r"|(?<=by |at )(?P<h3>\d{1,2})h(?P<m3>[0-5]\d)\b"
    # ten past two, half past two, a quarter to three, twenty-five to four (spoken, twelve-hour)
    rf"|(?:(?P<spoken_m>{SPOKEN_MINUTES})(?: minutes?)? (?P<rel>past|after|to)"
    rf"|(?P<digits_m>\d{{1,2}})(?: minutes?)? (?:past|after)) "
    rf"(?P<h5>{'|'.join(_EN_HOURS)}|\d{{1,2}})\b(?![.,]?\d)(?!\s*(?:-|{_NOT_A_CLOCK_AFTER}))"
    # British "half two" (2:30), and "by three" said alone
    rf"|(?<=by |at )half (?P<h6>{'|'.join(_EN_HOURS)})\b(?!\s*(?:minutes?|mins?|hours?|an? ))"
    rf"|(?:(?<=by )|(?<=until )|(?<=before ))(?P<h7>{'|'.join(_EN_HOURS)})\b(?=\s*(?:[,.;!?)]|$|today|this|tonight|latest|at the latest))"
    # 24-hour "1430", "0900h", "1500 hrs", "ETA 1430" after a time cue or before hrs/h
    r"|(?<![\d.,])(?P<h8>[01]\d|2[0-3])(?P<m8>[0-5]\d)\s*(?:hrs|hours|h)\b"
    r"|(?:(?<=by )|(?<=at )|(?<=eta )|(?<=before )|(?<=until )|(?<=till ))(?P<h9>[01]\d|2[0-3])(?P<m9>[0-5]\d)(?![\d.,]|\s*(?:m\b|kg|km|ft|metres?|meters?))"
    # 下午3点半, 15点30分, 三点一刻, 凌晨2时
    r"|(?P<period>凌晨|清晨|早上|早晨|上午|中午|午后|下午|傍晚|晚上|夜里|夜间|今晚)?\s*"
    rf"(?P<h4>{_ZH_NUMBER})\s*(?:点钟?|时)(?![间候速])"
    rf"(?:\s*(?P<half>半)|\s*(?P<quarter>[一三])刻|\s*(?P<m4>{_ZH_NUMBER})\s*分?(?!钟))?"
    r")"
)
_BY_A_FACTOR = re.compile(
    r"\b(?:split|divid|shar|multipl|reduc|increas|cut|round|rais|lower|spread)\w*\b[^.;,]{0,15}$"
    r"|\b(?:\w+ed|flown|done|taken|driven|given|made|sent|seen|led|borne|shown)\s+by\s+$"  # "flown by two"
)
_SPOKEN_MINUTES = {"quarter": 15, "a quarter": 15, "half": 30, "five": 5, "ten": 10, "twenty": 20, "twenty five": 25}
_ZH_CUE_BEFORE = re.compile(r"(?:在|于|不晚于|最晚|最迟|截止|截至|到|从|自)\s*$")
_ZH_CUE_AFTER = re.compile(r"^\s*(?:之前|以前|前|为止|之后|以后|后|起|开始)")
_START_BEFORE = re.compile(
    r"(?:\bafter|\bfrom|\bnot before|\bno earlier than|\bstarting(?: at| from)?|\bnot until|从|自)\s*$"
)
_START_AFTER = re.compile(r"^\s*(?:之后|以后|后|起|开始|onwards\b|or later\b)")
_PM_PERIODS = ("午后", "下午", "傍晚", "晚上", "夜里", "夜间", "今晚")
_NIGHT_PERIODS = ("晚上", "夜里", "夜间", "今晚")
_DIRECTION = re.compile(r"\s*(?:方向|position|direction)")  # "3点钟方向", "your 3 o'clock position"
_EVENING = re.compile(r"\btonight\b|\bthis (?:afternoon|evening)\b|今晚")
_DAY_WORDS = ((re.compile(r"\btomorrow\b|明天|明早|明晚"), 1), (re.compile(r"\bday after tomorrow\b|后天"), 2))


class ClockTime(BaseModel):
    """A time of day the request states ("by 14:30", "before 2:30 pm", "下午3点前")."""

    text: str = Field(description="the request's words")
    start: int
    end: int
    hour: int = Field(description="0-24 on a 24-hour clock; 1-12 where twelve_hour")
    minute: int
    twelve_hour: bool = Field(description="no am / pm or 上午 / 下午 on an hour 1-12: the next such time is meant")
    day: int = Field(default=0, description="days after the clock origin's date ('tomorrow': 1)")
    deadline: bool = Field(description="a time to arrive by ('by', 'before', '前', or no cue); False: a start time")

    def seconds_after(self, clock_origin_utc: datetime | None) -> float | None:
        """Seconds from the world's t = 0 to this time; None where the world has no clock origin, or where the time
        is already past at t = 0 (a day the request does not name is not guessed).

        The request names no time zone: the time is read in the clock origin's own zone, which a world's
        `geo_reference.clock_origin_utc` gives as UTC (a naive origin is taken as UTC). A request written in local
        time somewhere else is then read off by that place's UTC offset."""
        if clock_origin_utc is None:
            return None
        origin = clock_origin_utc if clock_origin_utc.tzinfo else clock_origin_utc.replace(tzinfo=UTC)
        midnight = datetime.combine(origin.date(), time(), origin.tzinfo) + timedelta(days=self.day)
        hours = (self.hour % 12, self.hour % 12 + 12) if self.twelve_hour else (self.hour,)
        for hour in hours:
            at = midnight + timedelta(hours=hour, minutes=self.minute)
            if at > origin:
                return (at - origin).total_seconds()
        return None


def _zh_int(written: str) -> int:
    import cn2an

    return int(written) if written.isdigit() else int(cn2an.cn2an(written.replace("两", "二"), "smart"))


def _clock(m: re.Match[str], text: str) -> ClockTime | None:
    before, after = text[max(0, m.start() - 30) : m.start()], text[m.end() : m.end() + 12]
    twelve = False
    if m["h"] is not None:
        hour, minute = int(m["h"]), int(m["m"])
        if m["ap"]:
            hour = hour % 12 + (12 if m["ap"] == "p" else 0)
        else:
            twelve = 1 <= hour <= 12 and not m["h"].startswith("0")
    elif m["h2"] is not None:
        hour, minute = _EN_HOURS.get(m["h2"]) or int(m["h2"]), int(m["m2"] or 0)
        if m["ap2"]:
            hour = hour % 12 + (12 if m["ap2"] == "p" else 0)
        else:
            twelve = True
    elif m["noon"] is not None:
        hour, minute = (24 if m["noon"] == "midnight" else 12), 0
    elif m["h3"] is not None:
        hour, minute = int(m["h3"]), int(m["m3"])
    elif m["h5"] is not None:
        said = m["h5"]
        hour = _EN_HOURS.get(said) or int(said)
        offset = int(m["digits_m"]) if m["digits_m"] else _SPOKEN_MINUTES[m["spoken_m"].replace("-", " ")]
        minute = offset if m["rel"] != "to" else 60 - offset
        hour, twelve = (hour - 1 if m["rel"] == "to" else hour) % 12 or 12, True
    elif m["h6"] is not None:
        hour, minute, twelve = _EN_HOURS[m["h6"]], 30, True
    elif m["h7"] is not None:
        if _BY_A_FACTOR.search(before):  # "split it by three" is no time
            return None
        hour, minute, twelve = _EN_HOURS[m["h7"]], 0, True
    elif m["h8"] is not None or m["h9"] is not None:
        hour, minute = int(m["h8"] or m["h9"]), int(m["m8"] or m["m9"])
    else:
        period = m["period"]
        if not (period or _ZH_CUE_BEFORE.search(before) or _ZH_CUE_AFTER.match(after)):
            return None  # "三点五公里" is 3.5 km, "2点" a score: a clock time needs a period of day or a cue
        hour = _zh_int(m["h4"])
        minute = 30 if m["half"] else 15 * _zh_int(m["quarter"]) if m["quarter"] else _zh_int(m["m4"] or "0")
        if period in _PM_PERIODS or (period == "中午" and hour < 11):
            hour = 24 if hour == 12 and period in _NIGHT_PERIODS else hour + 12 if hour < 12 else hour
        elif period is None:
            twelve = 1 <= hour <= 12
    if hour > 24 or minute > 59 or _DIRECTION.match(after):
        return None
    window = text[max(0, m.start() - 30) : m.end() + 30]
    if twelve and _EVENING.search(window):
        hour, twelve = hour % 12 + 12, False
    day = max((days for pattern, days in _DAY_WORDS if pattern.search(window)), default=0)
    deadline = not (_START_BEFORE.search(before) or _START_AFTER.match(after))
    return ClockTime(
        text=m.group(0).strip(),
        start=m.start() + len(m.group(0)) - len(m.group(0).lstrip()),
        end=m.end(),
        hour=hour,
        minute=minute,
        twelve_hour=twelve,
        day=day,
        deadline=deadline,
    )


def find_clock_times(text: str) -> list[ClockTime]:
    """Every time of day the (lower-cased) request states, in order, offsets into `text`."""
    return [clock for m in _CLOCK.finditer(text) if (clock := _clock(m, text)) is not None]


def deadline_from_clock(text: str, clock_origin_utc: datetime | None) -> float | None:
    """The first time of day the (lower-cased) request asks to arrive by, in seconds after the world's t = 0
    (`geo_reference.clock_origin_utc`). None where the request states no such time, the world has no clock origin,
    or the time is past at t = 0; `find_clock_times` gives its words to quote back. The time is read in the clock
    origin's own zone (UTC): see `ClockTime.seconds_after`."""
    clock = next((c for c in find_clock_times(text) if c.deadline), None)
    return clock.seconds_after(clock_origin_utc) if clock is not None else None
