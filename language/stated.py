"""What a request states, apart from any model: the binding reading the gates hold every plan to (places, pinned
UAVs, deadline, altitude band, return leg, corridors only) and the facts it leaves out that no plan can do without;
its intent and priority."""

from __future__ import annotations

import re
from collections.abc import Callable

from shapely.geometry import Point

from ir.fidelity import Mentions, SalientSpan, StatedConstraints
from ir.model import Intent, OperationConstraints, Priority
from language.defaults import BASE_KINDS, CARGO_INTENTS, HANDOFF_ALLOWED
from language.grounding import entered_and_kept_out, ground_mentions
from language.mentions import (
    NOT_THE_UAVS_AT,
    Mention,
    blank_mentions,
    find_mentions,
    uavs_wait_at,
    unknown_listed_places,
)
from language.polarity import CLIMB_TO, PERMISSION, RuleDemand, clauses, rule_demands
from language.quantities import (
    SPOKEN_MINUTES,
    ClockTime,
    Quantity,
    find_clock_times,
    find_quantities,
    parse_deadline,
    parse_payload,
    parse_reserve,
    read_load,
    read_quantities,
    stated_band_and_separation,
    with_digits,
)
from tools.world import UAV, UAVStatus, World

_EMERGENCY_CUES = (
    r"emergenc\w*|defibrillator|\baed\b|first[\s-]aid|ambulance|rescue|injur\w*|casualt\w*|life[\s-]saving|"
    r"\bblood\b|急救|紧急|除颤|救援|伤员|血液|血浆"
)


