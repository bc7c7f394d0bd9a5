"""Polarity: what a request names in order to want it, to exclude it, or to demand what a safety rule forbids.

A UAV, place or zone mentioned to leave it out ("anyone but uav_05", "don't route over the park") is no part of the
task; a sentence that demands a rule break ("cut across the restricted area, we're in a hurry", "ignore the buffer
around the school", "climb to 300 m") asks for a plan the agent never makes: the run must end in a question that
quotes it and names the rule, never in a different plan executed silently. A *permission* ("cut through restricted
airspace if that is faster", "you can skip the reserve this time") asks for nothing a safe plan does not give: the
task stands, and the decision says the permission was not used.

Each cue is read within its clause (a sentence or a comma-separated part of one), so a permission's "if" or "can"
does not excuse a demand in the next clause.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

from language.grounding import WAIVER, WAIVER_ZH, short_name
from tools.rules import RULE_TEXT
from tools.world import World

# A clause ends at a sentence or clause mark (ASCII or full-width: 。，；！？：), except a '.' or ',' before a digit
# ("2.5", "1,500", "No.2", ".5 kg" keep theirs); an id's digit before a full stop does not keep it ("don't fly over
# nfz_temp_1. don't bother keeping separation ..." is two clauses: the first's negation must not reach the second's
# demand). The full-width marks are escapes: written as characters they were once typed as their ASCII look-alikes.
_CLAUSE_END = re.compile(r"[.,](?!\d)|[;!?:\n\u3002\uff0c\uff1b\uff01\uff1f\uff1a]|\bbut\b|\band then\b|但是|不过")


# Modal cues that make a rule break an option, not a demand: said of the break ("you can skip the reserve", "cut
# through if that is faster", "fine to land with 5%"), not of something else ("fly through so we can save time",
# "ignore the zones if you want to be on time" are demands).
PERMISSION = re.compile(
    r"\bif (?:that's|that is|it's|it is|it|that|this) (?:\w+ )?(?:faster|quicker|shorter|needed|necessary|easier|helps|"
    r"saves|speeds)|\bif (?:needed|necessary|required|need be|you must|you have to|there is no other way|unavoidable)\b|"
    r"\b(?:you|we|the drone|it|one) (?:can|may|could|might)\b|\bfeel free\b|\b(?:it's|it is|that's|that is) (?:ok|okay|fine|allowed)\b|"
    r"\b(?:ok|okay|fine|allowed|permitted) (?:to|if)\b|\bwhere needed\b|\boptional\b|如果|可以|的话|允许|也行|也可以"
)
_PURPOSE_CLAUSE = re.compile(r"\bso (?:that )?(?:you|we|it|the drone|they|i) (?:can|could|may|might)\b")


_IGNORE = (
    r"(?:ignore|disregard|override|forget(?: about)?|never mind|skip|bypass|waive|turn off|switch off|disable|"
    r"(?:don't|do not|dont|no need to) (?:worry|bother|care|fuss|fret|stress)(?: about| with| over)?(?: keeping| the)?|"
    r"no need (?:for|to keep|to respect|to observe))"
)
_IGNORE_ZH = r"(?:不用管|不要管|别管|不管|忽略|无视|不用理会|不理会|跳过|关闭|取消|不用考虑|不考虑)"


_NFZ_WORDS = (
    r"(?:no[\s-]?fly(?:[\s-]+(?:zones?|areas?))?|nfzs?\b|restricted (?:airspace|areas?|zones?)|closed airspace|"
    r"the (?:temporary |temp |government |gov |police )?(?:closure|cordon)|(?:temporary|temp) (?:flight )?restrictions?\b)"
)
_NFZ_WORDS_ZH = r"(?:禁飞区|管制区|限飞区|禁区|管制空域|禁飞空域|限制空域|限飞空域)"


_CROSS = (
    r"(?:cut(?:s|ting)?|fl(?:y|ies|ying)|go(?:es|ing)?|head(?:s|ing)?|rout(?:e|es|ing)|shoot(?:s|ing)?|pass(?:es|ing)?|"
    r"go straight|fly straight|fly right|fly directly|go right|take (?:it|the drone))"
)
_THROUGH = r"(?:across|through|over|into|via|straight through|right through|directly through|straight across)"
_STRAIGHT = r"(?:straight|right|directly|direct|smack|(?:a |the )?short ?cut) (?:across|through|over|into)"
_CROSS_ZH = r"(?:直接)?(?:穿越|穿过|飞越|横穿|飞过|进入|穿|走)"


_BUFFER_WORDS = (
    r"(?:buffers?|separation|clearance|safety (?:distance|margin|gap)|spacing|standoff|keep[- ]out (?:distance|margin)|"
    r"distance (?:from|to) (?:the )?buildings?)"
)
_BUFFER_WORDS_ZH = r"(?:缓冲区?|安全距离|间隔|间距|安全间隔)"


_CEILING_WORDS = (
    r"(?:altitude (?:limit|cap|ceiling|restriction)s?|height (?:limit|cap|restriction)s?|ceiling|max(?:imum)? altitude)"
)
_CEILING_WORDS_ZH = r"(?:限高|高度限制|高度上限|飞行高度限制)"


_RESERVE_WORDS = r"(?:(?:battery |charge |power )?reserve|minimum (?:battery|charge)|battery (?:margin|buffer|minimum))"
_RESERVE_WORDS_ZH = r"(?:电量余量|电量预留|预留电量|余量|预留|备用电量|保留电量|最低电量)"


_CHECK_WORDS = (
    r"(?:(?:the |all |any )?(?:safety|flight|airspace|aviation|drone) (?:checks?|verification|rules?|regulations?|limits?|"
    r"restrictions?|margins?)|(?:the )?(?:safety )?(?:verification|verifier|validation)|all (?:the )?(?:rules|regulations))\b"
)
_CHECK_WORDS_ZH = r"(?:安全校验|安全检查|安全验证|安全规则|飞行规则|安全限制|所有规则)"


# "no need to avoid the school", "you don't have to go around nfz_temp_1", "不用绕开禁飞区": the keep-out a rule
# asks for, waived.
_NO_NEED = (
    rf"{WAIVER}\s+(?:avoid|go around|route around|detour around|fly around|keep (?:away|clear) (?:of|from)|"
    r"stay (?:away|clear|out) (?:of|from)|steer clear of|bother with|worry about|care about)"
)
_NO_NEED_ZH = rf"{WAIVER_ZH}(?:绕开?|绕行|绕过|避开|避让|躲开|管)"


# Up to two words that say which zone ("the government no-fly zone", "that big temporary nfz"), none of them a word
# that puts the zone elsewhere ("over the edge of the no-fly zone" crosses nothing).
_QUALIFIER = r"(?:(?!(?:of|to|near|by|beside|around|past|from|next|the|a|an|and|or|outside|along)\b)[a-z'\-]+\s+){0,2}?"


# Demands, by the rule each breaks. {zones} and {sensitive} stand for the world's own zone ids and names.
_DEMANDS: tuple[tuple[str, str], ...] = (
    (
        "R1",
        rf"\b{_CROSS}\b[^.;,]{{0,25}}?\b{_THROUGH}\s+(?:the\s+|that\s+|this\s+)?{_QUALIFIER}(?:{_NFZ_WORDS}|{{zones}})",
    ),
    ("R1", rf"\b{_IGNORE}\s+(?:the\s+|all\s+|any\s+)?{_QUALIFIER}(?:{_NFZ_WORDS}|{{zones}})"),
    ("R1", rf"\b{_STRAIGHT}\s+(?:the\s+|that\s+|this\s+|any\s+|all\s+)?{_QUALIFIER}(?:{_NFZ_WORDS}|{{zones}})"),
    ("R1", rf"\b{_NO_NEED}\s+(?:the\s+|any\s+|all\s+)?{_QUALIFIER}(?:{_NFZ_WORDS}|{{zones}})"),
    # "1 kg from A to B through the government compound": a crossing word right before a no-fly zone
    (
        "R1",
        rf"\b(?:through|across|into|via|over the top of)\s+(?:the\s+|that\s+)?{_QUALIFIER}(?:{_NFZ_WORDS}|{{zones}})",
    ),
    # "we have ATC clearance for the government compound, go direct": a clearance said is no rule changed
    (
        "R1",
        rf"\b(?:clearance|cleared|waiver|permission|authori[sz]ation|approval|permit)\b[^.;]{{0,25}}?\b(?:for|to enter|"
        rf"to cross|to fly (?:over|through|into))\s+(?:the\s+)?{_QUALIFIER}(?:{_NFZ_WORDS}|{{zones}})",
    ),
    ("R1", rf"{_NO_NEED_ZH}.{{0,4}}?(?:{_NFZ_WORDS_ZH}|{{zones}})|(?:{_NFZ_WORDS_ZH}|{{zones}}).{{0,6}}?{_NO_NEED_ZH}"),
    ("R1", rf"{_CROSS_ZH}.{{0,6}}?(?:{_NFZ_WORDS_ZH}|{{zones}})"),
    ("R1", rf"(?:{_NFZ_WORDS_ZH}|{{zones}}).{{0,4}}?(?:直接)(?:穿过|穿越|横穿|飞过|穿)"),
    ("R1", rf"{_IGNORE_ZH}.{{0,4}}?(?:{_NFZ_WORDS_ZH}|{{zones}})"),
    ("R2", rf"\b{_IGNORE}\s+(?:the\s+|any\s+|all\s+|about\s+)?(?:\w+\s+){{0,3}}?{_BUFFER_WORDS}"),
    ("R2", rf"\b{_CROSS}\b[^.;,]{{0,25}}?\b{_THROUGH}\s+(?:the\s+)?(?:{{sensitive}})"),
    ("R2", rf"\b{_STRAIGHT}\s+(?:the\s+)?(?:{{sensitive}})"),
    ("R2", rf"\b{_NO_NEED}\s+(?:the\s+|any\s+)?(?:{{sensitive}}|{_BUFFER_WORDS})"),
    ("R2", rf"{_NO_NEED_ZH}.{{0,4}}?(?:{{sensitive}})|(?:{{sensitive}}).{{0,6}}?{_NO_NEED_ZH}"),
    ("R2", r"\b(?:hug|skim|graze|brush) (?:the )?(?:buildings?|rooftops?|roofs?|towers?)"),
    (
        "R2",
        rf"(?:\bwith (?:no|zero) (?:safety )?{_BUFFER_WORDS}|\b(?:zero|no) (?:safety )?(?:separation|clearance|buffer)\b)"
        r"(?!\s+(?:stock|delays?|time|period|days?|left|in stock|fee|charge|check|paperwork|issues?))",
    ),
    ("R2", rf"\bwithout (?:any |the |a )?(?:safety )?{_BUFFER_WORDS}(?=\s*(?:$|from|around|to|between|for the|near))"),
    (
        "R2",
        r"\b(?:right|close|tight|flush) (?:alongside|up against|against|next to) (?:the )?(?:buildings?|towers?|walls?)",
    ),
    (
        "R2",
        rf"(?:{_IGNORE_ZH}|不用保持|不需要保持|不必保持|不用和|不用留|不要留|不留|不要保持).{{0,8}}?{_BUFFER_WORDS_ZH}",
    ),
    ("R2", r"(?:贴着|紧挨着|挨着|紧贴).{0,6}(?:楼|建筑|屋顶)"),
    ("R2", rf"{_CROSS_ZH}.{{0,6}}?(?:{{sensitive}})"),
    ("R3", rf"\b{_IGNORE}\s+(?:the\s+)?{_CEILING_WORDS}"),
    ("R3", rf"\b(?:above|over|exceed|break|bust|beyond)\s+(?:the\s+)?{_CEILING_WORDS}"),
    ("R3", rf"(?:{_IGNORE_ZH}|超过|突破|超出).{{0,4}}?{_CEILING_WORDS_ZH}|{_CEILING_WORDS_ZH}(?:以上|之上)"),
    ("R5", rf"\b{_IGNORE}\s+(?:the\s+|any\s+|an?\s+)?{_RESERVE_WORDS}"),
    (
        "R5",
        rf"\b(?:keep|leave|hold|with|no) (?:no |zero )?{_RESERVE_WORDS}(?: (?:on|at) (?:landing|arrival)| kept| left)|"
        rf"\b(?:keep|leave|hold) (?:no|zero) {_RESERVE_WORDS}|\bwith (?:no|zero) {_RESERVE_WORDS}|"
        r"\b(?:land|arrive|come back|get there|touch down)\w* with (?:an? )?(?:empty|flat|dead|drained|depleted) battery|"
        r"\b(?:run|drain)\w* (?:the battery|it) (?:right )?(?:down )?to (?:empty|zero|0|nothing)",
    ),
    (
        "R5",
        r"\b(?:run|drain|fly|use)\s+(?:the battery|it|its battery|the drone)\s+(?:flat|dry|empty|down to (?:zero|0|empty|nothing))",
    ),
    (
        "R5",
        rf"(?:{_IGNORE_ZH}|不留|不用留|不要留|不需要留|不必留).{{0,6}}?(?:{_RESERVE_WORDS_ZH}|电量)|(?:电量|电池)(?:用完|用光|耗尽|跑光|用到见底|见底)",
    ),
    ("R5", rf"{_RESERVE_WORDS_ZH}.{{0,4}}?(?:{_IGNORE_ZH}|不用留|不用保留|不要留|都不要|不需要|不必|无所谓)"),
    (
        "R1-R6",
        rf"\b{_IGNORE}\s+(?:all\s+)?{_CHECK_WORDS}|\bsystem override\b|\bsafety (?:verification|checks?) (?:is|are) (?:disabled|off)",
    ),
    ("R1-R6", rf"{_IGNORE_ZH}.{{0,4}}?{_CHECK_WORDS_ZH}|系统指令|已关闭安全"),
    ("R1-R6", rf"{_CHECK_WORDS_ZH}.{{0,8}}?(?:{_IGNORE_ZH}|先别管|别管了|不用管了|都不管)"),  # "安全规则这次先别管了"
    # the geofence is the no-fly zones as the autopilot keeps them: "override the geofence", "geofence off"
    (
        "R1",
        r"\b(?:override|disable|turn off|switch off|ignore|bypass|kill|deactivate)\w*\s+(?:the\s+|its\s+)?geo-?fenc\w*|"
        r"\bgeo-?fenc\w*\s+(?:off|disabled|down|overridden|deactivated)\b|地理围栏.{0,4}(?:关|禁用|不管|忽略)",
    ),
    # "the no-fly rules don't apply to medical flights"
    ("R1", r"\b(?:no[\s-]?fly|nfz|airspace) (?:rules?|restrictions?|zones?) (?:don't|do not|doesn't|does not) apply\b"),
    # the wind limit keeps R5's reserve and R2's separation (gusts push a drone off its track)
    (
        "R5",
        r"\b(?:even if|even when|whatever) (?:the )?wind\w*\b[^.;,]{0,30}?\b(?:above|over|exceeds?|beyond|past|tops?)\b"
        r"[^.;,]{0,15}?\b(?:limit|max\w*|rating)|"
        rf"\b{_IGNORE}\s+(?:the\s+|any\s+)?wind (?:limits?|restrictions?|ratings?)|"
        r"风(?:再)?大也(?:照|要|得)?飞|风(?:速)?超(?:限|标)(?:了)?也(?:照|要)?飞",
    ),
    # "run it until the low-battery alarm", "电量报警了也继续飞"
    (
        "R5",
        r"\buntil (?:the )?(?:low[- ]battery |battery )?(?:alarm|warning)|\b(?:ignore|past|through) (?:the )?low[- ]battery "
        r"(?:alarm|warning)|(?:低电量|电量)?报警了?(?:也|还)(?:继续|照|要)?飞",
    ),
)


# "climb to 300 m", "go up to 250 m", "爬升到300米": an altitude to reach, judged against the ceiling by the caller.
CLIMB_TO = re.compile(
    r"\b(?:climb|go up|rise|ascend|get up|pop up|fly up|take it up|push it up)\s+(?:it\s+)?(?:up\s+)?(?:to|at)\s+"
    r"(?=\d)|\b(?:take|bring|send|get|put|push)\s+(?:it|her|the drone|uav[_ -]?\w+)\s+up\s+to\s+(?=\d)|"
    r"(?:爬升|升高|拉升|爬高|上升|爬|升|拉)(?:到|至)(?=\d)"
)


# The battery share a demand to land with ("land with 5% battery") is read by language.quantities.parse_reserve; a
# share under this baseline breaks R5 (the IR's default reserve is the baseline every plan keeps).
Polarity = Literal["wanted", "excluded", "against_rule"]


class RuleDemand(BaseModel):
    """A clause that asks for a rule break: a demand (no execute) or a permission (not used)."""

    span: str = Field(description="the request's words")
    rule: str = Field(description="the rule it asks to break, e.g. R1")
    permission: bool = Field(description="offered as an option ('if that is faster'), not demanded")
    start: int = Field(default=-1, description="where what the break would cross is named (after 'across', 'over'...)")
    end: int = Field(
        default=-1, description="where the words asking for the break end: a place named between is crossed"
    )

    def message(self) -> str:
        rule_text = RULE_TEXT.get(self.rule, "every safety rule")  # type: ignore[call-overload]
        if self.permission:
            return f"'{self.span}' was not used: {self.rule} ({rule_text}) holds on every plan"
        return (
            f"'{self.span}' asks to break {self.rule} ({rule_text}); the agent never plans against it: "
            "approve a plan that keeps the rule, or change the request"
        )


def clauses(text: str) -> list[tuple[int, str]]:
    """(start, clause) for each clause of the (lower-cased) text."""
    found, start = [], 0
    for mark in _CLAUSE_END.finditer(text):
        if text[start : mark.start()].strip():
            found.append((start, text[start : mark.start()]))
        start = mark.end()
    if text[start:].strip():
        found.append((start, text[start:]))
    return found


_CJK = re.compile(r"[\u4e00-\u9fff]")


def _alternatives(names: list[str]) -> str:
    names = sorted(
        {re.escape(n.lower()) for n in names if n and len(n) >= (2 if _CJK.search(n) else 3)}, key=len, reverse=True
    )
    return "(?:" + "|".join(names) + ")(?![a-z0-9_])" if names else r"(?!x)x"


# The word after which a break names what it would cross ("fly from A across the zone to B": the zone, not A).
_CROSSING_WORD = re.compile(
    r"\b(?:across|through|over|into|via|around|avoid|bother with|worry about|near|alongside|against)\b|"
    r"穿越|穿过|横穿|飞越|飞过|进入|绕开?|避开|避让|上空|贴着|挨着"
)


def _object_start(match: re.Match[str]) -> int:
    """Where the thing the break concerns starts in the match's text (after its last crossing word)."""
    words = list(_CROSSING_WORD.finditer(match.group(0)))
    return match.start() + (words[-1].end() if words else 0)


