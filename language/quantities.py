"""Quantities a request states: durations (deadline), masses (payload), battery shares (reserve) and lengths
(altitude band, separation), in digits or in words, in English or Chinese."""

from __future__ import annotations

import re
from typing import Literal

import cn2an
from pydantic import BaseModel, Field
from text_to_num import alpha2digit

from ir.fidelity import STATED_ALTITUDE_TOLERANCE_M
from ir.model import OperationConstraints

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
    r"min(?:imum)? altitude(?: of)?|\bmin(?:imum)?\.?(?= ?\d)|floor of|不低于|(?<!不)高于|至少|最低)\s*(\d+(?:\.\d+)?)"
    + _M
    + _NOT_DISTANCE
)


_ALTITUDE_MAX_PATTERN = re.compile(
    r"(?:below|under|at most|no higher than|not higher than|not above|(?<!no )(?<!not )lower than|"
    r"max(?:imum)? altitude(?: of)?|\bmax(?:imum)?\.?(?= ?\d)|ceiling of|不高于|(?<!不)低于|不超过|最高|限高)\s*(\d+(?:\.\d+)?)"
    + _M
    + _NOT_DISTANCE
)


# A negation turns a comparison round ("don't climb above 90 m" is a ceiling, "别低于50米" a floor), and a limit can
# follow its number ("60 m or higher", "90米以下"): these are read, and blanked, before the bare forms above.
_NEGATION = r"(?:don't|do not|never|must not|mustn't|should not|shouldn't|not|别|不要|不能|不得|不可|勿)"
_NEGATED_OR_TRAILING_LIMITS = (
    (
        "altitude_max_m",
        re.compile(
            _NEGATION + r"\s*(?:[a-z]+\s+){0,2}?(?:飞|爬升|升)?(?:above|over|higher than|exceed|高于|超过)\s*"
            r"(\d+(?:\.\d+)?)" + _M + _NOT_DISTANCE
        ),
    ),
    (
        "altitude_min_m",
        re.compile(
            _NEGATION
            + r"\s*(?:[a-z]+\s+){0,2}?(?:飞|降)?(?:below|under|lower than|低于)\s*(\d+(?:\.\d+)?)"
            + _M
            + _NOT_DISTANCE
        ),
    ),
    (
        "altitude_min_m",
        re.compile(r"(\d+(?:\.\d+)?)" + _M + r"\s*(?:or (?:higher|more|above)|and (?:above|up)|以上)(?!\s*\d)"),
    ),
    ("altitude_max_m", re.compile(r"(\d+(?:\.\d+)?)" + _M + r"\s*(?:or (?:lower|less|below)|and below|以下)(?!\s*\d)")),
)


_PAYLOAD_PATTERN = re.compile(r"(\d+(?:\.\d+)?)\s*(?:kg|kilograms?|kilos?|公斤|千克)(?![a-z])")


# "keep at least 30% battery (on arrival)", "land with 25% charge left", "25% battery reserve", "reserve: 30%",
# "到达时至少保留30%电量": the share to land with. A share of battery read where the request only reports one is a
# stricter demand, never a weaker one.
_RESERVE_PATTERN = re.compile(
    r"(\d+(?:\.\d+)?)\s*(?:%|percent|per cent)\s*(?:of\s+(?:the\s+|its\s+)?|in\s+)?(?:battery|charge|reserve)"
    r"|(?:battery |charge )?reserve\s*(?:of|:)?\s*(\d+(?:\.\d+)?)\s*(?:%|percent|per cent)"
    r"|(?:保留|剩余|留有|不低于|至少|不少于)\s*(\d+(?:\.\d+)?)\s*%\s*(?:的)?电量"
    r"|电量[^,。;,;\d]{0,4}?(?:不低于|不少于|不小于|至少|保留)\s*(\d+(?:\.\d+)?)\s*%"
)
# "at 400 metres", "flying at 350 m", "at an altitude of 90 m", "在150米高度": one altitude to cruise at.
_CRUISE_PATTERN = re.compile(
    r"(?:\bat|\bcruis\w*|altitude(?: of)?|height(?: of)?|在|高度(?:为|是)?)\s*(?:an? (?:altitude|height) of\s*)?"
    r"(\d+(?:\.\d+)?)" + _M + _NOT_DISTANCE
)


def parse_payload(text: str) -> float | None:
    """The cargo's mass in kg, the first one the (lower-cased) request states."""
    return float(m.group(1)) if (m := _PAYLOAD_PATTERN.search(text)) else None


def parse_reserve(text: str) -> float | None:
    """The battery share the (lower-cased) request asks to keep on arrival, as a ratio."""
    if not (m := _RESERVE_PATTERN.search(text)):
        return None
    ratio = float(next(g for g in m.groups() if g is not None)) / 100
    return ratio if 0 < ratio < 1 else None


def parse_deadline(text: str) -> float | None:
    """The first duration in the (`with_digits`) request, in seconds ('within 10 minutes', '600 s', '10分钟内',
    '0.5小时'): the same durations span accounting finds."""
    durations = [q.value for q in find_quantities(text) if q.dimension == "duration" and q.value > 0]
    return durations[0] if durations else None


def _first_number(patterns: tuple[re.Pattern[str], ...], text: str) -> tuple[float | None, str]:
    """First match's number and the text with that match blanked (so altitude parsing does not re-read it)."""
    for pattern in patterns:
        m = pattern.search(text)
        if m:
            return float(m.group(1)), text[: m.start()] + " " * (m.end() - m.start()) + text[m.end() :]
    return None, text


