"""Words of fleet requests written by hand (2026-11-28): a team listed by its UAVs pins them, a Chinese name said
without its street grounds, and filming "the drop-off" or filming with no object films the one site the cargo goes
to. Each case failed before (unaccounted UAVs asked about; no destination; a film sub-task lost)."""

from __future__ import annotations

import pytest

from language.grounding import name_variants
from language.mentions import find_mentions
from language.stated import normalised, stated_constraints, uav_roles_in
from language.team import read_request, read_team
from tests.support.paths import ROOT
from tools.world import World, load_world


@pytest.fixture(scope="module")
def fleet_city() -> World:
    return load_world(ROOT / "examples" / "fleet_city.json")


@pytest.mark.parametrize(
    "text",
    [
        "Split 8 kg of sandbags between uav_01 and uav_02 and take them from the sandbag depot to the flood site.",
        "Share the 9 kg among uav_01, uav_02 and uav_03 from the sandbag depot to the flood site.",
        "由uav_01和uav_02分装8公斤沙袋，从沙袋仓库运到滨河路内涝点。",
    ],
)
def test_a_team_listed_by_its_uavs_pins_every_one(fleet_city, text):
    roles = uav_roles_in(text.lower(), find_mentions(text.lower(), fleet_city))
    assert roles and set(roles.values()) == {"pinned"}, roles


def test_uavs_offered_as_alternatives_are_not_pinned_by_the_list_rule(fleet_city):
    text = "take the sandbags from the sandbag depot to the flood site, maybe uav_01 or uav_02"
    assert "pinned" not in uav_roles_in(text, find_mentions(text, fleet_city)).values()


def test_a_chinese_name_said_without_its_street_grounds(fleet_city):
    assert name_variants("滨河路内涝点")[-1] == "内涝点"
    assert "市场街地铁站" in name_variants("城区的市场街地铁站")  # the street kept in a variant before the bare one
    assert name_variants("中山路医院")[-1] == "中山路医院"  # a bare kind word is left to the kind words
    stated = stated_constraints("把10公斤沙袋从沙袋仓库运到内涝点，用三架无人机。", fleet_city)
    assert "flood_site_1" in stated.destinations and "flood_site_1" in stated.places


@pytest.mark.parametrize(
    "text",
    [
        "Deliver 2 kg of tools from the hardware warehouse to the construction site, and have a second drone with a "
        "camera film the drop-off.",
        "The construction site needs 2 kg of tools from the hardware warehouse; while one drone delivers it, another "
        "one with a camera should film the site.",
        "港口街工地需要五金仓库的2公斤工具,一架无人机送货,另一架带摄像头的无人机同时拍摄。",
    ],
)
def test_filming_the_drop_off_films_the_one_site(fleet_city, text):
    sketch = read_team(text, fleet_city)
    assert sketch is not None and sketch.kinds == ["roles"], sketch
    assert {(s.role, s.destination) for s in sketch.subtasks} == {
        ("film", "construction_site_1"),
        ("deliver", "construction_site_1"),
    }


@pytest.mark.parametrize(
    "text",
    [
        "split 8 kg of sandbags from the sandbag depot to the flood site across two drones. do not use uav_01 or uav_02.",
        "take the sandbags from the sandbag depot to the flood site without uav_01, uav_02 or uav_03",
        "除了uav_01和uav_02，其他无人机把8公斤沙袋从沙袋仓库运到内涝点",
    ],
)
def test_every_uav_of_a_list_left_out_is_excluded(fleet_city, text):
    """Before, only the first UAV after 'do not use' was left out; the second was asked about (unaccounted)."""
    roles = uav_roles_in(text, find_mentions(text, fleet_city))
    assert roles and set(roles.values()) == {"excluded"}, roles


@pytest.mark.parametrize(
    ("text", "pinned"),
    [
        (
            "Use uav_03 and uav_04 to haul 8 kg of sandbags from the sandbag depot to the flood site.",
            {"uav_03", "uav_04"},
        ),
        (
            "uav_03 and uav_04 should carry 8 kg of sandbags from the sandbag depot to the flood site.",
            {"uav_03", "uav_04"},
        ),
        ("Send uav_01, uav_02 & uav_03 with 12 kg of sandbags to the flood site.", {"uav_01", "uav_02", "uav_03"}),
        ("用uav_01和uav_02把8公斤沙袋从沙袋仓库运到内涝点。", {"uav_01", "uav_02"}),
    ],
)
def test_a_uav_listed_beside_a_pinned_one_is_pinned_too(fleet_city, text, pinned):
    """Written by hand 2026-11-28: the second UAV of "use uav_03 and uav_04" has no verb of its own and was asked
    about ("'uav_04' is named, but neither as the UAV to fly nor as one to leave out")."""
    lowered = text.lower()
    roles = uav_roles_in(lowered, find_mentions(lowered, fleet_city))
    assert {u for u, role in roles.items() if role == "pinned"} == pinned, roles


def test_a_list_shares_a_left_out_role_and_or_pins_neither(fleet_city):
    text = "not uav_01 and uav_02 today: take 3 kg from the sandbag depot to the flood site with uav_03 or uav_04"
    roles = uav_roles_in(text, find_mentions(text, fleet_city))
    assert roles["uav_01"] == roles["uav_02"] == "excluded", roles
    assert roles["uav_04"] != "pinned", roles  # "or" offers a choice: the list rule pins no alternative


def test_the_other_drone_is_not_a_reference_to_places_of_kind_other(fleet_city):
    """fleet_city has three places of the catch-all kind "other": "the other drops ..." was asked about as "which one
    is meant by the other (3 in this world)?"."""
    text = "Two drones: one films the flood site from above, the other drops 2 kg of sandbags there from the sandbag depot."
    assert stated_constraints(text, fleet_city).unresolved == []
    sketch = read_team(text, fleet_city)
    assert sketch is not None and sketch.kinds == ["roles"]


def test_a_name_goes_by_its_last_two_words_unless_they_are_a_kind_or_a_generic_place_noun(fleet_city):
    """ "old bridge pier in the river" said as "the bridge pier"; not "West Gate metro station" as "metro station"
    (the kind's words) nor "the substation inspection point" as "inspection point" (any inspection point). A place
    word of a name is not a name by itself: "the cafe on Harbour Street" is not the construction site on it."""
    stated = stated_constraints("Photograph the bridge pier from the south charging pad.", fleet_city)
    assert "inspection_site_3" in stated.referenced, stated.referenced
    text = "take 2 kg of tools from the hardware warehouse to the cafe on harbour street."
    assert "construction_site_1" not in [i for m in find_mentions(text, fleet_city) for i in m.ids]


@pytest.mark.parametrize(
    ("text", "unknown"),
    [
        (
            "Photograph the sluice gate, the pumping station, the old mill and the east levee within 2 minutes.",
            "old mill",
        ),
        (
            "Get photos of all four points (sluice gate, pumping station, water tower, east levee) using two drones.",
            "water tower",
        ),
        ("Inspect the sluice gate, the pumping station and the water tower.", "water tower"),
        ("拍摄水闸、泵站、水塔和东堤，两架无人机。", "水塔"),
    ],
)
def test_a_listed_place_the_world_lacks_is_asked_about_not_dropped(fleet_city, text, unknown):
    """Written by hand 2026-11-28: the place the world lacks was left out and the others flown ("execute")."""
    stated = stated_constraints(text, fleet_city)
    assert any(f"'{unknown}' is listed with the places" in span for span in stated.unaccounted), stated.unaccounted


