"""The team a request needs, read from its words: split load, parallel sites, coverage, roles by capability, relay.

A request that one UAV can fly reads None. A team is read from explicit cues ("two drones", "split the load",
"both within 2 minutes", "one films while another delivers", "relay it at X", "两架", "分别", "接力", "一架...另一架")
or implied by the world: a divisible cargo heavier than every idle UAV lifts is a split load, and sensors and a
payload no idle UAV has together are two roles; the sketch says what implied it. Words that refuse a team ("don't
split it", "one drone only", "只用一架") make a single-UAV request, whatever the mass.

Places and their roles, masses, deadlines and UAVs come from the readers the gates use (`mentions`, `quantities`,
`stated`); this module adds only the words that call for a team and those that ask for a sensor. Offsets are into
the request as the other readers see it: whitespace runs as one space, lower-cased.
"""

from __future__ import annotations

import math
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ir.fidelity import StatedConstraints
from ir.model import DELIVERING_ROLES, OBSERVING_ROLES, Intent, SubTaskRole
from language.defaults import CARGO_INTENTS, SITE_VISITS
from language.mentions import Mention, find_mentions
from language.polarity import clauses
from language.quantities import Quantity, find_quantities, is_deadline, read_quantities, with_digits
from language.stated import (
    MEMBERS_LISTED_BEFORE,
    demands_marking_crossed,
    normalised,
    stated_constraints,
    uav_roles_in,
    without_left_out_descriptions,
)
from tools.items import is_whole_items, whole_items
from tools.world import UAVStatus, World

