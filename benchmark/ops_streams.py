"""Request streams for operations mode: many operators' delivery requests arriving on one world, some of them
emergencies, so the later ones must be planned around the earlier ones' approved intents; and the `ops` split of
CloudBrain-Bench, whose samples are such streams."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchmark.tasks import CARGO, EMERGENCY_CARGO, ROUTINE_CARGO, Task
from tools.world import EntityKind, UAVStatus, World

PLACE_KINDS = (
    EntityKind.hospital,
    EntityKind.depot,
    EntityKind.charging_pad,
    EntityKind.accident_site,
    EntityKind.police,
    EntityKind.fire_station,
    EntityKind.vertiport,
    EntityKind.warehouse,
    EntityKind.office,
    EntityKind.metro_station,
)
OWNERS = ("medlift", "cityparcel", "firstresponse", "quickfood", "gridcheck")


@dataclass(frozen=True)
class OpsSplitSpec:
    name: str
    world_split: str  # the split whose worlds the streams fly over
    streams: int
    sizes: tuple[int, int]  # requests per stream, drawn uniformly in [low, high]
    emergency_share: float = 0.15
    purpose: str = ""


OPS_SPLITS = {
    "ops": OpsSplitSpec(
        "ops",
        world_split="dev_mini",
        streams=8,
        sizes=(10, 50),
        purpose="request streams on dev_mini worlds: strategic deconfliction, later starts, pre-emption",
    )
}


def ops_world(world: World) -> World:
    """The world as an operations day starts: every UAV not in maintenance idle and charged (the single-request
    scenarios tie UAVs up as busy, charging or nearly flat to make one request hard; in a stream, the stream ties
    them up itself: a UAV flies one intent at a time and lands with the battery its flight left it)."""
    ready = {"status": UAVStatus.idle, "battery_ratio": 1.0}
    fleet = [u if u.status is UAVStatus.maintenance else u.model_copy(update=ready) for u in world.fleet]
    return world.model_copy(update={"fleet": fleet})


def stream_tasks(world: World, rng: np.random.Generator, size: int, emergency_share: float = 0.15) -> list[Task]:
    """`size` deliveries between the world's places: routine cargo, or emergency cargo at critical priority."""
    places = [e for e in world.entities if e.kind in PLACE_KINDS]
    if len(places) < 2:
        raise ValueError(f"world {world.world_id} has fewer than two places to fly between")
    tasks = []
    for _ in range(size):
        origin, destination = (places[i] for i in rng.choice(len(places), size=2, replace=False))
        emergency = bool(rng.random() < emergency_share)
        cargo = CARGO[str(rng.choice(EMERGENCY_CARGO if emergency else ROUTINE_CARGO))]
        tasks.append(
            Task(
                scenario_type="emergency_delivery" if emergency else "normal_delivery",
                difficulty="medium",
                intent="emergency" if emergency else "delivery",
                priority="critical" if emergency else "normal",
                origin=origin.id,
                destination=destination.id,
                cargo=cargo,
            )
        )
    return tasks


def request_stream(
    world: World,
    rng: np.random.Generator,
    size: int,
    *,
    stream_id: str = "s",
    emergency_share: float = 0.15,
    spacing_sec: tuple[float, float] = (3.0, 25.0),
    tasks: list[Task] | None = None,
) -> list[dict]:
    """The requests of `tasks` (default: `size` drawn here), arriving `spacing_sec` apart, in plain English by
    place name."""
    tasks = tasks if tasks is not None else stream_tasks(world, rng, size, emergency_share)
    requests, at = [], 0.0
    for number, task in enumerate(tasks, start=1):
        origin, destination = world.entity_index[task.origin], world.entity_index[task.destination]
        cargo = f"{task.cargo.term.en} ({task.cargo.kg:g} kg)" if task.cargo else "nothing"
        text = f"Send a drone with {cargo} from {origin.name or origin.id} to {destination.name or destination.id}."
        emergency = task.priority == "critical"
        requests.append(
            {
                "at_sec": round(at, 1),
                "instruction": f"Emergency: {text}" if emergency else text,
                "priority": "emergency" if emergency else "normal",
                "request_id": f"{stream_id}-r{number:02d}",
                "owner": OWNERS[int(rng.integers(len(OWNERS)))],
            }
        )
        at += float(rng.uniform(*spacing_sec))
    return requests