@pytest.mark.parametrize(
    "text",
    [
        "Photograph the sluice gate, the pumping station and the east levee with two drones.",
        "Inspect the sluice gate and the pumping station and report back.",
        "Fly over the sluice gate and the pumping station, then land at the south charging pad.",
        "Send an AED from the hospital to the crash and the metro station, one drone to each site within 3 minutes.",
        "We need eyes on the sluice gate, the pumping station and the east levee, all done in under 5 min.",
        "用两架带摄像头的无人机巡检水闸、泵站和东堤,分头完成,限时4分钟。",
        "I want the four river inspection points photographed - sluice gate, pumping station, bridge pier, east levee.",
        # a clause after the list is no place (review 2026-11-28)
        "Photograph the sluice gate and the pumping station and then return.",
        "Photograph the sluice gate and the pumping station and upload the photos.",
        "Photograph the sluice gate and the pumping station and assess the damage.",
        "Photograph the sluice gate, the pumping station and the surroundings.",
        "巡检水闸和泵站及周边",
        "拍摄水闸和泵站及时回传画面",
    ],
)
def test_a_list_of_places_the_world_has_asks_nothing(fleet_city, text):
    stated = stated_constraints(text, fleet_city)
    assert not [s for s in stated.unaccounted if "is listed with the places" in s], stated.unaccounted


def test_filming_a_place_named_again_beside_a_load_too_heavy_for_one_uav_is_two_roles(fleet_city):
    """Written by hand 2026-11-28: "... to the flood site and, at the same time, film the flood site with a camera
    drone" was read as a split load alone and the filming dropped (the place's second naming is no mention of its
    own); it is a camera and a load shared by two carriers."""
    text = (
        "Could you get 6 kg of sandbags from the sandbag depot to the flood site and, at the same time, film the "
        "flood site with a camera drone?"
    )
    sketch = read_team(text, fleet_city)
    assert sketch is not None and sketch.kinds == ["roles"] and sketch.min_uavs == 3
    film, deliver = sketch.subtasks
    assert (film.role, film.destination) == ("film", "flood_site_1")
    assert (deliver.payload_kg, deliver.split, deliver.origin) == (6.0, True, "warehouse_1")


def test_a_camera_the_words_ask_for_is_required_even_where_no_one_is_read_to_film(fleet_city):
    """The fidelity gate's reading asks for the camera from the words, not only from the sketch it checks."""
    text = "Get 6 kg of sandbags to the flood site from the sandbag depot; also I'd like video of the flood site."
    assert "camera" in read_request(text, fleet_city).observing_sensors


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("Send two drones with 4 kg each from the sandbag depot to the flood site.", 2),
        ("Three drones, 3 kg of sandbags apiece, from the sandbag depot to the flood site.", 3),
        ("派两架无人机从沙袋仓库往内涝点运沙袋，每架4公斤。", 2),
    ],
)
def test_a_mass_said_of_each_uav_is_each_ones_load(fleet_city, text, count):
    """Written by hand 2026-11-28: "two drones with 4 kg each" flew 4 kg in all (3 + 1)."""
    sketch = read_team(text, fleet_city)
    assert sketch is not None and len(sketch.subtasks) == count == sketch.min_uavs
    assert {(s.payload_kg, s.split, s.destination) for s in sketch.subtasks} == {
        (sketch.subtasks[0].payload_kg, False, "flood_site_1")
    }
    assert sketch.subtasks[0].payload_kg in (3.0, 4.0)


@pytest.mark.parametrize(
    "text",
    [
        "Both AEDs from the hospital - one to the ring road crash, one to West Gate metro - and keep every drone low.",
        "From the hospital, get one AED to the metro station and one to the crash site, and make sure uav_06 goes to "
        "the metro station.",
    ],
)
def test_one_to_a_place_and_one_to_another_is_parallel_sites(fleet_city, text):
    """Written by hand 2026-11-28: read as one UAV for both (the route reached one site; the operator was asked)."""
    sketch = read_team(text, fleet_city)
    assert sketch is not None and sketch.kinds == ["parallel_sites"]
    assert set(sketch.sites) == {"accident_site_1", "metro_station_1"}


@pytest.mark.parametrize(
    "text",
    [
        "Not a drill - AEDs from the midtown vertiport to the crash and to the metro station at the same time.",
        "No time to lose: one AED to the crash, one to the metro station, from the midtown vertiport.",
    ],
)
def test_a_negation_before_a_cargo_sensor_word_keeps_the_sensor(fleet_city, text):
    """Review 2026-11-28: the sensor-word negation is the observing sensor's own phrase ("no camera needed"); a
    "not"/"no" before an AED asks no less for the defibrillator bay."""
    assert read_request(text, fleet_city).cargo_sensors == ["defibrillator_bay"]


@pytest.mark.parametrize(
    "text",
    [
        "Use uav_01, uav_02 out of action, to take 4 kg of sandbags from the sandbag depot to the flood site.",
        "Use uav_01, uav_02 too slow. Take 4 kg of sandbags from the sandbag depot to the flood site.",
        "用uav_01和uav_02当备用，把4公斤沙袋从沙袋仓库运到内涝点。",
        "Take 4 kg of sandbags to the flood site with uav_01, uav_02 as backup.",
        "Use uav_01 and uav_02 or uav_09 to haul 8 kg of sandbags from the sandbag depot to the flood site.",
    ],
)
def test_a_uav_listed_with_a_remark_of_its_own_is_not_pinned_by_the_list(fleet_city, text):
    """Review 2026-11-28: "uav_02 out of action", "as backup", "or uav_09" after the list: uav_02 is not pinned."""
    lowered = normalised(text)
    assert uav_roles_in(lowered, find_mentions(lowered, fleet_city)).get("uav_02") != "pinned"


@pytest.mark.parametrize(
    "text",
    [
        "Of the three cargo drones, send two with 4 kg each from the sandbag depot to the flood site.",
        "Use two drones to carry three bags of 4 kg each from the sandbag depot to the flood site.",
        "Take 8 kg from the sandbag depot to the flood site with two drones, at most 4 kg per drone.",
    ],
)
def test_a_mass_each_is_not_multiplied_by_an_unclear_count_or_read_from_a_limit(fleet_city, text):
    sketch = read_team(text, fleet_city)
    assert sketch is not None and len(sketch.subtasks) == 1 and sketch.subtasks[0].split


def test_filming_prefers_the_place_named_after_the_words(fleet_city):
    text = "Get 6 kg of sandbags from the sandbag depot to the flood site and film the sandbag depot."
    sketch = read_team(text, fleet_city)
    assert sketch is not None and next(s.destination for s in sketch.subtasks if s.role == "film") == "warehouse_1"


def test_a_sensor_merely_mentioned_is_not_asked_for(fleet_city):
    text = "Split 8 kg of sandbags from the sandbag depot to the flood site between uav_01 and uav_02; uav_05's camera is broken."
    assert read_request(text, fleet_city).observing_sensors == []