TeamKind = Literal["split_load", "parallel_sites", "coverage", "roles", "relay"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TeamCue(_Frozen):
    """Words that call for a team, or the fact of the world that implies one."""

    kind: TeamKind | Literal["team_size"] = Field(description="the team need they state, or a number of UAVs")
    text: str = Field(description="the request's words; for an implied need, the words it rests on")
    start: int = Field(description="offset in the request (whitespace runs as one space, lower-cased)")
    implied: bool = Field(default=False, description="the world implies it; the words do not say it")
    by: str = Field(default="", description="what implied it (a fact of the world); '' for a stated cue")
    uavs: int | None = Field(default=None, description="the number of UAVs a team_size cue names, where it does")


class SubTaskSketch(_Frozen):
    """One sub-task as the words give it, in the IR's sub-task fields (ir.model.SubTask); None or empty where the
    words leave a field to the team tool."""

    id: str
    role: SubTaskRole
    origin: str | None = None
    destination: str | None = None
    waypoints: list[str] = Field(default_factory=list, description="places to pass in order")
    payload_kg: float | None = Field(default=None, description="the mass it carries (all of it where split)")
    split: bool = Field(default=False, description="its payload is shared among several UAVs")
    deadline_sec: float | None = None
    required_sensors: list[str] = Field(default_factory=list)
    after: list[str] = Field(default_factory=list, description="sub-tasks that must end first (a relay's legs)")
    uavs: list[str] = Field(default_factory=list, description="UAVs the request names for it")
    item_kg: float | None = Field(default=None, description="its payload is whole items of this mass")


class TeamSketch(_Frozen):
    """A request's team need: its kind, the sub-tasks, the fewest UAVs the words and the idle fleet's capacity ask
    for, every cue that said so, and what the reading assumed where the words leave a fact open."""

    kinds: list[TeamKind]
    subtasks: list[SubTaskSketch]
    min_uavs: int = Field(ge=2)
    members: list[str] = Field(default_factory=list, description="UAVs the request names to fly, in any sub-task")
    cues: list[TeamCue]
    notes: list[str] = Field(default_factory=list)

    @property
    def implied(self) -> bool:
        """No word asks for the team: the world implies it."""
        return all(c.implied for c in self.cues)

    def need(self) -> str:
        """The team need in words, quoting the request (or naming the fact of the world that implies it)."""
        said = "; ".join(dict.fromkeys(f"'{c.text}'" + (f" ({c.by})" if c.by else "") for c in self.cues))
        kinds = ", ".join(k.replace("_", " ") for k in self.kinds)
        return f"the request needs a team of at least {self.min_uavs} UAVs ({kinds}): {said}"

    def stated_size(self) -> int | None:
        """How many UAVs the words ask for ("two drones", "a second drone", "三架"); None when they give no number."""
        return max((c.uavs for c in self.cues if c.kind == "team_size" and c.uavs), default=None)

    def uav_sites(self) -> dict[str, str]:
        """Each UAV the words name for a sub-task, and the site it serves ("uav_05 takes it to A and uav_06 to B",
        "A by uav_05", "uav_07 films X"): the member that UAV flies must serve that site."""
        return {uav: task.destination for task in self.subtasks if task.destination for uav in task.uavs}

    @property
    def sites(self) -> list[str]:
        """The places the team serves, in order: the sub-tasks' destinations but a relay's hand-off place."""
        hubs = {t.destination for t in self.subtasks if any(t.id in s.after for s in self.subtasks)}
        return list(dict.fromkeys(t.destination for t in self.subtasks if t.destination and t.destination not in hubs))


# --- the words ------------------------------------------------------------------------------------------------

_UAV_NOUN = r"(?:drones?|uavs?|aircraft|quad(?:copter)?s?|copters?|hexas?)"
_UAV_NOUNS = r"(?:drones|uavs|aircraft|quads|quadcopters|copters|hexas)"
_NUMBER_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "both": 2, "pair": 2, "couple": 2}
_NUMBER_WORDS |= {"两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6}

# "two drones", "3 UAVs", "both drones", "a pair of drones", "split it between two", "as many drones as it takes",
# "两架", "三台无人机", "几架". Not "two other drones" (drones on other errands): see also _taking_part.
_TEAM_SIZE = re.compile(
    r"\b(?P<en>two|three|four|five|six|[2-9]|both|several|multiple|a (?:pair|couple|few|team|fleet) of)\s+"
    r"(?:of\s+)?(?:(?:the|our|your|those|these)\s+)?(?:(?!other\b|spare\b|backup\b|standby\b|reserve\b)\w+\s+){0,2}?"
    rf"{_UAV_NOUNS}\b"
    r"|\b(?:split|divide|share|spread)\w*\b[^.;,]{0,40}?\b(?:between|among|across|over)\s+"
    r"(?P<split_n>two|three|four|five|[2-9]|several|multiple|them|the drones|as many)\b"
    rf"|\bas many {_UAV_NOUNS} as\b"
    r"|(?P<zh>[两二三四五六几多2-9])\s*架|(?P<zh_tai>[两二三四五六几多2-9])\s*台无人机"
)

# "a second drone", "while another films", "while a cargo drone drops ...", "one ... the other", "另一架", "第二架": a
# second UAV with a task of its own
# (not "one after the other", "one by one"; a standby or contingency drone: see _taking_part).
_SECOND_UAV = re.compile(
    rf"\b(?:a|the) second {_UAV_NOUN}\b|\bwhile (?:another|the other|a second|a (?:\w+ )?{_UAV_NOUN})\b|"
    r"\bone\b(?!\s+(?:after|by|at a time|or (?:the )?other|way or))"
    rf"(?:\s+{_UAV_NOUN}|\s+of (?:them|the drones))?[^.;!?]{{1,120}}?\b(?:another|the other|a second)\b|"
    rf"\banother {_UAV_NOUN}\s+(?:takes? over|continues?|picks? (?:it )?up|flies the (?:last|second|final|rest))|"
    r"另一架|另外一架|第二架"
)

# "one drone per site", "a drone each", "每个点一架": a UAV for every site
_ONE_PER_SITE = re.compile(
    rf"\bone {_UAV_NOUN} (?:per|for each|for every|to each|at each|each) (?:site|place|point|location|stop|spot)\b|"
    rf"\b(?:a|one) {_UAV_NOUN} (?:each|apiece)\b|\beach (?:site|place|point) (?:gets|with) (?:its own|a|one) {_UAV_NOUN}|"
    r"每个(?:点|地点|检查点|站点)一架|一个点一架|一点一架"
)

# One UAV said not to be enough: "more than any one drone can lift", "too far for one drone", "一架飞不到",
# "单架无人机运不动", "don't send just one drone".
_ONE_NOT_ENOUGH = re.compile(
    rf"\btoo (?:heavy|much|far|big|long) for (?:just )?(?:one|a single|any single|a|any one) {_UAV_NOUN}|"
    rf"\bmore than (?:any|a single|one)(?: one)?(?: of (?:our|the|your))? {_UAV_NOUN}\b|"
    rf"\bno (?:single |one )?{_UAV_NOUN} (?:can|could) (?:lift|carry|take|make|reach|do|manage|fly)|"
    rf"\b(?:one|a single|any single) {_UAV_NOUN} (?:can't|cannot|couldn't|won't|will not|can not) |"
    rf"\b(?:one|a single) {_UAV_NOUN} (?:is not|isn't|won't be|will not be) enough\b|"
    rf"\b(?:don't|do not|dont|never)\s+(?:send|use|fly|dispatch|rely on)\s+(?:just|only)\s+(?:one|a single)\s+{_UAV_NOUN}|"
    r"(?:一架|单架|一台|单台)(?:无人机)?(?:都|也)?(?:装不下|运不动|带不动|拿不动|吊不动|飞不到|到不了|飞不了|飞不过去|不够|"
    r"搞不定)"
)
_FAR = re.compile(r"\bfar|reach|make it|飞不到|到不了|飞不了|飞不过去")

# Words that refuse a team: "one drone only", "just one drone", "a single drone", "don't split it", "只用一架",
# "one drone for both stops"; not "just one drone per site" (one each: a team), see _refuses_team.
_SINGLE_UAV = re.compile(
    rf"\b(?:only|just)\s+(?:one|a single|1)\s+{_UAV_NOUN}|\b(?:one|a single|1)\s+{_UAV_NOUN}\s+only\b|"
    rf"\b(?:a|one)\s+single\s+{_UAV_NOUN}|\bsingle[- ]{_UAV_NOUN}|"
    rf"\b(?:one|a single|1|the same)\s+{_UAV_NOUN}\s+(?:for|to (?:do|cover|visit|serve|handle)|does|covers|visits|"
    r"serves|handles)\s+(?:both|all|every|them all|the whole|the entire)\b|"
    r"\b(?:don't|do not|dont|never|no need to|please don't|must not|mustn't|shouldn't|should not)\s+(?:\w+\s+)?"
    r"(?:split|divide|break up|share out|spread)\b|\bno splitting\b|\bin one piece\b|"
    r"\bkeep (?:it|the load|the cargo|them|everything) (?:all )?together\b|"
    r"一架就(?:够|行|可以)|只(?:用|派|要|需要?|能用)一架|就(?:用|派)一架|单架|"
    r"(?:不要|别|不用|无需|不必|不能)(?:拆分|拆开|分开|分装|拆|分批|分成)"
)
# "no single drone can lift it", "don't send just one drone" ask for a team
_NO_BEFORE = re.compile(
    r"\b(?:no|not|none|nor)\s*$|\b(?:don't|do not|dont|never)\s+(?:send|use|fly|dispatch|rely on)\s+$"
)
_CANNOT_AFTER = re.compile(r"\s*(?:can't|cannot|couldn't|won't|can not|is not enough|isn't enough)")
# "just one drone per site", "每个地点只用一架": one UAV each, several in all.
_PER_SITE_AFTER = re.compile(
    r"\s*(?:\w+\s+)?(?:per|for each|for every|to each|at each|each|a)\s+"
    r"(?:site|stop|place|location|point|patient|target|destination|address|casualty)\b|\s*(?:无人机)?各"
)
_PER_SITE_BEFORE = re.compile(r"每(?:个|一个|处|一处)?(?:地点|地方|站点|点|处|现场|目标|病人)?(?:各|都)?$")

# "split the load", "divide it up", "share it out", "分装", "拆分", "分头": a load or a set of sites divided (not
# "split the route", "dividing the trip into legs", "split second", "divide its altitude band").
_SHARED = (
    r"(?:it|them|(?:the|this|that|our|your|all the) (?:\w+ ){0,2}?(?:load|loads|cargo|payload|mass|weight|sandbags|"
    r"supplies|shipment|delivery|deliveries|sites|points|stops|inspections|work|job|targets|boxes|parcels|bags|"
    r"packages|kilos|kg)|[\d.]+ ?(?:kg|kilos?|kilograms?)(?: of \w+)?)"
)
_SPLIT = re.compile(
    rf"\b(?:split|divid(?:e|es|ed|ing)|share|shared|spread|distribut\w*)(?: up)? {_SHARED}(?: up| out)?"
    r"(?=\s*(?:$|[.;,!?:)]|up\b|out\b|between|among|across|over|evenly|equally|in half|and\b|so\b|into (?:two|three|"
    r"four|[2-9]|several) (?:loads|batches|lots|shares|parts|portions|halves|piles|bundles)))|"
    r"\b(?:in|into) (?:two|three|four|[2-9]) (?:loads|batches|lots|shares|parts)\b|"
    r"\beach (?:drone|uav) (?:takes|carries|gets|does|covers)\b|"
    r"分装|拆分(?!航线|路线|航段|行程|高度)|分成(?:[两二三四五六几多2-9])(?:份|批|包|袋|组|部分|堆)|分开运|分批|分担|分头|"
    r"分摊|各(?:带|运|拿|装|负责)"
)

# "both within 2 minutes", "one to X and one to Y", "... and another to Y", "at the same time", "one drone per site",
# "分别", "同时", "各送", "两边都要在2分钟内送到"; not a bare "both" or "each" ("inspect both the gate and the station").
_PARALLEL = re.compile(
    r"\b(?:both|each)(?: of them)?\s+(?:must |need to |needs to |should |have to |has to )?(?:be )?"
    r"(?:(?:delivered|reached|served|there|arrive|arriving)\s+)?(?:within|in under|in less than|inside|no later than)\b|"
    r"\bat (?:the same|one) time\b|\bat once\b|\bsimultaneous\w*|\bin parallel\b|\bconcurrent\w*|"
    rf"\b(?:one|a|an?other|a separate) {_UAV_NOUN} (?:per|for each|for every|to each|at each|each) "
    r"(?:site|stop|place|location|point|patient|target|destination|address|casualty)\b|"
    rf"\b(?:each|every) (?:site|stop|place|location|patient|target)s? (?:gets?|needs?|has) (?:its|their) own {_UAV_NOUN}|"
    r"\bone(?: [a-z]+){0,2}? (?:to|at|for) [^.;]{1,80}?(?:,| and|, and|;) (?:one|another|the other)(?: [a-z]+)? "
    r"(?:to|at|for)\b|"
    r"\band (?:another|a second)(?: one)? (?:to|at|for)\b|"
    r"分别|同时|各(?:送|派|一|自)|两(?:边|处|地|个地方)都(?:要|得|需要)?[^，。；,;]{0,8}?(?:内|送到|到达|赶到)|"
    r"都要在?[^，。；,;]{0,8}?内|每(?:个|一个|处)?(?:地点|地方|站点|点|处|现场)(?:各|都)?只?(?:用|派|安排|需要)?一架"
)

# A team cue said of drones that do not fly this task: a choice of one among several ("the best of the three
# drones", "any of the two drones", "三架无人机中挑一架"), drones busy elsewhere ("two drones are already flying near
# there", "两架无人机都在充电"), a standby or contingency drone ("keep a second drone on standby", "if it fails, send a
# second drone", "万一失败").
_CHOICE_BEFORE = re.compile(
    r"(?:\b(?:best|any|either|one|none|neither|which|whichever|fastest|closest|nearest|cheapest|quickest|"
    r"strongest|biggest|largest)\s+(?:one\s+)?of|\b(?:pick|choose|select|chose)\w*\s+(?:\w+\s+){0,3}?"
    r"(?:from|among|between|of|out of))\s+(?:(?:the|our|your|those|these|all)\s+)?$"
)
_ELSEWHERE_AFTER = re.compile(
    r"\s*(?:[\w-]+\s+){0,3}?(?:are|were|is|'re)\s+(?:(?:already|currently|still|all|both|now)\s+)*(?:flying|"
    r"airborne|in the air|busy|charging|out\b|parked|grounded|down\b|unavailable|offline|nearby|near\b|around\b|"
    r"operating|working|on (?:a |another |their )?(?:mission|task|job|way)|in (?:maintenance|use|the area)|"
    r"under maintenance)|\s*(?:on|in) (?:standby|reserve)|\s*(?:as|for) (?:a |the )?(?:backup|back-up|standby|"
    r"reserve|spare|fallback)|\s*(?:ready|standing by|waiting|nearby|near there|in the area)\b|"
    r"(?:无人机)?(?:中|里|之中|当中)(?:挑|选|任选|找|随便|任意|派)|(?:无人机)?(?:都|也)?(?:在|正在)(?:充电|维修|忙|执行|飞行|使用)|"
    r"(?:无人机)?(?:待命|备用|备份)"
)
_CONTINGENCY = re.compile(
    r"\bif (?:it|that|this|they|one|the \w+|uav[_ -]?\w+)(?: \w+)? (?:fails?|breaks?|crash\w*|can't|cannot|couldn't|"
    r"doesn't|does not|isn't|is not|is busy|are busy|is unavailable|goes down|runs? (?:out|low)|aborts?|gets? stuck)|"
    r"\bin case\b|\bshould (?:it|that|the \w+) fail|\botherwise\b|\bas (?:a )?(?:backup|back-up|fallback|reserve)|"
    r"\b(?:on|in) (?:standby|reserve)\b|\bstandby\b|\bstand(?:ing)? by\b|\bbackup (?:drone|uav)|"
    r"\bif (?:needed|necessary|required|need be)\b|"
    r"万一|以防|备用|待命|备份|如果[^，。；]{0,15}?(?:失败|故障|坏了|出问题|不行|没电|在充电|忙|不可用)|的话就用|"
    r"(?:失败|故障)(?:的话|了)?(?:就|再)"
)
_SENTENCE_END = re.compile(r"(?<!\d)\.(?!\d)|[;!?。；！？]")

# A place to keep away from, said after it ("both the school and the park must be avoided", "学校和公园都要避开"): the
# words right after a list of places that starts a clause.
_KEPT_AWAY_AFTER = re.compile(
    r"\s*(?:(?:both|all|each|too|also)\s+)?(?:must|should|is to|are to|has to|have to|needs? to|will|shall)?\s*"
    r"(?:be|stay|remain)\s+(?:avoided|bypassed|skirted|kept clear of|kept away from|off[- ]limits|out of bounds|no-go)|"
    r"\s*(?:(?:both|all)\s+)?(?:are|is) (?:off[- ]limits|out of bounds|no-go|to be avoided)|"
    r"\s*(?:都|也)?(?:要|得|必须|需要|请)?(?:避开|绕开|绕过|远离|避让)"
)
_LIST_GAP = re.compile(r"\s*(?:,\s*and|,|and|or|&|、|和|与|及|以及|as well as)?\s*(?:the\s+)?")
_LIST_START = re.compile(
    r"(?:^|[.;:,!?，。；：！？]|\b(?:and|but|while|also|plus|though|although))\s*(?:(?:both|all|either|neither|also)\s+)?"
    r"(?:of\s+)?(?:the\s+)?$"
)

# "relay it", "hand it off at X to a second drone", "a second drone flies the last leg", "接力", "换另一架".
_RELAY = re.compile(
    r"\brelay\w*(?!\s+(?:station|tower|mast|antenna|node|hut|cabinet|box|building|room|site)s?\b)|"
    r"\bhand(?:s|ing)?(?:-| )?(?:it |them |the \w+ )?(?:off|over) (?:to|at)\b[^.;]{0,40}?"
    rf"\b(?:another|a second|the second|the next|a fresh|the other) {_UAV_NOUN}|"
    rf"\b(?:a|the|another) (?:second|fresh|other) {_UAV_NOUN}\b[^.;]{{0,50}}?\b(?:leg|rest|remainder|stretch|way)\b|"
    r"\bswap (?:drones|uavs)\b|\bchange (?:drones|uavs)\b|"
    r"接力|中继|换(?:另|另外)?一架|交给另一架|(?:后|下|第二)半程|转交给?(?:另一架|第二架)"
)

# Where a relay changes UAVs: the place after "hand off at", "swap drones at"; before "交接", "接力" ("在X交接").
_HUB_BEFORE = re.compile(
    r"(?:\brelay\w*|\bswap\w*|\bchange\w*|\bswitch\w*|\bhand(?:-| )?(?:it |the \w+ )?(?:off|over)|\btransfer\w*|"
    r"\bmeet\w*)(?:\s+(?:drones|uavs|over|it|them))?\s+(?:at|in|on)\s+(?:the\s+)?$"
)
_HUB_AFTER = re.compile(r"^\s*(?:交接|接力|中转|换(?:另|另外)?一架|换机|转交)")

# Observing: "film X", "photos of X", "a thermal camera over X", "在X上空拍摄".
_OBSERVE = re.compile(
    r"\bfilm\w*|\bfootage\b|\bvideo\w*|\bphotos?\b|\bphotograph\w*|\bpictures?\b|\bimag(?:e|es|ery|ing)\b|"
    r"\bcameras?\b|\bthermal\b|\binfra-?red\b|\brecord\w*|\blive (?:feed|stream)\b|\bwatch\w*|\bmonitor\w*|"
    r"\boverwatch\b|\bkeep an eye on\b|(?<!all )\beyes on\b|\baerial (?:view|shots?|look)\b|\bsurvey\w*|\bscan\w*|"
    r"拍摄|拍照|航拍|录像|摄像|拍完|拍|监视|监控|盯着|观察|扫描|热成像|红外"
)

# The place just named, not named again: "film the site", "photos of the drop-off", "拍摄现场", or no place at all.
_SAME_PLACE_AFTER = re.compile(
    r"\s+(?:of |over |at )?(?:the (?:site|scene|drop(?:-?off)?(?: point| site)?|delivery(?: point| site)?|destination|"
    r"place|spot|location|handover)\b|it\b)|现场|送货现场|目的地|"
    r"\s*(?:[.;!。；！]|$)"  # "同时拍摄。", "and another films.": filming with no object films the one site
)

# Words that move a cargo (not "send a drone to film X": a UAV is sent on every errand).
_CARGO_VERB = re.compile(
    r"\bdeliver\w*|\bbring\w*|\bbrought\b|\bcarr(?:y|ies|ied|ying)\b|\bdrop(?:s|ped|ping)? (?:\w+ )?off\b|\bship\w*|"
    r"\btransport\w*|\bhaul\w*|送到|送过去|送去|运到|运过去|运送|配送|递送|捎"
)

# A UAV named as the subject of its task ("uav_07 films", "uav_09 drops off the tools", "uav_07拍摄"): one member.
_MEMBER_VERB_AFTER = re.compile(
    r"\s*(?:will |should |can |to |is to |then )?(?:films?|filming|shoots?|watch\w*|photograph\w*|records?|"
    r"deliver\w*|brings?|carr(?:y|ies)|drops?|takes?|flies|fly|picks?|covers?|inspects?|handles?|goes|"
    r"(?:从[^,。;，；]{1,15}?)?(?:负责|拍|送|运|去|飞))"
)

_ALTERNATIVES = re.compile(r"\bor\b|\beither\b|或")

# The sensors a task asks for: a camera to film, a thermal camera, a defibrillator bay for an AED, a winch.
SENSOR_WORDS: dict[str, str] = {
    "thermal": r"\bthermal (?:cameras?|imag\w*|sensors?|scan\w*|views?|drones?|footage|pictures?|photo\w*|shots?|video\w*|"
    r"survey\w*|inspection\w*|look)|\binfra-?red\b|\bir (?:cameras?|cam|checks?|scans?|sweeps?|imag\w*|sensors?)\b|"
    r"\bheat (?:signatures?|map\w*)|热成像|红外",
    "camera": r"\bcamera\w*|\bfilm\w*|\bfootage\b|\bvideo\w*|\bphotos?\b|\bphotograph\w*|\bpictures?\b|\bimagery\b|"
    r"\blive (?:feed|stream)\b|(?<!all )\beyes on\b|\baerial (?:view|shots?|look)\b|摄像|拍摄|拍照|航拍|录像|拍完|视频|照片",
    "defibrillator_bay": r"\baeds?\b|\bdefib\w*|除颤",
    "winch": r"\bwinch\w*|\blower\w* (?:it|them|(?:a|an|the) (?:[\w.]+ ){0,3}?\w+) (?:down )?on a (?:line|rope|cable|tether)|"
    r"\bhoist\w*|绞盘|绞车|吊放",
    "lidar": r"\blidar\b|\blaser scan\w*|激光雷达",
}
_SENSOR_PATTERNS = {sensor: re.compile(pattern) for sensor, pattern in SENSOR_WORDS.items()}
CARGO_SENSORS = ("defibrillator_bay", "winch")  # what the cargo needs goes to the UAV that carries it
# Cargo equipment a one-UAV request asks for by name ("a drone with a winch", "winch it down", "the drone with the
# defibrillator bay"); an AED alone is cargo any UAV that lifts it may carry (docs/fleet.md).
_EQUIPMENT_ASKED = {
    "winch": _SENSOR_PATTERNS["winch"],
    "defibrillator_bay": re.compile(
        r"\b(?:defibrillator|defib|aed) (?:bay|compartment|mount|holder)|除颤(?:仪)?(?:舱|仓|挂架|挂载)"
    ),
}

# One thing that cannot be divided: "a crate of machine parts (9 kg)", "one 8 kg casting", "6公斤的发电机".
_ONE_PIECE = re.compile(
    r"\b(?:a|an|one|single)\s+(?:[\d.]+\s*(?:kg|kilos?|kilograms?)\s+)?(?:\w+\s+)?(?:crate|box|case|parcel|package|"
    r"container|unit|piece|device|machine|engine|casting|pallet|drum|cylinder|bag|battery|pump|generator|motor)\b"
    r"|(?<!公斤)(?<!千克)(?<![\d.]斤)一(?:个|箱|台|件|只|套|桶|部|袋|包)|(?:发电机|电动机|电机|马达|水泵|机器|仪器|设备|铸件)(?!燃油|用油|的?燃料|的?油)"
    r"|整(?:箱|件|台)"
)

# A negation just before a team cue, within its clause: "no need for two drones", "不用两架".
_NEGATED = re.compile(
    r"(?:\b(?:don't|do not|dont|no need (?:for|to)|no|not|never|without|needn't|shouldn't|mustn't|rather than|"
    r"instead of)\b[^,.;]{0,20}|不要|别|不用|无需|不必|不需要|用不着|没必要)\s*$"
)


# A sensor said not to be needed, in its own phrase: "no camera needed", "without a camera", "不用拍摄"; not a
# negation of something else before it ("not a drill - AEDs ...").
_SENSOR_NEGATED = re.compile(
    r"(?:\b(?:no|without|don't need|do not need|no need for|no need to|needn't|not needing)\s+(?:a |an |any |the )?"
    r"|(?:不用|不要|不需要|无需|不必|别)\s*)$"
)


def sensors_in(text: str) -> list[str]:
    """The sensors the (lower-cased) words ask for, in SENSOR_WORDS' order; a thermal camera is no plain camera, and
    an observing sensor said not to be needed ("no camera needed", "不用拍摄") is not asked for (a cargo sensor is
    the cargo's: "not a drill - AEDs to ..." still needs the bay)."""
    found = []
    for sensor, pattern in _SENSOR_PATTERNS.items():
        matches = list(pattern.finditer(text))
        if sensor not in CARGO_SENSORS:
            matches = [m for m in matches if not _SENSOR_NEGATED.search(text[max(0, m.start() - 20) : m.start()])]
        if matches:
            found.append(sensor)
        text = pattern.sub(" ", text)
    return found


class _Words:
    """What the request says, read once: its places with their roles, UAVs, masses, deadlines, and the team cues
    found so far."""

    def __init__(self, instruction: str, world: World, stated: StatedConstraints):
        self.text = text = normalised(instruction)
        self.world, self.stated = world, stated
        self.sensor_text = without_left_out_descriptions(text, world)  # "keep the thermal drone free" asks no thermal
        self.intent = stated.intent or Intent.delivery
        mentions = find_mentions(text, world)
        demands_marking_crossed(text, world, mentions)  # a place named as what a rule break would cross is no site
        self.places: list[Mention] = [
            m
            for m in mentions
            if m.kind == "entity" and len(m.ids) == 1 and m.role not in ("avoid", "landmark", "crossed")
        ]
        uav_roles = uav_roles_in(text, mentions)
        self.uavs_named = [  # every UAV named and not left out, in order: those a site is given to come from here
            m for m in mentions if m.kind == "uav" and len(m.ids) == 1 and uav_roles.get(m.ids[0]) != "excluded"
        ]
        self.members = [  # UAVs named to fly: pinned, the subject of a task ("uav_07 films"), or listed as the team
            m
            for m in mentions
            if m.kind == "uav"
            and len(m.ids) == 1
            and (
                uav_roles.get(m.ids[0]) == "pinned"
                or (
                    uav_roles.get(m.ids[0]) == "unaccounted"
                    and bool(
                        _MEMBER_VERB_AFTER.match(text, m.end)
                        or MEMBERS_LISTED_BEFORE.search(text[max(0, m.start - 60) : m.start])
                    )
                )
            )
        ]
        digits = with_digits(text)
        in_digits, in_text = find_quantities(digits), read_quantities(text)  # the same quantities, in order
        self.masses = [q for q in in_text if q.dimension == "mass" and q.value > 0]
        self.deadlines = [t for d, t in zip(in_digits, in_text) if is_deadline(d, digits) and d.value > 0]
        self.idle = [u for u in world.fleet if u.status is UAVStatus.idle]
        self.cues: list[TeamCue] = []

    def found(self, pattern: re.Pattern[str]) -> list[re.Match[str]]:
        """The pattern's matches that no negation in their clause turns round."""
        return [m for m in pattern.finditer(self.text) if not self._negated(m.start())]

    def _negated(self, start: int) -> bool:
        clause_start = max((s for s, _ in clauses(self.text) if s <= start), default=0)
        return bool(_NEGATED.search(self.text[max(clause_start, start - 30) : start]))

    def cue(self, kind: TeamKind | Literal["team_size"], matches: list[re.Match[str]], uavs: int | None = None) -> None:
        for match in matches:
            self.cues.append(TeamCue(kind=kind, text=match.group(0).strip(), start=match.start(), uavs=uavs))

    def first(self, role: str) -> str | None:
        return next((m.ids[0] for m in self.places if m.role == role), None)

    def sensors(self, for_cargo: bool) -> list[str]:
        """The sensors the request asks for: those its cargo needs, or those its observing needs."""
        return [s for s in sensors_in(self.sensor_text) if (s in CARGO_SENSORS) == for_cargo]

    def member_ids(self) -> list[str]:
        return list(dict.fromkeys(m.ids[0] for m in self.members))


def read_team(instruction: str, world: World, stated: StatedConstraints | None = None) -> TeamSketch | None:
    """The team the request needs (None: one UAV can do what it asks). `stated` is the request's reading by
    `stated_constraints`, where the caller has it already."""
    return _team_of(_Words(instruction, world, stated or stated_constraints(instruction, world)))


def _team_of(words: _Words) -> TeamSketch | None:
    if _refuses_team(words.text):
        return None
    sizes = _team_sizes(words)
    second = _taking_part(words, _SECOND_UAV)
    not_enough = words.found(_ONE_NOT_ENOUGH)
    relay, splits, parallel = words.found(_RELAY), words.found(_SPLIT), words.found(_PARALLEL)
    asked = bool(sizes or second or not_enough)
    cargo = words.stated.payload_kg is not None or bool(_CARGO_VERB.search(_OBSERVE.sub(" ", words.text)))
    observed = _observed_place(words)
    visiting = words.intent in SITE_VISITS or (bool(words.found(_OBSERVE)) and not cargo)

    if relay or (any(_FAR.search(m.group(0)) for m in not_enough) and _hub(words)):
        words.cue("relay", relay or not_enough)
        return _relay(words, sizes)
    if observed is not None and cargo and (second or sizes):
        words.cue("roles", second or words.found(_OBSERVE)[:1])
        return _roles(words, observed, sizes)
    origin, sites = _origin_and_sites(words)
    if len(sites) >= 2 and not visiting and (parallel or asked):
        words.cue("parallel_sites", parallel or second or not_enough)
        return _parallel(words, origin, sites, sizes)
    origin, sites = _origin_and_sites(words, stops=True)
    if len(sites) >= 2 and visiting and (per_site := words.found(_ONE_PER_SITE)):
        words.cue("team_size", per_site, len(sites))  # "one drone per site": as many UAVs as sites, each its own
        sizes, asked = [*sizes, len(sites)], True
    if len(sites) >= 2 and visiting and (splits or parallel or asked):
        words.cue("coverage", splits or parallel or second or not_enough)
        return _coverage(words, origin, sites, sizes)
    if visiting and not cargo and observed is not None and len(sites) <= 1 and (watchers := _watching_size(words)):
        # "send two drones to film the crash", "have uav_07 and uav_08 film the flood site": several watch one site
        words.cue("coverage", second or words.found(_OBSERVE)[:1])
        return _observers(words, observed, watchers)
    if cargo and (splits or asked or len(words.stated.uav_shares_kg) >= 2):
        words.cue("split_load", splits or not_enough or second)
        return _split_load(words, sizes)
    if observed is not None and cargo and _asks_to_observe(words) and (heavy := _heavier_than_every_idle_uav(words)):
        # "get 6 kg of sandbags there and film it with a camera drone": a camera, and a load shared among others
        words.cues.append(heavy)
        words.cue("roles", words.found(_OBSERVE)[:1])
        return _roles(words, observed, sizes)
    if observed is not None and cargo and _asks_to_observe(words) and _named_member_cannot_observe(words):
        # "film X while uav_09 drops the tools at Y": uav_09 has no camera, so another UAV films
        words.cue("roles", words.found(_OBSERVE)[:1])
        return _roles(words, observed, sizes)
    if observed is not None and cargo and _asks_to_observe(words) and _named_observer_apart(words):
        # "take 2 kg to X and have uav_07 watch the drop": the UAV named to watch is not the one that carries
        words.cue("roles", words.found(_OBSERVE)[:1])
        return _roles(words, observed, sizes)
    if cargo and (heavy := _heavier_than_every_idle_uav(words)):
        words.cues.append(heavy)
        return _split_load(words, sizes)
    if observed is not None and cargo and (no_one := _no_uav_with_sensors_and_capacity(words)):
        words.cues.append(no_one)
        return _roles(words, observed, sizes)
    return None


def _named_member_cannot_observe(words: _Words) -> bool:
    """A UAV the request names to fly lacks a sensor its observing words ask for, and those words come before it, in
    a clause of their own ("put eyes on X while uav_09 drops ..."): another UAV observes. Observing words after the
    UAV may be its own task ("uav_01 drops ... and films the drop"): that is asked about, not given to another."""
    observing = set(words.sensors(for_cargo=False))
    fleet = {u.id: u for u in words.world.fleet}
    if not observing or not words.members:
        return False
    first = min(m.start for m in words.members)
    if any(m.start() > first for m in words.found(_OBSERVE)):
        return False
    return any(u in fleet and not observing <= set(fleet[u].sensors) for u in words.member_ids())


# A UAV named to observe, its verb right after it: "have uav_07 watch the drop", "uav_07 should film it", "uav_07拍摄"
_OBSERVER_VERB_AFTER = re.compile(
    r"\s*(?:will |should |can |must |to |is to |then )?(?:films?\b|filming|shoots?\b|watch\w*|photograph\w*|"
    r"records?\b|monitors?\b|keeps? an eye on|拍摄|拍|监视|盯着|观察)"
)


def _named_observer_apart(words: _Words) -> bool:
    """The one UAV the request names is named to observe, after the cargo's words and with no cargo of its own in
    its clause ("take 2 kg to the camp and have uav_07 watch the drop"): another UAV carries."""
    named = words.member_ids()
    if len(named) != 1:
        return False
    member = next(m for m in words.members if m.ids[0] == named[0])
    if not _OBSERVER_VERB_AFTER.match(words.text, member.end):
        return False
    cargo_at = [q.start for q in words.masses] + [m.start() for m in _CARGO_VERB.finditer(words.text)]
    clause = re.split(r"[.;!?,。；！？，]", words.text[member.end :], maxsplit=1)[0]
    return (
        bool(cargo_at)
        and min(cargo_at) < member.start
        and not _CARGO_VERB.search(clause)
        and not any(member.end <= q.start < member.end + len(clause) for q in words.masses)
    )


# Observing said as an act, not a noun ("the video team"): what holds a one-UAV delivery to a camera UAV
_OBSERVING_VERB = re.compile(
    r"\b(?:film(?:s|ing)?|photograph(?:s|ing)?|record (?:a |the )?video|shoot (?:a |some )?(?:video|footage)|"
    r"take (?:some )?(?:pictures|photos|a video|footage|video) of|get (?:eyes|footage|pictures|photos|video|a (?:thermal |"
    r"aerial )?look) (?:on|of|at)|(?:put |keep )?eyes on)\b|(?:拍摄|航拍|录像)(?!队|组|团队|人员|小组|工作|任务)|拍照"
)
# people who film, not the drone: "the camera crew will film the drop", "我们拍摄"
_FILMED_BY_PEOPLE = re.compile(
    r"\b(?:crew|team|photographers?|reporters?|people|staff|we|they|i|someone|police|journalists?)\s+"
    r"(?:will |would |can |is going to |are going to |to |then )?$|(?:我们|他们|记者|摄制组)$"
)


def _asked_for(words: _Words, pattern: re.Pattern[str]) -> bool:
    """The words ask for it, not said to be unneeded or not working ("no winch needed", "uav_01's winch is broken")."""
    return any(
        not _NEGATED.search(words.text[max(0, m.start() - 30) : m.start()])
        and not _SENSOR_NEGATED.search(words.text[max(0, m.start() - 20) : m.start()])
        and not _SAID_OUT_OF_ORDER.match(words.text, m.end())
        and not _NOT_NEEDED_AFTER.match(words.text, m.end())
        for m in pattern.finditer(words.sensor_text)
    )


def _asks_to_observe(words: _Words) -> bool:
    """Observing words not said to be unneeded ("film it"; not "no camera needed")."""
    text = words.text
    return any(not _NEGATED.search(text[max(0, m.start() - 30) : m.start()]) for m in _OBSERVE.finditer(text))


def _refuses_team(text: str) -> bool:
    """The words ask for one UAV, or for the load not to be split ("one drone only", "don't split it", "只用一架");
    "no single drone can lift it" and "a single drone can't reach it" ask for a team instead."""
    not_enough = [m.span() for m in _ONE_NOT_ENOUGH.finditer(text)]  # "too heavy for a single drone" asks for a team
    for match in _SINGLE_UAV.finditer(text):
        said_cannot = any(a <= match.start() < b for a, b in not_enough) or _CANNOT_AFTER.match(text, match.end())
        per_site = _PER_SITE_AFTER.match(text, match.end()) or _PER_SITE_BEFORE.search(text[: match.start()])
        if not (_NO_BEFORE.search(text[max(0, match.start() - 20) : match.start()]) or said_cannot or per_site):
            return True
    return False


def _taking_part(words: _Words, pattern: re.Pattern[str]) -> list[re.Match[str]]:
    """The pattern's unnegated matches that put UAVs on this task: not a choice of one among several ("the best of
    the three drones"), drones busy elsewhere ("two drones are already flying near there"), or a drone on standby or
    for a contingency ("if it fails, send a second drone")."""
    text, kept = words.text, []
    for match in words.found(pattern):
        begin = max((end.end() for end in _SENTENCE_END.finditer(text, 0, match.start())), default=0)
        stop = _SENTENCE_END.search(text, match.end())
        sentence = text[begin : stop.start() if stop else len(text)]
        if not (
            _CHOICE_BEFORE.search(text[max(begin, match.start() - 60) : match.start()])
            or _ELSEWHERE_AFTER.match(text, match.end())
            or _CONTINGENCY.search(sentence)
        ):
            kept.append(match)
    return kept


def _team_sizes(words: _Words) -> list[int]:
    """The numbers of UAVs the words name ("several", "as many as it takes", "another": 2), each kept as a cue;
    two or more UAVs named as members count too ("uav_07 films while uav_09 brings the tools")."""
    sizes = []
    for match in _taking_part(words, _TEAM_SIZE):
        written = next((match.group(g) for g in ("en", "split_n", "zh", "zh_tai") if match.group(g)), None)
        word = written.removeprefix("a ").split()[0] if written else ""
        number = int(word) if word.isdigit() else _NUMBER_WORDS.get(word)
        if number is None or number >= 2:
            words.cue("team_size", [match], number)
            sizes.append(number or 2)
    second = _taking_part(words, _SECOND_UAV)
    words.cue("team_size", second, 2)
    sizes += [2] * len(second)
    if len(members := words.member_ids()) >= 2:
        first, last = words.members[0], words.members[-1]
        span = words.text[first.start : last.end]
        if not _ALTERNATIVES.search(span):  # "use uav_01 or uav_11" offers a choice of one, not a team
            text = span if len(span) <= 120 else ", ".join(members)
            words.cues.append(TeamCue(kind="team_size", text=text, start=first.start, uavs=len(members)))
            sizes.append(len(members))
    return sizes


def _origin_and_sites(words: _Words, stops: bool = False) -> tuple[str | None, list[str]]:
    """Where the cargo starts, and the places to serve: every other place named to visit but where UAVs change over
    (and stops on the way unless `stops`: "from A to B via C" serves B alone). Without a cue for the start, a cargo
    between one uncued place and places named to go to starts at the uncued one ("沙袋在沙袋仓库 ... 运到X")."""
    hub = _hub(words)
    roles = (None, "destination", "via") if stops else (None, "destination")
    named = [m for m in words.places if m.ids[0] != hub and m.role != "handoff" and not _kept_away(words, m)]
    origin = words.first("origin")
    if origin is None and words.intent in CARGO_INTENTS:
        uncued = list(dict.fromkeys(m.ids[0] for m in named if m.role is None))
        if len(uncued) == 1 and any(m.role == "destination" and m.ids[0] != uncued[0] for m in named):
            origin = uncued[0]
    sites = [m.ids[0] for m in named if m.ids[0] != origin and m.role in roles]
    return origin, list(dict.fromkeys(sites))


def _destination(words: _Words, exclude: set[str]) -> str | None:
    """Where the cargo goes: the place an ordered ending names, else the last one a cue names to go to, else the
    last place left."""
    if words.stated.final_place and words.stated.final_place not in exclude:
        return words.stated.final_place
    ends = [m.ids[0] for m in words.places if m.role == "destination" and m.ids[0] not in exclude]
    left = [
        m.ids[0]
        for m in words.places
        if m.ids[0] not in exclude and m.role not in ("origin", "handoff") and not _kept_away(words, m)
    ]
    return (ends or left or [None])[-1]


def _kept_away(words: _Words, mention: Mention) -> bool:
    """A place the reading marks as excluded (a salient span's polarity), or one in a list that starts a clause and
    is said to be kept away from ("...; both the school and the park must be avoided"): never a site."""
    if any(s.kind == "place" and s.start == mention.start and s.polarity != "wanted" for s in words.stated.salient):
        return True
    text, places = words.text, sorted(words.places, key=lambda m: m.start)
    first = last = places.index(mention)
    while (
        first > 0 and "," not in (gap := text[places[first - 1].end : places[first].start]) and _LIST_GAP.fullmatch(gap)
    ):
        first -= 1  # back to the list's start, a comma at most ("to A and B, the school and C are off limits")
    while last + 1 < len(places) and _LIST_GAP.fullmatch(text[places[last].end : places[last + 1].start]):
        last += 1
    listed = _LIST_START.search(text[max(0, places[first].start - 30) : places[first].start])
    return bool(listed and _KEPT_AWAY_AFTER.match(text, places[last].end))


def _hub(words: _Words) -> str | None:
    """Where a relay changes UAVs: the place after "hand off at", "swap drones at", or before "交接", "接力"."""
    for m in words.places:
        before, after = words.text[max(0, m.start - 40) : m.start], words.text[m.end : m.end + 8]
        if m.role == "handoff" or _HUB_BEFORE.search(before) or _HUB_AFTER.match(after):
            return m.ids[0]
    return words.stated.handoff_points[0] if words.stated.handoff_points else None


def _observed_place(words: _Words) -> str | None:
    """The place the request names to film, photograph or watch: the nearest after the observing words ("film X")
    or just before them ("在X上空拍摄"); the one place the cargo goes where they film "the drop-off" or "it"."""
    for match in _OBSERVE.finditer(words.text):  # "film the drop-off", "拍摄现场": the one place the cargo goes
        if _SAME_PLACE_AFTER.match(words.text, match.end()) and _CARGO_VERB.search(words.text):
            _, sites = _origin_and_sites(words)
            if len(sites) == 1:
                return sites[0]
    for match in _OBSERVE.finditer(words.text):
        # (distance, 0 after the words / 1 before them, place): "film X" before "X ... film" at the same distance
        gaps = [(m.start - match.end(), 0, m) for m in words.places if 0 <= m.start - match.end() <= 40]
        gaps += [(match.start() - m.end, 1, m) for m in words.places if 0 <= match.start() - m.end <= 12]
        for m in words.places:  # a place named again ("take it to the flood site and film the flood site"): a name
            said = words.text[m.start : m.end]  # is one mention, at its first place; the same words again are it
            again = words.text.find(said, match.end(), match.end() + 40 + len(said))
            if again >= 0:
                gaps.append((again - match.end(), 0, m))
        if gaps:
            return min(gaps, key=lambda gap: gap[:2])[2].ids[0]
    for match in _OBSERVE.finditer(words.text):  # "film the drop-off", "拍摄现场": the one place the cargo goes
        if _SAME_PLACE_AFTER.match(words.text, match.end()):
            _, sites = _origin_and_sites(words)
            return sites[0] if len(sites) == 1 else None
    return None


def _largest_idle_capacity(words: _Words) -> float:
    """The most an idle UAV lifts: in whole items where the load is items ("bags of 3 kg": 3 on a 5 kg UAV)."""
    return whole_items(max((u.payload_capacity_kg for u in words.idle), default=0.0), words.stated.payload_item_kg)


def _heavier_than_every_idle_uav(words: _Words) -> TeamCue | None:
    """A divisible cargo heavier than every idle UAV lifts implies a split load ("9 kg of sandbags"; not "a crate of
    machine parts (9 kg)", one piece)."""
    payload, largest = words.stated.payload_kg, _largest_idle_capacity(words)
    if payload is None or not words.idle or not words.masses or payload <= largest + 1e-9:
        return None
    mass = next((q for q in words.masses if math.isclose(q.value, payload, rel_tol=1e-6)), words.masses[0])
    if _ONE_PIECE.search(_clause_of(words.text, mass)[1]):
        return None
    return TeamCue(
        kind="split_load",
        text=words.text[mass.start : mass.end],
        start=mass.start,
        implied=True,
        by=f"{payload:g} kg exceeds every idle UAV's payload capacity (the largest is {largest:g} kg)",
    )


def _clause_of(text: str, quantity: Quantity) -> tuple[int, str]:
    """(start, clause) of the clause the quantity is said in."""
    return next(((s, c) for s, c in clauses(text) if s <= quantity.start < s + len(c)), (0, text))


def _no_uav_with_sensors_and_capacity(words: _Words) -> TeamCue | None:
    """Observing and a cargo in one request where no idle UAV has the sensors and the payload capacity together."""
    observing, payload = words.sensors(for_cargo=False), words.stated.payload_kg or 0.0
    if not observing or not words.idle:
        return None
    if any(set(observing) <= set(u.sensors) and u.payload_capacity_kg >= payload for u in words.idle):
        return None
    match = next(_OBSERVE.finditer(words.text))
    return TeamCue(
        kind="roles",
        text=match.group(0),
        start=match.start(),
        implied=True,
        by=f"no idle UAV has {' and '.join(observing)} and a {payload:g} kg payload capacity together",
    )


def _sketch(words: _Words, kind: TeamKind, subtasks: list[SubTaskSketch], min_uavs: int, notes=()) -> TeamSketch:
    if item := words.stated.payload_item_kg:  # "four bags of 3 kg": a delivery of whole bags is shared in bags
        subtasks = [
            s.model_copy(update={"item_kg": item}) if s.payload_kg and is_whole_items(s.payload_kg, item) else s
            for s in subtasks
        ]
    cues = sorted(words.cues, key=lambda c: (c.start, c.kind))
    members = words.member_ids()
    return TeamSketch(kinds=[kind], subtasks=subtasks, min_uavs=min_uavs, members=members, cues=cues, notes=list(notes))


# "two drones with 4 kg each", "4 kg apiece", "每架4公斤", "各带4公斤": the mass is every UAV's, not the whole load
_EACH_AFTER = re.compile(
    r"\s*(?:of [a-z'-]+(?: [a-z'-]+)?\s+)?(?:each|apiece|a piece|per (?:drone|uav|aircraft|quad)|on (?:each|every) "
    r"(?:drone|uav|one)|for (?:each|every) (?:drone|uav))\b"
)
_EACH_BEFORE = re.compile(
    r"(?:\beach (?:(?:drone|uav|one) )?(?:with|carrying|takes|carries|gets|taking|holding|loaded with)|各(?:带|运|装|载)?|每架(?:无人机)?(?:带|运|装|载)?)\s*$"
)


# not a mass of each UAV: a limit ("at most 4 kg each") or an item's ("three bags of 4 kg each")
_LIMIT_BEFORE = re.compile(
    r"(?:\bat most|\bno more than|\bnot more than|\bup to|\bmax(?:imum)?|\bunder|\bless than|最多|不超过|至多)\s*$"
)
_PER_ITEM_BEFORE = re.compile(
    r"\b(?:bags?|boxes|box|crates?|packages?|parcels?|sacks?|units?|pieces?|items?|cases?|cans?|bottles?|kits?)\s+"
    r"(?:of|weighing|at)\s*$"
)
_COUNT_WORD = re.compile(r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|\d+)\b|[一两二三四五六七八九十]")


def _uavs_each(words: _Words) -> int | None:
    """How many UAVs carry the stated mass each ("two drones with 4 kg each" -> 2): the one number of UAVs said
    just before the mass (within 40 characters, no other count between), or the one said anywhere for "每架";
    None where the mass is not each UAV's or the number is unclear."""
    payload = words.stated.payload_kg
    sizes = [c for c in words.cues if c.kind == "team_size" and c.uavs]
    for mass in (q for q in words.masses if payload is not None and math.isclose(q.value, payload, rel_tol=1e-6)):
        before = words.text[max(0, mass.start - 25) : mass.start]
        if _LIMIT_BEFORE.search(before) or _PER_ITEM_BEFORE.search(before):
            continue
        if _EACH_BEFORE.search(before):
            counts = {c.uavs for c in sizes}
            return counts.pop() if len(counts) == 1 else None
        if not _EACH_AFTER.match(words.text, mass.end):
            continue
        near = [
            c
            for c in sizes
            if 0 <= mass.start - (c.start + len(c.text)) <= 40
            and not _COUNT_WORD.search(words.text[c.start + len(c.text) : mass.start])
        ]
        return near[0].uavs if len(near) == 1 else None
    return None


def _split_load(words: _Words, sizes: list[int]) -> TeamSketch:
    """One delivery whose payload is shared out; at least as many UAVs as the largest idle capacity needs. A mass
    said of each UAV ("two drones with 4 kg each") is a delivery per UAV, that mass each."""
    payload = words.stated.payload_kg
    origin, _ = _origin_and_sites(words)
    if shares := words.stated.uav_shares_kg:  # "uav_01 carries 5 kg and uav_02 3 kg": a delivery per UAV, its own
        said = ", ".join(f"{uav} {kg:g} kg" for uav, kg in shares.items())
        words.cues.append(
            TeamCue(
                kind="split_load",
                text=said,
                start=min((m.start for m in words.uavs_named if m.ids[0] in shares), default=0),
            )
        )
        legs = [
            sketch.model_copy(update={"payload_kg": kg, "uavs": [uav]})
            for sketch, (uav, kg) in zip(_per_uav(words, origin, len(shares), 0.0), shares.items())
        ]
        return _sketch(words, "split_load", legs, len(shares), [f"each UAV its own share: {said}"])
    if payload and (count := _uavs_each(words)) is not None:
        note = f"{payload:g} kg on each of {count} UAVs: {count * payload:g} kg"
        return _sketch(words, "split_load", _per_uav(words, origin, count, payload), count, [note])
    largest = _largest_idle_capacity(words)
    bound = max(2, math.ceil(payload / largest - 1e-9)) if payload and largest > 0 else 2
    if payload and words.found(_EVEN_SHARES):
        # a stated count, else the UAVs named (two or more), else the fewest that lift it; shares that are no whole
        # number of items stay even, and the fidelity gate then asks the operator (payload_items_split)
        named = len(words.member_ids())
        count = max(sizes, default=None) or (named if named >= 2 else None) or bound
        share = payload / count
        note = f"{payload:g} kg in even shares: {share:g} kg on each of {count} UAVs"
        return _sketch(words, "split_load", _per_uav(words, origin, count, share), count, [note])
    task = SubTaskSketch(
        id="t1",
        role="deliver",
        origin=origin,
        destination=_destination(words, {origin} if origin else set()),
        payload_kg=payload,
        split=True,
        deadline_sec=words.stated.deadline_sec,
        required_sensors=words.sensors(for_cargo=True),
        uavs=words.member_ids(),
    )
    notes = (  # no stated mass, no note (formatting None would raise)
        [
            f"{payload:g} kg at most {largest:g} kg each (the largest idle capacity"
            + (f", in whole {item:g} kg items" if (item := words.stated.payload_item_kg) else "")
            + f"): {bound} UAVs or more"
        ]
        if payload and bound > 2
        else []
    )
    return _sketch(words, "split_load", [task], max([bound, *sizes]), notes)


# "split it evenly", "half on uav_01 and half on uav_02", "平分": every UAV the same share
_EVEN_SHARES = re.compile(
    r"\b(?:evenly|equally(?! (?:important|urgent|critical|needed|pressing))|in equal (?:shares|parts|loads|halves)|"
    r"(?:an? )?equal (?:shares?|split|parts|loads)|"
    r"(?:in|into) (?:two )?halves|half (?:on|onto|with|by) |50 ?(?:%|percent) each)|"
    r"平分|均分|平均分|各(?:运|带|装|分)?一半"
)


def _per_uav(words: _Words, origin: str | None, count: int, share: float) -> list[SubTaskSketch]:
    """A delivery per UAV, each `share` kg, the UAVs the words name one each where they name as many."""
    named = words.member_ids()
    destination = _destination(words, {origin} if origin else set())
    return [
        SubTaskSketch(
            id=f"t{i}",
            role="deliver",
            origin=origin,
            destination=destination,
            payload_kg=share,
            deadline_sec=words.stated.deadline_sec,
            required_sensors=words.sensors(for_cargo=True),
            uavs=[named[i - 1]] if len(named) == count else [],
        )
        for i in range(1, count + 1)
    ]


def _roles(words: _Words, observed: str, sizes: list[int]) -> TeamSketch:
    """One UAV films (or watches) the place; another carries the cargo (to the place a cue names, else there),
    several sharing it where it is heavier than every idle UAV lifts."""
    origin, _ = _origin_and_sites(words)
    payload, largest = words.stated.payload_kg, _largest_idle_capacity(words)
    carriers = math.ceil(payload / largest - 1e-9) if payload and largest > 0 else 1
    others = [m for m in words.places if m.ids[0] not in (observed, origin) and m.role != "origin"]
    # "drops the tools at the construction site": with no destination cue, the one other place named, where it has
    # no role of its own (not "passing the vertiport") and nothing points the cargo back ("drops them there")
    plain = {m.ids[0] for m in others if m.role is None}
    fallback = len({m.ids[0] for m in others}) == 1 == len(plain) and observed != origin
    cued = [m.ids[0] for m in others if m.role == "destination"] or (
        list(plain) if fallback and not _THERE.search(words.text) else []
    )
    observing, carrying = _members_by_task(words)
    watch = SubTaskSketch(
        id="t1",
        role="film",
        destination=observed,
        deadline_sec=words.stated.deadline_sec,
        required_sensors=words.sensors(for_cargo=False) or ["camera"],
        uavs=observing,
    )
    deliver = SubTaskSketch(
        id="t2",
        role="deliver",
        origin=origin,
        destination=cued[-1] if cued else observed,  # "film X while another brings the tools over": to X
        payload_kg=payload,
        split=carriers > 1,
        deadline_sec=words.stated.deadline_sec,
        required_sensors=words.sensors(for_cargo=True),
        uavs=carrying,
    )
    notes = [f"{payload:g} kg at most {largest:g} kg each: {carriers} UAVs carry it"] if carriers > 1 else []
    return _sketch(words, "roles", [watch, deliver], max([1 + carriers, *sizes]), notes)


_THERE = re.compile(r"\b(?:there|over there|to it|at it)\b|那里|那儿|过去|到那")


def _members_by_task(words: _Words) -> tuple[list[str], list[str]]:
    """The UAVs named for observing and for carrying ("use uav_07 to film X while uav_09 drops off the tools"): by
    the verb right after a member, else by observing words next to it."""
    observing, carrying = [], []
    for mention in words.members:
        after = words.text[mention.end : mention.end + 30]
        verb = _MEMBER_VERB_AFTER.match(after)
        near = verb.group(0) if verb else words.text[max(0, mention.start - 30) : mention.start] + after
        (observing if _OBSERVE.search(near) else carrying).append(mention.ids[0])
    return list(dict.fromkeys(observing)), list(dict.fromkeys(carrying))


def _parallel(words: _Words, origin: str | None, sites: list[str], sizes: list[int]) -> TeamSketch:
    """One delivery per site, each with its own deadline where the words give one, at the same time: a UAV each."""
    notes, each = [], words.stated.payload_kg
    starts = {m.ids[0]: m.start for m in reversed(words.places)}  # each site's first mention
    own = _masses_by_site(words, {site: starts[site] for site in sites}) if len(words.masses) > 1 else {}
    if own:
        notes.append("each site's own mass, as stated")
    elif len(words.masses) > 1:
        each = None
        notes.append("several masses are stated: each site's share is left to the team tool")
    elif (item := words.stated.payload_item_kg) and each is not None:
        # "two bags of 2 kg, one to A and one to B": an item a site when there are as many as sites; otherwise the
        # sites' shares are open (the parse splits evenly and asks the operator to confirm)
        each = item if round(each / item) == len(sites) else None
        notes.append(f"one {item:g} kg item to each site" if each else "each site's share of the items is not stated")
    elif each is not None:
        notes.append(f"the stated {each:g} kg read as what each site gets")
    pins = _site_pins(words, sites)
    subtasks = [
        SubTaskSketch(
            id=f"t{i}",
            role="deliver",
            origin=origin,
            destination=site,
            payload_kg=own.get(site, each),
            deadline_sec=_deadline_for(words, starts[site], [starts[s] for s in sites]),
            required_sensors=words.sensors(for_cargo=True),
            uavs=[uav for uav, pinned in pins.items() if pinned == site],
        )
        for i, site in enumerate(sites, 1)
    ]
    return _sketch(words, "parallel_sites", subtasks, max([len(sites), *sizes]), notes)


# Words between UAVs of one list ("uav_05 and uav_06", "uav_05、uav_06"); a UAV after "by" serves the place before
# it ("an AED to A by uav_05"); "respectively", "分别" pair a list of UAVs with the places after it, in order.
_UAV_LIST_GAP = re.compile(r"\s*(?:,|and|&|和|与|及|、)\s*")
_BY_BEFORE = re.compile(r"(?:\bby|\busing|\bwith)\s*$")
_RESPECTIVELY = re.compile(r"\brespectively\b|\bin that order\b|分别")


def _site_pins(words: _Words, sites: list[str]) -> dict[str, str]:
    """The site the words give each named UAV ("uav_05 takes an AED to A and uav_06 takes one to B", "uav_05送A，
    uav_06送B", "to A by uav_05 and to B by uav_06", "uav_05 and uav_06 go to A and B respectively"): a UAV serves
    the first site named after it and before the next UAV, or after "by" the last one before it since the previous
    UAV. A list of UAVs pairs with the sites after it only where "respectively" says so. A UAV or site given twice
    is left to the team tool."""
    uavs = sorted(words.uavs_named, key=lambda m: m.start)
    placed = sorted((m for m in words.places if m.ids[0] in sites), key=lambda m: m.start)
    groups: list[list[Mention]] = []
    for mention in uavs:
        if groups and _UAV_LIST_GAP.fullmatch(words.text[groups[-1][-1].end : mention.start]):
            groups[-1].append(mention)
        else:
            groups.append([mention])
    pairs: list[tuple[str, str]] = []
    for i, group in enumerate(groups):
        since = groups[i - 1][-1].end if i else 0
        until = groups[i + 1][0].start if i + 1 < len(groups) else len(words.text)
        after = list(dict.fromkeys(m.ids[0] for m in placed if group[-1].end <= m.start < until))
        if len(group) > 1:
            tail = words.text[group[-1].end : until]
            if _RESPECTIVELY.search(tail) and len(after) == len(group):
                pairs += [(m.ids[0], site) for m, site in zip(group, after)]
            continue
        if _BY_BEFORE.search(words.text[max(0, group[0].start - 12) : group[0].start]):
            before = [m.ids[0] for m in placed if since <= m.start < group[0].start]
            if before:
                pairs.append((group[0].ids[0], before[-1]))
        elif after:
            pairs.append((group[0].ids[0], after[0]))
    uav_count = {u: sum(1 for v, _ in pairs if v == u) for u, _ in pairs}
    site_count = {s: sum(1 for _, t in pairs if t == s) for _, s in pairs}
    return {u: s for u, s in pairs if uav_count[u] == 1 and site_count[s] == 1}


def _deadline_for(words: _Words, site_start: int, site_starts: list[int]) -> float | None:
    """A site's own deadline where the sites have their own ("the crash within 2 minutes, the station within 4"):
    the first one said after the site and before the next; else the request's."""
    if len(words.deadlines) > 1:
        limit = min((s for s in site_starts if s > site_start), default=len(words.text))
        own = [q for q in words.deadlines if site_start < q.start < limit]
        if own:
            return own[0].value
    return words.stated.deadline_sec


def _masses_by_site(words: _Words, starts: dict[str, int]) -> dict[str, float]:
    """Each site's own mass where the stated masses pair one to one with the sites ("1 kg to A and 2 kg to B",
    "给A送1公斤，给B送2公斤"): within its clause, a mass goes to the first site named after it, else the last one
    before it; {} where that pairing leaves a site without a mass or gives one two."""
    found: dict[str, float] = {}
    for mass in words.masses:
        start, clause = _clause_of(words.text, mass)
        inside = sorted((at, site) for site, at in starts.items() if start <= at < start + len(clause))
        after = [site for at, site in inside if at > mass.start]
        before = [site for at, site in inside if at < mass.start]
        site = after[0] if after else (before[-1] if before else None)
        if site is None or site in found:
            return {}
        found[site] = mass.value
    return found if found.keys() == starts.keys() else {}


def _coverage(words: _Words, origin: str | None, sites: list[str], sizes: list[int]) -> TeamSketch:
    """One inspection per site under the request's deadline, for at least as many UAVs as the words ask: which UAV
    takes which sites (one may fly several as waypoints) is the planner's to group, not the words'."""
    final = words.stated.final_place
    owners = _sites_by_member(words, sites)
    subtasks = [
        SubTaskSketch(
            id=f"t{i}",
            role="inspect",
            origin=origin,
            destination=site,
            deadline_sec=words.stated.deadline_sec,
            required_sensors=words.sensors(for_cargo=False) or ["camera"],
            uavs=[owners[site]] if site in owners else [],
        )
        for i, site in enumerate((s for s in sites if s != final), 1)
    ]
    team = max([2, *sizes])
    notes = [f"{len(subtasks)} sites for {team} or more UAVs: group them into routes before assigning"]
    if final in sites:
        notes.append(f"the flights end at {final}, as the request says")
    return _sketch(words, "coverage", subtasks, team, notes)


def _watching_size(words: _Words) -> int | None:
    """How many UAVs the words send to watch one site: a count said in a clause that observes ("send two drones to
    film the crash"; not "two drones reported it earlier"), or two or more UAVs named to fly."""
    said = [
        c.uavs
        for c in words.cues
        if c.kind == "team_size"
        and c.uavs
        and _OBSERVE.search(next((t for s, t in clauses(words.text) if s <= c.start < s + len(t)), ""))
    ]
    named = len(words.member_ids())
    size = max([*said, named if named >= 2 else 0])
    return size if size >= 2 else None


def _sites_by_member(words: _Words, sites: list[str]) -> dict[str, str]:
    """Each site and the UAV the words give it, where they split the sites among two or more named UAVs, each after
    its own sites ("A and B with uav_07, and C and D with uav_08", "7号机巡检A和B，8号机巡检C和D" - a UAV before its
    sites when it opens the clause); empty when any site is left to the planner."""
    members = sorted(words.members, key=lambda m: m.start)
    if len({m.ids[0] for m in members}) < 2:
        return {}
    owners: dict[str, str] = {}
    for place in (m for m in words.places if m.ids[0] in sites):
        clause_start = max((s for s, _ in clauses(words.text) if s <= place.start), default=0)
        leading = [m for m in members if clause_start <= m.start < place.start]
        after = [m for m in members if m.start > place.end]
        owner = leading[-1] if leading else after[0] if after else None
        if owner is None or owners.get(place.ids[0], owner.ids[0]) != owner.ids[0]:
            return {}
        owners[place.ids[0]] = owner.ids[0]
    return owners if set(owners) == set(sites) and len(set(owners.values())) >= 2 else {}


def _observers(words: _Words, site: str, count: int) -> TeamSketch:
    """`count` UAVs that each watch the one site ("from different angles"), the UAVs the words name one each."""
    named = words.member_ids()
    subtasks = [
        SubTaskSketch(
            id=f"t{i}",
            role="film",
            destination=site,
            deadline_sec=words.stated.deadline_sec,
            required_sensors=words.sensors(for_cargo=False) or ["camera"],
            uavs=[named[i - 1]] if len(named) == count else [],
        )
        for i in range(1, count + 1)
    ]
    return _sketch(words, "coverage", subtasks, count, [f"{count} UAVs watch {site}, each on its own"])


def _relay(words: _Words, sizes: list[int]) -> TeamSketch:
    """Two legs in turn: the origin to the hand-off place, then on to the destination with a second UAV."""
    hub = _hub(words)
    origin, _ = _origin_and_sites(words)
    payload, sensors = words.stated.payload_kg, words.sensors(for_cargo=True)
    legs = [
        SubTaskSketch(
            id="t1", role="deliver", origin=origin, destination=hub, payload_kg=payload, required_sensors=sensors
        ),
        SubTaskSketch(
            id="t2",
            role="relay_leg",
            origin=hub,
            destination=_destination(words, {p for p in (hub, origin) if p}),
            payload_kg=payload,
            deadline_sec=words.stated.deadline_sec,
            required_sensors=sensors,
            after=["t1"],
        ),
    ]
    notes = [] if hub else ["no hand-off place is named: the team tool chooses where the UAVs change over"]
    return _sketch(words, "relay", legs, max([2, *sizes]), notes)


# A sensor said not to work, in the words after a UAV: "uav_06's camera is broken", "uav_06 has a faulty thermal
# camera", "uav_06的摄像头坏了". The UAV may still fly; it cannot observe with that sensor.
_OUT_OF_ORDER = re.compile(
    r"\b(?:broken|busted|faulty|dead|damaged|cracked|fogged|blurry|missing|removed|malfunction\w*|fail\w*|"
    r"not working|doesn't work|does not work|isn't working|is not working|won't work|out of order|(?:is |'s )?down|"
    r"(?:is |'s )?(?:out|off)\b)|坏|故障|失灵|不能用|不好用|不工作|没了|拆了"
)
# "thermal camera not needed", "a winch isn't necessary", "the winch is optional"
_NOT_NEEDED_AFTER = re.compile(
    r"\s*(?:\w+\s+)?(?:is\s+|are\s+)?(?:not|isn't|aren't)\s+(?:needed|required|necessary|wanted)\b"
    r"|\s*(?:\w+\s+)?(?:is\s+|are\s+)?(?:unnecessary|optional|unneeded)\b|\s*(?:\w+\s+)?(?:不需要|不用|用不着|不必)"
)
# "the winch is broken", "its winch has failed" (not "winch down 1 kg", a verb)
_SAID_OUT_OF_ORDER = re.compile(
    r"\s*(?:is|are|'s|was|were|has|have|seems|looks)\b[^.;,。；，]{0,20}?(?:" + _OUT_OF_ORDER.pattern + ")"
)


def _sensors_out_of_order(words: _Words) -> dict[str, list[str]]:
    """Each UAV's sensors the words say do not work, read in the clause after its name (up to the next UAV)."""
    said: dict[str, list[str]] = {}
    named = sorted(words.uavs_named, key=lambda m: m.start)
    for mention, following in zip(named, [*named[1:], None]):
        end = min(following.start if following else len(words.text), mention.end + 60)
        clause = re.split(r"[.;!?,。；！？，]", words.text[mention.end : end], maxsplit=1)[0]
        if _OUT_OF_ORDER.search(clause):
            said.setdefault(mention.ids[0], []).extend(sensors_in(clause))
    return {uav: sensors for uav, sensors in said.items() if sensors}


def _without_broken_observers(words: _Words, stated: StatedConstraints) -> StatedConstraints:
    """A UAV whose sensor for this request's observing is said to be broken does not fly it: left out when the words
    leave the choice to the agent; asked about when they name it to fly."""
    unusable = [u for u, out in _sensors_out_of_order(words).items() if set(out) & set(stated.observing_sensors)]
    if not unusable:
        return stated
    pinned = [u for u in unusable if u in stated.uavs]
    return stated.model_copy(
        update={
            "excluded_uavs": list(dict.fromkeys([*stated.excluded_uavs, *(u for u in unusable if u not in pinned)])),
            "unaccounted": [
                *stated.unaccounted,
                *(
                    f"'{u}' is named to fly, but its {' and '.join(stated.observing_sensors)} is said not to work "
                    "and the request needs one: which UAV is meant?"
                    for u in pinned
                ),
            ],
        }
    )


def read_request(instruction: str, world: World) -> StatedConstraints:
    """The reading of a request: what it states, and whether it needs a team of UAVs. The one reading a run keeps
    (nodes/reading.py) and a model's writer reads when no run gave it one (models/slots.py)."""
    stated = stated_constraints(instruction, world)
    words = _Words(instruction, world, stated)  # read once: the team's reading, then the sensors it observes with
    team = _team_of(words)
    # a camera the words ask for to film a place: not a sensor merely mentioned ("uav_05's camera is broken", "I will
    # watch the live feed"), with no place to observe
    observes = _asks_to_observe(words) and _observed_place(words) is not None
    said = [s for s in sensors_in(words.sensor_text) if s not in CARGO_SENSORS] if observes else []
    if team is None:  # one UAV sent to observe carries what the words ask to observe with ("film the flood site")
        cargo = stated.payload_kg is not None or _CARGO_VERB.search(_OBSERVE.sub(" ", words.text))
        # and one that carries a cargo too, where a verb asks to observe ("deliver 2 kg there and film the drop")
        drone_films = any(
            not _FILMED_BY_PEOPLE.search(words.text[max(0, m.start() - 30) : m.start()])
            for m in _OBSERVING_VERB.finditer(words.text)
        )
        # and the cargo equipment it names ("a drone with a winch to lower 2 kg"), left out where said not to work
        equipment = [s for s, pattern in _EQUIPMENT_ASKED.items() if _asked_for(words, pattern)]
        held = stated.model_copy(update={"cargo_sensors": equipment}) if equipment else stated
        # a sensor asked for on a flight with no cargo ("a drone with a thermal camera to look for people at X", "an
        # infrared check of X") is the drone's, whatever the errand's verb; not one said not to work
        if not cargo and words.intent not in SITE_VISITS:
            said = [sensor for sensor in said if _asked_for(words, _SENSOR_PATTERNS[sensor])]
        if said and (not cargo or drone_films):
            return _without_broken_observers(words, held.model_copy(update={"observing_sensors": said}))
        return held

    def needed(roles: frozenset[str]) -> list[str]:  # what the sketch's sub-tasks in those roles require
        return list(dict.fromkeys(s for sub in team.subtasks if sub.role in roles for s in sub.required_sensors))

    # a camera the words ask for flies even where the sketch has no one to film ("... and film it with a camera
    # drone" read as a split load alone): the fidelity gate then finds no member carrying it
    reading = stated.model_copy(
        update={
            "team_needs": [team.need()],
            "uav_sites": team.uav_sites(),
            "team_size": team.stated_size(),
            "team_min_uavs": team.min_uavs,
            "observing_sensors": list(dict.fromkeys([*needed(OBSERVING_ROLES), *said])),
            "cargo_sensors": needed(DELIVERING_ROLES),
        }
    )
    return _without_broken_observers(words, reading)