_INTENT_CUES: dict[Intent, str] = {
    Intent.return_: r"\breturn\w*|\bgo back\b|\bfly back\b|\bcome back\b|返航|返回|回到",
    Intent.charge: r"\b(?:re)?charg\w*|\btop (?:it |her |its battery |the battery )?up\b|充电|充个电|充一下电|充满电|补电",
    Intent.patrol: r"\bpatrol\w*|巡逻|巡查",
    Intent.inspection: r"\binspect\w*|\bsurvey\w*|巡检|检查|勘察",
    Intent.monitoring: (
        r"\bmonitor\w*|\bsurveil\w*|\bwatch\b|\bobserve\b|\boverwatch\b|\bkeep an eye on\b|\bphotos?\b|"
        # observing as a verb, never a noun alone ("the video team needs 2 kg of batteries" is a delivery)
        r"\b(?:take|get|shoot|snap|capture|grab|make)\s+(?:some\s+|a few\s+)?(?:thermal\s+|aerial\s+|infra-?red\s+)?"
        r"(?:pictures?|photos?|images?|imagery|shots?|video|footage)\b|\bphotograph(?:s|ed|ing)?\s+(?:the|a|an|it|them)\b|"
        r"\brecord\s+(?:a\s+)?video\b|"
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
    r"\band back\b|\bround[ -]trip\b|\b(?:come|fly|head|return) (?:straight |right |directly )?back\b"
    r"|\breturn (?:it |the drone )?to (?:base|the start)"
    r"|\b(?:and|then) (?:return|come back|fly back|head back)\b(?!\s+(?:to|from)\b)"
    # "... and comes straight back", "; it comes back": said of the UAV's errand, not "when uav_03 comes back from
    # charging"; "load 1 kg there and bring them back": back where the flight started
    r"|(?:\b(?:and|then)|[;,])\s+(?:then\s+)?(?:it\s+|she\s+|the\s+(?:drone|uav|quad)\s+)?(?:comes|flies|heads|returns)"
    r"\s+(?:straight\s+|right\s+|directly\s+)?back\b"
    r"|\b(?:and|then)\s+bring(?:s|ing)?\s+(?:it|them|(?:the|that|this)\s+\w+)\s+back\b(?!\s+(?:to|from)\b)"
    r"|\b(?:and )?then (?:straight |right )?home\b(?!\s+in\b)|\breturn(?:s|ing)? (?:afterwards?|after that|when (?:done|finished))\b"
    r"|\breturn(?:s|ing)? with (?:at least|no less than|not less than|more than|over|\d)"  # "... with 30% left"
    r"|往返|再返回|并返回|然后返回|后返回|(?:然后|再|并|后)回来|飞回"
    # after the errand: "and then come home", "then RTB", "送完返航" (a UAV sent home alone is a return errand)
    r"|\b(?:and|then|afterwards|after that)[, ]+(?:then )?(?:(?:come|fly|head|go|get) (?:back )?home|rtb|return to base)\b"
    r"(?!\s+(?:and|to|at|for)\b)"
    r"|(?:送完|完成后|之后|然后|再)\s*(?:就)?(?:返航|回家|回基地)"
)


_CORRIDORS_ONLY = re.compile(
    r"\bonly (?:inside|in|within|along) (?:the )?(?:drone )?corridors?\b|\bcorridors? only\b|"
    r"\b(?:stick|keep|stay) (?:to|inside|in|within) (?:the )?(?:drone )?corridors?\b|只能在.{0,8}走廊|仅限.{0,6}走廊|只走.{0,6}走廊"
    r"|\b(?:never|don't|do not|must not) leave (?:the )?(?:drone )?corridors?|(?:不要|别|不得|不能|不可)离开.{0,8}走廊|"
    r"全程(?:走|沿|在).{0,8}走廊"
)


# A time unit: "a second drone" is an ordinal, not a duration ("30 second" and "ninety seconds" are)
_TIME_UNIT = re.compile(r"\b(?:minutes?|mins?|seconds|secs?|hours?|hrs?)\b|\d\s*-?\s*second\b|分钟|秒|小时|刻钟")


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


# A mass said without a number: "a couple of kilos", "a few pounds", "几公斤" (the UAV's lift and energy need one).
_VAGUE_MASS = re.compile(
    r"\b(?:a\s+(?:couple|few|bunch|handful|little)\s+(?:of\s+)?|several\s+|some\s+|many\s+|a\s+lot\s+of\s+|lots\s+of\s+)"
    r"(?:kilo(?:gram(?:me)?)?s|kgs|pounds|lbs)\b|(?:几|若干|好几|多)\s*(?:公斤|千克|斤|磅)"
)

# A time to arrive in without a number: "within a couple of minutes", "in a few minutes", "几分钟内".
_VAGUE_DURATION = re.compile(
    r"\b(?:within|in|under|inside(?: of)?)\s+(?:a\s+(?:couple|few)\s+(?:of\s+)?|several\s+|some\s+)"
    r"(?:minutes|mins|hours|seconds)\b|几\s*分钟\s*(?:内|之内|以内)"
)

# A time the request ties to something the agent has no clock for ("before the meeting", "by noon", "after they
# call", "tomorrow", "会议前"): a deadline that cannot be placed, unlike a duration from now ("within 20 minutes").
_UNANCHORED_TIME = re.compile(
    rf"\b{_ANCHOR_WORD}\s+(?:(?:the|their|his|her|our|this)\s+)?{_EVENT}\b|\b{_ANCHOR_WORD}\s+{_CLAUSE}\b"
    r"|\b(?:by the time|in time for)\b|\b(?:tomorrow|tonight|this (?:morning|afternoon|evening)|next week)\b"
    r"|\b(?:same time as|the usual time|like last time|as (?:we did )?yesterday)\b"
    # "at a quarter past", "by 10 past": minutes past an hour not said
    rf"|\b(?:at|by|before|until|around|about)\s+(?:{SPOKEN_MINUTES}|\d{{1,2}})"
    r"(?: minutes)? (?:past|to)\b(?=\s*(?:[,.;!?)]|$))"
    r"|(?:会议|开会|手术|下班|上班|交班|天黑|中午|午饭|晚饭|早饭|比赛|傍晚)(?:开始|结束)?(?:之前|以前|前|之后|以后)"
    r"|明天|今晚|后天|下周|到时候|那时候?|老时间|跟昨天一样|和上次一样|照旧"
)


# A UAV id is pinned when the request asks for it ("use only uav_03", "send uav_03", "uav_03 should carry it",
# "用uav_03"), left out when it asks not to use it ("not uav_05", "anything but uav_05", "不要用uav_05"), and merely
# reported when the request describes it ("uav_03 is in maintenance"). A UAV named in none of these ways is a span
# the agent cannot account for: it asks rather than fly some UAV.
_UAV_WORD = r"(?:the\s+)?(?:only\s+)?(?:drone\s+|uav\s+)?"
# a UAV as people name it: by id, or by its fleet number ("drone 3", "3号无人机": mentions.id_pattern)
_NAMED_UAV = (
    r"(?:uav[_ -]?\w+|无人机\w+|(?:drone|quad|aircraft|unit)\s*(?:#|no\.?|number)?\s*(?:\d+|one|two|three|four|five|six|"
    r"seven|eight|nine|ten|eleven|twelve)|\w+号(?:无人机|飞机|机))"
)
# an earlier UAV of the same list: "do not use uav_01 or uav_02", "除了uav_01和uav_02"
_LISTED_UAV = _NAMED_UAV + r"\s*(?:,|\bor\b|\band\b|\bnor\b|/|、|和|或|与)\s*"
_PIN_BEFORE = re.compile(
    r"(?:\buse|\busing|\bsend|\bdispatch|\bassign|\btake|\bwith|\bby|\bhave|\blet|\bdeploy|\blaunch|\btask|"
    r"\bfly|\bonly|\bmove|\breposition|\brelocate|\bferry|\bpark|\bget|\bput|\bbring|\brecall|\breturn|"
    r"\b(?:re)?charge|\b(?:nobody|no one|none|nothing) but|只用|使用|调用|用|派|让|安排|指定|由|把|将)\W{0,3}"
    + _UAV_WORD
    + r"$"
)
# "put half of it on uav_01", "load 4 kg onto uav_02", "and half on uav_02": that UAV carries it (unless a remark on it
# follows: "half on uav_01 is too much"); "do not load sandbags onto uav_01" leaves it out.
_LOAD_ON = r"\b(?:load|put|place|pack|stow)\w*\b[^,.;]{0,30}?\b(?:on|onto)"
_LOADED_ON_BEFORE = re.compile(
    rf"(?:{_LOAD_ON}|\b(?:half|the rest|the other half|the remainder)\s+(?:goes\s+)?(?:on|onto|with|by))\W{{0,3}}"
    + _UAV_WORD
    + r"$"
)
_NOT_LOADED_ON_BEFORE = re.compile(rf"(?:n't|\bnot|\bnever|\bno)\s+{_LOAD_ON}\W{{0,3}}" + _UAV_WORD + r"$")
# UAVs named as the team that shares a task ("split it between uav_01 and uav_02", "among uav_04, uav_05 and
# uav_06", "由uav_01和uav_02分装"): the words just before a UAV, other UAVs of the same list included. They fly.
MEMBERS_LISTED_BEFORE = re.compile(
    r"(?:\b(?:between|among|amongst|across)|由|让|派)\s*(?:" + _NAMED_UAV + r"\s*(?:,|and|&|和|与|及|、)\s*)*$"
)
_PIN_AFTER = re.compile(
    # the verbs in the third person too: "uav_07 films the site while uav_09 drops off the tools" names both to fly
    r"^\W{0,2}only\b|^\W{0,3}(?:should|must|will|can|could|is to|to|please|,)?\s*(?:fl(?:y|ies)|carr(?:y|ies)|takes?|"
    r"delivers?|go(?:es)?|brings?|do(?:es)?(?!\s*(?:not|n't))|handles?|makes?|picks?|inspects?|patrols?|returns?|heads?|films?|"
    r"drops?|watch(?:es)?|records?|photographs?)\b|"
    r"^\W{0,2}(?:从[^，。；,;！？]{1,12}?)?(?:去|送|运|飞|执行|负责|返航|前往|拍摄|航拍)"  # "uav_09从五金仓库运..."
)
_EXCLUDE_BEFORE = re.compile(
    r"(?:\bnot(?: with| by)?|(?:n't|\bnot) (?:use|send|take|fly|pick|dispatch|task|assign)|\bexcept(?: for| with| by)?|"
    r"\b(?:anyone|anybody|anything|any drone|any uav|any one|everyone|everything|all|whatever)\s+(?:\w+\s+)?but|"
    r"other than|instead of|\bwithout(?: (?:using|sending|flying|taking|dispatching))?|\bavoid|never (?:use|send|fly)|rather than|\bexcluding|\bapart from|\bno(?=\s+$)|\bskip|"
    r"不要使用|请勿使用|别使用|不得使用|禁止使用|不要用|不用|别用|别派|不要派|不派|除了|不使用|不能用|不要|别)"
    r"\W{0,3}(?:" + _LISTED_UAV + r")*" + _UAV_WORD + r"$"
)
# "leave uav_05 out of it", "keep uav_05 on the ground", "uav_05 stays home", "uav_05 is off-limits / busy",
# "uav_05不要用", "uav_05除外": said after the id, the UAV is left out.
_EXCLUDE_AFTER = re.compile(
    r"^\W{0,3}(?:(?:is|'s|are|should be|must be|stays?|remains?|has to stay|needs to stay|will stay)\s+"
    r"(?:off[- ]limits|busy|unavailable|not available|reserved|needed elsewhere|out of (?:service|action|it|this)|down|"
    r"broken|grounded|on the ground|home|at home|put|out|booked|taken|tied up|spoken for)|"
    r"(?:must not|mustn't|should not|shouldn't|can't|cannot|won't|may not|is not to|isn't to)\s+(?:fly|go|be used|be sent|take)|"
    r"(?:stays?|remains?) (?:out|back|behind|grounded|on the ground|home|put)|sits? (?:this one )?out|is out\b)"
    r"|^\W{0,2}(?:不要用|不用|别用|不能用|不可用|除外|以外|之外|不行|不要派|别派|留着|待命|不参与|不要动|别动)(?!\s*[a-z0-9])"
)
# "uav_05's battery is acting up, don't send it", "drone 5 has a bad motor, so ... something else": a remark on the UAV
# and then words that keep it home
_NOT_IT_AFTER = re.compile(
    r"[^.;!?。；！？]{0,50}?(?:\b(?:don't|do not|dont|never|not) (?:use|send|fly|take|dispatch|pick)\s+(?:it|her|that one|this one)\b|"
    r"\b(?:something|anything|someone) else\b|\ba different (?:one|drone|uav|aircraft)\b|"
    r"(?:别|不要|不能)(?:用|派)(?:它|这架|那架))"
)
_ELSE_LATER = re.compile(
    r"\b(?:something|anything|someone) else\b|\ba different (?:one|drone|uav|aircraft)\b|\b(?:use|send|take) another (?:one|drone|uav)\b|换一架|换别的|用别的"
)
_LEAVE_OUT = re.compile(r"(?:\bleave|\bkeep|\bhold)\W{0,3}" + _UAV_WORD + r"$")
_LEFT_OUT_AFTER = re.compile(
    r"^\W{0,3}(?:out\b|alone\b|be\b|on the ground|grounded|free|in reserve|back\b|home\b|where it is|at home|"
    r"off (?:it|this|the job))"
)
# a UAV as an item of a terse request, between commas: "hospital_A to police_2, 1 kg, uav_03, within 90 s"
_ITEM_BEFORE = re.compile(r"(?<![\d号])[,;，；]\s*" + _UAV_WORD + r"$")
# "with uav_03, no, uav_09", "uav_04 - scratch that, uav_09", "using uav_09. actually make that uav_04", "用6号机，
# 不对，用5号机": the later UAV corrects the one named before it, which then does not fly
_CORRECTION_BEFORE = re.compile(
    r"(?:^|[,;.!?:，；。！？]|\s-+|—)\s*(?:no|nope|sorry|wait|no wait|actually|i mean|i meant|scratch that|correction|"
    r"make that|change that to|不对|说错了|错了|改成|换成|改为|更正)"
    r"(?:\s*[,;:，；-]?\s*(?:no|sorry|wait|actually|make (?:that|it)|change (?:that|it) to|use|i mean|用|改用|换|换成|改成))*"
    r"\s*[,;:，；-]?\s*" + _UAV_WORD + r"$"
)
# "with uav_05; if it isn't available use uav_06", "uav_02 as backup", "如果uav_05不行就用uav_06": a fallback, which
# flies only if the operator says so (the one named first is pinned)
_FALLBACK_BEFORE = re.compile(
    r"(?:\bif\b[^.;]{0,40}?(?:isn't|is not|aren't|can't|cannot|won't|unavailable|not available|busy|fails?|down|"
    r"doesn't work|not free)\b[^.;]{0,15}?|\botherwise|\bfailing that|\bor else|\bas a fallback|"
    r"如果[^。；]{0,20}?(?:不行|不可用|没空|不能飞|故障|不在)[，,]?\s*(?:就|则|那就)?)"
    r"\W{0,3}(?:use |take |send |try |go with |fall back (?:on|to) |用|派|换)?" + _UAV_WORD + r"$"
)
_FALLBACK_AFTER = re.compile(
    r"^\W{0,3}(?:(?:as|is) (?:a |the |our )?(?:backup|fallback|reserve|spare|plan b)\b(?!\s*parts?)|"
    r"for (?:a |the )?(?:backup|fallback)\b|"
    r"(?:only )?if (?:needed|necessary|required|need be)\b|作为备用|备用|做备份|当备份)"
)
_ITEM_AFTER = re.compile(
    r"\s*(?:[;.!；。！]|$|[,，](?!\s*(?:uav|drone|unit|as |which|who|that|is |are |was |has |had |both|all|busy|out)))"
)
# after a UAV, words that remark on it: no correction to fly it ("no, uav_06 should stay on standby")
_REMARKED_AFTER = re.compile(
    r"\s*(?:is|are|was|'s|has|had|stays?|remains?|should (?:stay|remain|be|sit|wait)|must (?:stay|remain)|can't|cannot|"
    r"won't|isn't|needs? to (?:stay|charge))\b"
)
_ADDRESSED = re.compile(r"\s*(?:'s\s+)?[:,,:]")  # "uav_03: 1 kg from ...", at the head of the request
_REPORTED_AFTER = re.compile(
    r"^\W{0,2}(?:is|was|'s|has|had|are|remains|stays|在|正在|已|处于|电量|"
    r"的(?:摄像|相机|镜头|热成像|红外|电池|电量|螺旋桨|桨|云台|传感器|绞盘|绞车|电机|位置))"
)


def normalised(instruction: str) -> str:
    """The request as every reader offsets into it: whitespace runs as one space, lower-cased."""
    return " ".join(instruction.split()).lower().replace("\u2019", "'")


# A mass said of one UAV of several: "uav_01 carries 5 kg and uav_02 3 kg", "5 kg on uav_01, 3 kg on uav_02",
# "1号机运5公斤，2号机运3公斤": that UAV's share of the load. The words between the UAV and its mass, either way round.
_SHARE_AFTER_UAV = re.compile(
    r"\s*(?::\s*|(?:will |should |can |must |is to |then )?(?:carr(?:y|ies)|takes?|gets?|hauls?|brings?|lifts?|"
    r"flies|fly|handles?|has|with)\s+)?(?:the (?:other|remaining|last|rest,?|first)\s+|another\s+)?"
    r"|\s*(?:运|带|装|送|拿|吊|负责|分)?\s*"
)
_SHARE_BEFORE_UAV = re.compile(
    r"\s*(?:of (?:it|them|the load|the cargo|the \w+|\w+)\s+)?(?:goes |go )?(?:on|onto|for|by|with|in)\s+(?:the\s+)?"
)


# "uav_01 takes 4, uav_03 the other 3" (kg said of the load already): a bare number after a carrying verb
_BARE_SHARE_AFTER = re.compile(
    r"\s*(?::\s*|(?:will |should |can |must )?(?:carr(?:y|ies)|takes?|gets?|hauls?|brings?|lifts?|handles?)\s+)"
    r"(?:the (?:other|remaining|last|rest,?|first)\s+|another\s+)?(?P<n>\d+(?:\.\d+)?)(?![\d.]*\s*(?:%|[a-z\u4e00-\u9fff]))"
    r"|\s+(?:the (?:other|remaining|last|rest,?)\s+|another\s+)(?P<m>\d+(?:\.\d+)?)(?![\d.]*\s*(?:%|[a-z\u4e00-\u9fff]))"
)


def uav_shares(text: str, mentions: list[Mention], quantities: list[Quantity]) -> dict[str, tuple[float, int | None]]:
    """Each UAV the (lower-cased) request gives a mass of its own, with that mass and its index in `quantities`
    (offsets into `text`, as `read_quantities` gives them); empty unless two UAVs or more have one each."""
    found: dict[str, tuple[float, int]] = {}
    used: set[int] = set()
    for mention in sorted((m for m in mentions if m.kind == "uav" and len(m.ids) == 1), key=lambda m: m.start):
        for index, mass in enumerate(quantities):
            if mass.dimension != "mass":
                continue
            after = mass.start >= mention.end and _SHARE_AFTER_UAV.fullmatch(text, mention.end, mass.start)
            before = mass.end <= mention.start and _SHARE_BEFORE_UAV.fullmatch(text, mass.end, mention.start)
            if index not in used and mention.ids[0] not in found and (after or before):
                found[mention.ids[0]] = (mass.value, index)
                used.add(index)
        bare = _BARE_SHARE_AFTER.match(text, mention.end)
        loads = [q.value for q in quantities if q.dimension == "mass"]
        if mention.ids[0] not in found and bare and loads and float(bare["n"] or bare["m"]) < max(loads):
            found[mention.ids[0]] = (float(bare["n"] or bare["m"]), None)  # in the load's kg, a part of it
    return found if len(found) >= 2 else {}


def _hold_shares(
    stated: StatedConstraints, shares: dict[str, tuple[float, int | None]], quantities: list[Quantity]
) -> list[str]:
    """Each UAV's own share into the reading; the load is their sum, or the one other mass the request states (the
    whole: "8 kg, uav_01 takes 5 kg, uav_02 3 kg"). Shares that do not add up to that whole: the question to ask."""
    if not shares:
        return []
    stated.uav_shares_kg = {uav: kg for uav, (kg, _) in shares.items()}
    total = sum(stated.uav_shares_kg.values())
    shared = {index for _, index in shares.values()}
    whole = [q for i, q in enumerate(quantities) if q.dimension == "mass" and i not in shared]
    stated.payload_kg = whole[0].value if len(whole) == 1 else total
    if len(whole) == 1 and abs(whole[0].value - total) > 1e-6:
        said = ", ".join(f"{uav} {kg:g} kg" for uav, kg in stated.uav_shares_kg.items())
        return [f"the UAVs' shares ({said}) add up to {total:g} kg, not the '{whole[0].text}' stated: which is meant?"]
    return []


def stated_constraints(text: str, world: World) -> StatedConstraints:
    """What the request states (places, pinned UAVs, deadline, altitude band, return leg, corridors only) and what it
    leaves out that no plan can do without: the fidelity gate's reading, apart from any model's."""
    lowered = normalised(text)
    mentions = ground_mentions(world, text)
    digits = with_digits(lowered)
    band = stated_band_and_separation(digits)
    fuzzy = find_mentions(lowered, world)
    demands = demands_marking_crossed(lowered, world, fuzzy)
    mentions = _without_landmarks_and_avoided(mentions, fuzzy)
    uav_roles = uav_roles_in(lowered, fuzzy)
    shares = uav_shares(lowered, fuzzy, read_quantities(lowered))  # indices as find_quantities(digits) orders them
    uav_roles.update({u: "pinned" for u in shares if uav_roles.get(u) == "unaccounted"})  # given a share, it flies
    kept_away, offered_there = uavs_where_said(lowered, fuzzy, world)
    undescribed, described = uavs_described(lowered, world)  # "the drone at the depot", "the thermal drone"
    kept_away, offered_there = [*kept_away, *undescribed], [*offered_there, *described]
    offered_there = [u for u in offered_there if u not in kept_away and "pinned" not in uav_roles.values()]
    kept_from = {m.ids[0] for m in fuzzy if m.role == "avoid" and len(m.ids) == 1}
    visits = [
        m
        for m in fuzzy
        if m.kind == "entity"
        and m.role not in ("avoid", "landmark", "crossed")
        and not (m.by_kind and set(m.ids) <= kept_from)  # "every site except the levee": the kind is not the levee
    ]
    found = [m.ids[0] for m in visits if len(m.ids) == 1]
    referenced = list(dict.fromkeys([*mentions.places, *found]))
    pointed = [m.ids[0] for m in visits if _points_to_one(m, lowered, world)]
    stated = StatedConstraints(
        **mentions.model_dump(exclude={"uavs"}),
        uavs=[u for u, role in uav_roles.items() if role == "pinned"],
        offered_uavs=[u for u, role in uav_roles.items() if role == "offered"] or offered_there,
        excluded_uavs=list(dict.fromkeys([*(u for u, role in uav_roles.items() if role == "excluded"), *kept_away])),
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
    clock, clock_sec = clock_deadline(lowered, world)
    if clock_sec is not None and (stated.deadline_sec is None or clock_sec < stated.deadline_sec):
        stated.deadline_sec = clock_sec  # the stricter of a duration and a time of day
    if any(_reported(q, digits) for q in find_quantities(digits) if q.value == stated.battery_reserve_ratio):
        stated.battery_reserve_ratio = None  # "uav_07 is at 15% battery" reports its state, asks for no reserve
    _climb_to(stated, digits)
    stated.avoided_zones = list(
        dict.fromkeys(i for m in fuzzy if m.kind == "zone" and m.role == "avoid" for i in m.ids)
    )
    terminal = [m.ids[0] for m in visits if m.terminal and len(m.ids) == 1]
    stated.final_place = terminal[-1] if terminal else None
    demands += _reserve_demands(stated, lowered)
    stated.rule_demands = [d.message() for d in demands if not d.permission]
    stated.permissions_not_used = [d.message() for d in demands if d.permission]
    stated.assumed = [
        f"'{m.assumed_from}' read as {m.ids[0]}"
        for m in fuzzy
        if m.assumed_from and len(m.ids) == 1 and m.kind != "unknown"
    ]
    stated.unread_duration = stated.deadline_sec is None and bool(_TIME_UNIT.search(lowered))
    load = read_load(digits)
    shared = {index for _, index in shares.values()}
    said = find_quantities(digits)
    mismatch = _hold_shares(stated, shares, said)
    quantities = [
        (
            q,
            "uav_shares_kg"
            if index in shared
            else "payload_kg"
            if load and not shares and q.start == load.item.start
            else _field_holding(q, stated) or _reported(q, digits),
        )
        for index, q in enumerate(said)
    ]
    stated.spans = {field: q.text for q, field in reversed(quantities) if field not in (None, REPORTED)}
    if shares:
        stated.spans["uav_shares_kg"] = ", ".join(f"{uav} {kg:g} kg" for uav, (kg, _) in shares.items())
    if load is not None and not shares:
        stated.spans["payload_kg"] = load.text
        if load.count is not None and load.count > 1 and not load.each_or_all:
            stated.payload_item_kg = load.item.value
    if clock is not None and clock_sec is not None and stated.deadline_sec == clock_sec:
        stated.spans["deadline_sec"] = clock.text
    stated.unaccounted = (
        [
            f"'{q.text}' is not reflected in the plan: " + (q.ambiguous or "the agent reads no demand in it")
            for q, field in quantities
            if field is None
        ]
        + [
            f"'{u}' is named, but neither as the UAV to fly nor as one to leave out: which is meant?"
            for u, role in uav_roles.items()
            if role == "unaccounted"
        ]
        + [
            f"'{u}' is named both as the UAV to fly and as one to leave out: which is meant?"
            for u, role in uav_roles.items()
            if role == "conflicting"
        ]
        + [
            f"'{item}' is listed with the places, but no place in this world goes by that name: which is meant?"
            for item in unknown_listed_places(lowered, fuzzy)
        ]
        + mismatch
    )
    sites = {m.ids[0] for m in visits if len(m.ids) == 1} | set(mentions.places)  # "both places: from A to B"
    stated.unaccounted += [
        f"'{said}' are asked for, but {len(sites)} {'is' if len(sites) == 1 else 'are'} named: which is missing?"
        for said, count in _counted_sites(digits)
        if count > len(sites) > 0  # none named: the request already asks where
    ]
    stated.intent = intent = parse_intent(blank_mentions(lowered, fuzzy))
    has_origin = bool(stated.origins) or any(m.role == "origin" for m in visits)
    if intent in CARGO_INTENTS and stated.uavs and not has_origin and is_repositioning(lowered, stated.payload_kg):
        stated.intent = intent = Intent.return_  # a positioning flight: the UAV flies to the named place
    origins = set(mentions.origins) | {m.ids[0] for m in fuzzy if m.role == "origin" and len(m.ids) == 1}
    stated.missing = _missing_facts(stated, intent, mentions.uavs, fuzzy, origins) + [
        f"deadline: '{m.group(0)}' is no time the agent can place; give it as a duration (within 20 minutes)"
        for m in _UNANCHORED_TIME.finditer(lowered)
    ]
    if stated.payload_kg is None and (vague := _VAGUE_MASS.search(lowered)):
        stated.missing.append(
            f"payload: '{vague.group(0).strip()}' gives no mass the plan can be checked for: how many kg?"
        )
    if stated.deadline_sec is None and (vague := _VAGUE_DURATION.search(lowered)):
        stated.missing.append(
            f"deadline: '{vague.group(0).strip()}' gives no time to arrive in: within how many minutes?"
        )
    if load is not None and load.count is None:
        stated.missing.append(
            f"payload: '{load.item.text}' is what one item weighs, but not how many there are: how many, or what do "
            "they weigh in all?"
        )
    elif load is not None and load.each_or_all:
        stated.missing.append(f"payload: '{load.text}': is that {load.item.text} each, or in all?")
    if (starting := next((c for c in find_clock_times(lowered) if not c.deadline), None)) is not None:
        stated.missing.append(  # no plan here leaves later than t = 0
            f"start: '{starting.text}' is a time to leave at or after; the agent plans departures now: drop it, or "
            "send the request at that time"
        )
    if clock is not None and clock_sec is None:
        stated.missing.append(
            f"deadline: '{clock.text}' is a time of day the agent cannot place (the world gives no clock origin, or "
            "it is past at t = 0); give it as a duration (within 20 minutes)"
        )
    stated.missing += [
        f"id: '{m.assumed_from}' is no id in this world; did you mean {' or '.join(m.ids)}?"
        for m in fuzzy
        if m.assumed_from and (len(m.ids) > 1 or m.kind == "unknown")
    ]
    stated.salient = _salient(fuzzy, uav_roles, quantities, demands, lowered)
    return stated


# "inspect three sites", "both drop points", "三个地点": how many places the request says it names.
_SITE_COUNT_WORDS = {w: i for i, w in enumerate("one two three four five six seven eight nine ten".split(), 1)} | {
    "both": 2,
    "两": 2,
}
_COUNTED_SITES = re.compile(
    r"\b(?P<n>\d+|two|three|four|five|six|seven|eight|nine|ten|both)\s+(?:(?:of the|[a-z-]+)\s+)?"
    r"(?:sites|places|points|locations|spots|stops|targets|structures|destinations|addresses|facilities)\b"
    r"|(?P<cn>\d+|两)\s*(?:个|处)\s*(?:地点|地方|站点|点位?|目标|现场|位置|设施)"
)


# not the places the request names: "skip the other three sites", "one of our 5 drop points", "from two spots"
_NOT_THE_NAMED = re.compile(
    r"(?:\bother|\bremaining|\brest of the|\bof (?:our|the|these|those)|\bfrom|\bskip\w*|"
    r"\bexcept|\bnot|\bwithout|其余|另外|其他)\s*(?:the\s+)?$"
)


def _counted_sites(digits: str) -> list[tuple[str, int]]:
    counted = []
    for m in _COUNTED_SITES.finditer(digits):
        if _NOT_THE_NAMED.search(digits[max(0, m.start() - 20) : m.start()]):
            continue
        written = m["n"] or m["cn"]
        counted.append((m.group(0), int(written) if written.isdigit() else _SITE_COUNT_WORDS[written]))
    return counted


REPORTED = "reported"  # a quantity that describes the state of things ("uav_07 is at 15% battery"): no demand


# "uav_s1只剩55%的电了", "uav_07 is at 15% battery", "it has only 40% charge left": a battery share said as a remark.
_REPORT_BEFORE = re.compile(
    r"(?:只剩|还剩|剩下?|仅剩|电量(?:只有|为|是|还有)?|(?:is|'s|are) (?:at|down to|on|showing|sitting at)|"
    r"(?:has|have) (?:only |just |about |around )?|only |down to )\s*$"
)
_REPORT_AFTER = re.compile(r"^\s*(?:的)?(?:电|电量|battery|charge|left|remaining)")


# "the event zone doesn't kick in for another 10 minutes": a duration that times the world, not the flight.
_WORLD_TIMING = re.compile(
    r"\b(?:kick|kicks|start|starts|open|opens|close|closes|activat\w*|begin|begins|end|ends|expir\w*|lift\w*)"
    r" (?:in|for|after)(?: another| about)? (?:for )?(?:another |about )?\s*$|(?:后|之后)?(?:生效|开始|关闭|解除)前?\s*$"
)


def _reported(quantity: Quantity, digits: str) -> str | None:
    if quantity.dimension == "duration":
        before = digits[max(0, quantity.start - 35) : quantity.start]
        return REPORTED if _WORLD_TIMING.search(before) else None
    if quantity.dimension != "share":
        return None
    before, after = digits[max(0, quantity.start - 20) : quantity.start], digits[quantity.end : quantity.end + 12]
    return REPORTED if _REPORT_BEFORE.search(before) and _REPORT_AFTER.match(after) else None


def clock_deadline(text: str, world: World) -> tuple[ClockTime | None, float | None]:
    """The first time of day the request asks to arrive by ("by 14:30", "下午3点前"), and its seconds after the
    world's t = 0 (None: no clock origin, or past then)."""
    clock = next((c for c in find_clock_times(text) if c.deadline), None)
    origin = world.geo_reference.clock_origin_utc if world.geo_reference else None
    return clock, (clock.seconds_after(origin) if clock is not None and origin is not None else None)


def demands_marking_crossed(text: str, world: World, mentions: list[Mention]) -> list[RuleDemand]:
    """The (lower-cased) request's rule-break demands and permissions; a place named as what one would cross ("cut
    over the school grounds") gets the role `crossed`: no place to visit."""
    demands = rule_demands(text, world)
    for m in mentions:
        if m.kind == "entity" and any(d.start < m.end and m.start < d.end for d in demands):
            m.role = "crossed"
    return demands


def _without_landmarks_and_avoided(mentions: Mentions, fuzzy: list[Mention]) -> Mentions:
    """The exact reading less the places the fuzzy one reads as landmarks ("the pad next to X") or as places to
    keep away from ("don't route over X"), which are then avoided, never visited."""
    landmarks = {m.ids[0] for m in fuzzy if m.role in ("landmark", "crossed") and len(m.ids) == 1}
    avoided = {m.ids[0] for m in fuzzy if m.kind == "entity" and m.role == "avoid" and len(m.ids) == 1}
    dropped = landmarks | avoided
    kept = {
        field: [ref for ref in getattr(mentions, field) if ref not in dropped]
        for field in ("places", "origins", "destinations", "handoff_points")
    }
    return mentions.model_copy(update={**kept, "avoided": sorted({*mentions.avoided, *avoided} - set(kept["places"]))})


def _climb_to(stated: StatedConstraints, digits: str) -> None:
    """ "climb to 300 m" states the altitude to fly at, where nothing else does (then judged against the ceiling)."""
    if stated.cruise_altitude_m is not None or stated.altitude_min_m is not None or stated.altitude_max_m is not None:
        return
    for match in CLIMB_TO.finditer(digits):
        window = digits[match.end() : match.end() + 24]
        lengths = [q for q in find_quantities(window) if q.dimension == "length" and not q.ambiguous]
        if lengths:
            stated.cruise_altitude_m = lengths[0].value
            stated.spans["cruise_altitude_m"] = lengths[0].text
            return


_BASELINE_RESERVE = OperationConstraints().battery_reserve_ratio


def _reserve_demands(stated: StatedConstraints, text: str) -> list[RuleDemand]:
    """A battery share to land with under the baseline reserve ("land with 5% left") asks to break R5; said as an
    option ("fine to land with 5%"), it is a permission the plan does not use."""
    ratio = stated.battery_reserve_ratio
    if ratio is None or ratio >= _BASELINE_RESERVE - 1e-9:
        return []
    percent = f"{ratio * 100:g}"
    clause = next((c for _, c in clauses(text) if percent in with_digits(c)), None)
    span = " ".join((clause or f"{percent}%").split())
    return [RuleDemand(span=span, rule="R5", permission=bool(clause and PERMISSION.search(clause)))]


def _salient(
    fuzzy: list[Mention],
    uav_roles: dict[str, str],
    quantities: list[tuple[Quantity, str | None]],
    demands: list[RuleDemand],
    text: str,
) -> list[SalientSpan]:
    spans = []
    for m in fuzzy:
        if m.kind == "unknown":
            continue
        kind = {"entity": "place", "zone": "zone", "uav": "uav"}[m.kind]
        role = uav_roles.get(m.ids[0]) if m.kind == "uav" else m.role
        polarity = "excluded" if role in ("avoid", "excluded") else "wanted"
        spans.append(
            SalientSpan(
                text=text[m.start : m.end],
                start=m.start,
                kind=kind,
                ids=list(m.ids),
                role=role,
                polarity=polarity,
                assumed_from=m.assumed_from,
            )
        )
    for q, field in quantities:
        spans.append(SalientSpan(text=q.text, start=max(text.find(q.text), -1), kind="quantity", role=field))
    for d in demands:
        polarity = "wanted" if d.permission else "against_rule"
        role = f"permission:{d.rule}" if d.permission else d.rule
        spans.append(SalientSpan(text=d.span, start=text.find(d.span), kind="demand", role=role, polarity=polarity))
    return sorted(spans, key=lambda s: s.start)


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
    said = any(
        not _NOT_COMING_BACK.search(text[max(0, m.start() - 20) : m.start()]) for m in RETURN_LEG.finditer(text)
    )  # "don't come back, stay at the camp" asks for none
    return bool(said or set(mentions.origins) & set(mentions.destinations) or fuzzy_return or _back_to_named(text))


_NOT_COMING_BACK = re.compile(
    r"(?:\b(?:don't|do not|dont|no need to|never|not|without|needn't)\s+(?:\w+\s+)?|不要|别|不用|无需|不必)$"
)
# "..., then return to the logistics depot", the depot named before: back where it started.
_BACK_TO = re.compile(
    r"\b(?:return|come back|fly back|head back|go back|get back)\w* to (?:the\s+)?([^.;,，。]{3,60}?)\s*(?=[.;,，。]|$)"
    r"|(?:回到|返回到?|飞回到?)([^.;,，。;,]{2,30}?)\s*(?=[.;,，。;,]|$)"
)


def _back_to_named(text: str) -> bool:
    for m in _BACK_TO.finditer(text):
        group = 1 if m.group(1) is not None else 2
        if 0 <= text.find(m.group(group).strip()) < m.start(group):
            return True
    return False


# what makes a description an offer: a verb that gives it the task ("use the hexa", "send a camera drone"), or a task
# after it ("the light cargo quad takes 2 kg", "the thermal drone should film")
_OFFERED_BEFORE = re.compile(
    r"(?:(?<!n't )(?<!not )(?<!no )\b(?:use|using|send|with|take|have|let|get|by|deploy|dispatch|pick|choose|only)\s+"
    r"(?:(?:the|a|an|our|one of the|any)\s+)?|(?:^|[.;:!?]\s*|,\s*)(?:the|a|our)\s+|用|派|让|只用)$"
)
PARKED_UAV_RADIUS_FACTOR = 3.0  # a UAV within this many arrival tolerances of a place is one "at" it


def uavs_where_said(text: str, fuzzy: list[Mention], world: World) -> tuple[list[str], list[str]]:
    """The idle UAVs the (lower-cased) request names by where they are: (left out, offered). "a drone that is not
    parked at the depot" leaves out those at the depot; "use the drone parked at the hospital" offers those there."""
    excluded: list[str] = []
    offered: list[str] = []
    for m in fuzzy:
        waits = uavs_wait_at(text, m) if m.kind == "entity" and len(m.ids) == 1 else None
        if waits is None:
            continue
        place = world.entity_index[m.ids[0]].point
        near = [
            u.id
            for u in world.fleet
            if u.status is UAVStatus.idle
            and place.distance(Point(u.position)) <= PARKED_UAV_RADIUS_FACTOR * world.arrival_tolerance_m
        ]
        (offered if waits else excluded).extend(near)
    return list(dict.fromkeys(excluded)), list(dict.fromkeys(offered))


# UAVs described by what they carry or what they are: "the thermal drone", "the hexa", "the medical quads", "camera
# drones", "轻型货运机", "六旋翼"; each word a test on a UAV's resume (its sensors and model)
_DESCRIBED = re.compile(
    r"\b(?P<words>(?:(?:thermal|camera|lidar|winch|medical|aed|cargo|light[- ]cargo)[- ](?:camera[- ])?)+)"
    r"(?P<noun>hexa(?:copter)?s?|quad(?:copter)?s?|drones?|uavs?|ones?)\b"
    r"|\b(?P<hexa>hexa(?:copter)?s?|hexa-cargo(?: drones?)?)\b"
    r"|(?P<zh>热成像|轻型货运|医疗|摄像)(?:无人)?(?:那架|机|无人机|飞机)|(?P<zh_hexa>六旋翼)"
)
_DESCRIPTOR_TESTS: dict[str, Callable[[UAV], bool]] = {
    "thermal": lambda u: "thermal" in u.sensors,
    "camera": lambda u: "camera" in u.sensors,
    "lidar": lambda u: "lidar" in u.sensors,
    "winch": lambda u: "winch" in u.sensors,
    "medical": lambda u: "medical" in u.model or "defibrillator_bay" in u.sensors,
    "aed": lambda u: "defibrillator_bay" in u.sensors,
    "cargo": lambda u: "cargo" in u.model,
    "light cargo": lambda u: "light-cargo" in u.model,
    "hexa": lambda u: u.model.startswith("hexa"),
    "quad": lambda u: u.model.startswith("quad"),
}
_ZH_DESCRIPTORS = {
    "热成像": "thermal",
    "六旋翼": "hexa",
    "轻型货运": "light cargo",
    "医疗": "medical",
    "摄像": "camera",
}
_LACKING_AFTER = re.compile(r"\s+(?:without|with no|but no|minus)\s+(?:an?\s+|the\s+)?(thermal|camera|lidar|winch)\b")
_KEPT_HOME_AFTER = re.compile(
    r"\s*(?:free|out of (?:it|this)|home|grounded|on the ground|in reserve|back)\b|\s*(?:留着|别用|不要用|不用|不能用)"
)


# A UAV asked for without a sensor: "a drone with no camera" (privacy over homes), "one without a thermal camera", a
# description's "(no thermal)"
_WITHOUT_SENSOR = re.compile(
    r"\b(?:drones?|uavs?|quads?|hexas?|aircraft|one)\s+(?:with\s+no|without(?:\s+(?:a|an|any))?|that has no|lacking"
    r"(?:\s+(?:a|an))?)\s+(?P<sensor>thermal(?: camera)?|camera|lidar|winch)\b"
    # a remark on such drones, no request for one: "one without a camera can't help", "... is fine too"
    r"(?!\s+(?:can'?t|cannot|won'?t|will|would|is|are|also|too|works?|does|do)\b)"
    r"|\((?:no|without(?: a)?)\s+(?P<sensor_said>thermal|camera|lidar|winch)\)"
)


def uavs_described(
    text: str, world: World, left_out: list[tuple[int, int]] | None = None
) -> tuple[list[str], list[str]]:
    """The idle UAVs the (lower-cased) request names by description: (left out, offered). "no camera drones", "keep
    the thermal drone free", "热成像那架留着别用" leave them out; "use the hexa", "the light cargo quad" offer them."""
    excluded: list[str] = []
    offered: list[str] = []
    left_out = [] if left_out is None else left_out  # the spans of the descriptions left out, for the caller
    for match in _DESCRIBED.finditer(text):
        if match["zh"] or match["zh_hexa"]:
            tests = [_ZH_DESCRIPTORS[match["zh"] or match["zh_hexa"]]]
        elif match["hexa"]:
            tests = ["hexa"]
        else:
            said = re.sub(r"[- ]camera[- ]$", " camera ", match["words"].replace("-", " "))
            tests = ["light cargo"] if "light cargo" in said else []
            tests += [
                w
                for w in said.split()
                if w in _DESCRIPTOR_TESTS and w not in ("light",) and not (tests and w == "cargo")
            ]
            if match["noun"].startswith(("hexa", "quad")):
                tests.append(match["noun"][:4])
        lacking = _LACKING_AFTER.match(text, match.end())  # "a camera quad without thermal"
        fitting = [
            u.id
            for u in world.fleet
            if u.status is UAVStatus.idle
            and all(_DESCRIPTOR_TESTS[t](u) for t in tests)
            and not (lacking and _DESCRIPTOR_TESTS[lacking[1]](u))
        ]
        before = text[max(0, match.start() - 30) : match.start()]
        kept_home = _KEPT_HOME_AFTER.match(text, match.end()) and (
            match["zh"] or re.search(r"\b(?:keep|leave|hold)\W+(?:the\s+|our\s+)?$", before)
        )
        if NOT_THE_UAVS_AT.search(before) or kept_home:
            excluded.extend(fitting)
            left_out.append(match.span())
        elif (
            _OFFERED_BEFORE.search(before)
            and not _REMARKED_AFTER.match(text, match.end())
            or _PIN_AFTER.match(text[match.end() : match.end() + 40])
        ):
            offered.extend(fitting)
    for match in _WITHOUT_SENSOR.finditer(text):  # "a drone with no camera", "(no thermal)": those carrying it are out
        group = "sensor" if match["sensor"] else "sensor_said"
        sensor = match[group].split()[0]  # "thermal camera": the thermal one
        excluded.extend(u.id for u in world.fleet if u.status is UAVStatus.idle and sensor in u.sensors)
        left_out.append(match.span(group))
    return list(dict.fromkeys(excluded)), [u for u in dict.fromkeys(offered) if u not in excluded]


def without_left_out_descriptions(text: str, world: World) -> str:
    """The (lower-cased) request with the descriptions of UAVs it leaves out blanked: "keep the thermal drone free"
    asks for no thermal camera."""
    spans: list[tuple[int, int]] = []
    uavs_described(text, world, spans)
    for start, end in spans:
        text = text[:start] + " " * (end - start) + text[end:]
    return text


def uav_roles_in(text: str, mentions: list[Mention]) -> dict[str, str]:
    """Each UAV the (lower-cased) request names: pinned, excluded, reported (a remark on its state) or unaccounted."""
    found: dict[str, set[str]] = {}
    named = sorted((m for m in mentions if m.kind == "uav" and len(m.ids) == 1), key=lambda m: m.start)
    corrected: list[tuple[str, str]] = []  # (a UAV, the later one that corrects it)
    for mention in named:
        roles = found.setdefault(mention.ids[0], set())
        before, after = text[max(0, mention.start - 40) : mention.start], text[mention.end : mention.end + 40]
        left_out = _LEAVE_OUT.search(before) and _LEFT_OUT_AFTER.match(after)
        if (
            _EXCLUDE_BEFORE.search(before)
            or _EXCLUDE_AFTER.match(after)
            or left_out
            or _NOT_LOADED_ON_BEFORE.search(before)
        ):
            roles.add("excluded")
        elif _FALLBACK_BEFORE.search(before) or _FALLBACK_AFTER.match(after):
            roles.add("fallback")
        elif (
            (earlier := [m for m in named if m.end <= mention.start and m.ids != mention.ids])
            and _CORRECTION_BEFORE.search(text[max(0, mention.start - 60) : mention.start])
            and not _REMARKED_AFTER.match(after)
        ):
            roles.add("pinned")
            corrected.append((earlier[-1].ids[0], mention.ids[0]))
        elif (
            _PIN_BEFORE.search(before)
            or (_LOADED_ON_BEFORE.search(before) and not _REPORTED_AFTER.match(after))
            or MEMBERS_LISTED_BEFORE.search(text[max(0, mention.start - 60) : mention.start])
            or _PIN_AFTER.match(after)
            or _ADDRESSED.match(text, mention.end)
            and not before.strip()
            or _ITEM_BEFORE.search(before)
            and _ITEM_AFTER.match(after)
            and not _LIST_JOINER.fullmatch(
                text, max((m.end for m in named if m.end <= mention.start), default=0), mention.start
            )
        ):
            roles.add("pinned")
        elif _REPORTED_AFTER.match(after):
            # a remark, and then words that keep the UAV home: "uav_05's battery is acting up, don't send it"
            keep_home = _NOT_IT_AFTER.match(text, mention.end) or _ELSE_LATER.search(text, mention.end)
            roles.add("excluded" if keep_home else "reported")
    # "use uav_03 and uav_04 to haul it", "uav_03 and uav_04 should carry it": a UAV listed beside a pinned one,
    # with nothing of its own said after the list, is pinned too ("uav_02 out of action", "as backup", "or uav_09"
    # after it keep it unread: the agent asks)
    for group in _uav_lists(text, named):
        roles = set().union(*(found[m.ids[0]] for m in group))
        addressed = not text[: group[0].start].strip() and _addressed_a_task(text, group[-1].end)
        roles -= {"reported"}  # a remark elsewhere ("uav_01 has 95 % battery") does not unlist it
        if roles <= {"pinned"} and (addressed or roles and _LIST_GOES_ON.match(text, group[-1].end)):
            for mention in group:
                if not found[mention.ids[0]] & {"excluded", "fallback"}:
                    found[mention.ids[0]].add("pinned")
    chosen = {
        uav: "conflicting"
        if {"excluded", "pinned"} <= roles
        else next((r for r in ("excluded", "fallback", "pinned", "reported") if r in roles), "unaccounted")
        for uav, roles in found.items()
    }
    for was, now in corrected:  # superseded, unless a later correction names it again
        if was != corrected[-1][1]:
            chosen[was] = "excluded"
            chosen[now] = "pinned" if now == corrected[-1][1] else "excluded"
    # "uav_05 or uav_06, whichever has more battery", "use uav_03 or uav_04": a choice offered, one of them flies;
    # a list with a UAV left out or remarked on stays as it is
    for group in _uav_alternatives(text, named):
        ids = list(dict.fromkeys(m.ids[0] for m in group))
        if len(ids) >= 2 and {chosen[u] for u in ids} <= {"pinned", "unaccounted"}:
            chosen.update({u: "offered" for u in ids})
    # "uav_07 is nearly flat, send it to recharge": the one UAV a request names, unless left out, is the one it is
    # about when no other is pinned and the errand is the UAV's own (charge, return, repositioning).
    others = [u for u, role in chosen.items() if role in ("reported", "unaccounted")]
    cargo_origin = any(m.role == "origin" for m in mentions if m.kind == "entity")
    if len(others) == 1 and "pinned" not in chosen.values() and not cargo_origin and _OWN_ERRAND.search(text):
        chosen[others[0]] = "pinned"
    return chosen


# the words between two UAVs of one list: "uav_03 and uav_04", "uav_01, uav_02 & uav_05", "uav_01和uav_02"
_LIST_JOINER = re.compile(r"\s*(?:,\s*(?:and\s+)?|\band\b|&|和|与|及|、)\s*(?:(?:the\s+)?(?:drone|uav)\s+)?")


# what may follow a list of UAVs that all fly: the task ("to haul", "with 8 kg", "should carry", "把...运到"), or the
# end of the sentence
_LIST_GOES_ON = re.compile(
    r"\s*(?:[.;!?。；！(（]|$|(?:to|for|with|from|should|must|will|can|could|may|shall|please|together|both|each|then)\b|"
    r"(?:carry|carries|fly|flies|take|takes|deliver|delivers|haul|hauls|bring|brings|go|goes|share|shares|split|"
    r"splits|lift|lifts|move|moves|film|films|photograph|photographs|inspect|inspects)\b|"
    r"把|运|送|去|飞|执行|负责|分装|分头|一起|共同|来|拍)"
)


# what, after "uav_05 and uav_06:", says the UAVs are not to fly: a remark on their state, or a negation
_REMARK_AFTER_HEAD = re.compile(
    r"\b(?:not|don't|dont|never|no|busy|grounded|maintenance|charging|low|leave|reserved|broken|down|unavailable|"
    r"standby|spare|backup|out|offline|damaged|faulty|excluded|except)\b|不|别|勿|维修|充电|备用|故障|没电"
)


def _addressed_a_task(text: str, end: int) -> bool:
    """The words after a list of UAVs at the head of a request ("uav_05 and uav_06: one AED each ...") give them a
    task, not a remark ("uav_01 and uav_02: busy.", "...: do not use them")."""
    if not (m := _ADDRESSED.match(text, end)):
        return False
    clause = re.split(r"[.;!?。；！]", text[m.end() :], maxsplit=1)[0]
    return not _REMARK_AFTER_HEAD.search(clause)


_OR_JOINER = re.compile(r"\s*(?:,\s*)?(?:\bor\b|/|或者|或|还是)\s*(?:(?:the\s+)?(?:drone|uav)\s+)?")


def _uav_alternatives(text: str, named: list[Mention]) -> list[list[Mention]]:
    """Runs of UAV mentions joined by "or" (the last join; "uav_03, uav_04 or uav_05"), two or more long."""
    runs: list[list[Mention]] = []
    ordered = sorted(named, key=lambda m: m.start)
    for mention in ordered:
        joined = runs and (
            _OR_JOINER.fullmatch(text, runs[-1][-1].end, mention.start)
            or _LIST_JOINER.fullmatch(text, runs[-1][-1].end, mention.start)
        )
        if joined:
            runs[-1].append(mention)
        else:
            runs.append([mention])
    return [
        run
        for run in runs
        if len(run) >= 2 and any(_OR_JOINER.fullmatch(text, a.end, b.start) for a, b in zip(run, run[1:]))
    ]


def _uav_lists(text: str, named: list[Mention]) -> list[list[Mention]]:
    """Runs of UAV mentions joined only by list words, two or more long."""
    runs: list[list[Mention]] = []
    for mention in sorted(named, key=lambda m: m.start):
        if runs and _LIST_JOINER.fullmatch(text, runs[-1][-1].end, mention.start):
            runs[-1].append(mention)
        else:
            runs.append([mention])
    return [run for run in runs if len(run) >= 2]


# Errands of the UAV itself, not of a cargo: charging, repositioning (a return belongs to a cargo flight as often).
_OWN_ERRAND = re.compile(
    r"\b(?:re)?charg\w*|\btop (?:it |her )?up\b|\brepositi\w*|\brelocat\w*|"
    r"\b(?:move|send|ferry|get)\b[^.;]{0,30}?\b(?:over|across) to\b|\bhold (?:there|position)\b|"
    r"充电|充个电|挪到|调到|转场|待命"
)


def is_repositioning(text: str, payload_kg: float | None) -> bool:
    """A UAV sent somewhere with no cargo ("send uav_09 over to the fire station", "把uav_03挪到地铁站待命"): a
    positioning flight, which needs only the UAV and where it goes."""
    return payload_kg is None and bool(_REPOSITION.search(text))


_REPOSITION = re.compile(
    r"\brepositi\w*|\brelocat\w*|\b(?:move|send|ferry|get)\b[^.;]{0,30}?\b(?:over|across|out) to\b|"
    r"\bpark (?:it|her) (?:there|at)\b|\b(?:sit|hold|wait|stand by) there\b|挪到|调到|转场|待命"
)


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