def test_a_chinese_uav_subject_of_a_task_from_a_place_flies(fleet_city):
    """Written by hand 2026-11-28: "uav_09从五金仓库运3公斤工具过去" (uav_09 brings the tools from the warehouse) was asked
    about as a UAV named neither to fly nor to leave out."""
    text = normalised("让uav_07拍摄港口街工地，uav_09从五金仓库运3公斤工具过去。")
    assert uav_roles_in(text, find_mentions(text, fleet_city)) == {"uav_07": "pinned", "uav_09": "pinned"}


def test_a_second_drone_is_no_duration(fleet_city):
    """2026-11-28: "have a second drone ... film the drop-off" read "second" as a time unit the reader could not
    read, so the embedded model's slots let it write a deadline: it wrote 90 s, and 10 of 200 test_fleet samples
    asked the operator over a deadline the request never gave."""
    text = (
        "Deliver 2 kg of tools from depot_1 to the flood site, and have a second drone with a camera film the drop-off."
    )
    assert not stated_constraints(text, fleet_city).unread_duration
    assert stated_constraints(
        "Get it to the flood site from depot_1 in a couple of minutes.", fleet_city
    ).unread_duration


# --- 2026-11-28, second pass: counted items, even shares, head lists, "eyes on", counted sites ---------------------


@pytest.mark.parametrize(
    ("text", "shares", "uavs"),
    [
        ("Split 8 kg of sandbags evenly between uav_01 and uav_02 from the sandbag depot to the flood site.", 2, True),
        (
            "Put half of the 8 kg of sandbags on uav_01 and half on uav_02, from the sandbag depot to the flood site.",
            2,
            True,
        ),
        ("Split 8 kg of sandbags equally among three drones from the sandbag depot to the flood site.", 3, False),
        ("从沙袋仓库运8公斤沙袋到内涝点，两架无人机平分。", 2, False),
    ],
)
def test_even_shares_are_a_delivery_per_uav_of_the_same_mass(fleet_city, text, shares, uavs):
    sketch = read_team(text, fleet_city)
    assert sketch is not None and len(sketch.subtasks) == shares
    assert [t.payload_kg for t in sketch.subtasks] == pytest.approx([8.0 / shares] * shares)
    assert all(not t.split for t in sketch.subtasks)
    if uavs:
        assert [t.uavs for t in sketch.subtasks] == [["uav_01"], ["uav_02"]]


def test_a_load_of_items_is_shared_in_whole_items(fleet_city):
    sketch = read_team("Take three bags of 3 kg each from the sandbag depot to the flood site.", fleet_city)
    assert sketch is not None and sketch.min_uavs == 3  # a 5 kg UAV carries one 3 kg bag, not one and two thirds
    assert [(t.payload_kg, t.item_kg, t.split) for t in sketch.subtasks] == [(9.0, 3.0, True)]


@pytest.mark.parametrize(
    "text",
    [
        "uav_05 and uav_06: one AED each, to the crash on the ring road and to the West Gate metro station.",
        "uav_01, uav_02: 8 kg of sandbags from the sandbag depot to the flood site.",
        "I want 8 kg of sandbags at the flood site from the sandbag depot, but only uav_01 and uav_02 may fly.",
    ],
)
def test_uavs_listed_at_the_head_or_allowed_to_fly_are_pinned(fleet_city, text):
    roles = uav_roles_in(normalised(text), find_mentions(normalised(text), fleet_city))
    assert roles and set(roles.values()) == {"pinned"}, roles


@pytest.mark.parametrize(
    ("text", "observed", "carrier"),
    [
        (
            "Get eyes on the flood site and have another drone drop 3 kg of sandbags there from the sandbag depot.",
            "flood_site_1",
            [],
        ),
        (
            "Put eyes on the pumping station while uav_09 drops 2 kg of tools at the construction site on Harbour "
            "Street from the hardware warehouse.",
            "inspection_site_2",
            ["uav_09"],
        ),
    ],
)
def test_watching_words_and_a_named_carrier_without_a_camera_make_roles(fleet_city, text, observed, carrier):
    sketch = read_team(text, fleet_city)
    assert sketch is not None and sketch.kinds == ["roles"]
    film, deliver = sketch.subtasks
    assert film.destination == observed and "camera" in film.required_sensors
    assert deliver.uavs == carrier and deliver.destination != observed or not carrier


def test_a_named_carrier_delivers_to_the_other_place_named(fleet_city):
    text = (
        "Put eyes on the pumping station while uav_09 drops 2 kg of tools at the construction site on Harbour Street "
        "from the hardware warehouse."
    )
    deliver = read_team(text, fleet_city).subtasks[1]
    assert (deliver.origin, deliver.destination) == ("warehouse_2", "construction_site_1")


def test_thermal_pictures_are_an_observation_with_a_thermal_camera(fleet_city):
    text = "Take thermal pictures of the east levee and the old bridge pier using two drones."
    stated = stated_constraints(text, fleet_city)
    assert stated.intent.value == "monitoring" and not stated.missing
    sketch = read_team(text, fleet_city)
    assert sketch is not None and all("thermal" in t.required_sensors for t in sketch.subtasks)


@pytest.mark.parametrize(
    ("text", "asked"),
    [
        ("Inspect three sites - the sluice gate and the pumping station - with two camera drones.", "'3 sites'"),
        ("用两架无人机巡检三个地点：水闸和泵站。", "'3个地点'"),
    ],
)
def test_fewer_places_named_than_counted_asks_which_is_missing(fleet_city, text, asked):
    unaccounted = stated_constraints(text, fleet_city).unaccounted
    assert any(asked in u and "2 are named" in u for u in unaccounted), unaccounted


def test_as_many_places_named_as_counted_asks_nothing(fleet_city):
    text = "Inspect both sites, the sluice gate and the pumping station, with two camera drones."
    assert stated_constraints(text, fleet_city).unaccounted == []


# --- found by an independent review of the second pass ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Within 5 min drop bags of 2 kg each at the flood site from the sandbag depot.",
        "Send 2 drones with sandbags of 1 kg each to the flood site.",
        "Fly at 60 m with bags of 2 kg each to the flood site.",
        "Take 1,000 bags of 1 kg each to the flood site.",
        "Take 0 bags of 3 kg each to the flood site.",
    ],
)
def test_a_number_that_counts_no_items_is_no_count_of_them(fleet_city, text):
    """A duration, drones, an altitude, a thousands group or zero before "bags of X kg each": how many is asked."""
    stated = stated_constraints(text, fleet_city)
    assert stated.payload_item_kg is None and any("what one item weighs" in m for m in stated.missing), stated


@pytest.mark.parametrize("text", ["Take a 5 l bottle weighing 2 kg to the flood site.", "Bring a 40 cm box of 3 kg."])
def test_a_measure_before_one_item_is_no_count(fleet_city, text):
    stated = stated_constraints(text, fleet_city)
    assert stated.payload_kg in (2.0, 3.0) and stated.payload_item_kg is None


def test_items_weighing_a_mass_without_each_ask_each_or_in_all(fleet_city):
    stated = stated_constraints("Take two bags weighing 4 kg from the sandbag depot to the flood site.", fleet_city)
    assert any("4 kg each, or in all?" in m for m in stated.missing)


def test_as_many_items_as_sites_is_an_item_a_site(fleet_city):
    text = "Take two bags of 2 kg each from the sandbag depot, one to the flood site and one to the pumping station."
    sketch = read_team(text, fleet_city)
    assert sketch is not None and [t.payload_kg for t in sketch.subtasks] == [2.0, 2.0]


