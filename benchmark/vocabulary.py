"""Bilingual words the generator names things with: entity kinds, distinguishing adjectives, map areas.

A descriptive name is "<adjective> <kind noun>" (unique per world) plus the area it lies in, e.g.
"the children's hospital on the north side" / "北侧的儿童医院".
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    en: str
    zh: str


KIND_NOUNS: dict[str, Term] = {
    "hospital": Term("hospital", "医院"),
    "school": Term("school", "学校"),
    "park": Term("park", "公园"),
    "accident_site": Term("site", "现场"),
    "depot": Term("drone depot", "无人机基地"),
    "charging_pad": Term("charging pad", "充电坪"),
    "metro_station": Term("metro station", "地铁站"),
    "police": Term("police station", "警察局"),
    "fire_station": Term("fire station", "消防站"),
    "vertiport": Term("vertiport", "垂直起降场"),
    "warehouse": Term("warehouse", "仓库"),
    "residential": Term("residential compound", "小区"),
    "office": Term("office tower", "写字楼"),
    "inspection_site": Term("inspection point", "巡检点"),
}

# Distinguishing words per kind; a world never gives two entities of one kind the same word.
ADJECTIVES: dict[str, tuple[Term, ...]] = {
    "hospital": (
        Term("children's", "儿童"),
        Term("general", "综合"),
        Term("university", "大学附属"),
        Term("maternity", "妇产"),
        Term("eye", "眼科"),
        Term("traditional-medicine", "中医"),
        Term("veterans'", "退役军人"),
    ),
    "school": (
        Term("No. 1 primary", "第一小"),
        Term("No. 2 primary", "第二小"),
        Term("experimental middle", "实验中"),
        Term("No. 3 middle", "第三中"),
        Term("Riverside primary", "江滨小"),
        Term("Hope primary", "希望小"),
        Term("foreign-language middle", "外国语中"),
    ),
    "park": (
        Term("riverside", "滨江"),
        Term("peace", "和平"),
        Term("botanical", "植物"),
        Term("memorial", "纪念"),
    ),
    "accident_site": (
        Term("traffic accident", "交通事故"),
        Term("building fire", "建筑火灾"),
        Term("gas leak", "燃气泄漏"),
        Term("collapsed scaffold", "脚手架坍塌"),
        Term("cardiac arrest", "心脏骤停急救"),
    ),
    "depot": (
        Term("central", "中心"),
        Term("logistics", "物流"),
        Term("municipal", "市政"),
    ),
    "charging_pad": (
        Term("No. 1", "1号"),
        Term("No. 2", "2号"),
        Term("No. 3", "3号"),
        Term("No. 4", "4号"),
        Term("No. 5", "5号"),
        Term("No. 6", "6号"),
    ),
    "metro_station": (
        Term("Central Square", "中心广场"),
        Term("Riverside", "江滨"),
        Term("Railway", "火车站"),
        Term("Market Street", "市场街"),
        Term("Stadium", "体育场"),
        Term("Museum", "博物馆"),
    ),
    "police": (
        Term("central", "中心"),
        Term("district", "分区"),
        Term("traffic", "交通"),
    ),
    "fire_station": (
        Term("No. 1", "第一"),
        Term("No. 2", "第二"),
        Term("No. 3", "第三"),
    ),
    "vertiport": (Term("rooftop", "屋顶"), Term("hub", "枢纽")),
    "warehouse": (
        Term("cold-chain", "冷链"),
        Term("parcel", "快递"),
        Term("pharmacy", "医药"),
    ),
    "residential": (
        Term("Maple Garden", "枫林"),
        Term("Lakeview", "湖景"),
        Term("Sunrise", "朝阳"),
        Term("Willow Bank", "柳岸"),
        Term("Harmony", "和谐"),
        Term("Pine Hill", "松山"),
    ),
    "office": (
        Term("Tech Park", "科技园"),
        Term("Finance Centre", "金融中心"),
        Term("Trade Tower", "贸易大厦"),
        Term("Media Plaza", "传媒广场"),
    ),
    "inspection_site": (
        Term("bridge pier", "桥墩"),
        Term("power pylon", "电力塔"),
        Term("water tower", "水塔"),
        Term("rooftop solar array", "屋顶光伏阵列"),
        Term("pipeline valve", "管道阀门"),
        Term("cell tower", "通信基站"),
        Term("substation", "变电站"),
    ),
}

# 3 x 3 split of the map, row-major from the south-west corner.
AREAS: tuple[tuple[Term, ...], ...] = (
    (
        Term("in the south-west", "西南部"),
        Term("on the south side", "南侧"),
        Term("in the south-east", "东南部"),
    ),
    (
        Term("on the west side", "西侧"),
        Term("in the city centre", "市中心"),
        Term("on the east side", "东侧"),
    ),
    (
        Term("in the north-west", "西北部"),
        Term("on the north side", "北侧"),
        Term("in the north-east", "东北部"),
    ),
)

NFZ_REASONS: dict[str, Term] = {
    "government": Term("government district, permanent restriction", "政府办公区,永久禁飞"),
    "prison": Term("correctional facility, permanent restriction", "监管场所,永久禁飞"),
    "airport": Term("airport approach path, permanent restriction", "机场进近航道,永久禁飞"),
    "military": Term("military site, permanent restriction", "军事管理区,永久禁飞"),
    "power_plant": Term("power plant, permanent restriction", "发电厂,永久禁飞"),
    "police_operation": Term("police operation, temporary restriction", "警方行动,临时禁飞"),
    "public_event": Term("public event, temporary restriction", "大型活动,临时禁飞"),
    "fire_fighting": Term("fire-fighting operation, temporary restriction", "消防作业,临时禁飞"),
    "vip_visit": Term("VIP visit, temporary restriction", "要员来访,临时禁飞"),
}
PERMANENT_NFZ_REASONS = ("government", "prison", "airport", "military", "power_plant")
TEMPORARY_NFZ_REASONS = (
    "police_operation",
    "public_event",
    "fire_fighting",
    "vip_visit",
)


# A school's adjective already says primary / middle: its name only adds the character for "school".
_NAME_NOUN_ZH = {"school": "学"}


def entity_name(kind: str, adjective: Term) -> Term:
    noun = KIND_NOUNS[kind]
    return Term(f"{adjective.en} {noun.en}", adjective.zh + _NAME_NOUN_ZH.get(kind, noun.zh))


def area_of(x: float, y: float, width: float, depth: float) -> Term:
    col = min(2, int(3 * x / width))
    row = min(2, int(3 * y / depth))
    return AREAS[row][col]