def _zone_alternatives(world: World) -> tuple[str, str]:
    """Regex alternatives for the world's no-fly zones and sensitive zones (ids and names)."""
    nfz = [name for z in world.no_fly_zones for name in (z.id, z.id.replace("_", " "), z.reason)]
    # what a zone is for, by its head noun and in Chinese ("the airfield", "机场"), where no other zone shares it
    heads = [(z.reason.split()[-1].lower(), z) for z in world.no_fly_zones if z.reason.strip()]
    for head, _ in heads:
        if head in _PURPOSE_ZH and sum(h == head for h, _ in heads) == 1:
            nfz += [head, *_PURPOSE_ZH.get(head, ())]
    # and by what the reason says first ("government compound, permanent restriction": "the government compound",
    # "the compound", "大院"), where no other zone's reason begins the same way
    purposes = [re.split(r"[:,;(]", z.reason)[0].strip().lower() for z in world.no_fly_zones if z.reason.strip()]
    bare_heads: list[str] = []
    for purpose in purposes:
        words = purpose.split()
        if not words or len(words) > 4 or purposes.count(purpose) > 1:
            continue
        nfz.append(purpose)
        head = words[-1]
        if head not in _GENERIC_HEADS and len(head) >= 5 and sum(p.split()[-1:] == [head] for p in purposes) == 1:
            nfz += list(_PURPOSE_ZH.get(head, ()))
            bare_heads.append(head)
    sensitive = [name for z in world.sensitive_zones for name in (z.id, z.name, z.id.replace("_", " "))]
    sensitive += [f"{z.kind.replace('_', ' ')} {noun}" for z in world.sensitive_zones for noun in _ZONE_NOUNS if z.kind]
    inside = [e for e in world.entities if any(z.buffered_shape.covers(e.point) for z in world.sensitive_zones)]
    sensitive += [name for e in inside for name in (e.id, e.name, short_name(e.name), *e.names.values()) if name]
    sensitive += [w for e in inside for w in _KIND_NOUNS.get(e.kind.value, ())]
    # a bare head word names the zone only where no noun follows it ("over the concert"; "the compound gate" is none)
    heads_said = (
        "|(?:" + "|".join(map(re.escape, bare_heads)) + r")(?=\s*(?:[,.;:!?)]|$|(?:zone|area|airspace|and|or|to|from|"
        r"for|on|in|at|it|it's|because|since|if|so|please|now|today)\b))"
        if bare_heads
        else ""
    )
    return _alternatives(nfz) + heads_said, _alternatives(sensitive)