@pytest.mark.parametrize(
    "text",
    [
        "uav_05 and uav_06: do not use them. Film the flood site.",
        "uav_01 and uav_02: busy. Take 3 kg of sandbags from the sandbag depot to the flood site.",
        "uav_07 and uav_08: low battery, leave them. Film the flood site.",
        "Half on uav_01 is too much; split 8 kg of sandbags between two drones.",
    ],
)
def test_a_remark_on_listed_or_loaded_uavs_pins_none(fleet_city, text):
    roles = uav_roles_in(normalised(text), find_mentions(normalised(text), fleet_city))
    assert "pinned" not in roles.values(), roles


def test_not_loading_onto_a_uav_leaves_it_out(fleet_city):
    text = "Do not load sandbags onto uav_01, it is reserved; take 3 kg from the sandbag depot to the flood site."
    assert uav_roles_in(normalised(text), find_mentions(normalised(text), fleet_city)) == {"uav_01": "excluded"}


@pytest.mark.parametrize(
    "text",
    [
        "Film the flood site while another drone drops 3 kg of sandbags there from the sandbag depot, passing the "
        "midtown vertiport.",
        "Film the flood site near the pumping station while another drone drops 3 kg of sandbags there from the "
        "sandbag depot.",
    ],
)
def test_cargo_said_to_go_there_goes_to_the_filmed_place(fleet_city, text):
    sketch = read_team(text, fleet_city)
    assert sketch is not None and sketch.subtasks[1].destination == "flood_site_1"


def test_even_shares_with_one_named_uav_do_not_crash(fleet_city):
    sketch = read_team(
        "Use uav_01 and split 8 kg of sandbags evenly from the sandbag depot to the flood site.", fleet_city
    )
    assert sketch is not None and sketch.min_uavs >= 2


@pytest.mark.parametrize(
    "text",
    [
        "Move 3 kg of sandbags between both places: from the sandbag depot to the flood site.",
        "Inspect the sluice gate; skip the other three sites.",
        "Take 3 kg of sandbags from the sandbag depot to the flood site, one of our 5 drop points today.",
        "Film the flood site from two spots.",
    ],
)
def test_a_count_of_other_places_asks_nothing(fleet_city, text):
    assert not [u for u in stated_constraints(text, fleet_city).unaccounted if "are asked for" in u]


def test_all_eyes_on_is_no_camera(fleet_city):
    text = "All eyes on the flood site: rush 3 kg of sandbags there from the sandbag depot."
    assert read_team(text, fleet_city) is None


# --- found by a second independent review ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "The video team at the flood site needs 2 kg of batteries.",  # a delivery: before, read as filming
        "Photographers at the flood site need 2 kg of water from the sandbag depot.",
        "Bring the camera (1 kg) from the sandbag depot to the flood site.",
        "Take 2 kg of photo equipment from the west drone depot to the West Gate metro station.",
        "uav_05 has a broken camera. Send 1 kg of bandages from the west drone depot to the West Gate metro station.",
        "Send 2 kg of sandbags from the sandbag depot to the sluice gate; photos are not needed.",
        "拍摄队在滨河路内涝点需要2公斤电池，从沙袋仓库取。",
    ],
)
def test_a_camera_word_in_a_delivery_asks_for_no_camera(fleet_city, text):
    """A camera the cargo is, people who film, a broken camera, photos not needed: no UAV is sent to observe."""
    assert read_request(text, fleet_city).observing_sensors == []


@pytest.mark.parametrize(
    ("text", "sensors"),
    [("Film the flood site.", ["camera"]), ("Take thermal pictures of the flood site.", ["thermal"])],
)
def test_one_uav_sent_to_observe_carries_the_sensor_named(fleet_city, text, sensors):
    assert read_request(text, fleet_city).observing_sensors == sensors


@pytest.mark.parametrize(
    ("text", "payload", "item"),
    [
        ("Take 3 bags of sand, 2 kg each from the sandbag depot to the flood site.", 6.0, 2.0),
        ("Take 3 kits of medicine, 2 kg apiece, from the hospital.", 6.0, 2.0),
        ("Take 3 medicine kits of 2 kg each to the flood site.", 6.0, 2.0),
        ("从沙袋仓库运3袋沙袋到滨河路内涝点，每袋3公斤。", 9.0, 3.0),
        ("运2公斤一袋的沙袋3袋，从沙袋仓库到内涝点。", 6.0, 2.0),
    ],
)
def test_a_count_said_apart_from_the_items_mass_is_read(fleet_city, text, payload, item):
    stated = stated_constraints(text, fleet_city)
    assert (stated.payload_kg, stated.payload_item_kg) == (payload, item)
    assert not [m for m in stated.missing if m.startswith("payload")]


def test_a_count_too_large_to_be_one_asks(fleet_city):
    stated = stated_constraints("Send 99999999999999999999 bags of 3 kg to the flood site.", fleet_city)
    assert stated.payload_item_kg is None and any("what one item weighs" in m for m in stated.missing)


@pytest.mark.parametrize(
    ("text", "meant"),
    [
        ("use drone 1 to go", "uav_01"),
        ("drone #3 takes it", "uav_03"),
        ("drone no. 4", "uav_04"),
        ("用1号无人机", "uav_01"),
        ("让三号机去", "uav_03"),
        ("无人机2号去", "uav_02"),
    ],
)
def test_a_uav_is_named_by_its_fleet_number(fleet_city, text, meant):
    assert [m.ids for m in find_mentions(text, fleet_city) if m.kind == "uav"] == [(meant,)]


@pytest.mark.parametrize(
    "text",
    ["drone 1 kg", "the drone 1 minute away", "无人机12号", "十二号机", "drone 12", "first drone 3rd stop"],
)
def test_a_number_beside_drone_that_is_no_fleet_number_names_no_uav(fleet_city, text):
    assert not [m for m in find_mentions(text, fleet_city) if m.kind == "uav"]


@pytest.mark.parametrize(
    "text",
    [
        "send the aed to the crash, except with uav_05",
        "send the aed to the crash, not with uav_05 though",
        "don't use drone 6 or drone 5; send the aed to the crash",
    ],
)
def test_except_with_and_fleet_numbers_leave_a_uav_out(fleet_city, text):
    roles = uav_roles_in(text, find_mentions(text, fleet_city))
    assert roles and set(roles.values()) == {"excluded"}, roles


@pytest.mark.parametrize(
    ("text", "excluded"),
    [
        ("uav_06's camera is broken. Send a drone to film the crash on the eastern ring road.", ["uav_06"]),
        ("uav_06 has a faulty camera; film the crash on the eastern ring road.", ["uav_06"]),
        ("uav_06的摄像头坏了，派一架无人机去东环路事故现场拍摄。", ["uav_06"]),
        # the broken camera is not what this request needs: uav_06 may still carry the AED
        ("uav_06's camera is broken; send an AED from the hospital to the crash on the eastern ring road.", []),
        ("uav_06's winch is broken; film the crash on the eastern ring road.", []),
    ],
)
def test_a_uav_whose_needed_sensor_is_said_broken_is_left_out(fleet_city, text, excluded):
    assert read_request(text, fleet_city).excluded_uavs == excluded