def stated_band_and_separation(text: str) -> dict[str, float]:
    """Separation and altitude demands as written, a contradictory pair included; a single altitude to fly at
    ("at 60 m") only where no band is stated."""
    separation, text = _first_number(_SEPARATION_PATTERNS, text)
    band: dict[str, float] = {}
    if separation is not None:
        band["min_separation_m"] = separation
    range_match = _ALTITUDE_RANGE_PATTERN.search(text)
    if range_match:
        low, high = sorted((float(range_match.group(1)), float(range_match.group(2))))
        band.update(altitude_min_m=low, altitude_max_m=high)
    else:
        for field, pattern in _NEGATED_OR_TRAILING_LIMITS:
            value, text = _first_number((pattern,), text)
            if value is not None:
                band.setdefault(field, value)
        if "altitude_min_m" not in band and (m := _ALTITUDE_MIN_PATTERN.search(text)):
            band["altitude_min_m"] = float(m.group(1))
        if "altitude_max_m" not in band and (m := _ALTITUDE_MAX_PATTERN.search(text)):
            band["altitude_max_m"] = float(m.group(1))
        if not band.keys() & {"altitude_min_m", "altitude_max_m"} and (m := _CRUISE_PATTERN.search(text)):
            band["cruise_altitude_m"] = float(m.group(1))
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


_CJK = re.compile(r"[\u4e00-\u9fff]")
# alpha2digit leaves a lone "one" / "a" alone ("one of the drones"); before a unit it is a number.
_ONE_BEFORE_UNIT = re.compile(r"\b(?:one|an?)\s+(?=(?:kilo(?:gram)?|hour|minute|second|met(?:re|er))s?\b)")
_HALF_BEFORE_UNIT = re.compile(r"\bhalf\s+(?:an?\s+)?(?=(?:kilo(?:gram)?|hour|minute)s?\b)")


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
# Radio style reads a number digit by digit ("six zero metres"): the digits before a unit are one number.
_DIGIT_BY_DIGIT = re.compile(r"\b(\d(?: \d)+)(?=\s*(?:m|metres?|meters?|kg|s|seconds?|minutes?|mins?|%)\b)")


def with_digits(text: str) -> str:
    """The (lower-cased) text with numbers written as words in digits ("fifteen minutes" -> "15 minutes", "half a
    kilo" -> "0.5 kilo", "二十分钟" -> "20分钟"): the form every quantity reader works on."""
    for pattern, spoken in (*_SPOKEN_DURATIONS, *_SPOKEN_SHARES):
        text = pattern.sub(spoken, text)
    text = alpha2digit(_ONE_BEFORE_UNIT.sub("1 ", _HALF_BEFORE_UNIT.sub("0.5 ", text)), "en")
    text = _DIGIT_BY_DIGIT.sub(lambda m: m.group(1).replace(" ", ""), text)
    if not _CJK.search(text):
        return text
    try:
        text = cn2an.transform(text, "cn2an")
    except (ValueError, KeyError):  # a numeral cn2an cannot read stays as written (and is then not a quantity)
        return text
    return _CHINESE_TENTHS.sub(lambda m: f"{_CHINESE_DIGIT.get(m.group(1), m.group(1))}0%", text)


Dimension = Literal["duration", "mass", "length", "share", "speed"]
_UNITS: dict[str, tuple[Dimension, float]] = {
    **{u: ("duration", 3600.0) for u in ("h", "hr", "hrs", "hour", "hours", "小时")},
    **{u: ("duration", 60.0) for u in ("min", "mins", "minute", "minutes", "分钟", "分")},
    **{u: ("duration", 1.0) for u in ("s", "sec", "secs", "second", "seconds", "秒", "秒钟")},
    "刻钟": ("duration", 900.0),
    **{u: ("mass", 1.0) for u in ("kg", "kilo", "kilos", "kilogram", "kilograms", "公斤", "千克")},
    **{u: ("mass", 0.001) for u in ("g", "gram", "grams", "克")},
    **{u: ("length", 1.0) for u in ("m", "metre", "metres", "meter", "meters", "米")},
    **{u: ("length", 1000.0) for u in ("km", "kilometre", "kilometres", "kilometer", "kilometers", "公里", "千米")},
    **{u: ("length", 0.3048) for u in ("ft", "feet", "foot")},
    **{u: ("share", 0.01) for u in ("%", "percent", "per cent")},
    **{u: ("speed", 1.0) for u in ("m/s", "米/秒", "米每秒")},
    **{u: ("speed", 1 / 3.6) for u in ("km/h", "kph", "公里/小时", "公里每小时")},
}
# "2个小时" has a measure word before its unit; a bare 分 only counts before 内 ("十分" alone means "very").
_QUANTITY = re.compile(
    r"(?<![a-z0-9_.])(\d+(?:\.\d+)?)\s*-?\s*个?\s*("
    + "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True) if u != "分")
    + r"|分(?=之?内|以内))(?![a-z])"
)


class Quantity(BaseModel):
    """A number with a unit, as the request states it (digits form)."""

    text: str = Field(description="as written, numbers in digits")
    dimension: Dimension
    value: float = Field(description="in SI units (s, kg, m, m/s) or as a ratio for shares")


def find_quantities(text: str) -> list[Quantity]:
    """Every number with a unit in the (lower-cased, `with_digits`) text, in order."""
    return [
        Quantity(text=m.group(0).strip(), dimension=_UNITS[unit][0], value=float(m.group(1)) * _UNITS[unit][1])
        for m in _QUANTITY.finditer(text)
        if (unit := m.group(2)) in _UNITS
    ]