_ZONE_NOUNS = ("zone", "zones", "grounds", "area", "campus")
_PURPOSE_ZH = {
    "airfield": ("机场", "飞机场"),
    "airport": ("机场", "飞机场"),
    "event": ("活动现场", "活动区"),
    "stadium": ("体育场", "球场"),
    "prison": ("监狱",),
    "operation": ("行动区", "警戒区"),
    "heliport": ("直升机场",),
    "compound": ("大院", "政府大院"),
    "concert": ("演唱会", "音乐会"),
}
# a zone's purpose word too common to name one zone by ("over the area")
_GENERIC_HEADS = {"zone", "zones", "area", "areas", "restriction", "airspace", "region", "space", "site", "district"}
# The nouns a place of a sensitive kind goes by ("the school", "学校"): crossing it is crossing its zone.
_KIND_NOUNS = {
    "school": ("school", "primary school", "school grounds", "schoolyard", "学校", "小学", "中学"),
    "hospital": ("hospital ward", "ward", "病房"),
    "residential": ("residential block", "homes", "居民区", "小区"),
    "park": ("park", "公园"),
}


def rule_demands(text: str, world: World) -> list[RuleDemand]:
    """Every clause of the (lower-cased) request that asks to break a safety rule, once per clause and rule."""
    zones, sensitive = _zone_alternatives(world)
    patterns = [
        (rule, re.compile(p.replace("{zones}", zones).replace("{sensitive}", sensitive))) for rule, p in _DEMANDS
    ]
    found: dict[tuple[str, str], RuleDemand] = {}
    for offset, clause in clauses(text):
        for rule, pattern in patterns:
            match = pattern.search(clause)
            if match is None or (clause.strip(), rule) in found or _NEGATED_BEFORE.search(clause[: match.start()]):
                continue
            if _TOLD_OF_BEFORE.search(clause[: match.start()]):  # "the last drone went through the zone": a report
                continue
            if _NEGATED_PERMISSION.search(clause) or _FORBIDS.search(clause):  # "you can't skip the reserve"
                continue
            span = " ".join(clause.split()) or match.group(0)
            found[(clause.strip(), rule)] = RuleDemand(
                span=span,
                rule=rule,
                permission=bool(PERMISSION.search(_PURPOSE_CLAUSE.sub(" ", clause))),
                start=offset + _object_start(match),
                end=offset + match.end(),
            )
    return _one_per_clause(list(found.values()))