@pytest.mark.parametrize(
    "text",
    [
        "hospital_1 to accident_site_1, 1 kg, uav_05, within 90 seconds.",
        "1 kg from the hospital to the crash on the eastern ring road, uav_05.",
    ],
)
def test_a_uav_standing_as_an_item_of_a_terse_request_flies(fleet_city, text):
    lowered = text.lower()
    assert uav_roles_in(lowered, find_mentions(lowered, fleet_city)) == {"uav_05": "pinned"}


@pytest.mark.parametrize(
    ("text", "origins", "destinations"),
    [
        (
            "Deliver an AED to the West Gate metro station. Not from the hospital - take it from the west drone depot.",
            ["depot_1"],
            ["metro_station_1"],
        ),
        (
            "Take 2 kg of medicine from the west drone depot to the school instead of the hospital.",
            ["depot_1"],
            ["school_1"],
        ),
        (
            "Fly 1 kg from the hospital, not to the crash on the eastern ring road but to the rescue camp.",
            ["hospital_1"],
            ["rescue_camp_1"],
        ),
        # the 'at' of a drop-off after its cargo and origin
        (
            "A cargo drone drops 2 kg of rope from the hardware warehouse at the rescue camp.",
            ["warehouse_2"],
            ["rescue_camp_1"],
        ),
    ],
)
def test_a_place_ruled_out_is_no_end_and_a_drop_off_at_is_the_destination(fleet_city, text, origins, destinations):
    lowered = normalised(text)
    roles = {m.ids[0]: m.role for m in find_mentions(lowered, fleet_city) if m.kind == "entity"}
    assert [p for p, r in roles.items() if r == "origin"] == origins, roles
    assert [p for p, r in roles.items() if r == "destination"] == destinations, roles
    assert set(stated_constraints(text, fleet_city).referenced) == {*origins, *destinations}


@pytest.mark.parametrize(
    ("text", "observer"),
    [
        ("Take 2 kg of medicine from the hospital to the rescue camp and have uav_07 watch the drop.", "uav_07"),
        (
            "Get a thermal look at the east levee while a cargo drone drops 2 kg of rope from the hardware warehouse at the rescue camp.",
            None,
        ),
    ],
)
def test_a_uav_named_to_watch_or_a_second_drone_with_cargo_makes_roles(fleet_city, text, observer):
    sketch = read_team(text, fleet_city)
    assert sketch is not None and sketch.kinds == ["roles"], sketch
    film = [s for s in sketch.subtasks if s.role == "film"]
    assert film and (observer is None or film[0].uavs == [observer]), sketch


def test_one_uav_named_to_carry_and_film_stays_one(fleet_city):
    text = "Have uav_06 take 1 kg of medicine from the hospital to the rescue camp and film the drop."
    assert read_team(text, fleet_city) is None


@pytest.mark.parametrize(
    ("text", "shares", "payload"),
    [
        (
            "uav_01 carries 5 kg and uav_02 3 kg of sandbags from the sandbag depot to the flood site.",
            {"uav_01": 5, "uav_02": 3},
            8,
        ),
        (
            "Take 7 kg from the sandbag depot to the flood site: 4 kg on uav_03 and 3 kg on uav_02.",
            {"uav_03": 4, "uav_02": 3},
            7,
        ),
        ("把8公斤沙袋从沙袋仓库运到内涝点，1号机运5公斤，2号机运3公斤。", {"uav_01": 5, "uav_02": 3}, 8),
        # one UAV with a mass is the load it flies, no share
        ("Take 3 kg with uav_01 from the sandbag depot to the flood site.", {}, 3),
        ("Take 3 kg from the sandbag depot to the flood site with uav_01, not uav_02.", {}, 3),
    ],
)
def test_each_uav_given_a_mass_of_its_own_has_that_share(fleet_city, text, shares, payload):
    stated = read_request(text, fleet_city)
    assert stated.uav_shares_kg == shares and stated.payload_kg == payload and not stated.unaccounted, stated
    if shares:
        sketch = read_team(text, fleet_city)
        assert sketch is not None and {s.uavs[0]: s.payload_kg for s in sketch.subtasks} == shares, sketch


@pytest.mark.parametrize(
    ("text", "offered"),
    [
        (
            "fly 2 kg from the hospital to the metro station. uav_05 or uav_06, whichever has more battery.",
            ["uav_05", "uav_06"],
        ),
        ("take 3 kg from the sandbag depot to the flood site with uav_03 or uav_04", ["uav_03", "uav_04"]),
        ("send either uav_01, uav_02 or uav_03 with 3 kg to the flood site", ["uav_01", "uav_02", "uav_03"]),
        ("用uav_05或uav_06把1公斤药品从医院送到西门地铁站。", ["uav_05", "uav_06"]),
        # a left-out or remarked-on UAV keeps its role: nothing is offered
        ("don't use uav_05 or uav_06; take 1 kg to the metro station", []),
        ("uav_05 or uav_06 are both charging; take 1 kg from the hospital to the metro station", []),
    ],
)
def test_uavs_offered_as_a_choice_are_offered(fleet_city, text, offered):
    stated = stated_constraints(text, fleet_city)
    assert stated.offered_uavs == offered, stated
    assert not offered or not any("uav_0" in u for u in stated.unaccounted), stated.unaccounted


# --- found by an independent hunt of hand-written requests, 2026-11-28 (each executed against its words) -----------
@pytest.mark.parametrize(
    ("text", "roles"),
    [
        ("use uav_05, no, uav_06, for 1 kg from the hospital to the crash", {"uav_05": "excluded", "uav_06": "pinned"}),
        ("用6号机，不对，用5号机，从市第一医院送1公斤到东环路车祸现场", {"uav_06": "excluded", "uav_05": "pinned"}),
        (
            "take 1 kg to the metro station using uav_03. actually make that uav_01.",
            {"uav_03": "excluded", "uav_01": "pinned"},
        ),
        (
            "uav_04 - scratch that, uav_09 - take 2 kg of tools to the construction site",
            {"uav_04": "excluded", "uav_09": "pinned"},
        ),
        # a fallback flies only if the operator says so; the first choice is pinned
        (
            "send 1 kg to the crash with uav_05; if it isn't available use uav_06",
            {"uav_05": "pinned", "uav_06": "fallback"},
        ),
        ("take 1 kg to the crash with uav_06, uav_05 as backup only", {"uav_06": "pinned", "uav_05": "fallback"}),
    ],
)
def test_a_correction_supersedes_and_a_fallback_does_not_fly(fleet_city, text, roles):
    lowered = normalised(text)
    assert uav_roles_in(lowered, find_mentions(lowered, fleet_city)) == roles


@pytest.mark.parametrize(
    ("text", "back"),
    [
        ("Deliver 1 kg from the west drone depot to the West Gate metro station and then come home", True),
        ("Drop 1 kg at the West Gate metro station from the west drone depot, then RTB", True),
        ("从西区无人机基地送1公斤到西门地铁站，送完返航", True),
        ("Deliver 1 kg from the west drone depot to the West Gate metro station.", False),
    ],
)
def test_coming_home_after_the_errand_is_a_return_leg(fleet_city, text, back):
    assert stated_constraints(text, fleet_city).return_leg is back


