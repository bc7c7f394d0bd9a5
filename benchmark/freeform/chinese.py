"""Chinese free-form requests: the voice's phrases and the construction patterns built from them.

Punctuation follows the template requests: ASCII , : ; ( ) ? inside a request, 。 and 、 as in running text.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from benchmark.freeform.request import (
    CARGO_ROUTES,
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
from benchmark.freeform.units import chinese_number

LEADS = {
    "critical": ("紧急(最高优先级):", "特急:", "最高优先级:"),
    "high": ("优先任务:", "高优先级:", "优先处理:"),
    "normal": ("",),
    "low": ("不急,", "有空时处理:", "低优先级,不急:"),
}
TAILS = {"critical": ",特急", "high": ",高优先级", "normal": "", "low": ",不急"}
PRIORITY_WORDS = {"critical": "特急", "high": "高优先级", "low": "低优先级(不急)"}
EMERGENCY_LEADS = ("紧急情况:", "有紧急情况,")
CASUAL_AREAS = {
    "西南部": "西南角",
    "南侧": "南边",
    "东南部": "东南角",
    "西侧": "西边",
    "市中心": "市中心那边",
    "东侧": "东边",
    "西北部": "西北角",
    "北侧": "北边",
    "东北部": "东北角",
}
CLAUSES = {
    "delivery": ("派一架无人机把{cargo}从{o}送到{d}", "把{cargo}从{o}运到{d}", "用无人机把{cargo}从{o}送去{d}"),
    "emergency": ("把{cargo}从{o}急送到{d}", "马上把{cargo}从{o}送到{d}", "派无人机把{cargo}从{o}送到{d}"),
    "via": ("把{cargo}从{o}经{w}送到{d}", "把{cargo}从{o}送到{d},途经{w}"),
    "round_trip": ("把{cargo}从{o}送到{far}再返回{o}", "带着{cargo}从{o}飞到{far},然后回到{o}"),
    "patrol": (
        "从{o}起飞,依次巡检{w},最后降落在{d}",
        "安排无人机从{o}出发,按顺序巡检{w},结束后降落在{d}",
    ),
    "contradiction": (
        "从{o}飞往{d},途中进入{zone}内部航拍,但无人机绝对不能进入{zone}",
        "从{o}到{d}的途中穿过{zone}拍照,同时确保全程不进入{zone}",
    ),
    "ambiguous_reference": ("把{cargo}从{o}送到{kind}", "从{o}派无人机把{cargo}送到{kind}"),
    "no_place": ("按老路线把{cargo}送过去", "派无人机把{cargo}送出去"),
    "one_place": ("把{cargo}送到{d}", "把{cargo}运到{d}"),
    "dangling_pronoun": ("把{cargo}从{o}送到他们那里", "从{o}把{cargo}送到她那儿"),
    "unanchored_time": ("会议前把{cargo}从{o}送到{d}", "下班前把{cargo}从{o}送到{d}", "到时候把{cargo}从{o}送到{d}"),
    "missing_destination": ("从{o}派无人机送{cargo}", "在{o}装上{cargo}送出去"),
}
CONSTRAINTS = {
    "avoid": ("注意避开{v}", "不要进入{v}", "绕开{v}飞"),
    "floor": ("飞行高度不低于{v}米", "高度至少{v}米", "别低于{v}米飞"),
    "ceiling": ("飞行高度不超过{v}米", "高度控制在{v}米以下", "限高{v}米"),
    "reserve": ("到达时至少保留{v}%电量", "落地时电量不少于{v}%", "到达时电量余量至少{v}%"),
    "pinned": ("用{v},它离得最近", "派{v}去,它最近", "让{v}执行,它离得最近"),
    "corridor": ("只能在无人机航路走廊内飞行", "全程走无人机航路走廊", "不要离开无人机航路走廊"),
    "handoff_hub": ("目的地位于禁飞区内:请飞到{v},在那里交给地面配送员", "目的地在禁飞区里,先飞到{v},交给地面配送员"),
    "handoff_any": (
        "如果无人机无法进入,就在最近的合适交接点转交地面配送",
        "无人机要是进不去,就在最近的合适交接点转给地面配送",
    ),
    "land_at_destination": ("无人机必须直接降落在目的地,不允许地面转运", "不许地面转运,无人机必须降落在目的地本身"),
}
# An avoided zone said as a place not to fly over.
OVERFLIGHT = ("不要从{v}上空飞", "别从{v}上空经过", "航线不要经过{v}上空", "不许飞越{v}")
# A demand to break a rule in other words than the template's sentence (pattern rule_violating_demand).
DEMANDS = {
    "R1": ("遇到禁飞区直接穿过去,不要绕。", "航线直接横穿管制空域,不许绕行。"),
    "R2": ("贴着建筑飞,不用留安全间隔,走最短的线。", "紧挨着楼飞过去,不要保持安全距离。"),
    "R3": ("飞到限高以上,全程在上面巡航。", "整个航程都超过限高飞。"),
    "R5": ("电池用到见底,落地不留余量。", "按落地时电量耗尽来飞,一点余量都不要留。"),
}
TELEGRAPHIC = {"avoid": "避开{v}", "floor": "最低{v}米", "ceiling": "最高{v}米", "reserve": "电量余量{v}%"}
TELEGRAPHIC |= {"pinned": "用{v}", "corridor": "只走航路走廊"}
FIELD_LABELS = {
    "take_off": "起飞点",
    "inspect": "依次巡检",
    "land": "降落点",
    "from": "起点",
    "via": "按顺序途经",
    "to": "终点",
    "back": "然后返回",
    "cargo": "货物",
    "deadline": "时限",
    "priority": "优先级",
    "type": "类型",
    "emergency": "紧急情况",
    "note": "备注",
}
# Typing errors of a pinyin keyboard: a word replaced by a same-sounding one, only in the request's own framing.
HOMOPHONES = {
    "麻烦": "麻凡",
    "谢谢": "谢些",
    "一下": "一夏",
    "那边": "那遍",
    "辛苦": "心苦",
    "安排": "按排",
    "需要": "须要",
    "已经": "以经",
    "的话": "得话",
    "请": "清",
}


class ChineseVoice(Voice):
    lang = "zh"
    list_joiners = ("、", "和")
    area_shape = "{area}那个{name}"
    casual_areas = CASUAL_AREAS
    camera_payload = "航拍相机"
    cargo_shapes = {"paren": "{t}({kg}公斤)", "comma": "{t},{kg}公斤", "weighing": "{t}(重{kg}公斤)"}
    clauses = CLAUSES
    route_phrases = {
        "via": ("途中按顺序经过{w}。", (",途经{w}", ",中途经过{w}")),
        "round_trip": ("送完后返回{o}。", (",然后返回{o}", ",再飞回{o}")),
    }
    leads = LEADS
    emergency_leads = EMERGENCY_LEADS
    tails = TAILS
    emergency_tail = ",这是紧急情况"
    priority_words = PRIORITY_WORDS
    constraint_phrases = CONSTRAINTS
    telegraphic = TELEGRAPHIC
    sentence_gap = ""
    field_labels = FIELD_LABELS
    arrows = {"unicode": "→", "ascii": "->", "dash": "—>"}
    default_arrow = "unicode"
    colon = ":"
    patrol_lead = "巡检路线:"
    then_joiner = ",再到"
    spelled_cargo = "{t}({m})"
    overflight_phrases = OVERFLIGHT
    demand_phrases = DEMANDS
    headline_arrow = "=>"
    headline_gap = ","
    headline_now = ",马上"

    def _amount(self, words: bool = False) -> str:
        spelled = self.spelled_amount() if self.spell_units else ""
        if spelled:
            return spelled
        seconds = self.request.stated_deadline or 0.0
        minutes = seconds % 60 == 0
        value = int(seconds // 60) if minutes else int(seconds)
        return (chinese_number(value) if words else str(value)) + ("分钟" if minutes else "秒")

    def _deadline(self, form: str | None) -> str:
        if self.request.stated_deadline is None:
            return ""
        shapes = {
            "within": lambda: f",{self._amount()}内到达",
            "limit": lambda: f",限时{self._amount()}",
            "no_later_than": lambda: f",最迟{self._amount()}内送到",
            "at_latest": lambda: f",最晚T+{self._amount()}前送达",
            "words": lambda: f",{self._amount(words=True)}内送到",
            "budget": lambda: f",只有{self._amount()}",
            "paren": lambda: f"(时限{self._amount()})",
            "sentence": lambda: f"要求{self._amount()}内送到。",
            "lead": lambda: f"{self._amount()}之内,",
            "tele": lambda: f",{self._amount()}",
            "field": lambda: f"{self._amount()}内",
        }
        return shapes[form or self.pick(("within", "limit", "paren"))]()

    def _tag(self, form: str | None) -> str:
        words = [PRIORITY_WORDS[self.task.priority]] if self.task.priority != "normal" else []
        words += ["紧急情况"] if self.request.family == "emergency" else []
        return "".join(f"【{w}】" for w in words)

    def constraint_layouts(self, said: list[str]) -> dict[str, Callable[[], str]]:
        return {
            "sentences": lambda: "".join(f"{s}。" for s in said),
            "first": lambda: "".join(f"{s}。" for s in said),
            "parenthetical": lambda: "(" + ";".join(said) + ")",
            "semicolons": lambda: ";" + ";".join(said),
            "also": lambda: "另外," + ",".join(said) + "。",
            "bullets": lambda: "\n" + "\n".join(f"- {s}" for s in said),
            "numbered": lambda: "要求:\n" + "\n".join(f"{i}. {s}" for i, s in enumerate(said, start=1)),
            "telegraphic": lambda: "|" + ",".join(said),
        }

    def field_layouts(self, rows: list[tuple[str, str]]) -> dict[str, Callable[[], str]]:
        return {
            "bullets": lambda: "\n".join(f"- {k}:{v}" for k, v in rows),
            "form": lambda: "|".join(f"{k}:{v}" for k, v in rows),
            "kv": lambda: ";".join(f"{k}={v}" for k, v in rows),
            "lines": lambda: "\n".join(f"【{k}】{v}" for k, v in rows),
        }

    def finish(self, text: str) -> str:
        text = re.sub(r"[,;]+([。?!])", r"\1", text)
        text = re.sub(r"。。+", "。", text)
        text = re.sub(r"([?!])。", r"\1", text)
        return text.strip()


def with_typos(base: Pattern, name: str) -> Pattern:
    """`base` with same-sounding words typed in for some of its own words (never a name, number, cargo or drawn
    sentence), as a pinyin keyboard does."""

    def write(voice: Voice, rng: np.random.Generator) -> str:
        text = base.write(voice, rng)
        spans = protected_spans(text, fact_phrases(voice))
        found = [
            (m.start(), m.end(), HOMOPHONES[m.group()])
            for m in re.finditer("|".join(HOMOPHONES), text)
            if outside(spans, m.start(), m.end())
        ]
        if not found:
            return text
        chosen = sorted(rng.choice(len(found), size=max(1, len(found) // 2), replace=False), reverse=True)
        for i in chosen:
            start, end, typed = found[int(i)]
            text = text[:start] + typed + text[end:]
        return text

    return Pattern(name, write, base.families, base.needs_deadline, base.reference)


# The constructions of issue 37: what a request rules out, in what order it ends, quantities as people spell them.
NEW_CONSTRUCTIONS: tuple[Pattern, ...] = (
    one_of(
        "exclusion",
        (
            "{lead}{clause}{deadline},除了{x}都行。{rest}",
            "{lead}{clause}{deadline},不要用{x}。{rest}",
            "{lead}{clause}{deadline},别派{x}。{rest}",
            "{lead}{clause}{deadline},哪架都行,就是别用{x}。{rest}",
        ),
        condition=excludes,
        adds_fact=True,
    ),
    templated(
        "forbidden_overflight",
        "{lead}{clause}{deadline}。{constraints}{asides}",
        condition=avoids,
        constraints="overflight",
    ),
    one_of(
        "ordered_ending",
        (
            "{lead}先把{cargo}从{o}送到{w},完事后停到{d}{deadline}。{rest}",
            "{lead}从{o}带上{cargo}先去{w},办完再降落到{d}{deadline}。{rest}",
            "{lead}把{cargo}从{o}送到{w},结束后最后落在{d}{deadline}。{rest}",
        ),
        VIA,
        w="then",
    ),
    spelled_units(templated("unit_spellings", "{lead}{clause}{deadline}。{rest}"), "unit_spellings"),
    templated(
        "headline",
        "{tag}{headline}{deadline}{constraints}。{asides}",
        CARGO_ROUTES,
        deadline="tele",
        constraints="telegraphic",
    ),
    one_of(
        "reversed_order",
        (
            "{lead}到{d},从{o}出发{route}:{cargo}{deadline}。{rest}",
            "{lead}送去{d},从{o}起飞{route}:{cargo}{deadline}。{rest}",
        ),
        TO_FROM,
    ),
    one_of(
        "via_phrases",
        (
            "{lead}把{cargo}从{o}送到{d},中途在{w}停一下{deadline}。{rest}",
            "{lead}把{cargo}从{o}运到{d},路上顺便去一趟{w}{deadline}。{rest}",
            "{lead}从{o}把{cargo}送去{d},半路在{w}落一下{deadline}。{rest}",
        ),
        VIA,
        w="then",
    ),
    with_mistyped_id(templated("typo_ids", "{lead}{clause}{deadline}。{rest}"), "typo_ids"),
    templated("rule_violating_demand", "{lead}{clause}{deadline}。{rest_reworded}", condition=demands),
)

POLITE = templated("polite_mafan", "{lead}麻烦{clause}{deadline},谢谢。{rest}")
PLEASE = templated("polite_qing", "{lead}请{clause}{deadline}。{rest}")

PATTERNS: tuple[Pattern, ...] = (
    # --- the whole request as one clause: every family -----------------------------------------------------------
    templated("imperative", "{lead}{clause}{deadline}。{rest}"),
    PLEASE,
    POLITE,
    templated("question_neng_bu_neng", "{lead}能不能{clause}{deadline}?{rest}"),
    templated("hedges_and_filler", "那个,要是方便的话,帮忙{clause}{deadline}{tail}吧,辛苦了。{rest}"),
    templated("bang_wo", "{lead}帮我{clause}{deadline}。{rest}"),
    templated("xuyao_ni", "{lead}需要你{clause}{deadline}。{rest}"),
    templated("shei_neng", "{lead}谁能{clause}{deadline}?{rest}"),
    templated("greeting_signoff", "各位好,{clause}{deadline}{tail}。{rest}谢谢!——调度台"),
    templated("radio_call", "调度调度,这里是运营。{lead}{clause}{deadline}。{rest}完毕。"),
    templated("chat_shorthand", "{lead}{clause}{deadline},谢啦。{rest}"),
    templated("priority_tail", "{clause}{deadline}{tail}。{rest}"),
    templated("ticket", "【工单】{tag}{clause}{deadline}。{rest}"),
    templated("hao_ma", "{lead}{clause}{deadline},好吗?{rest}"),
    templated("task_handover", "{lead}这个任务交给你:{clause}{deadline}。{rest}"),
    templated("baituo", "{lead}拜托{clause}{deadline}。{rest}"),
    templated("laojia_yixia", "{lead}劳驾安排一下,{clause}{deadline}。{rest}"),
    templated("ba_particle", "{lead}{clause}{deadline}吧。{rest}"),
    templated("constraints_first", "{constraints}{lead}{clause}{deadline}。{asides}", constraints="first"),
    templated(
        "parenthetical_constraints", "{lead}{clause}{deadline}{constraints}。{asides}", constraints="parenthetical"
    ),
    templated("semicolon_constraints", "{lead}{clause}{deadline}{constraints}。{asides}", constraints="semicolons"),
    templated("also_tail", "{lead}{clause}{deadline}。{constraints}{asides}", constraints="also"),
    templated("numbered_constraints", "{lead}{clause}{deadline}。{constraints}\n{asides}", constraints="numbered"),
    with_typos(POLITE, "typos"),
    with_typos(PLEASE, "typos_qing"),
    # --- routes written as fields, arrows or steps -----------------------------------------------------------------
    templated("bullet_fields", "{lead}无人机任务:\n{fields}\n{asides}", ROUTES, fields="bullets"),
    templated("colon_form", "{fields}。{asides}", ROUTES, fields="form"),
    templated("key_value", "{fields}。{asides}", ROUTES, fields="kv"),
    templated("header_lines", "无人机调度申请\n{fields}\n{asides}", ROUTES, fields="lines"),
    arrow_templated("telegraphic_arrow", "{tag}{arrow}{deadline}{constraints}。{asides}", deadline="tele"),
    arrow_templated(
        "telegraphic_ascii_arrow", "{tag}{arrow}{deadline}{constraints}。{asides}", arrow="ascii", deadline="paren"
    ),
    arrow_templated(
        "telegraphic_dash_arrow", "{tag}{arrow}{deadline}{constraints}{asides}", arrow="dash", deadline="tele"
    ),
    # --- a cargo from one place to another --------------------------------------------------------------------------
    templated("ba_construction", "{lead}把{cargo}从{o}送到{d}{route}{deadline}。{rest}", CARGO_ROUTES),
    templated("you_passive", "{lead}{cargo}由无人机从{o}运至{d}{route}{deadline}。{rest}", CARGO_ROUTES),
    templated("bei_passive", "{lead}{cargo}需要从{o}被送到{d}{route}{deadline}。{rest}", CARGO_ROUTES),
    sentences_templated("topic_comment", "{lead}{d}那边需要{cargo},东西在{o}。{route}{deadline}{rest}"),
    templated("implicit_origin", "{lead}{cargo}在{o},送去{d}{route}{deadline}。{rest}", CARGO_ROUTES),
    templated("destination_first", "{lead}送往{d}:{cargo},从{o}取货{route}{deadline}。{rest}", CARGO_ROUTES),
    templated(
        "question_ma",
        "{lead}可以派无人机把{cargo}从{o}送到{d}{route}吗?{deadline}{rest}",
        CARGO_ROUTES,
        deadline="sentence",
    ),
    templated("shi_de_cleft", "{lead}是{d}要{cargo},从{o}发货{route}{deadline}。{rest}", CARGO_ROUTES),
    templated("pickup_dropoff", "{lead}去{o}取{cargo},送到{d}{route}{deadline}。{rest}", CARGO_ROUTES),
    templated("women_xuyao", "{lead}我们在{d}需要{cargo},从{o}调过来{route}{deadline}。{rest}", CARGO_ROUTES),
    templated("wo_you", "{lead}我这有{cargo}在{o},要送去{d}{route}{deadline}。{rest}", CARGO_ROUTES),
    templated("jiang_formal", "{lead}将{cargo}自{o}运抵{d}{route}{deadline}。{rest}", CARGO_ROUTES),
    templated("xianxu_formal", "{lead}现需将{cargo}由{o}空运至{d}{route}{deadline}。{rest}", CARGO_ROUTES),
    templated("wubi", "{lead}务必把{cargo}从{o}送到{d}{route}{deadline}。{rest}", CARGO_ROUTES),
    templated("supervisor_relay", "{lead}领导交代,把{cargo}从{o}送到{d}{route}{deadline}。{rest}", CARGO_ROUTES),
    templated("ready_to_go", "{lead}{o}的{cargo}已经备好了,送去{d}吧{route}{deadline}。{rest}", CARGO_ROUTES),
    templated("origin_topic", "{lead}从{o}出发:{cargo}送到{d}{route}{deadline}。{rest}", CARGO_ROUTES),
    templated("dispatch_loading", "{lead}调一架无人机,在{o}装{cargo},目的地{d}{route}{deadline}。{rest}", CARGO_ROUTES),
    templated("wang_direction", "{lead}往{d}送{cargo},从{o}出发{route}{deadline}。{rest}", CARGO_ROUTES),
    templated("comma_run_on", "{lead}{cargo},{o}到{d}{route}{deadline},谢谢。{rest}", CARGO_ROUTES),
    templated("destination_waiting", "{lead}{d}在等{o}发出的{cargo}{route}{deadline}。{rest}", CARGO_ROUTES),
    templated("drone_available", "{lead}有空闲的无人机吗?{cargo},{o}到{d}{route}{deadline}。{rest}", CARGO_ROUTES),
    templated("they_are_waiting", "{lead}把{cargo}从{o}送到{d}{route}{deadline},那边等着用。{rest}", CARGO_ROUTES),
    sentences_templated("sender_recipient", "{lead}发件:{o};收件:{d};物品:{cargo}。{route}{deadline}{rest}"),
    templated(
        "cargo_weighing",
        "{lead}用无人机从{o}往{d}送{cargo}{route}{deadline}。{rest}",
        CARGO_ROUTES,
        cargo="weighing",
    ),
    templated("numbered_steps", "{lead}1. 去{o}装上{cargo};2. 飞到{d}{route}{deadline}。{rest}", CARGO_ROUTES),
    templated("qiuzhu", "{lead}求助:需要把{cargo}从{o}送到{d}{route}{deadline}。{rest}", CARGO_ROUTES),
    templated(
        "names_not_ids", "{lead}把{cargo}从{o}送过去给{d}{route}{deadline}。{rest}", CARGO_ROUTES, reference="names"
    ),
    templated(
        "descriptions",
        "{lead}把{cargo}从{o}送到{d}{route}{deadline}。{rest}",
        CARGO_ROUTES,
        reference="short",
        o="described",
        d="described",
    ),
    # --- the deadline said another way --------------------------------------------------------------------------------
    deadline_templated("zuichi_no_later_than", "{lead}把{cargo}从{o}送到{d}{route}{deadline}。{rest}", "no_later_than"),
    deadline_templated("by_time_at_the_latest", "{lead}把{cargo}从{o}运到{d}{route}{deadline}。{rest}", "at_latest"),
    deadline_templated("numbers_in_words", "{lead}把{cargo}从{o}送到{d}{route}{deadline}。{rest}", "words"),
    deadline_templated("deadline_first", "{lead}{deadline}把{cargo}从{o}送到{d}{route}。{rest}", "lead"),
    deadline_templated("only_have_time", "{lead}把{cargo}从{o}送到{d}{route}{deadline}。{rest}", "budget"),
    templated("clause_in_words_deadline", "{lead}{clause}{deadline}。{rest}", needs_deadline=True, deadline="words"),
    templated(
        "clause_no_later_than", "{lead}请{clause}{deadline}。{rest}", needs_deadline=True, deadline="no_later_than"
    ),
    *NEW_CONSTRUCTIONS,
)