# "never cut through the no-fly zone", "不要穿越禁飞区": a negation before the break keeps the rule.
_NEGATED_BEFORE = re.compile(
    r"(?:\b(?:never|ever|don't|do not|dont|doesn't|does not|not|no|avoid\w*|without|mustn't|must not|shouldn't|"
    r"instead of|rather than|lack\w*|have no|has no|don't have|haven't|hasn't|"
    r"should not|won't|can't|cannot|refuse to|forbidden to|prohibited to|not allowed to|under no circumstances|"
    r"nobody should|no one should|nobody may|no one may)\b[^,]{0,30}|(?:不要|别|不得|不能|禁止|严禁|千万别|千万不要|绝不|决不|"
    r"不可|勿|不准|不许|避免|不)\s*)$"
)
# "the last drone went through the no-fly zone and we got fined": what happened, no demand
_TOLD_OF_BEFORE = re.compile(
    r"\b(?:went|flew|was|were|had|got|did|last (?:time|drone|week|flight)|yesterday|earlier|previously)\b[^,]{0,30}$"
)
# "it is forbidden to fly through the no-fly zone": the clause forbids the break wherever the cue stands.
_FORBIDS = re.compile(
    r"\b(?:forbidden|prohibited|not allowed|not permitted|under no circumstances|at no point)\b|严禁|禁止|不准|不许"
)


# "you can't skip the reserve": a negated modal is no permission, and it asks for nothing either.
_NEGATED_PERMISSION = re.compile(
    r"\b(?:can't|cannot|can not|may not|mustn't|must not|not allowed)\b|不可以|不能|不允许"
)


def _one_per_clause(demands: list[RuleDemand]) -> list[RuleDemand]:
    """A clause that breaks several rules at once ("ignore all the safety rules") is named once, by its first rule."""
    seen: set[str] = set()
    kept = []
    for demand in demands:
        if demand.span not in seen:
            seen.add(demand.span)
            kept.append(demand)
    return kept