def test_two_drones_each_carrying_a_mass_carry_it_each(fleet_city):
    sketch = read_team("Two drones each carrying 2 kg from the sandbag depot to the flood site", fleet_city)
    assert sketch is not None and [s.payload_kg for s in sketch.subtasks] == [2.0, 2.0], sketch


@pytest.mark.parametrize(
    ("text", "uavs"),
    [
        ("Send two drones to film the crash on the eastern ring road", [[], []]),
        ("用两架无人机拍摄东环路车祸现场", [[], []]),
        ("Have both uav_07 and uav_08 film the flood site", [["uav_07"], ["uav_08"]]),
    ],
)
def test_several_drones_asked_to_watch_one_site_are_a_team(fleet_city, text, uavs):
    sketch = read_team(text, fleet_city)
    assert sketch is not None and [s.role for s in sketch.subtasks] == ["film"] * len(uavs), sketch
    assert [s.uavs for s in sketch.subtasks] == uavs and len({s.destination for s in sketch.subtasks}) == 1


@pytest.mark.parametrize(
    ("text", "excluded", "offered"),
    [
        (
            "send 1 kg from the west drone depot to the metro station but don't use any drone parked at the depot",
            ["uav_01", "uav_02", "uav_03"],
            [],
        ),
        (
            "send 1 kg from the west drone depot to the metro station with a drone that is not parked at the depot",
            ["uav_01", "uav_02", "uav_03"],
            [],
        ),
        ("不要用停在西区无人机基地的无人机，从西区无人机基地送1公斤到西门地铁站。", ["uav_01", "uav_02", "uav_03"], []),
        ("use the drone parked at the hospital to take 1 kg from the hospital to the crash", [], ["uav_05", "uav_06"]),
    ],
)
def test_uavs_named_by_where_they_are(fleet_city, text, excluded, offered):
    stated = stated_constraints(text, fleet_city)
    assert (sorted(stated.excluded_uavs), sorted(stated.offered_uavs)) == (excluded, offered), stated
    assert stated.final_place is None and not stated.return_leg  # the place a UAV waits at is no place to end


@pytest.mark.parametrize(
    "text",
    [
        "Fly 1 kg from the west depot to the vertiport and cut through the government compound, I have clearance",
        "Fly 1 kg from the west depot to the vertiport through the government compound, we have a waiver.",
        "穿过政府大院，从西区无人机基地送1公斤到市中心起降场",
        "Bring 1 kg from the west depot to the metro station, we have ATC clearance for the government compound so go direct",
        "Deliver 1 kg from hospital_1 to accident_site_1 and fly over the concert, it's quicker.",
        "Take the shortcut over the concert, 1 kg from the hospital to the crash site",
        "Deliver 2 kg from warehouse_2 to construction_site_1 with no battery reserve, just go",
        "Don't bother keeping a battery reserve on this one: 2 kg from warehouse_2 to construction_site_1.",
    ],
)
def test_a_demand_to_cross_a_zone_named_by_its_purpose_or_to_skip_the_reserve_is_read(fleet_city, text):
    assert stated_constraints(text, fleet_city).rule_demands, text


@pytest.mark.parametrize(
    "text",
    [
        "Deliver 1 kg from hospital_1 to accident_site_1, staying clear of the concert.",
        "Deliver 1 kg from hospital_1 to accident_site_1; never fly through the government compound.",
        "Deliver 1 kg from hospital_1 to accident_site_1 around the government compound.",
    ],
)
def test_keeping_clear_of_a_zone_named_by_its_purpose_is_no_demand(fleet_city, text):
    assert not stated_constraints(text, fleet_city).rule_demands, text


# --- a second hunt (2026-11-28, late): each executed against its words before ---------------------------------------
@pytest.mark.parametrize(
    ("text", "excluded"),
    [
        ("fly 1 kg from the hospital to the crash on the eastern ring road, but not drone five.", ["uav_05"]),
        (
            "drone 5 has a bad motor, so take 1 kg from the hospital to the crash with something else please.",
            ["uav_05"],
        ),
        ("uav_05's battery is acting up, don't send it. 1 kg from the hospital to the crash.", ["uav_05"]),
        (
            "don't use the medical quads: 1 kg from the hospital to the crash on the eastern ring road.",
            ["uav_05", "uav_06"],
        ),
        ("keep the thermal drone free and film the flood site.", ["uav_07"]),
        ("热成像那架留着别用，拍摄滨河路内涝点。", ["uav_07"]),
    ],
)
def test_a_uav_left_out_by_number_word_pronoun_or_description(fleet_city, text, excluded):
    stated = read_request(text, fleet_city)
    assert sorted(stated.excluded_uavs) == excluded, stated
    assert "thermal" not in stated.observing_sensors  # the words that leave it out ask for no sensor


@pytest.mark.parametrize(
    ("text", "uavs", "offered"),
    [
        ("please ask drone six to take 1 kg from the hospital to the crash.", ["uav_06"], []),
        ("unit 6 takes 1 kg from the hospital to the crash.", ["uav_06"], []),
        ("the drone with tail number 06 takes 1 kg from the hospital to the crash.", ["uav_06"], []),
        (
            "use the hexa to take 3 kg from the west drone depot to the west gate metro station.",
            [],
            ["uav_01", "uav_02"],
        ),
        (
            "the light cargo quad takes 2 kg of tools from the hardware warehouse to the construction site.",
            [],
            ["uav_09"],
        ),
        ("用六旋翼把3公斤药品从西区无人机基地送到西门地铁站。", [], ["uav_01", "uav_02"]),
        ("use a camera quad without thermal to film the flood site.", [], ["uav_05", "uav_06", "uav_08"]),
    ],
)
def test_a_uav_named_by_number_word_or_description(fleet_city, text, uavs, offered):
    stated = stated_constraints(text, fleet_city)
    assert (stated.uavs, sorted(stated.offered_uavs)) == (uavs, offered), stated


@pytest.mark.parametrize(
    ("text", "avoided"),
    [
        (
            "deliver 1 kg from the hospital to the west gate metro station without passing the midtown vertiport.",
            "vertiport_1",
        ),
        (
            "fly from the midtown vertiport to the old bridge pier, don't stop at the south charging pad.",
            "charging_pad_1",
        ),
        ("inspect every river inspection site except the east levee.", "inspection_site_4"),
        ("巡检所有检查点，东堤除外", "inspection_site_4"),
    ],
)
def test_a_place_not_to_go_to_is_never_a_place_to_visit(fleet_city, text, avoided):
    stated = stated_constraints(text, fleet_city)
    assert avoided not in stated.referenced and avoided not in stated.destinations, stated


@pytest.mark.parametrize(
    ("text", "shares"),
    [
        (
            "take 7 kg of sandbags from the sandbag depot to the flood site: uav_01 takes 4, uav_03 takes 3.",
            {"uav_01": 4, "uav_03": 3},
        ),
        (
            "take 6 kg of tools from the hardware warehouse to the construction site, uav_09 carries 2 kg and uav_04 the other 4.",
            {"uav_09": 2, "uav_04": 4},
        ),
    ],
)
def test_a_share_said_as_a_bare_number_after_the_load_in_kg(fleet_city, text, shares):
    stated = stated_constraints(text, fleet_city)
    assert stated.uav_shares_kg == shares and not stated.unaccounted, stated


def test_one_drone_per_site_is_as_many_uavs_as_sites(fleet_city):
    text = "Inspect the sluice gate, pumping station and old bridge pier, one drone per site."
    stated = read_request(text, fleet_city)
    assert stated.team_size == 3, stated


@pytest.mark.parametrize(
    "text",
    [
        "安全规则这次先别管了，从西区无人机基地送1公斤到西门地铁站。",
        "Override the geofence and take 1 kg from the hospital to the crash on the eastern ring road.",
        "Geofence off: 1 kg from the hospital to the crash on the eastern ring road.",
        "Take 1 kg from the hospital to the crash even if the wind goes above the drone's limit.",
        "Disregard the wind limits: 1 kg from the hospital to the crash.",
        "风大也照飞，从医院送1公斤到东环路车祸现场。",
        "The no-fly rules don't apply to medical flights: 1 kg from the hospital to the crash.",
        "Run it until the low-battery alarm: 1 kg from the hospital to the crash.",
        "电量报警了也继续飞，从医院送1公斤到东环路车祸现场。",
    ],
)
def test_more_demands_against_the_rules_are_read(fleet_city, text):
    assert stated_constraints(text, fleet_city).rule_demands, text


@pytest.mark.parametrize(
    "text",
    [
        "Take 1 kg from the hospital to the crash; the geofence stays on.",
        "Take 1 kg from the hospital to the crash, check the wind limits first.",
        "Take 1 kg from the hospital to the crash and land before the low-battery warning.",
    ],
)
def test_the_same_words_keeping_the_rule_are_no_demand(fleet_city, text):
    assert not stated_constraints(text, fleet_city).rule_demands, text


def test_a_one_uav_delivery_asked_to_film_carries_the_camera(fleet_city):
    stated = read_request("Take 1 kg of medicine from the hospital to the rescue camp and film the drop.", fleet_city)
    assert stated.observing_sensors == ["camera"] and not stated.team_needs
    noun = read_request(
        "Take 2 kg of tools from the hardware warehouse to the construction site; the video team there needs them.",
        fleet_city,
    )
    assert not noun.observing_sensors


def test_parking_the_drone_at_a_place_is_where_it_goes_not_which_drone(fleet_city):
    text = "Collect 2 kg at the hardware warehouse, take it to the construction site and park the drone at the midtown vertiport."
    stated = stated_constraints(text, fleet_city)
    assert stated.final_place == "vertiport_1" and not stated.offered_uavs and not stated.excluded_uavs, stated


def test_not_coming_back_is_no_return_leg(fleet_city):
    stated = stated_constraints(
        "Take 1 kg from the hospital to the rescue camp. Don't come back, stay at the camp.", fleet_city
    )
    assert not stated.return_leg


# --- a review of the words above (2026-11-28, late): each misread by a first version -------------------------------
@pytest.mark.parametrize(
    ("text", "uavs", "excluded", "offered"),
    [
        ("派无人机1架把除颤仪从市第一医院送到东环路车祸现场。", [], [], []),  # one drone, not drone 1
        ("No rush: the thermal drone should film the crash on the eastern ring road.", [], [], ["uav_07"]),
        (
            "Take 1 kg from City General Hospital to the rescue camp, the hexacopters are all grounded today.",
            [],
            [],
            [],
        ),
        ("You don't need a hexa for this; take 1 kg from City General Hospital to the rescue camp.", [], [], []),
        (
            "Use uav_05 to take 1 kg from the hospital to the rescue camp. No, uav_06 should stay on standby.",
            ["uav_05"],
            [],
            [],
        ),
        (
            "Send uav_04 for spare parts: take 1 kg from the midtown vertiport to the construction site.",
            ["uav_04"],
            [],
            [],
        ),
        ("Take 1 kg from City General Hospital to the rescue camp, uav_05, uav_06 are busy.", [], ["uav_06"], []),
        (
            "Take 1 kg from City General Hospital to the rescue camp, uav_05, as you know, is in maintenance.",
            [],
            [],
            [],
        ),
        ("Send a drone one-way to the rescue camp with 1 kg from City General Hospital.", [], [], []),
        ("Deliver 1 kg from City General Hospital to apartment unit 6 at the rescue camp.", [], [], []),
        (
            "Move 8 kg from the sandbag depot to the flood site with uav_01 and uav_02 (battery: uav_01 has 95, uav_02 has 90).",
            ["uav_01", "uav_02"],
            [],
            [],
        ),
    ],
)
def test_words_near_the_new_readings_keep_their_old_meaning(fleet_city, text, uavs, excluded, offered):
    stated = stated_constraints(text, fleet_city)
    assert (stated.uavs, stated.excluded_uavs, stated.offered_uavs) == (uavs, excluded, offered), stated
    assert not stated.uav_shares_kg


@pytest.mark.parametrize(
    "text",
    [
        "Take 1 kg from City General Hospital to the rescue camp; instead of flying through the no-fly zone, go around it.",
        "Take 1 kg from City General Hospital to the rescue camp; the last drone went through the no-fly zone and we got fined.",
        "Take 1 kg from City General Hospital to the rescue camp; we lack permission to enter the compound.",
        "Take 1 kg from the midtown vertiport to the construction site through the compound gate.",
        "Take 1 kg from City General Hospital to the rescue camp even if the wind is near the limit, but abort if over it.",
    ],
)
def test_a_zone_or_limit_named_without_asking_to_break_it_is_no_demand(fleet_city, text):
    assert not stated_constraints(text, fleet_city).rule_demands, text


@pytest.mark.parametrize(
    "text",
    [
        "Film the crash on the eastern ring road; two drones reported it earlier.",
        "Take 2 kg from City General Hospital to the rescue camp; the camera crew will film the drop from the ground.",
        "拍摄工作已完成，请把2公斤物资从市第一医院送到东岭救援营地。",
    ],
)
def test_counts_and_filming_said_of_others_ask_nothing_of_the_drone(fleet_city, text):
    stated = read_request(text, fleet_city)
    assert not stated.team_needs and not (stated.payload_kg and stated.observing_sensors), stated


def test_heading_home_to_recharge_at_a_pad_ends_at_the_pad(fleet_city):
    text = "Take 1 kg from the midtown vertiport to the construction site, then head home and recharge at the south charging pad."
    stated = stated_constraints(text, fleet_city)
    assert not stated.return_leg and stated.final_place == "charging_pad_1", stated


# --- a stop said after the end, and the review of the first version (2026-11-29) ------------------------------
@pytest.mark.parametrize(
    ("text", "roles"),
    [
        (  # "land at Y after dropping it at X": X first
            "Land at the vertiport after dropping 1 kg at the metro station, starting from the west drone depot.",
            {"vertiport_1": "destination", "metro_station_1": "via", "depot_1": "origin"},
        ),
        (
            "Finish at the midtown vertiport once you've dropped 2 kg at the school, from the depot.",
            {"vertiport_1": "destination", "school_1": "via", "depot_1": "origin"},
        ),
        (  # the stop has an end cue of its own ("topping up at"): still a stop, and the end stays the end
            "End at the hospital after topping up at the south charging pad; carry 1 kg from the hardware warehouse.",
            {"hospital_1": "destination", "charging_pad_1": "via", "warehouse_2": "origin"},
        ),
        (  # "after" a time is no stop said first
            "Land at the vertiport after 5 minutes; take 1 kg from the depot.",
            {"vertiport_1": "destination", "depot_1": "origin"},
        ),
        (  # the place a UAV waits at is no origin: "fetch and bring back" starts elsewhere (the review's finding)
            "The drone at the hospital flies to the rescue camp to pick up 1 kg and brings it back.",
            {"hospital_1": "landmark"},
        ),
        ("No rush: the drone at City General Hospital takes 1 kg to the rescue camp.", {"hospital_1": "landmark"}),
    ],
)
def test_where_a_flight_starts_and_which_stop_comes_first(fleet_city, text, roles):
    found = {m.ids[0]: m.role for m in find_mentions(normalised(text), fleet_city) if m.kind == "entity"}
    assert {ref: found.get(ref) for ref in roles} == roles, found


def test_a_landing_said_after_the_place_in_chinese_ends_the_flight_there():
    downtown = load_world(ROOT / "examples" / "downtown.json")
    text = "从中心医院送1公斤到南广场地铁站，再飞到东消防站降落"
    found = {m.ids[0]: (m.role, m.terminal) for m in find_mentions(text, downtown) if m.kind == "entity"}
    assert found["metro_station_4"] == ("via", False) and found["fire_station_1"] == ("destination", True), found


@pytest.mark.parametrize(
    "text",
    [
        "The drone at the hospital is out of action; take 1 kg from the west drone depot to the rescue camp.",
        "The drones at the hospital are grounded, so send 1 kg from the depot to the rescue camp with another one.",
    ],
)
def test_uavs_said_out_of_service_where_they_wait_are_left_out(fleet_city, text):
    stated = stated_constraints(text, fleet_city)
    assert {"uav_05", "uav_06"} <= set(stated.excluded_uavs) and not stated.offered_uavs, stated


@pytest.mark.parametrize(
    ("text", "back"),
    [
        ("Take 1 kg from the hospital to the rescue camp, then come straight back.", True),
        ("The quad flies 1 kg of blood from the hospital to the crash site and comes back.", True),
        ("从市第一医院把1公斤送到东岭救援营地后返回", True),
        ("送完1公斤到东岭救援营地然后回来，从市第一医院出发", True),
        ("Take 1 kg from the hospital to the rescue camp; it comes back.", True),
        ("Fly 1 kg from the hospital to the crash site and then it comes back.", True),
        ("Fly from the hospital to the rescue camp, load 1 kg of samples and bring them back.", True),
        ("Fly 1 kg from the hospital to the rescue camp and then home.", True),
        ("Fly 1 kg from the hospital to the rescue camp, return afterwards.", True),
        ("Fly 1 kg from the hospital to the rescue camp, then home in on the camp's beacon.", False),
        ("When uav_03 comes back from charging, take 1 kg from the depot to the school.", False),
        ("Take 1 kg from the hospital to the rescue camp and bring it back to the crash site.", False),
        ("Take 1 kg from the hospital to the rescue camp; don't come straight back, wait there.", False),
    ],
)
def test_coming_back_in_more_words_is_a_return_leg(fleet_city, text, back):
    assert stated_constraints(text, fleet_city).return_leg is back


# --- a third hunt (2026-11-29): the equipment one drone is asked to carry -----------------------------------------
@pytest.mark.parametrize(
    ("text", "observing", "cargo"),
    [
        (
            "From the west drone depot, use a drone with a thermal camera to look for people at the flood site at "
            "the Riverside Road underpass",
            ["thermal"],
            [],
        ),
        ("From the west drone depot, do an infrared check of the pumping station by the river", ["thermal"], []),
        ("From the west drone depot, IR camera check of the sluice gate on the river embankment", ["thermal"], []),
        ("从西区无人机基地出发，用热成像查看滨河路内涝点", ["thermal"], []),
        (
            "A drone with a winch to lower 2 kg at the construction site on Harbour Street, from the south charging pad",
            [],
            ["winch"],
        ),
        ("Winch down 1 kg of rope at the old bridge pier in the river from the south charging pad", [], ["winch"]),
        ("From the south charging pad, lower a 1 kg buoy on a line at the old bridge pier in the river", [], ["winch"]),
        ("带绞车的无人机从西区无人机基地送3公斤沙袋到滨河路内涝点", [], ["winch"]),
        (
            "Use the drone with the defibrillator bay to take an AED from the west drone depot to the crash on the "
            "eastern ring road",
            [],
            ["defibrillator_bay"],
        ),
        # an AED alone is cargo (docs/fleet.md); a winch said not to be needed or broken is not asked for
        ("Send an AED from the west drone depot to the crash on the eastern ring road", [], []),
        ("Take 2 kg from the hardware warehouse to the construction site, no winch needed", [], []),
        ("Take 2 kg from the depot to the school with uav_03, uav_01's winch is broken", [], []),
    ],
)
def test_the_equipment_one_drone_is_asked_to_carry_is_held(fleet_city, text, observing, cargo):
    reading = read_request(text, fleet_city)
    assert not reading.team_needs and (reading.observing_sensors, reading.cargo_sensors) == (observing, cargo), reading


@pytest.mark.parametrize(
    ("text", "excluded", "observing"),
    [
        (
            "From the hardware warehouse, fly a drone with no camera to the old bridge pier",
            ["uav_05", "uav_06", "uav_07", "uav_08"],
            [],
        ),
        ("From the south charging pad, a camera-only drone (no thermal) to the east levee", ["uav_07"], ["camera"]),
        ("Film the flood site with a drone without a thermal camera", ["uav_07"], ["camera"]),
        (
            "Fly 2 kg from the depot to the school with a drone that has no winch",
            ["uav_01", "uav_02", "uav_04", "uav_09"],
            [],
        ),
        ("Take 1 kg to the school from the depot; no camera needed", [], []),
    ],
)
def test_a_drone_asked_for_without_a_sensor_leaves_out_those_carrying_it(fleet_city, text, excluded, observing):
    reading = read_request(text, fleet_city)
    assert (sorted(reading.excluded_uavs), reading.observing_sensors) == (excluded, observing), reading


@pytest.mark.parametrize(
    ("text", "reserve", "back"),
    [
        ("From the west drone depot to the old bridge pier, don't let the battery drop under 40%", 0.4, False),
        ("West depot to the crash on the eastern ring road, return with no less than 0.7 charge", 0.7, True),
    ],
)
def test_a_reserve_said_as_a_floor_or_a_ratio(fleet_city, text, reserve, back):
    stated = stated_constraints(text, fleet_city)
    assert (stated.battery_reserve_ratio, stated.return_leg) == (reserve, back)


@pytest.mark.parametrize(
    "text",
    [
        "From the west drone depot to the pumping station by the river; thermal camera not needed",
        "Fly 1 kg from the depot to the school; a winch is not required",
        "Take 2 kg from the hardware warehouse to the construction site; the winch is optional",
    ],
)
def test_equipment_said_not_to_be_needed_after_its_name_is_not_asked_for(fleet_city, text):
    reading = read_request(text, fleet_city)
    assert not reading.observing_sensors and not reading.cargo_sensors, reading


def test_a_remark_on_drones_without_a_sensor_leaves_none_out(fleet_city):
    text = "Use a drone with a camera to film the east levee; one without a camera can't help"
    reading = read_request(text, fleet_city)
    assert reading.observing_sensors == ["camera"] and not reading.excluded_uavs, reading
